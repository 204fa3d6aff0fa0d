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

use crate::analysis::Csr;
use cmdgraph_ir::{Graph, Handle, MemRef, NodeKind};

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
    /// The allocations of `graph`. The graph should have passed the verifier:
    /// the plan relies on its lifetime checks (on other input it is still computed, without
    /// panicking, but may be wrong).
    pub fn from_graph(graph: &Graph) -> Result<Problem, String> {
        let tt = std::time::Instant::now();
        let succ = Csr::successors(graph);
        if std::env::var_os("MEMPERF").is_some() {
            eprintln!("    csr {:.2}", tt.elapsed().as_secs_f64() * 1e3)
        };
        // Slot of every malloc node; u32::MAX for other nodes.
        let mut slot = vec![u32::MAX; graph.nodes.len()];
        let mut allocs = Vec::new();
        for (h, node) in graph.nodes.iter() {
            if let NodeKind::AsyncMalloc { elem, count, zero_init, .. } = &node.kind {
                slot[h.index()] = allocs.len() as u32;
                let size = elem.size().saturating_mul(*count);
                allocs.push(Allocation { malloc: h.index() as u32, free: None, size, zero_init: *zero_init });
            }
        }
        let n = allocs.len();
        let mut frees: Vec<Vec<u32>> = vec![Vec::new(); n];
        let slot_of = |m: MemRef| match m {
            MemRef::Alloc(h) => slot.get(h.index()).copied().filter(|&s| s != u32::MAX),
            MemRef::Memory(_) => None,
        };
        for (h, node) in graph.nodes.iter() {
            if let NodeKind::AsyncFree { alloc } = node.kind {
                if let Some(s) = slot_of(MemRef::Alloc(alloc)) {
                    frees[s as usize].push(h.index() as u32);
                }
            }
        }
        for (i, a) in allocs.iter_mut().enumerate() {
            // One free: the verifier (E0245/E0246) has checked that every access is ordered
            // between the malloc and it, so it stands for them all. Two frees are an error
            // the verifier reports; the allocation is then kept live to the end.
            if let [f] = frees[i].as_slice() {
                a.free = Some(*f);
            }
        }
        Ok(Problem { succ, allocs })
    }
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
