#!/usr/bin/env bash
# Fuzzes the text front end with libFuzzer (cargo-fuzz) for a given time.
#
#   bash scripts/fuzz.sh SECONDS [TARGET] [extra libFuzzer flags...]
#
# TARGET defaults to parse_verify (fuzz/fuzz_targets/: parse_verify, interp_run, load_bundle, run_bundle). The corpus
# lives in fuzz/corpus/TARGET (git-ignored) and is seeded from examples/*.cgir and the lit
# tests' .cgir files; interp_run also starts from parse_verify's corpus when there is one.
# Crashes land in fuzz/artifacts/TARGET. The toolchain is stable, so nightly-only flags are enabled with
# RUSTC_BOOTSTRAP=1. FUZZ_SANITIZER=address (default) or none. One process: one core.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

seconds="${1:?usage: bash scripts/fuzz.sh SECONDS [TARGET] [libFuzzer flags...]}"
target="${2:-parse_verify}"
shift $(( $# >= 2 ? 2 : 1 ))
sanitizer="${FUZZ_SANITIZER:-address}"

# shellcheck source=scripts/env.sh
. scripts/env.sh
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz.sh: installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

corpus="fuzz/corpus/${target}"
mkdir -p "$corpus" "fuzz/artifacts/${target}"
# Seeds: each file under a name made from its path, so same-named files do not collide.
while IFS= read -r seed; do
  cp -n "$seed" "$corpus/seed-$(echo "$seed" | tr '/' '_')" 2>/dev/null || true
done < <(find examples lit-tests -name '*.cgir' -type f | sort)
# Target-specific seeds (load_bundle: valid bundles), when there are any.
if [ -d "fuzz/seeds/${target}" ]; then
  cp -n fuzz/seeds/"${target}"/* "$corpus"/ 2>/dev/null || true
fi
extra=()
if [ "$target" != parse_verify ] && [ -d fuzz/corpus/parse_verify ]; then
  extra=(fuzz/corpus/parse_verify)
fi

echo "fuzz.sh: ${target} for ${seconds}s, sanitizer ${sanitizer}, corpus ${corpus} ($(ls "$corpus" | wc -l) inputs)"
RUSTC_BOOTSTRAP=1 exec cargo fuzz run --fuzz-dir fuzz -s "$sanitizer" "$target" "$corpus" "${extra[@]}" -- \
  -max_total_time="$seconds" \
  -rss_limit_mb=2048 \
  -timeout=10 \
  -max_len=16384 \
  -dict=fuzz/cgir.dict \
  -print_final_stats=1 \
  "$@"
