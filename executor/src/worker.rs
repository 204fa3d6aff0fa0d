//! The host-task worker: runs of graphs with host tasks are carried out on one thread, so
//! `run` returns before the host tasks (docs/executor.md, "Running").
//!
//! Runs are jobs in one FIFO queue, so submissions keep their order and an executable's
//! runs never overlap (each device segment also waits on the executable's timeline for the
//! one before it). While the worker has work, every run goes through it; everything else
//! that touches the queue or memory (bind, read, finalize, updates, profile) first waits
//! until it is idle ([`Worker::drain`]). A failed host task releases the run's timeline (so
//! nothing waits forever) and its error is reported by the next `wait` or `run`.
//!
//! Every wait has the context's deadline ([`crate::ContextOptions::timeout`]): a run that
//! is still going past it is reported as [`ExecError::Timeout`], and a job that gave up
//! waiting hands the release of its timeline to the queue, so later runs are not stuck.
#![allow(unsafe_code)]

use crate::error::{ExecError, Result};
use crate::exec::{BoxedHostFn, Declared, HostContext};
use crate::interop::RunSync;
use crate::vk::{Context, Transfers};
use ash::vk;
use cmdgraph_ir::host::HostMemory;
use std::collections::BTreeMap;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Host-task callbacks by name, shared with the worker. Each sits behind a lock of its own,
/// so that a callback stays registered while it runs (a run submitted meanwhile checks that
/// its callbacks are registered) and registering another does not wait for it.
pub(crate) type Callbacks = Arc<Mutex<BTreeMap<String, Arc<Mutex<BoxedHostFn>>>>>;

/// One step of a run.
#[derive(Clone)]
pub(crate) enum Step {
    /// Submit a device segment's command buffer.
    Device(vk::CommandBuffer),
    /// Call a host task with its declared memory.
    Host {
        /// The node's name.
        node: String,
        /// The callback's name.
        callback: String,
        /// The memory it may touch.
        access: Vec<Declared>,
        /// The timeline steps from the run's start it waits for: the device segments that
        /// hold its ancestors or touch its memory (executable/waits.rs). Later segments
        /// submitted before it keep running while it does.
        need: u64,
    },
    /// Run a `while` node: its first chunk of rounds as a device segment, then more chunks
    /// while the host reads that the loop still runs.
    Loop(LoopStep),
}

/// A `while` node's run (executable/conditional.rs).
#[derive(Clone)]
pub(crate) struct LoopStep {
    /// The node's name (for errors).
    pub(crate) node: String,
    /// The segment's command buffer, last in every submission of rounds: makes their writes
    /// visible to the host. Runs no round.
    pub(crate) tail: vk::CommandBuffer,
    /// Chunks of rounds, ascending.
    pub(crate) chunks: Vec<Chunk>,
    /// The rounds the last run took (what this run submits at once).
    pub(crate) last: Arc<std::sync::atomic::AtomicU64>,
    /// Address of the loop's mapped, host-coherent words: per parity of rounds, the
    /// predicate of the next round of that parity (non-zero while the loop still runs) and
    /// the tally of such rounds run. Its executable (alive while its runs are) owns the buffer.
    pub(crate) words: usize,
    /// Timeline of the further submissions, and its last value.
    pub(crate) sem: vk::Semaphore,
    pub(crate) counter: Arc<std::sync::atomic::AtomicU64>,
    /// Rounds after which the loop fails the run.
    pub(crate) limit: u64,
}

/// One size of a `while` node's chunks of rounds, recorded twice (executable/conditional/rounds.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Chunk {
    /// Opens a submission: a barrier after everything before it, then round 0's predicate
    /// computed from the condition.
    pub(crate) open: vk::CommandBuffer,
    /// Follows a chunk of an even number of rounds in the same submission: it starts with
    /// round 0's body at once, on the predicate that chunk's last round left in the even
    /// window, behind the barrier that closed that round (on an H200 the opening's barriers
    /// and dispatch cost 6-10 µs a chunk). Null for the largest chunk, which only opens.
    pub(crate) more: vk::CommandBuffer,
    /// Rounds it runs.
    pub(crate) rounds: u32,
}

