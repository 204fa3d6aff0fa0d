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

/// How a multi-device graph runs on one executor per device: in *stages*. In each stage,
/// every device runs one single-device graph of its nodes (named by [`stage_graph_name`]);
/// between stages the host makes the transfers the next stages need. A node's stage is the
/// first in which everything before it is done: a predecessor on its own device in the same
/// stage or earlier, one on another device or a transfer in an earlier stage. Ordering-only
/// nodes (empty, barrier) are looked through: their predecessors order their successors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stages {
    /// Number of stages.
    pub count: u32,
    /// By node index: the stage of a node that runs on a device, or the stage a transfer
    /// runs before (the host makes it once the stages before have finished; `count` for
    /// one after the last); `None` for ordering-only nodes.
    pub stage: Vec<Option<u32>>,
    /// By node index: the nodes that order it, ordering-only nodes looked through.
    pub preds: Vec<Vec<Handle<Node>>>,
    /// The transfers, in an order that respects the edges between them.
    pub transfers: Vec<Handle<Node>>,
    /// The single-device graphs: (stage, device) pairs that have nodes, in stage order.
    pub parts: Vec<(u32, u32)>,
}

/// The name of the graph of `graph`'s nodes that device `device` runs in stage `stage`.
pub fn stage_graph_name(graph: &str, stage: u32, device: u32) -> String {
    format!("{graph}.s{stage}.d{device}")
}

/// The stages of `graph` (see [`Stages`]), or why it cannot run in stages: a node kind the
/// stages do not take yet, or a cycle. `order` is a topological order of its node indices.
pub fn stages(m: &Module, graph: &Graph, order: &[usize]) -> Result<Stages, (Handle<Node>, String)> {
    let n = graph.nodes.len();
    let mut direct: Vec<Vec<Handle<Node>>> = vec![Vec::new(); n];
    for (_, e) in graph.edges.iter() {
        if let Some(list) = direct.get_mut(e.to.index()) {
            list.push(e.from);
        }
    }
    let mut preds: Vec<Vec<Handle<Node>>> = vec![Vec::new(); n];
    let mut stage: Vec<Option<u32>> = vec![None; n];
    let mut transfers = Vec::new();
    let mut parts = std::collections::BTreeSet::new();
    for &i in order {
        let Some(h) = Handle::<Node>::from_usize(i) else { continue };
        let Some(node) = graph.nodes.try_get(h) else { continue };
        // Predecessors, ordering-only ones replaced by theirs (already computed).
        let mut mine: Vec<Handle<Node>> = Vec::new();
        for &p in &direct[i] {
            match graph.nodes.try_get(p).map(|x| &x.kind) {
                Some(NodeKind::Empty | NodeKind::Barrier { .. }) => mine.extend(preds[p.index()].iter().copied()),
                _ => mine.push(p),
            }
        }
        mine.sort_unstable();
        mine.dedup();
        let is_transfer = transfer(m, graph, h).is_some();
        match &node.kind {
            NodeKind::Empty | NodeKind::Barrier { .. } => {}
            NodeKind::Kernel(_)
            | NodeKind::Memcpy { .. }
            | NodeKind::Memset { .. }
            | NodeKind::Memfill { .. }
            | NodeKind::Prefetch { .. }
            | NodeKind::Memadvise { .. }
            | NodeKind::AsyncMalloc { .. }
            | NodeKind::AsyncFree { .. }
            | NodeKind::Dynamic { .. } => {
                if let NodeKind::Dynamic { dcg } = &node.kind {
                    let host = graph.dcgs.try_get(*dcg).is_some_and(|d| {
                        d.alternatives.iter().any(|a| !matches!(a, crate::graph::Alternative::Kernel(_)))
                    });
                    if host {
                        return Err((
                            h,
                            "a dynamic command group of host tasks in a multi-device graph does not run on several devices yet (groups of kernels do)".into(),
                        ));
                    }
                }
                let d = graph.node_device(h);
                // A transfer's stage is the one it runs before: after every device node it
                // follows (the stage after theirs) and every transfer it follows.
                let mut s = 0u32;
                for &p in &mine {
                    let ps = stage[p.index()].unwrap_or(0);
                    let from_transfer = transfer(m, graph, p).is_some();
                    let next = match (is_transfer, from_transfer) {
                        (true, true) | (false, true) => ps,
                        (true, false) => ps + 1,
                        (false, false) if graph.node_device(p) != d => ps + 1,
                        (false, false) => ps,
                    };
                    s = s.max(next);
                }
                stage[i] = Some(s);
                if is_transfer {
                    transfers.push(h);
                } else {
                    parts.insert((s, d));
                }
            }
            other => {
                return Err((
                    h,
                    format!(
                        "a {} node in a multi-device graph does not run on several devices yet (kernels, dynamic command groups of kernels, copies, fills, allocations and ordering nodes do)",
                        other.node_type().name()
                    ),
                ))
            }
        }
        preds[i] = mine;
    }
    let runs = parts.iter().map(|&(s, _)| s + 1).max().unwrap_or(0);
    let count = transfers.iter().filter_map(|t: &Handle<Node>| stage[t.index()]).max().unwrap_or(0).max(runs);
    Ok(Stages { count, stage, preds, transfers, parts: parts.into_iter().collect() })
}
