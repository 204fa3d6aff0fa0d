//! Timeline semaphores across devices. Each device has a *progress* semaphore its stage
//! graphs signal, one value per stage graph in submission order. A stage graph of device
//! `d` waits for the work before it on every other device `e` through a *mirror*: a
//! semaphore of device `d` standing for `e`'s progress. Where every device has
//! `VK_KHR_external_semaphore_fd`, the mirror is `e`'s progress semaphore itself, exported
//! as an OPAQUE_FD and imported into `d` (the two H200s allow it: semaphore_probe.rs), and
//! the GPUs wait on each other directly. Otherwise a host thread, the relay, sets the mirror
//! to the value `e`'s progress reached (`vkWaitSemaphores` on `e`, then `vkSignalSemaphore`
//! on `d`): the bridge the Vulkan specification leaves to applications, since semaphores of
//! two physical devices are not shared by the core API.
//!
//! The relay takes jobs in submission order, so a job only ever waits for work submitted
//! before it. It waits as long as the other device takes: giving up at a deadline would let
//! the waiting device run on data not yet there, and the deadline is kept where the
//! application waits (`MultiExecutor::wait`, each device's own). When the executor goes,
//! [`Relay::stop`] makes it signal what it still waits for, so no device waits forever; a
//! Vulkan error goes to the next [`Relay::take_error`].
#![allow(unsafe_code)]

use crate::error::{ExecError, Result};
use crate::vk::Context;
use ash::vk;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One device's view for the relay: its device and progress semaphore.
#[derive(Clone)]
struct Side {
    device: ash::Device,
    progress: vk::Semaphore,
    timeout: Option<Duration>,
}

/// `mirror` (of device `to`) is to reach `value` once device `from`'s progress does.
struct Job {
    from: usize,
    to: usize,
    mirror: vk::Semaphore,
    value: u64,
}

/// The progress and mirror semaphores of every device, and the relay thread.
pub(super) struct Relay {
    sides: Vec<Side>,
    /// `mirrors[to][from]`: device `to`'s mirror of device `from`'s progress (null on the
    /// diagonal).
    mirrors: Vec<Vec<vk::Semaphore>>,
    /// Whether the mirrors are the progress semaphores imported (no relay jobs).
    shared: bool,
    /// By device: the last progress value submitted, and by (to, from) the last relayed.
    pub(super) submitted: Vec<u64>,
    relayed: Vec<Vec<u64>>,
    tx: Option<Sender<Job>>,
    handle: Option<JoinHandle<()>>,
    error: Arc<Mutex<Option<ExecError>>>,
    /// Set by [`Relay::stop`]: the thread signals its mirrors without waiting further.
    stopping: Arc<AtomicBool>,
}

impl Relay {
    /// Semaphores on every device of `ctxs` and the relay thread.
    pub(super) fn new(ctxs: &[&Context]) -> Result<Relay> {
        let n = ctxs.len();
        let mut relay = Relay {
            sides: Vec::with_capacity(n),
            mirrors: vec![vec![vk::Semaphore::null(); n]; n],
            shared: false,
            submitted: vec![0; n],
            relayed: vec![vec![0; n]; n],
            tx: None,
            handle: None,
            error: Arc::new(Mutex::new(None)),
            stopping: Arc::new(AtomicBool::new(false)),
        };
        let exportable = n > 1 && ctxs.iter().all(|c| c.external_semaphore_fd.is_some());
        for ctx in ctxs {
            let progress = timeline(ctx, exportable).inspect_err(|_| relay.destroy(ctxs))?;
            relay.sides.push(Side { device: ctx.device.clone(), progress, timeout: ctx.timeout() });
        }
        for to in 0..n {
            for from in (0..n).filter(|&f| f != to) {
                relay.mirrors[to][from] = timeline(ctxs[to], false).inspect_err(|_| relay.destroy(ctxs))?;
            }
        }
        // Share where the drivers allow; any failure leaves host-signalled mirrors (an import
        // that failed leaves its semaphore as it was, and the others are made again).
        if exportable {
            match relay.import_progress(ctxs) {
                Ok(()) => relay.shared = true,
                Err(_) => relay.remake_mirrors(ctxs)?,
            }
        }
        let (tx, rx) = channel::<Job>();
        let sides = relay.sides.clone();
        let (error, stopping) = (Arc::clone(&relay.error), Arc::clone(&relay.stopping));
        let handle = std::thread::Builder::new()
            .name("cmdgraph-relay".into())
            .spawn(move || relay_loop(&sides, &rx, &error, &stopping))
            .map_err(|e| ExecError::Invalid(format!("cannot start the semaphore relay thread: {e}")));
        match handle {
            Ok(h) => {
                relay.tx = Some(tx);
                relay.handle = Some(h);
                Ok(relay)
            }
            Err(e) => {
                relay.destroy(ctxs);
                Err(e)
            }
        }
    }

