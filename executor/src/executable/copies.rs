//! How each copy is recorded (docs/executor.md, "Copies"): a `memcpy` node, or a fill whose
//! pattern `vkCmdFillBuffer` cannot repeat (copied from the executable's pattern buffer), goes
//! through the copy kernel (`vk/copy.rs`) or `vkCmdCopyBuffer`, chosen per node by
//! [`RecordOptions::copies`], the alignment of its offsets and size, and the device's
//! descriptor limits. The choice is made in one place, so the barrier planner (which needs the
//! command's kind of work) and the recorder agree; [`Executor::copy_paths`] reports it.
//!
//! A kernel copy binds a descriptor set holding its two windows, each from the copy's offset
//! (rounded down to the descriptor alignment, within its memory) to its end. Sets are shared
//! by copies between the same windows, written once when made and never rewritten, so
//! recording one command buffer cannot invalidate another; an import of user memory (new
//! buffers) drops them all while the device is idle.

use super::{fill_word, sets::SetPools, Executable};
use crate::error::{ExecError, Result};
use crate::exec::{CopyPolicy, Executor};
use crate::vk::copy::{self, MAX_COUNT, MAX_GROUPS, PER_STEP};
use crate::vk::Context;
use ash::vk;
use ash::vk::Handle as _;
use cmdgraph_ir::{Graph, Handle, Node, NodeKind};
use std::collections::BTreeMap;

/// How a copy is recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyPath {
    /// `vkCmdCopyBuffer`.
    Transfer,
    /// The copy kernel, moving elements of this many bytes (16 or 4; 1: the byte kernel, for
    /// byte-granular offsets or sizes).
    Kernel {
        /// Element size in bytes.
        elem: u32,
    },
    /// The copy kernel three times, side by side: 16-byte elements between the first and
    /// the last 16-byte boundary, 4-byte elements on each side. For offsets that are
    /// multiples of 4 with the same remainder modulo 16 ([`SPLIT_MIN`] bytes and more).
    KernelWithEnds,
}

impl std::fmt::Display for CopyPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CopyPath::Transfer => f.write_str("the copy command (vkCmdCopyBuffer)"),
            CopyPath::Kernel { elem: 1 } => f.write_str("the copy kernel, bytes"),
            CopyPath::Kernel { elem } => write!(f, "the copy kernel, {elem}-byte elements"),
            CopyPath::KernelWithEnds => {
                f.write_str("the copy kernel, 16-byte elements between 4-byte ends (three dispatches side by side)")
            }
        }
    }
}

/// The fewest bytes a copy of 4-byte alignment is split into 16-byte elements between
/// 4-byte ends for ([`CopyPath::KernelWithEnds`]): below it one dispatch of 4-byte elements
/// costs less than three. On the H200 the 4-byte kernel moved 4 MiB at 0.83x CUDA's copy
/// and the 16-byte one at 1.00x (docs/performance.md, "Copies and fills at copy speed").
pub const SPLIT_MIN: u64 = 64 << 10;

/// A descriptor's reach: (buffer, byte offset, byte range).
pub(crate) type Window = (vk::Buffer, u64, u64);

/// A copy the kernel records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KernelCopy {
    pub(crate) elem: u64,
    pub(crate) src: Window,
    pub(crate) dst: Window,
    /// `{src_off, dst_off, count}` in elements, as pushed.
    pub(crate) push: [u32; 3],
    pub(crate) groups: u32,
}

/// One end of a copy: its buffer, where its memory starts in it (`base`: the memory object,
/// or the graph allocation in the pool; a window never reaches before it), the buffer's size
/// (`end`), and the copy's byte offset.
#[derive(Clone, Copy, Debug)]
pub(crate) struct End {
    pub(crate) buffer: vk::Buffer,
    pub(crate) base: u64,
    pub(crate) end: u64,
    pub(crate) offset: u64,
}

/// The device limits a kernel copy needs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CopyLimits {
    pub(crate) min_align: u64,
    pub(crate) max_range: u64,
    pub(crate) max_groups: u32,
    /// Whether the byte kernel exists (the device stores single bytes).
    pub(crate) bytes: bool,
}

/// The window of `end` a descriptor binds for `bytes` bytes of `elem`-byte elements, and the
/// copy's first element in it: from the offset rounded down to the descriptor alignment to
/// the copy's end, never before the memory's start; `None` when no window fits.
///
/// Tight, not the whole buffer: the validation layer's synchronization checks take a bound
/// descriptor's whole range as accessed, so a window over the whole pool "read" every other
/// allocation, against fills and kernels of the same stage that write them (the random-graph
/// test with `CMDGRAPH_COPIES=shader` found it).
fn window(end: &End, bytes: u64, elem: u64, l: &CopyLimits) -> Option<(Window, u32)> {
    let align = l.min_align.max(elem);
    let lo = end.offset / align * align;
    let range = end.offset.checked_add(bytes)? - lo;
    let first = (end.offset - lo) / elem;
    let fits = lo >= end.base && range <= l.max_range && lo + range <= end.end && first <= u64::from(u32::MAX);
    fits.then_some(((end.buffer, lo, range), first as u32))
}

