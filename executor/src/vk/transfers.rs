//! Transfers between host memory and buffers: a copy recorded between full barriers,
//! submitted, and waited for.
//!
//! The command buffer and a host-visible staging buffer are kept from one transfer to the
//! next. Allocating and mapping fresh memory for each one cost about a millisecond of host
//! time per `bind` plus `read` on NVIDIA's driver (docs/performance.md, "Python `run`
//! overhead"), a hundred times the copy of a small array.
#![allow(unsafe_code)]

use super::buffer::{full_barrier, BufRef, Buffer, Place};
use super::context::Context;
use crate::error::{ExecError, Result};
use ash::vk;
use std::sync::{Mutex, MutexGuard};

/// The largest staging buffer kept between transfers. Larger transfers go through it in
/// pieces of this size, so a gigabyte upload does not pin a gigabyte of host memory.
pub const KEPT_STAGING: u64 = 64 << 20;

/// The smallest staging buffer made: small arrays of different sizes then share one.
const MIN_STAGING: u64 = 64 << 10;

/// Records and submits transfer command buffers and waits for them.
pub struct Transfers {
    pool: vk::CommandPool,
    fence: vk::Fence,
    /// The command buffer and staging buffer; the lock also serialises use of `pool`, which
    /// Vulkan requires to be externally synchronised.
    state: Mutex<State>,
}

/// What is reused between transfers.
struct State {
    /// Null until the first transfer allocates it.
    cb: vk::CommandBuffer,
    /// Grown on demand up to [`KEPT_STAGING`] bytes.
    staging: Option<Buffer>,
}

