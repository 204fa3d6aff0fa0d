//! Cycle detection. SYCL's `make_edge` rejects an edge that would close a cycle unless the
//! graph has `no_cycle_check`, in which case a cyclic graph is undefined behaviour.
//! cmdgraph rejects cycles in every graph: scheduling, fusion, memory planning and update
//! all need a DAG, and "undefined" lets an implementation diagnose. The diagnostic names
//! the edge SYCL would have refused (the first, in creation order, whose prefix of edges
//! is cyclic) and one concrete cycle through it.

use super::ctx::Gx;
use super::error::VerifyError;
use super::reach::Adjacency;
use super::topo::Topo;
use crate::arena::Handle;
use crate::graph::Edge;

/// Reports one cycle, if the graph has any. `topo` says whether it has one: the search for
/// the closing edge (O((nodes + edges) log edges)) only runs when it does.
pub(super) fn check(gx: &Gx<'_>, topo: &Topo, errors: &mut Vec<VerifyError>) {
    if topo.acyclic {
        return;
    }
    let g = gx.g;
    let n = g.nodes.len();
    // Dangling and self edges are reported by edges.rs and left out here.
    let list: Vec<(Handle<Edge>, usize, usize)> = g
        .edges
        .iter()
        .filter(|(_, e)| e.from != e.to && e.from.index() < n && e.to.index() < n)
        .map(|(h, e)| (h, e.from.index(), e.to.index()))
        .collect();
    let pairs: Vec<(usize, usize)> = list.iter().map(|&(_, a, b)| (a, b)).collect();
    // Invariant: pairs[..lo] is acyclic, pairs[..hi] is cyclic.
    let (mut lo, mut hi) = (0usize, pairs.len());
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if Adjacency::new(n, &pairs[..mid]).is_acyclic() {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let Some(&(closing, from, to)) = list.get(hi - 1) else { return };
    let before = Adjacency::new(n, &pairs[..hi - 1]);
    let Some(path) = before.path(to, from) else { return };
    let mut cycle: Vec<String> =
        path.iter().filter_map(|&i| crate::arena::Handle::from_usize(i)).map(|h| gx.node_name(h)).collect();
    cycle.push(gx.node_name(g.edges[closing].to));
    errors.push(VerifyError::Cycle { cycle, no_cycle_check: g.properties.no_cycle_check, span: g.edges.span(closing) });
}
