#!/usr/bin/env bash
# run-check.sh CMDGRAPH FILE RUNS [--graph G] NAME...: compile FILE, run it (graph G) RUNS
# times on the interpreter and on Vulkan (validation on), and compare each named memory object
# byte for byte.
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
ref=() vk=()
for name in "$@"; do
  ref+=(--output "${name#@}=$tmp/${name#@}.ref")
  vk+=(--output "${name#@}=$tmp/${name#@}.vk")
done
"$cmdgraph" interp "$file" "${graph[@]}" --runs "$runs" "${ref[@]}"
"$cmdgraph" run "$tmp/b.cgb" "${graph[@]}" --validation --repeat "$runs" "${vk[@]}"
status=0
for name in "$@"; do
  n=${name#@}
  if cmp -s "$tmp/$n.ref" "$tmp/$n.vk"; then
    echo "match: @$n ($(stat -c %s "$tmp/$n.ref") bytes)"
  else
    echo "MISMATCH: @$n: $(cmp "$tmp/$n.ref" "$tmp/$n.vk" 2>&1 | head -1)"
    status=1
  fi
done
exit $status
