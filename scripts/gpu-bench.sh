#!/usr/bin/env bash
# The runtime performance suites of issue 9 on the GPU machine (../shared/GPU.md), with their
# PyTorch peers, and their tables merged into docs/performance.md as `<suite>-gpu` sections
# beside the llvmpipe ones.
#
#   bash scripts/gpu-bench.sh prepare        # here: release binary and compiled bundles -> .bin/
#   bash scripts/gpu-bench.sh torch          # there: PyTorch peers -> $OUT/torch-*.json
#   bash scripts/gpu-bench.sh device [S...]  # there: our suites, or only S... (with
#                                            #   .bin/perf/torch-*.json copied back from the torch
#                                            #   step) -> $OUT/performance.md
#   bash scripts/gpu-bench.sh device memory  # there: memory planning on the GPU machine's CPU
#                                            #   (absolute times count only from that machine)
#   bash scripts/gpu-bench.sh merge FILE [S...]  # here: FILE's sections into docs/performance.md
#
# The machine has no compiler: `prepare` compiles every bundle here (`--prepare DIR`); the
# device steps only load and run them (`--from DIR`). Carry `.gl` and `.bin`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

SUITES=(replay latency update barrier-run load fusion-run mlp mlp-f16 copy shader-run cond)
# Needs two GPUs (the nvidia-h200-x2 kind); run on its own: `device multi-device`, `device mpi`.
MULTI_SUITES=(multi-device mpi)
FUSION_SIZES=16777216,67108864
MLP_SHAPES=8x512x4,256x1024x4
SHADER_SAXPY=16777216,67108864
SHADER_MATMUL=1024,2048

prepare() {
  . scripts/env.sh
  # With MPI (the `mpi` suite runs as `mpiexec -n 2`): the GPU machine has none, so Debian's
  # MPICH and what it loads travel in .mpi/ and `device` unpacks them (../shared/GPU.md).
  [ -n "${NO_BUILD:-}" ] || cargo build --release -q -p cmdgraph-bench --features mpi
  mkdir -p .mpi && (cd .mpi && apt-get download -q mpich libmpich12 libhwloc15 libnuma1 libslurm38 libucx0 \
    libnl-3-200 libnl-route-3-200 libibverbs1 librdmacm1)
  rm -rf .bin && mkdir -p .bin/perf
  strip -o .bin/cmdgraph-bench target/release/cmdgraph-bench
  pwd > .bin/build-root
  xz -T2 -6 .bin/cmdgraph-bench
  bash scripts/capi-latency.sh .bin/capi-latency
  local bench=target/release/cmdgraph-bench
  $bench replay --prepare .bin/perf/replay
  $bench latency --prepare .bin/perf/latency
  $bench update --prepare .bin/perf/update
  $bench barrier-run --prepare .bin/perf/barrier-run
  $bench load --prepare .bin/perf/load --sizes 100,1000,10000
  $bench fusion-run --prepare .bin/perf/fusion-run --sizes "$FUSION_SIZES"
  $bench mlp --prepare .bin/perf/mlp --shapes "$MLP_SHAPES"
  $bench mlp-f16 --prepare .bin/perf/mlp-f16 --shapes "$MLP_SHAPES"
  $bench copy --prepare .bin/perf/copy
  $bench cond --prepare .bin/perf/cond
  $bench multi-device --prepare .bin/perf/multi-device
  $bench mpi --prepare .bin/perf/mpi
  $bench shader-run --prepare .bin/perf/shader-run --saxpy "$SHADER_SAXPY" --matmul "$SHADER_MATMUL"
  # IREE's modules of the same workloads and its benchmark binary (pip packages, .venv-iree).
  python3 scripts/iree_peer.py prepare .bin/perf/iree --sizes "$FUSION_SIZES" --shapes "$MLP_SHAPES"
  du -sh .bin
}