/// The kernel copies that make a copy of `bytes` bytes from `src` to `dst`: one
/// ([`plan_kernel`]), or, for offsets that are multiples of 4 with the same remainder modulo
/// 16 and at least [`SPLIT_MIN`] bytes, three over disjoint ranges (no barrier between them):
/// 4-byte elements up to the first 16-byte boundary, 16-byte elements up to the last, 4-byte
/// elements after it. `None` when no kernel can make it.
pub(crate) fn plan_copy(src: End, dst: End, bytes: u64, l: &CopyLimits) -> Option<Vec<KernelCopy>> {
    let words = src.offset.is_multiple_of(4) && dst.offset.is_multiple_of(4) && bytes.is_multiple_of(4);
    let same_phase = src.offset % 16 == dst.offset % 16;
    let single = || plan_kernel(src, dst, bytes, l).map(|k| vec![k]);
    if !words || !same_phase || bytes < SPLIT_MIN || (dst.offset.is_multiple_of(16) && bytes.is_multiple_of(16)) {
        return single();
    }
    let head = (16 - dst.offset % 16) % 16;
    let body = (bytes - head) / 16 * 16;
    let tail = bytes - head - body;
    let at = |e: End, skip: u64| End { offset: e.offset + skip, ..e };
    let mut parts: Vec<KernelCopy> = Vec::with_capacity(3);
    for (skip, n) in [(head, body), (0, head), (head + body, tail)] {
        if n > 0 {
            match plan_kernel(at(src, skip), at(dst, skip), n, l) {
                Some(k) => parts.push(k),
                None => return single(),
            }
        }
    }
    // The validation layer takes a bound window as written whole: the parts, which run
    // side by side, must write disjoint windows (a descriptor alignment above 16 bytes would
    // stretch the middle one over the first).
    let overlap = |a: &Window, b: &Window| a.1 < b.1 + b.2 && b.1 < a.1 + a.2;
    let disjoint = parts.iter().enumerate().all(|(i, a)| parts[i + 1..].iter().all(|b| !overlap(&a.dst, &b.dst)));
    if disjoint {
        Some(parts)
    } else {
        single()
    }
}

/// The kernel copy of `bytes` bytes from `src` to `dst`, if a kernel can make it: 16-byte
/// elements when the offsets and the size are multiples of 16, else 4-byte elements when they
/// are multiples of 4, else bytes (where the device has the byte kernel); fewer than
/// [`MAX_COUNT`] elements, windows within `maxStorageBufferRange`.
pub(crate) fn plan_kernel(src: End, dst: End, bytes: u64, l: &CopyLimits) -> Option<KernelCopy> {
    let aligned = |a: u64| src.offset.is_multiple_of(a) && dst.offset.is_multiple_of(a) && bytes.is_multiple_of(a);
    let elem = if aligned(16) {
        16
    } else if aligned(4) {
        4
    } else if l.bytes {
        1
    } else {
        return None;
    };
    let count = bytes / elem;
    if count == 0 || count >= MAX_COUNT {
        return None;
    }
    let (sw, s0) = window(&src, bytes, elem, l)?;
    let (dw, d0) = window(&dst, bytes, elem, l)?;
    // The byte kernel's invocations take words (four bytes) per step where the others take
    // elements.
    let per_group = u64::from(copy::GROUP_SIZE * PER_STEP) * if elem == 1 { 4 } else { 1 };
    let cap = if l.max_groups == 0 { MAX_GROUPS } else { l.max_groups.min(MAX_GROUPS) };
    let groups = count.div_ceil(per_group).clamp(1, u64::from(cap)) as u32;
    Some(KernelCopy { elem, src: sw, dst: dw, push: [s0, d0, count as u32], groups })
}

/// The executable's copy-kernel descriptor sets, by the windows they hold.
#[derive(Default)]
pub(crate) struct CopySets {
    pools: Option<SetPools>,
    sets: BTreeMap<(u64, u64, u64, u64, u64, u64), vk::DescriptorSet>,
}

impl CopySets {
    /// The set holding `src` and `dst`, made and written now if no copy made it before.
    pub(crate) fn get(
        &mut self,
        ctx: &Context,
        layout: vk::DescriptorSetLayout,
        src: Window,
        dst: Window,
    ) -> Result<vk::DescriptorSet> {
        let key = (src.0.as_raw(), src.1, src.2, dst.0.as_raw(), dst.1, dst.2);
        if let Some(&set) = self.sets.get(&key) {
            return Ok(set);
        }
        let pools = self.pools.get_or_insert_with(|| SetPools::new(2));
        let (_, set) = pools.allocate(ctx, layout, 2, 16)?;
        copy::write_set(ctx, set, src, dst);
        self.sets.insert(key, set);
        Ok(set)
    }

