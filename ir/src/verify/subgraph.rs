//! Sub-graph recursion over the whole module: a graph may not contain itself, directly or
//! through nested `subgraph` nodes (the executable child must exist before the parent).

use super::error::VerifyError;
use super::reach::Adjacency;
use crate::arena::Handle;
use crate::graph::{Graph, NodeKind};
use crate::module::Module;
use std::collections::BTreeMap;

/// Reports each loop of the sub-graph relation once, at a `subgraph` node of the loop's
/// first graph (in module order).
pub(super) fn check(m: &Module, errors: &mut Vec<VerifyError>) {
    let n = m.graphs.len();
    // For each graph, its children with the first node that names each.
    let mut children: Vec<BTreeMap<usize, crate::span::Span>> = vec![BTreeMap::new(); n];
    for (gh, g) in m.graphs.iter() {
        for (nh, node) in g.nodes.iter() {
            if let NodeKind::Subgraph { graph } = node.kind {
                if graph.index() < n {
                    children[gh.index()].entry(graph.index()).or_insert(g.nodes.span(nh));
                }
            }
        }
    }
    let pairs: Vec<(usize, usize)> =
        children.iter().enumerate().flat_map(|(p, c)| c.keys().map(move |&k| (p, k))).collect();
    let adj = Adjacency::new(n, &pairs);
    let name = |i: usize| {
        Handle::<Graph>::from_usize(i)
            .and_then(|h| m.graphs.try_get(h))
            .map_or_else(|| format!("@<graph {i}>"), |g| format!("@{}", g.name))
    };
    for (parent, kids) in children.iter().enumerate() {
        for (&child, &span) in kids {
            let Some(path) = adj.path(child, parent) else { continue };
            if path.iter().any(|&i| i < parent) {
                continue;
            }
            let mut chain = vec![name(parent)];
            chain.extend(path.iter().map(|&i| name(i)));
            errors.push(VerifyError::SubgraphRecursion { chain, span });
        }
    }
}
