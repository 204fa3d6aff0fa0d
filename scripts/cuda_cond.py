#!/usr/bin/env python3
"""CUDA peers of the `cond` suite (issue 33): a loop and a branch decided on the GPU.

Workloads, on one GPU, the same as the suite's own rows will be:

* **loop**: a 1-D Jacobi relaxation on N floats (`x[i] = (x[i-1] + x[i+1] + b[i]) / 2`, the
  ends fixed) as three kernels per iteration: the sweep, a one-group kernel that reduces the
  residual `max |x_new - x|`, counts the iteration and decides whether to go on
  (`residual > tol` and `count < limit`, both read on the device), and the commit of the new
  iterate. With `tol = 0` and `limit` = 10, 100, 1000 the count is data (device memory) and
  known. Peers: *eager*: the three kernels launched from the host, the condition read back
  after each iteration; *graph per iteration*: one CUDA Graph of the three, launched once per
  iteration, the condition read back; *WHILE node*: a CUDA Graph whose conditional WHILE node
  runs them until the residual kernel clears the condition (`cudaGraphSetConditional`), one
  launch and one synchronisation in all. Every peer ends with the same iterate, bit for bit.
* **branch**: a kernel reads a flag from device memory and sets the condition; an IF/ELSE
  node runs one of two small kernels. Against the same graph with one of the kernels
  unconditionally: the overhead of the branch per launch (CUDA events over back-to-back
  launches).

Conditional nodes are built the way NVIDIA NeMo builds them on PyTorch's capture: the
condition kernels through NVRTC (declaring `cudaGraphSetConditional`), the node through the
driver API (`cuGraphAddNode`, CUDA 13's signature with edge data), the body captured into the
node's graph with `cudaStreamBeginCaptureToGraph`.

    python3 scripts/cuda_cond.py --json out.json [--n 1024,4096] [--limits 10,100,1000]

Each loop row carries its `n` (the suite's sizes: at 1024 cmdgraph fuses the three kernels
into one dispatch; CUDA's peers launch three at every size).
"""

import argparse
import contextlib
import json
import time

import numpy as np
import torch
from cuda.bindings import driver as cu
from cuda.bindings import nvrtc
from cuda.bindings import runtime as cudart

SET_COND = r"""
typedef __device_builtin__ unsigned long long cudaGraphConditionalHandle;
extern "C" __device__ __cudart_builtin__ void cudaGraphSetConditional(cudaGraphConditionalHandle handle, unsigned int value);

// One Jacobi sweep of the interior: xn[i] = (x[i-1] + x[i+1] + b[i]) / 2.
extern "C" __global__ void jacobi(const float *x, const float *b, float *xn, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= 1 && i < n - 1) xn[i] = 0.5f * (x[i - 1] + x[i + 1] + b[i]);
}

// One work-group of 256: the residual max |xn - x| over the interior, the iteration count,
// and whether to go on (`resid > tol && count < limit`) into `flag` and, with `set`, into
// the conditional handle.
extern "C" __global__ void resid(const float *x, const float *xn, int n, float *r, int *count, const int *limit,
                                 float tol, unsigned *flag, cudaGraphConditionalHandle h, int set) {
    __shared__ float s[256];
    int t = threadIdx.x;
    float m = 0.0f;
    for (int i = 1 + t; i < n - 1; i += 256) m = fmaxf(m, fabsf(xn[i] - x[i]));
    s[t] = m;
    __syncthreads();
    for (int st = 128; st > 0; st >>= 1) {
        if (t < st) s[t] = fmaxf(s[t], s[t + st]);
        __syncthreads();
    }
    if (t == 0) {
        int c = *count + 1;
        *count = c;
        *r = s[0];
        unsigned more = (s[0] > tol && c < *limit) ? 1u : 0u;
        *flag = more;
        if (set) cudaGraphSetConditional(h, more);
    }
}

// The new iterate becomes the current one.
extern "C" __global__ void commit(float *x, const float *xn, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= 1 && i < n - 1) x[i] = xn[i];
}

extern "C" __global__ void branch_cond(cudaGraphConditionalHandle h, const int *flag) {
    cudaGraphSetConditional(h, *flag != 0 ? 1u : 0u);
}
"""


