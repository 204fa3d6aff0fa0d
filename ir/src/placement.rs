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

/// Whether `graph` spans devices: a node runs on another device than the graph's, or a
/// copy moves memory between two devices (a transfer), so it runs in stages.
pub fn spans_devices(m: &Module, graph: &Graph) -> bool {
    graph.is_multi_device() || graph.nodes.handles().any(|h| transfer(m, graph, h).is_some())
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
    /// By node index: the device it runs on ([`run_device`]; the graph's for ordering nodes).
    pub device: Vec<u32>,
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

/// The (stage, device) of `candidate` when it is a stage graph name of `graph`
/// ([`stage_graph_name`]).
pub fn parse_stage_graph_name(graph: &str, candidate: &str) -> Option<(u32, u32)> {
    let rest = candidate.strip_prefix(graph)?.strip_prefix(".s")?;
    let (stage, device) = rest.split_once(".d")?;
    let number = |t: &str| (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())).then(|| t.parse::<u32>().ok())?;
    let (s, d) = (number(stage)?, number(device)?);
    (stage_graph_name(graph, s, d) == candidate).then_some((s, d))
}

/// How many devices `module` names: one past the highest `device(N)` of a node or graph and
/// `home(N)` of a memory object (1 for a module that names none).
pub fn devices_named(module: &Module) -> u32 {
    let nodes = module.graphs.iter().flat_map(|(_, g)| g.nodes.iter().filter_map(|(_, n)| n.device).chain([g.device]));
    let homes = module.memories.iter().filter_map(|(_, m)| match m.home {
        crate::module::Home::Device(d) => Some(d),
        _ => None,
    });
    nodes.chain(homes).max().map_or(1, |d| d.saturating_add(1))
}

/// Whether `name` is a stage graph (`@g.sS.dD`) of another graph of `m`: it runs as part
/// of that graph, never alone.
pub fn is_stage_graph(m: &Module, name: &str) -> bool {
    m.graphs.iter().any(|(_, g)| parse_stage_graph_name(&g.name, name).is_some())
}

/// The device node `node` of `graph` runs on in stages: its own ([`Graph::node_device`]),
/// except for a host task or native command, which runs beside the device whose memory it
/// touches (the graph's device when it touches none, or only replicated memory). `Err`
/// says why a host task touching memory of two devices cannot run.
pub fn run_device(m: &Module, graph: &Graph, node: Handle<Node>) -> Result<u32, String> {
    let Some(n) = graph.nodes.try_get(node) else { return Ok(graph.device) };
    let (NodeKind::HostTask(t) | NodeKind::Native(t)) = &n.kind else { return Ok(graph.node_device(node)) };
    let devices: std::collections::BTreeSet<u32> =
        t.access.iter().filter_map(|a| memory_device(m, graph, a.mem)).collect();
    match devices.len() {
        0 => Ok(graph.device),
        1 => Ok(devices.into_iter().next().unwrap_or(graph.device)),
        _ => Err(format!(
            "the {} touches memory of devices {}: it runs beside one device; transfer the memory to one of them first",
            n.kind.node_type().name(),
            devices.iter().map(u32::to_string).collect::<Vec<_>>().join(" and ")
        )),
    }
}

/// A transfer inside body graph `b` of a conditional node or anything it runs: (body, node).
fn body_transfer(
    m: &Module,
    b: Handle<Graph>,
    seen: &mut std::collections::BTreeSet<Handle<Graph>>,
) -> Option<(String, String)> {
    if !seen.insert(b) {
        return None;
    }
    let body = m.graphs.try_get(b)?;
    for (h, n) in body.nodes.iter() {
        if transfer(m, body, h).is_some() {
            return Some((body.name.clone(), n.name.clone()));
        }
        let inner: &[Handle<Graph>] = match &n.kind {
            NodeKind::Subgraph { graph } => std::slice::from_ref(graph),
            NodeKind::Conditional { bodies, .. } => bodies,
            _ => &[],
        };
        if let Some(found) = inner.iter().find_map(|&c| body_transfer(m, c, seen)) {
            return Some(found);
        }
    }
    None
}

/// Why node `h` (not an ordering node) cannot run in a stage of one device, if it cannot.
fn stage_refusal(m: &Module, graph: &Graph, h: Handle<Node>) -> Option<String> {
    match &graph.nodes[h].kind {
        NodeKind::Kernel(_)
        | NodeKind::Memcpy { .. }
        | NodeKind::Memset { .. }
        | NodeKind::Memfill { .. }
        | NodeKind::Prefetch { .. }
        | NodeKind::Memadvise { .. }
        | NodeKind::AsyncMalloc { .. }
        | NodeKind::AsyncFree { .. }
        | NodeKind::HostTask(_)
        | NodeKind::Native(_) => None,
        NodeKind::Dynamic { dcg } => graph
            .dcgs
            .try_get(*dcg)
            .is_some_and(|d| d.alternatives.iter().any(|a| !matches!(a, crate::graph::Alternative::Kernel(_))))
            .then(|| "a dynamic command group of host tasks in a multi-device graph does not run on several devices yet (groups of kernels do)".into()),
        NodeKind::Comm(_) => Some(
            "communication between ranks in a graph split across devices does not run yet: give each rank one device".into(),
        ),
        NodeKind::Conditional { bodies, .. } => {
            let mut seen = std::collections::BTreeSet::new();
            bodies.iter().find_map(|&b| body_transfer(m, b, &mut seen)).map(|(body, node)| {
                format!(
                    "its body @{body} moves memory between devices (%{node}); a conditional node runs on one device: make the transfer before or after it"
                )
            })
        }
        other => Some(format!(
            "a {} node in a multi-device graph does not run on several devices yet (inline sub-graphs first)",
            other.node_type().name()
        )),
    }
}

/// The stages of `graph` (see [`Stages`]), or why it cannot run in stages: a node kind the
/// stages do not take, a host task touching memory of two devices, a conditional node whose
/// bodies move memory between devices, or a cycle. `order` is a topological order of its
/// node indices.
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
    let mut device: Vec<u32> = vec![graph.device; n];
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
        if !matches!(node.kind, NodeKind::Empty | NodeKind::Barrier { .. }) {
            if let Some(why) = stage_refusal(m, graph, h) {
                return Err((h, why));
            }
            let is_transfer = transfer(m, graph, h).is_some();
            let d = run_device(m, graph, h).map_err(|why| (h, why))?;
            device[i] = d;
            // A transfer's stage is the one it runs before: after every device node it
            // follows (the stage after theirs) and every transfer it follows.
            let mut s = 0u32;
            for &p in &mine {
                let ps = stage[p.index()].unwrap_or(0);
                let from_transfer = transfer(m, graph, p).is_some();
                let next = match (is_transfer, from_transfer) {
                    (true, true) | (false, true) => ps,
                    (true, false) => ps + 1,
                    (false, false) if device[p.index()] != d => ps + 1,
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
        preds[i] = mine;
    }
    let runs = parts.iter().map(|&(s, _)| s + 1).max().unwrap_or(0);
    let count = transfers.iter().filter_map(|t: &Handle<Node>| stage[t.index()]).max().unwrap_or(0).max(runs);
    Ok(Stages { count, stage, device, preds, transfers, parts: parts.into_iter().collect() })
}
