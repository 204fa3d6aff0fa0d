//! The schedule of a graph: segments of stages (docs/abi.md, "Schedule"), taken from the
//! bundle and checked against the graph's edges, or planned here when the bundle has none.

use crate::error::{ExecError, Result};
use cmdgraph_ir::bundle::Segment;
use cmdgraph_ir::csr::Csr;
use cmdgraph_ir::{Graph, Handle, Node, NodeKind, NodeType};

/// A schedule over node handles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seg {
    /// Stages of mutually independent device nodes.
    Device(Vec<Vec<Handle<Node>>>),
    /// One host task.
    Host(Handle<Node>),
    /// One `while` node: chunks of predicated rounds, the host deciding after each chunk
    /// whether to submit another (docs/conditional.md, "Executor").
    Loop(Handle<Node>),
}

/// Whether a node runs on the host (a host task, a dynamic group of host tasks, or a
/// communication node, which runs as a host task).
pub fn is_host(graph: &Graph, node: Handle<Node>) -> bool {
    matches!(graph.node_type(node), NodeType::HostTask | NodeType::Communication)
}

/// Whether a node is a `while` node (a segment of its own).
pub fn is_loop(graph: &Graph, node: Handle<Node>) -> bool {
    matches!(graph.nodes[node].kind, NodeKind::Conditional { kind: cmdgraph_ir::graph::CondKind::While, .. })
}

/// Plans the schedule: ready device nodes form a stage; when only host tasks are ready, each
/// becomes a segment. Nodes in one stage are independent because each had all predecessors
/// in earlier stages.
pub fn plan(graph: &Graph) -> Result<Vec<Seg>> {
    let n = graph.nodes.len();
    let mut indeg = vec![0usize; n];
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (_, e) in graph.edges.iter() {
        let (f, t) = (e.from.index(), e.to.index());
        if f >= n || t >= n {
            return Err(ExecError::Ir("edge to a missing node".into()));
        }
        indeg[t] += 1;
        succ[f].push(t);
    }
    let handles: Vec<Handle<Node>> = graph.nodes.handles().collect();
    let mut done = vec![false; n];
    let mut out = Vec::new();
    let mut stages: Vec<Vec<Handle<Node>>> = Vec::new();
    let mut finished = 0;
    while finished < n {
        let ready: Vec<usize> = (0..n).filter(|&i| !done[i] && indeg[i] == 0).collect();
        let device: Vec<usize> =
            ready.iter().copied().filter(|&i| !is_host(graph, handles[i]) && !is_loop(graph, handles[i])).collect();
        let take = if device.is_empty() {
            if ready.is_empty() {
                return Err(ExecError::Ir("the graph has a cycle".into()));
            }
            let stages = std::mem::take(&mut stages);
            out.extend(split_for(&succ, &ready, &handles, stages).into_iter().map(Seg::Device));
            out.extend(ready.iter().map(|&i| match is_loop(graph, handles[i]) {
                true => Seg::Loop(handles[i]),
                false => Seg::Host(handles[i]),
            }));
            ready
        } else {
            stages.push(device.iter().map(|&i| handles[i]).collect());
            device
        };
        for &i in &take {
            done[i] = true;
            finished += 1;
            for &s in &succ[i] {
                indeg[s] -= 1;
            }
        }
    }
    if !stages.is_empty() {
        out.push(Seg::Device(stages));
    }
    Ok(out)
}

/// The device segment `stages` before the host tasks `hosts`: the nodes that lead to them
/// first, then the rest (submitted before the host tasks run, which wait only for the
/// first), as codegen splits (codegen/src/schedule.rs). Empty parts are left out.
fn split_for(
    succ: &[Vec<usize>],
    hosts: &[usize],
    handles: &[Handle<Node>],
    stages: Vec<Vec<Handle<Node>>>,
) -> Vec<Vec<Vec<Handle<Node>>>> {
    let mut member = vec![false; handles.len()];
    for h in stages.iter().flatten() {
        member[h.index()] = true;
    }
    // Later stages first: a node leads when a successor is one of the host tasks or leads.
    let mut leads = vec![false; handles.len()];
    let is_host: std::collections::BTreeSet<usize> = hosts.iter().copied().collect();
    for h in stages.iter().rev().flat_map(|s| s.iter()) {
        let i = h.index();
        leads[i] = succ[i].iter().any(|&s| is_host.contains(&s) || (member[s] && leads[s]));
    }
    let part = |want: bool| -> Vec<Vec<Handle<Node>>> {
        stages
            .iter()
            .map(|s| s.iter().copied().filter(|h| leads[h.index()] == want).collect::<Vec<_>>())
            .filter(|s| !s.is_empty())
            .collect()
    };
    [part(true), part(false)].into_iter().filter(|p| !p.is_empty()).collect()
}

