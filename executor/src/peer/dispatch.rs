//! The dispatch peer: a list of dispatches of one compiled kernel over one f32 buffer,
//! recorded by hand into one primary command buffer with the fewest barriers the work needs,
//! so a benchmark can set [`Executor::run`](crate::Executor::run) beside the plain Vulkan
//! floor of the same dispatches in the same process (`cmdgraph-bench replay` and
//! `barrier-run`, docs/performance.md).
//!
//! What it records, once, and what every [`DispatchPeer::run`] submits:
//!
//! 1. reset the two timestamp queries (when the queue has timestamps);
//! 2. one opening barrier, compute writes → compute reads and writes: the previous run's
//!    dispatches wrote the buffer this run writes again (the executor opens every command
//!    buffer with a barrier for the same reason);
//! 3. a timestamp (`NONE`: when the first command is reached), then the pipeline bound once;
//! 4. per dispatch its own descriptor set (binding 0 its argument block, binding 1 the whole
//!    buffer, docs/abi.md) and one direct `vkCmdDispatch`, and after it a global memory
//!    barrier COMPUTE_SHADER / SHADER_WRITE → COMPUTE_SHADER / SHADER_READ|SHADER_WRITE where
//!    [`Barriers`] asks for one;
//! 5. a timestamp at `ALL_COMMANDS` (after the last dispatch completes).
//!
//! No `SIMULTANEOUS_USE`: a run waits for its fence before returning, so the command buffer
//! is never pending twice. Direct dispatches (docs/abi.md's indirect commands exist for
//! updates, which a peer does not have; on the H100 the two cost the same, ../shared/GPU.md).
//!
//! The peer shares its [`Context`] (an `Arc`) with whoever made it, possibly an
//! [`Executor`](crate::Executor) ([`DispatchPeer::beside`]): both submit to the context's one
//! queue, which Vulkan requires to be used from one thread at a time, so call the peer from
//! the thread that runs the executor while no run with host tasks is under way. Dropping
//! the peer waits for the device and destroys everything it made.
#![allow(unsafe_code)]

mod objects;

use crate::error::{ExecError, Result};
use crate::exec::Executor;
use crate::vk::{Buffer, Context, Transfers};
use ash::vk;
use cmdgraph_ir::bundle::CompiledKernel;
use objects::Objects;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One dispatch: the kernel as a `range(elems)` launch whose buffer parameter points at
/// element `elem_offset` of the peer's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dispatch {
    /// Element offset of the buffer parameter (the argument block's offset word).
    pub elem_offset: u32,
    /// Work-items of the launch, and elements it touches from `elem_offset`.
    pub elems: u32,
}

/// Where the peer records barriers between its dispatches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Barriers {
    /// None: independent dispatches (the wide graph, disjoint slices).
    None,
    /// After every dispatch but the last: a chain of dependent dispatches.
    Between,
    /// After every `k`-th dispatch but the last: rounds of `k` independent dispatches, each
    /// round after the previous one (`Every(1)` is `Between`; `Every(0)` is `None`).
    Every(usize),
}

impl Barriers {
    /// Whether a barrier follows dispatch `i` (from 0) of `n`.
    pub fn after(self, i: usize, n: usize) -> bool {
        let k = match self {
            Barriers::None | Barriers::Every(0) => return false,
            Barriers::Between => 1,
            Barriers::Every(k) => k,
        };
        i + 1 < n && (i + 1).is_multiple_of(k)
    }

    /// Barriers recorded between `n` dispatches.
    pub fn count(self, n: usize) -> u64 {
        (0..n).filter(|&i| self.after(i, n)).count() as u64
    }
}

/// How a peer records its dispatches, beyond the plain default: the two things the executor
/// does differently from it, so a benchmark can tell which one a cost comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PeerOptions {
    /// `vkCmdDispatchIndirect` from a host-visible buffer of `VkDispatchIndirectCommand`s
    /// (as the executor records), instead of `vkCmdDispatch`.
    pub indirect: bool,
    /// Descriptor set layout and pool with `UPDATE_AFTER_BIND` (as the executor creates them
    /// where the device has the feature); ignored on a device without it.
    pub update_after_bind: bool,
}

/// How [`DispatchPeer::run_waiting`] waits for its submission: the three ways a Vulkan
/// program can, so a benchmark can hold the executor's wait against the best of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerWait {
    /// `vkWaitForFences` on a fence given to the submission.
    Fence,
    /// `vkWaitSemaphores` on a timeline value the submission signals.
    Timeline,
    /// `vkGetSemaphoreCounterValue` polled until the submission's timeline value appears.
    Spin,
}

