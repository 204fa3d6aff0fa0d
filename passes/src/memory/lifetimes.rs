//! Lifetimes of graph-owned allocations, read off the DAG (not off one schedule).
//!
//! An allocation lives from its `async_malloc` node until its `async_free` node. Allocation
//! `a` ends before `b` begins (`a ≺ b`) iff `a`'s free is an ancestor of `b`'s malloc: then
//! on every path, hence in every schedule, each access to `a` has completed before `b`
//! exists. The verifier (E0245/E0246, ir/src/verify/alloc.rs) guarantees that every access
//! of `a` — kernel pointer and accessor arguments, dynamic parameters registered on a node,
//! every alternative of a dynamic command group, memory commands, host-task and native
//! access lists — is ordered after its malloc and before its free on every path, so the
//! free alone stands for all of `a`'s accesses. Allocations without exactly
//! one free live to the end of the run and are never before anything.

use super::parallel::{self, Threads};
use crate::analysis::Csr;
use cmdgraph_ir::{Graph, Handle, NodeKind};
use std::ops::Range;

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
#[derive(Clone, Debug, Default, PartialEq, Eq)]
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
    /// The allocations of `graph`. The graph should have passed the verifier:
    /// the plan relies on its lifetime checks (on other input it is still computed, without
    /// panicking, but may be wrong).
    pub fn from_graph(graph: &Graph) -> Result<Problem, String> {
        Problem::from_graph_with(graph, Threads::available())
    }

    /// [`Problem::from_graph`] on up to `threads` threads (the same problem on any number).
    pub fn from_graph_with(graph: &Graph, threads: Threads) -> Result<Problem, String> {
        let n = graph.nodes.len();
        // The successor lists and the scan for allocations read different arenas: at once,
        // the scan itself by ranges of nodes.
        let (succ, parts) = parallel::join(
            threads,
            n,
            || successors(graph),
            || parallel::map_ranges(threads, n, |_, range| scan(graph, range)),
        );
        let mut allocs = Vec::new();
        // (allocation node, free node) of every free: resolved once all mallocs are known.
        let mut frees: Vec<(u32, u32)> = Vec::new();
        for (a, f) in parts {
            allocs.extend(a);
            frees.extend(f);
        }
        // Slot of every malloc node; u32::MAX for other nodes.
        let mut slot = vec![u32::MAX; n];
        for (k, a) in allocs.iter().enumerate() {
            if let Some(s) = slot.get_mut(a.malloc as usize) {
                *s = k as u32;
            }
        }
        // Frees seen per allocation: one free stands for every access (the verifier, E0245/
        // E0246, has checked that each is ordered between the malloc and it). Two frees are
        // an error the verifier reports; the allocation is then kept live to the end.
        let mut seen = vec![0u8; allocs.len()];
        for &(m, f) in &frees {
            let Some(s) = slot.get(m as usize).copied().filter(|&s| s != u32::MAX) else { continue };
            let (Some(count), Some(a)) = (seen.get_mut(s as usize), allocs.get_mut(s as usize)) else { continue };
            *count = count.saturating_add(1);
            a.free = (*count == 1).then_some(f);
        }
        Ok(Problem { succ, allocs })
    }
}

/// The allocations made by the nodes of `range` (live to the end so far), and the frees
/// there as (allocation node, free node).
fn scan(graph: &Graph, range: Range<usize>) -> (Vec<Allocation>, Vec<(u32, u32)>) {
    let mut allocs = Vec::new();
    let mut frees = Vec::new();
    for i in range {
        let Some(node) = Handle::from_usize(i).and_then(|h| graph.nodes.try_get(h)) else { continue };
        match &node.kind {
            NodeKind::AsyncMalloc { elem, count, zero_init, .. } => {
                let size = elem.size().saturating_mul(*count);
                allocs.push(Allocation { malloc: i as u32, free: None, size, zero_init: *zero_init });
            }
            NodeKind::AsyncFree { alloc } => frees.push((alloc.index() as u32, i as u32)),
            _ => {}
        }
    }
    (allocs, frees)
}

/// The successor lists of `graph`, in edge creation order (what `Csr::successors` gives),
/// counted then filled straight from the edge arena: no list of pairs in between.
fn successors(graph: &Graph) -> Csr {
    let n = graph.nodes.len();
    // Edges naming a vertex outside the graph (only in an invalid module) are left out.
    let inside = |e: &cmdgraph_ir::Edge| e.from.index() < n && e.to.index() < n;
    let mut offsets = vec![0u32; n + 1];
    for (_, e) in graph.edges.iter() {
        if inside(e) {
            if let Some(c) = offsets.get_mut(e.from.index() + 1) {
                *c += 1;
            }
        }
    }
    for i in 0..n {
        offsets[i + 1] += offsets[i];
    }
    let mut fill = offsets.clone();
    let mut targets = vec![0u32; offsets[n] as usize];
    for (_, e) in graph.edges.iter() {
        if inside(e) {
            if let Some(slot) = fill.get_mut(e.from.index()) {
                if let Some(t) = targets.get_mut(*slot as usize) {
                    *t = e.to.index() as u32;
                }
                *slot += 1;
            }
        }
    }
    Csr::from_parts(offsets, targets)
}

impl AllocNames {
    /// The names of `problem`'s malloc and free vertices in `graph` (built by
    /// [`Problem::from_graph`]), for the report.
    pub fn from_graph(graph: &Graph, problem: &Problem) -> AllocNames {
        let name = |v: u32| Handle::from_usize(v as usize).and_then(|h| graph.nodes.try_get(h)).map(|n| n.name.clone());
        AllocNames {
            malloc: problem.allocs.iter().map(|a| name(a.malloc).unwrap_or_default()).collect(),
            free: problem.allocs.iter().map(|a| a.free.and_then(name)).collect(),
        }
    }
}
