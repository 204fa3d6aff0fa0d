#!/usr/bin/env bash
# Builds bench/c/latency.c, the C API's row of `cmdgraph-bench latency`, against the static
# release libcmdgraph (no runtime library path to carry to the GPU machine).
#
#   bash scripts/capi-latency.sh [OUT]   # default target/release/capi-latency
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/env.sh
out=${1:-target/release/capi-latency}
cargo build --release -q -p cmdgraph-capi
lib="${CARGO_TARGET_DIR:-target}/release/libcmdgraph.a"
cc -std=c11 -O2 -Wall -Wextra -Wpedantic -Werror -I capi/include bench/c/latency.c "$lib" \
  -lstdc++ -ldl -lgcc_s -lutil -lrt -lpthread -lm -o "$out"
echo "$out"
