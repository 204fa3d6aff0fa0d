#!/usr/bin/env bash
# Every runnable lit test and example on the GPU machine with the Khronos validation layer
# (synchronization validation on), its outputs compared byte for byte with the reference
# interpreter's here (issue 18: bounds checks, descriptor ranges and robust buffer access
# on a real driver, not only llvmpipe).
#
#   bash scripts/gpu-validate.sh prepare   # here: bundles and interpreter outputs -> .bin/val/
#   bash scripts/gpu-validate.sh device    # there (carry .gl, .glval, .bin): run and compare
#
# `.glval` holds Debian's vulkan-validationlayers package (`apt-get download`), unpacked
# there like `.gl` (../shared/GPU.md).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

prepare() {
  local cg=$PWD/target/release/cmdgraph out=$PWD/.bin/val
  rm -rf "$out" && mkdir -p "$out"
  strip -o .bin/cmdgraph "$cg" && xz -f -T2 -6 .bin/cmdgraph
  for f in lit-tests/run/*.cgir examples/*.cgir; do
    local name; name=$(basename "$f" .cgir)
    # A launch meant to outlive its deadline is not a validation case.
    [[ $name == a_launch_past_the_timeout* ]] && continue
    (cd "$(dirname "$f")" && "$cg" compile "$(basename "$f")" -o "$out/$name.cgb") 2>/dev/null || continue
    local mems; mems=$(grep -oE '^\s*usm @[A-Za-z0-9_]+' "$f" | sed -E 's/.*@//' | sort -u)
    for g in $(grep -oE '^graph @[A-Za-z0-9_]+' "$f" | sed 's/graph @//'); do
      local args=() ok=1
      for m in $mems; do args+=(--output "$m=$out/$name.$g.$m.ref"); done
      # Graphs the interpreter rejects (out-of-range accesses: E0401) have no reference;
      # their twins do, and the lit tests compare those.
      (cd "$(dirname "$f")" && "$cg" interp "$(basename "$f")" --graph "$g" "${args[@]}") >/dev/null 2>&1 || ok=0
      if [ $ok = 1 ]; then echo "$name $g" $mems >> "$out/cases"; else
        # What the lit test's own `cmdgraph run` line writes is what it compares with
        # `@expect` (other objects of the twin need not agree).
        echo "$name $g" $(grep -E '^// RUN: .*cmdgraph run ' "$f" | grep -oE -- '--output [A-Za-z0-9_]+' | sed 's/--output //' | sort -u) >> "$out/no-ref"
      fi
    done
  done
  wc -l "$out/cases" "$out/no-ref" 2>/dev/null || true
  du -sh .bin
}

device() {
  local out=${OUT:-/tmp} val=.bin/val cg=.bin/cmdgraph fail=0 n=0
  xz -d -k -f .bin/cmdgraph.xz && chmod +x .bin/cmdgraph
  # NO_LAYER_DEBS=1: the layer is installed already (as on the development machine).
  [ -n "${NO_LAYER_DEBS:-}" ] || for f in .glval/*.deb; do dpkg -x "$f" /; done
  while read -r name g mems; do
    n=$((n + 1))
    local args=()
    for m in $mems; do args+=(--output "$m=$out/$name.$g.$m.vk"); done
    if ! "$cg" run "$val/$name.cgb" --graph "$g" --validation "${args[@]}" > "$out/$name.$g.log" 2>&1; then
      echo "FAILED: $name @$g: $(grep -m3 -E 'error|VUID|message' "$out/$name.$g.log" | tr '\n' ' ')"
      fail=$((fail + 1))
      continue
    fi
    for m in $mems; do
      cmp -s "$val/$name.$g.$m.ref" "$out/$name.$g.$m.vk" || { echo "MISMATCH: $name @$g @$m"; fail=$((fail + 1)); }
    done
  done < "$val/cases"
  # Graphs without a reference (out-of-range accesses, external kernels) must still run
  # validation-clean; where the file has an in-bounds twin `@expect`, the outputs must be
  # its reference (the lit tests' rule: far loads give 0, far stores are dropped).
  while read -r name g mems; do
    n=$((n + 1))
    local args=()
    grep -qE "^$name expect " "$val/cases" || mems=""
    for m in $mems; do args+=(--output "$m=$out/$name.$g.$m.vk"); done
    if ! "$cg" run "$val/$name.cgb" --graph "$g" --validation "${args[@]}" > "$out/$name.$g.log" 2>&1; then
      echo "FAILED: $name @$g: $(grep -m3 -E 'error|VUID' "$out/$name.$g.log" | tr '\n' ' ')"
      fail=$((fail + 1))
      continue
    fi
    for m in $mems; do
      cmp -s "$val/$name.expect.$m.ref" "$out/$name.$g.$m.vk" || { echo "MISMATCH: $name @$g @$m (against @expect)"; fail=$((fail + 1)); }
    done
    [ -z "$mems" ] || echo "checked against @expect: $name @$g ($mems)"
  done < <(cat "$val/no-ref" 2>/dev/null)
  echo "gpu-validate: $n graphs, $fail failures"
  [ $fail = 0 ]
}

"$@"
