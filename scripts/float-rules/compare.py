#!/usr/bin/env python3
"""Compares a device's outputs of scripts/float-rules/floats.cgir with the interpreter's.

usage: compare.py DIR PREFIX  (DIR holds ref_*.bin, ref2_*.bin from `cmdgraph interp` with
`--fma once` and `--fma twice`, and PREFIX_*.bin from `cmdgraph run` on the device)

Prints, per op: how many of the 65536 results equal the interpreter's bits, and the largest
distance in ulp (units in the last place of the interpreter's result) and the largest
absolute difference for the rest. For fma:
how many equal the once-rounded and the twice-rounded result.
"""
import struct
import sys


def load(path, fmt):
    data = open(path, "rb").read()
    size = struct.calcsize(fmt)
    return [struct.unpack_from(fmt, data, i)[0] for i in range(0, len(data), size)], data


def bits(data, size):
    return [data[i:i + size] for i in range(0, len(data), size)]


def ordered(b, size):
    """Float bits as an integer line where neighbouring floats differ by 1."""
    v = int.from_bytes(b, "little", signed=False)
    sign = 1 << (8 * size - 1)
    return -(v & ~sign) if v & sign else v


def ulp_diff(x, y, size):
    return abs(ordered(x, size) - ordered(y, size))


def main():
    d, prefix = sys.argv[1], sys.argv[2]
    ops = [("yf", "fma f32", "<f", 4), ("yh", "fma f16", "<e", 2), ("ym", "mul then add", "<f", 4),
           ("yd", "div", "<f", 4), ("ys", "sqrt", "<f", 4), ("yr", "rsqrt", "<f", 4), ("ye", "exp", "<f", 4),
           ("yl", "log", "<f", 4), ("yt", "tanh", "<f", 4)]
    for name, what, fmt, size in ops:
        gv, got = load(f"{d}/{prefix}_{name}.bin", fmt)
        rv, ref = load(f"{d}/ref_{name}.bin", fmt)
        worst_abs = max((abs(a - b) for a, b in zip(gv, rv) if a == a and b == b), default=0.0)
        g, r = bits(got, size), bits(ref, size)
        same = sum(1 for a, b in zip(g, r) if a == b)
        worst = max((ulp_diff(a, b, size) for a, b in zip(g, r) if a != b), default=0)
        line = f"{what:14} equal {same:6}/{len(r)}  worst {worst} ulp, {worst_abs:.2e} absolute"
        if name in ("yf", "yh"):
            _, ref2 = load(f"{d}/ref2_{name}.bin", fmt)
            r2 = bits(ref2, size)
            twice = sum(1 for a, b in zip(g, r2) if a == b)
            differ = sum(1 for a, b in zip(r, r2) if a != b)
            neither = sum(1 for a, b, c in zip(g, r, r2) if a != b and a != c)
            line += f"  | roundings differ on {differ}: once {same}, twice {twice}, neither {neither}"
        print(line)


main()