    /// Imports every device's progress semaphore into each other device's mirror of it.
    fn import_progress(&mut self, ctxs: &[&Context]) -> Result<()> {
        for to in 0..ctxs.len() {
            for from in (0..ctxs.len()).filter(|&f| f != to) {
                let (Some(export), Some(import)) =
                    (ctxs[from].external_semaphore_fd.as_ref(), ctxs[to].external_semaphore_fd.as_ref())
                else {
                    return Err(ExecError::Invalid("no VK_KHR_external_semaphore_fd".into()));
                };
                let handle = vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD;
                let get = vk::SemaphoreGetFdInfoKHR::default().semaphore(self.sides[from].progress).handle_type(handle);
                // SAFETY: the progress semaphore was created exportable as OPAQUE_FD on its device.
                let fd = unsafe { export.get_semaphore_fd(&get) }?;
                let info = vk::ImportSemaphoreFdInfoKHR::default()
                    .semaphore(self.mirrors[to][from])
                    .handle_type(handle)
                    .fd(fd);
                // SAFETY: a fresh timeline semaphore of device `to`, unused; on success the
                // driver owns `fd`, on failure it is closed here.
                if let Err(e) = unsafe { import.import_semaphore_fd(&info) } {
                    // SAFETY: the import failed, so the fd is still this process's.
                    unsafe { close(fd) };
                    return Err(e.into());
                }
            }
        }
        Ok(())
    }

    /// Mirrors made again as plain semaphores (after a failed import).
    fn remake_mirrors(&mut self, ctxs: &[&Context]) -> Result<()> {
        for (to, row) in self.mirrors.iter_mut().enumerate() {
            for s in row.iter_mut().filter(|s| **s != vk::Semaphore::null()) {
                // SAFETY: created on device `to`; nothing uses it yet.
                unsafe { ctxs[to].device.destroy_semaphore(*s, None) };
                *s = timeline(ctxs[to], false)?;
            }
        }
        Ok(())
    }

    /// `"shared semaphores (OPAQUE_FD)"` or `"host relay"`: how devices wait on each other.
    pub(super) fn path(&self) -> &'static str {
        match self.shared {
            true => "shared semaphores (OPAQUE_FD)",
            false => "host relay",
        }
    }

    /// Device `d`'s progress semaphore.
    pub(super) fn progress(&self, d: usize) -> vk::Semaphore {
        self.sides[d].progress
    }

    /// What a stage graph of device `to` waits for so that it follows the work each device
    /// had submitted when its stage began (`upto`, by device): its own progress, and the
    /// mirrors of the others' (relay jobs queued for those not relayed yet).
    pub(super) fn waits_for(&mut self, to: usize, upto: &[u64]) -> Result<Vec<crate::SemaphoreValue>> {
        let mut out = Vec::new();
        if upto[to] > 0 {
            out.push(crate::SemaphoreValue { semaphore: self.sides[to].progress, value: upto[to] });
        }
        for from in (0..self.sides.len()).filter(|&f| f != to) {
            let value = upto[from];
            if value == 0 {
                continue;
            }
            let mirror = self.mirrors[to][from];
            if !self.shared && self.relayed[to][from] < value {
                let tx = self.tx.as_ref().ok_or_else(|| ExecError::Invalid("the relay thread is gone".into()))?;
                tx.send(Job { from, to, mirror, value })
                    .map_err(|_| ExecError::Invalid("the semaphore relay thread stopped".into()))?;
                self.relayed[to][from] = value;
            }
            out.push(crate::SemaphoreValue { semaphore: mirror, value });
        }
        Ok(out)
    }

    /// Sets device `d`'s progress to `value` from the host, for a submission that failed
    /// (so nothing waiting for it hangs), once its earlier work is done.
    pub(super) fn release(&self, d: usize, value: u64) {
        let side = &self.sides[d];
        let _ = wait(side, side.progress, value.saturating_sub(1), side.timeout, &self.stopping);
        // SAFETY: a live timeline semaphore of this device; `value` is above every value
        // signalled or pending on it (the failed submission was its only signal of it).
        let _ = unsafe {
            side.device.signal_semaphore(&vk::SemaphoreSignalInfo::default().semaphore(side.progress).value(value))
        };
    }

    /// The first error the relay met since the last call.
    pub(super) fn take_error(&self) -> Option<ExecError> {
        self.error.lock().ok().and_then(|mut e| e.take())
    }

    /// Stops the thread once it has done the jobs it has (each wait bounded by its device's
    /// deadline), leaving the semaphores.
    pub(super) fn stop(&mut self) {
        self.stopping.store(true, Ordering::Release);
        self.tx = None;
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }

    /// Stops the thread and destroys the semaphores; no submitted work may use them.
    pub(super) fn destroy(&mut self, ctxs: &[&Context]) {
        self.stop();
        for (to, row) in self.mirrors.iter_mut().enumerate() {
            for s in row.iter_mut().filter(|s| **s != vk::Semaphore::null()) {
                // SAFETY: created on device `to`; no pending work uses it (the caller's
                // contract).
                unsafe { ctxs[to].device.destroy_semaphore(*s, None) };
                *s = vk::Semaphore::null();
            }
        }
        for (side, ctx) in self.sides.drain(..).zip(ctxs) {
            // SAFETY: as above.
            unsafe { ctx.device.destroy_semaphore(side.progress, None) };
        }
    }
}

