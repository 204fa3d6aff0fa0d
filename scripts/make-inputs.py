#!/usr/bin/env python3
"""Deterministic pseudo-random raw inputs for every `usm` object of a module.

    python3 scripts/make-inputs.py MODULE.cgir OUT_DIR

Writes OUT_DIR/<name>.bin for each `usm @name : f32|u32|i32[N]` (floats in [-1, 1),
integers in [0, 1000), seed 1) and prints `<name> <type>` per object. Used by
scripts/demo.sh and scripts/gpu-examples.sh so both feed the same bytes.
"""
import random
import re
import struct
import sys

src, out = sys.argv[1], sys.argv[2]
rng = random.Random(1)
pattern = r"^usm @([A-Za-z0-9_.$-]+) : (f32|u32|i32)\[(\d+)\]"
for name, ty, n in re.findall(pattern, open(src).read(), re.M):
    n = int(n)
    if ty == "f32":
        data = struct.pack(f"<{n}f", *(rng.uniform(-1, 1) for _ in range(n)))
    else:
        data = struct.pack(f"<{n}I", *(rng.randrange(1000) for _ in range(n)))
    with open(f"{out}/{name}.bin", "wb") as f:
        f.write(data)
    print(f"{name} {ty}")
