"""Arrays of other libraries through DLPack (docs/python.md "Other array libraries"): an
object with `__dlpack__` binds without a copy (a NumPy view of its memory), is checked as an
ndarray is, and memory on another API's GPU is refused naming the memory object. The
producer here is a minimal DLPack exporter over a NumPy array, so the protocol, not
NumPy's ndarray path, is what runs (PyTorch itself is checked on the GPU machine:
scripts/gpu-python.sh)."""

import numpy as np
import pytest

import cmdgraph
from cmdgraph import _arrays
from conftest import random_inputs


class Exporter:
    """A tensor of some other library: only the DLPack protocol, over `array`'s memory."""

    def __init__(self, array, device=(1, 0)):
        self.array = array
        self.device = device

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.device


def saxpy(device):
    m = cmdgraph.parse_file("examples/saxpy_chain.cgir")
    return m, device.load(m.compile())


def test_a_dlpack_tensor_binds_without_a_copy_and_matches_the_interpreter(device):
    m, exe = saxpy(device)
    inputs = random_inputs(m, 11)
    x = inputs["x"]
    view = _arrays.prepare("x", Exporter(x), "<f4", 1, x.size, f"f32[{x.size}]")
    assert isinstance(view, np.ndarray) and np.shares_memory(view, x), "DLPack input was copied"
    tensors = {k: Exporter(v) for k, v in inputs.items()}
    got = exe.run(tensors)
    want = m.interpret(inputs)
    for name in want:
        assert got[name].tobytes() == want[name].tobytes(), name
    # The interpreter takes them too.
    again = m.interpret(tensors)
    assert all(again[n].tobytes() == want[n].tobytes() for n in want)


def test_outputs_export_through_dlpack_without_a_copy(device):
    m, exe = saxpy(device)
    out = exe.run(random_inputs(m, 12))
    for name, array in out.items():
        # What torch.from_dlpack(array) does: a view of the same memory (so it must be
        # writable and C-contiguous; read-only arrays cannot be exported).
        shared = np.from_dlpack(Exporter(array))
        assert np.shares_memory(shared, array), name


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda y: Exporter(y, device=(2, 0)), TypeError, r"@y \(f32\[65536\]\): the Exporter lives in CUDA memory \(device 0\).*t\.cpu\(\)"),
        (lambda y: Exporter(y, device=(99, 1)), TypeError, r"@y .* device type 99 memory \(device 1\)"),
        (lambda y: Exporter(y.astype(np.float64)), TypeError, r"@y \(f32\[65536\]\): the array's dtype is '<f8'"),
        (lambda y: Exporter(np.repeat(y, 2)[::2]), ValueError, r"@y \(f32\[65536\]\): the array is not C-contiguous.*contiguous\(\)"),
        (lambda y: Exporter(y[:-1].copy()), ValueError, r"@y .* has 65535 elements but @y has 65536"),
    ],
    ids=["cuda", "unknown device", "dtype", "non-contiguous", "too small"],
)
def test_a_bad_dlpack_tensor_raises_naming_it_and_nothing_is_bound(device, make, error, message):
    m, exe = saxpy(device)
    before = random_inputs(m, 13)
    exe.run(before)
    after = random_inputs(m, 14)
    with pytest.raises(error, match=message):
        exe.run({"x": Exporter(after["x"]), "y": make(after["y"])})
    now = exe.run(runs=0)
    for name in ("x", "y"):
        assert np.array_equal(now[name], before[name]), name


def test_an_exporter_that_refuses_is_a_type_error_naming_the_memory():
    class Refuses(Exporter):
        def __dlpack__(self, **kwargs):
            raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")

    m = cmdgraph.parse_file("examples/saxpy_chain.cgir")
    x = np.zeros(65536, np.float32)
    with pytest.raises(TypeError, match=r"@x \(f32\[65536\]\): the Refuses could not be read through DLPack: .*detach"):
        m.interpret({"x": Refuses(x)})