/// Converts the bundle's schedule to handles and checks it: every node exactly once, host
/// tasks alone in host segments, and every edge going to a later stage.
pub fn from_plan(graph: &Graph, segments: &[Segment]) -> Result<Vec<Seg>> {
    let n = graph.nodes.len();
    let mut pos: Vec<Option<(usize, usize)>> = vec![None; n];
    // One map for the whole schedule: a scan of the nodes per name would be quadratic.
    let names = cmdgraph_ir::edit::node_names(graph);
    let find = |name: &str| {
        let name = name.strip_prefix('%').unwrap_or(name);
        names.get(name).copied().ok_or_else(|| ExecError::Bundle(format!("schedule names unknown node %{name}")))
    };
    let mut out = Vec::new();
    let place = |h: Handle<Node>, at: (usize, usize), pos: &mut Vec<Option<(usize, usize)>>| -> Result<()> {
        let slot = &mut pos[h.index()];
        if slot.is_some() {
            return Err(ExecError::Bundle(format!("schedule names %{} twice", graph.nodes[h].name)));
        }
        *slot = Some(at);
        Ok(())
    };
    for (si, seg) in segments.iter().enumerate() {
        match seg {
            Segment::Device { stages } => {
                let mut hs = Vec::new();
                for (ti, stage) in stages.iter().enumerate() {
                    let mut st = Vec::new();
                    for name in stage {
                        let h = find(name)?;
                        if is_host(graph, h) {
                            return Err(ExecError::Bundle(format!("host task %{name} in a device segment")));
                        }
                        if is_loop(graph, h) {
                            return Err(ExecError::Bundle(format!("`while` node %{name} in a device segment")));
                        }
                        place(h, (si, ti), &mut pos)?;
                        st.push(h);
                    }
                    hs.push(st);
                }
                out.push(Seg::Device(hs));
            }
            Segment::Host { node } => {
                let h = find(node)?;
                // Codegen gives a native command a segment of its own; here it is recorded
                // into a command buffer of one stage.
                if matches!(graph.nodes[h].kind, NodeKind::Native(_)) {
                    place(h, (si, 0), &mut pos)?;
                    out.push(Seg::Device(vec![vec![h]]));
                    continue;
                }
                if is_loop(graph, h) {
                    place(h, (si, 0), &mut pos)?;
                    out.push(Seg::Loop(h));
                    continue;
                }
                if !is_host(graph, h) {
                    return Err(ExecError::Bundle(format!("%{node} in a host segment is not a host task")));
                }
                place(h, (si, 0), &mut pos)?;
                out.push(Seg::Host(h));
            }
        }
    }
    // Nodes that record nothing may be left out (codegen lists no `empty`, `barrier`,
    // `async_malloc`, `async_free`), but the order they carry must hold: an omitted node
    // stands at the latest position of what precedes it.
    for (h, node) in graph.nodes.iter() {
        if pos[h.index()].is_none() && !is_noop(&node.kind) {
            return Err(ExecError::Bundle(format!("schedule misses %{}", node.name)));
        }
    }
    let preds = predecessors(graph);
    // `after[i]`: the latest scheduled position node i's work comes after (its own position
    // if it is scheduled); filled in topological order.
    let mut after: Vec<Option<(usize, usize)>> = vec![None; n];
    for i in topological(&preds)? {
        let latest = preds.next(i).iter().filter_map(|&u| after[u as usize]).max();
        match pos[i] {
            Some(p) => {
                if latest.is_some_and(|l| l >= p) {
                    let late = preds.next(i).iter().map(|&u| u as usize).find(|&u| after[u] >= Some(p)).unwrap_or(i);
                    let name = |k: usize| graph.nodes.iter().nth(k).map_or("?", |(_, n)| n.name.as_str());
                    return Err(ExecError::Bundle(format!(
                        "schedule runs %{} no earlier than its successor %{}",
                        name(late),
                        name(i)
                    )));
                }
                after[i] = Some(p);
            }
            None => after[i] = latest,
        }
    }
    Ok(out)
}

/// Each node's predecessors, in edge creation order (edges naming a missing node are left
/// out: the loader's verifier rejects them before this).
pub(crate) fn predecessors(graph: &Graph) -> Csr {
    let n = graph.nodes.len();
    let pairs: Vec<(u32, u32)> = graph
        .edges
        .iter()
        .map(|(_, e)| (e.to.index(), e.from.index()))
        .filter(|&(t, f)| t < n && f < n)
        .map(|(t, f)| (t as u32, f as u32))
        .collect();
    Csr::new(n, &pairs)
}

/// Node indices in a topological order of `preds` (an error on a cycle).
pub(crate) fn topological(preds: &Csr) -> Result<Vec<usize>> {
    let n = preds.len();
    let mut indeg: Vec<usize> = (0..n).map(|i| preds.next(i).len()).collect();
    let succ = preds.transpose();
    let mut ready: Vec<usize> = (0..n).filter(|&i| indeg[i] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(i) = ready.pop() {
        order.push(i);
        for &t in succ.next(i) {
            let t = t as usize;
            indeg[t] -= 1;
            if indeg[t] == 0 {
                ready.push(t);
            }
        }
    }
    if order.len() != n {
        return Err(ExecError::Ir("the graph has a cycle".into()));
    }
    Ok(order)
}

/// Whether a node records nothing (ordering-only and lifetime-only nodes, hints).
pub fn is_noop(kind: &NodeKind) -> bool {
    matches!(
        kind,
        NodeKind::Empty
            | NodeKind::Barrier { .. }
            | NodeKind::Prefetch { .. }
            | NodeKind::Memadvise { .. }
            | NodeKind::AsyncMalloc { .. }
            | NodeKind::AsyncFree { .. }
    )
}
