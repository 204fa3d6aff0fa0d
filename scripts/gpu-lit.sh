#!/usr/bin/env bash
# The executable lit tests (lit-tests/run, those checked by `%run-check`) on a GPU machine
# (../shared/GPU.md): each bundle compiled here, run on the device there and compared there
# with the interpreter under the rules of `cmdgraph interp --compare` (run-check.sh's rules,
# at the device's subgroup size; no validation layers on that machine).
#
#   bash scripts/gpu-lit.sh prepare          # here: release binary and bundles -> .bin/
#   bash scripts/gpu-lit.sh device [FILE...] # there (carry .gl and .bin): one line per test
#
# Tests with other RUN forms (external SPIR-V built by glslc, expected failures, --set) are
# left out; scripts/gpu-examples.sh runs the examples. Two subgroup tests launch 8x3
# work-groups, which only an 8-wide device can run (the interpreter refuses them at NVIDIA's
# 32, E0408); scripts/gpu-subgroups checks subgroups there.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

tests() { grep -l 'run-check %s' lit-tests/run/*.cgir | grep -v -E 'external_|ordinary_binding|llvmpipe_warns'; }

prepare() {
  . scripts/env.sh
  [ -n "${NO_BUILD:-}" ] || cargo build --release -q -p cmdgraph-cli
  mkdir -p .bin/lit
  strip -o .bin/cmdgraph target/release/cmdgraph && xz -T2 -6 -f .bin/cmdgraph
  for src in $(tests); do
    target/release/cmdgraph compile "$src" -o ".bin/lit/$(basename "${src%.cgir}").cgb" > /dev/null
  done
  du -sh .bin
}

device() {
  xz -d -k -f .bin/cmdgraph.xz && chmod +x .bin/cmdgraph
  local cg=.bin/cmdgraph status=0
  nvidia-smi -L 2>/dev/null || true
  local files=("$@")
  [ ${#files[@]} -gt 0 ] || mapfile -t files < <(tests)
  for src in "${files[@]}"; do
    local line runs rest tmp graph=() vk=() cmp=()
    line="$(grep -o 'run-check %s [^|]*' "$src" | head -n 1 | sed 's/run-check %s //; s/ *$//')"
    read -r runs rest <<< "$line"
    if [[ "$rest" == --graph* ]]; then
      graph=(--graph "$(awk '{print $2}' <<< "$rest")")
      rest="$(cut -d' ' -f3- <<< "$rest")"
    fi
    tmp=$(mktemp -d)
    for o in $rest; do
      vk+=(--output "${o#@}=$tmp/${o#@}.vk")
      cmp+=(--compare "${o#@}=$tmp/${o#@}.vk")
    done
    if ! $cg run ".bin/lit/$(basename "${src%.cgir}").cgb" "${graph[@]}" --runs "$runs" "${vk[@]}" > "$tmp/r.out" 2>&1; then
      echo "RUN FAILED $(basename "$src"): $(tail -n 2 "$tmp/r.out")"; status=1; rm -rf "$tmp"; continue
    fi
    $cg interp "$src" "${graph[@]}" --subgroup-size device --runs "$runs" "${cmp[@]}" > "$tmp/i.out" 2>&1 || status=1
    echo "$(basename "$src"): $(grep -c ': match: ' "$tmp/i.out") match, $(grep -c 'MISMATCH' "$tmp/i.out") mismatch"
    grep -q ': match: \|MISMATCH' "$tmp/i.out" || { tail -n 3 "$tmp/i.out"; status=1; }
    grep -E 'compare @.*(MISMATCH|match: [^e])' "$tmp/i.out" | sed "s|$tmp/||" | cut -c1-300
    rm -rf "$tmp"
  done
  return $status
}

"$@"
