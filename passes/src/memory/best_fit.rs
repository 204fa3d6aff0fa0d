//! Greedy best fit in a given order (TFLite's `GreedyBySize`, XLA's heap simulator): each
//! allocation goes into the smallest gap between the already placed allocations it
//! conflicts with that is large enough, or on top of them.
//!
//! The planner runs it several times over 10^5 allocations, so its cost is mostly memory
//! traffic: for every allocation, its conflict row and the intervals of the neighbours in
//! it, in an order (by size, by area) that jumps across the allocations. Hence:
//! - when every offset fits in 32 bits (the pool can never exceed the sum of the sizes), an
//!   interval is one `u64`, offset in the high half: half the bytes to fetch, and sorting
//!   the placed neighbours by offset is a sort of integers;
//! - allocations are placed in batches: the batch's rows and its neighbours' intervals are
//!   read once before placing, in a loop whose loads do not depend on each other, so their
//!   cache misses overlap instead of coming one after the other. The rows are copied next
//!   to each other on the way: placing then reads one sequential buffer instead of rows the
//!   neighbour intervals may have pushed out of the cache (placement of the random DAG with
//!   10^5 allocations took 0.86–0.91× the time without it, binaries run alternately, pinned).

use super::order::Adjacency;
use std::sync::atomic::{AtomicU64, Ordering};

/// Allocations per batch: about 40 KiB of rows and 100 KiB of intervals on the random DAG,
/// which stay in the L2 cache until the batch is placed.
const BATCH: usize = 512;

/// The buffers of best fit, reused between runs.
pub(super) struct BestFit<'a> {
    units: &'a [u64],
    adj: &'a Adjacency,
    base: u64,
    /// Whether `base` plus all sizes fits in 32 bits: then intervals are packed.
    packed: bool,
    /// Placed intervals as `offset << 32 | top` (`u64::MAX`: not placed), when `packed`.
    narrow: Vec<u64>,
    /// Placed intervals `(offset, top)` (`(u64::MAX, 0)`: not placed), otherwise.
    wide: Vec<(u64, u64)>,
    scratch_narrow: Vec<u64>,
    scratch_wide: Vec<(u64, u64)>,
    batch: Batch<'a>,
}

/// The batch being placed: sizes and conflict rows.
#[derive(Default)]
struct Batch<'a> {
    need: Vec<u64>,
    rows: Vec<&'a [u32]>,
    /// The batch's rows copied one after another, and where each ends.
    flat: Vec<u32>,
    ends: Vec<usize>,
}

impl<'a> BestFit<'a> {
    /// Buffers for allocations of `units` (alignment units) and conflicts `adj`, placed at
    /// `base` or above.
    pub(super) fn new(units: &'a [u64], adj: &'a Adjacency, base: u64) -> BestFit<'a> {
        let total = units.iter().fold(base, |s, &u| s.saturating_add(u));
        let packed = total < u64::from(u32::MAX);
        let n = units.len();
        BestFit {
            units,
            adj,
            base,
            packed,
            narrow: if packed { vec![u64::MAX; n] } else { Vec::new() },
            wide: if packed { Vec::new() } else { vec![<(u64, u64)>::NONE; n] },
            scratch_narrow: Vec::new(),
            scratch_wide: Vec::new(),
            batch: Batch::default(),
        }
    }

    /// Places the allocations of `order` one by one into `offset` (units; entries not in
    /// `order` are left at `u64::MAX`). Returns the top of the pool, or `u64::MAX` as soon as
    /// it reaches `limit`. Adds the conflict entries visited to `work`. `limit` is read once
    /// per batch, so another thread may lower it while this one runs (planner.rs).
    pub(super) fn run(&mut self, order: &[u32], offset: &mut [u64], limit: &AtomicU64, work: &mut u64) -> u64 {
        offset.fill(u64::MAX);
        let mut run = Run { units: self.units, adj: self.adj, base: self.base, limit, top: self.base, offset, work };
        if self.packed {
            self.narrow.fill(u64::NONE);
            run.place(order, &mut self.batch, &mut self.narrow, &mut self.scratch_narrow)
        } else {
            self.wide.fill(<(u64, u64)>::NONE);
            run.place(order, &mut self.batch, &mut self.wide, &mut self.scratch_wide)
        }
    }
}

/// A placed interval `[lo, hi)` in units; ordered by `lo`, then `hi`.
trait Interval: Copy + Ord {
    /// Not placed.
    const NONE: Self;
    fn new(lo: u64, hi: u64) -> Self;
    fn bounds(self) -> (u64, u64);
}

