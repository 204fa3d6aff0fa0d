#!/usr/bin/env bash
# run-check.sh CMDGRAPH FILE RUNS [--graph G] NAME...: compile FILE, run it (graph G) RUNS
# times on the interpreter and on Vulkan (validation on), and compare each named memory object
# byte for byte with the interpreter's result, `fma` rounded once or twice.
set -euo pipefail
cmdgraph=$1 file=$2 runs=$3
shift 3
graph=()
if [[ ${1:-} == --graph ]]; then
  graph=(--graph "$2")
  shift 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$cmdgraph" compile "$file" -o "$tmp/b.cgb"
ref=() ref2=() vk=()
for name in "$@"; do
  ref+=(--output "${name#@}=$tmp/${name#@}.ref")
  ref2+=(--output "${name#@}=$tmp/${name#@}.ref2")
  vk+=(--output "${name#@}=$tmp/${name#@}.vk")
done
"$cmdgraph" interp "$file" "${graph[@]}" --runs "$runs" "${ref[@]}"
# `fma` may round once or twice on a conforming device (docs/ir.md, "Float precision"):
# the interpreter's twice-rounded outputs are accepted too (identical without `fma`).
"$cmdgraph" interp "$file" "${graph[@]}" --runs "$runs" --fma twice "${ref2[@]}" >/dev/null
"$cmdgraph" run "$tmp/b.cgb" "${graph[@]}" --validation --runs "$runs" "${vk[@]}"
status=0
for name in "$@"; do
  n=${name#@}
  if cmp -s "$tmp/$n.ref" "$tmp/$n.vk"; then
    echo "match: @$n ($(stat -c %s "$tmp/$n.ref") bytes)"
  elif cmp -s "$tmp/$n.ref2" "$tmp/$n.vk"; then
    echo "match: @$n ($(stat -c %s "$tmp/$n.ref") bytes, fma rounded twice)"
  else
    echo "MISMATCH: @$n: $(cmp "$tmp/$n.ref" "$tmp/$n.vk" 2>&1 | head -1)"
    status=1
  fi
done
exit $status
