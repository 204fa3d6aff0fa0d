#!/usr/bin/env python3
"""IREE's Vulkan AOT compiler as a standing peer of `cmdgraph-bench fusion-run` and `mlp`
(issue 32, item 5): the same workloads written in MLIR (linalg on tensors), compiled ahead of
time by `iree-compile` (PyPI `iree-base-compiler`) to Vulkan SPIR-V, and timed on the GPU
machine by `iree-benchmark-module` (PyPI `iree-base-runtime`, a 2.4 MB binary that needs no
Python there).

    python3 scripts/iree_peer.py prepare DIR [--chains 2,4,8,16,32] [--sizes 16777216,67108864]
                                             [--shapes 8x512x4,256x1024x4] [--target ampere]
    python3 scripts/iree_peer.py run DIR --json OUT.json      # on the GPU machine

`prepare` needs the two packages (`IREE_VENV` names a virtual environment that has them; by
default `.venv-iree`, made and filled with pip when missing). The workloads are those of the
suites: the element-wise chain of K steps `v = v * 0.5 + v` over N floats (fusion-run), and per
MLP layer `h = x·W`, `z = h + b`, `g = gelu(z)` (tanh form), `r = x + g`, `x' = layernorm(r)`
(no affine, eps 1e-5) (mlp). `--target`: IREE's Vulkan target; it names no Hopper target, so
`ampere` (sm_80) is the nearest for an H200. `run` writes
{"available": true, "target": ..., "fusion": [{"k", "n", "wall_ms"}], "mlp": [{"shape",
"wall_ms"}]}: wall time per call (`real_time`, median of repetitions) of the function with its
inputs resident on the device; without a Vulkan device it writes {"available": false, ...}.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GELU_C = 0.7978846
GELU_A = 0.044715
EPS = 1e-5


def chain_mlir(k, n):
    """`v = v * 0.5 + v`, K times, on N floats."""
    t = f"tensor<{n}xf32>"
    lines = [f"func.func @chain(%v0: {t}) -> {t} {{", f"  %s = arith.constant dense<0.5> : {t}"]
    for j in range(k):
        lines.append(f"  %m{j} = arith.mulf %v{j}, %s : {t}")
        lines.append(f"  %v{j + 1} = arith.addf %m{j}, %v{j} : {t}")
    lines += [f"  return %v{k} : {t}", "}"]
    return "\n".join(lines) + "\n"


def mlp_mlir(batch, hidden, layers):
    """The suite's MLP: per layer matmul, bias, GELU (tanh form), residual, LayerNorm."""
    b, h = batch, hidden
    act, vec, row = f"tensor<{b}x{h}xf32>", f"tensor<{h}xf32>", f"tensor<{b}xf32>"
    params = ", ".join(f"%w{l}: tensor<{h}x{h}xf32>, %b{l}: {vec}" for l in range(layers))
    out = [f"func.func @mlp(%x0: {act}, {params}) -> {act} {{", "  %zero = arith.constant 0.0 : f32"]
    ident2 = "affine_map<(d0, d1) -> (d0, d1)>"
    col = "affine_map<(d0, d1) -> (d1)>"
    rowm = "affine_map<(d0, d1) -> (d0)>"
    for l in range(layers):
        x = f"%x{l}"
        out += [
            f"  %e{l} = tensor.empty() : {act}",
            f"  %f{l} = linalg.fill ins(%zero : f32) outs(%e{l} : {act}) -> {act}",
            f"  %h{l} = linalg.matmul ins({x}, %w{l} : {act}, tensor<{h}x{h}xf32>) outs(%f{l} : {act}) -> {act}",
            f"  %r{l} = linalg.generic {{indexing_maps = [{ident2}, {col}, {ident2}, {ident2}], "
            f'iterator_types = ["parallel", "parallel"]}} ins(%h{l}, %b{l}, {x} : {act}, {vec}, {act}) '
            f"outs(%e{l} : {act}) {{",
            "  ^bb0(%hv: f32, %bv: f32, %xv: f32, %o: f32):",
            "    %z = arith.addf %hv, %bv : f32",
            "    %z2 = arith.mulf %z, %z : f32",
            "    %z3 = arith.mulf %z2, %z : f32",
            f"    %ca = arith.constant {GELU_A:e} : f32",
            f"    %cc = arith.constant {GELU_C:e} : f32",
            "    %half = arith.constant 0.5 : f32",
            "    %one = arith.constant 1.0 : f32",
            "    %az3 = arith.mulf %ca, %z3 : f32",
            "    %in = arith.addf %z, %az3 : f32",
            "    %arg = arith.mulf %cc, %in : f32",
            "    %th = math.tanh %arg : f32",
            "    %op = arith.addf %one, %th : f32",
            "    %hz = arith.mulf %half, %z : f32",
            "    %g = arith.mulf %hz, %op : f32",
            "    %r = arith.addf %xv, %g : f32",
            "    linalg.yield %r : f32",
            f"  }} -> {act}",
            f"  %re{l} = tensor.empty() : {row}",
            f"  %rz{l} = linalg.fill ins(%zero : f32) outs(%re{l} : {row}) -> {row}",
            f"  %sum{l}, %sq{l} = linalg.generic {{indexing_maps = [{ident2}, {rowm}, {rowm}], "
            f'iterator_types = ["parallel", "reduction"]}} ins(%r{l} : {act}) outs(%rz{l}, %rz{l} : {row}, {row}) {{',
            "  ^bb0(%a: f32, %s: f32, %q: f32):",
            "    %s1 = arith.addf %s, %a : f32",
            "    %aa = arith.mulf %a, %a : f32",
            "    %q1 = arith.addf %q, %aa : f32",
            "    linalg.yield %s1, %q1 : f32, f32",
            f"  }} -> ({row}, {row})",
            f"  %x{l + 1} = linalg.generic {{indexing_maps = [{ident2}, {rowm}, {rowm}, {ident2}], "
            f'iterator_types = ["parallel", "parallel"]}} ins(%r{l}, %sum{l}, %sq{l} : {act}, {row}, {row}) '
            f"outs(%e{l} : {act}) {{",
            "  ^bb0(%a: f32, %s: f32, %q: f32, %o: f32):",
            f"    %n = arith.constant {float(h)} : f32",
            f"    %eps = arith.constant {EPS:e} : f32",
            "    %mean = arith.divf %s, %n : f32",
            "    %ex2 = arith.divf %q, %n : f32",
            "    %m2 = arith.mulf %mean, %mean : f32",
            "    %var = arith.subf %ex2, %m2 : f32",
            "    %ve = arith.addf %var, %eps : f32",
            "    %rs = math.rsqrt %ve : f32",
            "    %d = arith.subf %a, %mean : f32",
            "    %y = arith.mulf %d, %rs : f32",
            "    linalg.yield %y : f32",
            f"  }} -> {act}",
        ]
    out += [f"  return %x{layers} : {act}", "}"]
    return "\n".join(out) + "\n"


