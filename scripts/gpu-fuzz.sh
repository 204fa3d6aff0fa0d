#!/usr/bin/env bash
# The differential kernel fuzzer (cli/tests/kernel_fuzz.rs) on the GPU machine, which has
# no Rust and no LLVM (../shared/GPU.md): kernels are generated, interpreted and compiled
# here, run there with `cmdgraph run`, and compared here (docs/reliability.md, "Kernel
# fuzzer", "On the GPU machine").
#
#   bash scripts/gpu-fuzz.sh prepare NAME SEED KERNELS [ONLY]  # here: bundles + inputs -> .bin/fuzz-NAME.tar.xz
#   bash scripts/gpu-fuzz.sh device                           # there (carry .gl and .bin): every .bin/fuzz-*.tar.xz
#                                                             #   run, outputs -> $OUT/NAME-out.tar.xz
#   bash scripts/gpu-fuzz.sh compare NAME SEED KERNELS [ONLY] OUTPUTS.tar.xz  # here: the usual report
#
# ONLY is a comma-separated list of kernel indices (CMDGRAPH_FUZZ_ONLY), run one to a
# module; without it kernels 0..KERNELS run 25 to a module. Several runs (NAME) may be
# prepared for one device call. prepare and compare must be given the same NAME, SEED,
# KERNELS and ONLY: the batches are generated again, not stored.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

work=target/gpu-fuzz

fuzz_env() {
  local seed=$1 kernels=$2 only=${3:-}
  export CMDGRAPH_FUZZ_SEED="$seed" CMDGRAPH_FUZZ_KERNELS="$kernels"
  if [ -n "$only" ]; then export CMDGRAPH_FUZZ_ONLY="$only" CMDGRAPH_FUZZ_BATCH=1; fi
}

prepare() {
  . scripts/env.sh
  local name=$1; shift
  fuzz_env "$@"
  rm -rf "${work:?}/$name" && mkdir -p "$work/$name" .bin
  cargo build -q --release -p cmdgraph-cli
  # Subgroup ops are compared at the GPU's subgroup size (32 on NVIDIA; the float add/mul
  # collectives, whose order is the device's, are then not generated).
  CMDGRAPH_FUZZ_SUBGROUP_SIZE=${CMDGRAPH_FUZZ_SUBGROUP_SIZE:-32} CMDGRAPH_FUZZ_EXPORT="$PWD/$work/$name" \
    cargo test -q --release -p cmdgraph-cli --test kernel_fuzz -- random_kernels --nocapture 2>&1 | grep -E 'kernels in|FAIL' || true
  strip -o .bin/cmdgraph target/release/cmdgraph && xz -f -T2 -6 .bin/cmdgraph
  tar -C "$work/$name" -cf - . | xz -T2 -6 > ".bin/fuzz-$name.tar.xz"
  ls -l ".bin/fuzz-$name.tar.xz" .bin/cmdgraph.xz
}

# One bundle: every object bound from in/ and written to out-On/, or out-On/error.
run_one() {
  local bundle=$1 m out args=()
  m=$(dirname "$bundle")
  out="$m/out-$(basename "$bundle" .cgb)"
  mkdir -p "$out"
  while read -r obj; do
    [ -n "$obj" ] || continue
    args+=(--input "$obj=$m/in/${obj#@}.bin" --output "$obj=$out/${obj#@}.bin")
  done < "$m/objects"
  if ! /tmp/cmdgraph run "$bundle" --graph g "${args[@]}" > "$out/stdout" 2> "$out/stderr"; then
    mv "$out/stderr" "$out/error"
  fi
}
export -f run_one

device() {
  xz -dc .bin/cmdgraph.xz > /tmp/cmdgraph && chmod +x /tmp/cmdgraph
  /tmp/cmdgraph run --list-devices
  for archive in .bin/fuzz-*.tar.xz; do
    local name dir start
    name=$(basename "$archive" .tar.xz); name=${name#fuzz-}
    dir=/tmp/fuzz/$name
    rm -rf "$dir" && mkdir -p "$dir"
    xz -dc "$archive" | tar -C "$dir" -xf -
    start=$SECONDS
    find "$dir" -name 'O*.cgb' | sort | xargs -P "$(nproc)" -I{} bash -c 'run_one {}'
    echo "$name: ran $(find "$dir" -name 'O*.cgb' | wc -l) bundles in $((SECONDS - start)) s;" \
      "$(find "$dir" -name error | wc -l) runs failed"
    find "$dir" -name error | head -3 | xargs -r -I{} sh -c 'echo "{}:"; head -5 {}'
    (cd "$dir" && find . -path '*/out-O*' -type f ! -name stdout -print0 | tar --null -T - -cf -) \
      | xz -T0 -6 > "${OUT:-/tmp}/$name-out.tar.xz"
  done
}

compare() {
  . scripts/env.sh
  local name=$1; shift
  local outputs=${*: -1}
  fuzz_env "${@:1:$#-1}"
  [ -d "$work/$name" ] || { echo "gpu-fuzz.sh compare: run prepare first ($work/$name is missing)" >&2; exit 1; }
  xz -dc "$outputs" | tar -C "$work/$name" -xf -
  CMDGRAPH_FUZZ_SUBGROUP_SIZE=${CMDGRAPH_FUZZ_SUBGROUP_SIZE:-32} CMDGRAPH_FUZZ_IMPORT="$PWD/$work/$name" \
    cargo test -q --release -p cmdgraph-cli --test kernel_fuzz -- random_kernels --nocapture
}

case "${1:-}" in
  prepare) shift; prepare "$@" ;;
  device) device ;;
  compare) shift; compare "$@" ;;
  *) echo "usage: bash scripts/gpu-fuzz.sh prepare NAME SEED KERNELS [ONLY] | device | compare NAME SEED KERNELS [ONLY] OUTPUTS.tar.xz" >&2; exit 2 ;;
esac