/// Hand-recorded dispatches of one kernel on one f32 buffer ([module docs](self)).
pub struct DispatchPeer {
    ctx: Arc<Context>,
    objects: Objects,
    /// Staging transfers for [`bind_zero`](Self::bind_zero) and [`read_f32`](Self::read_f32).
    transfers: Option<Transfers>,
    /// Elements of the buffer.
    elems_total: u64,
    /// Pipeline barriers recorded between dispatches (the opening one not counted).
    barriers: u64,
    dispatches: usize,
    /// Whether a run has completed (the timestamps hold a result).
    ran: bool,
    /// Host time of the last run's `vkQueueSubmit2` alone.
    submit: Duration,
    /// The timeline value the last timeline-waited run signalled.
    signalled: u64,
}

impl DispatchPeer {
    /// Builds the peer on `ctx`: a device-local buffer of `elems_total` f32 (zeroed), one
    /// argument block and descriptor set per dispatch, the kernel's pipeline, and the command
    /// buffer, recorded once.
    ///
    /// `kernel` must follow docs/abi.md with exactly one parameter, a 4-byte-element buffer
    /// (slot 0, binding 1), and no device globals: `x[i] += 1.0` as codegen compiles it, or a
    /// hand-written module of that interface. Its SPIR-V is checked as the loader checks a
    /// bundle's (structure, entry point, `LocalSize`, features) before it reaches the driver.
    /// Every dispatch must stay inside the buffer, and the buffer inside one descriptor
    /// (`maxStorageBufferRange`).
    pub fn new(
        ctx: Arc<Context>,
        kernel: &CompiledKernel,
        elems_total: u64,
        dispatches: &[Dispatch],
        barriers: Barriers,
    ) -> Result<DispatchPeer> {
        DispatchPeer::with_options(ctx, kernel, elems_total, dispatches, barriers, PeerOptions::default())
    }

    /// [`new`](Self::new), recorded as `options` say.
    pub fn with_options(
        ctx: Arc<Context>,
        kernel: &CompiledKernel,
        elems_total: u64,
        dispatches: &[Dispatch],
        barriers: Barriers,
        options: PeerOptions,
    ) -> Result<DispatchPeer> {
        check_kernel(kernel)?;
        check_dispatches(&ctx, kernel, elems_total, dispatches)?;
        let mut objects = Objects::default();
        let options = PeerOptions { update_after_bind: options.update_after_bind && ctx.update_after_bind, ..options };
        let built = objects.build(&ctx, kernel, elems_total, dispatches, barriers, options);
        let transfers = built.and_then(|()| Transfers::new(&ctx));
        match transfers {
            Ok(t) => {
                let mut peer = DispatchPeer {
                    ctx,
                    objects,
                    transfers: Some(t),
                    elems_total,
                    barriers: barriers.count(dispatches.len()),
                    dispatches: dispatches.len(),
                    ran: false,
                    submit: Duration::ZERO,
                    signalled: 0,
                };
                peer.bind_zero()?;
                Ok(peer)
            }
            Err(e) => {
                objects.destroy(&ctx);
                Err(e)
            }
        }
    }

    /// [`new`](Self::new) on the executor's own context (its device and queue), so the peer
    /// and the executor's runs can be interleaved in one process.
    pub fn beside(
        ex: &Executor,
        kernel: &CompiledKernel,
        elems_total: u64,
        dispatches: &[Dispatch],
        barriers: Barriers,
    ) -> Result<DispatchPeer> {
        DispatchPeer::new(Arc::clone(&ex.ctx), kernel, elems_total, dispatches, barriers)
    }

    /// [`beside`](Self::beside), recorded as `options` say.
    pub fn beside_with(
        ex: &Executor,
        kernel: &CompiledKernel,
        elems_total: u64,
        dispatches: &[Dispatch],
        barriers: Barriers,
        options: PeerOptions,
    ) -> Result<DispatchPeer> {
        DispatchPeer::with_options(Arc::clone(&ex.ctx), kernel, elems_total, dispatches, barriers, options)
    }

    /// Submits the recorded command buffer with a fence and waits for it: the host time of
    /// the submission and the wait (the submission alone: [`last_submit`](Self::last_submit)).
    pub fn run(&mut self) -> Result<Duration> {
        let o = &self.objects;
        let infos = [vk::CommandBufferSubmitInfo::default().command_buffer(o.cb)];
        let submit = [vk::SubmitInfo2::default().command_buffer_infos(&infos)];
        let d = &self.ctx.device;
        let t = Instant::now();
        // SAFETY: the command buffer is executable and not pending (every run waits for its
        // fence before returning); the fence is unsignalled (reset after every wait); the
        // queue is used from this thread only (module docs).
        let submitted = unsafe {
            d.queue_submit2(self.ctx.queue, &submit, o.fence)?;
            let submitted = t.elapsed();
            // Past the deadline the peer is not run again (its fence is pending): drop it.
            self.ctx
                .waited(d.wait_for_fences(&[o.fence], true, self.ctx.wait_ns()), || "a dispatch peer run".into())?;
            d.reset_fences(&[o.fence])?;
            submitted
        };
        let elapsed = t.elapsed();
        (self.submit, self.ran) = (submitted, true);
        Ok(elapsed)
    }