    /// Descriptor pools made (for [`Executor::vulkan_objects`]) and sets held.
    pub(crate) fn counts(&self) -> (usize, usize) {
        (self.pools.as_ref().map_or(0, SetPools::pools), self.sets.len())
    }

    /// Destroys every set; the executable is idle and will be re-recorded.
    pub(crate) fn reset(&mut self, ctx: &Context) {
        if let Some(mut p) = self.pools.take() {
            p.destroy(ctx);
        }
        self.sets.clear();
    }
}

impl Executor {
    /// Whether `policy` lets copies take the kernel on this device.
    fn policy_takes_kernel(&self, policy: CopyPolicy) -> bool {
        match policy {
            CopyPolicy::Transfer => false,
            CopyPolicy::Shader => true,
            CopyPolicy::Auto => on_gpu(&self.ctx),
        }
    }

    /// The limits a kernel copy is planned against, with the policy's verdict: `None` when
    /// this executable records every copy with `vkCmdCopyBuffer`.
    fn copy_limits(&self, exe: &Executable) -> Option<CopyLimits> {
        let limits = &self.ctx.props.limits;
        (self.policy_takes_kernel(exe.options.copies) && self.copy_kernels.is_some()).then(|| CopyLimits {
            min_align: limits.min_storage_buffer_offset_alignment.max(4),
            max_range: u64::from(limits.max_storage_buffer_range),
            max_groups: exe.options.copy_groups.min(limits.max_compute_work_group_count[0]),
            bytes: self.copy_kernels.as_ref().is_some_and(|k| k.bytes()),
        })
    }

    /// Whether finalize should make the copy kernels for `graph` (it has a copy or fill and
    /// the policy may use them).
    pub(crate) fn wants_copy_kernels(&self, graph: &Graph) -> bool {
        self.policy_takes_kernel(self.recording.copies)
            && self.copy_kernels.is_none()
            && graph.nodes.iter().any(|(_, n)| {
                matches!(n.kind, NodeKind::Memcpy { .. } | NodeKind::Memfill { .. } | NodeKind::Memset { .. })
            })
    }

    /// The kernel copies node `h` records (one, or three side by side: [`plan_copy`]), or
    /// `None` when it records `vkCmdCopyBuffer` (or `vkCmdFillBuffer`, or nothing).
    pub(crate) fn kernel_copy(
        &self,
        exe: &Executable,
        graph: &Graph,
        h: Handle<Node>,
    ) -> Result<Option<Vec<KernelCopy>>> {
        let Some(limits) = self.copy_limits(exe) else { return Ok(None) };
        let n = &graph.nodes[h];
        // Where the memory of `mem` starts in its buffer: its allocation in the pool, or the
        // user object's base.
        let end_of = |mem: cmdgraph_ir::MemRef, target: &crate::args::Target, offset: u64| -> Result<End> {
            let b = exe.buffer_of(self, target)?;
            let base = match mem {
                cmdgraph_ir::MemRef::Alloc(n) => exe.allocs.get(&n.index()).map_or(b.base, |a| a.1),
                cmdgraph_ir::MemRef::Memory(_) => b.base,
            };
            Ok(End { buffer: b.buffer, base, end: b.size, offset })
        };
        match &n.kind {
            NodeKind::Memcpy { dst, src, bytes } if *bytes > 0 => {
                if exe.scratch_offs.contains_key(&h.index()) {
                    return Ok(None); // a memmove: through scratch memory with the copy command
                }
                let (dp, sp) = (exe.place(self, dst.base, dst.offset)?, exe.place(self, src.base, src.offset)?);
                if dp.avail < *bytes || sp.avail < *bytes {
                    return Err(ExecError::Invalid(format!("%{}: memcpy of {bytes} bytes out of bounds", n.name)));
                }
                let (s, d) = (end_of(src.base, &sp.target, sp.offset)?, end_of(dst.base, &dp.target, dp.offset)?);
                Ok(plan_copy(s, d, *bytes, &limits))
            }
            NodeKind::Memset { dst, .. } | NodeKind::Memfill { dst, .. } => {
                let (pattern, total) = fill_pattern(n);
                let (Some(&off), Some(consts)) = (exe.const_offs.get(&h.index()), exe.consts.as_ref()) else {
                    return Ok(None);
                };
                let dp = exe.place(self, dst.base, dst.offset)?;
                if total == 0 || dp.avail < total || fill_word(&pattern, dp.offset, total).is_some() {
                    return Ok(None);
                }
                let s = End { buffer: consts.buffer, base: 0, end: consts.size, offset: off };
                Ok(plan_copy(s, end_of(dst.base, &dp.target, dp.offset)?, total, &limits))
            }
            _ => Ok(None),
        }
    }

