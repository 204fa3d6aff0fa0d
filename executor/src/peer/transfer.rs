//! Transfer peers: one device-to-device `vkCmdCopyBuffer` or one `vkCmdFillBuffer`, recorded
//! by hand between two timestamps, on the [`Context`]'s own device and queue, so a benchmark
//! can set the executor's `memcpy` / `memset` / `memfill` beside the plain command of the same
//! size in the same process (docs/performance.md, `copy`).
//!
//! A peer borrows nothing: every method takes the context it was created on (checked, an
//! error otherwise), so a peer can live beside an [`Executor`](crate::Executor) that is run
//! between its own runs. [`TransferPeer::destroy`] frees it; dropping it without that leaks
//! its objects until the process ends.
#![allow(unsafe_code)]

use crate::error::{ExecError, Result};
use crate::vk::buffer::BufRef;
use crate::vk::Context;
use crate::vk::Transfers;
use ash::vk;
use std::time::{Duration, Instant};

/// What a peer records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransferOp {
    /// `vkCmdCopyBuffer` of the whole source buffer into the destination buffer.
    Copy,
    /// `vkCmdFillBuffer` of the whole destination with this word (its little-endian bytes
    /// repeated).
    Fill(u32),
}

/// How [`TransferPeer::burst`] signals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Burst {
    /// Each submission signals the next value of a timeline semaphore at this stage
    /// (`ALL_COMMANDS`: as every executor run does).
    Timeline(vk::PipelineStageFlags2),
    /// No submission signals anything; only the last carries a fence.
    Bare,
}

/// Where a peer runs and what memory it got: the facts an investigation of copy speed needs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Facts {
    /// The queue family of the context's (only) queue.
    pub queue_family: u32,
    /// Its capabilities (empty if the physical device could not be found again).
    pub queue_flags: vk::QueueFlags,
    /// The device's other queue families, which the context does not use.
    pub other_families: Vec<(u32, vk::QueueFlags)>,
    /// The memory type the peer's buffers got (device-local, not host-visible where the
    /// device has such a type, on the largest heap).
    pub memory_type: u32,
    /// Its property flags.
    pub memory_flags: vk::MemoryPropertyFlags,
    /// The size of its heap in bytes.
    pub heap_bytes: u64,
    /// The type `Buffer::new(.., Place::Device)` (vk/buffer.rs: the first `DEVICE_LOCAL`
    /// type), which holds the executor's memory objects, picks for the same requirements.
    pub executor_memory_type: u32,
    /// Its property flags.
    pub executor_memory_flags: vk::MemoryPropertyFlags,
    /// The buffers' `VkMemoryRequirements::alignment`; both regions start at offset 0.
    pub alignment: u64,
}

/// A device-local buffer with its own allocation.
#[derive(Clone, Copy, Default)]
struct DevBuf {
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
}

/// One hand-recorded transfer command between two timestamps ([module docs](self)).
pub struct TransferPeer {
    op: TransferOp,
    bytes: u64,
    /// The device the peer was created on; methods refuse another.
    device: vk::Device,
    /// The copy's source (null for a fill).
    src: DevBuf,
    dst: DevBuf,
    pool: vk::CommandPool,
    cb: vk::CommandBuffer,
    /// The barrier and the command without timestamps, recorded for simultaneous use:
    /// what [`burst`](Self::burst) submits back to back.
    burst_cb: vk::CommandBuffer,
    fence: vk::Fence,
    queries: vk::QueryPool,
    /// Signalled by each submission of a [`Burst::Timeline`] burst.
    timeline: vk::Semaphore,
    /// The last value `timeline` was signalled with.
    signalled: u64,
    /// Staging transfers for [`write_src`](Self::write_src) and [`read_dst`](Self::read_dst).
    transfers: Option<Transfers>,
    /// Whether `run` has completed once (the timestamps hold a result).
    ran: bool,
    facts: Facts,
}