def ok(out):
    """The results of a cuda-python call, raising on an error status."""
    err, *rest = out
    if int(err) != 0:
        raise RuntimeError(f"CUDA call failed: {err}")
    return rest[0] if len(rest) == 1 else tuple(rest)


def kernels():
    """The condition kernels, compiled with NVRTC for this device."""
    prog = ok(nvrtc.nvrtcCreateProgram(SET_COND.encode(), b"cond.cu", 0, [], []))
    major, minor = torch.cuda.get_device_capability()
    opts = [f"--gpu-architecture=compute_{major}{minor}".encode()]
    err = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)[0]
    if int(err) != 0:
        size = ok(nvrtc.nvrtcGetProgramLogSize(prog))
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, log)
        raise RuntimeError(f"NVRTC: {log.decode(errors='replace')}")
    size = ok(nvrtc.nvrtcGetPTXSize(prog))
    ptx = b" " * size
    ok(nvrtc.nvrtcGetPTX(prog, ptx))
    image = np.frombuffer(ptx, dtype=np.uint8)
    module = ok(cu.cuModuleLoadData(image.ctypes.data))
    names = ("jacobi", "resid", "commit", "branch_cond")
    return {name: ok(cu.cuModuleGetFunction(module, name.encode())) for name in names}


def args(*values):
    """A kernel-parameter array: each entry the address of one argument's value."""
    keep = [np.array([v], dtype=t) for v, t in values]
    return np.array([k.ctypes.data for k in keep], dtype=np.uint64), keep


def launch(kernel, params, stream, groups=1, threads=1):
    ok(cu.cuLaunchKernel(kernel, groups, 1, 1, threads, 1, 1, 0, stream.cuda_stream, params.ctypes.data, 0))


def capture_info(stream):
    status, _, graph, deps, *_ = ok(cudart.cudaStreamGetCaptureInfo(stream.cuda_stream))
    assert status == cudart.cudaStreamCaptureStatus.cudaStreamCaptureStatusActive
    return graph, deps


def conditional_node(stream, handle, kind, size):
    """Adds a conditional node after what `stream` captured so far; returns its body graphs."""
    graph, deps = capture_info(stream)
    p = cu.CUgraphNodeParams()
    p.type = cu.CUgraphNodeType.CU_GRAPH_NODE_TYPE_CONDITIONAL
    p.conditional.handle = handle
    p.conditional.type = kind
    p.conditional.size = size
    p.conditional.ctx = ok(cu.cuCtxGetCurrent())
    node = ok(cu.cuGraphAddNode(graph, deps, None, len(deps), p))
    ok(
        cudart.cudaStreamUpdateCaptureDependencies(
            stream.cuda_stream, [node], None, 1, cudart.cudaStreamUpdateCaptureDependenciesFlags.cudaStreamSetCaptureDependencies
        )
    )
    return [p.conditional.phGraph_out[i] for i in range(size)]


@contextlib.contextmanager
def body(graph_out, device):
    """Captures PyTorch work on a side stream into a conditional node's body graph."""
    side = torch.cuda.Stream(device)
    ok(
        cudart.cudaStreamBeginCaptureToGraph(
            side.cuda_stream, graph_out, None, None, 0, cudart.cudaStreamCaptureMode.cudaStreamCaptureModeThreadLocal
        )
    )
    previous = torch.cuda.current_stream(device)
    torch.cuda.set_stream(side)
    try:
        yield side
    finally:
        torch.cuda.set_stream(previous)
        ok(cudart.cudaStreamEndCapture(side.cuda_stream))


