#!/usr/bin/env bash
# Runs every benchmark and updates docs/performance.md with their tables.
#
#   bash scripts/bench.sh            # all suites, default sizes
#   bash scripts/bench.sh --runs 3   # extra arguments go to each suite
#
# Suites run one after the other on one core (taskset, where present), in release mode.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
CMDGRAPH_SETUP_PYTHON=0 bash scripts/setup.sh
# shellcheck source=scripts/env.sh
. scripts/env.sh

cargo build --release -q -p cmdgraph-bench
pin=()
if command -v taskset >/dev/null 2>&1; then
  pin=(taskset -c 0)
fi

for suite in parse tred barriers memory fusion codegen compile; do
  echo "==> cmdgraph-bench ${suite}"
  "${pin[@]}" cargo run --release -q -p cmdgraph-bench -- "$suite" "$@"
done

# The runtime copy suite (memcpy/memset/memfill against hand-recorded transfer commands) on
# the local Vulkan device, llvmpipe here, at CI sizes; the GPU sizes are in gpu-bench.sh.
echo "==> cmdgraph-bench copy"
"${pin[@]}" cargo run --release -q -p cmdgraph-bench -- copy --sizes 10,16,20 "$@"

# Runtime suites of issue 15 on llvmpipe, CI-sized (ratios only: absolute times come from
# the GPU machine, scripts/gpu-bench.sh).
echo "==> cmdgraph-bench replay"
"${pin[@]}" cargo run --release -q -p cmdgraph-bench -- replay --sizes 10,100,1000 "$@"
echo "==> cmdgraph-bench latency"
capi_latency="$(bash scripts/capi-latency.sh)"
"${pin[@]}" cargo run --release -q -p cmdgraph-bench -- latency --capi-bin "$capi_latency" "$@"
echo "==> cmdgraph-bench shader-run"
"${pin[@]}" cargo run --release -q -p cmdgraph-bench -- shader-run "$@"
echo "==> cmdgraph-bench barrier-run"
"${pin[@]}" cargo run --release -q -p cmdgraph-bench -- barrier-run "$@"
