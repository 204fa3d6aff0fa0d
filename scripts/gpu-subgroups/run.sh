#!/usr/bin/env bash
# The interpreter's subgroup model against a GPU (docs/ir.md, "Subgroups"): the subgroup lit
# tests' kernels in shapes for subgroups of 32, run there and compared here at size 32.
#
#   bash scripts/gpu-subgroups/run.sh prepare DIR    # here: bundles and a stripped cmdgraph
#   bash scripts/gpu-subgroups/run.sh device DIR     # there (carry .gl and DIR): DIR/res.tar.xz
#   bash scripts/gpu-subgroups/run.sh compare DIR    # here: every object, then the float order
#
# The GPU machine has no compiler (../shared/GPU.md). The H200's `div` is not correctly
# rounded, so the random f32 inputs (made on the device) differ from the interpreter's and
# every f32 object then matches only the math tolerance; check.py takes the device's own
# inputs and checks min/max bit for bit and add/mul against docs/ir.md's bound.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mode=$1 dir=$2
bundles="arith32 moves32 diverge"
mems() { grep -oE '^usm @[A-Za-z0-9_]+' "$dir/$1.cgir" | sed 's/usm @//'; }
case "$mode" in
  prepare)
    cmdgraph=${CMDGRAPH:-cmdgraph}
    mkdir -p "$dir"
    python3 "$here/gen32.py" "$dir"
    cp "$here/../../lit-tests/run/subgroup_ops_in_divergent_control_flow_act_over_the_active_lanes.cgir" "$dir/diverge.cgir"
    for b in $bundles; do "$cmdgraph" compile "$dir/$b.cgir" -o "$dir/$b.cgb"; done
    strip -o "$dir/cmdgraph" "$(command -v "$cmdgraph")" && xz -f -T2 -6 "$dir/cmdgraph"
    ;;
  device)
    for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
    xz -d -k -f "$dir/cmdgraph.xz" && chmod +x "$dir/cmdgraph"
    if ! "$dir/cmdgraph" run --list-devices 2>/dev/null | grep -qi nvidia; then
      export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
    fi
    "$dir/cmdgraph" run --list-devices
    mkdir -p "$dir/res"
    for b in $bundles; do
      args=()
      for m in $(mems "$b"); do args+=(--output "$m=$dir/res/$b.$m.vk"); done
      "$dir/cmdgraph" run "$dir/$b.cgb" "${args[@]}" | head -1
    done
    tar -C "$dir/res" -cJf "${OUT:-$dir}/res.tar.xz" .
    ;;
  compare)
    cmdgraph=${CMDGRAPH:-cmdgraph}
    mkdir -p "$dir/res" && tar -C "$dir/res" -xJf "$dir/res.tar.xz"
    for b in $bundles; do
      args=()
      for m in $(mems "$b"); do args+=(--compare "$m=$dir/res/$b.$m.vk"); done
      "$cmdgraph" interp "$dir/$b.cgir" --subgroup-size 32 "${args[@]}" | grep '^compare' || true
    done
    python3 "$here/check.py" "$dir/res"
    ;;
  *) echo "usage: run.sh prepare|device|compare DIR" >&2; exit 2 ;;
esac
