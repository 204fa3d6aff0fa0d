#!/bin/bash
# H200 probes behind docs/reliability.md, "On the H200".
#   bash scripts/h200-probes/run.sh prepare   # here: bundles, inputs, binary into .bin/probes
#   bash scripts/h200-probes/run.sh device    # on the GPU machine (carry .gl and .bin/probes)
#   python3 scripts/h200-probes/compare.py .bin/probes RESULTS   # here, on what came back
set -euo pipefail
dir=.bin/probes
case "${1:-}" in
prepare)
  mkdir -p "$dir"
  cargo build --release -p cmdgraph-cli --bin cmdgraph
  bin="${CARGO_TARGET_DIR:-target}/release/cmdgraph"
  for O in 0 2; do "$bin" compile -O$O scripts/h200-probes/probe.cgir -o "$dir/O$O.cgb"; done
  python3 scripts/h200-probes/inputs.py "$dir"
  strip -o "$dir/cmdgraph" "$bin" && xz -f -6 "$dir/cmdgraph"
  ;;
device)
  for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  xz -dc "$dir/cmdgraph.xz" > /tmp/cmdgraph && chmod +x /tmp/cmdgraph
  ins=""; for n in a32 b32 a64 b64 fx fh nx dt dh; do ins="$ins --input @$n=$dir/$n.bin"; done
  for O in 0 2; do
    mkdir -p /tmp/res/O$O; outs=""
    for n in r32 q32 rw32 r64 fp fm fs cu nm1 nm2 nc1 nc2 dn dl dab dad dhm dha; do
      outs="$outs --output @$n=/tmp/res/O$O/$n.bin"
    done
    /tmp/cmdgraph run "$dir/O$O.cgb" --graph g $ins $outs > /tmp/res/O$O/log.txt 2>&1
  done
  # One file back (a call returns only a few files).
  tar -C /tmp/res -cf - . | xz -6 > "${OUT:-/tmp}/probes.tar.xz"
  ;;
*) echo "usage: $0 prepare|device" >&2; exit 2 ;;
esac
