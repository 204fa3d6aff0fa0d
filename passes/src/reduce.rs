//! Transitive reduction of a DAG: which edges are implied by paths through other nodes.
//!
//! An edge `u -> v` is *redundant* when `v` is reachable from another successor of `u`;
//! the reduction keeps every other edge, and of duplicate edges the first. The kept set is
//! the unique transitive reduction of the DAG (the same `(from, to)` pairs as petgraph's
//! `dag_transitive_reduction_closure`, checked by `passes/tests/reduce.rs`).
//!
//! # Algorithm
//!
//! Nodes are placed by [`topological_order`] (Kahn's algorithm, lowest index first): in
//! graphs built the way applications record them this keeps most edges *short*, that is
//! their endpoints are close in the order. For every node `u` we keep a bitset `W(u)` of
//! its descendants restricted to the window of the next [`WINDOW`] positions:
//! bit `i` of `W(u)` says whether the node at position `pos(u) + 1 + i` is reachable.
//!
//! Windows compose exactly: a path from `u` to `x` with `pos(x) - pos(u) <= WINDOW` only
//! visits positions in between, so with `v` ranging over the successors of `u`,
//! `W(u) = OR_v shift({v} ∪ W(v), pos(v) - pos(u))`, bits past the window dropped.
//! Nodes are processed from the last position to the first, and each node's successors in
//! increasing position. `v` is reachable from another successor `w` of `u` only if
//! `pos(w) < pos(v)`, so a successor is redundant exactly when it is reachable from the
//! successors processed before it; the running OR above answers that when `v` is inside
//! `u`'s window. A *long* edge (`pos(v) - pos(u) > WINDOW`) is answered by a depth-first
//! search from the earlier kept successors that never goes past `pos(v)` and stops at any
//! node `x` within the window of `v` (`pos(v) - pos(x) <= WINDOW`): there `W(x)` answers
//! whether `v` is reachable from `x`, exactly. A stamp array marks visited nodes per search.
//!
//! # Complexity
//!
//! Time `O((n + m) · WINDOW / 64 + m log d)` for the windows and the per-node sort of
//! successors by position (`d` the largest out-degree), plus, for each long edge, a search
//! bounded to positions below `pos(v) - WINDOW` (at most `O(n + m)` each, and in practice
//! a handful of nodes: the windows cut every search path at the first node near `v`).
//! Memory: `n · WINDOW / 8` bytes of windows (64 MB at 10^6 nodes) plus `O(n + m)` words.

use crate::analysis::{topological_order, Csr};

/// Window length in bits (positions after a node whose reachability is kept exactly).
pub const WINDOW: usize = WORDS * 64;
const WORDS: usize = 8;

type Bits = [u64; WORDS];

/// Returns, for each edge of `succ` in adjacency order (vertex by vertex, each vertex's
/// targets in the order given), whether the transitive reduction keeps it. `None` if the
/// graph has a cycle (a self-loop included).
pub fn transitive_reduction(succ: &Csr) -> Option<Vec<bool>> {
    let n = succ.len();
    let order = topological_order(succ)?;
    let mut pos = vec![0u32; n];
    for (p, &v) in order.iter().enumerate() {
        pos[v as usize] = p as u32;
    }
    let adj = PosAdjacency::new(succ, &order, &pos);
    let mut keep = vec![false; adj.slots.len()];
    let mut windows: Vec<Bits> = vec![[0; WORDS]; n];
    let mut search = Search { stamp: vec![0; n], current: 0, stack: Vec::new() };
    let mut kept: Vec<u32> = Vec::new();
    for p in (0..n as u32).rev() {
        let mut acc: Bits = [0; WORDS];
        kept.clear();
        let mut previous = None;
        for (&q, &slot) in adj.targets(p).iter().zip(adj.slots(p)) {
            if previous == Some(q) {
                continue; // a duplicate: the first one decides
            }
            previous = Some(q);
            let d = (q - p) as usize;
            let redundant = if d <= WINDOW { bit(&acc, d - 1) } else { search.reaches(&adj, &windows, &kept, q) };
            if redundant {
                continue;
            }
            if let Some(k) = keep.get_mut(slot as usize) {
                *k = true;
            }
            kept.push(q);
            if d <= WINDOW {
                set_bit(&mut acc, d - 1);
                if let Some(w) = windows.get(q as usize) {
                    or_shifted(&mut acc, w, d);
                }
            }
        }
        if let Some(w) = windows.get_mut(p as usize) {
            *w = acc;
        }
    }
    // `keep` is indexed by the original adjacency slot already.
    Some(keep)
}

/// Successors by position, sorted by position, each with its slot in the input [`Csr`].
struct PosAdjacency {
    offsets: Vec<u32>,
    targets: Vec<u32>,
    slots: Vec<u32>,
}

impl PosAdjacency {
    fn new(succ: &Csr, order: &[u32], pos: &[u32]) -> PosAdjacency {
        let mut first_slot = vec![0u32; succ.len() + 1];
        for v in 0..succ.len() {
            first_slot[v + 1] = first_slot[v] + succ.neighbours(v as u32).len() as u32;
        }
        let m = first_slot[succ.len()] as usize;
        let mut offsets = Vec::with_capacity(order.len() + 1);
        let mut targets = Vec::with_capacity(m);
        let mut slots = Vec::with_capacity(m);
        let mut row: Vec<(u32, u32)> = Vec::new();
        offsets.push(0);
        for &v in order {
            row.clear();
            let base = first_slot[v as usize];
            for (i, &w) in succ.neighbours(v).iter().enumerate() {
                row.push((pos[w as usize], base + i as u32));
            }
            // By position, then by slot, so the first of duplicate edges comes first.
            row.sort_unstable();
            targets.extend(row.iter().map(|&(q, _)| q));
            slots.extend(row.iter().map(|&(_, s)| s));
            offsets.push(targets.len() as u32);
        }
        PosAdjacency { offsets, targets, slots }
    }