impl LoopStep {
    /// Distinct chunks whose rounds add up to `want` (each chunk at most once: a command
    /// buffer may not be pending twice), largest first: exact up to the sum of all chunks.
    /// The first opens the submission and the others continue from it; every chunk but the
    /// last runs an even number of rounds (only the 1-round chunk is odd, and it comes last),
    /// so each continuing chunk finds its first predicate in the even window.
    fn chunks_for(&self, want: u64) -> Vec<(vk::CommandBuffer, u32)> {
        let mut left = want;
        let mut out = Vec::new();
        for c in self.chunks.iter().rev() {
            if u64::from(c.rounds) <= left {
                let cb = if out.is_empty() || c.more == vk::CommandBuffer::null() { c.open } else { c.more };
                out.push((cb, c.rounds));
                left -= u64::from(c.rounds);
            }
        }
        if out.is_empty() {
            out.extend(self.chunks.first().map(|c| (c.open, c.rounds)));
        }
        out
    }

    /// The loop's word at byte `at` (the predicate of parity 0 at 0, its tally at 4; parity
    /// 1's at [`LOOP_WINDOW`] and 4 bytes after).
    ///
    /// [`LOOP_WINDOW`]: crate::executable::conditional::LOOP_WINDOW
    fn word(&self, at: u64) -> *mut u32 {
        (self.words + (at.min(2 * crate::executable::conditional::LOOP_WINDOW - 4) & !3) as usize) as *mut u32
    }

    /// Whether the loop still runs after a submission whose last chunk ran `last_chunk`
    /// rounds (each chunk starts at parity 0, so the next round's predicate is in the window
    /// of that count's parity).
    fn running(&self, last_chunk: u32) -> bool {
        let at = u64::from(last_chunk % 2) * crate::executable::conditional::LOOP_WINDOW;
        // SAFETY: the address is inside the mapping of the loop's host-coherent words, alive
        // as long as the executable whose run this is; the submission that wrote it completed
        // (the caller waited) and its last command buffer made the writes visible to the host.
        unsafe { std::ptr::read_volatile(self.word(at)) != 0 }
    }

    /// The rounds this run has run, after `submissions` submissions of rounds: both
    /// parities' tallies, less one for each submission after the first. Every predicate
    /// that says "run" counts its round, the last one of a submission too (a continuing
    /// chunk runs the round it says); a submission follows another only when that one's
    /// last predicate said "run", and its opening predicate counts that round again.
    fn rounds_run(&self, submissions: u64) -> u64 {
        let w = crate::executable::conditional::LOOP_WINDOW;
        // SAFETY: as in `running`.
        let tally = unsafe {
            u64::from(std::ptr::read_volatile(self.word(4))) + u64::from(std::ptr::read_volatile(self.word(w + 4)))
        };
        tally.saturating_sub(submissions.saturating_sub(1))
    }

    /// Zeroes both tallies before a run's first submission of rounds. No submitted work
    /// touches the words then: the previous run's loop has ended (its job finished on this
    /// thread, or the thread was idle), and the host's writes before `vkQueueSubmit` are
    /// visible to the device.
    fn reset_tally(&self) {
        let w = crate::executable::conditional::LOOP_WINDOW;
        // SAFETY: as in `running`; nothing on the device accesses the words now (above).
        unsafe {
            std::ptr::write_volatile(self.word(4), 0);
            std::ptr::write_volatile(self.word(w + 4), 0);
        }
    }
}

/// One run of one executable.
pub(crate) struct Job {
    pub(crate) exec: usize,
    pub(crate) timeline: vk::Semaphore,
    /// The timeline value the previous run signals.
    pub(crate) start: u64,
    /// The timeline value after which the run's command buffers are no longer pending
    /// (the run that last submitted this copy of them); 0 when they never were.
    pub(crate) ready: u64,
    pub(crate) steps: Vec<Step>,
    /// The application's semaphores: waited for on the host before the first step,
    /// signalled by the queue after the run's end (also when it failed, once released).
    pub(crate) sync: RunSync,
    /// Set when `run` already made the first submission of the job's first `while` node
    /// (with the device segment before it): that node's index in `steps`, and what the
    /// submission left; the job carries on from there.
    pub(crate) begun: Option<(usize, LoopStart)>,
}

impl Job {
    /// The timeline value the run's last device segment signals.
    pub(crate) fn end(&self) -> u64 {
        self.start + self.steps.iter().filter(|s| matches!(s, Step::Device(_) | Step::Loop(_))).count() as u64
    }
}

