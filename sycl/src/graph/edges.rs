//! Which edges a new node gets: reachability, leaves, accessor data dependencies.
//!
//! These are derived facts, recomputed from the IR graph (and the builder's side table of
//! accessor requirements) whenever a node is created.

use cmdgraph_ir::{Accessor, EdgeKind, Graph, Handle, Node, Queue};

/// Successor lists of a graph, for reachability queries.
pub(crate) struct Adjacency {
    succ: Vec<Vec<usize>>,
}

impl Adjacency {
    /// The successor lists of `g` as it is now.
    pub(crate) fn new(g: &Graph) -> Adjacency {
        let mut succ = vec![Vec::new(); g.nodes.len()];
        for (_, e) in g.edges.iter() {
            if let Some(list) = succ.get_mut(e.from.index()) {
                list.push(e.to.index());
            }
        }
        Adjacency { succ }
    }

    /// Whether there is a path of one or more edges from `from` to `to`.
    pub(crate) fn reaches(&self, from: Handle<Node>, to: Handle<Node>) -> bool {
        let mut seen = vec![false; self.succ.len()];
        let mut stack = vec![from.index()];
        while let Some(n) = stack.pop() {
            for &s in self.succ.get(n).map(Vec::as_slice).unwrap_or(&[]) {
                if s == to.index() {
                    return true;
                }
                if let Some(flag) = seen.get_mut(s) {
                    if !*flag {
                        *flag = true;
                        stack.push(s);
                    }
                }
            }
        }
        false
    }

    /// Whether the graph has a cycle (possible only under `no_cycle_check`).
    pub(crate) fn has_cycle(&self) -> bool {
        // Kahn's algorithm: a cycle leaves nodes with a positive in-degree.
        let mut indeg = vec![0usize; self.succ.len()];
        self.succ.iter().flatten().for_each(|&s| indeg[s] += 1);
        let mut ready: Vec<usize> = (0..indeg.len()).filter(|&n| indeg[n] == 0).collect();
        let mut done = 0;
        while let Some(n) = ready.pop() {
            done += 1;
            for &s in &self.succ[n] {
                indeg[s] -= 1;
                if indeg[s] == 0 {
                    ready.push(s);
                }
            }
        }
        done != self.succ.len()
    }
}

/// The edges a new node gets, in creation order, without duplicates: when two API
/// mechanisms would make the same edge, the first one in the documented order makes it
/// (decision A5).
#[derive(Default)]
pub(crate) struct Deps {
    pub(crate) list: Vec<(Handle<Node>, EdgeKind)>,
}

impl Deps {
    /// Adds `from -> new` with provenance `kind` unless an edge from `from` is already there.
    pub(crate) fn push(&mut self, from: Handle<Node>, kind: EdgeKind) {
        if !self.list.iter().any(|(f, _)| *f == from) {
            self.list.push((from, kind));
        }
    }

    /// The source nodes, in order.
    pub(crate) fn sources(&self) -> Vec<Handle<Node>> {
        self.list.iter().map(|(f, _)| *f).collect()
    }
}

/// Nodes with no successors (the graph's leaves), in creation order.
pub(crate) fn leaves(g: &Graph) -> Vec<Handle<Node>> {
    let mut has_succ = vec![false; g.nodes.len()];
    for (_, e) in g.edges.iter() {
        if let Some(flag) = has_succ.get_mut(e.from.index()) {
            *flag = true;
        }
    }
    g.nodes.handles().filter(|h| !has_succ[h.index()]).collect()
}

/// The leaves of the nodes recorded from queue `q`: nodes recorded from `q` none of whose
/// successors was recorded from `q` (decision A4: a barrier then waits for everything
/// submitted earlier to its queue, whatever other queues did with those nodes).
pub(crate) fn queue_leaves(g: &Graph, q: Handle<Queue>) -> Vec<Handle<Node>> {
    let from_q = |n: Handle<Node>| g.nodes.try_get(n).is_some_and(|node| node.queue == Some(q));
    let mut has_q_succ = vec![false; g.nodes.len()];
    for (_, e) in g.edges.iter() {
        if from_q(e.to) {
            if let Some(flag) = has_q_succ.get_mut(e.from.index()) {
                *flag = true;
            }
        }
    }
    g.nodes.handles().filter(|h| from_q(*h) && !has_q_succ[h.index()]).collect()
}

/// Whether two accessors touch overlapping elements of one buffer.
fn overlaps(a: &Accessor, b: &Accessor) -> bool {
    if a.buffer != b.buffer {
        return false;
    }
    match (a.range, b.range) {
        (Some((alo, ahi)), Some((blo, bhi))) => alo < bhi && blo < ahi,
        _ => true,
    }
}

/// Accessor data dependencies of a new node with requirements `new` (000 §8.2.1, §8.2.2):
/// every earlier node with an overlapping access where at least one side writes
/// (read-after-write, write-after-read, write-after-write; never read-after-read), minus
/// those ordered before another such node (the later one already orders them).
pub(crate) fn accessor_deps(g: &Graph, reqs: &[Vec<Accessor>], new: &[Accessor], adj: &Adjacency) -> Vec<Handle<Node>> {
    let mut candidates: Vec<Handle<Node>> = Vec::new();
    for node in g.nodes.handles() {
        let old = reqs.get(node.index()).map(Vec::as_slice).unwrap_or(&[]);
        let conflict = new.iter().any(|a| old.iter().any(|b| overlaps(a, b) && (a.mode.writes() || b.mode.writes())));
        if conflict {
            candidates.push(node);
        }
    }
    let kept: Vec<Handle<Node>> =
        candidates.iter().copied().filter(|c| !candidates.iter().any(|d| d != c && adj.reaches(*c, *d))).collect();
    kept
}
