//! One topological order per graph, computed once and shared by the cycle check (E0251)
//! and the allocation lifetime checks (E0244-E0247).
//!
//! The order is Kahn's, with a FIFO queue seeded in node creation order, so it is
//! deterministic and roughly follows the graph's depth: commands that run close together
//! get close ranks, which keeps the rank windows of alloc.rs small. Only edges between two
//! distinct nodes in range count (self and dangling edges are reported by edges.rs).
//!
//! A cyclic graph (already an E0251 error) still gets a rank per node so that the later
//! checks keep running on it: its strongly connected components (Tarjan, iterative) are
//! ranked by Kahn's order of the condensation, and every node of a component shares the
//! component's rank. In both cases `rank[from] <= rank[to]` for every edge, with equality
//! exactly inside a component, and nodes of one rank reach each other.
//!
//! Cost: O(nodes + edges) time and memory for an acyclic graph; the same again for the
//! condensation of a cyclic one.

pub(super) use crate::csr::Csr;
use crate::graph::Graph;

/// A graph's topological ranks, nodes by rank, and successor lists.
pub(super) struct Topo {
    /// Successor lists by node index (edges between distinct nodes in range).
    pub succ: Csr,
    /// `rank[i]`: the position of node `i` (of its component, in a cyclic graph) in
    /// topological order.
    pub rank: Vec<u32>,
    /// The nodes by rank: `order[r]` has rank `r` in an acyclic graph; in a cyclic one the
    /// nodes of rank `r` are `order[first[r]..first[r + 1]]`.
    order: Vec<u32>,
    /// Where each rank starts in `order`; empty for an acyclic graph.
    first: Vec<usize>,
    /// Number of distinct ranks: the node count of an acyclic graph.
    pub ranks: usize,
    /// Whether the graph has no cycle.
    pub acyclic: bool,
}

impl Topo {
    /// Orders the nodes of `g`.
    pub(super) fn new(g: &Graph) -> Topo {
        let n = g.nodes.len();
        let pairs: Vec<(u32, u32)> = g
            .edges
            .iter()
            .filter(|(_, e)| e.from != e.to && e.from.index() < n && e.to.index() < n)
            .map(|(_, e)| (e.from.index() as u32, e.to.index() as u32))
            .collect();
        Topo::from_pairs(n, &pairs)
    }

    /// Orders `n` nodes joined by `pairs` (distinct endpoints, both in range).
    pub(super) fn from_pairs(n: usize, pairs: &[(u32, u32)]) -> Topo {
        let succ = Csr::new(n, pairs);
        let order = kahn(&succ);
        let mut rank = vec![0u32; n];
        if order.len() == n {
            for (r, &v) in order.iter().enumerate() {
                rank[v as usize] = r as u32;
            }
            return Topo { succ, rank, order, first: Vec::new(), ranks: n, acyclic: true };
        }
        // Rank the condensation: each component once, in Kahn's order of the component DAG.
        let (comp, count) = components(&succ);
        let cpairs: Vec<(u32, u32)> =
            pairs.iter().map(|&(a, b)| (comp[a as usize], comp[b as usize])).filter(|&(a, b)| a != b).collect();
        let corder = kahn(&Csr::new(count, &cpairs));
        let mut crank = vec![0u32; count];
        for (r, &c) in corder.iter().enumerate() {
            crank[c as usize] = r as u32;
        }
        for (v, slot) in rank.iter_mut().enumerate() {
            *slot = crank[comp[v] as usize];
        }
        // Nodes grouped by rank (a counting sort).
        let mut first = vec![0usize; count + 1];
        for &r in &rank {
            first[r as usize + 1] += 1;
        }
        for r in 0..count {
            first[r + 1] += first[r];
        }
        let mut fill = first.clone();
        let mut order = vec![0u32; n];
        for (v, &r) in rank.iter().enumerate() {
            order[fill[r as usize]] = v as u32;
            fill[r as usize] += 1;
        }
        Topo { succ, rank, order, first, ranks: count, acyclic: false }
    }

    /// The nodes of rank `r`: one in an acyclic graph, a component in a cyclic one.
    pub(super) fn nodes_at(&self, r: usize) -> &[u32] {
        let range = if self.acyclic {
            r..r + 1
        } else {
            match (self.first.get(r), self.first.get(r + 1)) {
                (Some(&a), Some(&b)) => a..b,
                _ => return &[],
            }
        };
        self.order.get(range).unwrap_or(&[])
    }
}

