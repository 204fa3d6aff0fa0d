"""Communication nodes from the Python SYCL layer (docs/mpi.md, docs/python.md "Ranks"):
`Handler.ext_send`, `ext_recv` and `ext_allreduce` build them, `Context.set_communicator`
gives the context's graphs this process's rank. Two ranks, each a thread with its own
context, on the interpreter and on Vulkan (llvmpipe on CI, validation on), exchange arrays of
full-precision random floats and all-reduce them, two runs in a row; every output is computed
here by hand (all-reduces in rank order) and must match bit for bit on both backends."""

import threading

import numpy as np
import pytest

from sycl_common import BACKENDS, Env, rng_f32
from test_ranks import Comm, Ranks

N = 256


def rank_program(backend, ranks, r, x0, out, errors):
    try:
        env = Env(backend)
        env.ctx.set_communicator(Comm(ranks, r))
        peer = 1 - r
        x = env.usm(x0)
        a = env.usm(np.zeros(N, np.float32))
        b = env.usm(np.zeros(N, np.float32))
        g = env.graph()
        scaled = g.add(lambda h: h.parallel_for(env.k("scale"), N, x, a, 1.75))
        sent = g.add(lambda h: h.ext_send(a, 4 * N, peer, 5))
        got = g.add(lambda h: h.ext_recv(b, 4 * N, peer, 5))
        added = g.add(lambda h: h.parallel_for(env.k("add"), N, a, b))
        summed = g.add(lambda h: h.ext_allreduce("sum", b, 4 * N))
        g.make_edge(scaled, sent)
        g.make_edge(sent, added)
        g.make_edge(got, added)
        g.make_edge(added, summed)
        assert sent.get_type() == got.get_type() == summed.get_type() == "communication"
        exe = g.finalize()
        q = env.queue()
        q.ext_oneapi_graph(exe).wait()
        first = b.to_numpy()
        q.ext_oneapi_graph(exe).wait()
        out[r] = (first, b.to_numpy())
    except Exception as e:  # reported with the other rank's
        errors.append((r, e))


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_ranks_exchange_and_all_reduce_through_the_sycl_layer(backend):
    x0 = [rng_f32(N, 30 + r) for r in (0, 1)]
    ranks = Ranks()
    out, errors = [None, None], []
    threads = [
        threading.Thread(target=rank_program, args=(backend, ranks, r, x0[r], out, errors)) for r in (0, 1)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r, e in errors:
        if isinstance(e, pytest.skip.Exception):
            pytest.skip(str(e))
    assert not errors, errors
    a = [x0[r] * np.float32(1.75) for r in (0, 1)]
    # Run 1: b = a_peer + a, then summed over the ranks in rank order (rank 0's first).
    b = [a[1 - r] + a[r] for r in (0, 1)]
    first = b[0] + b[1]
    # Run 2: b is received again (the peer's a), so the same as run 1.
    for r in (0, 1):
        got_first, got_second = out[r]
        assert np.array_equal(got_first.view(np.uint32), first.view(np.uint32)), r
        assert np.array_equal(got_second.view(np.uint32), first.view(np.uint32)), r


def test_ext_allreduce_names_the_operations_it_knows():
    env = Env("interpreter")
    b = env.usm(np.zeros(N, np.float32))
    g = env.graph()
    with pytest.raises(ValueError, match="`product` is not sum, min or max"):
        g.add(lambda h: h.ext_allreduce("product", b, 4 * N))