/// The worker thread and its queue (started with the first job).
pub(crate) struct Worker {
    tx: Option<Sender<Job>>,
    handle: Option<JoinHandle<()>>,
    /// Jobs queued or running, and a condition signalled when it drops to 0.
    pending: Arc<(Mutex<usize>, Condvar)>,
    /// Errors of failed runs, by executable, until reported.
    pub(crate) errors: Arc<Mutex<BTreeMap<usize, ExecError>>>,
    /// Jobs queued so far: the sequence number of the last one.
    queued: u64,
    /// Jobs carried out so far (in queue order, so job `n` is done when this is `>= n`).
    done: Arc<std::sync::atomic::AtomicU64>,
    /// Set when the executor goes: jobs not yet started are dropped rather than run.
    cancelled: Arc<std::sync::atomic::AtomicBool>,
}

impl Worker {
    pub(crate) fn new() -> Worker {
        Worker {
            tx: None,
            handle: None,
            pending: Arc::new((Mutex::new(0), Condvar::new())),
            errors: Arc::new(Mutex::new(BTreeMap::new())),
            queued: 0,
            done: Arc::new(std::sync::atomic::AtomicU64::new(0)),
            cancelled: Arc::new(std::sync::atomic::AtomicBool::new(false)),
        }
    }

    /// The sequence number of the last job queued (0: none yet).
    pub(crate) fn queued(&self) -> u64 {
        self.queued
    }

    /// How many jobs are done; job `n` is done when this is at least `n`.
    pub(crate) fn done(&self) -> u64 {
        self.done.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Whether no job is queued or running.
    pub(crate) fn idle(&self) -> bool {
        self.pending.0.lock().map(|n| *n == 0).unwrap_or(true)
    }

    /// [`drain`](Self::drain), polling for up to `spin` first (a condition variable's wake-up
    /// costs microseconds a short run notices).
    pub(crate) fn drain_spinning(&self, spin: Duration, limit: Option<Duration>) -> Result<()> {
        let start = Instant::now();
        while start.elapsed() < spin {
            if self.idle() {
                return Ok(());
            }
            std::hint::spin_loop();
        }
        self.drain(limit)
    }

    /// Waits until every queued job is done, at most `limit`: a host-task callback still
    /// running then is [`ExecError::Timeout`] (it goes on; waiting again waits for it).
    pub(crate) fn drain(&self, limit: Option<Duration>) -> Result<()> {
        let start = Instant::now();
        let (lock, cv) = &*self.pending;
        let Ok(mut n) = lock.lock() else { return Ok(()) };
        while *n > 0 {
            let left = match limit {
                Some(t) => match t.checked_sub(start.elapsed()) {
                    Some(left) if !left.is_zero() => left,
                    _ => {
                        return Err(ExecError::Timeout {
                            what: "the host-task thread (a callback still running, or the device work it waits for)"
                                .into(),
                            after: t,
                        })
                    }
                },
                None => Duration::from_secs(3600),
            };
            match cv.wait_timeout(n, left) {
                Ok((g, _)) => n = g,
                Err(_) => return Ok(()),
            }
        }
        Ok(())
    }

    /// The error of `exec`'s failed run, if any (reported once).
    pub(crate) fn take_error(&self, exec: usize) -> Option<ExecError> {
        self.errors.lock().ok().and_then(|mut e| e.remove(&exec))
    }

    /// Queues a job, starting the thread first if needed.
    pub(crate) fn push(&mut self, ctx: &Arc<Context>, callbacks: &Callbacks, job: Job) -> Result<()> {
        if self.tx.is_none() {
            let transfers = Transfers::new(ctx)?;
            let (tx, rx) = channel::<Job>();
            let (ctx, callbacks) = (Arc::clone(ctx), Arc::clone(callbacks));
            let (pending, errors) = (Arc::clone(&self.pending), Arc::clone(&self.errors));
            let done = Arc::clone(&self.done);
            let cancelled = Arc::clone(&self.cancelled);
            let handle = std::thread::Builder::new()
                .name("cmdgraph-host-tasks".into())
                .spawn(move || {
                    let mut transfers = transfers;
                    for job in rx {
                        let exec = job.exec;
                        // Runs queued behind the executor's end submit nothing (nothing
                        // waits for them), unless the application waits on their semaphores.
                        let dropped =
                            cancelled.load(std::sync::atomic::Ordering::Acquire) && job.sync.signal.is_empty();
                        if dropped {
                            // Counted as done below, run or not.
                        } else if let Err(e) = carry_out(&ctx, &transfers, &callbacks, job) {
                            if let Ok(mut errs) = errors.lock() {
                                errs.entry(exec).or_insert(e);
                            }
                        }
                        done.fetch_add(1, std::sync::atomic::Ordering::Release);
                        let (lock, cv) = &*pending;
                        if let Ok(mut n) = lock.lock() {
                            *n = n.saturating_sub(1);
                        }
                        cv.notify_all();
                    }
                    transfers.destroy(&ctx);
                })
                .map_err(|e| ExecError::Invalid(format!("cannot start the host-task thread: {e}")))?;
            self.tx = Some(tx);
            self.handle = Some(handle);
        }
        if let Ok(mut n) = self.pending.0.lock() {
            *n += 1;
        }
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send(job).is_ok());
        if sent {
            self.queued += 1;
        }
        if !sent {
            if let Ok(mut n) = self.pending.0.lock() {
                *n = n.saturating_sub(1);
            }
            return Err(ExecError::Invalid("the host-task thread has stopped".into()));
        }
        Ok(())
    }