impl Interval for u64 {
    // `lo < hi < 2^32` for a placed one, so never all ones.
    const NONE: u64 = u64::MAX;
    fn new(lo: u64, hi: u64) -> u64 {
        lo << 32 | hi
    }
    fn bounds(self) -> (u64, u64) {
        (self >> 32, self & 0xffff_ffff)
    }
}

impl Interval for (u64, u64) {
    const NONE: (u64, u64) = (u64::MAX, 0);
    fn new(lo: u64, hi: u64) -> (u64, u64) {
        (lo, hi)
    }
    fn bounds(self) -> (u64, u64) {
        self
    }
}

/// One run: its fixed inputs, its output and its pool top so far.
struct Run<'r, 'a> {
    units: &'a [u64],
    adj: &'a Adjacency,
    base: u64,
    limit: &'r AtomicU64,
    top: u64,
    offset: &'r mut [u64],
    work: &'r mut u64,
}

impl<'a> Run<'_, 'a> {
    /// Places `order` batch by batch; the top of the pool, or `u64::MAX` once it reaches
    /// the limit.
    fn place<I: Interval>(
        &mut self,
        order: &[u32],
        batch: &mut Batch<'a>,
        span: &mut [I],
        scratch: &mut Vec<I>,
    ) -> u64 {
        for chunk in order.chunks(BATCH) {
            let limit = self.limit.load(Ordering::Relaxed);
            batch.need.clear();
            batch.rows.clear();
            for &b in chunk {
                batch.need.push(self.units.get(b as usize).copied().unwrap_or(0));
                batch.rows.push(self.adj.neighbours(b));
            }
            // Every neighbour interval of the batch read once, with no dependence between the
            // loads; the values are discarded (placing reads them again, from the cache, after
            // the batch's own placements), only their maximum is kept so the reads happen.
            let mut early = I::NONE;
            batch.flat.clear();
            batch.ends.clear();
            for row in &batch.rows {
                for &a in row.iter() {
                    if let Some(&s) = span.get(a as usize) {
                        early = early.max(s);
                    }
                }
                batch.flat.extend_from_slice(row);
                batch.ends.push(batch.flat.len());
            }
            std::hint::black_box(early);
            let mut lo = 0usize;
            for ((&b, &need), &hi) in chunk.iter().zip(&batch.need).zip(&batch.ends) {
                let row = batch.flat.get(lo..hi).unwrap_or(&[]);
                lo = hi;
                *self.work += row.len() as u64;
                self.place_one(b, need, row, span, scratch);
                if self.top >= limit {
                    return u64::MAX;
                }
            }
        }
        self.top
    }

    /// Places `b` (`need` units, conflict row `row`) into its best-fitting gap.
    fn place_one<I: Interval>(&mut self, b: u32, need: u64, row: &[u32], span: &mut [I], scratch: &mut Vec<I>) {
        let base = self.base;
        if need == 0 {
            if let Some(o) = self.offset.get_mut(b as usize) {
                *o = base;
            }
            return;
        }
        // The placed neighbours, compacted without a branch on whether each is placed (that
        // branch is a coin flip the processor mispredicts half the time).
        scratch.clear();
        scratch.resize(row.len(), I::NONE);
        let mut k = 0;
        for &a in row {
            let s = span.get(a as usize).copied().unwrap_or(I::NONE);
            if let Some(slot) = scratch.get_mut(k) {
                *slot = s;
            }
            k += usize::from(s != I::NONE);
        }
        scratch.truncate(k);
        scratch.sort_unstable();
        let mut cursor = base;
        // The smallest gap that fits (the first of equal ones), chosen with selects rather
        // than branches: `gap >= need` (at least 1) implies the gap is real.
        let (mut best_gap, mut best_at) = (u64::MAX, u64::MAX);
        for &s in scratch.iter() {
            let (lo, hi) = s.bounds();
            let gap = lo.saturating_sub(cursor);
            let better = gap >= need && gap < best_gap;
            best_gap = if better { gap } else { best_gap };
            best_at = if better { cursor } else { best_at };
            cursor = cursor.max(hi);
        }
        // No gap fits: on top of them.
        let at = if best_at != u64::MAX { best_at } else { cursor };
        let hi = at.saturating_add(need);
        if let Some(o) = self.offset.get_mut(b as usize) {
            *o = at;
        }
        if let Some(s) = span.get_mut(b as usize) {
            *s = I::new(at, hi);
        }
        self.top = self.top.max(hi);
    }
}