impl Transfers {
    /// Creates the command pool and fence.
    pub fn new(ctx: &Context) -> Result<Transfers> {
        let info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(ctx.queue_family)
            .flags(vk::CommandPoolCreateFlags::TRANSIENT | vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        // SAFETY: valid create infos; destroyed in `destroy` (the pool on the fence's error path).
        unsafe {
            let pool = ctx.device.create_command_pool(&info, None)?;
            let fence = match ctx.device.create_fence(&vk::FenceCreateInfo::default(), None) {
                Ok(f) => f,
                Err(e) => {
                    ctx.device.destroy_command_pool(pool, None);
                    return Err(e.into());
                }
            };
            Ok(Transfers { pool, fence, state: Mutex::new(State { cb: vk::CommandBuffer::null(), staging: None }) })
        }
    }

    /// Frees the staging buffer, the pool (with its command buffer) and the fence.
    pub fn destroy(&mut self, ctx: &Context) {
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some(mut s) = state.staging.take() {
            s.destroy(ctx);
        }
        state.cb = vk::CommandBuffer::null();
        // SAFETY: called after the device is idle; destroying the pool frees its command buffer.
        unsafe {
            ctx.device.destroy_fence(self.fence, None);
            ctx.device.destroy_command_pool(self.pool, None);
        }
    }

    /// The reused state. A panic while it was held leaves nothing half-done that matters
    /// (the next transfer re-records the command buffer), so a poisoned lock is taken over.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records `f` between full barriers (so it is ordered after everything submitted
    /// before and before everything submitted after, host reads included), submits it and
    /// waits.
    pub fn run(&self, ctx: &Context, f: impl FnOnce(&ash::Device, vk::CommandBuffer)) -> Result<()> {
        let mut state = self.lock();
        self.run_locked(ctx, &mut state, f)
    }

    fn run_locked(
        &self,
        ctx: &Context,
        state: &mut State,
        f: impl FnOnce(&ash::Device, vk::CommandBuffer),
    ) -> Result<()> {
        // After a timed-out wait the queue may still be busy, and the fence and command
        // buffer of a transfer that timed out still pending: wait (bounded) for idle first.
        ctx.settle()?;
        // SAFETY: the queue is idle or the fence was reset after its last wait.
        if unsafe { ctx.device.get_fence_status(self.fence) }? {
            // SAFETY: signalled, so not in use by the queue.
            unsafe { ctx.device.reset_fences(&[self.fence]) }?;
        }
        if state.cb == vk::CommandBuffer::null() {
            let alloc = vk::CommandBufferAllocateInfo::default()
                .command_pool(self.pool)
                .level(vk::CommandBufferLevel::PRIMARY)
                .command_buffer_count(1);
            // SAFETY: the pool belongs to this device; the lock held makes this its only user.
            let cbs = unsafe { ctx.device.allocate_command_buffers(&alloc) }?;
            state.cb = cbs.first().copied().ok_or_else(|| ExecError::Vulkan("no command buffer".into()))?;
        }
        let cb = state.cb;
        // SAFETY: `cb` is not pending (its last submission was waited for, or the queue
        // settled above); beginning it resets it (the pool allows resets). The lock held
        // makes this thread the pool's only user.
        let result = unsafe {
            (|| {
                let begin = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
                ctx.device.begin_command_buffer(cb, &begin)?;
                full_barrier(&ctx.device, cb, vk::PipelineStageFlags2::ALL_COMMANDS, vk::PipelineStageFlags2::TRANSFER);
                f(&ctx.device, cb);
                full_barrier(
                    &ctx.device,
                    cb,
                    vk::PipelineStageFlags2::TRANSFER,
                    vk::PipelineStageFlags2::ALL_COMMANDS | vk::PipelineStageFlags2::HOST,
                );
                ctx.device.end_command_buffer(cb)?;
                let infos = [vk::CommandBufferSubmitInfo::default().command_buffer(cb)];
                let submit = [vk::SubmitInfo2::default().command_buffer_infos(&infos)];
                ctx.device.queue_submit2(ctx.queue, &submit, self.fence)?;
                // Poll first, as waits for runs do (Context::wait_spin): a small copy is done
                // before a blocking wait would have slept.
                // An error of the poll (a lost device) is the wait's error too, reported below.
                let _ = ctx.poll(|| ctx.device.get_fence_status(self.fence));
                ctx.device.wait_for_fences(&[self.fence], true, ctx.wait_ns())?;
                ctx.device.reset_fences(&[self.fence])?;
                Ok::<(), vk::Result>(())
            })()
        };
        if result == Err(vk::Result::TIMEOUT) {
            // Still pending: the next transfer settles the queue before reusing anything.
            return ctx.waited(Err(vk::Result::TIMEOUT), || "a transfer (behind earlier device work)".into());
        }
        Ok(result?)
    }

    /// The staging buffer, at least `len` bytes (`len` ≤ [`KEPT_STAGING`]), made or grown
    /// now. Called with the queue settled, so an older, smaller one is no longer in use.
    fn staging<'s>(ctx: &Context, state: &'s mut State, len: u64) -> Result<&'s mut Buffer> {
        if state.staging.as_ref().is_some_and(|s| s.size < len) {
            if let Some(mut old) = state.staging.take() {
                old.destroy(ctx);
            }
        }
        if state.staging.is_none() {
            let size = len.next_power_of_two().clamp(MIN_STAGING, KEPT_STAGING);
            // Host-cached: `read` copies out of it on the host, which uncached memory would
            // make slow; uploads measured no slower (docs/performance.md, "Host transfers").
            state.staging = Some(Buffer::new(ctx, size, Place::HostCached)?);
        }
        state.staging.as_mut().ok_or_else(|| ExecError::Vulkan("no staging buffer".into()))
    }

    /// Copies `bytes` into `dst` at `offset` through the staging buffer.
    pub fn upload(&self, ctx: &Context, dst: impl Into<BufRef>, offset: u64, bytes: &[u8]) -> Result<()> {
        let dst: BufRef = dst.into();
        if bytes.is_empty() {
            return Ok(());
        }
        if offset.checked_add(bytes.len() as u64).is_none_or(|e| e > dst.size) {
            return Err(ExecError::Invalid(format!(
                "upload of {} bytes at {offset} past a {}-byte buffer",
                bytes.len(),
                dst.size
            )));
        }
        let mut state = self.lock();
        ctx.settle()?;
        for (i, piece) in bytes.chunks(KEPT_STAGING as usize).enumerate() {
            let at = offset + i as u64 * KEPT_STAGING;
            let staging = Self::staging(ctx, &mut state, piece.len() as u64)?;
            staging.write(0, piece)?;
            let src = staging.buffer;
            let region = [vk::BufferCopy { src_offset: 0, dst_offset: at, size: piece.len() as u64 }];
            // SAFETY: both buffers are live and the region is inside both.
            self.run_locked(ctx, &mut state, |d, cb| unsafe { d.cmd_copy_buffer(cb, src, dst.buffer, &region) })?;
        }
        Ok(())
    }

    /// A host task's write: memory the host maps (`host` USM) is written through its
    /// mapping, with no command on the queue (device work submitted after the task's
    /// ancestors may still run: the run plan made the task wait for whatever conflicts,
    /// executable/waits.rs); other memory through [`upload`](Self::upload), after everything
    /// submitted before.
    pub(crate) fn upload_for_host_task(&self, ctx: &Context, dst: BufRef, offset: u64, bytes: &[u8]) -> Result<()> {
        match dst.mapped {
            Some(base) if offset.checked_add(bytes.len() as u64).is_some_and(|e| e <= dst.size) => {
                // SAFETY: `base` maps the whole buffer (host-coherent) and its owner outlives
                // this call; the range is inside it (checked above). The device work the task
                // follows is complete, and device work submitted later sees the write (a
                // queue submission makes host writes visible).
                unsafe {
                    std::ptr::copy_nonoverlapping(bytes.as_ptr(), (base as *mut u8).add(offset as usize), bytes.len())
                };
                Ok(())
            }
            _ => self.upload(ctx, dst, offset, bytes),
        }
    }

    /// A host task's read: through the mapping of memory the host maps (as
    /// [`upload_for_host_task`](Self::upload_for_host_task)), other memory through
    /// [`download`](Self::download).
    pub(crate) fn download_for_host_task(&self, ctx: &Context, src: BufRef, offset: u64, len: u64) -> Result<Vec<u8>> {
        match src.mapped {
            Some(base) if offset.checked_add(len).is_some_and(|e| e <= src.size) => {
                let mut out = vec![0u8; len as usize];
                // SAFETY: as in `upload_for_host_task`; the device work that wrote the range
                // completed (the task waited for it) and each segment's closing barrier makes
                // its writes available to the host.
                unsafe {
                    std::ptr::copy_nonoverlapping((base as *const u8).add(offset as usize), out.as_mut_ptr(), out.len())
                };
                Ok(out)
            }
            _ => self.download(ctx, src, offset, len),
        }
    }

    /// Reads `len` bytes of `src` at `offset` through the staging buffer.
    pub fn download(&self, ctx: &Context, src: impl Into<BufRef>, offset: u64, len: u64) -> Result<Vec<u8>> {
        let src: BufRef = src.into();
        // Checked before the allocation: a length past the buffer is an error, not an abort.
        if offset.checked_add(len).is_none_or(|e| e > src.size) {
            return Err(ExecError::Invalid(format!(
                "download of {len} bytes at {offset} past a {}-byte buffer",
                src.size
            )));
        }
        let mut out = vec![0u8; len as usize];
        self.download_into(ctx, src, offset, &mut out)?;
        Ok(out)
    }

    /// [`download`](Self::download) into `out` (its length is the byte count): the staging
    /// buffer's bytes go straight into the caller's memory.
    pub fn download_into(&self, ctx: &Context, src: impl Into<BufRef>, offset: u64, out: &mut [u8]) -> Result<()> {
        let src: BufRef = src.into();
        let len = out.len() as u64;
        if len == 0 {
            return Ok(());
        }
        if offset.checked_add(len).is_none_or(|e| e > src.size) {
            return Err(ExecError::Invalid(format!(
                "download of {len} bytes at {offset} past a {}-byte buffer",
                src.size
            )));
        }
        let mut state = self.lock();
        ctx.settle()?;
        for (i, piece) in out.chunks_mut(KEPT_STAGING as usize).enumerate() {
            let at = offset + i as u64 * KEPT_STAGING;
            let n = piece.len() as u64;
            let dst = Self::staging(ctx, &mut state, n)?.buffer;
            let region = [vk::BufferCopy { src_offset: at, dst_offset: 0, size: n }];
            // SAFETY: both buffers are live and the region is inside both.
            self.run_locked(ctx, &mut state, |d, cb| unsafe { d.cmd_copy_buffer(cb, src.buffer, dst, &region) })?;
            Self::staging(ctx, &mut state, n)?.read_into(0, piece)?;
        }
        Ok(())
    }
}