    /// Stops the thread once the queued jobs are done. When they are not done within `limit`
    /// (a communication whose peer is gone holds each run), the ones not yet started are
    /// dropped and the one under way gets `limit` again. Returns whether the thread ended;
    /// when it has not, it is left to end on its own and what it may still touch must not
    /// be destroyed.
    pub(crate) fn stop(&mut self, limit: Option<Duration>) -> bool {
        let mut ended = self.drain(limit).is_ok();
        if !ended {
            self.cancelled.store(true, std::sync::atomic::Ordering::Release);
            ended = self.drain(limit).is_ok();
        }
        self.tx = None;
        if let Some(h) = self.handle.take() {
            if ended {
                let _ = h.join();
            }
        }
        ended
    }
}

/// Submits device segment `cb`, waiting for timeline value `at` and signalling `at + 1`.
pub(crate) fn submit(ctx: &Context, timeline: vk::Semaphore, at: u64, cb: vk::CommandBuffer) -> Result<()> {
    submit_many(ctx, timeline, at, &[cb])
}

/// [`submit`] of several command buffers in one submission, in order.
pub(crate) fn submit_many(ctx: &Context, timeline: vk::Semaphore, at: u64, cbs: &[vk::CommandBuffer]) -> Result<()> {
    submit_to(ctx, timeline, at, at + 1, cbs)
}

/// Submits `cbs` in order in one submission, waiting for timeline value `at` and signalling
/// `to` (above `at`).
fn submit_to(ctx: &Context, timeline: vk::Semaphore, at: u64, to: u64, cbs: &[vk::CommandBuffer]) -> Result<()> {
    let waits = [vk::SemaphoreSubmitInfo::default()
        .semaphore(timeline)
        .value(at)
        .stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS)];
    let signals = [vk::SemaphoreSubmitInfo::default()
        .semaphore(timeline)
        .value(to)
        .stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS)];
    let cbs: Vec<vk::CommandBufferSubmitInfo> =
        cbs.iter().map(|&cb| vk::CommandBufferSubmitInfo::default().command_buffer(cb)).collect();
    let wait_n = usize::from(at > 0);
    let submit = [vk::SubmitInfo2::default()
        .wait_semaphore_infos(&waits[..wait_n])
        .command_buffer_infos(&cbs)
        .signal_semaphore_infos(&signals)];
    // SAFETY: the command buffer was recorded with SIMULTANEOUS_USE and every resource it
    // uses lives as long as its executable, which is not destroyed before its runs finish;
    // the queue is used by one thread at a time (the worker, or the caller when it is idle).
    Ok(unsafe { ctx.device.queue_submit2(ctx.queue, &submit, vk::Fence::null()) }?)
}

/// Waits on the host until `timeline` reaches `value`, at most the context's deadline
/// ([`ExecError::Timeout`] past it).
pub(crate) fn wait_timeline(ctx: &Context, timeline: vk::Semaphore, value: u64) -> Result<()> {
    if value == 0 {
        return Ok(());
    }
    // Poll first: a short run is over before a blocking wait would even have slept (on
    // NVIDIA the blocking wait costs about 21 µs more for one small dispatch).
    // SAFETY: the semaphore is live.
    if ctx.poll(|| Ok(unsafe { ctx.device.get_semaphore_counter_value(timeline) }? >= value))? {
        return Ok(());
    }
    let sems = [timeline];
    let values = [value];
    let info = vk::SemaphoreWaitInfo::default().semaphores(&sems).values(&values);
    // SAFETY: the semaphore is live.
    let r = unsafe { ctx.device.wait_semaphores(&info, ctx.wait_ns()) };
    ctx.waited(r, || format!("a graph run on the device (timeline value {value})"))
}

