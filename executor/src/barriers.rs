//! Where a device segment needs pipeline barriers, and what each one waits for
//! (docs/executor.md, "Barriers").
//!
//! Every recorded command has an [`Effect`]: the kind of work it is (a compute dispatch, a
//! transfer, or a native command whose work is unknown) and the byte ranges it reads and
//! writes. Walking a segment in schedule order, a barrier goes before a command only when it
//! touches bytes a command since the last barrier wrote, or writes bytes one read
//! ([`BarrierPolicy::Conflicts`]): a happens-before between commands whose accesses cannot
//! conflict is unobservable, so the device need not pay for it. A barrier's source stages and
//! accesses are those of the commands since the previous barrier, its destination those of
//! the commands up to the next one: a chain of such barriers orders every earlier command
//! before every later one, because each barrier's source scope holds the stages the previous
//! barrier's destination scope waited in.
//!
//! This module only plans; `executable/record.rs` records what it says.
#![allow(unsafe_code)]

use crate::args::Target;
use crate::exec::BarrierPolicy;
use ash::vk;
use std::borrow::Borrow;
use std::collections::BTreeMap;

/// What kind of device work a command is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Work {
    /// A compute dispatch: storage-buffer reads and writes in the compute shader stage (its
    /// indirect arguments are written by the host before submission, which the submission
    /// itself makes visible: no barrier reads them).
    Compute,
    /// `vkCmdCopyBuffer` / `vkCmdFillBuffer`.
    Transfer,
    /// A native command: the application records what it likes, so it is ordered against
    /// everything, with every stage and access.
    Native,
}

/// A byte range `[lo, hi)` of one backing buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) target: Target,
    pub(crate) lo: u64,
    pub(crate) hi: u64,
}

/// The memory effect of one recorded command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Effect {
    pub(crate) work: Work,
    pub(crate) reads: Vec<Span>,
    pub(crate) writes: Vec<Span>,
}

impl Effect {
    fn stage(&self) -> vk::PipelineStageFlags2 {
        match self.work {
            Work::Compute => vk::PipelineStageFlags2::COMPUTE_SHADER,
            Work::Transfer => vk::PipelineStageFlags2::ALL_TRANSFER,
            Work::Native => vk::PipelineStageFlags2::ALL_COMMANDS,
        }
    }

    /// Accesses of a barrier's source scope: the writes this command makes available.
    fn src_access(&self) -> vk::AccessFlags2 {
        match self.work {
            _ if self.writes.is_empty() && self.work != Work::Native => vk::AccessFlags2::NONE,
            Work::Compute => vk::AccessFlags2::SHADER_WRITE,
            Work::Transfer => vk::AccessFlags2::TRANSFER_WRITE,
            Work::Native => vk::AccessFlags2::MEMORY_WRITE,
        }
    }

    /// Accesses of a barrier's destination scope: what this command reads and writes.
    fn dst_access(&self) -> vk::AccessFlags2 {
        match self.work {
            Work::Compute => vk::AccessFlags2::SHADER_READ | vk::AccessFlags2::SHADER_WRITE,
            Work::Transfer => vk::AccessFlags2::TRANSFER_READ | vk::AccessFlags2::TRANSFER_WRITE,
            Work::Native => vk::AccessFlags2::MEMORY_READ | vk::AccessFlags2::MEMORY_WRITE,
        }
    }
}

impl Effect {
    /// Whether two commands' accesses conflict under the rules of [`plan`]: exact byte
    /// ranges within one kind of work, whole buffers between a kernel and a transfer,
    /// everything against a native command. Symmetric.
    pub(crate) fn conflicts_with(&self, other: &Effect) -> bool {
        if self.work == Work::Native || other.work == Work::Native {
            return true;
        }
        let exact = self.work == other.work;
        let hit = |x: &Span, y: &Span| {
            x.target == y.target && x.lo < x.hi && y.lo < y.hi && (!exact || (x.lo < y.hi && y.lo < x.hi))
        };
        let one_way =
            |a: &Effect, b: &Effect| a.writes.iter().any(|w| b.writes.iter().chain(&b.reads).any(|x| hit(w, x)));
        one_way(self, other) || one_way(other, self)
    }

    /// Whether every access of `self` is an access of the same kind by `old` (same work,
    /// each read inside a read range and each write inside a write range): then whatever
    /// barriers separated `old` from the commands it conflicted with still separate `self`.
    pub(crate) fn within(&self, old: &Effect) -> bool {
        let inside = |s: &Span, of: &[Span]| {
            s.lo >= s.hi || of.iter().any(|o| o.target == s.target && o.lo <= s.lo && s.hi <= o.hi)
        };
        self.work == old.work
            && self.reads.iter().all(|s| inside(s, &old.reads))
            && self.writes.iter().all(|s| inside(s, &old.writes))
    }
}

