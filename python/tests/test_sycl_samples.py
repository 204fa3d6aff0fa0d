"""The specifications' sample programs (sycl/tests/samples.rs, explicit.rs, recording.rs,
update.rs) written with `cmdgraph.sycl`. Each runs on the reference interpreter and on the
Vulkan device (llvmpipe in CI, validation on): the two must agree bit for bit, and both
must equal the values NumPy computes from the same full-precision random inputs."""

import numpy as np
import pytest

from cmdgraph import sycl
from sycl_common import Env, on_both, rng_f32

N = 256


def test_8_4_3_explicit_async_malloc():
    """000 §8.4.3, explicit API: async_malloc in one node, a copy into it, a kernel reading
    it, async_free, ordered with depends_on."""
    x0 = rng_f32(N, 1)

    def program(env):
        g = env.graph()
        x = env.usm(x0)
        out = env.usm(np.zeros(N, np.float32))
        ptr = []
        alloc = g.add(lambda h: ptr.append(h.async_malloc("device", N, np.float32)))
        [p] = ptr
        copy = g.add(lambda h: h.memcpy(p, x, N * 4), depends_on=[alloc])
        k = g.add(lambda h: h.parallel_for(env.k("scale"), N, p, out, 3.0), depends_on=[copy])
        free = g.add(lambda h: h.async_free(p), depends_on=[k])
        assert alloc.get_type() == "async_malloc" and free.get_type() == "async_free"
        assert "async_malloc f32[256]" in g.to_ir()
        exe = g.finalize()
        assert exe.get_required_mem_size() == N * 4
        q = env.queue()
        q.ext_oneapi_graph(exe).wait()
        assert exe.runtime is not None
        return {"out": out.to_numpy()}

    got = on_both(program)
    np.testing.assert_array_equal(got["out"], x0 * np.float32(3.0))


def test_8_4_3_recorded_async_malloc_out_of_order():
    """000 §8.4.3, queue recording on an out-of-order queue: events order the uses."""
    x0 = rng_f32(N, 2)

    def program(env):
        g, q = env.graph(), env.queue()
        x = env.usm(x0)
        out = env.usm(np.zeros(N, np.float32))
        g.begin_recording(q)
        assert q.ext_oneapi_get_state() == "recording"
        box = []
        e0 = q.submit(lambda h: box.append(h.async_malloc("device", N, np.float32)))
        [ptr] = box
        e1 = q.memcpy(ptr, x, N * 4, depends_on=e0)
        e2 = q.parallel_for(env.k("scale"), N, ptr, out, -2.0, depends_on=e1)
        q.submit(lambda h: (h.depends_on(e2), h.async_free(ptr)))
        g.end_recording(q)
        assert q.ext_oneapi_get_state() == "executing"
        n1, n2 = sycl.Node.get_node_from_event(e1), sycl.Node.get_node_from_event(e2)
        assert n1 in n2.get_predecessors()
        q.ext_oneapi_graph(g.finalize()).wait()
        return {"out": out.to_numpy()}

    got = on_both(program)
    np.testing.assert_array_equal(got["out"], x0 * np.float32(-2.0))


def test_8_4_3_in_order_queue_async_malloc():
    """000 §8.4.3, in-order queue: no events, the in-order edges order everything."""
    x0 = rng_f32(N, 3)

    def program(env):
        g, q = env.graph(), env.queue(in_order=True)
        x = env.usm(x0)
        out = env.usm(np.zeros(N, np.float32))
        g.begin_recording(q)
        ptr = q.async_malloc("device", N, "f32")
        q.memcpy(ptr, x, N * 4)
        q.parallel_for(env.k("scale"), N, ptr, out, 0.25)
        q.async_free(ptr)
        g.end_recording()
        assert "via in_order" in g.to_ir()
        q.ext_oneapi_graph(g.finalize())
        q.wait()
        return {"out": out.to_numpy()}

    got = on_both(program)
    np.testing.assert_array_equal(got["out"], x0 * np.float32(0.25))


