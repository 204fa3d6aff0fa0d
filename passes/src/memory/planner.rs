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
//!   cliques first), by area (size × lifetime length), by size class then start, and by
//!   start position (a linear scan);
//! - the lowest-offset-first greedy (canonical.rs) over the same orders, for inputs of
//!   moderate size;
//! - local search on the best order: allocations that reach the top of the pool are moved
//!   earlier, or two early allocations swap, and the greedy runs again; a result no larger is
//!   kept. The number of rounds follows a work budget, so large inputs get few and small ones
//!   many, and a seeded generator keeps the plan deterministic;
//! - for up to [`EXACT_LIMIT`] allocations still above the bound, the exact branch and bound
//!   of exact.rs, under a work budget.
//!
//! Best fit itself is in best_fit.rs and the orders are sorted in priority.rs, both shaped
//! for 10^5 allocations (packed intervals and keys, batched memory accesses).

use super::best_fit::BestFit;
use super::canonical::{Lowest, Space};
use super::lifetimes::Problem;
use super::order::Adjacency;
use super::order::Conflicts;
use super::parallel::{self, Threads};
use super::priority::priority;
use std::sync::atomic::{AtomicU64, Ordering};

/// Offsets in bytes and the pool size, for one problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Byte offset of each allocation.
    pub offsets: Vec<u64>,
    /// Pool size in bytes (a multiple of the alignment).
    pub pool: u64,
    /// Which order won (`size`, `neighbourhood`, `area`, `size-class`, `start`), with
    /// `, lowest first` when the lowest-offset-first greedy placed it and ` + search` when
    /// the local search improved on it, ` + exact` when the exact search (exact.rs) did.
    pub strategy: String,
}

/// Sizes in alignment units (rounded up).
pub fn units(problem: &Problem, alignment: u64) -> Vec<u64> {
    let a = alignment.max(1);
    problem.allocs.iter().map(|x| x.size.div_ceil(a)).collect()
}

/// Plans `problem` with `alignment`-byte offsets, on the threads available. `target` is a
/// lower bound on the pool in alignment units, if known ([`super::lower_bound`]): the search
/// stops once it is reached.
pub fn plan(problem: &Problem, conflicts: &Conflicts, alignment: u64, target: Option<u64>) -> Placement {
    plan_with(problem, conflicts, alignment, target, Threads::available())
}