/// Kahn's algorithm with a FIFO queue seeded in index order: every node not on or after a
/// cycle, in topological order (all nodes exactly when the graph is acyclic).
fn kahn(succ: &Csr) -> Vec<u32> {
    let n = succ.len();
    let mut indegree = vec![0u32; n];
    for &t in succ.all_targets() {
        indegree[t as usize] += 1;
    }
    // The output doubles as the queue: `order[head..]` is ready but not yet expanded.
    let mut order: Vec<u32> = (0..n as u32).filter(|&i| indegree[i as usize] == 0).collect();
    order.reserve(n - order.len());
    let mut head = 0;
    while let Some(&i) = order.get(head) {
        head += 1;
        for &j in succ.next(i as usize) {
            let d = &mut indegree[j as usize];
            *d -= 1;
            if *d == 0 {
                order.push(j);
            }
        }
    }
    order
}

/// Strongly connected components (Tarjan's algorithm with an explicit stack, so any graph
/// size is safe): each node's component and the number of components.
fn components(succ: &Csr) -> (Vec<u32>, usize) {
    const UNSEEN: u32 = u32::MAX;
    let n = succ.len();
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0u32; n];
    let mut comp = vec![UNSEEN; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<u32> = Vec::new();
    // (node, position in its successor list)
    let mut calls: Vec<(u32, usize)> = Vec::new();
    let (mut next_index, mut count) = (0u32, 0u32);
    for root in 0..n as u32 {
        if index[root as usize] != UNSEEN {
            continue;
        }
        calls.push((root, 0));
        index[root as usize] = next_index;
        low[root as usize] = next_index;
        next_index += 1;
        stack.push(root);
        on_stack[root as usize] = true;
        while let Some((v, pos)) = calls.last_mut() {
            let v = *v as usize;
            if let Some(&w) = succ.next(v).get(*pos) {
                *pos += 1;
                let wi = w as usize;
                if index[wi] == UNSEEN {
                    index[wi] = next_index;
                    low[wi] = next_index;
                    next_index += 1;
                    stack.push(w);
                    on_stack[wi] = true;
                    calls.push((w, 0));
                } else if on_stack[wi] {
                    low[v] = low[v].min(index[wi]);
                }
                continue;
            }
            calls.pop();
            if let Some(&(parent, _)) = calls.last() {
                low[parent as usize] = low[parent as usize].min(low[v]);
            }
            if low[v] == index[v] {
                while let Some(w) = stack.pop() {
                    on_stack[w as usize] = false;
                    comp[w as usize] = count;
                    if w as usize == v {
                        break;
                    }
                }
                count += 1;
            }
        }
    }
    (comp, count as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_follow_every_edge() {
        // 0 -> 1 -> 2, 0 -> 2, 3 alone.
        let t = Topo::from_pairs(4, &[(0, 1), (1, 2), (0, 2)]);
        assert!(t.acyclic);
        assert_eq!(t.ranks, 4);
        assert!(t.rank[0] < t.rank[1] && t.rank[1] < t.rank[2]);
        // FIFO from index order: the two sources come first.
        assert_eq!((t.rank[0], t.rank[3]), (0, 1));
        assert_eq!([0, 1, 2, 3].map(|r| t.nodes_at(r)), [&[0], &[3], &[1], &[2]]);
        let pred = t.succ.transpose();
        assert_eq!((pred.next(2), pred.next(0)), (&[0, 1][..], &[][..]));
    }

    #[test]
    fn a_cycle_shares_one_rank_and_stays_ordered_with_the_rest() {
        // 0 -> 1 -> 2 -> 1 (cycle {1, 2}), 2 -> 3, 4 -> 0.
        let t = Topo::from_pairs(5, &[(0, 1), (1, 2), (2, 1), (2, 3), (4, 0)]);
        assert!(!t.acyclic);
        assert_eq!(t.ranks, 4);
        assert_eq!(t.rank[1], t.rank[2]);
        assert_eq!(t.nodes_at(t.rank[1] as usize), &[1, 2]);
        assert_eq!(t.nodes_at(t.rank[4] as usize), &[4]);
        assert!(t.rank[4] < t.rank[0] && t.rank[0] < t.rank[1] && t.rank[2] < t.rank[3]);
    }

    #[test]
    fn deep_cycles_do_not_recurse() {
        let n = 200_000u32;
        let mut pairs: Vec<(u32, u32)> = (0..n - 1).map(|i| (i, i + 1)).collect();
        pairs.push((n - 1, 0));
        let t = Topo::from_pairs(n as usize, &pairs);
        assert!(!t.acyclic);
        assert_eq!(t.ranks, 1);
    }
}
