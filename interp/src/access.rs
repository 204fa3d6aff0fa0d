//! Recording which bytes each node actually touched, for the race detector.
//!
//! Accesses arrive one element at a time, mostly in ascending order, so each set extends
//! its last interval when the new one touches it and otherwise appends; when the list grows
//! it is sorted and merged in place, which keeps memory proportional to the number of
//! distinct intervals rather than the number of accesses.

use super::memory::Loc;
use std::collections::BTreeMap;
use std::fmt;

/// How a node touched memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AccessKind {
    /// Loads, memcpy sources, host reads.
    Read,
    /// Stores, atomics, memset/memfill/memcpy destinations, host writes.
    Write,
    /// An `async_malloc` node bringing the allocation to life (conflicts like a write).
    Alloc,
    /// An `async_free` node ending the allocation (conflicts like a write).
    Free,
}

impl AccessKind {
    /// Whether the access conflicts with any other access to the same bytes.
    pub fn writes(self) -> bool {
        self != AccessKind::Read
    }
}

impl fmt::Display for AccessKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AccessKind::Read => "read",
            AccessKind::Write => "write",
            AccessKind::Alloc => "async_malloc",
            AccessKind::Free => "async_free",
        })
    }
}

/// A set of half-open byte intervals.
#[derive(Clone, Debug, Default)]
pub(crate) struct IntervalSet {
    spans: Vec<(u64, u64)>,
    /// Length after the last merge; the next merge happens at twice that.
    merged_len: usize,
}

impl IntervalSet {
    /// Adds `[start, end)`.
    pub fn add(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        if let Some(last) = self.spans.last_mut() {
            if start <= last.1 && end >= last.0 {
                last.0 = last.0.min(start);
                last.1 = last.1.max(end);
                return;
            }
        }
        self.spans.push((start, end));
        if self.spans.len() > 2 * self.merged_len.max(512) {
            self.merge();
        }
    }

    /// Sorts and merges touching intervals.
    pub fn merge(&mut self) {
        self.spans.sort_unstable();
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(self.spans.len());
        for &(s, e) in &self.spans {
            match out.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => out.push((s, e)),
            }
        }
        self.spans = out;
        self.merged_len = self.spans.len();
    }

    /// The merged intervals, ascending.
    pub fn finish(mut self) -> Vec<(u64, u64)> {
        self.merge();
        self.spans
    }
}

/// Everything one node touched.
#[derive(Clone, Debug, Default)]
pub(crate) struct NodeLog {
    /// Intervals per (memory, kind).
    pub sets: BTreeMap<(Loc, AccessKind), IntervalSet>,
}

impl NodeLog {
    /// The set for one memory and kind, created on first use.
    pub fn set(&mut self, loc: Loc, kind: AccessKind) -> &mut IntervalSet {
        self.sets.entry((loc, kind)).or_default()
    }

    /// Records one access.
    pub fn add(&mut self, loc: Loc, kind: AccessKind, start: u64, len: u64) {
        self.set(loc, kind).add(start, start.saturating_add(len));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_coalesce() {
        let mut s = IntervalSet::default();
        for i in (0..2000u64).rev() {
            s.add(i * 4, i * 4 + 4);
        }
        s.add(10_000, 10_004);
        s.add(9_000, 9_004);
        assert_eq!(s.finish(), vec![(0, 8000), (9000, 9004), (10_000, 10_004)]);
    }
}
