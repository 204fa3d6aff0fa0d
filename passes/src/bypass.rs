//! Removing nodes while keeping the happens-before relation among the nodes that remain.
//!
//! Every kept successor of a removed node gets an edge from every kept node that reached it
//! through removed nodes only. New edges are optimizer `make_edge` edges (see
//! `cmdgraph_ir::edit::add_edge`); an edge that already exists is not added again. The result
//! may hold redundant edges: `transitive-reduction` removes them.
//!
//! Both entry points walk the nodes once in topological order and carry, for each removed
//! node, its *frontier*: the kept nodes that reach it through removed nodes only. A frontier
//! is moved, not copied, into a removed node's only successor, and sets are merged with a
//! marker array instead of sorting, so a chain of `k` removed nodes costs `O(k + frontier)`
//! rather than `O(k · frontier)`. The work is linear in the edges the bypass creates.

use crate::analysis::{topological_order, Csr};
use cmdgraph_ir::edit::{self, DanglingReference, NodeMap};
use cmdgraph_ir::{Graph, Handle, Node};

/// Removes the nodes with `remove[index]` set, bypassing them with edges. Errors (graph
/// unchanged) when a kept entity names a removed node, or when the graph has a cycle (the
/// verifier rejects those first).
pub fn remove_and_bypass(graph: &mut Graph, remove: &[bool]) -> Result<NodeMap, BypassError> {
    let removed = |v: u32| remove.get(v as usize).copied().unwrap_or(false);
    let succ = Csr::successors(graph);
    let pred = Csr::predecessors(graph);
    let order = topological_order(&succ).ok_or(BypassError::Cycle)?;
    let mut walk = Frontiers::new(graph.nodes.len());
    let mut new_edges: Vec<(u32, u32)> = Vec::new();
    let mut sources: Vec<u32> = Vec::new();
    for &v in &order {
        if removed(v) {
            walk.gather(v, &succ, &pred, &removed);
            continue;
        }
        // Kept: an edge from each frontier node of a removed predecessor, unless one exists.
        crate::work::count(1 + pred.neighbours(v).len());
        walk.stamp_next();
        for &p in pred.neighbours(v) {
            if !removed(p) {
                walk.mark(p);
            }
        }
        sources.clear();
        for &p in pred.neighbours(v) {
            if removed(p) {
                walk.merge(p, &mut sources);
                walk.release(p, &succ);
            }
        }
        // Sorted, so new edges come in a stable order whatever the predecessor order.
        sources.sort_unstable();
        new_edges.extend(sources.iter().map(|&s| (s, v)));
    }
    let handle = |v: u32| Handle::<Node>::from_usize(v as usize);
    let first_added = graph.edges.len();
    for (p, v) in new_edges {
        if let (Some(p), Some(v)) = (handle(p), handle(v)) {
            edit::add_edge(graph, p, v);
        }
    }
    let keep_node = |h: Handle<Node>| !remove.get(h.index()).copied().unwrap_or(false);
    match edit::retain(graph, keep_node, |_| true) {
        Ok(map) => Ok(map),
        Err(dangling) => {
            // Undo the added edges so the graph is unchanged on error.
            let _ = edit::retain(graph, |_| true, |e| e.index() < first_added);
            Err(BypassError::Dangling(dangling))
        }
    }
}

/// Of the `candidate` nodes, those whose removal does not add edges: walking in
/// topological order, a candidate `v` is chosen when `f · s <= f + s`, where `f` is the
/// number of kept nodes that would reach `v` through chosen nodes only (its frontier) and
/// `s` its number of distinct successors. Removing `v` replaces its `f` in-edges and `s`
/// out-edges by at most `f · s` bypass edges, so the edge count of the graph after
/// [`remove_and_bypass`] with the result is at most the count before (`f <= 1`, `s <= 1`,
/// or `f = s = 2`). `None` if the graph has a cycle.
pub fn removable_without_growth(graph: &Graph, candidate: &[bool]) -> Option<Vec<bool>> {
    let succ = Csr::successors(graph);
    let pred = Csr::predecessors(graph);
    let order = topological_order(&succ)?;
    let mut chosen = vec![false; graph.nodes.len()];
    let mut walk = Frontiers::new(graph.nodes.len());
    for &v in &order {
        crate::work::count(1 + succ.neighbours(v).len());
        if !candidate.get(v as usize).copied().unwrap_or(false) {
            // Kept: the frontiers of its chosen predecessors are no longer needed by it.
            for &p in pred.neighbours(v) {
                if chosen.get(p as usize).copied().unwrap_or(false) {
                    walk.release(p, &succ);
                }
            }
            continue;
        }
        let is_chosen = |p: u32| chosen.get(p as usize).copied().unwrap_or(false);
        walk.gather(v, &succ, &pred, &is_chosen);
        let f = walk.frontier(v).len() as u64;
        let s = distinct(succ.neighbours(v), &mut walk) as u64;
        if f * s <= f + s {
            if let Some(c) = chosen.get_mut(v as usize) {
                *c = true;
            }
        } else {
            walk.clear(v);
            // Not chosen: its removed predecessors' frontiers were consumed by `gather`
            // already (moved or released), which is what a kept node does too.
        }
    }
    Some(chosen)
}

/// Number of distinct entries of `list` (uses the marker array).
fn distinct(list: &[u32], walk: &mut Frontiers) -> usize {
    walk.stamp_next();
    list.iter().filter(|&&w| walk.mark(w)).count()
}

