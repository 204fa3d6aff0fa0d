//! The Vulkan objects of a [`DispatchPeer`](super::DispatchPeer) and its one recording.
//!
//! Every handle starts null and is stored the moment it is made, so [`Objects::destroy`]
//! frees exactly what a half-finished [`Objects::build`] left (Vulkan ignores null handles).

use super::{argument_block, groups, Barriers, Dispatch, PeerOptions};
use crate::error::{ExecError, Result};
use crate::vk::pipeline::KernelPipeline;
use crate::vk::{Buffer, Context, Place};
use ash::vk;
use cmdgraph_ir::bundle::CompiledKernel;

/// Everything a peer made on the device.
#[derive(Default)]
pub(super) struct Objects {
    /// The f32 buffer the dispatches work on (device-local).
    pub(super) data: Option<Buffer>,
    /// The argument blocks, one per dispatch at `minStorageBufferOffsetAlignment` steps
    /// (host-visible, as the executor's: written once before the first submission).
    args: Option<Buffer>,
    /// `VkDispatchIndirectCommand`s, one per dispatch (only with `PeerOptions::indirect`).
    indirect: Option<Buffer>,
    options: PeerOptions,
    pipeline: Option<KernelPipeline>,
    desc_pool: vk::DescriptorPool,
    cmd_pool: vk::CommandPool,
    pub(super) cb: vk::CommandBuffer,
    pub(super) fence: vk::Fence,
    /// A timeline semaphore for the waits that do not use the fence ([`super::PeerWait`]).
    pub(super) timeline: vk::Semaphore,
    /// Two timestamps; null on a queue without timestamps.
    pub(super) queries: vk::QueryPool,
}

impl Objects {
    /// Creates every object, writes the argument blocks and descriptors, and records the
    /// command buffer. The inputs were checked (`check_kernel`, `check_dispatches`).
    pub(super) fn build(
        &mut self,
        ctx: &Context,
        k: &CompiledKernel,
        elems_total: u64,
        ds: &[Dispatch],
        barriers: Barriers,
        options: PeerOptions,
    ) -> Result<()> {
        self.options = options;
        if options.indirect {
            let mut ind = Buffer::new(ctx, 12 * ds.len().max(1) as u64, Place::Shared)?;
            let bytes: Vec<u8> =
                ds.iter().flat_map(|d| [groups(k, d.elems), 1, 1]).flat_map(|g| g.to_le_bytes()).collect();
            let written = ind.write(0, &bytes);
            self.indirect = Some(ind);
            written?;
        }
        self.data = Some(Buffer::new(ctx, elems_total * 4, Place::Device)?);
        let block = u64::from(k.layout.block_size.max(32));
        let stride = block.next_multiple_of(ctx.props.limits.min_storage_buffer_offset_alignment.max(4));
        let mut args = Buffer::new(ctx, stride * ds.len() as u64, Place::Shared)?;
        let written = ds
            .iter()
            .enumerate()
            .try_for_each(|(i, &d)| args.write(stride * i as u64, &argument_block(k, elems_total, d)));
        self.args = Some(args);
        written?;
        self.pipeline(ctx, k)?;
        let sets = self.descriptor_sets(ctx, ds.len(), stride, block)?;
        self.commands(ctx)?;
        self.record(ctx, k, ds, &sets, barriers)
    }

    /// The kernel's pipeline as the executor makes it (vk/pipeline.rs), with
    /// update-after-bind descriptors only when the options ask for them.
    fn pipeline(&mut self, ctx: &Context, k: &CompiledKernel) -> Result<()> {
        let cache = vk::PipelineCache::null();
        self.pipeline = Some(KernelPipeline::with_update_after_bind(ctx, cache, k, self.options.update_after_bind)?);
        Ok(())
    }

    /// One descriptor set per dispatch: binding 0 its argument block, binding 1 the whole
    /// buffer at offset 0 (docs/abi.md: the element offset is in the argument block).
    fn descriptor_sets(&mut self, ctx: &Context, n: usize, stride: u64, block: u64) -> Result<Vec<vk::DescriptorSet>> {
        let (Some(args), Some(data), Some(pipeline)) = (&self.args, &self.data, &self.pipeline) else {
            return Err(ExecError::Invalid("dispatch peer: buffers missing".into()));
        };
        let count = u32::try_from(n).map_err(|_| ExecError::Invalid("dispatch peer: too many dispatches".into()))?;
        let sizes = [vk::DescriptorPoolSize { ty: vk::DescriptorType::STORAGE_BUFFER, descriptor_count: 2 * count }];
        let d = &ctx.device;
        // SAFETY: valid create and allocate infos; the pool is stored at once (`destroy`
        // frees it and its sets); the writes name live buffers, inside their sizes, into
        // sets no command buffer uses yet.
        unsafe {
            let mut info = vk::DescriptorPoolCreateInfo::default().max_sets(count).pool_sizes(&sizes);
            if self.options.update_after_bind {
                info = info.flags(vk::DescriptorPoolCreateFlags::UPDATE_AFTER_BIND);
            }
            self.desc_pool = d.create_descriptor_pool(&info, None)?;
            let layouts = vec![pipeline.set_layout; n];
            let sets = d.allocate_descriptor_sets(
                &vk::DescriptorSetAllocateInfo::default().descriptor_pool(self.desc_pool).set_layouts(&layouts),
            )?;
            let infos: Vec<[[vk::DescriptorBufferInfo; 1]; 2]> = (0..n)
                .map(|i| {
                    [
                        [vk::DescriptorBufferInfo { buffer: args.buffer, offset: stride * i as u64, range: block }],
                        [vk::DescriptorBufferInfo { buffer: data.buffer, offset: 0, range: vk::WHOLE_SIZE }],
                    ]
                })
                .collect();
            let writes: Vec<vk::WriteDescriptorSet> = sets
                .iter()
                .zip(&infos)
                .flat_map(|(&set, pair)| {
                    pair.iter().enumerate().map(move |(b, info)| {
                        vk::WriteDescriptorSet::default()
                            .dst_set(set)
                            .dst_binding(b as u32)
                            .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                            .buffer_info(info)
                    })
                })
                .collect();
            d.update_descriptor_sets(&writes, &[]);
            Ok(sets)
        }
    }