impl TransferPeer {
    /// Creates the buffers (`bytes` each, a positive multiple of 4) and records the command
    /// buffer: reset the two queries, a transfer→transfer barrier (orders this run's writes
    /// after the previous run's and after staging uploads), timestamp, the command, timestamp.
    pub fn new(ctx: &Context, op: TransferOp, bytes: u64) -> Result<TransferPeer> {
        if bytes == 0 || !bytes.is_multiple_of(4) {
            return Err(ExecError::Invalid(format!("transfer peer of {bytes} bytes: needs a positive multiple of 4")));
        }
        let mut peer = TransferPeer {
            op,
            bytes,
            device: ctx.device.handle(),
            src: DevBuf::default(),
            dst: DevBuf::default(),
            pool: vk::CommandPool::null(),
            cb: vk::CommandBuffer::null(),
            burst_cb: vk::CommandBuffer::null(),
            fence: vk::Fence::null(),
            queries: vk::QueryPool::null(),
            timeline: vk::Semaphore::null(),
            signalled: 0,
            transfers: None,
            ran: false,
            facts: Facts::default(),
        };
        match peer.build(ctx) {
            Ok(()) => Ok(peer),
            Err(e) => {
                peer.free(ctx);
                Err(e)
            }
        }
    }

    fn build(&mut self, ctx: &Context) -> Result<()> {
        self.facts = queue_facts(ctx);
        if self.op == TransferOp::Copy {
            self.src = self.buffer(ctx)?;
        }
        self.dst = self.buffer(ctx)?;
        self.transfers = Some(Transfers::new(ctx)?);
        let d = &ctx.device;
        let pool_info = vk::CommandPoolCreateInfo::default().queue_family_index(ctx.queue_family);
        let query_info = vk::QueryPoolCreateInfo::default().query_type(vk::QueryType::TIMESTAMP).query_count(2);
        // SAFETY: valid create infos on a live device; every object is stored at once, so
        // `free` destroys it on any later error.
        unsafe {
            self.pool = d.create_command_pool(&pool_info, None)?;
            self.fence = d.create_fence(&vk::FenceCreateInfo::default(), None)?;
            self.queries = d.create_query_pool(&query_info, None)?;
            let mut timeline = vk::SemaphoreTypeCreateInfo::default().semaphore_type(vk::SemaphoreType::TIMELINE);
            self.timeline = d.create_semaphore(&vk::SemaphoreCreateInfo::default().push_next(&mut timeline), None)?;
            let alloc = vk::CommandBufferAllocateInfo::default().command_pool(self.pool).command_buffer_count(2);
            let [cb, burst_cb] = d.allocate_command_buffers(&alloc)?[..] else {
                return Err(ExecError::Vulkan("two command buffers asked for, another count given".into()));
            };
            (self.cb, self.burst_cb) = (cb, burst_cb);
        }
        self.record(ctx)?;
        self.record_burst(ctx)
    }

    /// The ordering barrier every run starts with: previous runs and staging copies wrote
    /// these buffers with transfer commands; sync validation (and the memory model) want
    /// that ordered before this run's accesses.
    fn barrier() -> [vk::MemoryBarrier2<'static>; 1] {
        [vk::MemoryBarrier2::default()
            .src_stage_mask(vk::PipelineStageFlags2::TRANSFER)
            .src_access_mask(vk::AccessFlags2::TRANSFER_WRITE)
            .dst_stage_mask(vk::PipelineStageFlags2::TRANSFER)
            .dst_access_mask(vk::AccessFlags2::TRANSFER_READ | vk::AccessFlags2::TRANSFER_WRITE)]
    }

    /// Records the command itself into `cb`.
    ///
    /// # Safety
    /// `cb` is recording; the peer's buffers are live.
    unsafe fn command(&self, d: &ash::Device, cb: vk::CommandBuffer) {
        // SAFETY: the caller's contract.
        unsafe {
            match self.op {
                TransferOp::Copy => {
                    let region = [vk::BufferCopy { src_offset: 0, dst_offset: 0, size: self.bytes }];
                    d.cmd_copy_buffer(cb, self.src.buffer, self.dst.buffer, &region);
                }
                TransferOp::Fill(word) => d.cmd_fill_buffer(cb, self.dst.buffer, 0, self.bytes, word),
            }
        }
    }