    /// Submits the recorded command buffer and waits as `wait` says: the host time of the
    /// submission and the wait ([`run`](Self::run) is `run_waiting(PeerWait::Fence)`).
    pub fn run_waiting(&mut self, wait: PeerWait) -> Result<Duration> {
        if wait == PeerWait::Fence {
            return self.run();
        }
        let o = &self.objects;
        let value = self.signalled + 1;
        let infos = [vk::CommandBufferSubmitInfo::default().command_buffer(o.cb)];
        let signals = [vk::SemaphoreSubmitInfo::default()
            .semaphore(o.timeline)
            .value(value)
            .stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS)];
        let submit = [vk::SubmitInfo2::default().command_buffer_infos(&infos).signal_semaphore_infos(&signals)];
        let d = &self.ctx.device;
        let t = Instant::now();
        // SAFETY: the command buffer is executable and not pending (every run waits for its
        // value before returning); `value` is above every value signalled before; the queue
        // is used from this thread only (module docs).
        unsafe { d.queue_submit2(self.ctx.queue, &submit, vk::Fence::null()) }?;
        let submitted = t.elapsed();
        self.signalled = value;
        match wait {
            PeerWait::Spin => loop {
                // SAFETY: the semaphore is live.
                if unsafe { d.get_semaphore_counter_value(o.timeline) }? >= value {
                    break;
                }
                if t.elapsed() > self.ctx.timeout().unwrap_or(Duration::MAX) {
                    return Err(ExecError::Invalid("a dispatch peer run did not finish in time".into()));
                }
                std::hint::spin_loop();
            },
            _ => {
                let (sems, values) = ([o.timeline], [value]);
                let info = vk::SemaphoreWaitInfo::default().semaphores(&sems).values(&values);
                // SAFETY: the semaphore is live.
                let r = unsafe { d.wait_semaphores(&info, self.ctx.wait_ns()) };
                self.ctx.waited(r, || "a dispatch peer run".into())?;
            }
        }
        let elapsed = t.elapsed();
        (self.submit, self.ran) = (submitted, true);
        Ok(elapsed)
    }

    /// Host time of the last run's `vkQueueSubmit2` call alone (zero before the first run):
    /// what the driver charges to submit the one pre-recorded command buffer.
    pub fn last_submit(&self) -> Duration {
        self.submit
    }

    /// Device nanoseconds between the two timestamps of the last run (first command reached
    /// to last dispatch done); `None` before the first run or on a queue without timestamps.
    pub fn gpu_ns(&self) -> Result<Option<u64>> {
        let bits = self.ctx.timestamp_bits;
        if !self.ran || bits == 0 || self.objects.queries == vk::QueryPool::null() {
            return Ok(None);
        }
        // SAFETY: the pool has 2 queries, written by a run that has completed (fence waited).
        unsafe { super::elapsed_ns(&self.ctx, self.objects.queries) }
    }

    /// Sets every element of the buffer to 0.0 (a fill between full barriers, waited for).
    pub fn bind_zero(&mut self) -> Result<()> {
        let (t, data) = self.staging()?;
        // SAFETY: the buffer is live and not in use (runs wait for their fence); the whole
        // buffer is filled.
        t.run(&self.ctx, |d, cb| unsafe { d.cmd_fill_buffer(cb, data.buffer, 0, vk::WHOLE_SIZE, 0) })
    }

    /// The buffer's elements after the last run, through a staging buffer.
    pub fn read_f32(&self) -> Result<Vec<f32>> {
        let (t, data) = self.staging()?;
        let bytes = t.download(&self.ctx, data, 0, self.elems_total * 4)?;
        Ok(bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
    }

    fn staging(&self) -> Result<(&Transfers, &Buffer)> {
        match (&self.transfers, &self.objects.data) {
            (Some(t), Some(d)) => Ok((t, d)),
            _ => Err(ExecError::Invalid("dispatch peer not built".into())),
        }
    }

    /// Pipeline barriers recorded between dispatches (the opening barrier not counted, as
    /// [`Executor::barriers`](crate::Executor::barriers) does not count the executor's).
    pub fn barriers(&self) -> u64 {
        self.barriers
    }

    /// Dispatches recorded.
    pub fn dispatches(&self) -> usize {
        self.dispatches
    }

    /// The context the peer runs on (device name, validation messages).
    pub fn context(&self) -> &Context {
        &self.ctx
    }
}

