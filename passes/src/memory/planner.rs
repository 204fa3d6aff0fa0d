//! Offset assignment in one pool.
//!
//! Sizes are counted in alignment units, so every offset is a multiple of the alignment
//! and the pool is a whole number of units. `zero_init` allocations are stacked at the
//! bottom of the pool and share with nothing; the others are placed above them.
//!
//! The base heuristic is greedy by size with best fit (TFLite's `GreedyBySize`, XLA's heap
//! simulator): take allocations largest first and put each into the smallest gap left by the
//! already placed allocations it conflicts with, or on top of them. The planner improves on
//! it in two ways, and keeps the best result (ties go to the earlier candidate, so the plan
//! is deterministic):
//! - other orders: by the weight of the conflict neighbourhood (allocations in the heaviest
//!   cliques first) and by start position (a linear scan);
//! - peak promotion: the allocation that ends highest is moved to the front of the order and
//!   the greedy is run again, for a number of rounds bounded by the problem size.

use super::lifetimes::Problem;
use super::order::Conflicts;

/// Offsets in bytes and the pool size, for one problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Byte offset of each allocation.
    pub offsets: Vec<u64>,
    /// Pool size in bytes (a multiple of the alignment).
    pub pool: u64,
    /// Which candidate won: `size`, `neighbourhood`, `start`, or one of them `+promote`.
    pub strategy: &'static str,
}

/// Sizes in alignment units (rounded up).
pub fn units(problem: &Problem, alignment: u64) -> Vec<u64> {
    let a = alignment.max(1);
    problem.allocs.iter().map(|x| x.size.div_ceil(a)).collect()
}

/// Plans `problem` with `alignment`-byte offsets.
pub fn plan(problem: &Problem, conflicts: &Conflicts, alignment: u64) -> Placement {
    let alignment = alignment.max(1);
    let units = units(problem, alignment);
    let n = units.len();
    // zero_init allocations first, stacked.
    let mut offsets = vec![0u64; n];
    let mut base = 0u64;
    for (i, a) in problem.allocs.iter().enumerate() {
        if a.zero_init {
            offsets[i] = base;
            base = base.saturating_add(units[i]);
        }
    }
    let shared: Vec<u32> = (0..n as u32).filter(|&i| !problem.allocs[i as usize].zero_init).collect();
    let degree_weight = |i: u32| -> u64 {
        conflicts.adj.neighbours(i).iter().map(|&j| units.get(j as usize).copied().unwrap_or(0)).sum::<u64>()
            + units[i as usize]
    };
    let mut by_size = shared.clone();
    by_size.sort_by(|&a, &b| units[b as usize].cmp(&units[a as usize]).then(conflicts.start[a as usize].cmp(&conflicts.start[b as usize])));
    let mut by_weight = shared.clone();
    let weights: Vec<u64> = (0..n as u32).map(degree_weight).collect();
    by_weight.sort_by(|&a, &b| {
        weights[b as usize].cmp(&weights[a as usize]).then(units[b as usize].cmp(&units[a as usize])).then(a.cmp(&b))
    });
    let mut by_start = shared.clone();
    by_start.sort_by_key(|&i| conflicts.start[i as usize]);

    let mut greedy = Greedy { units: &units, adj: conflicts, base, offset: vec![u64::MAX; n], scratch: Vec::new() };
    let mut best: Option<(u64, Vec<u64>, &'static str, Vec<u32>)> = None;
    for (name, order) in [("size", by_size), ("neighbourhood", by_weight), ("start", by_start)] {
        let top = greedy.run(&order, best.as_ref().map_or(u64::MAX, |b| b.0));
        if best.as_ref().is_none_or(|b| top < b.0) {
            best = Some((top, greedy.offset.clone(), name, order));
        }
    }
    let Some((mut top, mut placed, mut strategy, mut order)) = best else {
        return Placement { offsets: offsets.iter().map(|o| o * alignment).collect(), pool: base * alignment, strategy: "size" };
    };
    // Peak promotion, with a work budget so planning time stays linear-ish in the input.
    let work = (n + 2 * conflicts.pairs()).max(1);
    let rounds = (3_000_000 / work).saturating_sub(3).min(64);
    let mut tried = std::collections::BTreeSet::new();
    for _ in 0..rounds {
        let peak = order.iter().copied().filter(|&i| !tried.contains(&i)).max_by_key(|&i| {
            (placed[i as usize].saturating_add(units[i as usize]), std::cmp::Reverse(i))
        });
        let Some(peak) = peak else { break };
        if placed[peak as usize].saturating_add(units[peak as usize]) < top {
            break;
        }
        tried.insert(peak);
        let mut candidate = order.clone();
        candidate.retain(|&i| i != peak);
        candidate.insert(0, peak);
        let t = greedy.run(&candidate, top);
        if t < top {
            top = t;
            placed = greedy.offset.clone();
            order = candidate;
            strategy = match strategy {
                "size" | "size+promote" => "size+promote",
                "neighbourhood" | "neighbourhood+promote" => "neighbourhood+promote",
                _ => "start+promote",
            };
            tried.clear();
        }
    }
    for &i in &shared {
        offsets[i as usize] = placed[i as usize];
    }
    let pool = top.max(base);
    Placement { offsets: offsets.iter().map(|o| o.saturating_mul(alignment)).collect(), pool: pool.saturating_mul(alignment), strategy }
}

/// Greedy best-fit placement in a given order, reusing its buffers between runs.
struct Greedy<'a> {
    units: &'a [u64],
    adj: &'a Conflicts,
    base: u64,
    /// Offset in units, `u64::MAX` when not placed yet.
    offset: Vec<u64>,
    scratch: Vec<(u64, u64)>,
}

impl Greedy<'_> {
    /// Places every allocation of `order`; returns the top of the pool in units, or stops
    /// early and returns `u64::MAX` once the top reaches `limit` (the best so far): a
    /// candidate that cannot win is not worth finishing.
    fn run(&mut self, order: &[u32], limit: u64) -> u64 {
        self.offset.fill(u64::MAX);
        let mut top = self.base;
        for &b in order {
            let need = self.units[b as usize];
            if need == 0 {
                self.offset[b as usize] = self.base;
                continue;
            }
            self.scratch.clear();
            for &a in self.adj.adj.neighbours(b) {
                let o = self.offset[a as usize];
                if o != u64::MAX {
                    self.scratch.push((o, o.saturating_add(self.units[a as usize])));
                }
            }
            self.scratch.sort_unstable();
            let mut cursor = self.base;
            let mut best: Option<(u64, u64)> = None; // (gap, offset)
            for &(lo, hi) in &self.scratch {
                if lo > cursor {
                    let gap = lo - cursor;
                    if gap >= need && best.is_none_or(|(g, _)| gap < g) {
                        best = Some((gap, cursor));
                    }
                }
                cursor = cursor.max(hi);
            }
            let at = best.map_or(cursor, |(_, o)| o);
            self.offset[b as usize] = at;
            top = top.max(at.saturating_add(need));
            if top >= limit {
                return u64::MAX;
            }
        }
        top
    }
}