def iree_venv():
    venv = Path(os.environ.get("IREE_VENV", REPO / ".venv-iree"))
    if not (venv / "bin" / "iree-compile").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "iree-base-compiler", "iree-base-runtime"], check=True)
    return venv


def compile_to(venv, mlir, out, target):
    src = out.with_suffix(".mlir")
    src.write_text(mlir)
    cmd = [
        str(venv / "bin" / "iree-compile"),
        "--iree-hal-target-backends=vulkan-spirv",
        f"--iree-vulkan-target={target}",
        str(src),
        "-o",
        str(out),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"iree-compile {src}: {done.stderr[-2000:]}")
    return " ".join(cmd[1:3])


def prepare(a):
    out = Path(a.dir)
    out.mkdir(parents=True, exist_ok=True)
    venv = iree_venv()
    runtime = next(venv.glob("lib/python*/site-packages/iree/_runtime_libs/iree-benchmark-module"))
    shutil.copy(runtime, out / "iree-benchmark-module")
    version = subprocess.run([str(venv / "bin" / "pip"), "show", "iree-base-compiler"], capture_output=True, text=True)
    ver = next((l.split(":", 1)[1].strip() for l in version.stdout.splitlines() if l.startswith("Version")), "?")
    manifest = {"target": a.target, "iree": ver, "fusion": [], "mlp": []}
    for n in [int(s) for s in a.sizes.split(",") if s]:
        for k in [int(c) for c in a.chains.split(",") if c]:
            name = f"chain_k{k}_n{n}.vmfb"
            flags = compile_to(venv, chain_mlir(k, n), out / name, a.target)
            manifest["fusion"].append({"k": k, "n": n, "module": name, "inputs": [f"{n}xf32=1.25"]})
    for shape in [s for s in a.shapes.split(",") if s]:
        b, h, l = (int(v) for v in shape.split("x"))
        name = f"mlp_{shape}.vmfb"
        compile_to(venv, mlp_mlir(b, h, l), out / name, a.target)
        inputs = [f"{b}x{h}xf32=0.5"] + [v for _ in range(l) for v in (f"{h}x{h}xf32=0.01", f"{h}xf32=0.1")]
        manifest["mlp"].append({"shape": shape, "module": name, "inputs": inputs})
    manifest["flags"] = flags if manifest["fusion"] else ""
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(f"iree_peer: {len(manifest['fusion'])} chain and {len(manifest['mlp'])} MLP modules in {out} (IREE {ver})")