    /// Command pool, the one command buffer, the fence and (with timestamps) the queries.
    fn commands(&mut self, ctx: &Context) -> Result<()> {
        let d = &ctx.device;
        let pool_info = vk::CommandPoolCreateInfo::default().queue_family_index(ctx.queue_family);
        // SAFETY: valid create infos on a live device; each handle is stored at once.
        unsafe {
            self.cmd_pool = d.create_command_pool(&pool_info, None)?;
            let alloc = vk::CommandBufferAllocateInfo::default()
                .command_pool(self.cmd_pool)
                .level(vk::CommandBufferLevel::PRIMARY)
                .command_buffer_count(1);
            self.cb = d.allocate_command_buffers(&alloc)?.first().copied().unwrap_or_default();
            self.fence = d.create_fence(&vk::FenceCreateInfo::default(), None)?;
            let mut kind =
                vk::SemaphoreTypeCreateInfo::default().semaphore_type(vk::SemaphoreType::TIMELINE).initial_value(0);
            self.timeline = d.create_semaphore(&vk::SemaphoreCreateInfo::default().push_next(&mut kind), None)?;
            if ctx.timestamp_bits > 0 {
                let info = vk::QueryPoolCreateInfo::default().query_type(vk::QueryType::TIMESTAMP).query_count(2);
                self.queries = d.create_query_pool(&info, None)?;
            }
        }
        Ok(())
    }

    /// Records the command buffer every run submits ([module docs](super)).
    fn record(
        &self,
        ctx: &Context,
        k: &CompiledKernel,
        ds: &[Dispatch],
        sets: &[vk::DescriptorSet],
        barriers: Barriers,
    ) -> Result<()> {
        let (d, cb) = (&ctx.device, self.cb);
        let Some(pipeline) = &self.pipeline else {
            return Err(ExecError::Invalid("dispatch peer: no pipeline".into()));
        };
        let barrier = [vk::MemoryBarrier2::default()
            .src_stage_mask(vk::PipelineStageFlags2::COMPUTE_SHADER)
            .src_access_mask(vk::AccessFlags2::SHADER_WRITE)
            .dst_stage_mask(vk::PipelineStageFlags2::COMPUTE_SHADER)
            .dst_access_mask(vk::AccessFlags2::SHADER_READ | vk::AccessFlags2::SHADER_WRITE)];
        let dep = vk::DependencyInfo::default().memory_barriers(&barrier);
        let timed = self.queries != vk::QueryPool::null();
        // SAFETY: `cb` comes from this peer's pool and was never submitted; every handle
        // recorded (pipeline, layout, sets, query pool) lives until `destroy`, which runs
        // after the device is idle.
        unsafe {
            d.begin_command_buffer(cb, &vk::CommandBufferBeginInfo::default())?;
            if timed {
                d.cmd_reset_query_pool(cb, self.queries, 0, 2);
            }
            d.cmd_pipeline_barrier2(cb, &dep);
            if timed {
                d.cmd_write_timestamp2(cb, vk::PipelineStageFlags2::NONE, self.queries, 0);
            }
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, pipeline.pipeline);
            for (i, (dispatch, &set)) in ds.iter().zip(sets).enumerate() {
                d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::COMPUTE, pipeline.layout, 0, &[set], &[]);
                match &self.indirect {
                    Some(ind) => d.cmd_dispatch_indirect(cb, ind.buffer, 12 * i as u64),
                    None => d.cmd_dispatch(cb, groups(k, dispatch.elems), 1, 1),
                }
                if barriers.after(i, ds.len()) {
                    d.cmd_pipeline_barrier2(cb, &dep);
                }
            }
            if timed {
                d.cmd_write_timestamp2(cb, vk::PipelineStageFlags2::ALL_COMMANDS, self.queries, 1);
            }
            d.end_command_buffer(cb)?;
        }
        Ok(())
    }

    /// Frees everything; the device must be done with it (the peer waits for idle first).
    pub(super) fn destroy(&mut self, ctx: &Context) {
        let d = &ctx.device;
        // SAFETY: nothing is pending (the caller waited for the device); null handles are
        // ignored; the command buffer goes with its pool and the sets with theirs.
        unsafe {
            d.destroy_query_pool(self.queries, None);
            d.destroy_fence(self.fence, None);
            d.destroy_semaphore(self.timeline, None);
            d.destroy_command_pool(self.cmd_pool, None);
            d.destroy_descriptor_pool(self.desc_pool, None);
        }
        if let Some(p) = self.pipeline.as_mut() {
            p.destroy(ctx);
        }
        for b in [self.data.take(), self.args.take(), self.indirect.take()].into_iter().flatten() {
            let mut b = b;
            b.destroy(ctx);
        }
        *self = Objects::default();
    }
}
