"""The exceptions of cmdgraph (raised by the native module as well as by Python code)."""

from typing import Optional


class Error(Exception):
    """The base of every cmdgraph error.

    ``message`` is the full text (for diagnostics, exactly what the ``cmdgraph`` command line
    prints, with ``file:line:col``); ``code`` is the diagnostic code such as ``"E0201"``
    when there is one, else None.
    """

    def __init__(self, message: str, code: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code

    def __str__(self) -> str:
        return self.message


class ParseError(Error):
    """The text does not parse, or a WGSL/GLSL kernel does not translate."""


class VerifyError(Error):
    """The module parses but the verifier rejects it (or an external kernel does not fit)."""


class CompileError(Error):
    """The pass pipeline or code generation failed."""


class BundleError(Error):
    """A bundle that is malformed, corrupt, of another format version, or inconsistent."""


class DeviceError(Error):
    """Vulkan, the executor or the interpreter failed while loading or running, or the
    validation layer reported a message."""


class SyclError(Error):
    """A SYCL exception of the graph API (``cmdgraph.sycl``): ``code`` is the ``errc`` name
    (``"invalid"``, ``"feature_not_supported"``, ``"kernel_not_supported"``) and ``row`` the
    row of the specification's error table (§22) that defines it (0: an error the
    specification leaves to the implementation). A run that failed (a host task that
    raised, a device error) raises it from ``Event.wait()`` with code ``"invalid"``."""

    def __init__(self, message: str, code: Optional[str] = None, row: int = 0) -> None:
        super().__init__(message, code)
        self.row = row