    fn range(&self, p: u32) -> std::ops::Range<usize> {
        let lo = self.offsets.get(p as usize).copied().unwrap_or(0) as usize;
        let hi = self.offsets.get(p as usize + 1).copied().unwrap_or(0) as usize;
        lo..hi.max(lo)
    }

    fn targets(&self, p: u32) -> &[u32] {
        self.targets.get(self.range(p)).unwrap_or(&[])
    }

    fn slots(&self, p: u32) -> &[u32] {
        self.slots.get(self.range(p)).unwrap_or(&[])
    }
}

/// The bounded depth-first search for long edges.
struct Search {
    stamp: Vec<u32>,
    current: u32,
    stack: Vec<u32>,
}

impl Search {
    /// Whether position `target` is reachable from one of `sources` (all before it).
    fn reaches(&mut self, adj: &PosAdjacency, windows: &[Bits], sources: &[u32], target: u32) -> bool {
        self.current = self.current.wrapping_add(1);
        if self.current == 0 {
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.current = 1;
        }
        self.stack.clear();
        // Later sources first: they are the likeliest to reach the target.
        for &w in sources.iter().rev() {
            if self.visit(windows, w, target) {
                return true;
            }
        }
        while let Some(x) = self.stack.pop() {
            crate::work::count(1 + adj.targets(x).len());
            for &y in adj.targets(x) {
                if y > target {
                    break; // sorted by position: the rest are later still
                }
                if y == target || self.visit(windows, y, target) {
                    return true;
                }
            }
        }
        false
    }

    /// Marks `x`; answers from its window when `target` is inside it, else queues `x`.
    fn visit(&mut self, windows: &[Bits], x: u32, target: u32) -> bool {
        let Some(s) = self.stamp.get_mut(x as usize) else { return false };
        if *s == self.current {
            return false;
        }
        *s = self.current;
        let d = target.saturating_sub(x) as usize;
        if d == 0 {
            return false;
        }
        if d <= WINDOW {
            return windows.get(x as usize).is_some_and(|w| bit(w, d - 1));
        }
        self.stack.push(x);
        false
    }
}

fn bit(bits: &Bits, i: usize) -> bool {
    bits.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)
}

fn set_bit(bits: &mut Bits, i: usize) {
    if let Some(w) = bits.get_mut(i / 64) {
        *w |= 1 << (i % 64);
    }
}

/// `dst |= src << d` over the window (bits shifted past the end are dropped).
fn or_shifted(dst: &mut Bits, src: &Bits, d: usize) {
    let (words, bits) = (d / 64, d % 64);
    for k in words..WORDS {
        let lo = src[k - words] << bits;
        let carry = if bits > 0 && k > words { src[k - words - 1] >> (64 - bits) } else { 0 };
        dst[k] |= lo | carry;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reduce(n: usize, pairs: &[(u32, u32)]) -> Vec<(u32, u32)> {
        let csr = Csr::from_pairs(n, pairs);
        let keep = transitive_reduction(&csr).unwrap_or_default();
        let mut out = Vec::new();
        let mut slot = 0;
        for v in 0..n as u32 {
            for &w in csr.neighbours(v) {
                if keep[slot] {
                    out.push((v, w));
                }
                slot += 1;
            }
        }
        out
    }

    #[test]
    fn diamond_shortcut_is_removed() {
        assert_eq!(reduce(4, &[(0, 1), (0, 2), (1, 3), (2, 3), (0, 3)]), vec![(0, 1), (0, 2), (1, 3), (2, 3)]);
    }

    #[test]
    fn duplicates_keep_one() {
        let csr = Csr::from_pairs(2, &[(0, 1), (0, 1)]);
        assert_eq!(transitive_reduction(&csr), Some(vec![true, false]));
    }

    #[test]
    fn cycle_is_refused() {
        assert_eq!(transitive_reduction(&Csr::from_pairs(2, &[(0, 1), (1, 0)])), None);
        assert_eq!(transitive_reduction(&Csr::from_pairs(1, &[(0, 0)])), None);
    }

    #[test]
    fn long_chain_shortcut_beyond_the_window_is_removed() {
        // A chain longer than the window and an edge from its start to its end.
        let n = 3 * WINDOW;
        let mut pairs: Vec<(u32, u32)> = (0..n as u32 - 1).map(|i| (i, i + 1)).collect();
        pairs.push((0, n as u32 - 1));
        pairs.push((5, n as u32 - 2));
        let kept = reduce(n, &pairs);
        assert_eq!(kept.len(), n - 1);
        assert!(!kept.contains(&(0, n as u32 - 1)));
    }

    #[test]
    fn long_edge_that_is_needed_is_kept() {
        // Two chains side by side; an edge across them with no path otherwise.
        let n = 2 * WINDOW + 10;
        let half = (n / 2) as u32;
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        for i in 0..half - 1 {
            pairs.push((i, i + 1));
            pairs.push((half + i, half + i + 1));
        }
        pairs.push((0, n as u32 - 1));
        pairs.push((0, 3));
        let kept = reduce(n, &pairs);
        assert!(kept.contains(&(0, n as u32 - 1)));
        assert!(!kept.contains(&(0, 3)));
    }
}
