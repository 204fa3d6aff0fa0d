//! Which edges a new node gets: reachability, leaves, accessor data dependencies.
//!
//! These are derived facts of the IR graph (and the builder's side table of accessor
//! requirements). Nodes and edges of a modifiable graph are only ever appended, so the
//! facts needed on every submission (successor lists, the leaves of each queue) are kept
//! in an [`Index`] that catches up with the appended tail instead of being rebuilt: a
//! recording of `n` submissions costs `O(n)` for them, not `O(n^2)`.

use cmdgraph_ir::{Accessor, EdgeKind, Graph, Handle, Node, Queue};
use std::collections::HashSet;

/// Successor lists of a graph, for reachability queries.
#[derive(Default)]
pub(crate) struct Adjacency {
    succ: Vec<Vec<usize>>,
    /// Edges of the graph already in `succ` (a prefix of its edge arena).
    edges_seen: usize,
}

impl Adjacency {
    /// The successor lists of `g` as it is now.
    pub(crate) fn new(g: &Graph) -> Adjacency {
        let mut adj = Adjacency::default();
        adj.catch_up(g);
        adj
    }

    /// Adds the nodes and edges appended to `g` since the last call.
    fn catch_up(&mut self, g: &Graph) {
        if self.succ.len() < g.nodes.len() {
            self.succ.resize(g.nodes.len(), Vec::new());
        }
        // By handle, not `iter().skip(..)`: skipping an arena iterator walks the prefix.
        for e in (self.edges_seen..g.edges.len()).filter_map(|i| Handle::from_usize(i).and_then(|h| g.edges.try_get(h)))
        {
            if let Some(list) = self.succ.get_mut(e.from.index()) {
                list.push(e.to.index());
            }
        }
        self.edges_seen = g.edges.len();
    }

    /// Whether there is a path of one or more edges from `from` to `to`. Costs what the
    /// search visits (a set, not an array the size of the graph).
    pub(crate) fn reaches(&self, from: Handle<Node>, to: Handle<Node>) -> bool {
        let mut seen = HashSet::new();
        let mut stack = vec![from.index()];
        while let Some(n) = stack.pop() {
            for &s in self.succ.get(n).map(Vec::as_slice).unwrap_or(&[]) {
                if s == to.index() {
                    return true;
                }
                if seen.insert(s) {
                    stack.push(s);
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

/// Facts kept up to date as the graph grows: successor lists and, per queue, the nodes
/// that may still be leaves of that queue.
#[derive(Default)]
pub(crate) struct Index {
    adj: Adjacency,
    nodes_seen: usize,
    /// Whether a node has a successor (on any queue, or none).
    has_succ: Vec<bool>,
    /// By queue index: nodes of that queue in creation order that had no successor when
    /// last looked at (a node never stops having one: edges are never removed).
    queue_candidates: Vec<Vec<Handle<Node>>>,
}

impl Index {
    /// Catches up with the nodes and edges appended to `g`.
    pub(crate) fn update(&mut self, g: &Graph) {
        for h in (self.nodes_seen..g.nodes.len()).filter_map(Handle::<Node>::from_usize) {
            if let Some(q) = g.nodes.try_get(h).and_then(|node| node.queue) {
                if self.queue_candidates.len() <= q.index() {
                    self.queue_candidates.resize(q.index() + 1, Vec::new());
                }
                if let Some(list) = self.queue_candidates.get_mut(q.index()) {
                    list.push(h);
                }
            }
        }
        self.nodes_seen = g.nodes.len();
        self.has_succ.resize(g.nodes.len(), false);
        for e in
            (self.adj.edges_seen..g.edges.len()).filter_map(|i| Handle::from_usize(i).and_then(|h| g.edges.try_get(h)))
        {
            if let Some(flag) = self.has_succ.get_mut(e.from.index()) {
                *flag = true;
            }
        }
        self.adj.catch_up(g);
    }

    /// The successor lists as of the last [`Index::update`].
    pub(crate) fn adjacency(&self) -> &Adjacency {
        &self.adj
    }

    /// [`queue_leaves`] as of the last [`Index::update`], in `O(candidates)`.
    pub(crate) fn queue_leaves(&mut self, q: Handle<Queue>) -> Vec<Handle<Node>> {
        let Some(list) = self.queue_candidates.get_mut(q.index()) else { return Vec::new() };
        let done = &self.has_succ;
        list.retain(|n| !done.get(n.index()).copied().unwrap_or(false));
        list.clone()
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

/// The leaves of queue `q`, in creation order: nodes recorded from `q` with no successor
/// at all (000 §8.11.7: a barrier with an empty wait list depends on "the leaf nodes that
/// were added to the graph from the queue"; decision A4). A node of `q` whose only
/// successors are on other queues, or explicit nodes, is not a leaf, as in DPC++.
#[cfg(test)]
pub(crate) fn queue_leaves(g: &Graph, q: Handle<Queue>) -> Vec<Handle<Node>> {
    let from_q = |n: Handle<Node>| g.nodes.try_get(n).is_some_and(|node| node.queue == Some(q));
    let mut has_succ = vec![false; g.nodes.len()];
    for (_, e) in g.edges.iter() {
        if let Some(flag) = has_succ.get_mut(e.from.index()) {
            *flag = true;
        }
    }
    g.nodes.handles().filter(|h| from_q(*h) && !has_succ[h.index()]).collect()
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
    if new.is_empty() {
        return Vec::new(); // no accessor: no data dependency, and no scan of the graph
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use cmdgraph_ir::{Edge, NodeKind, Span};

    /// The incremental leaves of a queue are the ones computed from scratch, after every
    /// appended node and edge of a graph mixing two queues and explicit nodes; and both are
    /// the nodes of the queue without any successor.
    #[test]
    fn incremental_queue_leaves_match_a_full_scan() {
        let mut g = Graph::default();
        let queue = |name: &str| cmdgraph_ir::Queue {
            name: name.to_string(),
            in_order: false,
            discard_events: false,
            comments: Default::default(),
        };
        let q0 = g.queues.append(queue("q0"), Span::UNDEFINED);
        let q1 = g.queues.append(queue("q1"), Span::UNDEFINED);
        let mut index = Index::default();
        let mut s = 12345u64;
        for i in 0..200usize {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let queue = [Some(q0), Some(q1), None][(s % 3) as usize];
            let node = Node {
                device: None,
                name: format!("n{i}"),
                kind: NodeKind::Empty,
                queue,
                comments: Default::default(),
            };
            let h = g.nodes.append(node, Span::UNDEFINED);
            for k in 0..(s >> 8) % 3 {
                let from = Handle::from_usize(((s >> (16 + k)) as usize) % (i + 1)).filter(|f| *f != h);
                if let Some(from) = from {
                    g.edges.append(Edge { from, to: h, kind: EdgeKind::MakeEdge }, Span::UNDEFINED);
                }
            }
            index.update(&g);
            let graph_leaves = leaves(&g);
            for q in [q0, q1] {
                let expected: Vec<_> = graph_leaves.iter().copied().filter(|n| g.nodes[*n].queue == Some(q)).collect();
                assert_eq!(queue_leaves(&g, q), expected, "after node {i}");
                assert_eq!(index.queue_leaves(q), expected, "after node {i}");
            }
        }
    }
}
