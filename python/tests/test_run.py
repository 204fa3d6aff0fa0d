"""Running on Vulkan (llvmpipe on CI, validation on) with NumPy arrays: every output of
every example's every graph equals the reference interpreter's bit for bit (`fma` may round
once or twice, docs/ir.md "Float precision"), and bad arrays are refused before anything
is bound."""

import numpy as np
import pytest

import cmdgraph
from conftest import DTYPES, EXAMPLES, random_inputs, relative

# The interpreter runs no SPIR-V: modules with external kernels are compared in cli/tests.
RUNNABLE = [p for p in EXAMPLES if 'spirv "' not in p.read_text()]


@pytest.mark.parametrize("path", RUNNABLE, ids=lambda p: p.name)
def test_every_example_matches_the_interpreter(path, device):
    text = path.read_text()
    m = cmdgraph.parse_file(relative(path))
    bundle = m.compile()
    for seed, graph in enumerate(m.graphs):
        inputs = random_inputs(m, seed, summable="atomic" in text)
        exe = device.load(bundle)
        assert exe.validation
        got = exe.run(inputs, graph=graph, runs=2)
        want = m.interpret(inputs, graph=graph, runs=2)
        twice = m.interpret(inputs, graph=graph, runs=2, fma="twice") if "fma" in text else want
        assert set(got) == set(want) == {n for n, _, k in m.memories if k != "device_global"}
        for name, array in got.items():
            assert array.dtype == want[name].dtype and array.shape == want[name].shape, name
            exact = array.tobytes() == want[name].tobytes() or array.tobytes() == twice[name].tobytes()
            assert exact, f"{path.name} @{graph} @{name}: Vulkan differs from the interpreter"
        # Something ran: an output differs from its input.
        assert any(not np.array_equal(got[n], inputs[n]) for n in inputs), f"{path.name} @{graph}: nothing changed"


def saxpy(device):
    m = cmdgraph.parse_file("examples/saxpy_chain.cgir")
    return m, device.load(m.compile())


def test_outputs_can_be_chosen_and_memory_persists(device):
    m, exe = saxpy(device)
    inputs = random_inputs(m, 1)
    first = exe.run(inputs, outputs=["@z"])
    assert list(first) == ["z"]
    assert first["z"].flags.writeable and first["z"].flags.c_contiguous
    # No inputs: the memory keeps what the last run left; `runs=0` reads it back.
    again = exe.run(runs=0)
    assert np.array_equal(again["z"], first["z"])
    assert np.array_equal(again["x"], inputs["x"])
    with pytest.raises(ValueError, match=r"no memory object named `@nope` \(its memory objects: @x, @y, @z\)"):
        exe.run(outputs=["nope"])
    with pytest.raises(ValueError, match="no graph named `@other`"):
        exe.run(graph="other")


@pytest.mark.parametrize(
    "bad, error, message",
    [
        (lambda x: x.astype(np.float64), TypeError, r"@y \(f32\[65536\]\): the array's dtype is '<f8' \(float64\) but @y needs '<f4'"),
        (lambda x: x.astype(">f4"), TypeError, r"@y .*big-endian"),
        (lambda x: np.repeat(x, 2)[::2], ValueError, r"@y \(f32\[65536\]\): the array is not C-contiguous"),
        (lambda x: x[:-1].copy(), ValueError, r"@y \(f32\[65536\]\): the array's shape \(65535,\) has 65535 elements but @y has 65536"),
        (lambda x: np.concatenate([x, x]), ValueError, r"@y .* has 131072 elements"),
        (lambda x: x.tolist(), TypeError, r"@y \(f32\[65536\]\): expected a numpy.ndarray or an array with __dlpack__, got list"),
    ],
    ids=["dtype", "byte order", "non-contiguous", "too small", "too large", "not an array"],
)
def test_a_bad_array_raises_naming_it_and_nothing_is_bound(device, bad, error, message):
    m, exe = saxpy(device)
    before = random_inputs(m, 2)
    exe.run(before)
    after = random_inputs(m, 3)
    # @x comes first and is fine; @y is bad: neither may be bound, nothing may run.
    with pytest.raises(error, match=message):
        exe.run({"x": after["x"], "y": bad(after["y"]), "z": after["z"]})
    with pytest.raises(error, match=message):
        m.interpret({"x": after["x"], "y": bad(after["y"])})
    now = exe.run(runs=0)
    for name in ("x", "y"):
        assert np.array_equal(now[name], before[name]), name


