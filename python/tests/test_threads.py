"""The GIL is released while the interpreter, the compiler and the device work: another
Python thread keeps running meanwhile."""

import threading
import time

import cmdgraph
from conftest import random_inputs


def longest_pause_while(call):
    """Runs `call` in a thread and counts in this one until it is done; returns (the call's
    duration, the longest time this thread could not run)."""
    done = threading.Event()
    spent = []

    def work():
        t = time.perf_counter()
        call()
        spent.append(time.perf_counter() - t)
        done.set()

    worker = threading.Thread(target=work)
    last = time.perf_counter()
    longest = 0.0
    worker.start()
    while not done.is_set():
        now = time.perf_counter()
        longest = max(longest, now - last)
        last = now
    worker.join()
    return spent[0], longest


def enough_runs(call_with_runs, seconds=0.4):
    """How many runs make one call last about `seconds`."""
    t = time.perf_counter()
    call_with_runs(1)
    once = max(time.perf_counter() - t, 1e-4)
    return max(2, int(seconds / once))


def check(call_with_runs):
    runs = enough_runs(call_with_runs)
    duration, pause = longest_pause_while(lambda: call_with_runs(runs))
    # Python switches threads every 5 ms; holding the GIL would stop this one for the whole call.
    assert duration > 0.1, duration
    assert pause < duration / 2, (pause, duration)


def test_the_interpreter_releases_the_gil():
    m = cmdgraph.parse_file("examples/saxpy_chain.cgir")
    inputs = random_inputs(m, 1)
    check(lambda runs: m.interpret(inputs, runs=runs))


def test_a_device_run_releases_the_gil(device):
    m = cmdgraph.parse_file("examples/stencil2d.cgir")
    exe = device.load(m.compile())
    inputs = random_inputs(m, 2)
    check(lambda runs: exe.run(inputs, runs=runs))


def test_compiling_releases_the_gil():
    m = cmdgraph.parse_file("examples/mlp_layer.cgir")

    def compile_times(n):
        for _ in range(n):
            m.compile()

    check(compile_times)
