#!/usr/bin/env python3
"""Reads the probe outputs of one device (RESULTS/O0, RESULTS/O2) and prints, per question,
how many of the 4096 lanes follow each candidate rule. Usage: compare.py INPUTS RESULTS"""
import math, os, struct, sys

inp, res = sys.argv[1], sys.argv[2]
N = 4096


def rd(path, fmt):
    b = open(path, "rb").read()
    n = struct.calcsize(fmt)
    return [struct.unpack(fmt, b[i : i + n])[0] for i in range(0, len(b) - n + 1, n)]


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def f16(x):
    try:
        return struct.unpack("<e", struct.pack("<e", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def srem(x, y):
    if y in (0, -1):
        return 0
    m = abs(x) % abs(y)
    return -m if x < 0 else m


def urem(x, y, bits):
    if y in (0, -1):
        return 0
    M = 1 << bits
    v = (x % M) % (y % M)
    return v - M if v >= M // 2 else v


def sdiv(x, y):
    if y == 0:
        return 0
    if y == -1:
        return -x if x != -(2**31) else x
    v = abs(x) // abs(y)
    return v if (x < 0) == (y < 0) else -v


I = lambda n, f: rd(os.path.join(inp, n + ".bin"), f)
for O in ("O0", "O2"):
    R = lambda n, f: rd(os.path.join(res, O, n + ".bin"), f)
    print(f"== -{O}")
    a, b, r, q, w = I("a32", "<i"), I("b32", "<i"), R("r32", "<i"), R("q32", "<i"), R("rw32", "<i")
    n = range(N)
    print("i32 rem: signed", sum(r[i] == srem(a[i], b[i]) for i in n), "unsigned", sum(r[i] == urem(a[i], b[i], 32) for i in n),
          "(they differ on", sum(srem(a[i], b[i]) != urem(a[i], b[i], 32) for i in n), "lanes)")
    print("i32 div: signed", sum(q[i] == sdiv(a[i], b[i]) for i in n))
    print("i32 rem as unsigned rem of the magnitudes with the dividend's sign: signed", sum(w[i] == srem(a[i], b[i]) for i in n))
    a6, b6, r6 = I("a64", "<q"), I("b64", "<q"), R("r64", "<q")
    print("i64 rem: signed", sum(r6[i] == srem(a6[i], b6[i]) for i in n), "unsigned", sum(r6[i] == urem(a6[i], b6[i], 64) for i in n),
          "(they differ on", sum(srem(a6[i], b6[i]) != urem(a6[i], b6[i], 64) for i in n), "lanes)")
    fx, fh, fp, fm, fs, cu = I("fx", "<f"), I("fh", "<e"), R("fp", "<f"), R("fm", "<e"), R("fs", "<e"), R("cu", "<e")
    print("cast f32 -> f16 -> f32: rounded to f16", sum(fp[i] == f16(fx[i]) for i in n), "unchanged", sum(fp[i] == fx[i] for i in n),
          "| the f16 cast stored: rounded", sum(fs[i] == f16(fx[i]) for i in n))
    print("mul(cast(x to f16), h): f16 operands", sum(fm[i] == f16(f16(fx[i]) * fh[i]) for i in n),
          "x unrounded", sum(fm[i] == f16(f32(fx[i] * fh[i])) for i in n),
          "(they differ on", sum(f16(f16(fx[i]) * fh[i]) != f16(f32(fx[i] * fh[i])) for i in n), "lanes)")
    print("h*h*h in f16: product rounded to f16", sum(cu[i] == f16(f16(fh[i] * fh[i]) * fh[i]) for i in n),
          "kept in f32", sum(cu[i] == f16(f32(f32(fh[i] * fh[i]) * fh[i])) for i in n))
    nx, m1, m2, c1, c2 = I("nx", "<f"), R("nm1", "<f"), R("nm2", "<f"), R("nc1", "<I"), R("nc2", "<I")
    nan = [i for i in n if math.isnan(nx[i])]
    print(f"NaN inputs {len(nan)}: max(abs(x), -1e6) = -1e6", sum(m1[i] == -1e6 for i in nan), "NaN", sum(math.isnan(m1[i]) for i in nan),
          "| max(x, -1e6) = -1e6", sum(m2[i] == -1e6 for i in nan), "| abs(x) > -1 true", sum(c1[i] for i in nan),
          "| x > -1 true", sum(c2[i] for i in nan))
    dt, dn, dl, dab, dad = I("dt", "<I"), R("dn", "<I"), R("dl", "<I"), R("dab", "<I"), R("dad", "<I")
    print("f32 subnormal t: neg(t) kept", sum(dn[i] == dt[i] ^ 0x80000000 for i in n), "signed zero", sum(dn[i] == (dt[i] ^ 0x80000000) & 0x80000000 for i in n),
          "| abs(t) kept", sum(dab[i] == dt[i] & 0x7FFFFFFF for i in n), "+0", sum(dab[i] == 0 for i in n),
          "| t + 0 kept", sum(dad[i] == dt[i] for i in n), "+0", sum(dad[i] == 0 for i in n),
          "| t < 0 true", sum(dl), "of", sum(x >> 31 for x in dt), "negative")
    dh, dhm, dha = I("dh", "<H"), R("dhm", "<H"), R("dha", "<H")
    h = lambda b: struct.unpack("<e", struct.pack("<H", b))[0]
    hb = lambda x: struct.unpack("<H", struct.pack("<e", x))[0]
    sub = lambda b: b & 0x7C00 == 0 and b & 0x3FF != 0
    print("f16 h*h: IEEE", sum(dhm[i] == hb(h(dh[i]) * h(dh[i])) for i in n), "subnormal results", sum(1 for i in n if sub(dhm[i])),
          "| h + 0 kept", sum(dha[i] == dh[i] for i in n), "of", sum(1 for i in n if sub(dh[i])), "subnormal")