def test_a_reshaped_array_with_the_right_count_binds(device):
    m, exe = saxpy(device)
    inputs = random_inputs(m, 4)
    square = {k: v.reshape(256, 256) for k, v in inputs.items()}
    assert all(np.array_equal(exe.run(square)[k], exe.run(inputs)[k]) for k in inputs)


def test_names_and_values_are_checked():
    m = cmdgraph.parse_file("examples/saxpy_chain.cgir")
    with pytest.raises(ValueError, match="no memory object named `@w`"):
        m.interpret({"w": np.zeros(4, np.float32)})
    with pytest.raises(TypeError, match="input names must be str"):
        m.interpret({1: np.zeros(4, np.float32)})
    with pytest.raises(ValueError, match="fma"):
        m.interpret(fma="thrice")


def test_vec3_memory_is_three_lanes_in_numpy(device):
    text = """
kernel @scale(%v: buf<vec3<f32>, read_write>) {
  %i = global_id 0
  %a = load %v[%i]
  %b = add %a, %a
  store %v[%i], %b
}
usm @v : vec3<f32>[64]
graph @g {
  %k = kernel @scale range(64) args(@v)
}
"""
    m = cmdgraph.parse(text, filename="vec3.cgir")
    v = np.random.default_rng(5).random((64, 3)).astype(np.float32)
    got = device.load(m.compile()).run({"v": v})["v"]
    assert got.shape == (64, 3)
    assert np.array_equal(got, v + v)
    assert np.array_equal(m.interpret({"v": v})["v"], v + v)
    with pytest.raises(ValueError, match=r"does not end in 3"):
        m.interpret({"v": np.zeros((64, 4), np.float32)})


def test_profile_names_every_node(device):
    m = cmdgraph.parse_file("examples/mlp_layer.cgir")
    exe = device.load(m.compile(), profile=True)
    with pytest.raises(cmdgraph.DeviceError, match="has not run"):
        exe.profile()
    exe.run(random_inputs(m, 6))
    p = exe.profile()
    assert p["end_ns"] >= p["start_ns"]
    assert p["nodes"], p
    for name, node in p["nodes"].items():
        assert node["end_ns"] >= node["start_ns"], name
        assert node["duration_ns"] == node["end_ns"] - node["start_ns"]


def test_profile_without_enable_profiling_is_a_device_error(device):
    _, exe = saxpy(device)
    exe.run()
    with pytest.raises(cmdgraph.DeviceError, match="enable_profiling"):
        exe.profile()


def test_devices():
    all_devices = cmdgraph.devices()
    assert all_devices
    default = cmdgraph.Device()
    assert default.name in [d.name for d in all_devices]
    assert cmdgraph.Device(default.index).name == default.name
    assert cmdgraph.Device(default.name[:5]).name.startswith(default.name[:5])
    with pytest.raises(cmdgraph.DeviceError, match="no Vulkan 1.3 device"):
        cmdgraph.Device("no such device anywhere")
    with pytest.raises(TypeError):
        cmdgraph.Device(2.5)


def test_updates_match_the_interpreter(device):
    """Dynamic parameters (scalar, pointer) and a dynamic command group switched before the
    runs, on Vulkan and on the interpreter alike."""
    m = cmdgraph.parse_file("examples/dynamic_update.cgir")
    exe = device.load(m.compile())
    inputs = random_inputs(m, 7)
    plain = exe.run(inputs)
    updates = {"params": {"%alpha": 0.375, "src": "@in_alt", "slope": 0.2}, "active": {"act": 1}}
    got = exe.run(inputs, **updates)
    once = m.interpret(inputs, **updates)
    twice = m.interpret(inputs, fma="twice", **updates)
    for name, array in got.items():
        assert array.tobytes() in (once[name].tobytes(), twice[name].tobytes()), name
    assert not np.array_equal(got["act_out"], plain["act_out"])
    # The updates stay: the next run without any gives the same memory again.
    assert all(np.array_equal(v, got[k]) for k, v in exe.run(inputs).items())