def npy_inputs(d, name, inputs):
    """Each splat input (`16777216xf32=1.25`) written as `.npy` next to the modules, passed as
    `@file`: iree-benchmark-module parses a splat element by element (2.7 µs each on the GPU
    machine, 45 s for 2^24 floats, which is why the large rows never finished), and reads a
    `.npy` file with one copy."""
    import numpy as np

    out = []
    for i, spec in enumerate(inputs):
        shape_type, value = spec.split("=")
        *dims, ty = shape_type.split("x")
        dtype = {"f32": np.float32, "f16": np.float16, "i32": np.int32}[ty]
        path = d / f"{name}.in{i}.npy"
        np.save(path, np.full([int(x) for x in dims], float(value), dtype=dtype))
        out.append(f"@{path}")
    return out


def bench(binary, module, function, inputs, reps):
    cmd = [
        str(binary),
        "--device=vulkan",
        f"--module={module}",
        f"--function={function}",
        *[f"--input={i}" for i in npy_inputs(Path(module).parent, Path(module).stem, inputs)],
        "--benchmark_format=json",
        f"--benchmark_repetitions={reps}",
        "--benchmark_report_aggregates_only=true",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"{module}: {done.stderr[-1500:]}")
    report = json.loads(done.stdout)
    med = [b for b in report["benchmarks"] if b.get("aggregate_name") == "median"]
    row = med[0] if med else report["benchmarks"][0]
    unit = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[row.get("time_unit", "ns")]
    return row["real_time"] * unit


def run(a):
    d = Path(a.dir)
    manifest = json.loads((d / "manifest.json").read_text())
    binary = d / "iree-benchmark-module"
    binary.chmod(0o755)
    result = {"available": True, "target": manifest["target"], "iree": manifest["iree"], "fusion": [], "mlp": []}
    try:
        for m in manifest["fusion"]:
            ms = bench(binary, d / m["module"], "chain", m["inputs"], a.reps)
            result["fusion"].append({"k": m["k"], "n": m["n"], "wall_ms": ms})
            print(f"iree_peer: chain K={m['k']} N={m['n']}: {ms:.3f} ms", file=sys.stderr)
        for m in manifest["mlp"]:
            ms = bench(binary, d / m["module"], "mlp", m["inputs"], a.reps)
            result["mlp"].append({"shape": m["shape"], "wall_ms": ms})
            print(f"iree_peer: mlp {m['shape']}: {ms:.3f} ms", file=sys.stderr)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        result = {"available": False, "reason": str(e)[-500:]}
    Path(a.json).write_text(json.dumps(result, indent=1))
    print(json.dumps(result)[:600])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    pr = sub.add_parser("prepare")
    pr.add_argument("dir")
    pr.add_argument("--chains", default="2,4,8,16,32")
    pr.add_argument("--sizes", default="16777216,67108864")
    pr.add_argument("--shapes", default="8x512x4,256x1024x4")
    pr.add_argument("--target", default="ampere")
    ru = sub.add_parser("run")
    ru.add_argument("dir")
    ru.add_argument("--json", required=True)
    ru.add_argument("--reps", type=int, default=10)
    a = p.parse_args()
    prepare(a) if a.cmd == "prepare" else run(a)


if __name__ == "__main__":
    main()