/// The two scopes of one global memory barrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Masks {
    pub(crate) src_stage: vk::PipelineStageFlags2,
    pub(crate) src_access: vk::AccessFlags2,
    pub(crate) dst_stage: vk::PipelineStageFlags2,
    pub(crate) dst_access: vk::AccessFlags2,
}

impl Masks {
    /// Every command before against every command after (the `Full` policy, and the edges
    /// of a segment that has a native command).
    pub(crate) const FULL: Masks = Masks {
        src_stage: vk::PipelineStageFlags2::ALL_COMMANDS,
        src_access: vk::AccessFlags2::MEMORY_WRITE,
        dst_stage: vk::PipelineStageFlags2::ALL_COMMANDS,
        dst_access: vk::AccessFlags2::from_raw(
            vk::AccessFlags2::MEMORY_READ.as_raw() | vk::AccessFlags2::MEMORY_WRITE.as_raw(),
        ),
    };

    /// The barrier between the commands of `before` and those of `after`.
    pub(crate) fn between<'a>(
        before: impl IntoIterator<Item = &'a Effect>,
        after: impl IntoIterator<Item = &'a Effect>,
    ) -> Masks {
        let mut m = Masks {
            src_stage: vk::PipelineStageFlags2::NONE,
            src_access: vk::AccessFlags2::NONE,
            dst_stage: vk::PipelineStageFlags2::NONE,
            dst_access: vk::AccessFlags2::NONE,
        };
        for e in before {
            m.src_stage |= e.stage();
            m.src_access |= e.src_access();
        }
        for e in after {
            m.dst_stage |= e.stage();
            m.dst_access |= e.dst_access();
        }
        m
    }

    /// Records this barrier.
    ///
    /// # Safety
    /// `cb` is in the recording state.
    pub(crate) unsafe fn record(&self, device: &ash::Device, cb: vk::CommandBuffer) {
        let barrier = [vk::MemoryBarrier2::default()
            .src_stage_mask(self.src_stage)
            .src_access_mask(self.src_access)
            .dst_stage_mask(self.dst_stage)
            .dst_access_mask(self.dst_access)];
        let dep = vk::DependencyInfo::default().memory_barriers(&barrier);
        // SAFETY: the caller's contract.
        unsafe { device.cmd_pipeline_barrier2(cb, &dep) };
    }
}

/// Every stage and access the executor's own commands use: the scopes of the barriers that
/// open and close a segment (ordering it after earlier submissions, and later submissions
/// and host reads after it).
fn executor_work(native: bool) -> (vk::PipelineStageFlags2, vk::AccessFlags2, vk::AccessFlags2) {
    if native {
        return (Masks::FULL.src_stage, Masks::FULL.src_access, Masks::FULL.dst_access);
    }
    (
        vk::PipelineStageFlags2::COMPUTE_SHADER | vk::PipelineStageFlags2::ALL_TRANSFER,
        vk::AccessFlags2::SHADER_WRITE | vk::AccessFlags2::TRANSFER_WRITE,
        vk::AccessFlags2::SHADER_READ
            | vk::AccessFlags2::SHADER_WRITE
            | vk::AccessFlags2::TRANSFER_READ
            | vk::AccessFlags2::TRANSFER_WRITE,
    )
}

/// The barriers of one device segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SegmentPlan {
    /// Before the segment's first command: after everything submitted earlier.
    pub(crate) opening: Masks,
    /// Per command (in recording order): the barrier recorded just before it, if any.
    pub(crate) before: Vec<Option<Masks>>,
    /// After the last command: before later submissions and host reads.
    pub(crate) closing: Masks,
}

impl SegmentPlan {
    /// Barriers between commands (not counting the opening and closing ones).
    pub(crate) fn inner(&self) -> u64 {
        self.before.iter().filter(|b| b.is_some()).count() as u64
    }
}

