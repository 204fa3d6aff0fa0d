//! The schedule of a graph: segments of stages (docs/abi.md, "Schedule"), taken from the
//! bundle and checked against the graph's edges, or planned here when the bundle has none.

use crate::error::{ExecError, Result};
use cmdgraph_ir::bundle::Segment;
use cmdgraph_ir::{Graph, Handle, Node, NodeKind, NodeType};

/// A schedule over node handles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seg {
    /// Stages of mutually independent device nodes.
    Device(Vec<Vec<Handle<Node>>>),
    /// One host task.
    Host(Handle<Node>),
}

/// Whether a node runs on the host (a host task, or a dynamic group of host tasks).
pub fn is_host(graph: &Graph, node: Handle<Node>) -> bool {
    graph.node_type(node) == NodeType::HostTask
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
        let device: Vec<usize> = ready.iter().copied().filter(|&i| !is_host(graph, handles[i])).collect();
        let take = if device.is_empty() {
            if ready.is_empty() {
                return Err(ExecError::Ir("the graph has a cycle".into()));
            }
            if !stages.is_empty() {
                out.push(Seg::Device(std::mem::take(&mut stages)));
            }
            out.extend(ready.iter().map(|&i| Seg::Host(handles[i])));
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

/// Converts the bundle's schedule to handles and checks it: every node at most once (only
/// ordering-only nodes absent), host
/// tasks alone in host segments, and every edge going to a later stage (through the
/// ordering-only nodes codegen leaves out).
pub fn from_plan(graph: &Graph, segments: &[Segment]) -> Result<Vec<Seg>> {
    let n = graph.nodes.len();
    let mut pos: Vec<Option<(usize, usize)>> = vec![None; n];
    let find = |name: &str| {
        let name = name.strip_prefix('%').unwrap_or(name);
        graph.node_by_name(name).ok_or_else(|| ExecError::Bundle(format!("schedule names unknown node %{name}")))
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
                        place(h, (si, ti), &mut pos)?;
                        st.push(h);
                    }
                    hs.push(st);
                }
                out.push(Seg::Device(hs));
            }
            Segment::Host { node } => {
                let h = find(node)?;
                if !is_host(graph, h) {
                    return Err(ExecError::Bundle(format!("%{node} in a host segment is not a host task")));
                }
                place(h, (si, 0), &mut pos)?;
                out.push(Seg::Host(h));
            }
        }
    }
    // Ordering-only nodes (empty, barrier, async_malloc, async_free) do no device work, so
    // codegen leaves them out (codegen/src/schedule.rs); the order they carry must still
    // hold: an edge is checked from the latest scheduled node reaching it through them.
    let (order, preds) = topo(graph)?;
    let nodes: Vec<&Node> = graph.nodes.iter().map(|(_, node)| node).collect();
    let mut reach: Vec<Option<(usize, usize)>> = vec![None; n];
    for &v in &order {
        if pos[v].is_none() {
            let node = nodes.get(v).ok_or_else(|| ExecError::Ir("bad node index".into()))?;
            if !is_ordering_only(&node.kind) {
                return Err(ExecError::Bundle(format!("schedule misses %{}", node.name)));
            }
            reach[v] = preds[v].iter().filter_map(|&p| pos[p].or(reach[p])).max();
        }
    }
    for (_, e) in graph.edges.iter() {
        let b = pos.get(e.to.index()).copied().flatten();
        let a = pos.get(e.from.index()).copied().flatten().or(reach.get(e.from.index()).copied().flatten());
        let ok = match (a, b) {
            (Some(a), Some(b)) => a < b,
            // Into an unscheduled node, or from one that nothing scheduled reaches.
            _ => true,
        };
        if !ok {
            let name = |h: Handle<Node>| graph.nodes.try_get(h).map_or("?", |n| n.name.as_str());
            return Err(ExecError::Bundle(format!(
                "schedule runs %{} no earlier than its successor %{}",
                name(e.from),
                name(e.to)
            )));
        }
    }
    Ok(out)
}

/// Whether codegen may leave a node out of the schedule: it only carries order.
fn is_ordering_only(kind: &NodeKind) -> bool {
    matches!(
        kind,
        NodeKind::Empty | NodeKind::Barrier { .. } | NodeKind::AsyncMalloc { .. } | NodeKind::AsyncFree { .. }
    )
}

/// Node indices in a topological order (Kahn) and each node's predecessors; a cycle is an
/// error.
fn topo(graph: &Graph) -> Result<(Vec<usize>, Vec<Vec<usize>>)> {
    let n = graph.nodes.len();
    let mut indeg = vec![0usize; n];
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (_, e) in graph.edges.iter() {
        let (f, t) = (e.from.index(), e.to.index());
        if f >= n || t >= n {
            return Err(ExecError::Ir("edge to a missing node".into()));
        }
        indeg[t] += 1;
        succ[f].push(t);
        preds[t].push(f);
    }
    let mut ready: Vec<usize> = (0..n).filter(|&i| indeg[i] == 0).collect();
    let mut out = Vec::with_capacity(n);
    while let Some(i) = ready.pop() {
        out.push(i);
        for &s in &succ[i] {
            indeg[s] -= 1;
            if indeg[s] == 0 {
                ready.push(s);
            }
        }
    }
    if out.len() != n {
        return Err(ExecError::Ir("the graph has a cycle".into()));
    }
    Ok((out, preds))
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
