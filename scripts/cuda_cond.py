#!/usr/bin/env python3
"""CUDA peers of the `cond` suite (issue 33): a loop and a branch decided on the GPU.

Workloads, on one GPU, the same as the suite's own rows will be:

* **loop**: a 1-D Jacobi relaxation on N floats (`x[i] = (x[i-1] + x[i+1] + b[i]) / 2`, the
  ends fixed), its residual `max |x_new - x|` reduced on the device, and an iteration counter;
  the loop runs while `residual > tol` and `counter < limit`, both read on the device, with
  `tol = 0` and `limit` = 10, 100, 1000, so the count is data (device memory) and known.
  Peers: *eager*: PyTorch ops from the host, the condition read back (`.item()`) after each
  iteration; *graph per iteration*: one CUDA Graph of the body, launched and synchronised once
  per iteration with the condition read back; *WHILE node*: a CUDA Graph whose conditional
  WHILE node runs the body until a kernel in it clears the condition
  (`cudaGraphSetConditional`), one launch and one synchronisation in all.
* **branch**: a kernel reads a flag from device memory and sets the condition; an IF/ELSE
  node runs one of two small kernels. Against the same graph with one of the kernels
  unconditionally: the overhead of the branch per launch (CUDA events over back-to-back
  launches).

Conditional nodes are built the way NVIDIA NeMo builds them on PyTorch's capture: the
condition kernels through NVRTC (declaring `cudaGraphSetConditional`), the node through the
driver API (`cuGraphAddNode`, CUDA 13's signature with edge data), the body captured into the
node's graph with `cudaStreamBeginCaptureToGraph`.

    python3 scripts/cuda_cond.py --json out.json [--n 4096] [--limits 10,100,1000]
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

extern "C" __global__ void loop_cond(cudaGraphConditionalHandle h, const float *resid, const int *count,
                                     const int *limit, float tol) {
    cudaGraphSetConditional(h, (*resid > tol && *count < *limit) ? 1u : 0u);
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
    return {name: ok(cu.cuModuleGetFunction(module, name.encode())) for name in ("loop_cond", "branch_cond")}


def args(*values):
    """A kernel-parameter array: each entry the address of one argument's value."""
    keep = [np.array([v], dtype=t) for v, t in values]
    return np.array([k.ctypes.data for k in keep], dtype=np.uint64), keep


def launch(kernel, params, stream):
    ok(cu.cuLaunchKernel(kernel, 1, 1, 1, 1, 1, 1, 0, stream.cuda_stream, params.ctypes.data, 0))


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
    """The loop's state on the device and its body as PyTorch ops."""

    def __init__(self, n, device):
        g = torch.Generator(device="cpu").manual_seed(7)
        self.x0 = torch.rand(n, generator=g, dtype=torch.float32).to(device)
        self.b = (torch.rand(n, generator=g, dtype=torch.float32) * 1e-3).to(device)
        self.x = self.x0.clone()
        self.new = torch.empty(n - 2, device=device)
        self.diff = torch.empty(n - 2, device=device)
        self.resid = torch.zeros(1, device=device)
        self.count = torch.zeros(1, dtype=torch.int32, device=device)
        self.limit = torch.zeros(1, dtype=torch.int32, device=device)

    def reset(self, limit):
        self.x.copy_(self.x0)
        self.count.zero_()
        self.limit.fill_(limit)
        self.resid.fill_(1.0)

    def step(self):
        torch.add(self.x[:-2], self.x[2:], out=self.new)
        self.new.add_(self.b[1:-1]).mul_(0.5)
        # No allocation inside a captured body: every temporary is preallocated.
        torch.sub(self.new, self.x[1:-1], out=self.diff)
        self.diff.abs_()
        torch.amax(self.diff, dim=0, keepdim=True, out=self.resid)
        self.x[1:-1].copy_(self.new)
        self.count.add_(1)

    def more(self):
        return bool((self.resid > 0.0).item() and (self.count < self.limit).item())


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
    j = Jacobi(n, device)
    stream = torch.cuda.Stream(device)
    # Warm up PyTorch's kernels outside any capture.
    j.reset(2)
    j.step()
    torch.cuda.synchronize()
    # One iteration as a CUDA Graph, for the host-driven graph loop.
    per_iter = torch.cuda.CUDAGraph()
    with torch.cuda.graph(per_iter, stream=stream):
        j.step()
    # The WHILE node: the condition set before the node and at the end of the body.
    whole = torch.cuda.CUDAGraph()
    keep = []
    with torch.cuda.graph(whole, stream=stream, capture_error_mode="thread_local"):
        graph, _ = capture_info(stream)
        handle = ok(cudart.cudaGraphConditionalHandleCreate(graph, 0, 0))
        params, held = args(
            (int(handle), np.uint64),
            (j.resid.data_ptr(), np.uint64),
            (j.count.data_ptr(), np.uint64),
            (j.limit.data_ptr(), np.uint64),
            (0.0, np.float32),
        )
        keep += [params, held]
        launch(k["loop_cond"], params, torch.cuda.current_stream(device))
        (loop_body,) = conditional_node(
            torch.cuda.current_stream(device), handle, cu.CUgraphConditionalNodeType.CU_GRAPH_COND_TYPE_WHILE, 1
        )
        with body(loop_body, device) as side:
            j.step()
            launch(k["loop_cond"], params, side)
    rows = []
    for limit in limits:
        def eager():
            j.reset(limit)
            while j.more():
                j.step()

        def graph_per_iteration():
            j.reset(limit)
            while j.more():
                per_iter.replay()

        def while_node():
            j.reset(limit)
            whole.replay()

        row = {"limit": limit}
        for name, fn in (("eager", eager), ("graph_per_iteration", graph_per_iteration), ("while_node", while_node)):
            fn()
            got = int(j.count.item())
            if got != limit:
                raise RuntimeError(f"{name}: {got} iterations, expected {limit}")
            want = j.x.clone()
            row[f"{name}_ms"] = time_loop(fn, reps)
            row[f"{name}_iterations"] = got
            if name != "eager" and not torch.equal(j.x, want):
                raise RuntimeError(f"{name}: the result changed between runs")
        # Every peer computes the same iterations: compare the final iterate with eager's.
        eager()
        ref = j.x.clone()
        while_node()
        row["max_abs_diff_while_vs_eager"] = float((j.x - ref).abs().max().item())
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
        params, held = args((int(handle), np.uint64), (flag.data_ptr(), np.uint64))
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
    p.add_argument("--n", type=int, default=4096, help="Jacobi vector length")
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
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "n": a.n,
        "loop": loop_rows(a.n, limits, a.reps, k, device),
        "branch": branch_rows(a.reps, k, device),
    }
    with open(a.json, "w") as f:
        json.dump(out, f, indent=1)
    print(f"cuda_cond: wrote {a.json}")


if __name__ == "__main__":
    main()
