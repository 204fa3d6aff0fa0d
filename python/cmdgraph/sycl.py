"""The SYCL-like graph API (``sycl_ext_oneapi_graph``) of ``cmdgraph-sycl`` from Python
(docs/python.md, "SYCL").

Names follow SYCL's: a ``Queue`` takes command-group functions (Python callables taking a
``Handler``), a ``ModifiableGraph`` records queues or is built with ``add``, ``finalize``
makes an ``ExecutableGraph`` that ``Queue.ext_oneapi_graph`` runs. Properties are keyword
arguments (``Queue(ctx, in_order=True)``, ``g.finalize(updatable=True)``). SYCL's errors
raise ``cmdgraph.SyclError`` with ``.code`` (the ``errc`` name) and ``.row``.

>>> import numpy as np
>>> from cmdgraph import sycl
>>> q = sycl.Queue(sycl.Context(sycl.Device("llvmpipe")), in_order=True)
>>> [k] = q.get_context().register_kernels('''
... kernel @scale(%x: buf<f32, read_write>, %s: f32) {
...   %i = global_id 0
...   %v = load %x[%i]
...   %r = mul %v, %s
...   store %x[%i], %r
... }''')
>>> x = sycl.malloc_device(4, np.float32, q)
>>> x.copy_from(np.arange(4, dtype=np.float32))
>>> g = sycl.ModifiableGraph(q)
>>> g.begin_recording(q)
>>> _ = q.parallel_for(k, 4, x, 2.0)
>>> g.end_recording()
>>> q.ext_oneapi_graph(g.finalize()).wait()
>>> x.to_numpy()
array([0., 2., 4., 6.], dtype=float32)

Objects of this module belong to the thread that made them.
"""

import atexit
import os
import shutil
import tempfile

from ._cmdgraph import sycl as _native
from ._errors import SyclError

Accessor = _native.Accessor
Buffer = _native.Buffer
Context = _native.Context
Device = _native.Device
DeviceGlobal = _native.DeviceGlobal
DynamicCommandGroup = _native.DynamicCommandGroup
DynamicParameter = _native.DynamicParameter
Event = _native.Event
ExecutableGraph = _native.ExecutableGraph
Handler = _native.Handler
Kernel = _native.Kernel
LocalAccessor = _native.LocalAccessor
ModifiableGraph = _native.ModifiableGraph
NdRange = _native.NdRange
Node = _native.Node
Ptr = _native.Ptr
Queue = _native.Queue
Usm = _native.Usm
malloc = _native.malloc
malloc_device = _native.malloc_device
malloc_host = _native.malloc_host
malloc_shared = _native.malloc_shared

# Vulkan contexts without bundle_dir= compile into this process's own directory (the native
# module names it), removed at exit.
atexit.register(shutil.rmtree, os.path.join(tempfile.gettempdir(), f"cmdgraph-sycl-bundles-{os.getpid()}"), True)

#: ``command_graph`` as SYCL spells the modifiable graph's constructor.
command_graph = ModifiableGraph


__all__ = [
    "Accessor",
    "Buffer",
    "Context",
    "Device",
    "DeviceGlobal",
    "DynamicCommandGroup",
    "DynamicParameter",
    "Event",
    "ExecutableGraph",
    "Handler",
    "Kernel",
    "LocalAccessor",
    "ModifiableGraph",
    "NdRange",
    "Node",
    "Ptr",
    "Queue",
    "SyclError",
    "Usm",
    "command_graph",
    "malloc",
    "malloc_device",
    "malloc_host",
    "malloc_shared",
]
