//! The lower bound: the heaviest set of pairwise unordered allocations.
//!
//! Allocations that are pairwise unordered (an antichain of `≺`) can all be live at once
//! in some schedule, so no plan fits them in fewer bytes than the sum of their sizes. The
//! heaviest antichain is found exactly by min-flow (weighted Dilworth): on the DAG, every
//! allocation becomes an arc malloc → free that must carry at least its size, the DAG's own
//! edges carry anything, flow enters at mallocs and leaves at frees. A unit of flow follows a
//! chain of allocations each freed before the next is allocated; the least flow covering
//! every arc equals the heaviest antichain (a closed cut crosses only unordered arcs).
//!
//! The min flow is found as a feasible flow (each allocation on its own path) minus a max
//! flow pushed back from sink to source in the residual network (Dinic). Sizes are in
//! alignment units, so the bound is comparable with the aligned pool. `zero_init`
//! allocations conflict with everything, so their sizes are added to any antichain.

use super::lifetimes::Problem;
use super::order::Conflicts;

const INF: u64 = u64::MAX / 4;

/// The heaviest antichain's weight in units of `units` (one entry per allocation).
/// `conflicts` must be those of `problem`: they seed the flow with a greedy chain cover.
pub fn lower_bound(problem: &Problem, conflicts: &Conflicts, units: &[u64]) -> u64 {
    let n = problem.succ.len();
    let (source, sink) = (n as u32, n as u32 + 1);
    let mut net = Network::new(n + 2);
    let mut fixed = 0u64;
    for v in 0..n as u32 {
        for &w in problem.succ.neighbours(v) {
            net.arc(v, w, 0, 0, INF);
        }
    }
    let w = |i: u32| units.get(i as usize).copied().unwrap_or(0);
    let mut order: Vec<u32> = Vec::new();
    for (i, a) in problem.allocs.iter().enumerate() {
        // A vertex outside the graph (a malformed problem; `order::conflicts` rejects it)
        // takes no part.
        if a.malloc >= n as u32 || a.free.is_some_and(|f| f >= n as u32) {
            continue;
        }
        if a.zero_init {
            fixed = fixed.saturating_add(w(i as u32));
        } else if w(i as u32) > 0 {
            order.push(i as u32);
        }
    }
    order.sort_by_key(|&i| conflicts.start.get(i as usize).copied().unwrap_or(0));
    // Greedy chain cover, in start order: an allocation takes its flow from the frees of
    // allocations ordered before it (non-conflicting and started earlier), the most recent
    // first, and from the source for the rest. The flow from a free `f_a` to a malloc `m_b`
    // runs on an added arc `f_a -> m_b`, which changes nothing: `f_a` reaches `m_b` already.
    // Dinic then only corrects what the greedy missed, instead of building every chain
    // through long paths of the DAG.
    let mut feasible = 0u64;
    let mut available: Vec<(u32, u64)> = Vec::new();
    let mut spent = 0usize;
    for &b in &order {
        let alloc = &problem.allocs[b as usize];
        let mut need = w(b);
        let mut k = available.len();
        while need > 0 && k > 0 {
            k -= 1;
            let (a, left) = available[k];
            if left == 0 || conflicts.conflict(problem, a, b) {
                continue;
            }
            let take = left.min(need);
            if let Some(f) = problem.allocs.get(a as usize).and_then(|x| x.free) {
                net.arc(f, alloc.malloc, take, 0, INF);
            }
            available[k].1 -= take;
            need -= take;
            if available[k].1 == 0 {
                spent += 1;
            }
        }
        // Spent entries are skipped by the scan; dropping them when they are half the list
        // keeps the scans linear overall.
        if spent * 2 > available.len() {
            available.retain(|&(_, left)| left > 0);
            spent = 0;
        }
        if need > 0 {
            net.arc(source, alloc.malloc, need, 0, INF);
            feasible = feasible.saturating_add(need);
        }
        let end = alloc.free.unwrap_or(sink);
        net.arc(alloc.malloc, end, w(b), w(b), INF);
        if end != sink {
            available.push((b, w(b)));
        }
    }
    for (a, left) in available {
        if let Some(f) = problem.allocs.get(a as usize).and_then(|x| x.free) {
            net.arc(f, sink, left, 0, INF);
        }
    }
    // Frees with flow left over send it to the sink; each malloc's arc from the source carries
    // what its predecessors did not. Pushing flow back from sink to source lowers the total.
    let back = net.max_flow(sink, source);
    fixed.saturating_add(feasible.saturating_sub(back))
}

