#!/usr/bin/env bash
# Runs every example and every executable lit test (lit-tests/run) on a GPU machine
# (../shared/GPU.md) and checks its outputs against the reference interpreter, which runs here.
#
#   bash scripts/gpu-examples.sh prepare   # here: bundles, inputs, reference outputs, binary -> .bin/
#   bash scripts/gpu-examples.sh device    # there (carry .gl and .bin): run and compare, table last
#
# Inputs are deterministic pseudo-random data for every `usm` object (scripts/make-inputs.py,
# as for scripts/demo.sh); every `usm` object is compared after one run. Integers must match exactly;
# floats within 1e-5 relative (or 1e-6 absolute): Vulkan's `Fma` and transcendental functions
# have the precision Vulkan allows, not the interpreter's correctly rounded results (codegen
# marks float arithmetic NoContraction, so `mul` then `add` is never fused). The lit tests
# in lit-tests/run are compared bit for bit.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

graph_of() { grep -o '^graph @[A-Za-z0-9_.$-]*' "$1" | tail -n 1 | cut -d@ -f2; }

prepare() {
  . scripts/env.sh
  # Static LLVM: the GPU machine has no libLLVM (codegen/build.rs links it shared in debug builds).
  [ -n "${NO_BUILD:-}" ] || CMDGRAPH_LLVM_LINK=static cargo build -q -p cmdgraph-cli
  rm -rf .bin && mkdir -p .bin
  strip -o .bin/cmdgraph target/debug/cmdgraph
  xz -T2 -6 .bin/cmdgraph
  for src in examples/*.cgir; do
    local name graph
    name="$(basename "${src%.cgir}")"
    graph="$(graph_of "$src")"
    # The interpreter (the reference) runs no SPIR-V: external-kernel modules are checked
    # against a kernel-language twin by cli/tests/vulkan_external.rs instead.
    if grep -q ') spirv "' "$src"; then continue; fi
    mkdir -p ".bin/$name/in" ".bin/$name/ref"
    python3 scripts/make-inputs.py "$src" ".bin/$name/in" > ".bin/$name/objects"
    [ -s ".bin/$name/objects" ] || { rm -rf ".bin/$name"; continue; }
    target/debug/cmdgraph compile "$src" -o ".bin/$name/bundle.cgb"
    echo "$graph" > ".bin/$name/graph"
    local args=()
    while read -r obj _; do
      args+=(--input "$obj=.bin/$name/in/$obj.bin" --output "$obj=.bin/$name/ref/$obj.bin")
    done < ".bin/$name/objects"
    target/debug/cmdgraph interp "$src" --graph "$graph" "${args[@]}" > /dev/null
  done
  # The executable lit tests (lit-tests/run): no inputs, the run count and objects of their
  # RUN line, and exact comparison (they are written to be bit-exact on any device).
  for src in lit-tests/run/*.cgir; do
    local name line runs graph objs
    name="run-$(basename "${src%.cgir}")"
    line="$(grep -o 'run-check %s .* |' "$src" | head -n 1 | sed 's/run-check %s //; s/ |$//')"
    read -r runs rest <<< "$line"
    graph="$(graph_of "$src")"
    if [[ "$rest" == --graph* ]]; then
      graph="$(awk '{print $2}' <<< "$rest")"
      rest="$(cut -d' ' -f3- <<< "$rest")"
    fi
    mkdir -p ".bin/$name/ref"
    target/debug/cmdgraph compile "$src" -o ".bin/$name/bundle.cgb"
    echo "$graph" > ".bin/$name/graph"
    echo "$runs" > ".bin/$name/runs"
    : > ".bin/$name/objects"
    local args=()
    for obj in $rest; do
      echo "${obj#@} exact" >> ".bin/$name/objects"
      args+=(--output "${obj#@}=.bin/$name/ref/${obj#@}.bin")
    done
    target/debug/cmdgraph interp "$src" --graph "$graph" --runs "$runs" "${args[@]}" > /dev/null
  done
  du -sh .bin
}

device() {
  xz -d -k -f .bin/cmdgraph.xz
  chmod +x .bin/cmdgraph
  local table="" status=0
  for dir in .bin/*/; do
    local name graph
    name="$(basename "$dir")"
    graph="$(cat "$dir/graph")"
    mkdir -p "$dir/out"
    local args=()
    while read -r obj _; do
      [ -f "$dir/in/$obj.bin" ] && args+=(--input "$obj=$dir/in/$obj.bin")
      args+=(--output "$obj=$dir/out/$obj.bin")
    done < "$dir/objects"
    local rc=0 runs
    runs="$(cat "$dir/runs" 2>/dev/null || echo 1)"
    timeout "${RUN_TIMEOUT:-60}" .bin/cmdgraph run "$dir/bundle.cgb" --graph "$graph" --runs "$runs" "${args[@]}" > "$dir/run.log" 2>&1 || rc=$?
    if [ "$rc" -ne 0 ]; then
      table+="$name: run FAILED (exit $rc; 124 = still running after ${RUN_TIMEOUT:-60} s): $(tail -n 3 "$dir/run.log" | tr '\n' ' ')"$'\n'
      status=1
      continue
    fi
    local line
    line="$(python3 - "$dir" <<'PY'
import struct, sys
d = sys.argv[1]
worst, ok = [], True
for line in open(f"{d}/objects"):
    name, ty = line.split()
    ref, out = open(f"{d}/ref/{name}.bin", "rb").read(), open(f"{d}/out/{name}.bin", "rb").read()
    if ty == "exact":
        same = ref == out
        ok &= same
        worst.append(f"@{name} {'bit-exact' if same else 'DIFFERS'}")
        continue
    if ty != "f32":
        same = ref == out
        ok &= same
        worst.append(f"@{name} {'exact' if same else 'DIFFERS'}")
        continue
    n = len(ref) // 4
    a, b = struct.unpack(f"<{n}f", ref), struct.unpack(f"<{n}f", out)
    bad = sum(1 for x, y in zip(a, b) if abs(x - y) > max(1e-6, 1e-5 * abs(x)))
    maxd = max((abs(x - y) for x, y in zip(a, b)), default=0.0)
    ok &= bad == 0
    worst.append(f"@{name} {'bit-exact' if ref == out else f'max |diff| {maxd:.2e}'}" + (f" {bad} OUT OF TOLERANCE" if bad else ""))
print(("ok   " if ok else "FAIL ") + ", ".join(worst))
PY
)"
    [[ "$line" == ok* ]] || status=1
    table+="$name: $line"$'\n'
  done
  echo "device: $(sed -n 's/^graph @[^:]*: [0-9]* run(s) on //p' .bin/*/run.log | head -n 1)"
  printf '%s' "$table"
  return $status
}

case "${1:-}" in
  prepare) prepare ;;
  device) device ;;
  *) echo "usage: $0 prepare|device" >&2; exit 2 ;;
esac
