//! Lowest-offset-first placement ("canonical" solutions in MiniMalloc's terms).
//!
//! Instead of taking allocations in a fixed order and giving each its best gap, this greedy
//! repeatedly places, among all unplaced allocations, the one whose lowest feasible offset
//! (first fit above its placed conflicting neighbours) is lowest, ties going to the earlier
//! one in a priority order. It fills the pool bottom-up like a skyline, which suits
//! interval-shaped problems whose sizes vary a lot; MiniMalloc shows that some optimal
//! solution is always of this form. Cost: each placement recomputes the lowest offset of the
//! unplaced neighbours it overlaps, O(Σ degree²) in the worst case, so the planner uses it
//! for inputs of moderate size only.

use super::order::Adjacency;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What is being packed: sizes in units, conflicts, and the lowest offset allowed.
#[derive(Clone, Copy)]
pub(super) struct Space<'a> {
    /// Sizes in alignment units.
    pub units: &'a [u64],
    /// The conflict graph.
    pub adj: &'a Adjacency,
    /// The lowest offset (above the `zero_init` allocations).
    pub base: u64,
}

/// Buffers of the lowest-offset-first greedy, reused between runs.
#[derive(Default)]
pub(super) struct Lowest {
    lowest: Vec<u64>,
    rank: Vec<u32>,
    heap: BinaryHeap<Reverse<(u64, u32, u32)>>,
    scratch: Vec<(u64, u64)>,
}

impl Lowest {
    /// Places the allocations of `order` (priority: earlier first) into `offset` (units;
    /// `u64::MAX` = unplaced). Returns the top of the pool, or `u64::MAX` as soon as it
    /// reaches `limit`.
    pub(super) fn run(
        &mut self,
        space: Space<'_>,
        order: &[u32],
        offset: &mut [u64],
        limit: u64,
        work: &mut u64,
    ) -> u64 {
        let Space { units, adj, base } = space;
        let n = units.len();
        offset.fill(u64::MAX);
        self.lowest.clear();
        self.lowest.resize(n, base);
        self.rank.clear();
        self.rank.resize(n, u32::MAX);
        self.heap.clear();
        let mut top = base;
        for (r, &i) in order.iter().enumerate() {
            self.rank[i as usize] = r as u32;
            if units[i as usize] == 0 {
                offset[i as usize] = base;
            } else {
                self.heap.push(Reverse((base, r as u32, i)));
            }
        }
        while let Some(Reverse((lo, _, i))) = self.heap.pop() {
            let iu = i as usize;
            if offset[iu] != u64::MAX || lo != self.lowest[iu] {
                continue;
            }
            offset[iu] = lo;
            let hi = lo.saturating_add(units[iu]);
            top = top.max(hi);
            if top >= limit {
                return u64::MAX;
            }
            *work += adj.neighbours(i).len() as u64;
            for &j in adj.neighbours(i) {
                let ju = j as usize;
                if offset[ju] != u64::MAX || self.rank[ju] == u32::MAX {
                    continue;
                }
                let (jl, jh) = (self.lowest[ju], self.lowest[ju].saturating_add(units[ju]));
                if jl < hi && lo < jh {
                    *work += adj.neighbours(j).len() as u64;
                    let l = self.first_fit(units, adj, hi, j, offset);
                    self.lowest[ju] = l;
                    self.heap.push(Reverse((l, self.rank[ju], j)));
                }
            }
        }
        top
    }

    /// The lowest offset from `from` up where `j` fits among its placed neighbours. Called
    /// with the top of an interval just placed across `j`'s candidate position: every
    /// position below that top and above the old candidate overlaps the new interval, and
    /// every position below the old candidate was already blocked.
    fn first_fit(&mut self, units: &[u64], adj: &Adjacency, from: u64, j: u32, offset: &[u64]) -> u64 {
        self.scratch.clear();
        for &a in adj.neighbours(j) {
            let o = offset[a as usize];
            if o != u64::MAX {
                self.scratch.push((o, o.saturating_add(units[a as usize])));
            }
        }
        self.scratch.sort_unstable();
        let need = units[j as usize];
        let mut cursor = from;
        for &(lo, hi) in &self.scratch {
            if lo >= cursor.saturating_add(need) {
                break;
            }
            cursor = cursor.max(hi);
        }
        cursor
    }
}
