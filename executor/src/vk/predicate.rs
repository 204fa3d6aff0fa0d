//! The predicate kernel of conditional nodes (docs/conditional.md, "Executor"): one
//! invocation that reads a node's condition word and writes one predicate word per body,
//! which `VK_EXT_conditional_rendering` then tests for every dispatch of that body.
//!
//! The SPIR-V is checked in beside its assembly (`predicate/pred.spvasm`);
//! executor/tests/copy_kernels.rs re-assembles it, compares the bytes and runs `spirv-val`.
//! Layout: binding 0 the condition's buffer, binding 1 the enclosing body's predicates,
//! binding 2 the node's executable's predicates; push constants
//! `{cond, parent, out, count, mode, tally}` in 4-byte words (`parent` = [`NO_PARENT`] at the
//! top level; `mode` [`MODE_TRUTH`] or [`MODE_CASE`]; `tally`, a word of binding 2 the kernel
//! increments when it sets word `out` to 1, or [`NO_PARENT`]: a `while` counts its rounds).
#![allow(unsafe_code)]

use super::builtin::{self, Builtin};
use super::context::Context;
use crate::error::Result;
use ash::vk;

const PRED: &[u8] = include_bytes!("predicate/pred.spv");

/// `parent` of a node outside any body: its bodies run when the condition says so alone.
pub const NO_PARENT: u32 = u32::MAX;
/// Word 0 is `cond != 0`, word 1 `cond == 0` (`if`/`else`, and a `while` with one word).
pub const MODE_TRUTH: u32 = 0;
/// Word `i` is `cond == i` (`switch`).
pub const MODE_CASE: u32 = 1;

/// The predicate kernel's SPIR-V (for tests).
pub fn spirv() -> &'static [u8] {
    PRED
}

/// The predicate pipeline and its layouts.
pub struct PredicateKernel(Builtin);

impl PredicateKernel {
    /// Creates the layouts and the pipeline through `cache`.
    pub fn new(ctx: &Context, cache: vk::PipelineCache) -> Result<PredicateKernel> {
        Builtin::new(ctx, cache, 3, 24, &[PRED], "the predicate kernel").map(PredicateKernel)
    }

    /// The set layout (bindings 0, 1, 2: see the module's documentation).
    pub(crate) fn set_layout(&self) -> vk::DescriptorSetLayout {
        self.0.set_layout
    }

    /// Frees the pipeline and layouts; no pending command buffer may use them.
    pub fn destroy(&mut self, ctx: &Context) {
        self.0.destroy(ctx);
    }
}

/// Writes `set` with the condition's, the enclosing predicates' and the own predicates'
/// buffers at bindings 0, 1, 2, each (buffer, offset, range).
pub(crate) fn write_set(ctx: &Context, set: vk::DescriptorSet, buffers: [(vk::Buffer, u64, u64); 3]) {
    builtin::write_set(ctx, set, &buffers);
}

/// Records one predicate dispatch: `set` bound, `push` = `{cond, parent, out, count, mode,
/// tally}`.
///
/// # Safety
/// `cb` is recording; `set` was written by [`write_set`] with buffers holding the words
/// `push` names.
pub(crate) unsafe fn record(
    d: &ash::Device,
    cb: vk::CommandBuffer,
    kernel: &PredicateKernel,
    set: vk::DescriptorSet,
    push: [u32; 6],
) {
    // SAFETY: the caller's contract; the push range is the layout's 24 bytes.
    unsafe { kernel.0.record(d, cb, 0, set, &push, 1) }
}
