//! Compute pipelines of compiled kernels (docs/abi.md: set 0, binding 0 the argument block,
//! bindings 1+i the memory slots), created through one pipeline cache.
#![allow(unsafe_code)]

use super::context::Context;
use crate::error::Result;
use ash::vk;
use cmdgraph_ir::bundle::CompiledKernel;

/// A kernel variant ready to dispatch.
pub struct KernelPipeline {
    pub(crate) set_layout: vk::DescriptorSetLayout,
    pub(crate) layout: vk::PipelineLayout,
    pub(crate) pipeline: vk::Pipeline,
    /// Number of bindings (1 + memory slots).
    pub(crate) bindings: u32,
}

/// Creates the pipeline cache every pipeline goes through.
pub fn create_cache(ctx: &Context) -> Result<vk::PipelineCache> {
    // SAFETY: valid create info; destroyed by the executor.
    Ok(unsafe { ctx.device.create_pipeline_cache(&vk::PipelineCacheCreateInfo::default(), None) }?)
}

impl KernelPipeline {
    /// Builds the descriptor set layout, pipeline layout and pipeline of `k`, whose SPIR-V
    /// the loader has checked; a module needing a feature the device did not enable is
    /// refused first (features.rs).
    pub fn new(ctx: &Context, cache: vk::PipelineCache, k: &CompiledKernel) -> Result<KernelPipeline> {
        KernelPipeline::with_update_after_bind(ctx, cache, k, ctx.update_after_bind)
    }

    /// [`new`](Self::new) with the set layout's `UPDATE_AFTER_BIND` chosen by the caller
    /// (only where the device has the feature): the hand-recorded peers measure both.
    pub(crate) fn with_update_after_bind(
        ctx: &Context,
        cache: vk::PipelineCache,
        k: &CompiledKernel,
        update_after_bind: bool,
    ) -> Result<KernelPipeline> {
        crate::features::check_kernel(k, &ctx.features)?;
        let bindings = 1 + k.layout.slots.len() as u32;
        let descs: Vec<vk::DescriptorSetLayoutBinding> = (0..bindings)
            .map(|b| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(b)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE)
            })
            .collect();
        // Every binding can be rewritten after the command buffer was recorded (updates).
        let (bind_flags, set_flags) = if update_after_bind && ctx.update_after_bind {
            (
                vk::DescriptorBindingFlags::UPDATE_AFTER_BIND | vk::DescriptorBindingFlags::UPDATE_UNUSED_WHILE_PENDING,
                vk::DescriptorSetLayoutCreateFlags::UPDATE_AFTER_BIND_POOL,
            )
        } else {
            (vk::DescriptorBindingFlags::empty(), vk::DescriptorSetLayoutCreateFlags::empty())
        };
        let flags = vec![bind_flags; bindings as usize];
        let mut flag_info = vk::DescriptorSetLayoutBindingFlagsCreateInfo::default().binding_flags(&flags);
        let info =
            vk::DescriptorSetLayoutCreateInfo::default().flags(set_flags).bindings(&descs).push_next(&mut flag_info);
        let mut out = KernelPipeline {
            set_layout: vk::DescriptorSetLayout::null(),
            layout: vk::PipelineLayout::null(),
            pipeline: vk::Pipeline::null(),
            bindings,
        };
        let mut required_size = ctx
            .required_subgroup_size(k)
            .map(|n| vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo::default().required_subgroup_size(n));
        // SAFETY: every create info points at live locals; on error, `destroy` frees what
        // was made (null handles are ignored).
        let made = unsafe {
            (|| {
                out.set_layout = ctx.device.create_descriptor_set_layout(&info, None)?;
                let sets = [out.set_layout];
                out.layout = ctx
                    .device
                    .create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().set_layouts(&sets), None)?;
                let module =
                    ctx.device.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&k.spirv), None)?;
                let entry = std::ffi::CString::new(k.entry.as_bytes()).unwrap_or_default();
                let mut stage = vk::PipelineShaderStageCreateInfo::default()
                    .stage(vk::ShaderStageFlags::COMPUTE)
                    .module(module)
                    .name(&entry);
                if let Some(size) = required_size.as_mut() {
                    stage = stage.push_next(size);
                }
                let infos = [vk::ComputePipelineCreateInfo::default().stage(stage).layout(out.layout)];
                let r = ctx.device.create_compute_pipelines(cache, &infos, None);
                ctx.device.destroy_shader_module(module, None);
                out.pipeline = r.map_err(|(_, e)| e)?.first().copied().unwrap_or_default();
                Ok::<(), vk::Result>(())
            })()
        };
        if let Err(e) = made {
            out.destroy(ctx);
            return Err(crate::ExecError::Vulkan(format!("pipeline of @{}: {e:?}", k.kernel)));
        }
        Ok(out)
    }

    /// Frees the pipeline and its layouts.
    pub fn destroy(&mut self, ctx: &Context) {
        // SAFETY: called once no command buffer using the pipeline is pending.
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
