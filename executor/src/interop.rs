//! Running inside the application's Vulkan: an executor on the application's device and
//! queue ([`Executor::with_vulkan`]), user memory that is a range of the application's
//! `VkBuffer` ([`Executor::import_buffer`], no copies), and runs ordered against the
//! application's work by its timeline semaphores ([`Executor::run_with`]). docs/capi.md,
//! "Running inside the application's Vulkan".
#![allow(unsafe_code)]

use crate::error::{ExecError, Result};
use crate::exec::{ExecId, Executor};
use crate::load::Loaded;
use crate::vk::{Buffer, Context, ContextOptions, ExternalVulkan};
use ash::vk;

/// A timeline semaphore and a value: wait until it reaches the value, or signal it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SemaphoreValue {
    /// A timeline semaphore of the executor's device.
    pub semaphore: vk::Semaphore,
    /// The value.
    pub value: u64,
}

/// The application's timeline semaphores a run waits for and signals.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunSync {
    /// The run's first command (device or host task) starts once each reaches its value.
    pub wait: Vec<SemaphoreValue>,
    /// Each is set to its value once the run is complete on the device (and its host tasks
    /// are done).
    pub signal: Vec<SemaphoreValue>,
}

impl RunSync {
    /// Neither waits nor signals.
    pub fn is_empty(&self) -> bool {
        self.wait.is_empty() && self.signal.is_empty()
    }

    fn infos(list: &[SemaphoreValue]) -> Vec<vk::SemaphoreSubmitInfo<'static>> {
        list.iter()
            .map(|s| {
                vk::SemaphoreSubmitInfo::default()
                    .semaphore(s.semaphore)
                    .value(s.value)
                    .stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS)
            })
            .collect()
    }

    /// The waits as submit infos.
    pub(crate) fn wait_infos(&self) -> Vec<vk::SemaphoreSubmitInfo<'static>> {
        RunSync::infos(&self.wait)
    }

    /// The signals as submit infos.
    pub(crate) fn signal_infos(&self) -> Vec<vk::SemaphoreSubmitInfo<'static>> {
        RunSync::infos(&self.signal)
    }

    /// Waits on the host until every wait semaphore reaches its value, at most the
    /// context's deadline.
    pub(crate) fn wait_on_host(&self, ctx: &Context) -> Result<()> {
        if self.wait.is_empty() {
            return Ok(());
        }
        let sems: Vec<vk::Semaphore> = self.wait.iter().map(|s| s.semaphore).collect();
        let values: Vec<u64> = self.wait.iter().map(|s| s.value).collect();
        let info = vk::SemaphoreWaitInfo::default().semaphores(&sems).values(&values);
        // SAFETY: live timeline semaphores of this device (run_with's contract).
        let r = unsafe { ctx.device.wait_semaphores(&info, ctx.wait_ns()) };
        ctx.waited(r, || "the application's semaphores before a run".to_string())
    }
}

impl Executor {
    /// An executor on the application's instance, device and queue ([`ExternalVulkan`]):
    /// it creates its own buffers, pipelines, command pools and semaphores there and
    /// destroys only those. `opts.device` and `opts.validation` are ignored (the device and
    /// any validation layer are the application's); `opts.timeout` bounds every wait.
    ///
    /// # Safety
    /// The handles in `ext` are valid and related as [`Context::from_external`] requires,
    /// and outlive the executor; the application does not submit to `ext.queue` while an
    /// executor call (or a run with host tasks) may be submitting to it.
    pub unsafe fn with_vulkan(loaded: Loaded, ext: &ExternalVulkan<'_>, opts: &ContextOptions) -> Result<Executor> {
        // SAFETY: the caller's contract.
        let ctx = unsafe { Context::from_external(ext, opts) }?;
        Executor::on_context(loaded, ctx)
    }