/// [`plan`] on up to `threads` threads. Only inputs over [`LARGE`] allocations use a second
/// one (the two greedy orders run at once); the placement never depends on the thread count.
pub fn plan_with(
    problem: &Problem,
    conflicts: &Conflicts,
    alignment: u64,
    target: Option<u64>,
    threads: Threads,
) -> Placement {
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
    let start = |i: u32| conflicts.start.get(i as usize).copied().unwrap_or(0) as u64;
    let length = |i: u32| {
        let s = start(i);
        let e = conflicts.end.get(i as usize).copied().unwrap_or(0);
        // Live-to-the-end allocations count as ending after every other.
        (if e == super::order::END { conflicts.start.len() as u64 * 4 } else { e as u64 }).saturating_sub(s) + 1
    };
    // Allocations by start position, then index: every order breaks its ties this way.
    let mut by_start = shared.clone();
    by_start.sort_by_key(|&i| start(i));
    let u = |i: u32| units[i as usize];
    let size_class = |i: u32| 64 - u(i).leading_zeros() as u64;
    // Large inputs try only the orders that win there (size, area; see docs/performance.md),
    // to keep planning time near-linear.
    if n > LARGE {
        let area = |i: u32| (u(i).saturating_mul(length(i)), u(i));
        let (top, placed, name) =
            large_greedy(&BestFitInput { units: &units, adj: &conflicts.adj, base }, &by_start, area, threads, target);
        for &i in &shared {
            offsets[i as usize] = placed[i as usize];
        }
        return Placement {
            offsets: offsets.iter().map(|o| o.saturating_mul(alignment)).collect(),
            pool: top.max(base).saturating_mul(alignment),
            strategy: name.to_string(),
        };
    }
    let weights: Vec<u64> = (0..n as u32)
        .map(|i| {
            conflicts.adj.neighbours(i).iter().map(|&j| units.get(j as usize).copied().unwrap_or(0)).sum::<u64>()
                + units[i as usize]
        })
        .collect();
    let mut greedy = Greedy {
        units: &units,
        adj: conflicts,
        base,
        offset: vec![u64::MAX; n],
        best_fit: BestFit::new(&units, &conflicts.adj, base),
        lowest: Lowest::default(),
        work: 0,
    };
    let mut best: Option<(u64, Vec<u64>, Kind, &'static str)> = None;
    // The best order of each greedy kind: where its local search starts.
    let mut seeds: [Option<Seed>; 2] = [None, None];
    let target = target.unwrap_or(0).max(base);
    // Area first: it usually wins, and the size order, placing the largest allocations
    // first, then often reaches that pool early and stops.
    for name in ["area", "size", "neighbourhood", "size-class", "start"] {
        if best.as_ref().is_some_and(|b| b.0 <= target) {
            break;
        }
        let order = match name {
            "size" => priority(&by_start, |i| (u(i), 0)),
            "neighbourhood" => priority(&by_start, |i| (weights.get(i as usize).copied().unwrap_or(0), u(i))),
            "area" => priority(&by_start, |i| (u(i).saturating_mul(length(i)), u(i))),
            "size-class" => priority(&by_start, |i| (size_class(i), u64::MAX - start(i))),
            _ => priority(&by_start, |i| (u64::MAX - start(i), u(i))),
        };
        for kind in [Kind::BestFit, Kind::LowestFirst] {
            if best.as_ref().is_some_and(|b| b.0 <= target) {
                continue;
            }
            let seed = &mut seeds[kind as usize];
            let top = greedy.run(kind, &order, seed.as_ref().map_or(u64::MAX, |s| s.0));
            if seed.as_ref().is_none_or(|s| top < s.0) {
                *seed = Some((top, kind, name, order.clone()));
            }
            if best.as_ref().is_none_or(|b| top < b.0) {
                best = Some((top, greedy.offset.clone(), kind, name));
            }
        }
    }
    let seeds = seeds.map(|s| s.map(|(_, kind, name, order)| (kind, name, order)));
    let mut seeds = seeds;
    let Some((mut top, mut placed, kind, name)) = best else {
        return Placement {
            offsets: offsets.iter().map(|o| o * alignment).collect(),
            pool: base * alignment,
            strategy: "size".to_string(),
        };
    };
    let mut winner = (kind, name);
    // Local search, for the best order of each greedy, with a work budget counted in
    // neighbour visits (deterministic: a seeded generator, no clock): small inputs get many
    // rounds, larger ones few, and inputs over `LARGE` allocations none. A round
    // moves one allocation that reaches the top of the pool to an earlier random position,
    // or swaps two allocations in the leading part of the order; the result is kept when
    // the pool is not larger (plateau moves let the search drift).
    let mut rng = super::workloads::Rng::new(0x6d65_6d6f_7279);
    let mut improved = false;
    for (k, start) in [seeds[0].take(), seeds[1].take()].into_iter().enumerate() {
        let Some((kind, name, mut order)) = start else { continue };
        if top <= target {
            break;
        }
        let budget = LOCAL_SEARCH_WORK / 2 * (k as u64 + 1);
        let mut own_top = greedy.run(kind, &order, u64::MAX);
        let mut own_placed = greedy.offset.clone();
        let mut own_improved = false;
        for _ in 0..MAX_ROUNDS {
            if greedy.work >= budget || order.len() < 2 || own_top <= target {
                break;
            }
            let mut candidate = order.clone();
            if rng.below(3) > 0 {
                // An allocation at the top of the pool, moved earlier.
                let peaks: Vec<usize> = (0..order.len())
                    .filter(|&p| own_placed[order[p] as usize].saturating_add(u(order[p])) >= own_top)
                    .collect();
                let Some(&p) = peaks.get(rng.below(peaks.len() as u64) as usize) else { break };
                let to = rng.below(p as u64 + 1) as usize;
                let x = candidate.remove(p);
                candidate.insert(to, x);
            } else {
                let head = (order.len() as u64).min(64.max(order.len() as u64 / 4));
                let (i, j) = (rng.below(head) as usize, rng.below(head) as usize);
                candidate.swap(i, j);
            }
            let t = greedy.run(kind, &candidate, own_top.saturating_add(1));
            if t <= own_top {
                own_improved |= t < own_top;
                own_top = t;
                own_placed.copy_from_slice(&greedy.offset);
                order = candidate;
            }
        }
        if own_top < top {
            top = own_top;
            placed = own_placed;
            winner = (kind, name);
            improved = own_improved;
        }
    }
    crate::work::count(greedy.work as usize);
    // The exact search, for small problems still above the bound.
    let mut exact = false;
    if n <= EXACT_LIMIT && top > target {
        let input = super::exact::Input { problem, units: &units, adj: &conflicts.adj, base };
        let t = super::exact::improve(&input, &mut placed, top, target, EXACT_WORK);
        exact = t < top;
        top = t;
    }
    let (kind, name) = winner;
    for &i in &shared {
        offsets[i as usize] = placed[i as usize];
    }
    let mut strategy = match kind {
        Kind::BestFit => name.to_string(),
        Kind::LowestFirst => format!("{name}, lowest first"),
    };
    if improved {
        strategy.push_str(" + search");
    }
    if exact {
        strategy.push_str(" + exact");
    }
    let pool = top.max(base);
    Placement {
        offsets: offsets.iter().map(|o| o.saturating_mul(alignment)).collect(),
        pool: pool.saturating_mul(alignment),
        strategy,
    }
}

/// Whether planning `problem` (conflicts and placement) uses more than one of `threads`.
pub fn splits(problem: &Problem, threads: Threads) -> bool {
    threads.splits(problem.succ.len().max(problem.allocs.len()))
}

/// What a best-fit run reads.
struct BestFitInput<'a> {
    units: &'a [u64],
    adj: &'a Adjacency,
    base: u64,
}

