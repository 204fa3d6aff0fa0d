//! Data parallelism for planning large inputs.
//!
//! Work is cut into contiguous ranges that run on scoped threads, and the results are joined
//! in range order, so every output is the same whatever the thread count: the plan, its
//! offsets and the conflict lists do not depend on the machine. Inputs below [`MIN_CHUNK`]
//! items per range stay on the calling thread, where spawning would cost more than it saves.

use std::ops::Range;

/// The fewest items worth a range of their own.
const MIN_CHUNK: usize = 8_192;

/// The most threads the planner uses: past this the phases it splits are bound by memory
/// bandwidth, not by cores.
const MAX_THREADS: usize = 16;

/// How many threads planning may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Threads {
    count: usize,
    /// The fewest items per range ([`MIN_CHUNK`] unless a test asks for smaller ranges).
    min_chunk: usize,
}

impl Threads {
    /// Everything on the calling thread.
    pub const ONE: Threads = Threads { count: 1, min_chunk: MIN_CHUNK };

    /// The threads this process may run on (its CPU affinity and quota, as
    /// [`std::thread::available_parallelism`] reports them), at most 16.
    pub fn available() -> Threads {
        Threads::new(std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    /// `n` threads (at least 1, at most 16).
    pub fn new(n: usize) -> Threads {
        Threads { count: n.clamp(1, MAX_THREADS), min_chunk: MIN_CHUNK }
    }

    /// The same threads, splitting work into ranges of as few as `items` (at least 1).
    /// Tests use it to cut small inputs at every place a large one could be cut.
    pub fn with_min_chunk(self, items: usize) -> Threads {
        Threads { min_chunk: items.max(1), ..self }
    }

    /// The thread count.
    pub fn get(self) -> usize {
        self.count
    }

    /// Into how many ranges `len` items are cut.
    fn ranges(self, len: usize) -> usize {
        (len / self.min_chunk).clamp(1, self.count)
    }

    /// Whether work on `len` items is split at all.
    pub(super) fn splits(self, len: usize) -> bool {
        self.ranges(len) > 1
    }
}

/// `0..len` cut into `k` contiguous ranges of nearly equal length.
fn cut(len: usize, k: usize) -> Vec<Range<usize>> {
    (0..k).map(|i| len * i / k..len * (i + 1) / k).collect()
}

/// Runs `f(k, range)` on contiguous ranges covering `0..len`, the `k`-th range on the `k`-th
/// thread (the first on the calling thread), and returns the results in range order.
pub(super) fn map_ranges<T: Send>(threads: Threads, len: usize, f: impl Fn(usize, Range<usize>) -> T + Sync) -> Vec<T> {
    map_parts(ranges(threads, len).into_iter().enumerate().collect(), |(k, range)| f(k, range))
}

/// Runs `f` on each of `parts`, one thread per part (the first on the calling thread).
pub(super) fn for_each<P: Send>(parts: Vec<P>, f: impl Fn(P) + Sync) {
    map_parts(parts, f);
}

/// `f` of each of `parts`, one thread per part (the first on the calling thread), in order.
fn map_parts<P: Send, T: Send>(parts: Vec<P>, f: impl Fn(P) -> T + Sync) -> Vec<T> {
    let mut parts = parts.into_iter();
    let Some(first) = parts.next() else { return Vec::new() };
    if parts.len() == 0 {
        return vec![f(first)];
    }
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = parts.map(|p| s.spawn(move || f(p))).collect();
        let mut out = Vec::with_capacity(handles.len() + 1);
        out.push(f(first));
        // A panic in a worker is a bug in the planner; it is passed on as it is.
        out.extend(handles.into_iter().map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))));
        out
    })
}

/// Runs `a` and `b`, on two threads when `threads` would split work on `items` items.
pub(super) fn join<A: Send, B: Send>(
    threads: Threads,
    items: usize,
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    if !threads.splits(items) {
        return (a(), b());
    }
    std::thread::scope(|s| {
        let hb = s.spawn(b);
        let ra = a();
        (ra, hb.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
    })
}

/// Splits `targets` (rows `offsets[i]..offsets[i + 1]`) into the parts owned by each range
/// of rows in `ranges`, for writers that fill disjoint sets of rows in parallel.
pub(super) fn split_rows<'t>(targets: &'t mut [u32], offsets: &[u32], ranges: &[Range<usize>]) -> Vec<&'t mut [u32]> {
    let mut parts = Vec::with_capacity(ranges.len());
    let mut rest: &mut [u32] = targets;
    let mut at = 0usize;
    for r in ranges {
        let hi = (offsets.get(r.end).copied().unwrap_or(0) as usize).max(at);
        let take = (hi - at).min(rest.len());
        let (part, tail) = std::mem::take(&mut rest).split_at_mut(take);
        parts.push(part);
        rest = tail;
        at = hi;
    }
    parts
}

/// The ranges [`map_ranges`] would cut `len` items into with `threads`.
pub(super) fn ranges(threads: Threads, len: usize) -> Vec<Range<usize>> {
    cut(len, threads.ranges(len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_everything_once_in_order() {
        for len in [0, 1, 8_191, 8_192, 100_000, 1_000_003] {
            for t in [1, 2, 3, 16] {
                let rs = ranges(Threads::new(t), len);
                assert!(rs.len() <= t);
                let mut next = 0;
                for r in &rs {
                    assert_eq!(r.start, next);
                    next = r.end;
                }
                assert_eq!(next, len);
                let sums = map_ranges(Threads::new(t), len, |_, r| r.clone());
                assert_eq!(sums, rs);
            }
        }
    }

    #[test]
    fn split_rows_gives_each_range_its_rows() {
        let offsets = [0u32, 2, 2, 5, 9];
        let mut targets: Vec<u32> = (0..9).collect();
        let parts = split_rows(&mut targets, &offsets, &[0..1, 1..3, 3..4]);
        let got: Vec<Vec<u32>> = parts.into_iter().map(|p| p.to_vec()).collect();
        assert_eq!(got, vec![vec![0, 1], vec![2, 3, 4], vec![5, 6, 7, 8]]);
    }
}
