#!/usr/bin/env python3
"""Writes the probe inputs (raw little-endian files) into the folder given (default: .)."""
import math, os, random, struct, sys

out = sys.argv[1] if len(sys.argv) > 1 else "."
os.makedirs(out, exist_ok=True)
random.seed(20261128)
N = 4096


def w(name, fmt, vals):
    with open(os.path.join(out, name + ".bin"), "wb") as f:
        f.write(b"".join(struct.pack("<" + fmt, v) for v in vals))


def ri(bits):
    r = random.getrandbits(bits)
    return r - (1 << bits) if r >> (bits - 1) else r


def small():
    v = random.randint(1, 100)
    return v if random.random() < 0.5 else -v


def rf(lo, hi):
    """A full-precision f32 of random sign, 2^e for e in lo..hi-1."""
    e = random.randint(lo, hi - 1)
    m = 1 + random.getrandbits(23) / 2**23
    s = random.choice([-1, 1])
    return struct.unpack("<f", struct.pack("<f", s * m * 2.0**e))[0]


w("a32", "i", [ri(32) if random.random() < 0.5 else small() * random.randint(1, 1000) for _ in range(N)])
w("b32", "i", [small() if random.random() < 0.7 else ri(32) for _ in range(N)])
w("a64", "q", [ri(64) if random.random() < 0.5 else small() * random.randint(1, 10**6) for _ in range(N)])
w("b64", "q", [small() if random.random() < 0.6 else ri(64) for _ in range(N)])
w("fx", "f", [rf(-3, 10) for _ in range(N)])
w("fh", "e", [struct.unpack("<e", struct.pack("<e", rf(-3, 4)))[0] for _ in range(N)])
specials = [float("nan"), -float("nan"), float("inf"), -float("inf")]
w("nx", "f", [random.choice(specials) if random.random() < 0.5 else rf(-4, 8) for _ in range(N)])


def sub32():
    b = random.randint(1, (1 << 23) - 1) | (random.getrandbits(1) << 31)
    return struct.unpack("<f", struct.pack("<I", b))[0]


w("dt", "f", [sub32() for _ in range(N)])


def small16():
    if random.random() < 0.5:
        b = random.randint(1, 1023) | (random.getrandbits(1) << 15)
        return struct.unpack("<e", struct.pack("<H", b))[0]
    return struct.unpack("<e", struct.pack("<e", rf(-12, -5)))[0]


w("dh", "e", [small16() for _ in range(N)])
