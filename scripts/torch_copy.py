#!/usr/bin/env python3
"""CUDA peer of `cmdgraph-bench copy` (issue 32): the same copies and fills as one-node CUDA
Graphs, captured from PyTorch and replayed. `dst.copy_(src)` of contiguous float32 tensors
on one device is a `cudaMemcpyAsync` device-to-device node (CUDA's own copy); `fill_` of a
uint8 tensor with 0x5A (memset) and of a float32 tensor with 1.5 (memfill) are PyTorch's fill
kernel. The offset rows copy `src[1:-1]` into `dst[1:-1]` (4-byte offsets, 8 bytes fewer), and
4N-8 bytes from byte 3 of `src` to byte 1 of `dst` through uint8 views (`memcpy+3/1`: a
`cudaMemcpyAsync` between byte-granular addresses, as the suite's byte-granular copy).

    python3 scripts/torch_copy.py --json OUT.json [LOG2 ...]     (default: 20 24 26)

GPU time per replay: CUDA events around BATCH back-to-back replays, divided by BATCH, median
of the repetitions after a warm-up (one replay between events would add the graph's launch,
about 10 µs, to a copy of a few µs; back to back, launches overlap the previous copy, so
this is the strongest CUDA floor). `chain_gbs`: BATCH of the operation captured in one graph
and replayed, per node (the suite's `_chain` graphs). GB/s counts read + written bytes for copies and written bytes for fills, as the
suite does. Every output is checked. Without torch or CUDA it writes
{"available": false, "reason": ...} and exits 0.
"""
import argparse
import json
import statistics
import sys

SET_BYTE = 0x5A
BATCH = 20
FILL = 1.5


def write(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)
    print(json.dumps(obj)[:600])


def replay_ms(torch, graph, reps):
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(BATCH):
            graph.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / BATCH)
    return statistics.median(times)


def captured(torch, fn):
    """A CUDA Graph of fn(), after a warm-up on a side stream."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    g.replay()
    torch.cuda.synchronize()
    return g


def measure(torch, log2, reps):
    n = 1 << log2
    gen = torch.Generator(device="cuda").manual_seed(32)
    src = torch.rand(n, device="cuda", dtype=torch.float32, generator=gen)
    dst = torch.zeros(n, device="cuda", dtype=torch.float32)
    shifted = torch.zeros(n, device="cuda", dtype=torch.float32)
    byte_dst = torch.zeros(4 * n, device="cuda", dtype=torch.uint8)
    byte_src = src.view(torch.uint8)
    set_out = torch.zeros(4 * n, device="cuda", dtype=torch.uint8)
    fill_out = torch.zeros(n, device="cuda", dtype=torch.float32)
    ops = [
        ("memcpy", lambda: dst.copy_(src), 8 * n, lambda: torch.equal(dst, src)),
        (
            "memcpy+4",
            lambda: shifted[1:-1].copy_(src[1:-1]),
            8 * (n - 2),
            lambda: torch.equal(shifted[1:-1], src[1:-1]),
        ),
        (
            "memcpy+3/1",
            lambda: byte_dst[1 : 4 * n - 7].copy_(byte_src[3 : 4 * n - 5]),
            2 * (4 * n - 8),
            lambda: torch.equal(byte_dst[1 : 4 * n - 7], byte_src[3 : 4 * n - 5]),
        ),
        ("memset", lambda: set_out.fill_(SET_BYTE), 4 * n, lambda: bool(torch.all(set_out == SET_BYTE).item())),
        ("memfill", lambda: fill_out.fill_(FILL), 4 * n, lambda: bool(torch.all(fill_out == FILL).item())),
    ]
    rows = []
    for name, fn, moved, ok in ops:
        g = captured(torch, fn)
        ms = replay_ms(torch, g, reps)
        # The suite's `_chain` graph: BATCH of the operation captured in one graph, per node.
        chain = captured(torch, lambda: [fn() for _ in range(BATCH)])
        chain_ms = replay_ms(torch, chain, max(3, reps // 10)) / BATCH
        rows.append(
            {
                "op": name,
                "log2": log2,
                "us": ms * 1e3,
                "gbs": moved / (ms * 1e-3) / 1e9,
                "chain_gbs": moved / (chain_ms * 1e-3) / 1e9,
                "output_ok": ok(),
            }
        )
        print(f"torch_copy: {name} 2^{log2}: {rows[-1]['gbs']:.1f} GB/s", file=sys.stderr)
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", required=True, help="output file")
    p.add_argument("--reps", type=int, default=50)
    p.add_argument("sizes", nargs="*", type=int, default=[20, 24, 26])
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
    rows = [r for s in a.sizes for r in measure(torch, s, a.reps)]
    write(a.json, {"available": True, "device": device, "torch": torch.__version__, "rows": rows})
    return 0 if all(r["output_ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
