#!/usr/bin/env python3
"""Data files for the `cmdgraph interp` lit tests, made and read independently of cmdgraph.

Standard library only (no NumPy on the test machines). The .npy writer follows the NumPy
format documentation (version 1.0, header padded with spaces to a multiple of 64 bytes and
ended by a newline, as numpy.save writes it); the reader parses the header with
ast.literal_eval, as NumPy does.

  data.py make PATH DTYPE COUNT EXPR [SHAPE]   write COUNT values EXPR(i), i = 0..COUNT-1,
                                               as .npy (PATH ends in .npy) or raw bytes;
                                               SHAPE like 4,3 (default COUNT,)
  data.py dump PATH [DTYPE]                    print the header (npy) and every value
  data.py fnv PATH                             FNV-1a 64 of the file's bytes
  data.py npy-header PATH TEXT [MAJOR]         write an .npy file with header TEXT, no data
"""

import ast
import math
import struct
import sys

FORMATS = {"<f4": "f", "<f2": "e", "<i4": "i", "<u4": "I", "<i8": "q", "<u8": "Q", "|b1": "?"}


def npy_bytes(descr, shape, data, major=1):
    dims = ", ".join(str(d) for d in shape)
    if len(shape) == 1:
        dims += ","
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims)
    pre = 10 if major == 1 else 12
    pad = (64 - (pre + len(header) + 1) % 64) % 64
    header = (header + " " * pad + "\n").encode("latin1")
    size = struct.pack("<H", len(header)) if major == 1 else struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes([major, 0]) + size + header + data


def read_npy(blob):
    assert blob[:6] == b"\x93NUMPY", "not an npy file"
    major = blob[6]
    if major == 1:
        (n,) = struct.unpack("<H", blob[8:10])
        start = 10
    else:
        (n,) = struct.unpack("<I", blob[8:12])
        start = 12
    header = ast.literal_eval(blob[start:start + n].decode("latin1"))
    return header, blob[start + n:]


def make(path, descr, count, expr, shape=None):
    fmt = FORMATS[descr]
    values = [eval(expr, {"math": math, "i": i}) for i in range(int(count))]
    data = struct.pack("<%d%s" % (len(values), fmt), *values)
    if path.endswith(".npy"):
        dims = [int(d) for d in shape.split(",")] if shape else [int(count)]
        data = npy_bytes(descr, dims, data)
    with open(path, "wb") as f:
        f.write(data)


def dump(path, descr=None):
    blob = open(path, "rb").read()
    if path.endswith(".npy"):
        header, blob = read_npy(blob)
        print("descr=%s fortran_order=%s shape=%s" % (header["descr"], header["fortran_order"], header["shape"]))
        descr = header["descr"]
    fmt = FORMATS[descr]
    n = len(blob) // struct.calcsize(fmt)
    print("values: " + " ".join(repr(v) for v in struct.unpack("<%d%s" % (n, fmt), blob)))


def fnv(path):
    h = 0xCBF29CE484222325
    for b in open(path, "rb").read():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    print("%016x" % h)


def npy_header(path, text, major="1"):
    major = int(major)
    raw = text.encode("latin1")
    size = struct.pack("<H", len(raw)) if major == 1 else struct.pack("<I", len(raw))
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY" + bytes([major, 0]) + size + raw)


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    {"make": make, "dump": dump, "fnv": fnv, "npy-header": npy_header}[command](*args)
