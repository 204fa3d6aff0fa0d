//! The executor's own kernels (the copy kernels, the predicate kernel): checked-in SPIR-V
//! whose set 0 holds only storage buffers and whose arguments are push constants. One place
//! makes their layouts and pipelines, writes their sets and records their dispatches.
#![allow(unsafe_code)]

use super::context::Context;
use crate::error::{ExecError, Result};
use ash::vk;

/// The layouts of a family of built-in kernels and one pipeline per module.
pub struct Builtin {
    pub(crate) set_layout: vk::DescriptorSetLayout,
    pub(crate) layout: vk::PipelineLayout,
    /// In the order of the modules given to [`Builtin::new`].
    pub(crate) pipelines: Vec<vk::Pipeline>,
}

impl Builtin {
    /// Set 0 of `bindings` storage buffers, `push` bytes of push constants, and a pipeline
    /// for each of `modules` (SPIR-V bytes) through `cache`; `what` names them in an error.
    pub fn new(
        ctx: &Context,
        cache: vk::PipelineCache,
        bindings: u32,
        push: u32,
        modules: &[&[u8]],
        what: &str,
    ) -> Result<Builtin> {
        let mut out = Builtin {
            set_layout: vk::DescriptorSetLayout::null(),
            layout: vk::PipelineLayout::null(),
            pipelines: Vec::with_capacity(modules.len()),
        };
        let bindings: Vec<vk::DescriptorSetLayoutBinding> = (0..bindings)
            .map(|b| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(b)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE)
            })
            .collect();
        let push = [vk::PushConstantRange { stage_flags: vk::ShaderStageFlags::COMPUTE, offset: 0, size: push }];
        // SAFETY: every create info points at live locals; on error, `destroy` frees what was
        // made (null handles are ignored). The SPIR-V is checked in and validated
        // (executor/tests/copy_kernels.rs).
        let made = unsafe {
            (|| {
                let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
                out.set_layout = ctx.device.create_descriptor_set_layout(&info, None)?;
                let sets = [out.set_layout];
                let info = vk::PipelineLayoutCreateInfo::default().set_layouts(&sets).push_constant_ranges(&push);
                out.layout = ctx.device.create_pipeline_layout(&info, None)?;
                for bytes in modules {
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
                    out.pipelines.push(r.map_err(|(_, e)| e)?.first().copied().unwrap_or_default());
                }
                Ok::<(), vk::Result>(())
            })()
        };
        if let Err(e) = made {
            out.destroy(ctx);
            return Err(ExecError::Vulkan(format!("{what}: {e:?}")));
        }
        Ok(out)
    }

    /// Frees the pipelines and layouts; no pending command buffer may use them.
    pub fn destroy(&mut self, ctx: &Context) {
        // SAFETY: callers destroy the kernels only once the device finished with them; null
        // handles are ignored.
        unsafe {
            for p in self.pipelines.drain(..) {
                ctx.device.destroy_pipeline(p, None);
            }
            ctx.device.destroy_pipeline_layout(self.layout, None);
            ctx.device.destroy_descriptor_set_layout(self.set_layout, None);
        }
        self.layout = vk::PipelineLayout::null();
        self.set_layout = vk::DescriptorSetLayout::null();
    }

    /// Records one dispatch of pipeline `which` over `groups` work-groups: `set` bound,
    /// `push` pushed.
    ///
    /// # Safety
    /// `cb` is recording; `set` was written by [`write_set`] with windows holding everything
    /// the kernel reaches for `push`, which is as long as the layout's push range.
    pub(crate) unsafe fn record(
        &self,
        d: &ash::Device,
        cb: vk::CommandBuffer,
        which: usize,
        set: vk::DescriptorSet,
        push: &[u32],
        groups: u32,
    ) {
        let bytes: Vec<u8> = push.iter().flat_map(|w| w.to_le_bytes()).collect();
        let pipeline = self.pipelines.get(which).copied().unwrap_or_default();
        // SAFETY: the caller's contract.
        unsafe {
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, pipeline);
            d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::COMPUTE, self.layout, 0, &[set], &[]);
            d.cmd_push_constants(cb, self.layout, vk::ShaderStageFlags::COMPUTE, 0, &bytes);
            d.cmd_dispatch(cb, groups, 1, 1);
        }
    }
}

/// Writes `set` with `buffers[i]` = (buffer, offset, range) at binding `i`.
pub(crate) fn write_set(ctx: &Context, set: vk::DescriptorSet, buffers: &[(vk::Buffer, u64, u64)]) {
    let infos: Vec<[vk::DescriptorBufferInfo; 1]> =
        buffers.iter().map(|&(buffer, offset, range)| [vk::DescriptorBufferInfo { buffer, offset, range }]).collect();
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
    // the windows inside them (the caller's plan).
    unsafe { ctx.device.update_descriptor_sets(&writes, &[]) };
}
