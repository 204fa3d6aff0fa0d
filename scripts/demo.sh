#!/usr/bin/env bash
# The main demonstration: from a fresh Debian 12 machine with Rust,
#
#   bash scripts/demo.sh [examples/FILE.cgir]
#
# installs what is missing, builds the `cmdgraph` tool and runs the main job on one example
# (default examples/saxpy_chain.cgir): verify it, check it is in canonical form, render its
# graph to target/demo/<name>.svg, run it on the reference interpreter with the race
# detector on, compile it to a bundle (target/demo/<name>.cgb), run the bundle on the default
# Vulkan device (llvmpipe when there is no GPU) with the validation layer on, and compare
# every user memory object with the interpreter's under the float precision rules of
# docs/ir.md (`cmdgraph interp --compare` names the rule that matched: exact, `fma` rounded
# twice, the math-function tolerance). The steps live in `main_job` below.
#
# The binary is $CARGO_TARGET_DIR/debug/cmdgraph (target/ without it), built here; with
# CMDGRAPH_BIN=PATH that binary is used and nothing is installed or built. Files go to
# $DEMO_OUT (default target/demo).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

example="${1:-examples/saxpy_chain.cgir}"
out_dir="${DEMO_OUT:-target/demo}"
cmdgraph="${CMDGRAPH_BIN:-${CARGO_TARGET_DIR:-target}/debug/cmdgraph}"

fail() {
  echo "demo.sh: error: $*" >&2
  exit 1
}

# Runs one named step of the job and stops the demo, naming the step, when it fails.
run_step() {
  local name="$1"
  shift
  echo "==> ${name}: $*"
  "$@" || fail "step '${name}' failed"
}

render_svg() {
  local src="$1" svg="$2"
  "$cmdgraph" dot "$src" >"${svg%.svg}.dot"
  dot -Tsvg "${svg%.svg}.dot" -o "$svg"
}

# The main job. Each stage reads what the previous one produced.
main_job() {
  local src="$1"
  local name
  name="$(basename "${src%.cgir}")"
  run_step "verify" "$cmdgraph" verify "$src"
  run_step "canonical form" "$cmdgraph" fmt --check "$src"
  run_step "render graph" render_svg "$src" "${out_dir}/${name}.svg"
  echo "graph picture: $(pwd)/${out_dir}/${name}.svg"
  # The last graph of the file is the top-level one (a parent follows its sub-graphs).
  local graph
  graph="$(grep -o '^graph @[A-Za-z0-9_.$-]*' "$src" | tail -n 1 | cut -d@ -f2)"
  # The reference interpreter runs no SPIR-V (it refuses an external kernel, E0409): each
  # external kernel is replaced by its kernel-language twin (NAME.twin.cgir beside the
  # .spv, as cli/tests/vulkan_external.rs does), or the interpreter's steps are skipped,
  # saying why.
  local ref="$src"
  if grep -q ') spirv "' "$src"; then
    ref="${out_dir}/${name}.twin.cgir"
    if with_twins "$src" "$ref"; then
      echo "note: the reference interpreter runs no SPIR-V: it runs ${ref}, where each external kernel is its kernel-language twin"
    else
      ref=""
    fi
  fi
  if [ -n "$ref" ]; then
    run_step "interpret" "$cmdgraph" interp "$ref" --graph "$graph" --races --runs 3 --seed 1
  else
    echo "note: skipping the interpreter: it runs no SPIR-V, and an external kernel of $src has no kernel-language twin"
  fi
  run_step "compile" "$cmdgraph" compile "$src" -o "${out_dir}/${name}.cgb"
  run_step "inspect" "$cmdgraph" inspect "${out_dir}/${name}.cgb"
  # Same inputs on the reference interpreter and on the default Vulkan device (llvmpipe
  # without a GPU), with the validation layer on; every user memory object must match.
  local inputs=() outs_vk=() outs_ref=() binding obj
  mkdir -p "${out_dir}/in" "${out_dir}/vk" "${out_dir}/ref"
  mapfile -t inputs < <(python3 scripts/make-inputs.py "$src" "${out_dir}/in" | while read -r obj _; do echo "${obj}=${out_dir}/in/${obj}.bin"; done)
  for binding in "${inputs[@]}"; do
    obj="${binding%%=*}"
    outs_vk+=(--output "${obj}=${out_dir}/vk/${obj}.bin")
    outs_ref+=(--output "${obj}=${out_dir}/ref/${obj}.bin")
  done
  local in_args=()
  for binding in "${inputs[@]}"; do in_args+=(--input "$binding"); done
  run_step "run on Vulkan" "$cmdgraph" run "${out_dir}/${name}.cgb" --graph "$graph" --validation "${in_args[@]}" "${outs_vk[@]}"
  if [ -z "$ref" ]; then
    echo "note: not compared with the reference interpreter: it runs no SPIR-V, and an external kernel of $src has no kernel-language twin"
    return 0
  fi
  local compares=()
  for binding in "${inputs[@]}"; do
    obj="${binding%%=*}"
    compares+=(--compare "${obj}=${out_dir}/vk/${obj}.bin")
  done
  run_step "compare with the reference interpreter" "$cmdgraph" interp "$ref" --graph "$graph" "${in_args[@]}" "${outs_ref[@]}" "${compares[@]}"
  echo "Vulkan and the reference interpreter agree on ${#inputs[@]} memory object(s)"
}

# Writes SRC to OUT with every `kernel @K(...) spirv "DIR/F.spv" ...` replaced by the kernel
# in DIR/F.twin.cgir (relative to SRC); fails when a twin is missing.
with_twins() {
  python3 - "$1" "$2" <<'PY'
import os, re, sys
src, out = sys.argv[1], sys.argv[2]
text = open(src).read()
missing = []
def twin(m):
    path = os.path.join(os.path.dirname(src), re.sub(r"\.spv$", "", m.group(2)) + ".twin.cgir")
    if not os.path.exists(path):
        missing.append(path)
        return m.group(0)
    body = open(path).read()
    k = re.search(r"^kernel @" + re.escape(m.group(1)) + r"\(.*?^\}", body, re.M | re.S)
    if not k:
        missing.append(path)
        return m.group(0)
    return k.group(0)
text = re.sub(r'^kernel @([A-Za-z0-9_.$-]+)\(.*?\) spirv "([^"]+)".*$', twin, text, flags=re.M)
if missing:
    print("demo.sh: no twin: " + ", ".join(missing), file=sys.stderr)
    sys.exit(1)
open(out, "w").write(text)
PY
}

[ -f "$example" ] || fail "no such example: $example"

if [ -z "${CMDGRAPH_BIN:-}" ]; then
  CMDGRAPH_SETUP_PYTHON=0 bash scripts/setup.sh
  # shellcheck source=scripts/env.sh
  . scripts/env.sh
  echo "==> build: cargo build -p cmdgraph-cli"
  cargo build -q -p cmdgraph-cli || fail "build failed"
else
  # shellcheck source=scripts/env.sh
  . scripts/env.sh
fi
mkdir -p "$out_dir"

main_job "$example"
echo "demo.sh: done"
