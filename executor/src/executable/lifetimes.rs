//! Graph-allocation lifetimes for pointer updates (docs/executor.md, "Updates").
//!
//! A dynamic parameter may be set to a graph allocation only where the allocation is live
//! at every node that uses the parameter: the node is ordered after the allocation's
//! `async_malloc` and before each of its `async_free`s. This is the verifier's rule for the
//! graph as written (ir/src/verify/alloc.rs, E0244–E0246) and what the interpreter enforces
//! when the node runs; `plan-memory` relies on it to give a freed allocation's pool bytes
//! to a later one, so a use outside the lifetime reads and writes another allocation's data.
//!
//! "Ordered" is reachability over the graph's edges (the schedule runs every edge's source
//! first, schedule.rs). The adjacency is built at the first pointer update that names an
//! allocation, and each allocation's live set (O(nodes) bits) at the first update naming
//! it; both are kept for the executable's life, since the graph never changes.

use super::Executable;
use crate::error::{ExecError, NotLive, Result};
use crate::exec::Executor;
use cmdgraph_ir::csr::Csr;
use cmdgraph_ir::{Alternative, Arg, ArgValue, DynParam, Graph, Handle, MemRef, Node, NodeKind};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// Node sets as bits.
#[derive(Clone)]
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }

    fn get(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)
    }

    /// Sets bit `i`; whether it was clear.
    fn set(&mut self, i: usize) -> bool {
        match self.0.get_mut(i / 64) {
            Some(w) if *w >> (i % 64) & 1 == 0 => {
                *w |= 1 << (i % 64);
                true
            }
            _ => false,
        }
    }
}

/// Where one allocation is live.
struct Live {
    /// Nodes its `async_malloc` reaches (strictly after it).
    after_malloc: Bits,
    /// Each `async_free` of it, with the nodes that reach it (strictly before it).
    frees: Vec<(Handle<Node>, Bits)>,
}

/// The executable's lifetime index, built on demand.
#[derive(Default)]
pub(crate) struct Lifetimes {
    /// Successor and predecessor lists of the graph's nodes.
    adjacency: Option<Arc<(Csr, Csr)>>,
    /// By `async_malloc` node index.
    live: HashMap<usize, Arc<Live>>,
}

/// The nodes reached from `from` over `adj` (`from` itself not included unless on a cycle).
fn reach(adj: &Csr, from: usize) -> Bits {
    let mut seen = Bits::new(adj.len());
    let mut stack: Vec<u32> = adj.next(from).to_vec();
    while let Some(i) = stack.pop() {
        if seen.set(i as usize) {
            stack.extend_from_slice(adj.next(i as usize));
        }
    }
    seen
}

fn adjacency(graph: &Graph) -> (Csr, Csr) {
    let n = graph.nodes.len();
    let pairs: Vec<(u32, u32)> = graph
        .edges
        .iter()
        .map(|(_, e)| (e.from.index(), e.to.index()))
        .filter(|&(f, t)| f < n && t < n)
        .map(|(f, t)| (f as u32, t as u32))
        .collect();
    let succ = Csr::new(n, &pairs);
    let pred = succ.transpose();
    (succ, pred)
}

/// The allocation a parameter value points at, if it is a graph allocation.
pub(crate) fn alloc_of(value: &ArgValue) -> Option<Handle<Node>> {
    match value {
        ArgValue::Pointer(p) => match p.base {
            MemRef::Alloc(n) => Some(n),
            MemRef::Memory(_) => None,
        },
        ArgValue::Accessor(a) => match a.buffer {
            MemRef::Alloc(n) => Some(n),
            MemRef::Memory(_) => None,
        },
        _ => None,
    }
}

impl Executable {
    /// The nodes (by index) that use dynamic parameter `param`: those whose command names it
    /// now, and every `dynamic` node whose group has an alternative naming it (an inactive
    /// alternative runs the parameter's value once switched to, and the verifier counts it).
    pub(crate) fn param_nodes(&self, graph: &Graph, param: Handle<DynParam>) -> BTreeSet<usize> {
        let mut nodes: BTreeSet<usize> = self.users.get(param.index()).into_iter().flatten().map(|&(n, _)| n).collect();
        for (d, group) in graph.dcgs.iter() {
            let names = group.alternatives.iter().any(|a| match a {
                Alternative::Kernel(c) => c.args.iter().any(|x| matches!(x, Arg::Dyn(p) if *p == param)),
                _ => false,
            });
            if names {
                nodes.extend(self.dcg_nodes.get(d.index()).into_iter().flatten().copied());
            }
        }
        nodes
    }
}

impl Executor {
    /// Checks that graph allocation `alloc` is live at every node of `nodes` (node indices),
    /// which use dynamic parameter `param`: [`ExecError::AllocNotLive`] naming the first node
    /// (by creation order) where it is not.
    pub(crate) fn check_live(
        &self,
        exe: &mut Executable,
        param: &str,
        alloc: Handle<Node>,
        nodes: &BTreeSet<usize>,
    ) -> Result<()> {
        let graph = &self.loaded.module.graphs[exe.graph];
        let malloc = match graph.nodes.try_get(alloc) {
            Some(n @ Node { kind: NodeKind::AsyncMalloc { .. }, .. }) => n,
            _ => {
                return Err(ExecError::Unknown(format!("graph allocation (node {}) in @{}", alloc.index(), graph.name)))
            }
        };
        let adj = Arc::clone(exe.lifetimes.adjacency.get_or_insert_with(|| Arc::new(adjacency(graph))));
        let (succ, pred) = (&adj.0, &adj.1);
        let live = Arc::clone(exe.lifetimes.live.entry(alloc.index()).or_insert_with(|| {
            let frees = graph
                .nodes
                .iter()
                .filter(|(_, n)| matches!(n.kind, NodeKind::AsyncFree { alloc: a } if a == alloc))
                .map(|(f, _)| (f, reach(pred, f.index())))
                .collect();
            Arc::new(Live { after_malloc: reach(succ, alloc.index()), frees })
        }));
        for &u in nodes {
            let when = if !live.after_malloc.get(u) {
                // Why: the node reaches the malloc (before it), or neither reaches the other.
                Some(if reach(succ, u).get(alloc.index()) { NotLive::BeforeMalloc } else { NotLive::NotAfterMalloc })
            } else {
                live.frees.iter().find(|(_, before)| !before.get(u)).map(|&(f, _)| {
                    let free = graph.nodes[f].name.clone();
                    if reach(succ, f.index()).get(u) {
                        NotLive::AfterFree { free }
                    } else {
                        NotLive::NotBeforeFree { free }
                    }
                })
            };
            if let Some(when) = when {
                let node = Handle::<Node>::from_usize(u)
                    .and_then(|h| graph.nodes.try_get(h))
                    .map_or_else(|| format!("#{u}"), |n| n.name.clone());
                return Err(ExecError::AllocNotLive {
                    param: param.to_string(),
                    alloc: malloc.name.clone(),
                    node,
                    when,
                });
            }
        }
        Ok(())
    }
}
