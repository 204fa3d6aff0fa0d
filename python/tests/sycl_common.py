"""Helpers of the SYCL tests: the kernels of sycl/tests/common (the Rust tests' own), and a
context on each backend: the reference interpreter and the Vulkan device (llvmpipe in CI),
which compiles each graph in process at its first run with the validation layer on."""

import numpy as np
import pytest

from cmdgraph import sycl

KERNELS = r"""
// y = a * x + y
kernel @saxpy(%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32) {
  %i = global_id 0
  %xv = load %x[%i]
  %yv = load %y[%i]
  %r = fma %a, %xv, %yv
  store %y[%i], %r
}

// out = s * in
kernel @scale(%in: buf<f32, read>, %out: buf<f32, write>, %s: f32) {
  %i = global_id 0
  %v = load %in[%i]
  %r = mul %v, %s
  store %out[%i], %r
}

// x += 1
kernel @increment(%x: buf<f32, read_write>) {
  %i = global_id 0
  %v = load %x[%i]
  %one = const 1.0 : f32
  %r = add %v, %one
  store %x[%i], %r
}

// b += a
kernel @add(%a: buf<f32, read>, %b: buf<f32, read_write>) {
  %i = global_id 0
  %va = load %a[%i]
  %vb = load %b[%i]
  %r = add %vb, %va
  store %b[%i], %r
}

// c -= a
kernel @subtract(%a: buf<f32, read>, %c: buf<f32, read_write>) {
  %i = global_id 0
  %va = load %a[%i]
  %vc = load %c[%i]
  %r = sub %vc, %va
  store %c[%i], %r
}

// b -= 1, c -= 1
kernel @decrement(%b: buf<f32, read_write>, %c: buf<f32, read_write>) {
  %i = global_id 0
  %one = const 1.0 : f32
  %vb = load %b[%i]
  %rb = sub %vb, %one
  store %b[%i], %rb
  %vc = load %c[%i]
  %rc = sub %vc, %one
  store %c[%i], %rc
}

// x[0] += 1 (one work-item)
kernel @bump(%x: buf<u32, read_write>) {
  %z = const 0 : u32
  %v = load %x[%z]
  %one = const 1 : u32
  %r = add %v, %one
  store %x[%z], %r
}

kernel @negate(%in: buf<f32, read>, %out: buf<f32, write>) {
  %i = global_id 0
  %v = load %in[%i]
  %r = neg %v
  store %out[%i], %r
}
"""

BACKENDS = ["interpreter", "vulkan"]


def device(backend):
    """The interpreter, or the first Vulkan device (skips without one)."""
    for d in sycl.Device.get_devices():
        if d.backend == backend:
            return d
    pytest.skip(f"no {backend} device")


class Env:
    """One context on `backend` with the kernels registered."""

    def __init__(self, backend):
        self.backend = backend
        self.dev = device(backend)
        self.ctx = sycl.Context(self.dev, validation=True if backend == "vulkan" else None)
        self.kernels = {k.name: k for k in self.ctx.register_kernels(KERNELS)}

    def k(self, name):
        return self.kernels[name]

    def queue(self, **props):
        return sycl.Queue(self.ctx, self.dev, **props)

    def graph(self, **props):
        return sycl.ModifiableGraph(self.ctx, self.dev, **props)

    def usm(self, data, kind="device"):
        data = np.asarray(data)
        u = sycl.malloc(data.size, data.dtype, self.ctx, kind)
        u.copy_from(data)
        return u


def rng_f32(n, seed):
    """Full-precision random float32 values (every mantissa bit used)."""
    r = np.random.default_rng(seed)
    return (r.standard_normal(n) * 10).astype(np.float32)


def on_both(program):
    """Runs `program(env)` on the interpreter and on Vulkan; their outputs (dicts of arrays)
    must be equal, bit for bit. Returns the interpreter's."""
    results = {}
    for backend in BACKENDS:
        try:
            env = Env(backend)
        except pytest.skip.Exception:
            continue
        results[backend] = program(env)
    ref = results["interpreter"]
    for backend, out in results.items():
        assert out.keys() == ref.keys()
        for name in ref:
            np.testing.assert_array_equal(out[name], ref[name], err_msg=f"{backend}: {name}")
    return ref
