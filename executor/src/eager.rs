//! Eager execution: the commands of an executable submitted one by one, each recorded into
//! its own command buffer at submission time, the way an eager (non-graph) SYCL runtime runs
//! an in-order queue. It is the peer the graph replay of [`Executor::run`] is measured against
//! (docs/executor.md, "Eager mode").
#![allow(unsafe_code)]

use crate::error::{ExecError, Result};
use crate::exec::{ExecId, Executor};
use crate::schedule::{self, Seg};
use crate::vk::buffer::full_barrier;
use ash::vk;

impl Executor {
    /// Runs executable `id` eagerly and waits for it: in schedule order, every node that
    /// records a command gets a fresh command buffer, recorded now (a full barrier, so it
    /// waits for the command before it on the queue as an in-order queue does, then the
    /// command) and submitted with its own `vkQueueSubmit`. Returns the number of
    /// submissions. Uses the executable's argument blocks and descriptor sets as they stand,
    /// so it computes what [`run`](Self::run) computes; host tasks are refused (eager mode
    /// runs device commands only).
    pub fn run_eager(&mut self, id: ExecId) -> Result<usize> {
        if let Some(e) = self.worker.take_error(id.0) {
            return Err(e);
        }
        // The queue is used by one thread at a time: wait until the host-task thread is idle.
        self.worker.drain(self.ctx.timeout())?;
        self.with_exec(id, |ex, exe| {
            let graph = ex.loaded.module.graphs.try_get(exe.graph).ok_or_else(|| ExecError::Ir("bad graph".into()))?;
            let mut nodes = Vec::new();
            for seg in &exe.sched {
                match seg {
                    Seg::Device(stages) => nodes
                        .extend(stages.iter().flatten().copied().filter(|&h| !schedule::is_noop(&graph.nodes[h].kind))),
                    Seg::Host(h) | Seg::Loop(h) => {
                        return Err(ExecError::Invalid(format!(
                            "%{}: eager mode runs device commands only, not host tasks or `while` loops",
                            graph.nodes[*h].name
                        )))
                    }
                }
            }
            if nodes.is_empty() {
                return Ok(0);
            }
            let d = &ex.ctx.device;
            let pool_info = vk::CommandPoolCreateInfo::default()
                .queue_family_index(ex.ctx.queue_family)
                .flags(vk::CommandPoolCreateFlags::TRANSIENT);
            // SAFETY: valid create infos on a live device; both objects are destroyed below,
            // after the fence (or the device) says nothing submitted is pending.
            let pool = unsafe { d.create_command_pool(&pool_info, None) }?;
            // SAFETY: as above.
            let fence = match unsafe { d.create_fence(&vk::FenceCreateInfo::default(), None) } {
                Ok(f) => f,
                Err(e) => {
                    // SAFETY: nothing was allocated from the pool.
                    unsafe { d.destroy_command_pool(pool, None) };
                    return Err(e.into());
                }
            };
            let mut native = std::mem::take(&mut ex.native);
            let mut submitted = 0usize;
            let last = nodes.len() - 1;
            let result = (|| -> Result<()> {
                for (i, &h) in nodes.iter().enumerate() {
                    let info = vk::CommandBufferAllocateInfo::default().command_pool(pool).command_buffer_count(1);
                    // SAFETY: the pool is this call's own; the command buffer is recorded and
                    // submitted once, and freed with the pool after the wait.
                    unsafe {
                        let cb = d.allocate_command_buffers(&info)?.first().copied().unwrap_or_default();
                        d.begin_command_buffer(
                            cb,
                            &vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
                        )?;
                        // In-order queue: everything submitted before (the previous command,
                        // earlier runs and transfers) completes before this command starts.
                        full_barrier(
                            d,
                            cb,
                            vk::PipelineStageFlags2::ALL_COMMANDS,
                            vk::PipelineStageFlags2::ALL_COMMANDS,
                        );
                        let recorded = ex.record_node(exe, graph, h, cb, &mut native, &mut vk::Pipeline::null());
                        if i == last {
                            full_barrier(
                                d,
                                cb,
                                vk::PipelineStageFlags2::ALL_COMMANDS,
                                vk::PipelineStageFlags2::ALL_COMMANDS | vk::PipelineStageFlags2::HOST,
                            );
                        }
                        d.end_command_buffer(cb)?;
                        recorded?;
                        let cbs = [vk::CommandBufferSubmitInfo::default().command_buffer(cb)];
                        let submit = [vk::SubmitInfo2::default().command_buffer_infos(&cbs)];
                        let signal = if i == last { fence } else { vk::Fence::null() };
                        d.queue_submit2(ex.ctx.queue, &submit, signal)?;
                    }
                    submitted += 1;
                }
                // SAFETY: the fence was submitted with the last command buffer.
                let r = unsafe { d.wait_for_fences(&[fence], true, ex.ctx.wait_ns()) };
                ex.ctx.waited(r, || "an eager run on the device".into())
            })();
            ex.native = native;
            if result.is_err() && submitted > 0 && ex.ctx.wait_idle().is_err() {
                // The fence may never be signalled, and the queue is still busy past the
                // deadline: the pool and fence are leaked rather than freed under pending work.
                return result.map(|()| submitted);
            }
            // SAFETY: nothing submitted from the pool is pending any more.
            unsafe {
                d.destroy_fence(fence, None);
                d.destroy_command_pool(pool, None);
            }
            result.map(|()| submitted)
        })
    }
}