def test_8_5_2_transitive_recording():
    """000 §8.5.2: a submission on an executing queue that depends on a recorded event
    puts that queue into recording; end_recording() ends both."""

    def program(env):
        g = env.graph()
        q1, q2 = env.queue(), env.queue()
        counter = sycl.malloc_device(1, np.uint32, env.ctx)
        g.begin_recording(q1, assume_data_outlives_buffer=True)
        e1 = q1.single_task(env.k("bump"), counter)
        assert q2.ext_oneapi_get_state() == "executing"
        q2.single_task(env.k("bump"), counter, depends_on=[e1])
        assert q2.ext_oneapi_get_state() == "recording"
        assert q2.ext_oneapi_get_graph().name == g.name
        g.end_recording()
        assert q1.ext_oneapi_get_state() == q2.ext_oneapi_get_state() == "executing"
        assert "via transitive" in g.to_ir()
        assert counter.to_numpy()[0] == 0, "nothing runs while recording"
        exe = g.finalize()
        q1.ext_oneapi_graph(exe)
        q1.ext_oneapi_graph(exe)
        q1.wait()
        return {"counter": counter.to_numpy()}

    assert on_both(program)["counter"].tolist() == [4]


def test_8_9_host_task_reads_and_writes_memory():
    """000 §8.9: code in the command-group function runs at add, the Python host task at
    each execution, with the memory it declared as NumPy arrays."""
    x0 = rng_f32(N, 4)

    def program(env):
        g = env.graph()
        data = env.usm(x0)
        other = env.usm(np.zeros(N, np.float32))
        runs, cgf_runs = [], []

        def double_on_host(a, b):
            runs.append(a.shape)
            assert not b.flags.writeable
            a *= 2
            a += b

        def cgf(h):
            cgf_runs.append(1)
            h.host_task(double_on_host, [data, (other, "read")])

        node = g.add(cgf)
        assert node.get_type() == "host_task"
        assert len(cgf_runs) == 1 and runs == []
        exe = g.finalize()
        q = env.queue()
        q.ext_oneapi_graph(exe)
        q.ext_oneapi_graph(exe)
        q.wait()
        assert runs == [(N,), (N,)] and len(cgf_runs) == 1
        return {"data": data.to_numpy()}

    got = on_both(program)
    np.testing.assert_array_equal(got["data"], x0 * 4)


def test_host_task_between_kernels_on_a_recording_queue():
    """A host task recorded between two kernels sees the first's output and its write is
    what the second reads (accessor-free: the in-order queue orders them)."""
    x0 = rng_f32(N, 5)

    def program(env):
        g, q = env.graph(), env.queue(in_order=True)
        x = env.usm(x0)
        y = env.usm(np.zeros(N, np.float32))
        z = env.usm(np.zeros(N, np.float32))
        g.begin_recording(q)
        q.parallel_for(env.k("scale"), N, x, y, 2.0)
        q.submit(lambda h: h.host_task(lambda a: np.sqrt(np.abs(a), out=a), [y]))
        q.parallel_for(env.k("negate"), N, y, z)
        g.end_recording()
        q.ext_oneapi_graph(g.finalize()).wait()
        return {"y": y.to_numpy(), "z": z.to_numpy()}

    got = on_both(program)
    want = np.sqrt(np.abs(x0 * np.float32(2)))
    np.testing.assert_array_equal(got["y"], want)
    np.testing.assert_array_equal(got["z"], -want)


def test_001_diamond_from_buffer_accessors():
    """001 §Example Usage: increment, then add and subtract, then decrement, recorded with
    buffer accessors, which give the diamond."""
    n = 64
    a0, b0, c0 = rng_f32(n, 6), rng_f32(n, 7), rng_f32(n, 8)

    def program(env):
        a = sycl.Buffer(env.ctx, a0, name="bufferA")
        b = sycl.Buffer(env.ctx, b0, name="bufferB")
        c = sycl.Buffer(env.ctx, c0, name="bufferC")
        q = env.queue()
        g = env.graph(assume_buffer_outlives_graph=True)
        g.begin_recording(q)
        inc = q.submit(lambda h: h.parallel_for(env.k("increment"), n, h.access(a, "read_write")))
        add = q.submit(lambda h: h.parallel_for(env.k("add"), n, h.access(a, "read"), h.access(b, "read_write")))
        sub = q.submit(lambda h: h.parallel_for(env.k("subtract"), n, h.access(a, "read"), h.access(c)))
        dec = q.submit(lambda h: h.parallel_for(env.k("decrement"), n, h.access(b), h.access(c)))
        g.end_recording(q)
        inc, add, sub, dec = (sycl.Node.get_node_from_event(e) for e in (inc, add, sub, dec))
        assert g.get_root_nodes() == [inc]
        assert inc.get_successors() == [add, sub]
        assert dec.get_predecessors() == [add, sub]
        q.ext_oneapi_graph(g.finalize()).wait()
        return {"a": a.host_access(), "b": b.host_access(), "c": c.host_access()}

    got = on_both(program)
    a1 = a0 + np.float32(1)
    np.testing.assert_array_equal(got["a"], a1)
    np.testing.assert_array_equal(got["b"], (b0 + a1) - np.float32(1))
    np.testing.assert_array_equal(got["c"], (c0 - a1) - np.float32(1))


