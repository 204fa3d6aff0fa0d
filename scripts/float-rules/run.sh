#!/usr/bin/env bash
# What a device's float ops return (docs/ir.md, "Float precision"): floats.cgir applies fma,
# mul-then-add, div, sqrt, rsqrt, exp, log and tanh to 65536 full-precision random inputs.
#
#   bash scripts/float-rules/run.sh prepare DIR          # here: inputs, bundle, interpreter results
#   bash scripts/float-rules/run.sh device DIR CMDGRAPH P  # any machine with Vulkan: P_*.bin
#   python3 scripts/float-rules/compare.py DIR P         # the table
#
# The GPU machine has no compiler, so `prepare` runs here and `device` there (../shared/GPU.md).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mode=$1 dir=$2
inputs=(--input a=a.bin --input b=b.bin --input c=c.bin --input h1=h1.bin --input h2=h2.bin --input h3=h3.bin)
outs() { for y in yf ym yd ys ye yt yr yl yh; do echo "--output $y=${1}_$y.bin"; done; }
case "$mode" in
  prepare)
    cmdgraph=${CMDGRAPH:-cmdgraph}
    mkdir -p "$dir"
    cp "$here/floats.cgir" "$dir/"
    python3 - "$dir" <<'PY'
import random, struct, sys
random.seed(7)
d = sys.argv[1]
for k in "abc":
    open(f"{d}/{k}.bin", "wb").write(b"".join(struct.pack("<f", random.uniform(-4, 4)) for _ in range(65536)))
for k in ("h1", "h2", "h3"):
    open(f"{d}/{k}.bin", "wb").write(b"".join(struct.pack("<e", random.uniform(-2, 2)) for _ in range(65536)))
PY
    cd "$dir"
    "$cmdgraph" compile floats.cgir -o floats.cgb
    # shellcheck disable=SC2046
    "$cmdgraph" interp floats.cgir "${inputs[@]}" $(outs ref) >/dev/null
    # shellcheck disable=SC2046
    "$cmdgraph" interp floats.cgir --fma twice "${inputs[@]}" $(outs ref2) >/dev/null
    ;;
  device)
    cmdgraph=$3 prefix=$4
    cd "$dir"
    # shellcheck disable=SC2046
    "$cmdgraph" run floats.cgb "${inputs[@]}" $(outs "$prefix") | grep -i "device" || true
    ;;
  *) echo "usage: run.sh prepare|device DIR ..." >&2; exit 2 ;;
esac