/// What the first submission of a `while` node's run leaves for the rest of it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LoopStart {
    /// Rounds submitted.
    rounds: u64,
    /// Rounds the run expects to take (the last run's).
    predicted: u64,
    /// Rounds of the last chunk submitted (where the next round's predicate is).
    last_chunk: u32,
}

/// The first submission of a `while` node's run: the device segments `before` it, the
/// segment's command buffer and chunks of as many rounds as the last run took
/// ([`FIRST_ROUNDS`] the first time), waiting for `at`, signalling `at + before.len() + 1`
/// and moving `at` there. [`finish_loop`] does the rest; `run` makes this submission itself
/// when the worker is idle, so the device starts without waiting for the worker to wake.
///
/// [`FIRST_ROUNDS`]: crate::executable::conditional::FIRST_ROUNDS
pub(crate) fn start_loop(
    ctx: &Context,
    timeline: vk::Semaphore,
    at: &mut u64,
    l: &LoopStep,
    before: &[vk::CommandBuffer],
) -> Result<LoopStart> {
    use std::sync::atomic::Ordering;
    let predicted = match l.last.load(Ordering::Relaxed) {
        0 => crate::executable::conditional::FIRST_ROUNDS,
        n => n,
    };
    let batch = l.chunks_for(predicted);
    let rounds: u64 = batch.iter().map(|c| u64::from(c.1)).sum();
    let last_chunk = batch.last().map_or(0, |c| c.1);
    let cbs: Vec<vk::CommandBuffer> =
        before.iter().copied().chain(batch.iter().map(|c| c.0)).chain(std::iter::once(l.tail)).collect();
    let to = *at + before.len() as u64 + 1;
    l.reset_tally();
    submit_to(ctx, timeline, *at, to, &cbs)?;
    *at = to;
    Ok(LoopStart { rounds, predicted, last_chunk })
}

/// The rest of a `while` node's run after [`start_loop`] moved the timeline to `at`: while
/// the host reads that the loop still runs, more chunks (what is left of the prediction, else
/// as many rounds again as ran so far) on the loop's own timeline, until the loop ends or its
/// round limit has run.
fn finish_loop(ctx: &Context, timeline: vk::Semaphore, at: u64, l: &LoopStep, start: LoopStart) -> Result<()> {
    use std::sync::atomic::Ordering;
    let LoopStart { mut rounds, predicted, mut last_chunk } = start;
    // The host has nothing to do until the loop's first answer: on a GPU, poll for longer
    // than other waits do (a blocking wait costs about 21 µs more on NVIDIA).
    wait_timeline_spinning(ctx, timeline, at)?;
    let mut submissions = 1;
    while l.running(last_chunk) {
        if rounds >= l.limit {
            return Err(ExecError::Invalid(format!(
                "%{}: the `while` loop still runs after {rounds} rounds (the round limit is {}); does its body set its condition to 0?",
                l.node, l.limit
            )));
        }
        let want = if predicted > rounds { predicted - rounds } else { rounds };
        let batch = l.chunks_for(want.min(l.limit - rounds).max(1));
        let cbs: Vec<vk::CommandBuffer> = batch.iter().map(|c| c.0).chain(std::iter::once(l.tail)).collect();
        let v = l.counter.fetch_add(1, Ordering::SeqCst);
        submit_many(ctx, l.sem, v, &cbs)?;
        submissions += 1;
        wait_timeline_spinning(ctx, l.sem, v + 1)?;
        rounds += batch.iter().map(|c| u64::from(c.1)).sum::<u64>();
        last_chunk = batch.last().map_or(0, |c| c.1);
    }
    l.last.store(l.rounds_run(submissions), Ordering::Relaxed);
    Ok(())
}

