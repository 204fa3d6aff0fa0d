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

const INF: u64 = u64::MAX / 4;

/// The heaviest antichain's weight in units of `units` (one entry per allocation).
pub fn lower_bound(problem: &Problem, units: &[u64]) -> u64 {
    let n = problem.succ.len();
    let (source, sink) = (n as u32, n as u32 + 1);
    let mut net = Network::new(n + 2);
    let mut fixed = 0u64;
    let mut feasible = 0u64;
    for v in 0..n as u32 {
        for &w in problem.succ.neighbours(v) {
            net.arc(v, w, 0, 0, INF);
        }
    }
    for (i, a) in problem.allocs.iter().enumerate() {
        let w = units.get(i).copied().unwrap_or(0);
        if a.zero_init {
            fixed = fixed.saturating_add(w);
            continue;
        }
        if w == 0 {
            continue;
        }
        let end = a.free.unwrap_or(sink);
        // Feasible flow: w along source -> malloc -> (allocation arc) -> free -> sink.
        net.arc(source, a.malloc, w, 0, INF);
        net.arc(a.malloc, end, w, w, INF);
        if end != sink {
            net.arc(end, sink, w, 0, INF);
        }
        feasible = feasible.saturating_add(w);
    }
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