/// Plans the barriers of a segment whose commands, in recording order, have `effects`;
/// `stage_starts[i]` says command `i` is the first command of a schedule stage.
pub(crate) fn plan<E: Borrow<Effect>>(effects: &[E], stage_starts: &[bool], policy: BarrierPolicy) -> SegmentPlan {
    let native = effects.iter().any(|e| e.borrow().work == Work::Native);
    let (stages, src_access, dst_access) = match policy {
        BarrierPolicy::Full => executor_work(true),
        _ => executor_work(native),
    };
    let opening = Masks { src_stage: stages, src_access, dst_stage: stages, dst_access };
    let closing = Masks {
        dst_stage: stages | vk::PipelineStageFlags2::HOST,
        dst_access: dst_access | vk::AccessFlags2::HOST_READ | vk::AccessFlags2::HOST_WRITE,
        ..opening
    };
    // Group boundaries: where a barrier goes.
    let mut cut = vec![false; effects.len()];
    let mut pending = Pending::default();
    for (i, e) in effects.iter().map(Borrow::borrow).enumerate() {
        let boundary = match policy {
            BarrierPolicy::Conflicts => pending.conflicts(e),
            BarrierPolicy::Stages | BarrierPolicy::Full => i > 0 && stage_starts.get(i).copied().unwrap_or(true),
        };
        if boundary && i > 0 {
            cut[i] = true;
            pending = Pending::default();
        }
        pending.add(e);
    }
    let mut before = vec![None; effects.len()];
    let starts: Vec<usize> = std::iter::once(0).chain((1..effects.len()).filter(|&i| cut[i])).collect();
    for w in 0..starts.len() {
        if w == 0 {
            continue;
        }
        let (prev, this) = (starts[w - 1], starts[w]);
        let next = starts.get(w + 1).copied().unwrap_or(effects.len());
        before[this] = Some(match policy {
            BarrierPolicy::Full => Masks::FULL,
            _ => Masks::between(
                effects[prev..this].iter().map(Borrow::borrow),
                effects[this..next].iter().map(Borrow::borrow),
            ),
        });
    }
    SegmentPlan { opening, before, closing }
}

/// The memory touched since the last barrier, per kind of work: per backing buffer,
/// disjoint sorted ranges (start → end) read and written, so a conflict check is a
/// logarithmic lookup whatever the number of commands between barriers.
///
/// Between a kernel and a transfer the comparison is by whole buffer: a kernel's descriptor
/// covers its memory object's range (docs/abi.md, "Bounds"), which for graph-owned memory is
/// part of the one pool buffer, and comparing whole buffers is the conservative choice that
/// the validation layer's synchronization checks also accept, so a copy into one end of a
/// buffer a kernel writes the other end of still gets its barrier. Kernels among
/// themselves and transfers among themselves compare exact byte ranges.
#[derive(Default)]
struct Pending {
    compute: Touched,
    transfer: Touched,
    /// A native command since the last barrier: everything conflicts with it.
    everything: bool,
    any: bool,
}

/// Ranges read and written by one kind of work.
#[derive(Default)]
struct Touched {
    reads: BTreeMap<Target, BTreeMap<u64, u64>>,
    writes: BTreeMap<Target, BTreeMap<u64, u64>>,
}

impl Touched {
    /// Whether `e` conflicts with these accesses, comparing byte ranges (`exact`) or buffers.
    fn conflicts(&self, e: &Effect, exact: bool) -> bool {
        let hit = |map: &BTreeMap<Target, BTreeMap<u64, u64>>, s: &Span| {
            if exact {
                overlaps(map, s)
            } else {
                s.lo < s.hi && map.get(&s.target).is_some_and(|r| !r.is_empty())
            }
        };
        e.writes.iter().any(|s| hit(&self.writes, s) || hit(&self.reads, s))
            || e.reads.iter().any(|s| hit(&self.writes, s))
    }

    fn add(&mut self, e: &Effect) {
        for s in &e.reads {
            insert(&mut self.reads, s);
        }
        for s in &e.writes {
            insert(&mut self.writes, s);
        }
    }
}

impl Pending {
    fn conflicts(&self, e: &Effect) -> bool {
        if !self.any {
            return false;
        }
        match e.work {
            _ if self.everything => true,
            Work::Native => true,
            Work::Compute => self.compute.conflicts(e, true) || self.transfer.conflicts(e, false),
            Work::Transfer => self.transfer.conflicts(e, true) || self.compute.conflicts(e, false),
        }
    }

    fn add(&mut self, e: &Effect) {
        self.any = true;
        match e.work {
            Work::Native => self.everything = true,
            Work::Compute => self.compute.add(e),
            Work::Transfer => self.transfer.add(e),
        }
    }
}

fn overlaps(map: &BTreeMap<Target, BTreeMap<u64, u64>>, s: &Span) -> bool {
    if s.lo >= s.hi {
        return false;
    }
    let Some(ranges) = map.get(&s.target) else { return false };
    // Ranges are disjoint and sorted, so the last one starting below `hi` has the largest end
    // of all that do: it overlaps iff any does.
    ranges.range(..s.hi).next_back().is_some_and(|(_, &end)| end > s.lo)
}

fn insert(map: &mut BTreeMap<Target, BTreeMap<u64, u64>>, s: &Span) {
    if s.lo >= s.hi {
        return;
    }
    let ranges = map.entry(s.target.clone()).or_default();
    let (mut lo, mut hi) = (s.lo, s.hi);
    // Merge every range that overlaps or touches [lo, hi).
    while let Some((&start, &end)) = ranges.range(..=hi).next_back() {
        if end < lo {
            break;
        }
        lo = lo.min(start);
        hi = hi.max(end);
        ranges.remove(&start);
    }
    ranges.insert(lo, hi);
}

mod index;
pub(crate) use index::SegmentIndex;

#[cfg(test)]
mod tests;