/// [`wait_timeline`] polling for up to [`LOOP_SPIN`] first where the context polls at all
/// (not on a CPU device, whose threads need the cores).
fn wait_timeline_spinning(ctx: &Context, timeline: vk::Semaphore, value: u64) -> Result<()> {
    if !ctx.wait_spin().is_zero() {
        let start = std::time::Instant::now();
        while start.elapsed() < LOOP_SPIN {
            // SAFETY: the semaphore is live.
            if unsafe { ctx.device.get_semaphore_counter_value(timeline) }? >= value {
                return Ok(());
            }
            std::hint::spin_loop();
        }
    }
    wait_timeline(ctx, timeline, value)
}

/// How long a `while` node's run polls for a submission of rounds before it blocks.
pub(crate) const LOOP_SPIN: std::time::Duration = std::time::Duration::from_millis(2);

/// Signals `end` on `timeline` from the queue once it reaches `at`: the release of a run
/// that stopped while its submitted work may still be running. A host signal would be
/// invalid then (a pending signal of a lower value), and waiting for it is what timed out.
fn release_on_queue(ctx: &Context, timeline: vk::Semaphore, at: u64, end: u64) -> Result<()> {
    let waits = [vk::SemaphoreSubmitInfo::default()
        .semaphore(timeline)
        .value(at)
        .stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS)];
    let signals = [vk::SemaphoreSubmitInfo::default()
        .semaphore(timeline)
        .value(end)
        .stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS)];
    let wait_n = usize::from(at > 0);
    let submit = [vk::SubmitInfo2::default().wait_semaphore_infos(&waits[..wait_n]).signal_semaphore_infos(&signals)];
    // SAFETY: the semaphore is live, `end` is above every value signalled or pending on it,
    // and the worker holds the queue.
    Ok(unsafe { ctx.device.queue_submit2(ctx.queue, &submit, vk::Fence::null()) }?)
}

/// Runs one job; on a failure, signals the run's end value from the host so that waiters
/// (and the next run) are released.
fn carry_out(ctx: &Context, transfers: &Transfers, callbacks: &Callbacks, job: Job) -> Result<()> {
    let end = job.end();
    // When `run` made the first submission of the first loop (with the segment before it),
    // the timeline is already moving past both: the job carries on from the loop's answer.
    let begun = job.begun;
    let mut at = job.start + begun.map_or(0, |(k, _)| k as u64 + 1);
    let r = (|| {
        wait_timeline(ctx, job.timeline, job.ready)?;
        // A host task must not start before the application's writes are done either.
        job.sync.wait_on_host(ctx)?;
        // Device segments right before a `while` node go in its first submission (one
        // `vkQueueSubmit` fewer per run; the timeline moves past all of them at once).
        let mut deferred: Vec<vk::CommandBuffer> = Vec::new();
        let mut first = 0;
        if let Some((k, b)) = begun {
            let Some(Step::Loop(l)) = job.steps.get(k) else {
                return Err(ExecError::Invalid("a run begun by `run` has no `while` step".into()));
            };
            finish_loop(ctx, job.timeline, at, l, b)?;
            first = k + 1;
        }
        for (i, step) in job.steps.iter().enumerate().skip(first) {
            match step {
                Step::Device(cb) if matches!(job.steps.get(i + 1), Some(Step::Loop(_))) => deferred.push(*cb),
                Step::Device(cb) => {
                    submit(ctx, job.timeline, at, *cb)?;
                    at += 1;
                }
                Step::Host { node, callback, access, need } => {
                    wait_timeline(ctx, job.timeline, job.start + need)?;
                    call(ctx, transfers, callbacks, (node, callback), access)?;
                }
                Step::Loop(l) => {
                    let b = start_loop(ctx, job.timeline, &mut at, l, &std::mem::take(&mut deferred))?;
                    finish_loop(ctx, job.timeline, at, l, b)?;
                }
            }
        }
        Ok(())
    })();
    if r.is_err() && at < end {
        // Usually everything submitted completes (a host task waits only for what it needs,
        // so the rest is waited for here), and the timeline may then be moved from `at` to the
        // run's end from the host. When a wait timed out, the submitted work may still be
        // running: the queue moves the timeline after it instead.
        let done = !matches!(r, Err(ExecError::Timeout { .. })) && wait_timeline(ctx, job.timeline, at).is_ok();
        if done {
            let info = vk::SemaphoreSignalInfo::default().semaphore(job.timeline).value(end);
            // SAFETY: the semaphore is live, at `at`, and `end` is above it with nothing pending.
            let _ = unsafe { ctx.device.signal_semaphore(&info) };
        } else {
            let _ = release_on_queue(ctx, job.timeline, at, end);
        }
    }
    if !job.sync.signal.is_empty() {
        // The application waits on these whatever happened; the run's error is reported by
        // the next wait or run.
        signal_after(ctx, job.timeline, end, &job.sync)?;
    }
    r
}