    /// Records [`burst`](Self::burst)'s command buffer: the barrier and the command.
    fn record_burst(&self, ctx: &Context) -> Result<()> {
        let (d, cb) = (&ctx.device, self.burst_cb);
        let begin = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::SIMULTANEOUS_USE);
        // SAFETY: `cb` was allocated from this peer's pool and never submitted; every
        // handle recorded is live until `free`.
        unsafe {
            d.begin_command_buffer(cb, &begin)?;
            d.cmd_pipeline_barrier2(cb, &vk::DependencyInfo::default().memory_barriers(&Self::barrier()));
            self.command(d, cb);
            d.end_command_buffer(cb)?;
        }
        Ok(())
    }

    /// Records the one command buffer every [`run`](Self::run) submits.
    fn record(&self, ctx: &Context) -> Result<()> {
        let (d, cb) = (&ctx.device, self.cb);
        // SAFETY: `cb` was allocated from this peer's pool and is not pending (never
        // submitted yet); every handle recorded is live until `free`.
        unsafe {
            d.begin_command_buffer(cb, &vk::CommandBufferBeginInfo::default())?;
            d.cmd_reset_query_pool(cb, self.queries, 0, 2);
            d.cmd_pipeline_barrier2(cb, &vk::DependencyInfo::default().memory_barriers(&Self::barrier()));
            d.cmd_write_timestamp2(cb, vk::PipelineStageFlags2::NONE, self.queries, 0);
            self.command(d, cb);
            d.cmd_write_timestamp2(cb, vk::PipelineStageFlags2::TRANSFER, self.queries, 1);
            d.end_command_buffer(cb)?;
        }
        Ok(())
    }

    /// A device-local buffer of `self.bytes` for transfers, with its own allocation; fills
    /// the memory facts (the same for every buffer of the peer).
    fn buffer(&mut self, ctx: &Context) -> Result<DevBuf> {
        let usage = vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST;
        let info = vk::BufferCreateInfo::default().size(self.bytes).usage(usage);
        let mut out = DevBuf::default();
        // SAFETY: valid create info; on an error the caller's `free` destroys what was made
        // (a buffer without memory included).
        let req = unsafe {
            out.buffer = ctx.device.create_buffer(&info, None)?;
            ctx.device.get_buffer_memory_requirements(out.buffer)
        };
        let (mine, theirs) = memory_types(ctx, req.memory_type_bits);
        let Some(index) = mine else {
            // SAFETY: the buffer has no memory and was never used.
            unsafe { ctx.device.destroy_buffer(out.buffer, None) };
            return Err(ExecError::Vulkan(format!("no memory type for {} bytes", self.bytes)));
        };
        let types = &ctx.mem_props.memory_types;
        let flags = |i: u32| types.get(i as usize).map_or(vk::MemoryPropertyFlags::empty(), |t| t.property_flags);
        let heap = types.get(index as usize).map_or(0, |t| t.heap_index as usize);
        self.facts.memory_type = index;
        self.facts.memory_flags = flags(index);
        self.facts.heap_bytes = ctx.mem_props.memory_heaps.get(heap).map_or(0, |h| h.size);
        self.facts.executor_memory_type = theirs.unwrap_or(u32::MAX);
        self.facts.executor_memory_flags = theirs.map_or(vk::MemoryPropertyFlags::empty(), flags);
        self.facts.alignment = req.alignment;
        let alloc = vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(index);
        // SAFETY: allocate info for this buffer's requirements; bound at offset 0 once.
        let bound = unsafe {
            ctx.device.allocate_memory(&alloc, None).and_then(|m| {
                out.memory = m;
                ctx.device.bind_buffer_memory(out.buffer, m, 0)
            })
        };
        if let Err(e) = bound {
            // SAFETY: the buffer is unused; its memory (if allocated) is bound to nothing else.
            unsafe {
                ctx.device.destroy_buffer(out.buffer, None);
                ctx.device.free_memory(out.memory, None);
            }
            return Err(ExecError::Vulkan(format!("allocating {} bytes: {e:?}", self.bytes)));
        }
        Ok(out)
    }

    fn check(&self, ctx: &Context) -> Result<()> {
        if ctx.device.handle() != self.device {
            return Err(ExecError::Invalid("transfer peer used with another context than its own".into()));
        }
        Ok(())
    }

    /// Submits the recorded command buffer and waits for its fence; the host time of the
    /// submission and wait.
    pub fn run(&mut self, ctx: &Context) -> Result<Duration> {
        self.check(ctx)?;
        let infos = [vk::CommandBufferSubmitInfo::default().command_buffer(self.cb)];
        let submit = [vk::SubmitInfo2::default().command_buffer_infos(&infos)];
        let t = Instant::now();
        // SAFETY: the command buffer is executable and not pending (every run waits for its
        // fence before returning); the queue is used from this thread only.
        unsafe {
            ctx.device.queue_submit2(ctx.queue, &submit, self.fence)?;
            // Past the deadline the peer is not run again (its fence is pending): drop it.
            ctx.waited(ctx.device.wait_for_fences(&[self.fence], true, ctx.wait_ns()), || {
                "a transfer peer run".into()
            })?;
            ctx.device.reset_fences(&[self.fence])?;
        }
        self.ran = true;
        Ok(t.elapsed())
    }

    /// Submits the barrier and the command `n` times back to back, one submission each,
    /// signalling as `how` says, then waits for the last: bracketed by
    /// [`QueueStamps`](super::stamps::QueueStamps), the Vulkan floor of back-to-back runs.
    pub fn burst(&mut self, ctx: &Context, n: u32, how: Burst) -> Result<()> {
        self.check(ctx)?;
        let infos = [vk::CommandBufferSubmitInfo::default().command_buffer(self.burst_cb)];
        for i in 0..n {
            let value = self.signalled + 1;
            let signal = match how {
                Burst::Timeline(stage) => {
                    Some(vk::SemaphoreSubmitInfo::default().semaphore(self.timeline).value(value).stage_mask(stage))
                }
                Burst::Bare => None,
            };
            let signals = signal.as_slice();
            let submit = [vk::SubmitInfo2::default().command_buffer_infos(&infos).signal_semaphore_infos(signals)];
            let fence = if i + 1 == n { self.fence } else { vk::Fence::null() };
            // SAFETY: the command buffer was recorded for simultaneous use; `value` is above
            // every value signalled before; the fence is unsignalled (reset after every
            // wait); the queue is used from this thread only.
            unsafe { ctx.device.queue_submit2(ctx.queue, &submit, fence) }?;
            if signal.is_some() {
                self.signalled = value;
            }
        }
        if n > 0 {
            // SAFETY: the last submission carries the fence.
            unsafe {
                ctx.waited(ctx.device.wait_for_fences(&[self.fence], true, ctx.wait_ns()), || {
                    "a transfer peer burst".into()
                })?;
                ctx.device.reset_fences(&[self.fence])?;
            }
        }
        Ok(())
    }

    /// Device nanoseconds between the two timestamps of the last run; `None` before the
    /// first run or on a queue without timestamps.
    pub fn gpu_ns(&self, ctx: &Context) -> Result<Option<u64>> {
        self.check(ctx)?;
        if !self.ran || ctx.timestamp_bits == 0 {
            return Ok(None);
        }
        // SAFETY: the pool has 2 queries, written by a run that has completed (fence waited).
        unsafe { super::elapsed_ns(ctx, self.queries) }
    }

    /// Sets the copy's source (exactly `bytes` long) through a staging buffer; an error for
    /// a fill.
    pub fn write_src(&mut self, ctx: &Context, data: &[u8]) -> Result<()> {
        self.check(ctx)?;
        if self.op != TransferOp::Copy || data.len() as u64 != self.bytes {
            return Err(ExecError::Invalid(format!(
                "write_src: {} bytes into a {:?} peer of {} bytes",
                data.len(),
                self.op,
                self.bytes
            )));
        }
        let t = self.transfers.as_ref().ok_or_else(|| ExecError::Invalid("peer not built".into()))?;
        t.upload(ctx, BufRef { buffer: self.src.buffer, size: self.bytes, mapped: None }, 0, data)
    }

    /// The destination's bytes after the last run, through a staging buffer.
    pub fn read_dst(&self, ctx: &Context) -> Result<Vec<u8>> {
        self.check(ctx)?;
        let t = self.transfers.as_ref().ok_or_else(|| ExecError::Invalid("peer not built".into()))?;
        t.download(ctx, BufRef { buffer: self.dst.buffer, size: self.bytes, mapped: None }, 0, self.bytes)
    }

    /// What the peer records and the size.
    pub fn op(&self) -> (TransferOp, u64) {
        (self.op, self.bytes)
    }

    /// Queue family and memory facts ([`Facts`]).
    pub fn facts(&self) -> &Facts {
        &self.facts
    }

    /// The facts in one line, for reports.
    pub fn describe(&self) -> String {
        let f = &self.facts;
        let others: Vec<String> = f.other_families.iter().map(|(i, fl)| format!("{i} ({fl:?})")).collect();
        format!(
            "queue family {} ({:?}), the context's only queue{}; memory type {} ({:?}, heap of {} MiB); \
             the executor's rule (vk/buffer.rs, first DEVICE_LOCAL type) picks type {} ({:?}){}; \
             buffer alignment {} B, regions at offset 0",
            f.queue_family,
            f.queue_flags,
            if others.is_empty() { String::new() } else { format!("; not used: {}", others.join(", ")) },
            f.memory_type,
            f.memory_flags,
            f.heap_bytes >> 20,
            f.executor_memory_type,
            f.executor_memory_flags,
            if f.executor_memory_type == f.memory_type { ", the same" } else { ", a different one" },
            f.alignment
        )
    }

    /// Frees every object; the device must be done with them (every `run` waits).
    pub fn destroy(mut self, ctx: &Context) {
        if self.check(ctx).is_ok() {
            self.free(ctx);
        }
    }

    fn free(&mut self, ctx: &Context) {
        if let Some(mut t) = self.transfers.take() {
            t.destroy(ctx);
        }
        // SAFETY: nothing is pending (runs and staging transfers wait for their fences);
        // null handles (never created) are ignored by Vulkan; the command buffer goes with
        // its pool.
        unsafe {
            ctx.device.destroy_query_pool(self.queries, None);
            ctx.device.destroy_fence(self.fence, None);
            ctx.device.destroy_semaphore(self.timeline, None);
            ctx.device.destroy_command_pool(self.pool, None);
            for b in [self.src, self.dst] {
                ctx.device.destroy_buffer(b.buffer, None);
                ctx.device.free_memory(b.memory, None);
            }
        }
        (self.src, self.dst) = (DevBuf::default(), DevBuf::default());
        (self.queries, self.fence, self.pool, self.cb, self.burst_cb) = (
            vk::QueryPool::null(),
            vk::Fence::null(),
            vk::CommandPool::null(),
            vk::CommandBuffer::null(),
            vk::CommandBuffer::null(),
        );
        self.timeline = vk::Semaphore::null();
    }
}

