//! Where nodes run and memory lives in a multi-device graph (docs/multi-device.md): the
//! questions DOT, diff, the verifier and the runtimes ask of `device(N)` and `home(N)`.

use crate::graph::{Graph, MemRef, Node, NodeKind};
use crate::module::{MemoryKind, Module};
use crate::Handle;

/// The device memory `r` lives on in `graph`: its `home(N)`, the graph's device when it has
/// none, the allocating node's device for a graph allocation; `None` for `replicated`
/// memory and `device_global`s (a copy or instance on every device).
pub fn memory_device(m: &Module, graph: &Graph, r: MemRef) -> Option<u32> {
    match r {
        MemRef::Memory(h) => match m.memories.try_get(h) {
            Some(mem) if matches!(mem.kind, MemoryKind::DeviceGlobal(_)) => None,
            Some(mem) => mem.home.device_in(graph.device),
            None => Some(graph.device),
        },
        MemRef::Alloc(node) => Some(graph.node_device(node)),
    }
}

/// The devices a `memcpy` node moves bytes between, (source, destination), when they
/// differ: the node is a transfer. `None` for any other node.
pub fn transfer(m: &Module, graph: &Graph, node: Handle<Node>) -> Option<(u32, u32)> {
    let NodeKind::Memcpy { dst, src, .. } = &graph.nodes.try_get(node)?.kind else { return None };
    let (s, d) = (memory_device(m, graph, src.base)?, memory_device(m, graph, dst.base)?);
    (s != d).then_some((s, d))
}
