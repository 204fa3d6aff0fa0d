"""Host tasks written in Python for modules run from IR (`Module.interpret`) and from
bundles on Vulkan (`Device.load(..., host_tasks=...)`): the callable gets the declared
memory as NumPy arrays, its writes reach the kernels after it, and an exception fails the
run naming the node."""

import numpy as np
import pytest

import cmdgraph

TEXT = """
usm @x : f32[64]
usm @y : f32[64]

kernel @double(%x: buf<f32, read_write>) {
  %i = global_id 0
  %v = load %x[%i]
  %r = add %v, %v
  store %x[%i], %r
}

graph @main {
  %a = kernel @double range(64) args(@x)
  %h = host_task "shift" access(@x read, @y write) after(%a)
  %b = kernel @double range(64) args(@y) after(%h)
}
"""


def shift(mem):
    assert set(mem) == {"x", "y"}
    assert not mem["x"].flags.writeable and (mem["y"] == 0).all()
    mem["y"][:] = np.sqrt(np.abs(mem["x"])) + np.float32(1)


def expected(x):
    return (np.sqrt(np.abs(x + x)) + np.float32(1)) * np.float32(2)


def test_a_host_task_on_the_interpreter_reads_and_writes():
    m = cmdgraph.parse(TEXT)
    x = (np.random.default_rng(1).standard_normal(64) * 10).astype(np.float32)
    out = m.interpret({"x": x}, host_tasks={"shift": shift})
    np.testing.assert_array_equal(out["x"], x + x)
    np.testing.assert_array_equal(out["y"], expected(x))
    # Without it, the host task is a no-op.
    assert (m.interpret({"x": x})["y"] == 0).all()


def test_a_host_task_on_vulkan_matches_the_interpreter(device):
    m = cmdgraph.parse(TEXT)
    x = (np.random.default_rng(2).standard_normal(64) * 10).astype(np.float32)
    calls = []

    def counted(mem):
        calls.append(1)
        shift(mem)

    exe = device.load(m.compile(), host_tasks={"shift": counted})
    got = exe.run({"x": x})
    want = m.interpret({"x": x}, host_tasks={"shift": shift})
    assert calls == [1]
    for name in ("x", "y"):
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_a_host_task_that_raises_fails_the_run(device):
    m = cmdgraph.parse(TEXT)

    def bad(mem):
        raise ZeroDivisionError("no")

    with pytest.raises(cmdgraph.DeviceError, match="host task `h` raised ZeroDivisionError: no") as info:
        m.interpret(host_tasks={"shift": bad})
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    exe = device.load(m.compile(), host_tasks={"shift": bad})
    with pytest.raises(cmdgraph.DeviceError, match="ZeroDivisionError: no"):
        exe.run({"x": np.ones(64, np.float32)})


def test_unknown_callbacks_and_non_callables_are_refused():
    m = cmdgraph.parse(TEXT)
    with pytest.raises(ValueError, match='no host-task callback "nope"'):
        m.interpret(host_tasks={"nope": shift})
    with pytest.raises(TypeError, match="not callable"):
        m.interpret(host_tasks={"shift": 3})
