//! The executor's copy kernels: compute shaders that copy 16- or 4-byte elements between two
//! storage buffers, for `memcpy` nodes and pattern fills where a dispatch moves more bytes per
//! second than `vkCmdCopyBuffer` (on NVIDIA's driver the copy command moves a fifth of what a
//! shader moves: docs/performance.md, "Copies and fills").
//!
//! The SPIR-V is checked in beside its assembly (`copy/x4.spvasm`, `copy/x1.spvasm`);
//! executor/tests/copy_kernels.rs re-assembles it, compares the bytes and runs `spirv-val`, so
//! what reaches the driver is exactly the reviewed text. Layout: binding 0 the source, binding 1
//! the destination (each a window of its buffer), push constants `{src_off, dst_off, count}`
//! in elements, 256 invocations per group.
#![allow(unsafe_code)]

use super::context::Context;
use crate::error::{ExecError, Result};
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

/// The copy kernels' SPIR-V: 16-byte elements, then 4-byte elements (for tests).
pub fn spirv() -> [(&'static str, &'static [u8]); 2] {
    [("x4", X4), ("x1", X1)]
}

/// The two copy pipelines and their shared layouts.
pub struct CopyKernels {
    pub(crate) set_layout: vk::DescriptorSetLayout,
    pub(crate) layout: vk::PipelineLayout,
    /// Copies 16-byte elements.
    pub(crate) x4: vk::Pipeline,
    /// Copies 4-byte elements.
    pub(crate) x1: vk::Pipeline,
}

impl CopyKernels {
    /// Creates the layouts and both pipelines through `cache`.
    pub fn new(ctx: &Context, cache: vk::PipelineCache) -> Result<CopyKernels> {
        let mut out = CopyKernels {
            set_layout: vk::DescriptorSetLayout::null(),
            layout: vk::PipelineLayout::null(),
            x4: vk::Pipeline::null(),
            x1: vk::Pipeline::null(),
        };
        let bindings: Vec<vk::DescriptorSetLayoutBinding> = (0..2)
            .map(|b| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(b)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE)
            })
            .collect();
        let push = [vk::PushConstantRange { stage_flags: vk::ShaderStageFlags::COMPUTE, offset: 0, size: 12 }];
        // SAFETY: every create info points at live locals; on error, `destroy` frees what was
        // made (null handles are ignored). The SPIR-V is the checked-in, validated modules.
        let made = unsafe {
            (|| {
                let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
                out.set_layout = ctx.device.create_descriptor_set_layout(&info, None)?;
                let sets = [out.set_layout];
                let info = vk::PipelineLayoutCreateInfo::default().set_layouts(&sets).push_constant_ranges(&push);
                out.layout = ctx.device.create_pipeline_layout(&info, None)?;
                let mut made = [vk::Pipeline::null(); 2];
                for (slot, (_, bytes)) in made.iter_mut().zip(spirv()) {
                    let words: Vec<u32> =
                        bytes.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect();
                    let module =
                        ctx.device.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None)?;
                    let stage = vk::PipelineShaderStageCreateInfo::default()
                        .stage(vk::ShaderStageFlags::COMPUTE)
                        .module(module)
                        .name(c"main");
                    let infos = [vk::ComputePipelineCreateInfo::default().stage(stage).layout(out.layout)];
                    let r = ctx.device.create_compute_pipelines(cache, &infos, None);
                    ctx.device.destroy_shader_module(module, None);
                    *slot = r.map_err(|(_, e)| e)?.first().copied().unwrap_or_default();
                }
                [out.x4, out.x1] = made;
                Ok::<(), vk::Result>(())
            })()
        };
        if let Err(e) = made {
            out.destroy(ctx);
            return Err(ExecError::Vulkan(format!("the copy kernels: {e:?}")));
        }
        Ok(out)
    }

    /// The pipeline for elements of `elem` bytes (16 or 4).
    pub(crate) fn pipeline(&self, elem: u64) -> vk::Pipeline {
        if elem == 16 {
            self.x4
        } else {
            self.x1
        }
    }

    /// Frees the pipelines and layouts; no pending command buffer may use them.
    pub fn destroy(&mut self, ctx: &Context) {
        // SAFETY: callers destroy the kernels only once the device finished with them.
        unsafe {
            ctx.device.destroy_pipeline(self.x4, None);
            ctx.device.destroy_pipeline(self.x1, None);
            ctx.device.destroy_pipeline_layout(self.layout, None);
            ctx.device.destroy_descriptor_set_layout(self.set_layout, None);
        }
        *self = CopyKernels {
            set_layout: vk::DescriptorSetLayout::null(),
            layout: vk::PipelineLayout::null(),
            x4: vk::Pipeline::null(),
            x1: vk::Pipeline::null(),
        };
    }
}

/// Writes a new set of `layout` from `pool` with `src` at binding 0 and `dst` at binding 1,
/// each `(buffer, offset, range)`.
pub(crate) fn write_set(
    ctx: &Context,
    set: vk::DescriptorSet,
    src: (vk::Buffer, u64, u64),
    dst: (vk::Buffer, u64, u64),
) {
    let infos = [
        [vk::DescriptorBufferInfo { buffer: src.0, offset: src.1, range: src.2 }],
        [vk::DescriptorBufferInfo { buffer: dst.0, offset: dst.1, range: dst.2 }],
    ];
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
    // SAFETY: `set` is a fresh set no command buffer has recorded; the buffers are live and
    // the ranges inside them (the caller's plan).
    unsafe { ctx.device.update_descriptor_sets(&writes, &[]) };
}

/// Records a copy dispatch: `set` bound, `{src_off, dst_off, count}` pushed.
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
    let bytes: Vec<u8> = push.iter().flat_map(|w| w.to_le_bytes()).collect();
    // SAFETY: the caller's contract; the push range is the layout's 12 bytes.
    unsafe {
        d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, kernels.pipeline(elem));
        d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::COMPUTE, kernels.layout, 0, &[set], &[]);
        d.cmd_push_constants(cb, kernels.layout, vk::ShaderStageFlags::COMPUTE, 0, &bytes);
        d.cmd_dispatch(cb, groups, 1, 1);
    }
}
