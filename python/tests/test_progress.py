"""Progress of long compiles and Ctrl-C: `Module.compile(progress=f)` reports every step,
an exception from `f` ends the compile with that exception, and SIGINT sent to a process
compiling a large module stops it at its next step with KeyboardInterrupt."""

import signal
import subprocess
import sys
import textwrap
import time

import pytest

import cmdgraph
from conftest import REPO


def large_module(kernels):
    """`kernels` distinct element-wise kernels in a chain (compiled without passes, so none
    is fused away)."""
    out = ["usm @x : f32[64]\n"]
    for i in range(kernels):
        out.append(
            f"kernel @k{i}(%x: buf<f32, read_write>) {{\n  %i = global_id 0\n  %v = load %x[%i]\n"
            f"  %c = const {i}.5 : f32\n  %m = mul %v, %c\n  %r = add %m, %c\n  store %x[%i], %r\n}}\n"
        )
    out.append("graph @main {\n")
    for i in range(kernels):
        after = f" after(%n{i - 1})" if i else ""
        out.append(f"  %n{i} = kernel @k{i} range(64) args(@x){after}\n")
    out.append("}\n")
    return "".join(out)


def test_progress_reports_every_step():
    m = cmdgraph.parse(large_module(3))
    seen = []
    bundle = m.compile(progress=lambda *step: seen.append(step))
    assert bundle is not None
    phases = [s[0] for s in seen]
    assert phases[0] == "verify" and phases[-1] == "finishing", phases
    assert "pass" in phases and "packaging" in phases
    codegen = [s for s in seen if s[0] == "codegen"]
    assert codegen and all(s[2] == codegen[0][2] for s in codegen), codegen
    assert all(s[3] for s in codegen), codegen  # the kernel (here the three fused into one)
    assert all(isinstance(s[3], str) for s in seen)


def test_progress_true_draws_a_line_on_stderr():
    import io

    from cmdgraph._progress import Line

    m = cmdgraph.parse(large_module(3))
    assert m.compile(progress=True) is not None
    assert m.compile(progress=False) is not None
    with pytest.raises(TypeError, match="progress"):
        m.compile(progress=3)
    out = io.StringIO()
    line = Line(out, quiet_for=0)
    m.compile(passes="", progress=line)
    text = out.getvalue()
    assert "compiling: " in text and text.endswith("\r"), repr(text)


def test_an_exception_from_progress_stops_the_compile():
    m = cmdgraph.parse(large_module(20))
    calls = []

    def progress(phase, done, total, what):
        calls.append(phase)
        if phase == "codegen" and done >= 2:
            raise RuntimeError("enough")

    with pytest.raises(RuntimeError, match="enough"):
        m.compile(passes="", progress=progress)
    assert calls.count("codegen") == 3, calls
    assert "finishing" not in calls


# A child started from a shell that ran its caller in the background without job control
# inherits SIGINT ignored, and Python then installs no KeyboardInterrupt handler: each child
# puts the default one back, so the tests do not depend on how they were started.
CHILD = textwrap.dedent(
    """
    import signal, sys, time
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.path.insert(0, {tests!r})
    import cmdgraph
    from test_progress import large_module
    m = cmdgraph.parse(large_module({kernels}))
    codegen = []
    def progress(phase, done, total, what):
        if phase == "codegen":
            codegen.append(what)
            if len(codegen) == 2:
                print("compiling", total, flush=True)
    try:
        m.compile(passes="", progress=progress)
        print("finished", flush=True)
    except KeyboardInterrupt:
        print("interrupted", len(codegen), flush=True)
    """
)


def test_ctrl_c_interrupts_a_long_compile():
    kernels = 400
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD.format(tests=str(REPO / "python" / "tests"), kernels=kernels)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = child.stdout.readline().split()
        assert first[:1] == ["compiling"], (first, child.stderr.read() if child.poll() is not None else "")
        total = int(first[1])
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=120)
        stopped_after = time.monotonic() - sent
    finally:
        if child.poll() is None:
            child.kill()
    words = out.split()
    assert words[0] == "interrupted", (out, err)
    assert int(words[1]) < total, f"all {total} kernels compiled before the interrupt took effect"
    assert child.returncode == 0, err
    assert stopped_after < 30, stopped_after


SYCL_CHILD = textwrap.dedent(
    """
    import signal, time
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import numpy as np
    from cmdgraph import sycl
    n = {kernels}
    dev = [d for d in sycl.Device.get_devices() if d.backend == "vulkan"][0]
    ctx = sycl.Context(dev)
    text = "".join(
        f"kernel @k{{i}}(%x: buf<f32, read_write>) {{{{\\n  %i = global_id 0\\n  %v = load %x[%i]\\n"
        f"  %c = const {{i}}.5 : f32\\n  %m = mul %v, %c\\n  %r = add %m, %c\\n  store %x[%i], %r\\n}}}}\\n"
        for i in range(n))
    g = sycl.ModifiableGraph(ctx, dev)
    for k in ctx.register_kernels(text):
        b = sycl.malloc(64, np.float32, ctx, "device")
        g.add(lambda h, k=k, b=b: h.parallel_for(k, 64, b))
    print("finalizing", flush=True)
    t = time.monotonic()
    try:
        g.finalize()
        print("finalized", time.monotonic() - t, flush=True)
    except KeyboardInterrupt:
        print("interrupted", time.monotonic() - t, flush=True)
    """
)


def test_ctrl_c_interrupts_the_compile_of_a_sycl_graphs_first_finalize():
    """`cmdgraph.sycl` compiles a graph in process at its first finalize (GIL released);
    2000 distinct kernels take about 45 s here, and SIGINT a second and a half in must end
    it within seconds with KeyboardInterrupt, not the SYCL error the compile's end becomes."""
    from cmdgraph import sycl

    if not any(d.backend == "vulkan" for d in sycl.Device.get_devices()):
        pytest.skip("no Vulkan device")
    child = subprocess.Popen(
        [sys.executable, "-c", SYCL_CHILD.format(kernels=2000)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = child.stdout.readline().split()
        assert first[:1] == ["finalizing"], (first, child.stderr.read() if child.poll() is not None else "")
        time.sleep(1.5)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=300)
        stopped_after = time.monotonic() - sent
    finally:
        if child.poll() is None:
            child.kill()
    words = out.split()
    assert words[:1] == ["interrupted"], (out, err)
    assert child.returncode == 0, err
    assert stopped_after < 15, f"the compile went on for {stopped_after:.1f} s after Ctrl-C"
