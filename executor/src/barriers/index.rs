//! What the commands of each stretch of a recorded segment (the commands between two
//! barriers) touch, indexed by buffer, so an update can ask whether one command's new effect
//! conflicts with another command of its stretch in O(log n + overlaps) instead of walking
//! the stretch (docs/executor.md, "Barriers").

use super::{Effect, SegmentPlan, Span, Work};
use crate::args::Target;
use std::collections::BTreeMap;

/// The recorded effects of one segment, by stretch and buffer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SegmentIndex {
    /// Per recorded position, its stretch.
    stretch_of: Vec<u32>,
    stretches: Vec<Stretch>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Stretch {
    compute: BTreeMap<Target, Intervals>,
    transfer: BTreeMap<Target, Intervals>,
    /// Positions of native commands in the stretch.
    native: Vec<u32>,
}

/// Accesses sorted by start, with the running maximum of their ends, so the accesses that
/// overlap a range are found by walking back from the last one starting before its end
/// until the running maximum falls below its start.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Intervals {
    /// (start, end, recorded position, writes).
    items: Vec<(u64, u64, u32, bool)>,
    max_end: Vec<u64>,
}

impl Intervals {
    fn finish(&mut self) {
        self.items.sort_unstable();
        let mut m = 0;
        self.max_end = self
            .items
            .iter()
            .map(|i| {
                m = m.max(i.1);
                m
            })
            .collect();
    }

    /// Whether an access of another position than `skip`, overlapping [lo, hi) (or anywhere
    /// in the buffer, without `exact`), is one `wanted` says conflicts (by whether it writes).
    fn any(&self, lo: u64, hi: u64, exact: bool, skip: u32, wanted: impl Fn(bool) -> bool) -> bool {
        if !exact {
            return self.items.iter().any(|i| i.2 != skip && wanted(i.3));
        }
        let end = self.items.partition_point(|i| i.0 < hi);
        (0..end).rev().take_while(|&j| self.max_end[j] > lo).any(|j| {
            let i = self.items[j];
            i.1 > lo && i.2 != skip && wanted(i.3)
        })
    }
}

impl SegmentIndex {
    /// Indexes `effects` (in recording order) by the stretches `plan` cuts them into.
    pub(crate) fn new<E: std::borrow::Borrow<Effect>>(effects: &[E], plan: &SegmentPlan) -> SegmentIndex {
        let mut index = SegmentIndex::default();
        let mut current = Stretch::default();
        for (pos, e) in effects.iter().map(std::borrow::Borrow::borrow).enumerate() {
            if pos > 0 && plan.before.get(pos).is_some_and(|b| b.is_some()) {
                index.stretches.push(std::mem::take(&mut current));
            }
            index.stretch_of.push(index.stretches.len() as u32);
            let pos = pos as u32;
            let side = match e.work {
                Work::Native => {
                    current.native.push(pos);
                    continue;
                }
                Work::Compute => &mut current.compute,
                Work::Transfer => &mut current.transfer,
            };
            for (spans, write) in [(&e.reads, false), (&e.writes, true)] {
                for s in spans.iter().filter(|s| s.lo < s.hi) {
                    side.entry(s.target.clone()).or_default().items.push((s.lo, s.hi, pos, write));
                }
            }
        }
        index.stretches.push(current);
        for s in &mut index.stretches {
            s.compute.values_mut().chain(s.transfer.values_mut()).for_each(Intervals::finish);
        }
        index
    }

    /// The stretch of recorded position `pos`.
    pub(crate) fn stretch(&self, pos: usize) -> Option<u32> {
        self.stretch_of.get(pos).copied()
    }

    /// Whether `e`, as the command at recorded position `pos`, conflicts with a recorded
    /// access of another command of its stretch (the rules of [`super::plan`]).
    pub(crate) fn conflicts(&self, pos: usize, e: &Effect) -> bool {
        let (Some(&s), skip) = (self.stretch_of.get(pos), pos as u32) else { return true };
        let Some(stretch) = self.stretches.get(s as usize) else { return true };
        if e.work == Work::Native || stretch.native.iter().any(|&p| p != skip) {
            return true;
        }
        let (same, other) = match e.work {
            Work::Compute => (&stretch.compute, &stretch.transfer),
            _ => (&stretch.transfer, &stretch.compute),
        };
        let hit = |s: &Span, writes: bool| {
            // A write conflicts with any access, a read with writes.
            let wanted = |w: bool| writes || w;
            same.get(&s.target).is_some_and(|i| i.any(s.lo, s.hi, true, skip, wanted))
                || other.get(&s.target).is_some_and(|i| i.any(s.lo, s.hi, false, skip, wanted))
        };
        e.writes.iter().filter(|s| s.lo < s.hi).any(|s| hit(s, true))
            || e.reads.iter().filter(|s| s.lo < s.hi).any(|s| hit(s, false))
    }
}