torch() {
  local out=${OUT:-.}
  python3 scripts/torch_replay.py --json "$out/torch-replay.json" 2>&1 | tail -n 20
  python3 scripts/torch_copy.py --json "$out/torch-copy.json" 2>&1 | tail -n 20
  python3 scripts/torch_replay.py --json "$out/torch-latency.json" --stages 1 10 100 2>&1 | tail -n 5
  [ -d .bin/perf/iree ] && python3 scripts/iree_peer.py run .bin/perf/iree --json "$out/iree.json" 2>&1 | tail -n 12
  # Issue 33's CUDA peers (WHILE and IF/ELSE conditional nodes); the `cond` suite reads them.
  python3 scripts/cuda_cond.py --json "$out/cuda-cond.json" 2>&1 | tail -n 5
  python3 scripts/torch_fusion.py --json "$out/torch-fusion.json" ${FUSION_SIZES//,/ } \
    --shapes "$MLP_SHAPES" --compile-chains "${COMPILE_CHAINS:-2,4,8,16}" 2>&1 | tail -n 20
}

device() {
  local out=${OUT:-.} driver
  # MPICH for the bench binary (linked with it) and mpiexec.
  if [ -d .mpi ]; then
    for f in .mpi/*.deb; do dpkg -x "$f" /; done
    ldconfig
  fi
  xz -d -k -f .bin/cmdgraph-bench.xz
  chmod +x .bin/cmdgraph-bench
  driver="NVIDIA $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
  cp docs/performance.md "$out/performance.md"
  local status=0 suites=("$@")
  [ ${#suites[@]} -gt 0 ] || suites=("${SUITES[@]}")
  for suite in "${suites[@]}"; do
    local torch=()
    case "$suite" in
      replay) [ -f .bin/perf/torch-replay.json ] && torch=(--torch-json .bin/perf/torch-replay.json) ;;
      fusion-run | mlp | mlp-f16)
        [ -f .bin/perf/torch-fusion.json ] && torch=(--torch-json .bin/perf/torch-fusion.json)
        [ -f .bin/perf/iree.json ] && torch+=(--iree-json .bin/perf/iree.json) ;;
      copy) [ -f .bin/perf/torch-copy.json ] && torch=(--torch-json .bin/perf/torch-copy.json) ;;
      cond) [ -f .bin/perf/cuda-cond.json ] && torch=(--torch-json .bin/perf/cuda-cond.json) ;;
      latency)
        [ -f .bin/perf/torch-latency.json ] && torch=(--torch-json .bin/perf/torch-latency.json)
        torch+=(--capi-bin .bin/capi-latency) ;;
    esac
    local extra=()
    [ "$suite" = fusion-run ] || [ "$suite" = mlp ] || [ "$suite" = mlp-f16 ] || extra=(--driver "$driver")
    echo "==> $suite"
    if [ "$suite" = memory ]; then
      # The compile-side suite writes the checkout it was built in (CARGO_MANIFEST_DIR):
      # point that path at this copy, then take the file back.
      local root
      root="$(cat .bin/build-root)"
      mkdir -p "$(dirname "$root")"
      [ -e "$root" ] || ln -s "$PWD" "$root"
      timeout "${SUITE_TIMEOUT:-240}" .bin/cmdgraph-bench memory --runs 3 > "$out/memory.log" 2>&1 || { echo "memory FAILED ($?)"; status=1; }
      python3 - "$root/docs/performance.md" "$out/performance.md" <<'PY'
import re, sys
src, dst = open(sys.argv[1]).read(), open(sys.argv[2]).read()
pat = r"<!-- bench:memory:begin -->.*?<!-- bench:memory:end -->"
m = re.search(pat, src, re.S)
if m:
    open(sys.argv[2], "w").write(re.sub(pat, lambda _: m.group(0), dst, flags=re.S))
PY
      tail -n 40 "$out/memory.log"
      continue
    fi
    local launch=()
    # Two ranks, one GPU each (MPICH's hydra; root is allowed here).
    # `mpiexec.hydra` by name: another MPI's `mpiexec` may come first in PATH there.
    [ "$suite" = mpi ] && launch=(mpiexec.hydra -n 2)
    timeout "${SUITE_TIMEOUT:-240}" "${launch[@]}" .bin/cmdgraph-bench "$suite" --from ".bin/perf/$suite" "${torch[@]}" "${extra[@]}" \
      --write-to "$out/performance.md" > "$out/$suite.log" 2>&1 || { echo "$suite FAILED ($?)"; status=1; }
    tail -n 30 "$out/$suite.log"
  done
  return $status
}

# Copies every runtime section of FILE into docs/performance.md as `<suite>-gpu`.
merge() {
  local file=$1
  shift
  local suites=("$@")
  [ ${#suites[@]} -gt 0 ] || suites=("${SUITES[@]}")
  python3 - "$file" docs/performance.md "${suites[@]}" <<'PY'
import re, sys
src, dst, suites = sys.argv[1], sys.argv[2], sys.argv[3:]
got, doc = open(src).read(), open(dst).read()
for s in suites:
    m = re.search(rf"<!-- bench:{re.escape(s)}:begin -->\n(.*?)<!-- bench:{re.escape(s)}:end -->", got, re.S)
    if not m:
        print(f"no section {s} in {src}", file=sys.stderr)
        continue
    # The section names the device (an H100 or an H200 may come); `-gpu` replaces the
    # `-h100` sections written when only H100s came.
    block = f"<!-- bench:{s}-gpu:begin -->\n{m.group(1)}<!-- bench:{s}-gpu:end -->"
    old = re.search(rf"<!-- bench:{re.escape(s)}-(?:h100|gpu):begin -->.*?<!-- bench:{re.escape(s)}-(?:h100|gpu):end -->", doc, re.S)
    if old:
        doc = doc[: old.start()] + block + doc[old.end():]
    else:
        end = re.search(rf"<!-- bench:{re.escape(s)}:end -->\n", doc)
        at = end.end() if end else len(doc)
        doc = doc[:at] + "\n" + block + "\n" + doc[at:]
tmp = dst + ".tmp"
open(tmp, "w").write(doc)
import os
os.replace(tmp, dst)
print(f"merged into {dst}")
PY
}

case "${1:-}" in
  prepare) prepare ;;
  torch) torch ;;
  device) shift; device "$@" ;;
  merge) shift; merge "${1:?merge needs the performance.md the device step wrote}" "${@:2}" ;;
  *) echo "usage: $0 prepare|torch|device|merge FILE" >&2; exit 2 ;;
esac
