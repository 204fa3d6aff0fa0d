//! Removing nodes while keeping the happens-before relation among the nodes that remain.
//!
//! Every kept successor of a removed node gets an edge from every kept node that reached it
//! through removed nodes only. New edges are optimizer `make_edge` edges (see
//! `cmdgraph_ir::edit::add_edge`); an edge that already exists is not added again. The result
//! may hold redundant edges: `transitive-reduction` removes them.

use crate::analysis::{topological_order, Csr};
use cmdgraph_ir::edit::{self, DanglingReference, NodeMap};
use cmdgraph_ir::{Graph, Handle, Node};
use std::collections::HashSet;

/// Removes the nodes with `remove[index]` set, bypassing them with edges. Errors (graph
/// unchanged) when a kept entity names a removed node, or when the graph has a cycle (the
/// verifier rejects those first).
pub fn remove_and_bypass(graph: &mut Graph, remove: &[bool]) -> Result<NodeMap, BypassError> {
    let removed = |v: u32| remove.get(v as usize).copied().unwrap_or(false);
    let succ = Csr::successors(graph);
    let pred = Csr::predecessors(graph);
    let order = topological_order(&succ).ok_or(BypassError::Cycle)?;
    // For each removed node: the kept nodes that reach it through removed nodes only.
    let mut frontier: Vec<Vec<u32>> = vec![Vec::new(); graph.nodes.len()];
    let mut existing: HashSet<(u32, u32)> = HashSet::new();
    for (_, e) in graph.edges.iter() {
        existing.insert((e.from.index() as u32, e.to.index() as u32));
    }
    let mut new_edges: Vec<(u32, u32)> = Vec::new();
    for &v in &order {
        if removed(v) {
            let mut set: Vec<u32> = Vec::new();
            for &p in pred.neighbours(v) {
                if removed(p) {
                    set.extend_from_slice(&frontier[p as usize]);
                } else {
                    set.push(p);
                }
            }
            set.sort_unstable();
            set.dedup();
            frontier[v as usize] = set;
        } else {
            let mut sources: Vec<u32> = pred
                .neighbours(v)
                .iter()
                .filter(|&&p| removed(p))
                .flat_map(|&p| frontier[p as usize].clone())
                .collect();
            sources.sort_unstable();
            sources.dedup();
            for p in sources {
                if existing.insert((p, v)) {
                    new_edges.push((p, v));
                }
            }
        }
    }
    // New edges go in the destination's topological position so the printed order is stable.
    let handle = |v: u32| Handle::<Node>::from_usize(v as usize);
    let mut added = Vec::with_capacity(new_edges.len());
    for (p, v) in new_edges {
        if let (Some(p), Some(v)) = (handle(p), handle(v)) {
            added.push(edit::add_edge(graph, p, v));
        }
    }
    let keep_node = |h: Handle<Node>| !remove.get(h.index()).copied().unwrap_or(false);
    match edit::retain(graph, keep_node, |_| true) {
        Ok(map) => Ok(map),
        Err(dangling) => {
            // Undo the added edges so the graph is unchanged on error.
            let first = added.first().map(|e| e.index()).unwrap_or(graph.edges.len());
            let _ = edit::retain(graph, |_| true, |e| e.index() < first);
            Err(BypassError::Dangling(dangling))
        }
    }
}

/// Why [`remove_and_bypass`] refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BypassError {
    /// A kept entity names a removed node.
    Dangling(DanglingReference),
    /// The graph has a cycle.
    Cycle,
}

impl std::fmt::Display for BypassError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BypassError::Dangling(d) => d.fmt(f),
            BypassError::Cycle => f.write_str("the graph has a cycle"),
        }
    }
}

impl std::error::Error for BypassError {}