@pytest.mark.parametrize(
    "params, active, error, message",
    [
        ({"beta": 1.0}, None, ValueError, r"@infer has no dynamic parameter %beta \(its dynamic parameters: %alpha, "),
        ({"alpha": "x"}, None, TypeError, r"%alpha: a f32 parameter takes an int or a float"),
        ({"alpha": 1e39}, None, ValueError, r"%alpha: .* out of range for f32"),
        ({"src": "@frame"}, None, ValueError, r"%src: `@frame` is not usm memory of the module"),
        ({"src": ("@in", 1 << 40)}, None, ValueError, r"%src: offset .* is past the end of @in"),
        ({"frame_in": "@in"}, None, ValueError, r"%frame_in: `@in` is not buffer of the module"),
        ({"gain": 1.0}, None, ValueError, r"%gain: only scalar, pointer and accessor parameters"),
        (None, {"act": 3}, ValueError, r"%act has 3 alternative\(s\), numbered 0 to 2"),
        (None, {"nope": 0}, ValueError, r"no dynamic command group %nope"),
        (None, {"act": "1"}, TypeError, r"%act: the active alternative must be an int"),
    ],
)
def test_bad_updates_raise_before_anything_runs(device, params, active, error, message):
    m = cmdgraph.parse_file("examples/dynamic_update.cgir")
    exe = device.load(m.compile())
    before = exe.run(random_inputs(m, 8))
    with pytest.raises(error, match=message):
        exe.run(random_inputs(m, 9), params=params, active=active)
    with pytest.raises(error, match=message):
        m.interpret(params=params, active=active)
    assert all(np.array_equal(v, before[k]) for k, v in exe.run(runs=0).items())


@pytest.mark.parametrize("ty", ["u8", "i8", "u16", "i16", "f16", "u32", "i64", "u64", "f64"])
def test_every_element_type_round_trips_with_its_dtype(device, ty):
    """A copy kernel per element type: the array comes back with the dtype of docs/python.md
    and its bits, from Vulkan and from the interpreter; the dtype of another width is refused."""
    text = f"""
kernel @copy(%x: buf<{ty}, read>, %y: buf<{ty}, write>) {{
  %i = global_id 0
  %v = load %x[%i]
  store %y[%i], %v
}}
usm @x : {ty}[64]
usm @y : {ty}[64]
graph @g {{
  %k = kernel @copy range(64) args(@x, @y)
}}
"""
    m = cmdgraph.parse(text, filename=f"{ty}.cgir")
    dtype = np.dtype(DTYPES[ty])
    rng = np.random.default_rng(11)
    if dtype.kind == "f":
        x = (rng.random(64) * 8 - 4).astype(dtype)
    else:
        x = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, size=64, dtype=dtype, endpoint=True)
    for out in (device.load(m.compile()).run({"x": x})["y"], m.interpret({"x": x})["y"]):
        assert out.dtype == dtype and out.tobytes() == x.tobytes()
    other = np.dtype(f"{dtype.kind}{8 if dtype.itemsize != 8 else 4}")
    with pytest.raises(TypeError, match=rf"@x \({ty}\[64\]\): the array's dtype is"):
        m.interpret({"x": x.astype(other)})


def test_arrays_cross_without_a_copy_beyond_the_staging_buffers(device):
    """Inputs are read by address straight into the executor's staging buffer, outputs are
    written straight into new arrays: the Python heap grows by the outputs alone (NumPy
    reports its data allocations to tracemalloc). A `tobytes()` of the input, or a
    `bytes`/`bytearray` of the output before the array, would add 16 MiB each."""
    import tracemalloc

    n = 1 << 22
    m = cmdgraph.parse(
        "kernel @inc(%x: buf<f32, read_write>) {\n  %i = global_id 0\n  %v = load %x[%i]\n"
        "  %one = const 1.0 : f32\n  %r = add %v, %one\n  store %x[%i], %r\n}\n\n"
        f"usm @big : f32[{n}]\n\ngraph @g {{\n  %a = kernel @inc range({n}) args(@big)\n}}\n"
    )
    exe = device.load(m.compile())
    x = np.random.default_rng(5).random(n, dtype=np.float32)
    exe.run({"big": x}, outputs=["big"])  # finalize first
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        out = exe.run({"big": x}, outputs=["big"])["big"]
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert np.array_equal(out, x + np.float32(1.0))
    assert out.flags.writeable and out.flags.owndata and out.flags.c_contiguous
    assert peak < x.nbytes * 1.25, f"the run allocated {peak} bytes for one {x.nbytes}-byte output"
