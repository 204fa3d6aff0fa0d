#!/usr/bin/env bash
# Regenerates tests/golden/bundle-hashes.txt: the content hash of the bundle of every module
# it lists, compiled with the default pipeline at -O2. cli/tests/bundle_golden.rs compiles
# the same modules and compares, so a build elsewhere (CI) that gives other bytes fails.
#
#   bash scripts/golden-hashes.sh            # rehash the modules the file lists
#   bash scripts/golden-hashes.sh FILE...    # also add FILE... (paths from the repo root)
#   PROFILE=release bash scripts/golden-hashes.sh   # with a release build (same bytes)
#
# Run it when a change is meant to change bundles (codegen, passes, the format) and commit
# the file with that change.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
manifest=tests/golden/bundle-hashes.txt
profile=${PROFILE:-debug}
if [[ $profile == release ]]; then cargo build -q --release -p cmdgraph-cli; else cargo build -q -p cmdgraph-cli; fi
bin="${CARGO_TARGET_DIR:-target}/$profile/cmdgraph"
modules=()
if [[ -f "$manifest" ]]; then
  while read -r path _; do
    [[ -z "$path" || "$path" == \#* ]] || modules+=("$path")
  done < "$manifest"
fi
modules+=("$@")
mapfile -t modules < <(printf '%s\n' "${modules[@]}" | sort -u)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
  echo "# module  content hash of its bundle (default pipeline, -O2); regenerate: bash scripts/golden-hashes.sh"
  for m in "${modules[@]}"; do
    "$bin" compile "$m" -o "$tmp/out.cgb"
    hash=$("$bin" inspect "$tmp/out.cgb" | sed -n 's/^  content hash *\([0-9a-f]*\)$/\1/p')
    [[ ${#hash} -eq 64 ]] || { echo "no content hash in the bundle of $m" >&2; exit 1; }
    echo "$m $hash"
  done
} > "$tmp/manifest"
mv "$tmp/manifest" "$manifest"
echo "wrote $manifest (${#modules[@]} modules)"