    /// How every copy of executable `id` is recorded: (node name, path), in node order, for
    /// `memcpy` nodes and fills that copy a pattern (fills `vkCmdFillBuffer` repeats are not
    /// copies and are not listed).
    pub fn copy_paths(&self, id: crate::ExecId) -> Result<Vec<(String, CopyPath)>> {
        let exe = self.exec_ref(id)?;
        let graph = &self.loaded.module.graphs[exe.graph];
        let mut out = Vec::new();
        for (h, n) in graph.nodes.iter() {
            let is_copy = match &n.kind {
                NodeKind::Memcpy { bytes, .. } => *bytes > 0,
                NodeKind::Memset { .. } | NodeKind::Memfill { .. } => exe.const_offs.contains_key(&h.index()),
                _ => false,
            };
            if !is_copy {
                continue;
            }
            let path = match self.kernel_copy(exe, graph, h)?.as_deref() {
                Some([k]) => CopyPath::Kernel { elem: k.elem as u32 },
                Some([_, ..]) => CopyPath::KernelWithEnds,
                _ => CopyPath::Transfer,
            };
            out.push((n.name.clone(), path));
        }
        Ok(out)
    }
}

/// Whether the device is a GPU (not llvmpipe or another CPU implementation).
fn on_gpu(ctx: &Context) -> bool {
    matches!(
        ctx.props.device_type,
        vk::PhysicalDeviceType::DISCRETE_GPU
            | vk::PhysicalDeviceType::INTEGRATED_GPU
            | vk::PhysicalDeviceType::VIRTUAL_GPU
    )
}

/// A fill's pattern bytes and total byte count (what `record_node` fills).
pub(crate) fn fill_pattern(n: &Node) -> (Vec<u8>, u64) {
    match &n.kind {
        NodeKind::Memset { value, bytes, .. } => (vec![*value], *bytes),
        NodeKind::Memfill { pattern, count, .. } => {
            let p = pattern.ty.and_then(|t| crate::args::scalar_bytes(pattern.value, t)).unwrap_or_default();
            let t = (p.len() as u64).saturating_mul(*count);
            (p, t)
        }
        _ => (Vec::new(), 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end(offset: u64) -> End {
        End { buffer: vk::Buffer::from_raw(1), base: 0, end: 1 << 24, offset }
    }

    fn limits(min_align: u64) -> CopyLimits {
        CopyLimits { min_align, max_range: 1 << 27, max_groups: 0, bytes: true }
    }

    /// (element size, first destination byte, bytes) of each part.
    fn parts(src: u64, dst: u64, bytes: u64, align: u64) -> Vec<(u64, u64, u64)> {
        let copies = plan_copy(end(src), end(dst), bytes, &limits(align)).unwrap();
        copies
            .iter()
            .map(|k| (k.elem, k.dst.1 + u64::from(k.push[1]) * k.elem, u64::from(k.push[2]) * k.elem))
            .collect()
    }

    #[test]
    fn word_aligned_copies_in_the_same_phase_take_16_byte_elements_between_4_byte_ends() {
        let n = SPLIT_MIN + 8;
        // Offsets 4 and 20: 12 bytes up to the boundary, the 16-byte middle, 12 bytes after.
        assert_eq!(parts(20, 4, n, 16), vec![(16, 16, n - 24), (4, 4, 12), (4, n - 8, 12)]);
        // No tail when the end is on a boundary; no head when the start is.
        assert_eq!(parts(36, 4, n + 4, 16), vec![(16, 16, n - 8), (4, 4, 12)]);
        assert_eq!(parts(32, 16, n, 16), vec![(16, 16, n - 8), (4, n + 8, 8)]);
    }

    #[test]
    fn other_copies_stay_one_dispatch() {
        let n = SPLIT_MIN + 8;
        assert_eq!(parts(8, 4, n, 16), vec![(4, 4, n)], "different remainders modulo 16");
        assert_eq!(parts(20, 4, SPLIT_MIN - 16, 16), vec![(4, 4, SPLIT_MIN - 16)], "short");
        assert_eq!(parts(32, 16, n - 8, 16), vec![(16, 16, n - 8)], "aligned whole");
        assert_eq!(parts(21, 5, n, 16), vec![(1, 5, n)], "byte offsets");
        // A 64-byte descriptor alignment would start the middle's window before the first
        // part's end: the parts would write overlapping windows side by side.
        assert_eq!(parts(20, 4, n, 64), vec![(4, 4, n)]);
    }
}