/// Frontier sets of removed nodes with a marker array for merging.
struct Frontiers {
    sets: Vec<Vec<u32>>,
    /// How many successors of a removed node still have to read its frontier.
    readers: Vec<u32>,
    marks: Vec<u32>,
    stamp: u32,
}

impl Frontiers {
    fn new(n: usize) -> Frontiers {
        Frontiers { sets: vec![Vec::new(); n], readers: vec![0; n], marks: vec![0; n], stamp: 0 }
    }

    fn stamp_next(&mut self) {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.marks.iter_mut().for_each(|m| *m = 0);
            self.stamp = 1;
        }
    }

    /// Marks `x` under the current stamp; true if it was not marked yet.
    fn mark(&mut self, x: u32) -> bool {
        match self.marks.get_mut(x as usize) {
            Some(m) if *m != self.stamp => {
                *m = self.stamp;
                true
            }
            _ => false,
        }
    }

    /// Appends the members of `p`'s frontier not marked yet to `out`, marking them.
    fn merge(&mut self, p: u32, out: &mut Vec<u32>) {
        let Some(set) = self.sets.get(p as usize) else { return };
        crate::work::count(set.len());
        for &x in set {
            if let Some(m) = self.marks.get_mut(x as usize) {
                if *m != self.stamp {
                    *m = self.stamp;
                    out.push(x);
                }
            }
        }
    }

    fn frontier(&self, v: u32) -> &[u32] {
        self.sets.get(v as usize).map(Vec::as_slice).unwrap_or(&[])
    }

    fn clear(&mut self, v: u32) {
        if let Some(s) = self.sets.get_mut(v as usize) {
            *s = Vec::new();
        }
    }

    /// One reader of removed node `p`'s frontier is done; frees it after the last one.
    fn release(&mut self, p: u32, succ: &Csr) {
        let Some(r) = self.readers.get_mut(p as usize) else { return };
        if *r == 0 {
            *r = succ.neighbours(p).len() as u32;
        }
        *r -= 1;
        if *r == 0 {
            self.clear(p);
        }
    }

    /// Builds the frontier of removed node `v`: its kept predecessors and the frontiers
    /// of its removed ones. The first removed predecessor whose only successor is `v`
    /// gives its set away instead of being copied.
    fn gather(&mut self, v: u32, succ: &Csr, pred: &Csr, removed: &impl Fn(u32) -> bool) {
        let preds = pred.neighbours(v);
        crate::work::count(preds.len());
        let donor = preds.iter().copied().find(|&p| removed(p) && succ.neighbours(p).len() == 1);
        let mut set = match donor {
            Some(p) => self.sets.get_mut(p as usize).map(std::mem::take).unwrap_or_default(),
            None => Vec::new(),
        };
        self.stamp_next();
        for &x in &set {
            self.mark(x);
        }
        for &p in preds {
            if Some(p) == donor {
                continue;
            }
            if removed(p) {
                self.merge(p, &mut set);
                self.release(p, succ);
            } else if self.mark(p) {
                set.push(p);
            }
        }
        if let Some(s) = self.sets.get_mut(v as usize) {
            *s = set;
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

/// Statistics names of the node-eliminating passes.
pub(crate) const ELIMINATE_STATS: &[(&str, &str)] = &[
    ("nodes-removed", "nodes removed and bypassed"),
    ("nodes-kept-wide", "candidates kept because bypassing them would add edges (f·s > f + s)"),
    ("edges-added", "bypass edges added (make_edge), before any transitive reduction"),
];

/// Runs a node-eliminating pass over every graph of `module`: the nodes `select` picks
/// that [`removable_without_growth`] allows are removed with [`remove_and_bypass`].
pub(crate) fn eliminate_nodes(
    module: &mut cmdgraph_ir::Module,
    ctx: &mut crate::PassContext,
    pass: &'static str,
    select: fn(&cmdgraph_ir::NodeKind) -> bool,
) -> Result<(), crate::PassError> {
    for (_, graph) in module.graphs.iter_mut() {
        let candidate: Vec<bool> = graph.nodes.iter().map(|(_, n)| select(&n.kind)).collect();
        let wanted = candidate.iter().filter(|&&c| c).count() as u64;
        if wanted == 0 {
            continue;
        }
        let fail = |graph: &Graph, message: String| crate::PassError::Failed {
            pass,
            graph: graph.name.clone(),
            node: None,
            message,
        };
        let chosen =
            removable_without_growth(graph, &candidate).ok_or_else(|| fail(graph, "the graph has a cycle".into()))?;
        let removed = chosen.iter().filter(|&&c| c).count() as u64;
        let is_removed = |h: Handle<Node>| chosen.get(h.index()).copied().unwrap_or(false);
        let touching = graph.edges.iter().filter(|(_, e)| is_removed(e.from) || is_removed(e.to)).count();
        let before = graph.edges.len();
        if removed > 0 {
            remove_and_bypass(graph, &chosen).map_err(|e| fail(graph, e.to_string()))?;
        }
        ctx.bump("nodes-removed", removed);
        ctx.bump("nodes-kept-wide", wanted - removed);
        ctx.bump("edges-added", (graph.edges.len() + touching).saturating_sub(before) as u64);
    }
    Ok(())
}
