#!/usr/bin/env python3
"""Deterministic pseudo-random raw inputs for every `usm` object of a module.

    python3 scripts/make-inputs.py MODULE.cgir OUT_DIR

Writes OUT_DIR/<name>.bin for each `usm @name : f32|u32|i32[N]` (floats in [-1, 1) with
every significand bit random, integers in [0, 1000), seed 1) and prints `<name> <type>` per
object. Used by scripts/demo.sh and scripts/gpu-examples.sh so both feed the same bytes.

Memory that a kernel adding `f32` with `atomic add` is given gets multiples of 1/16 in
[-4, 4] instead: a device adds in its own order, and sums of up to 2^18 such values are
exact in any order, so the device's result can be compared with the interpreter's bit for
bit (docs/codegen.md, "Deviations from the interpreter"; cli/tests/support does the same).
"""
import random
import re
import struct
import sys

NAME = r"[A-Za-z0-9_.$-]+"


def summable(text):
    """The memory objects launches of an `f32` `atomic add` kernel take as arguments."""
    adders = set()
    kernel = rf"^kernel @({NAME})\(([^\n]*)\)\s*\{{(.*?)^\}}"
    for name, params, body in re.findall(kernel, text, re.M | re.S):
        floats = {p for p, ty in re.findall(rf"%({NAME}):\s*(buf<f32|local<f32)", params)}
        floats |= set(re.findall(rf"%({NAME}) = local f32\[", body))
        if any(m in floats for m in re.findall(rf"atomic add %({NAME})\[", body)):
            adders.add(name)
    out = set()
    for name, args in re.findall(rf"kernel @({NAME})[^\n]*? args\(([^)\n]*)\)", text):
        if name in adders:
            out |= set(re.findall(rf"@({NAME})", args))
    return out


src, out = sys.argv[1], sys.argv[2]
rng = random.Random(1)
text = open(src).read()
sums = summable(text)
pattern = r"^usm @([A-Za-z0-9_.$-]+) : (f32|u32|i32)\[(\d+)\]"
for name, ty, n in re.findall(pattern, text, re.M):
    n = int(n)
    if ty == "f32" and name in sums:
        data = struct.pack(f"<{n}f", *((rng.randrange(129) - 64) / 16 for _ in range(n)))
    elif ty == "f32":
        data = struct.pack(f"<{n}f", *(rng.uniform(-1, 1) for _ in range(n)))
    else:
        data = struct.pack(f"<{n}I", *(rng.randrange(1000) for _ in range(n)))
    with open(f"{out}/{name}.bin", "wb") as f:
        f.write(data)
    print(f"{name} {ty}")