def test_dynamic_parameter_update():
    """002: a dynamic parameter holding a scalar and one holding a pointer, updated between
    runs of an updatable executable graph."""
    x0, y0 = rng_f32(N, 9), rng_f32(N, 10)

    def program(env):
        g, q = env.graph(), env.queue()
        x, x2 = env.usm(x0), env.usm(y0)
        y = env.usm(np.zeros(N, np.float32))
        a = sycl.DynamicParameter(g, 2.0)
        src = sycl.DynamicParameter(g, x)
        node = g.add(lambda h: h.parallel_for(env.k("saxpy"), N, src, y, a))
        exe = g.finalize(updatable=True)
        q.ext_oneapi_graph(exe).wait()
        first = y.to_numpy()
        a.update(-0.5)
        src.update(x2)
        exe.update(node)
        q.ext_oneapi_graph(exe).wait()
        return {"first": first, "second": y.to_numpy()}

    got = on_both(program)
    first = np.float32(2.0) * x0
    np.testing.assert_array_equal(got["first"], first)
    # fma rounds once: compute in float64 and round (exact for one fma of float32 values).
    want = (np.float64(-0.5) * y0.astype(np.float64) + first.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(got["second"], want)


def test_dynamic_command_group_switches_the_node():
    """002: a dynamic command group of two kernels; set_active_index and update switch the
    node between runs."""
    x0 = rng_f32(N, 11)

    def program(env):
        g, q = env.graph(), env.queue()
        x = env.usm(x0)
        out = env.usm(np.zeros(N, np.float32))
        dcg = sycl.DynamicCommandGroup(g, [
            lambda h: h.parallel_for(env.k("scale"), N, x, out, 4.0),
            lambda h: h.parallel_for(env.k("negate"), N, x, out),
        ])
        node = g.add(dcg)
        exe = g.finalize(updatable=True)
        assert dcg.get_active_index() == 0
        q.ext_oneapi_graph(exe).wait()
        first = out.to_numpy()
        dcg.set_active_index(1)
        exe.update(node)
        q.ext_oneapi_graph(exe).wait()
        return {"first": first, "second": out.to_numpy()}

    got = on_both(program)
    np.testing.assert_array_equal(got["first"], x0 * np.float32(4))
    np.testing.assert_array_equal(got["second"], -x0)


def test_eager_queue_memcpy_fill_memset_and_barrier():
    """Commands on an executing queue run: fill, memset, memcpy, a kernel and a barrier."""

    def program(env):
        q = env.queue(in_order=True)
        a = sycl.malloc_shared(N, np.float32, q)
        b = sycl.malloc_device(N, np.float32, q)
        c = sycl.malloc_host(N, np.uint32, q)
        q.fill(a, 1.5, N)
        q.memset(c, 0xAB, N * 4)
        q.memcpy(b, a + 16, (N - 16) * 4)
        q.parallel_for(env.k("increment"), N, b)
        q.ext_oneapi_submit_barrier().wait()
        return {"a": a.to_numpy(), "b": b.to_numpy(), "c": c.to_numpy()}

    got = on_both(program)
    assert (got["a"] == 1.5).all()
    want_b = np.ones(N, np.float32)
    want_b[: N - 16] = 2.5
    np.testing.assert_array_equal(got["b"], want_b)
    assert (got["c"] == 0xABABABAB).all()


def test_explicit_edges_and_sub_graph():
    """make_edge, empty nodes and a sub-graph node (an executable graph run inside another)."""

    def program(env):
        q = env.queue()
        x = env.usm(np.arange(N, dtype=np.float32))
        inner = env.graph()
        inner.add(lambda h: h.parallel_for(env.k("increment"), N, x))
        inner_exe = inner.finalize()
        g = env.graph()
        first = g.add(lambda h: h.parallel_for(env.k("increment"), N, x))
        sub = g.add(lambda h: h.ext_oneapi_graph(inner_exe))
        empty = g.add()
        g.make_edge(first, empty)
        g.make_edge(empty, sub)
        assert sub.get_type() == "subgraph" and empty.get_type() == "empty"
        assert [n.name for n in g.get_nodes()] == [first.name, sub.name, empty.name]
        q.ext_oneapi_graph(g.finalize()).wait()
        return {"x": x.to_numpy()}

    np.testing.assert_array_equal(on_both(program)["x"], np.arange(N, dtype=np.float32) + 2)


def test_wgsl_kernel_registers_and_runs():
    """A kernel written in WGSL, registered from kernel-language text."""
    text = '''
kernel @twice(%x: buf<f32, read_write>) wgsl entry "main" """
@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    x[id.x] = x[id.x] * 2.0;
}
"""
'''
    x0 = rng_f32(N, 12)

    def program(env):
        [k] = env.ctx.register_kernels(text)
        assert k.params == ["buf<f32, read_write>"]
        q = env.queue()
        x = env.usm(x0)
        q.parallel_for(k, N, x).wait()
        return {"x": x.to_numpy()}

    np.testing.assert_array_equal(on_both(program)["x"], x0 * 2)


def test_vulkan_runs_asynchronously_and_reports_the_device():
    env = Env("vulkan")
    q = env.queue()
    x = env.usm(np.zeros(N, np.float32))
    g = env.graph()
    g.add(lambda h: h.parallel_for(env.k("increment"), N, x))
    exe = g.finalize()
    e = q.ext_oneapi_graph(exe)
    assert e.get_status() in ("running", "complete")
    e.wait()
    assert e.get_status() == "complete"
    assert "Vulkan" in exe.runtime, exe.runtime
    assert (x.to_numpy() == 1).all()


def test_calls_that_wait_for_a_python_host_task_in_flight_do_not_deadlock():
    """A graph whose Python host task runs on the device's worker thread is in flight while
    the main thread makes calls that wait for it (a buffer from an array, kernel text
    declaring a device_global, a write, a read): each releases the GIL, so the host task
    takes it and everything completes."""
    env = Env("vulkan")
    q = env.queue()
    x = env.usm(np.arange(N, dtype=np.float32))
    g = env.graph()
    ran = []
    first = g.add(lambda h: h.parallel_for(env.k("increment"), N, x))
    g.add(lambda h: h.host_task(lambda a: (ran.append(1), np.multiply(a, 3, out=a)), [x]), depends_on=first)
    exe = g.finalize()
    q.ext_oneapi_graph(exe).wait()  # compiled; the next submission is quick to start
    q.ext_oneapi_graph(exe)
    buf = sycl.Buffer(env.ctx, np.ones(8, np.float32))
    q.ext_oneapi_graph(exe)
    env.ctx.register_kernels("device_global @flag : u32[1]\n")
    q.ext_oneapi_graph(exe)
    y = env.usm(np.zeros(4, np.float32))
    q.ext_oneapi_graph(exe)
    got = x.to_numpy()
    assert len(ran) == 5
    want = np.arange(N, dtype=np.float32)
    for _ in range(5):
        want = (want + 1) * 3
    np.testing.assert_array_equal(got, want)
    assert (buf.host_access() == 1).all() and (y.to_numpy() == 0).all()


def test_the_module_docstring_example_runs():
    """The example at the top of `cmdgraph.sycl` (recording on llvmpipe) runs as written."""
    import doctest

    if not any(d.backend == "vulkan" for d in sycl.Device.get_devices()):
        pytest.skip("no Vulkan device")
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner()
    for test in finder.find(sycl):
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
    assert runner.summarize(verbose=False).attempted >= 10
