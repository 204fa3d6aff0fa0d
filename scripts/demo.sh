#!/usr/bin/env bash
# The main demonstration: from a fresh Debian 12 machine with Rust,
#
#   bash scripts/demo.sh [examples/FILE.cgir]
#
# installs what is missing, builds the `cmdgraph` tool and runs the main job on one example
# (default examples/saxpy_chain.cgir): verify it, check it is in canonical form, render its
# graph to target/demo/<name>.svg, and run it on the reference interpreter with the race
# detector on. The job's steps live in `main_job` below; later pipeline stages (compile to a
# bundle, run it on Vulkan) are added there and nowhere else.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

example="${1:-examples/saxpy_chain.cgir}"
out_dir="target/demo"
cmdgraph="target/debug/cmdgraph"

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
  run_step "interpret" "$cmdgraph" interp "$src" --graph "$graph" --races --runs 3 --seed 1
  # Later stages go here, e.g.:
  #   run_step "compile" "$cmdgraph" compile "$src" -o "${out_dir}/${name}.cgb"
  #   run_step "run" "$cmdgraph" run "${out_dir}/${name}.cgb"
}

[ -f "$example" ] || fail "no such example: $example"

bash scripts/setup.sh
# shellcheck source=scripts/env.sh
. scripts/env.sh

echo "==> build: cargo build -p cmdgraph-cli"
cargo build -q -p cmdgraph-cli || fail "build failed"
mkdir -p "$out_dir"

main_job "$example"
echo "demo.sh: done"
