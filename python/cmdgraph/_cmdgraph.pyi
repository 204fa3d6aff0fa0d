"""Type stubs of the native module `cmdgraph._cmdgraph` (re-exported by `cmdgraph`)."""

import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Protocol, Sequence, Tuple, Union

import numpy as np

__version__: str

_Path = Union[str, "os.PathLike[str]"]
_Passes = Union[None, str, Sequence[str]]
class _DLPackTensor(Protocol):
    """An array of another library (PyTorch, JAX, ...) in host memory, taken through DLPack."""

    def __dlpack__(self, **kwargs: Any) -> Any: ...
    def __dlpack_device__(self) -> Tuple[int, int]: ...

_Arrays = Mapping[str, Union[np.ndarray, _DLPackTensor]]
# A dynamic parameter's value: a scalar of its type, a usm pointer ("@x" or ("@x", byte
# offset)) or a buffer for an accessor ("@b").
_Value = Union[bool, int, float, str, Tuple[str, int]]

class Module:
    """A module of cmdgraph IR, parsed from text (`parse`, `parse_file`)."""

    @property
    def filename(self) -> str:
        """The file name diagnostics show."""
    @property
    def graphs(self) -> List[str]:
        """The graph names, without `@`."""
    @property
    def memories(self) -> List[Tuple[str, str, str]]:
        """`(name, type, kind)` of every memory object: `("x", "f32[1024]", "usm")`."""
    def text(self) -> str:
        """The canonical text (what `cmdgraph fmt` prints)."""
    def verify(self, *, allow_races: bool = False, external: bool = True) -> str:
        """Verifies as `cmdgraph verify`; raises VerifyError; returns rendered warnings."""
    def dot(self, graph: Optional[str] = None, *, verbose: bool = False, legend: bool = True) -> str:
        """Graphviz DOT, as `cmdgraph dot` writes it."""
    def _repr_svg_(self) -> Optional[str]:
        """SVG through Graphviz `dot -Tsvg` (None without Graphviz or for a broken module)."""
    def compile(
        self,
        passes: _Passes = None,
        *,
        opt_level: int = 2,
        allow_races: bool = False,
        progress: Union[None, bool, Callable[[str, int, int, str], Any]] = None,
    ) -> Bundle:
        """Compiles in process: the bytes of `cmdgraph compile` with the same options.
        `progress(phase, done, total, what)` is called at each step; Ctrl-C stops the
        compile with KeyboardInterrupt."""
    def interpret(
        self,
        inputs: Optional[_Arrays] = None,
        *,
        graph: Optional[str] = None,
        runs: int = 1,
        outputs: Optional[Sequence[str]] = None,
        fma: str = "once",
        params: Optional[Mapping[str, _Value]] = None,
        active: Optional[Mapping[str, int]] = None,
        host_tasks: Optional[Mapping[str, Callable[[Dict[str, np.ndarray]], Any]]] = None,
    ) -> Dict[str, np.ndarray]:
        """Runs a graph on the reference interpreter; returns the memory objects."""

class Bundle:
    """A compiled bundle, checked as the executor loads it; `bytes(bundle)` is the file."""

    @property
    def graphs(self) -> List[str]: ...
    @property
    def content_hash(self) -> str: ...
    @property
    def source(self) -> str:
        """The module as compiled (canonical text)."""
    @property
    def optimized(self) -> str:
        """The module after the passes (what the executor runs)."""
    def save(self, path: _Path) -> None:
        """Writes the bundle's bytes to `path`."""
    def __bytes__(self) -> bytes: ...
    def __len__(self) -> int: ...

class Device:
    """A Vulkan 1.3 device: the default one, or one by index or name substring."""

    def __init__(self, device: Union[None, int, str] = None, *, validation: bool = False) -> None: ...
    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def index(self) -> int: ...
    def load(
        self,
        bundle: Bundle,
        *,
        profile: bool = False,
        host_tasks: Optional[Mapping[str, Callable[[Dict[str, np.ndarray]], Any]]] = None,
    ) -> Executable:
        """Creates the bundle's pipelines on this device."""

class Executable:
    """A bundle loaded on a device; memory persists between runs."""

    @property
    def graphs(self) -> List[str]: ...
    @property
    def device_name(self) -> str: ...
    @property
    def warnings(self) -> List[str]: ...
    @property
    def validation(self) -> bool:
        """Whether the validation layer is on."""
    def run(
        self,
        inputs: Optional[_Arrays] = None,
        *,
        graph: Optional[str] = None,
        runs: int = 1,
        outputs: Optional[Sequence[str]] = None,
        params: Optional[Mapping[str, _Value]] = None,
        active: Optional[Mapping[str, int]] = None,
    ) -> Dict[str, np.ndarray]:
        """Binds the arrays, runs the graph, returns the memory objects as new arrays."""
    def profile(self, graph: Optional[str] = None) -> Dict[str, object]:
        """Per-node device times of the last run (needs `profile=True` and `enable_profiling`)."""
    def set_communicator(self, comm: object) -> None:
        """Runs communication nodes through `comm` (rank, size, send, recv, allgather)."""
    def _native_seconds(
        self,
        runs: int,
        inputs: Optional[_Arrays] = None,
        *,
        graph: Optional[str] = None,
        outputs: Optional[Sequence[str]] = None,
    ) -> float:
        """Host seconds of `runs` bind/run/wait/read iterations through the Rust API alone."""

def parse(text: str, filename: str = "<string>") -> Module:
    """Parses IR text; raises ParseError."""

def parse_file(path: _Path) -> Module:
    """Reads and parses a file; raises ParseError or OSError."""

def load_bundle(source: Union[_Path, bytes, bytearray, Bundle]) -> Bundle:
    """Loads a bundle from a path or bytes; raises BundleError or OSError."""

def devices() -> List[Device]:
    """Every Vulkan device the executor can use."""

def load_on_devices(
    bundle: Bundle,
    devices: Sequence[Device],
    *,
    host_tasks: Optional[Mapping[str, Callable[[Dict[str, np.ndarray]], Any]]] = None,
) -> Executable:
    """Loads a bundle whose graphs span devices: device N of its module on `devices[N]`."""