/// A residual network for Dinic's algorithm.
struct Network {
    head: Vec<u32>,
    /// Arcs: (to, next arc from the same vertex, residual capacity).
    arcs: Vec<(u32, u32, u64)>,
}

const NONE: u32 = u32::MAX;

impl Network {
    fn new(n: usize) -> Network {
        Network { head: vec![NONE; n], arcs: Vec::new() }
    }

    fn push_arc(&mut self, from: u32, to: u32, cap: u64) {
        let id = self.arcs.len() as u32;
        self.arcs.push((to, self.head[from as usize], cap));
        self.head[from as usize] = id;
    }

    /// Arc `from -> to` carrying `flow` with bounds `lower..=upper`: its forward residual
    /// is the room to increase, its backward one the room to decrease.
    fn arc(&mut self, from: u32, to: u32, flow: u64, lower: u64, upper: u64) {
        self.push_arc(from, to, upper.saturating_sub(flow));
        self.push_arc(to, from, flow.saturating_sub(lower));
    }

    fn max_flow(&mut self, s: u32, t: u32) -> u64 {
        let n = self.head.len();
        let mut total = 0u64;
        let mut level = vec![u32::MAX; n];
        let mut iter = vec![NONE; n];
        let mut queue = Vec::with_capacity(n);
        loop {
            level.fill(u32::MAX);
            level[s as usize] = 0;
            queue.clear();
            queue.push(s);
            let mut qi = 0;
            while qi < queue.len() {
                let v = queue[qi];
                qi += 1;
                let mut e = self.head[v as usize];
                while e != NONE {
                    let (to, next, cap) = self.arcs[e as usize];
                    if cap > 0 && level[to as usize] == u32::MAX {
                        level[to as usize] = level[v as usize] + 1;
                        queue.push(to);
                    }
                    e = next;
                }
            }
            if level[t as usize] == u32::MAX {
                return total;
            }
            iter.copy_from_slice(&self.head);
            loop {
                let f = self.augment(s, t, &level, &mut iter);
                if f == 0 {
                    break;
                }
                total = total.saturating_add(f);
            }
        }
    }

    /// One blocking-flow path from `s` to `t` along increasing levels (iterative DFS).
    fn augment(&mut self, s: u32, t: u32, level: &[u32], iter: &mut [u32]) -> u64 {
        let mut path: Vec<u32> = Vec::new(); // arc ids
        let mut v = s;
        loop {
            if v == t {
                let f = path.iter().map(|&e| self.arcs[e as usize].2).min().unwrap_or(0);
                for &e in &path {
                    self.arcs[e as usize].2 -= f;
                    self.arcs[(e ^ 1) as usize].2 = self.arcs[(e ^ 1) as usize].2.saturating_add(f);
                }
                return f;
            }
            let mut advanced = false;
            while iter[v as usize] != NONE {
                let e = iter[v as usize];
                let (to, next, cap) = self.arcs[e as usize];
                if cap > 0 && level[to as usize] == level[v as usize].wrapping_add(1) {
                    path.push(e);
                    v = to;
                    advanced = true;
                    break;
                }
                iter[v as usize] = next;
            }
            if !advanced {
                // Dead end: retreat and skip the arc that led here.
                match path.pop() {
                    None => return 0,
                    Some(e) => {
                        let from = self.arcs[(e ^ 1) as usize].0;
                        v = from;
                        iter[v as usize] = self.arcs[e as usize].1;
                    }
                }
            }
        }
    }
}
