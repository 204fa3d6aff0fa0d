"""cmdgraph's conditional-node extension from Python (docs/conditional.md): a `while` loop
whose word a kernel counts down, an `if` with an `else`, a `switch`, built with the
handler's `ext_cmdgraph_*` methods and run on the interpreter and on Vulkan (llvmpipe in
CI, validation on), against the values computed here and against each other, bit for bit."""

import numpy as np

from cmdgraph import sycl
from sycl_common import on_both, rng_f32

COUNTDOWN = """
kernel @countdown(%c: buf<u32, read_write>) {
  %z = const 0 : u32
  %one = const 1 : u32
  %n = load %c[%z]
  %n1 = sub %n, %one
  store %c[%z], %n1
}
"""


def test_while_if_and_switch_run_their_bodies_as_the_words_say():
    on_both(while_if_and_switch)


def while_if_and_switch(env):
    (countdown,) = env.ctx.register_kernels(COUNTDOWN)
    x0 = rng_f32(8, 33)
    x = env.usm(x0)
    flags = sycl.malloc_device(3, np.uint32, env.ctx)

    body = env.graph()
    inc = body.add(lambda h: h.parallel_for(env.k("increment"), 8, x))
    body.add(lambda h: h.single_task(countdown, flags), depends_on=inc)
    body = body.finalize()
    plus = env.graph()
    plus.add(lambda h: h.parallel_for(env.k("increment"), 8, x))
    plus = plus.finalize()
    nothing = env.graph().finalize()

    g = env.graph()
    w = g.add(lambda h: h.ext_cmdgraph_while(flags, body))
    i = g.add(lambda h: h.ext_cmdgraph_if(flags + 1, plus, nothing), depends_on=w)
    g.add(lambda h: h.ext_cmdgraph_switch(flags + 2, [nothing, plus]), depends_on=i)
    ir = g.to_ir()
    assert " = while @" in ir and " else @" in ir and " = switch @" in ir, ir
    exe = g.finalize()
    q = env.queue()
    out = {}
    for run, (words, adds) in enumerate([([3, 1, 1], 5), ([0, 0, 0], 0), ([2, 0, 9], 2), ([40, 1, 0], 41)]):
        x.copy_from(x0)
        flags.copy_from(np.array(words, np.uint32))
        q.ext_oneapi_graph(exe).wait()
        want = x0.copy()
        for _ in range(adds):
            want = want + np.float32(1.0)
        np.testing.assert_array_equal(x.to_numpy(), want, err_msg=f"{env.backend}: words {words}")
        assert flags.to_numpy()[0] == 0
        out[f"x{run}"] = x.to_numpy()
        out[f"flags{run}"] = flags.to_numpy()
    return out
