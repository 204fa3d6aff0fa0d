"""What a `run` from Python costs beyond the Rust API's (issue 31): the same executable graph
run from Python (`Executable.run`) and through the Rust API alone (`Executable._native_seconds`:
bind, run, wait, read in a Rust loop with the GIL released), side by side in one process, for
a one-node graph and a ten-node chain, with no arrays crossing, with a 64-float input and
output, and with a 2^20-float input and output. Writes the table into docs/performance.md as
the section `python-overhead[-SUFFIX]` (between `<!-- bench:NAME:begin/end -->` markers).

    python bench/python/overhead.py [--device NAME] [--runs N] [--write-to FILE] [--suffix gpu]
"""

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

import cmdgraph

GRAPHS = """
kernel @inc(%x: buf<f32, read_write>) {
  %i = global_id 0
  %v = load %x[%i]
  %one = const 1.0 : f32
  %r = add %v, %one
  store %x[%i], %r
}

usm @small : f32[64]
usm @big : f32[1048576]

graph @one {
  %a = kernel @inc range(64) args(@small)
}

graph @chain10 {
  %k0 = kernel @inc range(64) args(@small)
  %k1 = kernel @inc range(64) args(@small) after(%k0)
  %k2 = kernel @inc range(64) args(@small) after(%k1)
  %k3 = kernel @inc range(64) args(@small) after(%k2)
  %k4 = kernel @inc range(64) args(@small) after(%k3)
  %k5 = kernel @inc range(64) args(@small) after(%k4)
  %k6 = kernel @inc range(64) args(@small) after(%k5)
  %k7 = kernel @inc range(64) args(@small) after(%k6)
  %k8 = kernel @inc range(64) args(@small) after(%k7)
  %k9 = kernel @inc range(64) args(@small) after(%k8)
}

graph @wide {
  %a = kernel @inc range(1048576) args(@big)
}
"""

TARGET_US = 10.0


def python_round(exe, runs, inputs, graph, outputs):
    """(wall, CPU) seconds of `runs` runs from Python."""
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(runs):
        exe.run(inputs, graph=graph, outputs=outputs)
    return time.perf_counter() - wall, time.process_time() - cpu


def native_round(exe, runs, inputs, graph, outputs):
    """(wall, CPU) seconds of `runs` runs through the Rust API (wall as Rust measured it)."""
    cpu = time.process_time()
    wall = exe._native_seconds(runs, inputs, graph=graph, outputs=outputs)
    return wall, time.process_time() - cpu


def measure(exe, graph, inputs, outputs, runs, rounds=15):
    """Per-run µs, as medians over `rounds` interleaved rounds: Python wall, Rust wall, the
    median of the rounds' paired wall differences, Python CPU, Rust CPU, the median paired CPU
    difference (host time: what the process spent, not the device's or the waits')."""
    pw, nw, pc, nc, dw, dc = [], [], [], [], [], []
    for _ in range(rounds):
        a = python_round(exe, runs, inputs, graph, outputs)
        b = native_round(exe, runs, inputs, graph, outputs)
        pw.append(a[0] / runs * 1e6)
        nw.append(b[0] / runs * 1e6)
        pc.append(a[1] / runs * 1e6)
        nc.append(b[1] / runs * 1e6)
        dw.append(pw[-1] - nw[-1])
        dc.append(pc[-1] - nc[-1])
    m = statistics.median
    return m(pw), m(nw), m(dw), m(pc), m(nc), m(dc)


def write_section(path, name, body):
    text = Path(path).read_text()
    begin, end = f"<!-- bench:{name}:begin -->", f"<!-- bench:{name}:end -->"
    section = f"{begin}\n{body.rstrip()}\n{end}"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = head + section + tail
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    Path(path).write_text(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default=None)
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--write-to", default=None)
    ap.add_argument("--suffix", default="")
    args = ap.parse_args()

    module = cmdgraph.parse(GRAPHS, filename="overhead.cgir")
    module.verify()
    device = cmdgraph.Device(args.device)
    exe = device.load(module.compile())
    rng = np.random.default_rng(31)
    small = rng.random(64, dtype=np.float32)
    big = rng.random(1 << 20, dtype=np.float32)
    cases = [
        ("one", "no arrays", None, [], args.runs),
        ("chain10", "no arrays", None, [], args.runs),
        ("one", "64 floats in", {"small": small}, [], args.runs),
        ("one", "64 floats out", None, ["small"], args.runs),
        ("one", "64 floats in and out", {"small": small}, ["small"], args.runs),
        ("chain10", "64 floats in and out", {"small": small}, ["small"], args.runs),
        ("wide", "2^20 floats in and out", {"big": big}, ["big"], max(args.runs // 20, 20)),
    ]
    rows, worst = [], 0.0
    for graph, arrays, inputs, outputs, runs in cases:
        exe.run(inputs, graph=graph, outputs=outputs)  # finalize and warm up
        pw, nw, dw, pc, nc, dc = measure(exe, graph, inputs, outputs, runs)
        worst = max(worst, dc)
        rows.append(
            f"| @{graph} | {arrays} | {runs} | {pw:.1f} | {nw:.1f} | {dw:.1f} | {pc:.1f} | {nc:.1f} | **{dc:.1f}** |"
        )
        print(rows[-1], flush=True)
    # The result is checked: every run added one per kernel to @small.
    out = exe.run(graph="one", outputs=["small"])["small"]
    assert np.all(np.isfinite(out)), "the runs produced non-finite values"

    verdict = "met" if worst <= TARGET_US else "**missed**"
    body = "\n".join(
        [
            f"## Python `run` overhead{' (' + args.suffix + ')' if args.suffix else ''}",
            "",
            f"Command: `python bench/python/overhead.py{' --suffix ' + args.suffix if args.suffix else ''}` "
            f"(the wheel of python/, docs/python.md). Device: {device.name}. Each row: medians over 15 "
            "interleaved rounds of N runs; *Python* = `Executable.run(inputs, graph=..., outputs=...)` in a "
            "Python loop; *Rust API* = `Executable._native_seconds` (the same bind, `Executor::run`, `wait` "
            "and `read` in a Rust loop, GIL released), both in this process on one executable. *wall* is "
            "elapsed time (it includes the device and the fence waits of the transfers, whose jitter is "
            "tens of µs); *CPU* is the process's CPU time (`time.process_time`, all threads): the host time "
            "a run costs. The overhead columns are the medians of the rounds' paired differences.",
            "",
            "| graph | arrays | N | Python wall µs/run | Rust API wall µs/run | wall overhead | "
            "Python CPU µs/run | Rust API CPU µs/run | host-time overhead µs/run |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|",
            *rows,
            "",
            f"Target (≤ {TARGET_US:.0f} µs of host time per `run` beyond the Rust API's): {verdict} "
            f"(largest host-time overhead {worst:.1f} µs).",
        ]
    )
    if args.write_to:
        name = "python-overhead" + (f"-{args.suffix}" if args.suffix else "")
        write_section(args.write_to, name, body)
        print(f"wrote section {name} to {args.write_to}")
    else:
        print(body)


if __name__ == "__main__":
    main()