class Jacobi:
    """The loop's state on the device and its body: three kernels per iteration (the sweep,
    the residual with the counter and the condition, the commit), as the `cond` suite's graph
    has them."""

    def __init__(self, n, device, k):
        g = torch.Generator(device="cpu").manual_seed(7)
        self.n = n
        self.k = k
        self.x0 = torch.rand(n, generator=g, dtype=torch.float32).to(device)
        self.b = (torch.rand(n, generator=g, dtype=torch.float32) * 1e-3).to(device)
        self.x = self.x0.clone()
        self.xn = torch.zeros(n, device=device)
        self.resid = torch.zeros(1, device=device)
        self.count = torch.zeros(1, dtype=torch.int32, device=device)
        self.limit = torch.zeros(1, dtype=torch.int32, device=device)
        self.flag = torch.zeros(1, dtype=torch.int32, device=device)
        self.flag_host = torch.zeros(1, dtype=torch.int32).pin_memory()
        p = lambda t: (t.data_ptr(), np.uint64)  # noqa: E731
        self.a_jacobi = args(p(self.x), p(self.b), p(self.xn), (n, np.int32))
        self.a_commit = args(p(self.x), p(self.xn), (n, np.int32))
        self.handle = 0

    def resid_args(self, handle, set_cond):
        p = lambda t: (t.data_ptr(), np.uint64)  # noqa: E731
        return args(
            p(self.x), p(self.xn), (self.n, np.int32), p(self.resid), p(self.count), p(self.limit),
            (0.0, np.float32), p(self.flag), (handle, np.uint64), (1 if set_cond else 0, np.int32),
        )

    def reset(self, limit):
        self.x.copy_(self.x0)
        self.count.zero_()
        self.limit.fill_(limit)

    def step(self, stream, resid_params):
        groups = (self.n + 255) // 256
        launch(self.k["jacobi"], self.a_jacobi[0], stream, groups, 256)
        launch(self.k["resid"], resid_params[0], stream, 1, 256)
        launch(self.k["commit"], self.a_commit[0], stream, groups, 256)

    def more(self, stream):
        """Reads the condition back (what a host-driven loop does each iteration)."""
        self.flag_host.copy_(self.flag, non_blocking=True)
        torch.cuda.current_stream().synchronize()
        return bool(self.flag_host.item())


def time_loop(fn, reps):
    ts = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)) * 1e3


def loop_rows(n, limits, reps, k, device):
    j = Jacobi(n, device, k)
    stream = torch.cuda.Stream(device)
    plain = j.resid_args(0, False)
    # One iteration as a CUDA Graph, for the host-driven graph loop.
    j.reset(2)
    j.step(torch.cuda.current_stream(device), plain)
    torch.cuda.synchronize()
    per_iter = torch.cuda.CUDAGraph()
    with torch.cuda.graph(per_iter, stream=stream):
        j.step(torch.cuda.current_stream(device), plain)
    # The WHILE node: the condition starts at 1 on every launch (cudaGraphCondAssignDefault)
    # and the body's residual kernel sets it.
    whole = torch.cuda.CUDAGraph()
    with torch.cuda.graph(whole, stream=stream, capture_error_mode="thread_local"):
        graph, _ = capture_info(stream)
        handle = ok(cudart.cudaGraphConditionalHandleCreate(graph, 1, 1))
        setting = j.resid_args(int(handle), True)
        (loop_body,) = conditional_node(
            torch.cuda.current_stream(device), handle, cu.CUgraphConditionalNodeType.CU_GRAPH_COND_TYPE_WHILE, 1
        )
        with body(loop_body, device) as side:
            j.step(side, setting)
    rows = []
    cur = lambda: torch.cuda.current_stream(device)  # noqa: E731
    for limit in limits:
        def eager():
            j.reset(limit)
            while True:
                j.step(cur(), plain)
                if not j.more(cur()):
                    break

        def graph_per_iteration():
            j.reset(limit)
            while True:
                per_iter.replay()
                if not j.more(cur()):
                    break

        def while_node():
            j.reset(limit)
            whole.replay()

        row = {"limit": limit}
        results = {}
        for name, fn in (("eager", eager), ("graph_per_iteration", graph_per_iteration), ("while_node", while_node)):
            fn()
            torch.cuda.synchronize()
            got = int(j.count.item())
            if got != limit:
                raise RuntimeError(f"{name}: {got} iterations, expected {limit}")
            results[name] = j.x.clone()
            row[f"{name}_ms"] = time_loop(fn, reps)
        # Every peer computes the same iterations, in the same order: the same bits.
        for name in ("graph_per_iteration", "while_node"):
            if not torch.equal(results[name], results["eager"]):
                raise RuntimeError(f"{name}: the final iterate differs from eager's")
        rows.append(row)
        print(
            f"loop limit={limit}: eager {row['eager_ms']:.3f} ms, graph per iteration "
            f"{row['graph_per_iteration_ms']:.3f} ms, WHILE node {row['while_node_ms']:.3f} ms"
        )
    return rows