/// Signals the application's semaphores of `sync` from the queue once `timeline` reaches
/// `end` (the run's last device segment, or its release).
fn signal_after(ctx: &Context, timeline: vk::Semaphore, end: u64, sync: &RunSync) -> Result<()> {
    let waits = [vk::SemaphoreSubmitInfo::default()
        .semaphore(timeline)
        .value(end)
        .stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS)];
    let wait_n = usize::from(end > 0);
    let signals = sync.signal_infos();
    let submit = [vk::SubmitInfo2::default().wait_semaphore_infos(&waits[..wait_n]).signal_semaphore_infos(&signals)];
    // SAFETY: the timeline is live; the application's semaphores are live timeline
    // semaphores of this device with values above their pending signals (run_with's
    // contract); the worker holds the queue.
    Ok(unsafe { ctx.device.queue_submit2(ctx.queue, &submit, vk::Fence::null()) }?)
}

/// Calls host task `node`'s `callback` with its declared memory.
fn call(
    ctx: &Context,
    transfers: &Transfers,
    callbacks: &Callbacks,
    (node, callback): (&str, &str),
    access: &[Declared],
) -> Result<()> {
    let host_err = |reason: String| ExecError::Host { node: node.to_string(), reason };
    let f = callbacks.lock().ok().and_then(|m| m.get(callback).cloned());
    let f = f.ok_or_else(|| host_err(format!("callback \"{callback}\" is not registered")))?;
    let mut f = f.lock().map_err(|_| host_err(format!("callback \"{callback}\" panicked in an earlier run")))?;
    let mut hc = HostContext { ctx, transfers, node, access: access.to_vec(), violation: None };
    let r = (*f)(&mut hc as &mut dyn HostMemory);
    // A violation fails the run even when the callback swallowed the error (as on the
    // interpreter); the callback's own error otherwise.
    match (r, hc.violation) {
        (Err(e), _) | (Ok(()), Some(e)) => Err(host_err(e.to_string())),
        (Ok(()), None) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ash::vk::Handle as _;

    /// A loop step with chunks of 1, 2, ... 64 rounds, whose command buffers are made-up
    /// handles: opening `2r`, continuing `2r + 1` for `r` rounds (none for the largest).
    fn step() -> LoopStep {
        let chunks = (0..7)
            .map(|i| {
                let rounds = 1u32 << i;
                let more = if i == 6 { 0 } else { 2 * u64::from(rounds) + 1 };
                Chunk {
                    open: vk::CommandBuffer::from_raw(2 * u64::from(rounds)),
                    more: vk::CommandBuffer::from_raw(more),
                    rounds,
                }
            })
            .collect();
        LoopStep {
            node: "w".into(),
            tail: vk::CommandBuffer::null(),
            chunks,
            last: Arc::default(),
            words: 0,
            sem: vk::Semaphore::null(),
            counter: Arc::default(),
            limit: 1 << 20,
        }
    }

    #[test]
    fn a_submission_opens_with_its_largest_chunk_and_the_others_continue_from_even_ones() {
        let l = step();
        for want in 1..=127u64 {
            let batch = l.chunks_for(want);
            assert_eq!(batch.iter().map(|c| u64::from(c.1)).sum::<u64>(), want, "{want}");
            for (k, &(cb, rounds)) in batch.iter().enumerate() {
                let expected = 2 * u64::from(rounds) + u64::from(k > 0);
                assert_eq!(cb.as_raw(), expected, "{want}: chunk {k} of {rounds} rounds");
                if k + 1 < batch.len() {
                    assert_eq!(rounds % 2, 0, "{want}: a chunk followed by another runs an even number of rounds");
                }
            }
        }
        // Past the sum of all chunks: every chunk once, the largest opening.
        let all = l.chunks_for(1000);
        assert_eq!((all.len(), all[0].0.as_raw()), (7, 128));
        assert_eq!(l.chunks_for(0).iter().map(|c| c.0.as_raw()).collect::<Vec<_>>(), vec![2]);
    }
}
