//! The executor's copy kernels: compute shaders that copy 16-byte, 4-byte or byte-granular
//! elements between two storage buffers, for `memcpy` nodes and pattern fills where a
//! dispatch moves more bytes per second than `vkCmdCopyBuffer` (on NVIDIA's driver the copy
//! command moves a fifth of what a shader moves: docs/performance.md, "Copies and fills").
//!
//! The SPIR-V is checked in beside its assembly (`copy/x4.spvasm`, `copy/x1.spvasm`,
//! `copy/xb.spvasm`); executor/tests/copy_kernels.rs re-assembles it, compares the bytes and
//! runs `spirv-val`, so what reaches the driver is exactly the reviewed text. Layout: binding 0
//! the source, binding 1 the destination (each a window of its buffer), push constants
//! `{src_off, dst_off, count}` in elements, 256 invocations per group. The byte kernel (`xb`)
//! needs `storageBuffer8BitAccess`; a device without it keeps byte-granular copies on the copy
//! command.
#![allow(unsafe_code)]

use super::builtin::{self, Builtin};
use super::context::Context;
use crate::error::Result;
use crate::features::Feature;
use ash::vk;

/// Invocations per work-group.
pub const GROUP_SIZE: u32 = 256;
/// Elements an invocation copies per step of its loop (the kernel's unrolling).
pub const PER_STEP: u32 = 4;
/// The most work-groups a copy dispatches (the minimum `maxComputeWorkGroupCount[0]`): more
/// elements than these cover are reached by the kernel's grid-stride loop.
pub const MAX_GROUPS: u32 = 65_535;
/// The most elements one copy dispatch takes: the kernel's indices stay below 2^32 (an
/// index plus four strides never wraps).
pub const MAX_COUNT: u64 = 1 << 31;

const X4: &[u8] = include_bytes!("copy/x4.spv");
const X1: &[u8] = include_bytes!("copy/x1.spv");
const XB: &[u8] = include_bytes!("copy/xb.spv");

/// The copy kernels' SPIR-V: 16-byte elements, 4-byte elements, then bytes (for tests).
pub fn spirv() -> [(&'static str, &'static [u8]); 3] {
    [("x4", X4), ("x1", X1), ("xb", XB)]
}

/// The copy pipelines (16- and 4-byte elements, and bytes where the device can store bytes)
/// and their shared layouts.
pub struct CopyKernels(Builtin);

impl CopyKernels {
    /// Creates the layouts and the pipelines through `cache`: the byte kernel only where
    /// `storageBuffer8BitAccess` is enabled.
    pub fn new(ctx: &Context, cache: vk::PipelineCache) -> Result<CopyKernels> {
        let bytes = ctx.enabled_features().has(Feature::StorageBuffer8BitAccess);
        let modules: &[&[u8]] = if bytes { &[X4, X1, XB] } else { &[X4, X1] };
        Builtin::new(ctx, cache, 2, 12, modules, "the copy kernels").map(CopyKernels)
    }

    /// How many pipelines they are (2, or 3 with the byte kernel).
    pub(crate) fn count(&self) -> usize {
        self.0.pipelines.len()
    }

    /// Whether byte-granular copies can take a kernel (the device stores single bytes).
    pub(crate) fn bytes(&self) -> bool {
        self.0.pipelines.len() > 2
    }

    /// The set layout (source at binding 0, destination at binding 1).
    pub(crate) fn set_layout(&self) -> vk::DescriptorSetLayout {
        self.0.set_layout
    }

    /// The pipeline for elements of `elem` bytes (16, 4 or 1).
    pub(crate) fn pipeline(&self, elem: u64) -> vk::Pipeline {
        self.0.pipelines.get(which(elem)).copied().unwrap_or_default()
    }

    /// Frees the pipelines and layouts; no pending command buffer may use them.
    pub fn destroy(&mut self, ctx: &Context) {
        self.0.destroy(ctx);
    }
}

/// Writes a new set with `src` at binding 0 and `dst` at binding 1, each
/// `(buffer, offset, range)`.
pub(crate) fn write_set(
    ctx: &Context,
    set: vk::DescriptorSet,
    src: (vk::Buffer, u64, u64),
    dst: (vk::Buffer, u64, u64),
) {
    builtin::write_set(ctx, set, &[src, dst]);
}

/// Records a copy dispatch of `elem`-byte elements (16, 4 or 1): `set` bound,
/// `{src_off, dst_off, count}` pushed.
///
/// # Safety
/// `cb` is recording; `set` holds windows that contain the copy's elements.
pub(crate) unsafe fn record(
    d: &ash::Device,
    cb: vk::CommandBuffer,
    kernels: &CopyKernels,
    elem: u64,
    set: vk::DescriptorSet,
    push: [u32; 3],
    groups: u32,
) {
    // SAFETY: the caller's contract; the push range is the layout's 12 bytes.
    unsafe { kernels.0.record(d, cb, which(elem), set, &push, groups) }
}

/// The index of the pipeline for `elem`-byte elements: `x4`, `x1`, then `xb`.
fn which(elem: u64) -> usize {
    match elem {
        16 => 0,
        4 => 1,
        _ => 2,
    }
}