/// The memory type a careful programmer picks for `bits` (device-local and not host-visible,
/// on the largest heap: on discrete GPUs the host-visible device-local types sit in the small
/// BAR window; else any device-local type, else the first allowed one), and the one the
/// executor's `Buffer::new(.., Place::Device)` picks (the first device-local type, else the
/// first allowed one).
fn memory_types(ctx: &Context, bits: u32) -> (Option<u32>, Option<u32>) {
    let p = &ctx.mem_props;
    let types = &p.memory_types[..p.memory_type_count.min(32) as usize];
    let allowed = |i: &usize| bits & (1 << i) != 0;
    let has = |i: usize, f: vk::MemoryPropertyFlags| types[i].property_flags.contains(f);
    let heap = |i: usize| p.memory_heaps.get(types[i].heap_index as usize).map_or(0, |h| h.size);
    let local = vk::MemoryPropertyFlags::DEVICE_LOCAL;
    let first_allowed = (0..types.len()).find(allowed);
    let mine = (0..types.len())
        .filter(allowed)
        .filter(|&i| has(i, local) && !has(i, vk::MemoryPropertyFlags::HOST_VISIBLE))
        .min_by_key(|&i| (std::cmp::Reverse(heap(i)), i))
        .or_else(|| (0..types.len()).filter(allowed).find(|&i| has(i, local)))
        .or(first_allowed);
    let theirs = (0..types.len()).filter(allowed).find(|&i| has(i, local)).or(first_allowed);
    (mine.map(|i| i as u32), theirs.map(|i| i as u32))
}

/// The context's queue family with its flags, and the device's other families. The context
/// keeps no physical-device handle, so the device is found again by its properties.
fn queue_facts(ctx: &Context) -> Facts {
    let mut facts = Facts { queue_family: ctx.queue_family, ..Facts::default() };
    // SAFETY: queries on the context's live instance.
    let families = unsafe {
        ctx.instance.enumerate_physical_devices().unwrap_or_default().into_iter().find_map(|d| {
            let p = ctx.instance.get_physical_device_properties(d);
            let same = p.vendor_id == ctx.props.vendor_id
                && p.device_id == ctx.props.device_id
                && p.driver_version == ctx.props.driver_version
                && p.pipeline_cache_uuid == ctx.props.pipeline_cache_uuid;
            same.then(|| ctx.instance.get_physical_device_queue_family_properties(d))
        })
    };
    for (i, f) in families.unwrap_or_default().iter().enumerate() {
        if i as u32 == ctx.queue_family {
            facts.queue_flags = f.queue_flags;
        } else {
            facts.other_families.push((i as u32, f.queue_flags));
        }
    }
    facts
}