/// Large inputs: best fit in the area order and in the size order, the smaller pool wins
/// (area on a tie, and area alone when it reaches `target`). With two threads they run at
/// once; the size order, placing the largest allocations first, stops as soon as its top
/// reaches the area pool, which it learns when the area order ends. The result is the same
/// either way: a size run cut short could not have won. Returns the pool top in units, the
/// offsets and the winning order's name.
fn large_greedy(
    input: &BestFitInput,
    by_start: &[u32],
    area: impl Fn(u32) -> (u64, u64) + Sync,
    threads: Threads,
    target: Option<u64>,
) -> (u64, Vec<u64>, &'static str) {
    let units = input.units;
    let size = |i: u32| (units.get(i as usize).copied().unwrap_or(0), 0);
    let run = |key: &(dyn Fn(u32) -> (u64, u64) + Sync), limit: &AtomicU64| {
        let order = priority(by_start, key);
        let mut best_fit = BestFit::new(units, input.adj, input.base);
        let mut offset = vec![u64::MAX; units.len()];
        let mut work = 0;
        let top = best_fit.run(&order, &mut offset, limit, &mut work);
        crate::work::count(work as usize);
        (top, offset)
    };
    let area_top = AtomicU64::new(u64::MAX);
    let reached = |top: u64| target.is_some_and(|t| top <= t.max(input.base));
    let area_run = || {
        let (top, offset) = run(&area, &AtomicU64::new(u64::MAX));
        // At the target the size order cannot win: stop it at once.
        area_top.store(if reached(top) { 0 } else { top }, Ordering::Relaxed);
        (top, offset)
    };
    let size_run = || run(&size, &area_top);
    let ((top, offset), size) = if threads.splits(units.len()) {
        let (a, s) = parallel::join(threads, units.len(), area_run, size_run);
        (a, Some(s))
    } else {
        let a = area_run();
        let s = (!reached(a.0)).then(size_run);
        (a, s)
    };
    match size {
        Some((s, size_offset)) if s < top && !reached(top) => (s, size_offset, "size"),
        _ => (top, offset, "area"),
    }
}

/// The two greedy placements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Allocations in order, each into its best-fitting gap.
    BestFit = 0,
    /// The allocation with the lowest feasible offset next, ties by order (canonical.rs).
    LowestFirst = 1,
}

/// A local-search start: pool top, greedy kind, order name, order.
type Seed = (u64, Kind, &'static str, Vec<u32>);

/// Work budget of the whole placement, in neighbour visits: the local search runs until the
/// greedy runs have visited this many conflict entries in all (half for each greedy kind).
const LOCAL_SEARCH_WORK: u64 = 8_000_000;

/// Above this many allocations only two orders of the best-fit greedy are tried, and no
/// local search runs.
pub const LARGE: usize = 20_000;

/// Work budget of the exact search (list entries visited; exact.rs).
const EXACT_WORK: u64 = 200_000_000;

/// Above this many allocations the exact search does not run.
pub const EXACT_LIMIT: usize = 2_000;

/// Most local-search rounds per greedy kind, whatever the size.
const MAX_ROUNDS: usize = 5_000;

/// The greedy placements, reusing their buffers between runs.
struct Greedy<'a> {
    units: &'a [u64],
    adj: &'a Conflicts,
    base: u64,
    /// Offset in units, `u64::MAX` when not placed yet.
    offset: Vec<u64>,
    best_fit: BestFit<'a>,
    lowest: Lowest,
    /// Neighbour visits so far (the search budget's unit).
    work: u64,
}

impl Greedy<'_> {
    /// Places every allocation with the greedy `kind` and priority `order`; returns the top
    /// of the pool in units, or stops early and returns `u64::MAX` once the top reaches
    /// `limit` (the best so far): a candidate that cannot win is not worth finishing.
    fn run(&mut self, kind: Kind, order: &[u32], limit: u64) -> u64 {
        match kind {
            Kind::BestFit => self.best_fit.run(order, &mut self.offset, &AtomicU64::new(limit), &mut self.work),
            Kind::LowestFirst => {
                let space = Space { units: self.units, adj: &self.adj.adj, base: self.base };
                self.lowest.run(space, order, &mut self.offset, limit, &mut self.work)
            }
        }
    }
}
