"""NumPy arrays to and from the bytes of a memory object (used by the native module).

An array bound to memory object ``T[N]`` must have the dtype of ``T`` (little-endian, as
``cmdgraph interp`` reads ``.npy`` files), be C-contiguous, and hold ``N`` elements: any
shape with ``N`` elements for a scalar type, ``(..., L)`` with ``N`` rows for ``vecL<T>``.
``prepare`` checks it and returns it as it is (the native module then reads its memory by
address, straight into the executor's staging buffer); ``vec3`` elements get their fourth
(padding) lane, zero, in a padded copy. ``empty`` makes the array a memory object is read
back into (the staging buffer's bytes go straight into it); ``vec3`` memory is read as bytes
and ``from_bytes`` drops the padding lane (one copy).

Arrays of other libraries (PyTorch, JAX, CuPy, ...) come in through DLPack: an object with
``__dlpack__`` that is not an ndarray becomes a NumPy view of the same host memory
(``np.from_dlpack``, no copy) and is checked as an ndarray. Memory on a GPU of another API
(a CUDA tensor) is refused with a ``TypeError`` naming the device: cmdgraph's memory objects
live on its own Vulkan device, so such an array has to come through the host anyway.
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
        if not hasattr(array, "__dlpack__"):
            raise TypeError(
                f"@{name} ({describe}): expected a numpy.ndarray or an array with __dlpack__, "
                f"got {type(array).__name__}"
            )
        array = _from_dlpack(name, describe, array)
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
        raise ValueError(
            f"@{name} ({describe}): the array is not C-contiguous; pass np.ascontiguousarray(a) "
            "(or t.contiguous() for a tensor)"
        )
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


# DLPack device types (dlpack.h, DLDeviceType) that name host memory NumPy can view.
_DLPACK_HOST = {1: "CPU", 3: "CUDA pinned host", 13: "CUDA managed"}
_DLPACK_DEVICES = {2: "CUDA", 4: "OpenCL", 7: "Vulkan", 8: "Metal", 9: "VPI", 10: "ROCm", 14: "oneAPI"}


def _from_dlpack(name, describe, tensor):
    """A NumPy view of ``tensor``'s host memory through DLPack (no copy), or a TypeError
    naming the memory object and saying what to do."""
    where = f"@{name} ({describe})"
    kind = type(tensor).__name__
    device = getattr(tensor, "__dlpack_device__", None)
    if device is not None:
        try:
            dev_type, dev_id = device()
        except Exception as e:  # the producer's own refusal, passed on with the memory object
            raise TypeError(f"{where}: the {kind}'s __dlpack_device__ failed: {e}") from e
        dev_type = int(dev_type)
        if dev_type not in _DLPACK_HOST:
            label = _DLPACK_DEVICES.get(dev_type, f"device type {dev_type}")
            raise TypeError(
                f"{where}: the {kind} lives in {label} memory (device {dev_id}); cmdgraph binds host "
                "arrays and copies them to its own Vulkan device: move it to the host first "
                "(t.cpu(), or np.asarray(t.get()) for CuPy)"
            )
    if not hasattr(np, "from_dlpack"):
        raise TypeError(f"{where}: DLPack input needs NumPy 1.22 or newer (found {np.__version__})")
    try:
        return np.from_dlpack(tensor)
    except Exception as e:  # a tensor that cannot be exported as it is (autograd, dtype)
        raise TypeError(f"{where}: the {kind} could not be read through DLPack: {e}") from e


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
