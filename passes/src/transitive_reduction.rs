//! `transitive-reduction`: removes every edge implied by a path through other nodes, and
//! duplicate edges.
//!
//! The kept set is the unique transitive reduction ([`crate::reduce`]); of duplicate
//! edges the first created stays, so a recording-API edge wins over a later optimizer
//! `make_edge` one. Edges are data with provenance (`via accessor`, `via barrier`, ...):
//! kept edges keep theirs; removed ones are gone from the optimized graph, and a barrier's
//! `wait(...)` entry whose edge went is dropped (the barrier is still ordered after it by
//! the path that made the edge redundant).
//!
//! Whole-graph update compares an update's source graph against the *source* graph kept
//! in the bundle, not against the optimized one: removing redundant edges changes the
//! optimized topology but not what an application's graph must match.

use crate::analysis::Csr;
use crate::reduce::transitive_reduction;
use crate::{PassContext, PassError, PassInfo};
use cmdgraph_ir::{edit, Module};

/// Registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "transitive-reduction",
    summary: "remove edges implied by other paths, and duplicate edges (the first created stays)",
    statistics: &[("edges-removed", "redundant or duplicate edges removed"), ("edges-kept", "edges left")],
    preserves:
        "reachability (happens-before) exactly; every node, its name and creation order; kept edges keep their \
                provenance; dynamic parameters and command groups untouched; update is checked against the source graph",
    run,
};

fn run(module: &mut Module, ctx: &mut PassContext) -> Result<(), PassError> {
    for (_, graph) in module.graphs.iter_mut() {
        let succ = Csr::successors(graph);
        let name = graph.name.clone();
        let fail = |message: &str| PassError::Failed {
            pass: INFO.name,
            graph: name.clone(),
            node: None,
            message: message.to_string(),
        };
        crate::work::count(graph.nodes.len() + graph.edges.len());
        let keep = transitive_reduction(&succ).ok_or_else(|| fail("the graph has a cycle"))?;
        // Csr::successors lists each node's edges in creation order: the slot of an edge
        // is its source's first slot plus the number of earlier edges from that source.
        let mut next_slot = vec![0u32; graph.nodes.len() + 1];
        for v in 0..graph.nodes.len() {
            next_slot[v + 1] = next_slot[v] + succ.neighbours(v as u32).len() as u32;
        }
        let mut keep_edge = Vec::with_capacity(graph.edges.len());
        for (_, e) in graph.edges.iter() {
            let slot = next_slot.get_mut(e.from.index()).ok_or_else(|| fail("an edge names no node"))?;
            keep_edge.push(keep.get(*slot as usize).copied().unwrap_or(true));
            *slot += 1;
        }
        let removed = keep_edge.iter().filter(|&&k| !k).count();
        if removed > 0 {
            edit::retain(graph, |_| true, |e| keep_edge.get(e.index()).copied().unwrap_or(true))
                .map_err(|d| fail(&d.to_string()))?;
        }
        ctx.bump("edges-removed", removed as u64);
        ctx.bump("edges-kept", graph.edges.len() as u64);
    }
    Ok(())
}
