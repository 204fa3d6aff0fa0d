#!/usr/bin/env python3
"""PyTorch peer of `cmdgraph-bench replay`: CUDA Graph replay and eager launches of the same
chain and wide shapes (N tiny kernels `x[i] += 1.0` on 64 floats; wide: disjoint slices), and
of `latency`'s stage chains (stages: N kernels each rotating 64 floats by one, every element
read from its neighbour's result of the kernel before: `index_select` ping-ponging between two
buffers, one kernel per stage).

    python3 scripts/torch_replay.py --json OUT.json [N ...]      (default N: 10 100 1000 10000)

Each row also has `wall_us`: the median host wall time of one `replay()` +
`torch.cuda.synchronize()` (what `cmdgraph-bench latency` compares `run` + `wait` with).

Times on the GPU with torch.cuda.Event after warm-up (median of repetitions). Without torch
or CUDA it writes {"available": false, "reason": ...} and exits 0.
"""
import argparse
import json
import statistics
import sys
import time

ELEMS = 64
STREAMS = 16  # the wide graph's branches: captured round-robin over this many streams


def write(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)
    print(json.dumps(obj)[:400])


def launch(torch, shape, x, n, streams):
    """The N kernels of one run: chain in place on x, wide on disjoint slices of x, stages
    between the two halves of x (`streams` holds the rotation's index vector)."""
    if shape == "stages":
        bufs = (x[:ELEMS], x[ELEMS:])
        for i in range(n):
            torch.index_select(bufs[i % 2], 0, streams[0], out=bufs[(i + 1) % 2])
        return
    if shape == "chain":
        for _ in range(n):
            x.add_(1.0)
        return
    # Wide: independent kernels, forked over streams and joined (the empty join node).
    main = torch.cuda.current_stream()
    for s in streams:
        s.wait_stream(main)
    for i in range(n):
        with torch.cuda.stream(streams[i % len(streams)]):
            x[i * ELEMS:(i + 1) * ELEMS].add_(1.0)
    for s in streams:
        main.wait_stream(s)


def gpu_time(torch, fn, reps):
    """Median milliseconds of fn() between two CUDA events on the current stream."""
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def measure(torch, shape, n):
    x = torch.zeros(ELEMS * {"wide": n, "stages": 2}.get(shape, 1), device="cuda", dtype=torch.float32)
    streams = [torch.cuda.Stream() for _ in range(min(STREAMS, n))] if shape == "wide" else []
    if shape == "stages":
        streams = [(torch.arange(ELEMS, device="cuda") + 1) % ELEMS]
    reps = max(5, min(50, 10000 // n))
    # Eager launches (warm-up first).
    launch(torch, shape, x, n, streams)
    torch.cuda.synchronize()
    eager_ms = gpu_time(torch, lambda: launch(torch, shape, x, n, streams), reps)
    # Capture once, replay.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        launch(torch, shape, x, n, streams)  # warm-up on a side stream, as the docs advise
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        launch(torch, shape, x, n, streams)
    g.replay()
    torch.cuda.synchronize()
    graph_ms = gpu_time(torch, g.replay, reps)
    walls = []
    for _ in range(max(reps, 200)):
        t = time.perf_counter()
        g.replay()
        torch.cuda.synchronize()
        walls.append(time.perf_counter() - t)
    # Check: one replay from zeros gives N (chain) or 1 (wide) everywhere; the stages from
    # x[i] = i give x[l] = (l + N) mod 64 in the buffer the last stage wrote.
    if shape == "stages":
        x[:ELEMS].copy_(torch.arange(ELEMS, device="cuda", dtype=torch.float32))
        g.replay()
        torch.cuda.synchronize()
        out = x[ELEMS * (n % 2):ELEMS * (n % 2 + 1)]
        want_t = ((torch.arange(ELEMS, device="cuda") + n) % ELEMS).to(torch.float32)
        ok = bool(torch.all(out == want_t).item())
    else:
        x.zero_()
        g.replay()
        torch.cuda.synchronize()
        want = float(n if shape == "chain" else 1)
        ok = bool(torch.all(x == want).item())
    return {
        "shape": shape,
        "n": n,
        "graph_us_per_node": graph_ms * 1e3 / n,
        "eager_us_per_node": eager_ms * 1e3 / n,
        "wall_us": statistics.median(walls) * 1e6,
        "reps": reps,
        "output_ok": ok,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", required=True, help="output file")
    p.add_argument("sizes", nargs="*", type=int, default=[10, 100, 1000, 10000])
    p.add_argument("--stages", action="store_true", help="also the stage chains (latency's)")
    a = p.parse_args()
    try:
        import torch
    except ImportError as e:
        write(a.json, {"available": False, "reason": f"no torch: {e}"})
        return 0
    if not torch.cuda.is_available():
        write(a.json, {"available": False, "reason": "no CUDA"})
        return 0
    device = torch.cuda.get_device_name(0)
    print(f"torch_replay: {device}, torch {torch.__version__}", file=sys.stderr)
    shapes = ("chain", "wide") + (("stages",) if a.stages else ())
    rows = [measure(torch, shape, n) for shape in shapes for n in a.sizes]
    write(a.json, {"available": True, "device": device, "torch": torch.__version__, "rows": rows})
    return 0 if all(r["output_ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