def branch_rows(reps, k, device):
    flag = torch.zeros(1, dtype=torch.int32, device=device)
    out = torch.zeros(1024, device=device)
    stream = torch.cuda.Stream(device)
    out.add_(1.0)
    out.mul_(2.0)
    torch.cuda.synchronize()
    plain = torch.cuda.CUDAGraph()
    with torch.cuda.graph(plain, stream=stream):
        out.add_(1.0)
    cond = torch.cuda.CUDAGraph()
    with torch.cuda.graph(cond, stream=stream, capture_error_mode="thread_local"):
        graph, _ = capture_info(stream)
        handle = ok(cudart.cudaGraphConditionalHandleCreate(graph, 0, 0))
        params, _held = args((int(handle), np.uint64), (flag.data_ptr(), np.uint64))
        launch(k["branch_cond"], params, torch.cuda.current_stream(device))
        then_g, else_g = conditional_node(
            torch.cuda.current_stream(device), handle, cu.CUgraphConditionalNodeType.CU_GRAPH_COND_TYPE_IF, 2
        )
        with body(then_g, device):
            out.add_(1.0)
        with body(else_g, device):
            out.mul_(2.0)
    # Check both arms.
    for f, want in ((1, lambda v: v + 1.0), (0, lambda v: v * 2.0)):
        flag.fill_(f)
        before = out.clone()
        cond.replay()
        torch.cuda.synchronize()
        if not torch.equal(out, want(before)):
            raise RuntimeError(f"IF/ELSE with flag {f} ran the wrong arm")
    out.zero_()

    def per_launch(g, launches=1000):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        ts = []
        for _ in range(reps):
            torch.cuda.synchronize()
            start.record()
            for _ in range(launches):
                g.replay()
            end.record()
            end.synchronize()
            ts.append(start.elapsed_time(end) * 1e3 / launches)
        return float(np.median(ts))

    flag.fill_(1)
    row = {"plain_us": per_launch(plain), "if_else_us": per_launch(cond)}
    row["overhead_us"] = row["if_else_us"] - row["plain_us"]
    print(f"branch: plain {row['plain_us']:.2f} us/launch, IF/ELSE {row['if_else_us']:.2f} us/launch")
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", required=True, help="where to write the results")
    p.add_argument("--n", default="1024,4096", help="Jacobi vector lengths, comma-separated")
    p.add_argument("--limits", default="10,100,1000", help="iteration counts")
    p.add_argument("--reps", type=int, default=9, help="timed repetitions (median)")
    a = p.parse_args()
    device = torch.device("cuda")
    # The primary context, current on this thread, before any driver call.
    torch.zeros(1, device=device)
    torch.cuda.synchronize()
    k = kernels()
    limits = [int(x) for x in a.limits.split(",")]
    out = {
        "available": True,
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "loop": [
            dict(row, n=n)
            for n in (int(x) for x in a.n.split(","))
            for row in loop_rows(n, limits, a.reps, k, device)
        ],
        "branch": branch_rows(a.reps, k, device),
    }
    with open(a.json, "w") as f:
        json.dump(out, f, indent=1)
    print(f"cuda_cond: wrote {a.json}")


if __name__ == "__main__":
    main()