    /// Makes user memory `name` the `size` bytes of the application's `buffer` from byte
    /// `offset`, instead of the executor's own buffer (freed): kernels, copies, host tasks,
    /// [`bind`](Self::bind) and [`read`](Self::read) all use the application's bytes in
    /// place, and nothing is copied or zeroed. `size` is at least the memory's size (its
    /// first bytes are used); `offset` is a multiple of the device's
    /// `minStorageBufferOffsetAlignment` (so a kernel's descriptor starts at the memory and
    /// reaches nothing of the application's before it). An import may come at any time, as
    /// often as the application rotates its buffers: it waits for the runs submitted so far,
    /// and executables already finalized are pointed at the new range (their descriptors
    /// rewritten and their command buffers re-recorded: O(graph), like finalize), keeping their
    /// dynamic parameter values and active alternatives.
    ///
    /// # Safety
    /// `buffer` is a live buffer of the executor's device, bound to memory, created with
    /// `STORAGE_BUFFER`, `TRANSFER_SRC` and `TRANSFER_DST` usage, at least `offset + size`
    /// bytes long, and outlives the executor (or the next import of `name`). The application
    /// orders its own accesses to the range against the executor's runs ([`run_with`]'s
    /// semaphores, or waits).
    ///
    /// [`run_with`]: Self::run_with
    pub unsafe fn import_buffer(&mut self, name: &str, buffer: vk::Buffer, offset: u64, size: u64) -> Result<()> {
        let (index, _, need) = self.user(name)?;
        let name = name.trim_start_matches('@');
        if buffer == vk::Buffer::null() {
            return Err(ExecError::Invalid(format!("@{name}: a null buffer cannot be imported")));
        }
        let need = need.max(4).next_multiple_of(4);
        if size < need {
            return Err(ExecError::Invalid(format!(
                "@{name} needs {need} bytes (its size rounded up to 4), the imported range has {size}"
            )));
        }
        let align = self.ctx.props.limits.min_storage_buffer_offset_alignment.max(4);
        if !offset.is_multiple_of(align) {
            return Err(ExecError::Invalid(format!(
                "@{name}: offset {offset} is not a multiple of the device's minStorageBufferOffsetAlignment ({align})"
            )));
        }
        if offset.checked_add(size).is_none() {
            return Err(ExecError::Invalid(format!("@{name}: offset {offset} + size {size} overflows")));
        }
        self.worker.drain(self.ctx.timeout())?;
        self.ctx.wait_idle()?;
        let Some(slot) = self.memories.get_mut(index) else {
            return Err(ExecError::Invalid(format!("@{name} is not user memory")));
        };
        if let Some(mut old) = slot.replace(Buffer::imported(buffer, offset, need)) {
            old.destroy(&self.ctx);
        }
        self.repoint_executables()
    }

    /// Points every live executable at the user-memory buffers as they are now (after an
    /// import): every kernel's descriptors, active alternatives and spare ones, are rewritten;
    /// every device segment is re-recorded (copies, fills and barriers name buffers in the
    /// command buffer); host tasks' declared memory is resolved again. O(graph) per
    /// executable, like finalize's recording. The device is idle (the caller waited).
    fn repoint_executables(&mut self) -> Result<()> {
        let live: Vec<usize> = self.execs.iter().enumerate().filter(|(_, e)| e.is_some()).map(|(i, _)| i).collect();
        for id in live {
            self.with_exec(ExecId(id), |ex, exe| {
                let keys: Vec<(usize, Option<u32>)> = exe
                    .kernels
                    .iter()
                    .map(|(&n, k)| (n, k.alt))
                    .chain(exe.spare.keys().map(|&(n, a)| (n, Some(a))))
                    .collect();
                for key in keys {
                    ex.prepare_key(exe, key, false)?;
                }
                // The copy kernel's sets name the old buffers; re-recording makes new ones.
                exe.copy_sets.get_mut().reset(&ex.ctx);
                for si in 0..exe.sched.len() {
                    ex.record(exe, si)?;
                }
                ex.build_steps(exe);
                // Everything was re-recorded: nothing is left for an update to catch up on.
                exe.stale_nodes.clear();
                Ok(())
            })?;
        }
        Ok(())
    }

    /// Whether user memory `name` is a range of an application's buffer.
    pub fn is_imported(&self, name: &str) -> Result<bool> {
        Ok(self.user(name)?.1.is_imported())
    }

    /// [`run`](Self::run), ordered against the application's work: the run starts once
    /// every semaphore of `sync.wait` reaches its value, and sets every one of `sync.signal`
    /// to its value once complete (even when a host task failed: the error comes from the
    /// next [`wait`](Self::wait) or run). With host tasks the wait happens on the
    /// executor's host-task thread, so `run_with` still returns at once.
    ///
    /// # Safety
    /// Every semaphore is a live timeline semaphore of the executor's device; each signal
    /// value is above the semaphore's current value and any signal pending on it, and the
    /// waited values are eventually signalled (or the run's waits end in
    /// [`ExecError::Timeout`] after the context's deadline).
    pub unsafe fn run_with(&mut self, id: ExecId, sync: &RunSync) -> Result<()> {
        let null = sync.wait.iter().chain(&sync.signal).any(|s| s.semaphore == vk::Semaphore::null());
        if null {
            return Err(ExecError::Invalid("a null semaphore in a run's waits or signals".into()));
        }
        self.run_synced(id, sync)
    }
}
