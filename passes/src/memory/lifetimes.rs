//! Lifetimes of graph-owned allocations, read off the DAG (not off one schedule).
//!
//! An allocation lives from its `async_malloc` node until its `async_free` node. Allocation
//! `a` ends before `b` begins (`a ≺ b`) iff `a`'s free is an ancestor of `b`'s malloc: then
//! on every path, hence in every schedule, each access to `a` has completed before `b`
//! exists. The verifier (E0245/E0246) guarantees that every access of `a` is ordered before
//! its free, so the free alone stands for all of `a`'s accesses. Allocations without exactly
//! one free live to the end of the run and are never before anything.

use crate::analysis::{topological_order, Csr};
use cmdgraph_ir::{Alternative, Arg, ArgValue, Graph, Handle, HostTaskCommand, KernelCommand, MemRef, NodeKind};

/// One graph-owned allocation as the planner sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allocation {
    /// The vertex of its `async_malloc` node.
    pub malloc: u32,
    /// The vertex that ends its lifetime (its `async_free`); `None`: live to the end of the run.
    pub free: Option<u32>,
    /// Size in bytes.
    pub size: u64,
    /// `zero_init`: never shares bytes with another allocation (docs/memory.md says why).
    pub zero_init: bool,
}

/// A planning problem: a DAG over vertices and the allocations living on it. Graphs,
/// generators and converted benchmark instances all become one of these.
#[derive(Clone, Debug, Default)]
pub struct Problem {
    /// Successors of every vertex.
    pub succ: Csr,
    /// The allocations, in the order their results are reported.
    pub allocs: Vec<Allocation>,
}

/// Names for the report: per allocation, its malloc node and its free node.
#[derive(Clone, Debug, Default)]
pub struct AllocNames {
    /// `async_malloc` node names (without `%`).
    pub malloc: Vec<String>,
    /// `async_free` node names, `None` when the allocation lives to the end.
    pub free: Vec<Option<String>>,
}

impl Problem {
    /// The allocations of graph `graph` of `module`, with names. `Err` if the graph has a cycle.
    pub fn from_graph(graph: &Graph) -> Result<(Problem, AllocNames), String> {
        let succ = Csr::successors(graph);
        let topo = topological_order(&succ).ok_or_else(|| "the graph has a cycle".to_string())?;
        let mut pos = vec![0u32; succ.len()];
        for (i, &v) in topo.iter().enumerate() {
            pos[v as usize] = i as u32;
        }
        // Slot of every malloc node; u32::MAX for other nodes.
        let mut slot = vec![u32::MAX; graph.nodes.len()];
        let mut allocs = Vec::new();
        let mut names = AllocNames::default();
        for (h, node) in graph.nodes.iter() {
            if let NodeKind::AsyncMalloc { elem, count, zero_init, .. } = &node.kind {
                slot[h.index()] = allocs.len() as u32;
                let size = elem.size().saturating_mul(*count);
                allocs.push(Allocation { malloc: h.index() as u32, free: None, size, zero_init: *zero_init });
                names.malloc.push(node.name.clone());
                names.free.push(None);
            }
        }
        let n = allocs.len();
        let mut frees: Vec<Vec<u32>> = vec![Vec::new(); n];
        // The latest topological position of any access other than a free.
        let mut last_access = vec![0u32; n];
        let slot_of = |m: MemRef| match m {
            MemRef::Alloc(h) => slot.get(h.index()).copied().filter(|&s| s != u32::MAX),
            MemRef::Memory(_) => None,
        };
        for (h, node) in graph.nodes.iter() {
            let v = h.index();
            let mut touched = Vec::new();
            collect_refs(graph, &node.kind, &mut touched);
            if let NodeKind::AsyncFree { alloc } = node.kind {
                if let Some(s) = slot_of(MemRef::Alloc(alloc)) {
                    frees[s as usize].push(v as u32);
                }
                continue;
            }
            for m in touched {
                if let Some(s) = slot_of(m) {
                    let p = pos.get(v).copied().unwrap_or(0);
                    let last = &mut last_access[s as usize];
                    *last = (*last).max(p);
                }
            }
        }
        for (i, a) in allocs.iter_mut().enumerate() {
            // One free, after every access in this order: the verifier's guarantee that the
            // free is ordered after them all is what makes it stand for them.
            if let [f] = frees[i].as_slice() {
                if pos[*f as usize] > last_access[i] && pos[*f as usize] > pos[a.malloc as usize] {
                    a.free = Some(*f);
                    names.free[i] = Handle::from_usize(*f as usize)
                        .and_then(|h| graph.nodes.try_get(h))
                        .map(|n| n.name.clone());
                }
            }
        }
        Ok((Problem { succ, allocs }, names))
    }
}

/// Every graph-owned or module memory reference a command makes, dynamic parameters and
/// every alternative of a dynamic command group included (an update may switch to them).
fn collect_refs(graph: &Graph, kind: &NodeKind, out: &mut Vec<MemRef>) {
    let kernel = |cmd: &KernelCommand, out: &mut Vec<MemRef>| {
        for arg in &cmd.args {
            let value = match arg {
                Arg::Value(v) => Some(v),
                Arg::Dyn(p) => graph.dyn_params.try_get(*p).map(|p| &p.value),
            };
            match value {
                Some(ArgValue::Pointer(p)) => out.push(p.base),
                Some(ArgValue::Accessor(a)) => out.push(a.buffer),
                _ => {}
            }
        }
    };
    let host = |cmd: &HostTaskCommand, out: &mut Vec<MemRef>| out.extend(cmd.access.iter().map(|a| a.mem));
    match kind {
        NodeKind::Kernel(cmd) => kernel(cmd, out),
        NodeKind::Memcpy { dst, src, .. } => out.extend([dst.base, src.base]),
        NodeKind::Memset { dst, .. } | NodeKind::Memfill { dst, .. } => out.push(dst.base),
        NodeKind::Prefetch { ptr, .. } | NodeKind::Memadvise { ptr, .. } => out.push(ptr.base),
        NodeKind::HostTask(cmd) | NodeKind::Native(cmd) => host(cmd, out),
        NodeKind::Dynamic { dcg } => {
            for alt in graph.dcgs.try_get(*dcg).map(|d| d.alternatives.as_slice()).unwrap_or(&[]) {
                match alt {
                    Alternative::Kernel(cmd) => kernel(cmd, out),
                    Alternative::HostTask(cmd) => host(cmd, out),
                    Alternative::Other(k) => collect_refs(graph, k, out),
                }
            }
        }
        NodeKind::AsyncFree { alloc } => out.push(MemRef::Alloc(*alloc)),
        NodeKind::Empty | NodeKind::Barrier { .. } | NodeKind::Subgraph { .. } | NodeKind::AsyncMalloc { .. } => {}
    }
}
