"""A graph across two devices from Python (docs/multi-device.md, docs/python.md): the module
compiled by `Module.compile` (which adds `split-devices`), loaded with
`cmdgraph.load_on_devices` on two logical devices of the default device (llvmpipe on CI,
validation on both), run with a host task in Python beside device 1's memory, then with a
parameter of a node on device 1 changed: every memory object equals the reference
interpreter's bit for bit. Misuse raises with a message."""

import numpy as np
import pytest

import cmdgraph
from conftest import random_inputs

# Separate multiply and add round once each on both runtimes, so bytes compare exactly.
IR = """kernel @saxpy(%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32) {
  %i = global_id 0
  %xv = load %x[%i]
  %yv = load %y[%i]
  %p = mul %a, %xv
  %r = add %p, %yv
  store %y[%i], %r
}

usm @w : f32[777] replicated
usm @a : f32[777]
usm @b : f32[777] home(1)
usm @out : f32[777]

graph @g properties(updatable) {
  dyn %s = 1.5 : f32
  %k0 = kernel @saxpy range(777) args(@w, @a, 1.25)
  %t = memcpy @b, @a, 3108 after(%k0)
  %k1 = kernel @saxpy range(777) args(@w, @b, %s) device(1) after(%t)
  %h = host_task "halve_b" access(@b read_write) after(%k1)
  %back = memcpy @out, @b, 3108 after(%h)
  %k2 = kernel @saxpy range(777) args(@a, @out, -0.5) after(%back)
}
"""


def halve_b(memory):
    memory["b"] *= np.float32(0.5)


def test_a_graph_across_two_devices_matches_the_interpreter(device):
    m = cmdgraph.parse(IR)
    bundle = m.compile()
    assert "graph @g.s1.d1" in bundle.optimized, "the bundle has no stage graphs"
    exe = cmdgraph.load_on_devices(bundle, [device, device], host_tasks={"halve_b": halve_b})
    assert exe.graphs == ["g"] and exe.validation
    assert exe.device_name == f"{device.name} + {device.name}"
    inputs = random_inputs(m, 5)
    got = exe.run(inputs, runs=2)
    want = m.interpret(inputs, runs=2, host_tasks={"halve_b": halve_b})
    for name in want:
        assert got[name].tobytes() == want[name].tobytes(), f"@{name} differs from the interpreter"
    # A parameter of the node on device 1, changed before one more run (memory kept).
    later = exe.run(params={"s": -0.8125})
    want_later = m.interpret(inputs, runs=2, host_tasks={"halve_b": halve_b})
    twice = m.interpret(want_later, params={"s": -0.8125}, host_tasks={"halve_b": halve_b})
    for name in twice:
        assert later[name].tobytes() == twice[name].tobytes(), f"@{name} differs after the update"
    assert not np.array_equal(later["out"], got["out"]), "the update changed nothing"


def test_misuse_raises_with_a_message(device):
    bundle = cmdgraph.parse(IR).compile()
    with pytest.raises(cmdgraph.DeviceError, match="at least one device"):
        cmdgraph.load_on_devices(bundle, [])
    one = cmdgraph.load_on_devices(bundle, [device])
    with pytest.raises(cmdgraph.DeviceError, match=r"device 1.*1 device\(s\)"):
        one.run()
    two = cmdgraph.load_on_devices(bundle, [device, device])
    two.run()
    with pytest.raises(cmdgraph.DeviceError, match="share no clock"):
        two.profile()
    with pytest.raises(TypeError):
        cmdgraph.load_on_devices(bundle, ["not a device"])
