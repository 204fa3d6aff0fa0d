#!/usr/bin/env python3
"""PyTorch peers of `cmdgraph-bench fusion-run` and `cmdgraph-bench mlp` (issue 9, items 3 and 6).

    python3 scripts/torch_fusion.py --json OUT.json [N ...] [--chains 2,4,8,16,32] [--shapes 8x512x4,...]

fusion: the chain y = x; K times y = y * 0.5 + y, over N f32 elements (N defaults to 2^24 and
2^26), timed eagerly and through torch.compile. mlp: per layer h = x @ W, z = h + b,
g = gelu(z, tanh), r = x + g, x = layer_norm(r) (no affine, eps 1e-5), timed eagerly and as a
replayed torch.cuda.CUDAGraph; the first 4096 outputs go into the JSON so that the bench prints
its largest difference; mlp_f16 (--f16-shapes) is the same network in f16. Inputs follow bench/src/runtime/fusion_run.rs `pattern` exactly.

Times are GPU times between torch.cuda.Events around one call, after warm-up, median of --reps.
Without torch or CUDA the script writes {"available": false, "reason": ...} and exits 0.
"""

import argparse
import json
import math
import statistics
import sys
import time


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", required=True, help="where to write the results")
    p.add_argument("sizes", nargs="*", type=int, help="fusion chain sizes in elements")
    p.add_argument("--chains", default="2,4,8,16,32", help="chain lengths K")
    p.add_argument("--shapes", default="8x512x4,256x1024x4", help="MLP shapes BATCHxHIDDENxLAYERS")
    p.add_argument("--f16-shapes", default="8x512x4,256x1024x4", help="f16 MLP shapes (mlp-f16)")
    p.add_argument("--reps", type=int, default=20, help="timed repetitions (median)")
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    # Measured on the H100 (torch 2.11): torch.compile of the K=32 chain takes about 190 s per
    # size (K <= 8: seconds), which does not fit the 10-minute GPU run; K=32 is opt-in.
    p.add_argument("--compile-chains", default="2,4,8,16", help="chain lengths that also get torch.compile")
    return p.parse_args(argv)


def write(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")


def pattern(torch, n, seed):
    """((i * 2654435761 + seed * 40503) mod 2001) / 1000 - 1 in f64, rounded to f32 once."""
    i = torch.arange(n, dtype=torch.int64, device="cuda")
    m = (i * 2654435761 + seed * 40503) % 2001
    return m.double() / 1000.0 - 1.0


def gpu_ms(torch, fn, reps):
    """Median GPU time of fn() in ms, after three warm-up calls."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def fusion(torch, k, n, reps, compile_too):
    """Eager and torch.compile GPU ms of the chain; compile_ms is None when not compiled."""
    x = pattern(torch, n, 1).float()

    def chain(y):
        for _ in range(k):
            y = y * 0.5 + y
        return y

    eager = gpu_ms(torch, lambda: chain(x), reps)
    compiled, compile_s = None, None
    if compile_too:
        # A fresh cache per configuration: dynamo's recompile limit (8 per code object) would
        # otherwise silently fall back to eager after eight (K, N) pairs.
        torch._dynamo.reset()
        fn = torch.compile(chain, dynamic=False)
        start = time.time()
        fn(x)
        torch.cuda.synchronize()
        compile_s = time.time() - start
        compiled = gpu_ms(torch, lambda: fn(x), reps)
    return {"k": k, "n": n, "eager_ms": eager, "compile_ms": compiled, "compile_s": compile_s}


def mlp(torch, batch, hidden, layers, reps, dtype=None):
    """The MLP in f32 (TF32 off), or in `dtype` (torch.float16 for `mlp-f16`: the inputs are the f32
    ones rounded, and every operation rounds to f16)."""
    import torch.nn.functional as F

    dtype = dtype or torch.float32
    x = pattern(torch, batch * hidden, 1).float().reshape(batch, hidden).to(dtype)
    ws = [(pattern(torch, hidden * hidden, 2 + l) / math.sqrt(hidden)).float().reshape(hidden, hidden).to(dtype) for l in range(layers)]
    bs = [(pattern(torch, hidden, 100 + l) * 0.1).float().to(dtype) for l in range(layers)]

    def forward(y):
        for w, b in zip(ws, bs):
            z = torch.mm(y, w) + b
            g = F.gelu(z, approximate="tanh")
            y = F.layer_norm(y + g, (hidden,), eps=1e-5)
        return y

    eager = gpu_ms(torch, lambda: forward(x), reps)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            forward(x)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = forward(x)
    replay = gpu_ms(torch, graph.replay, reps)
    head = out.flatten()[:4096].double().cpu().tolist()
    return {"batch": batch, "hidden": hidden, "layers": layers, "eager_ms": eager, "graph_ms": replay, "output_head": head}


def main(argv):
    args = parse_args(argv)
    try:
        import torch
    except ImportError as e:
        write(args.json, {"available": False, "reason": f"no torch ({e})"})
        print("torch_fusion: torch is not installed; wrote", args.json)
        return 0
    if not torch.cuda.is_available():
        write(args.json, {"available": False, "reason": "torch.cuda.is_available() is false"})
        print("torch_fusion: no CUDA device; wrote", args.json)
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.cuda.get_device_name(0)
    print(f"torch_fusion: {device}, torch {torch.__version__}")
    sizes = args.sizes or [1 << 24, 1 << 26]
    out = {"available": True, "device": device, "torch": torch.__version__, "reps": args.reps, "fusion": [], "mlp": [], "mlp_f16": []}
    compile_chains = {int(s) for s in args.compile_chains.split(",") if s}
    for n in sizes:
        for k in [int(s) for s in args.chains.split(",") if s]:
            r = fusion(torch, k, n, args.reps, not args.no_compile and k in compile_chains)
            out["fusion"].append(r)
            print(f"fusion K={k} N={n}: eager {r['eager_ms']:.3f} ms, torch.compile {r['compile_ms']} ms "
                  f"(compiled in {r['compile_s']} s)", flush=True)
    for shape in [s for s in args.shapes.split(",") if s]:
        b, h, l = (int(v) for v in shape.split("x"))
        r = mlp(torch, b, h, l, args.reps)
        out["mlp"].append(r)
        print(f"mlp {shape}: eager {r['eager_ms']:.3f} ms, CUDA Graph {r['graph_ms']:.3f} ms", flush=True)
    for shape in [s for s in args.f16_shapes.split(",") if s]:
        b, h, l = (int(v) for v in shape.split("x"))
        r = mlp(torch, b, h, l, args.reps, torch.float16)
        out["mlp_f16"].append(r)
        print(f"mlp f16 {shape}: eager {r['eager_ms']:.3f} ms, CUDA Graph {r['graph_ms']:.3f} ms", flush=True)
    write(args.json, out)
    print("torch_fusion: wrote", args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
