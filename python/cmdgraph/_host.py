"""Host tasks written in Python: the memory a host-task node declares as NumPy arrays, and
back (called by the native module with the GIL held, on the thread that runs the node)."""

import numpy as np


def _arrays(items):
    arrays = []
    for data, size, dtype, mode in items:
        dt = np.dtype(dtype)
        if data is None:
            a = np.zeros(size // dt.itemsize, dtype=dt)
        else:
            a = np.frombuffer(bytearray(data), dtype=dt)
        if mode == "read":
            a.flags.writeable = False
        arrays.append(a)
    return arrays


def _back(arrays, items):
    return [None if item[-1] == "read" else a.tobytes() for a, item in zip(arrays, items)]


def call_arrays(fn, items):
    """``fn(*arrays)``: ``items`` holds ``(bytes or None, size in bytes, dtype, mode)`` per
    declared memory; returns the bytes to write back (None for read-only memory)."""
    arrays = _arrays(items)
    fn(*arrays)
    return _back(arrays, items)


def call_named(fn, items):
    """``fn({name: array})``: ``items`` holds ``(name, bytes or None, size, dtype, mode)``."""
    plain = [item[1:] for item in items]
    arrays = _arrays(plain)
    fn({item[0]: a for item, a in zip(items, arrays)})
    return _back(arrays, plain)
