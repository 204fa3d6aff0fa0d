#!/usr/bin/env bash
# The diff demonstration (docs/diff.md): optimize an example with empty join nodes and
# redundant edges, and show what changed, as text and as a picture.
#
#   bash scripts/diff-demo.sh [examples/FILE.cgir]
#
# 1. `cmdgraph opt --passes=eliminate-empty-nodes,transitive-reduction` on the example
#    (default examples/diff_demo.cgir) -> target/diff-demo/after.cgir;
# 2. both graphs run on the reference interpreter with the same inputs and every output
#    is compared (the passes must not change what the graph computes);
# 3. `cmdgraph diff` of before and after: the text goes into docs/diff.md between the
#    `<!-- diff-demo:begin -->` / `<!-- diff-demo:end -->` markers, and `--dot` rendered by
#    `dot -Tsvg` becomes docs/img/diff-opt.svg.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

example="${1:-examples/diff_demo.cgir}"
passes="eliminate-empty-nodes,transitive-reduction"
out_dir="target/diff-demo"
cmdgraph="target/debug/cmdgraph"
doc="docs/diff.md"
svg="docs/img/diff-opt.svg"

fail() {
  echo "diff-demo.sh: error: $*" >&2
  exit 1
}

command -v dot >/dev/null || fail "graphviz 'dot' is missing: run scripts/setup.sh"
cargo build -j 1 -p cmdgraph-cli >&2 || fail "cannot build cmdgraph"
mkdir -p "$out_dir"

echo "==> opt --passes=${passes} ${example}"
"$cmdgraph" opt --passes="$passes" "$example" -o "$out_dir/after.cgir" ||
  fail "cmdgraph opt failed (are the passes merged into this branch?)"

echo "==> before and after compute the same outputs"
outputs=()
for mem in $(grep -oE '^(usm|buffer) @[A-Za-z0-9_]+' "$example" | sed 's/.*@//'); do
  outputs+=("$mem")
done
for side in before after; do
  src="$example"
  [ "$side" = after ] && src="$out_dir/after.cgir"
  args=()
  for mem in "${outputs[@]}"; do
    args+=(--output "$mem=$out_dir/$side.$mem.bin")
  done
  "$cmdgraph" interp "$src" --races "${args[@]}" >/dev/null || fail "interp of $side failed"
done
for mem in "${outputs[@]}"; do
  cmp -s "$out_dir/before.$mem.bin" "$out_dir/after.$mem.bin" || fail "@$mem differs after the passes"
done
echo "    ${#outputs[@]} memory object(s) identical: ${outputs[*]}"

echo "==> diff ${example} ${out_dir}/after.cgir"
status=0
"$cmdgraph" diff "$example" "$out_dir/after.cgir" --dot "$out_dir/diff.dot" >"$out_dir/diff.txt" || status=$?
[ "$status" -eq 1 ] || fail "cmdgraph diff exited $status (expected 1: the graphs differ)"
# Paths in the header are shown relative to the repository, whatever the caller's cwd.
cat "$out_dir/diff.txt"
dot -Tsvg "$out_dir/diff.dot" -o "$out_dir/diff-opt.svg" || fail "dot -Tsvg failed"

# Replace the text between the markers of docs/diff.md, atomically.
grep -q '<!-- diff-demo:begin -->' "$doc" || fail "$doc has no <!-- diff-demo:begin --> marker"
tmp="$(mktemp "$doc.XXXXXX")"
awk -v body="$out_dir/diff.txt" '
  /<!-- diff-demo:begin -->/ { print; print "```"; while ((getline line < body) > 0) print line; print "```"; skip = 1; next }
  /<!-- diff-demo:end -->/ { skip = 0 }
  !skip { print }
' "$doc" >"$tmp"
mv "$tmp" "$doc"
cp "$out_dir/diff-opt.svg" "$svg.tmp" && mv "$svg.tmp" "$svg"
echo "==> wrote $doc (text) and $svg (picture)"
