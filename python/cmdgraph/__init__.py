"""cmdgraph from Python: parse, verify, draw and compile command graphs, and run them on
Vulkan or on the reference interpreter with NumPy arrays (docs/python.md).

>>> import cmdgraph, numpy as np
>>> m = cmdgraph.parse_file("examples/saxpy_chain.cgir")
>>> exe = cmdgraph.Device().load(m.compile())
>>> x = np.random.rand(1024).astype(np.float32)
>>> out = exe.run({"x": x})
"""

from ._errors import BundleError, CompileError, DeviceError, Error, ParseError, SyclError, VerifyError
from ._cmdgraph import (
    Bundle,
    Device,
    Executable,
    Module,
    __version__,
    devices,
    load_bundle,
    load_on_devices,
    parse,
    parse_file,
)

__all__ = [
    "Bundle",
    "BundleError",
    "CompileError",
    "Device",
    "DeviceError",
    "Error",
    "Executable",
    "Module",
    "ParseError",
    "SyclError",
    "VerifyError",
    "__version__",
    "devices",
    "load_bundle",
    "load_on_devices",
    "parse",
    "parse_file",
    "sycl",
]

from . import sycl  # noqa: E402  (the SYCL-like graph API)
