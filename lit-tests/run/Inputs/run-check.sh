#!/usr/bin/env bash
# run-check.sh CMDGRAPH FILE RUNS [--graph G] NAME...: compile FILE, run it (graph G) RUNS
# times on Vulkan (validation on) and on the interpreter, and check each named memory object
# against the interpreter's result with `cmdgraph interp --compare` (the comparison
# scripts/demo.sh makes): the same bytes, or `fma` rounded twice (docs/ir.md, "Float
# precision"), at the device's subgroup size; the sign of a float zero and NaN payloads are not compared, and a module using
# math functions would get their tolerance (none of the executable tests uses one).
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
vk=() compare=()
for name in "$@"; do
  vk+=(--output "${name#@}=$tmp/${name#@}.vk")
  compare+=(--compare "${name#@}=$tmp/${name#@}.vk")
done
"$cmdgraph" run "$tmp/b.cgb" "${graph[@]}" --validation --runs "$runs" "${vk[@]}" > "$tmp/run.out"
status=0
# Subgroup ops depend on the subgroup size: the interpreter models the device's.
"$cmdgraph" interp "$file" "${graph[@]}" --subgroup-size device --runs "$runs" "${compare[@]}" > "$tmp/interp.out" || status=1
# The interpreter's summary, then the device's, then one line per object naming the rule.
grep -v '^compare @' "$tmp/interp.out" || true
cat "$tmp/run.out"
for name in "$@"; do
  n=${name#@}
  line=$(grep -F "compare @$n with $tmp/$n.vk: " "$tmp/interp.out" || true)
  rule=${line#*: match: }
  case "$line" in
    *": match: exact") echo "match: @$n ($(stat -c %s "$tmp/$n.vk") bytes)" ;;
    *": match: exact with fma rounded twice"*) echo "match: @$n ($(stat -c %s "$tmp/$n.vk") bytes, fma rounded twice)" ;;
    *": match: "*) echo "match: @$n ($(stat -c %s "$tmp/$n.vk") bytes, $rule)" ;;
    *) echo "MISMATCH: @$n: ${line#*: MISMATCH: }"; status=1 ;;
  esac
done
exit $status
