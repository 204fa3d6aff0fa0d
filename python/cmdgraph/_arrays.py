"""NumPy arrays to and from the bytes of a memory object (used by the native module).

An array bound to memory object ``T[N]`` must have the dtype of ``T`` (little-endian, as
``cmdgraph interp`` reads ``.npy`` files), be C-contiguous, and hold ``N`` elements: any
shape with ``N`` elements for a scalar type, ``(..., L)`` with ``N`` rows for ``vecL<T>``.
``prepare`` checks it and returns it as it is (the native module then reads its memory by
address, straight into the executor's staging buffer); ``vec3`` elements get their fourth
(padding) lane, zero, in a padded copy. ``empty`` makes the array a memory object is read
back into (the staging buffer's bytes go straight into it); ``vec3`` memory is read as bytes
and ``from_bytes`` drops the padding lane (one copy).
"""

import numpy as np


def _shape(shape):
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def prepare(name, array, dtype, lanes, count, describe):
    """``array`` checked against memory object ``@name`` (``describe``: ``f32[1024]``): the
    array itself, C-contiguous with exactly the object's bytes (a padded copy for ``vec3``).

    Raises TypeError (not an ndarray, wrong dtype) or ValueError (not C-contiguous, wrong
    number of elements), each naming the memory object.
    """
    if not isinstance(array, np.ndarray):
        raise TypeError(f"@{name} ({describe}): expected a numpy.ndarray, got {type(array).__name__}")
    want = np.dtype(dtype)
    if array.dtype.str != want.str:
        hint = ""
        if array.dtype.byteorder == ">":
            hint = f" (big-endian data: convert with .astype('{want.str}'))"
        raise TypeError(
            f"@{name} ({describe}): the array's dtype is {array.dtype.str!r} ({array.dtype}) "
            f"but @{name} needs {want.str!r} ({want}){hint}"
        )
    if not array.flags.c_contiguous:
        raise ValueError(f"@{name} ({describe}): the array is not C-contiguous; pass np.ascontiguousarray(a)")
    if lanes > 1:
        if array.ndim < 1 or array.shape[-1] != lanes:
            raise ValueError(
                f"@{name} ({describe}): the array's shape {_shape(array.shape)} does not end in {lanes}, "
                f"the lanes of its element type (expected ({count}, {lanes}))"
            )
        rows = array.size // lanes
        if rows != count:
            raise ValueError(
                f"@{name} ({describe}): the array's shape {_shape(array.shape)} has {rows} elements of "
                f"{lanes} lanes but @{name} has {count}"
            )
    elif array.size != count:
        raise ValueError(
            f"@{name} ({describe}): the array's shape {_shape(array.shape)} has {array.size} elements "
            f"but @{name} has {count}"
        )
    expected = count * lanes * want.itemsize
    if array.nbytes != expected:
        raise ValueError(f"@{name} ({describe}): the array has {array.nbytes} bytes, expected {expected}")
    if lanes == 3:
        padded = np.zeros((count, 4), dtype=want)
        padded[:, :3] = array.reshape(count, 3)
        return padded
    return array


def empty(dtype, lanes, count):
    """A new C-contiguous array for ``count`` elements of ``lanes`` lanes (not ``vec3``)."""
    shape = (count,) if lanes == 1 else (count, lanes)
    return np.empty(shape, dtype=np.dtype(dtype))


def from_bytes(buffer, dtype, lanes, count):
    """An array over ``buffer`` (a bytearray of memory object bytes): shape ``(count,)`` or
    ``(count, lanes)``."""
    array = np.frombuffer(buffer, dtype=np.dtype(dtype))
    if lanes == 3:
        return np.ascontiguousarray(array.reshape(count, 4)[:, :3])
    if lanes > 1:
        return array.reshape(count, lanes)
    return array
