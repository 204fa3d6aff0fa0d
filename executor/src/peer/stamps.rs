//! Queue stamps: two timestamps written on the [`Context`]'s queue around whatever is
//! submitted between them, so a benchmark can time a stream of back-to-back executor runs
//! the way CUDA events time back-to-back graph replays (docs/performance.md, `copy`).
//!
//! [`QueueStamps::open`] submits a command buffer that resets the queries and writes the
//! first timestamp once every command submitted before it has completed;
//! [`QueueStamps::close`] submits one that writes the second once every command submitted
//! before it (the runs in between) has completed, and waits for it. Both stamps are taken at
//! `ALL_COMMANDS`, which orders them against earlier submissions to the queue in submission
//! order, as CUDA's events are ordered in their stream. Submissions must come from the thread
//! that also submits the runs (the queue is externally synchronised); an executor submits
//! from its own worker thread for graphs with host tasks or `while` nodes.
#![allow(unsafe_code)]

use crate::error::{ExecError, Result};
use crate::vk::Context;
use ash::vk;

/// Two timestamps around a stream of submissions ([module docs](self)).
pub struct QueueStamps {
    device: vk::Device,
    pool: vk::CommandPool,
    /// The opening and the closing command buffer.
    cbs: [vk::CommandBuffer; 2],
    fence: vk::Fence,
    queries: vk::QueryPool,
    /// Whether `open` was submitted and `close` has not completed yet.
    open: bool,
}

impl QueueStamps {
    /// Records the two command buffers; an error on a queue without timestamps.
    pub fn new(ctx: &Context) -> Result<QueueStamps> {
        if ctx.timestamp_bits == 0 {
            return Err(ExecError::Invalid(format!("{}: the queue has no timestamps", ctx.device_name())));
        }
        let mut s = QueueStamps {
            device: ctx.device.handle(),
            pool: vk::CommandPool::null(),
            cbs: [vk::CommandBuffer::null(); 2],
            fence: vk::Fence::null(),
            queries: vk::QueryPool::null(),
            open: false,
        };
        match s.build(ctx) {
            Ok(()) => Ok(s),
            Err(e) => {
                s.free(ctx);
                Err(e)
            }
        }
    }

    fn build(&mut self, ctx: &Context) -> Result<()> {
        let d = &ctx.device;
        let pool_info = vk::CommandPoolCreateInfo::default().queue_family_index(ctx.queue_family);
        let query_info = vk::QueryPoolCreateInfo::default().query_type(vk::QueryType::TIMESTAMP).query_count(2);
        // SAFETY: valid create infos on a live device; every object is stored at once, so
        // `free` destroys it on any later error.
        unsafe {
            self.pool = d.create_command_pool(&pool_info, None)?;
            self.fence = d.create_fence(&vk::FenceCreateInfo::default(), None)?;
            self.queries = d.create_query_pool(&query_info, None)?;
            let alloc = vk::CommandBufferAllocateInfo::default().command_pool(self.pool).command_buffer_count(2);
            let cbs = d.allocate_command_buffers(&alloc)?;
            self.cbs = [cbs[0], cbs[1]];
        }
        for (i, &cb) in self.cbs.iter().enumerate() {
            // SAFETY: `cb` comes from this object's pool and was never submitted; the query
            // pool lives until `free`.
            unsafe {
                d.begin_command_buffer(cb, &vk::CommandBufferBeginInfo::default())?;
                if i == 0 {
                    d.cmd_reset_query_pool(cb, self.queries, 0, 2);
                }
                d.cmd_write_timestamp2(cb, vk::PipelineStageFlags2::ALL_COMMANDS, self.queries, i as u32);
                d.end_command_buffer(cb)?;
            }
        }
        Ok(())
    }

    fn check(&self, ctx: &Context) -> Result<()> {
        if ctx.device.handle() != self.device {
            return Err(ExecError::Invalid("queue stamps used with another context than their own".into()));
        }
        Ok(())
    }

    /// Submits the first timestamp. An error if the stamps are already open.
    pub fn open(&mut self, ctx: &Context) -> Result<()> {
        self.check(ctx)?;
        if self.open {
            return Err(ExecError::Invalid("queue stamps opened twice without a close".into()));
        }
        self.submit(ctx, 0, vk::Fence::null())?;
        self.open = true;
        Ok(())
    }

    /// Submits the second timestamp and waits for it; the device nanoseconds between the
    /// two stamps. An error if the stamps are not open.
    pub fn close(&mut self, ctx: &Context) -> Result<u64> {
        self.check(ctx)?;
        if !self.open {
            return Err(ExecError::Invalid("queue stamps closed without an open".into()));
        }
        self.submit(ctx, 1, self.fence)?;
        // SAFETY: the fence was just submitted with the closing command buffer; after the
        // wait nothing of this object is pending, so the fence may be reset.
        unsafe {
            ctx.waited(ctx.device.wait_for_fences(&[self.fence], true, ctx.wait_ns()), || "queue stamps".into())?;
            ctx.device.reset_fences(&[self.fence])?;
        }
        self.open = false;
        // SAFETY: both queries were written by completed submissions (queue order puts the
        // opening one before the closing one, whose fence was waited for).
        unsafe { super::elapsed_ns(ctx, self.queries) }?
            .ok_or_else(|| ExecError::Invalid("queue stamps: a timestamp is not available".into()))
    }

    fn submit(&self, ctx: &Context, which: usize, fence: vk::Fence) -> Result<()> {
        let infos = [vk::CommandBufferSubmitInfo::default().command_buffer(self.cbs[which])];
        let submit = [vk::SubmitInfo2::default().command_buffer_infos(&infos)];
        // SAFETY: the command buffer is executable and not pending: the opening one was last
        // submitted before the previous `close`, whose fence wait completed everything
        // submitted before it; the closing one is waited for in `close`.
        unsafe { ctx.device.queue_submit2(ctx.queue, &submit, fence) }?;
        Ok(())
    }

    /// Frees every object. An open stamp is closed first (waited for), so nothing is pending.
    pub fn destroy(mut self, ctx: &Context) {
        if self.check(ctx).is_err() {
            return;
        }
        if self.open && self.close(ctx).is_err() {
            // The close did not complete: leaking beats destroying pending objects.
            return;
        }
        self.free(ctx);
    }

    fn free(&mut self, ctx: &Context) {
        // SAFETY: nothing is pending (`destroy` closed any open stamps; a failed `new` never
        // submitted); null handles are ignored; the command buffers go with their pool.
        unsafe {
            ctx.device.destroy_query_pool(self.queries, None);
            ctx.device.destroy_fence(self.fence, None);
            ctx.device.destroy_command_pool(self.pool, None);
        }
    }
}
