"""Communication nodes from Python (docs/mpi.md, docs/python.md "Ranks"): two ranks, each a
thread of this process with the bundle loaded on its own device context (llvmpipe on CI,
validation on), exchange halves and all-reduce full-precision random floats three runs in a
row through `Executable.set_communicator`, a communicator written in Python (as one over
mpi4py would be). Every memory object equals the reference interpreter's multi-rank
simulation (`cmdgraph interp --ranks 2` semantics: all-reduces in rank order), computed here
by hand from the inputs. A communicator missing a method is refused; one that raises fails the
run naming the node."""

import queue
import threading

import numpy as np
import pytest

import cmdgraph

N = 300


def ir():
    head = """kernel @saxpy(%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32) {
  %i = global_id 0
  %xv = load %x[%i]
  %yv = load %y[%i]
  %p = mul %a, %xv
  %r = add %p, %yv
  store %y[%i], %r
}

usm @x : f32[300]
usm @a : f32[300]
usm @b : f32[300]
"""
    graphs = ""
    for r in (0, 1):
        p = 1 - r
        graphs += f"""
graph @g.r{r} {{
  %k0 = kernel @saxpy range(300) args(@x, @a, 1.75)
  %s = send @a, 1200 to({p}) tag(5) after(%k0)
  %r = recv @b, 1200 from({p}) tag(5)
  %k1 = kernel @saxpy range(300) args(@a, @b, 0.5) after(%s, %r)
  %all = allreduce sum @b, 1200 after(%k1)
}}
"""
    return head + graphs


class Ranks:
    """Two ranks in one process: a mailbox per (source, destination, tag), and a barrier
    for all-gathers."""

    def __init__(self):
        self.boxes = {}
        self.lock = threading.Lock()
        self.gather = [None, None]
        self.barrier = threading.Barrier(2)

    def box(self, key):
        with self.lock:
            return self.boxes.setdefault(key, queue.Queue())


class Comm:
    def __init__(self, ranks, rank):
        self.ranks, self.rank, self.size = ranks, rank, 2

    def send(self, to, tag, data):
        self.ranks.box((self.rank, to, tag)).put(bytes(data))

    def recv(self, source, tag, nbytes):
        data = self.ranks.box((source, self.rank, tag)).get(timeout=60)
        assert len(data) == nbytes
        return data

    def allgather(self, data):
        self.ranks.gather[self.rank] = bytes(data)
        self.ranks.barrier.wait(timeout=60)
        parts = list(self.ranks.gather)
        self.ranks.barrier.wait(timeout=60)
        return parts


def rng(seed):
    return np.random.default_rng(seed).uniform(-1, 1, N).astype(np.float32) * np.float32(3.3)


def test_two_ranks_exchange_and_all_reduce_through_a_python_communicator():
    bundle = cmdgraph.parse(ir()).compile()
    ranks = Ranks()
    inputs = [{"x": rng(10 + r), "a": rng(20 + r), "b": np.zeros(N, np.float32)} for r in (0, 1)]
    out = [None, None]
    errors = []

    def rank(r):
        try:
            exe = cmdgraph.Device(validation=True).load(bundle)
            exe.set_communicator(Comm(ranks, r))
            first = exe.run(inputs[r], graph=f"g.r{r}")
            rest = exe.run(graph=f"g.r{r}", runs=2)
            out[r] = (first, rest)
        except Exception as e:  # reported below, with the other rank's
            errors.append(e)

    threads = [threading.Thread(target=rank, args=(r,)) for r in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    # The first run by hand: a = 1.75 x + a; b = 0.5 a + a_peer; b summed over ranks in order.
    a = [np.float32(1.75) * inputs[r]["x"] + inputs[r]["a"] for r in (0, 1)]
    b = [np.float32(0.5) * a[r] + a[1 - r] for r in (0, 1)]
    want_b = b[0] + b[1]
    for r in (0, 1):
        first, rest = out[r]
        assert np.array_equal(first["a"].view(np.uint32), a[r].view(np.uint32))
        assert np.array_equal(first["b"].view(np.uint32), want_b.view(np.uint32))
        assert not np.array_equal(rest["a"], first["a"])
    assert np.array_equal(out[0][1]["b"], out[1][1]["b"])


def test_bad_communicators_are_refused_and_a_raising_one_fails_the_run():
    bundle = cmdgraph.parse(ir()).compile()
    exe = cmdgraph.Device(validation=True).load(bundle)

    class NoGather:
        rank, size = 0, 2

        def send(self, *a):
            pass

        def recv(self, *a):
            return b""

    with pytest.raises(TypeError, match="no `allgather` method"):
        exe.set_communicator(NoGather())

    class Raising(NoGather):
        def send(self, *a):
            raise ConnectionError("the peer is gone")

        def allgather(self, data):
            return [data, data]

    exe.set_communicator(Raising())
    with pytest.raises(cmdgraph.DeviceError, match=r"(?s)%s.*ConnectionError.*the peer is gone"):
        exe.run(graph="g.r0")