impl Drop for DispatchPeer {
    fn drop(&mut self) {
        // Nothing of ours is pending after `run` returns, but a failed wait may have left a
        // submission behind: the device must be done before anything is destroyed.
        if self.ctx.wait_idle().is_err() {
            // Still busy past the deadline: leaked rather than destroyed under running work.
            return;
        }
        if let Some(mut t) = self.transfers.take() {
            t.destroy(&self.ctx);
        }
        self.objects.destroy(&self.ctx);
    }
}

/// The interface the peer fills in: one buffer parameter of 4-byte elements, nothing else.
fn check_kernel(k: &CompiledKernel) -> Result<()> {
    use cmdgraph_ir::bundle::{ArgFieldKind, MemorySlot};
    let bad = |why: &str| ExecError::Invalid(format!("dispatch peer: kernel @{}: {why}", k.kernel));
    let one_buffer = matches!(k.layout.fields.as_slice(),
        [f] if matches!(f.kind, ArgFieldKind::Buffer { slot: 0, elem_bytes: 4 }));
    if !one_buffer || !matches!(k.layout.slots.as_slice(), [MemorySlot::Param { param: 0, .. }]) {
        return Err(bad("needs exactly one parameter, a buffer of 4-byte elements"));
    }
    let field = k.layout.fields.first().map_or(0, |f| f.offset);
    if !field.is_multiple_of(4) || u64::from(field) + 8 > u64::from(k.layout.block_size.max(32)) {
        return Err(bad("its buffer field lies outside the argument block"));
    }
    let [wx, wy, wz] = k.workgroup_size;
    if wx == 0 || wy != 1 || wz != 1 || k.items_per_invocation == 0 {
        return Err(bad("needs a one-dimensional work-group"));
    }
    // The device features are checked where the pipeline is made (vk/pipeline.rs).
    crate::spirv::check(&k.kernel, &k.spirv, &k.entry, k.workgroup_size)
}

fn check_dispatches(ctx: &Context, k: &CompiledKernel, elems_total: u64, ds: &[Dispatch]) -> Result<()> {
    let lim = &ctx.props.limits;
    let bytes = elems_total.checked_mul(4).filter(|&b| b > 0);
    if bytes.is_none_or(|b| b > u64::from(lim.max_storage_buffer_range)) {
        return Err(ExecError::Invalid(format!(
            "dispatch peer: {elems_total} elements do not fit one descriptor ({} bytes at most)",
            lim.max_storage_buffer_range
        )));
    }
    if ds.is_empty() {
        return Err(ExecError::Invalid("dispatch peer: no dispatches".into()));
    }
    let per_group = u64::from(k.workgroup_size[0]) * u64::from(k.items_per_invocation);
    for (i, d) in ds.iter().enumerate() {
        let end = u64::from(d.elem_offset) + u64::from(d.elems);
        if d.elems == 0 || end > elems_total {
            return Err(ExecError::Invalid(format!(
                "dispatch peer: dispatch {i} ({} elements at {}) outside the {elems_total}-element buffer",
                d.elems, d.elem_offset
            )));
        }
        if u64::from(d.elems).div_ceil(per_group) > u64::from(lim.max_compute_work_group_count[0]) {
            return Err(ExecError::Invalid(format!("dispatch peer: dispatch {i} needs too many work-groups")));
        }
    }
    Ok(())
}

/// Work-groups in x of a `range(elems)` launch (docs/abi.md, "Items per invocation").
fn groups(k: &CompiledKernel, elems: u32) -> u32 {
    let per_group = u64::from(k.workgroup_size[0]) * u64::from(k.items_per_invocation.max(1));
    u64::from(elems).div_ceil(per_group.max(1)) as u32
}

/// The argument block of one dispatch (docs/abi.md): global size (elems, 1, 1), offsets 0,
/// then the buffer parameter's element offset and the element count available from there.
fn argument_block(k: &CompiledKernel, elems_total: u64, d: Dispatch) -> Vec<u8> {
    let mut words = vec![0u32; (k.layout.block_size.max(32) as usize).div_ceil(4)];
    words[0] = d.elems;
    words[1] = 1;
    words[2] = 1;
    if let Some(f) = k.layout.fields.first() {
        let at = f.offset as usize / 4;
        words[at] = d.elem_offset;
        words[at + 1] = (elems_total - u64::from(d.elem_offset)) as u32;
    }
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}