/// A timeline semaphore at 0 on `ctx`'s device, exportable as an OPAQUE_FD when asked.
fn timeline(ctx: &Context, exportable: bool) -> Result<vk::Semaphore> {
    let mut ty = vk::SemaphoreTypeCreateInfo::default().semaphore_type(vk::SemaphoreType::TIMELINE).initial_value(0);
    let mut export =
        vk::ExportSemaphoreCreateInfo::default().handle_types(vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD);
    let mut info = vk::SemaphoreCreateInfo::default().push_next(&mut ty);
    if exportable {
        info = info.push_next(&mut export);
    }
    // SAFETY: a valid create info; the relay destroys it.
    Ok(unsafe { ctx.device.create_semaphore(&info, None) }?)
}

/// Waits until `sem` of `side`'s device reaches `value`, at most `limit`, and not once
/// `stopping` is set.
fn wait(side: &Side, sem: vk::Semaphore, value: u64, limit: Option<Duration>, stopping: &AtomicBool) -> Result<()> {
    let start = Instant::now();
    let sems = [sem];
    let values = [value];
    loop {
        let info = vk::SemaphoreWaitInfo::default().semaphores(&sems).values(&values);
        // SAFETY: a live timeline semaphore of this device; short slices so a deadline is
        // checked even when the driver never returns early.
        match unsafe { side.device.wait_semaphores(&info, 100_000_000) } {
            Ok(()) => return Ok(()),
            Err(vk::Result::TIMEOUT) => {}
            Err(e) => return Err(e.into()),
        }
        if let Some(after) = limit.filter(|&t| start.elapsed() > t) {
            return Err(ExecError::Timeout {
                what: format!("this device's work before progress value {value}"),
                after,
            });
        }
        if stopping.load(Ordering::Acquire) {
            return Ok(());
        }
    }
}

fn relay_loop(sides: &[Side], rx: &Receiver<Job>, error: &Mutex<Option<ExecError>>, stopping: &AtomicBool) {
    for job in rx.iter() {
        if let Err(e) = wait(&sides[job.from], sides[job.from].progress, job.value, None, stopping) {
            if let Ok(mut slot) = error.lock() {
                slot.get_or_insert(e);
            }
        }
        let to = &sides[job.to];
        let info = vk::SemaphoreSignalInfo::default().semaphore(job.mirror).value(job.value);
        // SAFETY: the mirror is a live timeline semaphore of device `to`, signalled only
        // here, in increasing values (jobs come in submission order, one per new value).
        if let Err(e) = unsafe { to.device.signal_semaphore(&info) } {
            if let Ok(mut slot) = error.lock() {
                slot.get_or_insert(e.into());
            }
        }
    }
}

extern "C" {
    /// POSIX `close`, for an exported semaphore fd a failed import left with this process.
    fn close(fd: i32) -> i32;
}
