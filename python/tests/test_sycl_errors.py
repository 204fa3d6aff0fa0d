"""SYCL's errors from Python: every errc the crate raises, as cmdgraph.SyclError with the
code, the §22 row and the message; a host task that raises fails its run (naming the
node); bad arguments are TypeError/ValueError."""

import numpy as np
import pytest

import cmdgraph
from cmdgraph import sycl
from sycl_common import BACKENDS, Env


@pytest.fixture
def env():
    return Env("interpreter")


def raises(code, row, fn, *args, **kwargs):
    with pytest.raises(cmdgraph.SyclError) as info:
        fn(*args, **kwargs)
    e = info.value
    assert isinstance(e, cmdgraph.Error)
    assert (e.code, e.row) == (code, row), str(e)
    assert e.message and e.code in str(e)
    return str(e)


def test_invalid_add_while_recording_row_5(env):
    g, q = env.graph(), env.queue()
    x = env.usm(np.ones(4, np.float32))
    g.begin_recording(q)
    msg = raises("invalid", 5, g.add, lambda h: h.parallel_for(env.k("increment"), 4, x))
    assert "end_recording" in msg
    g.end_recording()
    g.add(lambda h: h.parallel_for(env.k("increment"), 4, x))


def test_invalid_wait_on_a_recording_queue_row_52(env):
    g, q = env.graph(), env.queue()
    g.begin_recording(q)
    raises("invalid", 52, q.wait)
    e = q.submit(lambda h: h.ext_oneapi_barrier())
    raises("invalid", 50, e.wait)
    g.end_recording()
    q.wait()


def test_invalid_make_edge_cycle(env):
    g = env.graph()
    a = g.add()
    b = g.add(depends_on=a)
    with pytest.raises(cmdgraph.SyclError) as info:
        g.make_edge(b, a)
    assert info.value.code == "invalid" and info.value.row > 0


def test_invalid_update_of_a_graph_not_updatable(env):
    g = env.graph()
    p = sycl.DynamicParameter(g, 1.0)
    x = env.usm(np.ones(4, np.float32))
    y = env.usm(np.ones(4, np.float32))
    n = g.add(lambda h: h.parallel_for(env.k("saxpy"), 4, x, y, p))
    exe = g.finalize()
    with pytest.raises(cmdgraph.SyclError) as info:
        exe.update(n)
    assert info.value.code == "invalid" and "updatable" in str(info.value)


def test_feature_not_supported_async_malloc_outside_a_graph(env):
    q = env.queue()
    raises("feature_not_supported", 0, q.submit, lambda h: h.async_malloc("device", 4, np.float32))


def test_kernel_not_supported_device_global_copy_row_67(env):
    env.ctx.register_kernels("device_global @dg67 : u32[4] properties(device_image_scope)\n")
    dg = env.ctx.device_global("dg67")
    assert dg is not None and dg.count == 4
    q = env.queue()
    raises("kernel_not_supported", 67, q.copy_to_device_global, dg, np.array([1], np.uint32))
    raises("invalid", 65, q.copy_to_device_global, dg, [1, 2, 3], 2)


def test_kernel_text_that_does_not_parse(env):
    msg = raises("invalid", 0, env.ctx.register_kernels, "kernel @oops(")
    assert "<kernels>" in msg


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_host_task_that_raises_fails_the_run_naming_the_node(backend):
    env = Env(backend)
    g, q = env.graph(), env.queue()
    x = env.usm(np.arange(8, dtype=np.float32))

    def bad(a):
        a[:] = 99
        raise ValueError("the host task refuses")

    node = g.add(lambda h: h.host_task(bad, [x]))
    exe = g.finalize()
    # The interpreter fails the submission itself; a device's run fails its event's wait.
    with pytest.raises(cmdgraph.SyclError) as info:
        q.ext_oneapi_graph(exe).wait()
    msg = str(info.value)
    assert info.value.code == "invalid"
    assert "ValueError: the host task refuses" in msg and node.name in msg, msg
    assert isinstance(info.value.__cause__, ValueError), "the host task's exception is the cause"
    # The failed host task wrote nothing back; the process carries on.
    assert (x.to_numpy() == np.arange(8, dtype=np.float32)).all()
    q.submit(lambda h: h.parallel_for(env.k("increment"), 8, x)).wait()
    assert (x.to_numpy() == np.arange(8, dtype=np.float32) + 1).all()


def test_bad_arguments_are_type_and_value_errors(env):
    q = env.queue()
    x = env.usm(np.ones(4, np.float32))
    with pytest.raises(TypeError, match="@"):
        x.copy_from(np.ones(4, np.float64))
    with pytest.raises(ValueError, match="has 5 elements"):
        x.copy_from(np.ones(5, np.float32))
    with pytest.raises(TypeError):
        q.parallel_for(env.k("increment"), 4, "not an argument")
    with pytest.raises(ValueError, match="does not fit"):
        sycl.DynamicParameter(env.graph(), -1, dtype=np.uint32)
    with pytest.raises(TypeError, match="callable"):
        q.submit(lambda h: h.host_task(42))
    with pytest.raises(ValueError, match="usm kind"):
        sycl.malloc(4, np.float32, q, "texture")


def test_a_handler_is_valid_only_inside_its_function(env):
    q = env.queue()
    kept = []
    q.submit(lambda h: kept.append(h))
    with pytest.raises(RuntimeError, match="has returned"):
        kept[0].ext_oneapi_barrier()


def test_async_malloc_pointer_is_set_after_the_function(env):
    g = env.graph()
    seen = []

    def cgf(h):
        p = h.async_malloc("device", 4, np.float32)
        with pytest.raises(ValueError, match="command group function returns"):
            p.offset
        seen.append(p)

    g.add(cgf)
    assert seen[0].offset == 0 and seen[0].allocation_bytes == 16


def test_profiling_info_and_row_61(env):
    q = env.queue(enable_profiling=True)
    x = env.usm(np.ones(4, np.float32))
    g = env.graph()
    g.add(lambda h: h.parallel_for(env.k("increment"), 4, x))
    info = q.ext_oneapi_graph(g.finalize(enable_profiling=True)).get_profiling_info()
    assert info["command_submit"] <= info["command_start"] <= info["command_end"]
    raises("invalid", 61, q.ext_oneapi_graph(g.finalize()).get_profiling_info)


def test_a_vulkan_host_task_using_a_sycl_object_fails_its_run():
    """On Vulkan a host task runs on the device's worker thread, where objects of
    cmdgraph.sycl (which belong to their thread) refuse to be used: the run fails with a
    message saying so, and the process carries on."""
    env = Env("vulkan")
    g, q = env.graph(), env.queue()
    x = env.usm(np.zeros(8, np.float32))
    g.add(lambda h: h.host_task(lambda a: x.count, [x]))
    with pytest.raises(cmdgraph.SyclError, match="unsendable"):
        q.ext_oneapi_graph(g.finalize()).wait()
    q.submit(lambda h: h.parallel_for(env.k("increment"), 8, x)).wait()
    assert (x.to_numpy() == 1).all()
