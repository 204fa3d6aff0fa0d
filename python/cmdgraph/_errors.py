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
