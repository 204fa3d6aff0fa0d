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

use super::context::Context;
use crate::error::{ExecError, Result};
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
pub struct PredicateKernel {
    pub(crate) set_layout: vk::DescriptorSetLayout,
    pub(crate) layout: vk::PipelineLayout,
    pub(crate) pipeline: vk::Pipeline,
}

impl PredicateKernel {
    /// Creates the layouts and the pipeline through `cache`.
    pub fn new(ctx: &Context, cache: vk::PipelineCache) -> Result<PredicateKernel> {
        let mut out = PredicateKernel {
            set_layout: vk::DescriptorSetLayout::null(),
            layout: vk::PipelineLayout::null(),
            pipeline: vk::Pipeline::null(),
        };
        let bindings: Vec<vk::DescriptorSetLayoutBinding> = (0..3)
            .map(|b| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(b)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE)
            })
            .collect();
        let push = [vk::PushConstantRange { stage_flags: vk::ShaderStageFlags::COMPUTE, offset: 0, size: 24 }];
        // SAFETY: every create info points at live locals; on error, `destroy` frees what was
        // made (null handles are ignored). The SPIR-V is the checked-in, validated module.
        let made = unsafe {
            (|| {
                let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
                out.set_layout = ctx.device.create_descriptor_set_layout(&info, None)?;
                let sets = [out.set_layout];
                let info = vk::PipelineLayoutCreateInfo::default().set_layouts(&sets).push_constant_ranges(&push);
                out.layout = ctx.device.create_pipeline_layout(&info, None)?;
                let words: Vec<u32> =
                    PRED.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect();
                let module =
                    ctx.device.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None)?;
                let stage = vk::PipelineShaderStageCreateInfo::default()
                    .stage(vk::ShaderStageFlags::COMPUTE)
                    .module(module)
                    .name(c"main");
                let infos = [vk::ComputePipelineCreateInfo::default().stage(stage).layout(out.layout)];
                let r = ctx.device.create_compute_pipelines(cache, &infos, None);
                ctx.device.destroy_shader_module(module, None);
                out.pipeline = r.map_err(|(_, e)| e)?.first().copied().unwrap_or_default();
                Ok::<(), vk::Result>(())
            })()
        };
        if let Err(e) = made {
            out.destroy(ctx);
            return Err(ExecError::Vulkan(format!("the predicate kernel: {e:?}")));
        }
        Ok(out)
    }

    /// Frees the pipeline and layouts; no pending command buffer may use them.
    pub fn destroy(&mut self, ctx: &Context) {
        // SAFETY: callers destroy the kernel only once the device finished with it.
        unsafe {
            ctx.device.destroy_pipeline(self.pipeline, None);
            ctx.device.destroy_pipeline_layout(self.layout, None);
            ctx.device.destroy_descriptor_set_layout(self.set_layout, None);
        }
        self.pipeline = vk::Pipeline::null();
        self.layout = vk::PipelineLayout::null();
        self.set_layout = vk::DescriptorSetLayout::null();
    }
}

/// Writes `set` with the condition's, the enclosing predicates' and the own predicates'
/// buffers at bindings 0, 1, 2, each (buffer, offset, range).
pub(crate) fn write_set(ctx: &Context, set: vk::DescriptorSet, buffers: [(vk::Buffer, u64, u64); 3]) {
    let infos = buffers.map(|(buffer, offset, range)| [vk::DescriptorBufferInfo { buffer, offset, range }]);
    let writes: Vec<vk::WriteDescriptorSet> = infos
        .iter()
        .enumerate()
        .map(|(b, info)| {
            vk::WriteDescriptorSet::default()
                .dst_set(set)
                .dst_binding(b as u32)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .buffer_info(info)
        })
        .collect();
    // SAFETY: `set` is a fresh set no command buffer has recorded; the buffers are live.
    unsafe { ctx.device.update_descriptor_sets(&writes, &[]) };
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
    let bytes: Vec<u8> = push.iter().flat_map(|w| w.to_le_bytes()).collect();
    // SAFETY: the caller's contract; the push range is the layout's 24 bytes.
    unsafe {
        d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, kernel.pipeline);
        d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::COMPUTE, kernel.layout, 0, &[set], &[]);
        d.cmd_push_constants(cb, kernel.layout, vk::ShaderStageFlags::COMPUTE, 0, &bytes);
        d.cmd_dispatch(cb, 1, 1, 1);
    }
}
