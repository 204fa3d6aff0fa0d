//! Running an executable: the per-run plan built at finalize and `run`, which only walks it
//! (docs/executor.md, "Running").
//!
//! Everything a run needs that does not change between runs — one step per segment, host
//! tasks' callbacks and resolved memory, the device command buffers in submission order — is
//! built once ([`Executor::build_steps`]) at finalize and again only by an update that
//! changes a host task. `run` then does O(segments) work: checks the host tasks' callbacks
//! are registered, and makes one `vkQueueSubmit` (no host tasks) or queues one job.

use super::Executable;
use crate::error::{ExecError, Result};
use crate::exec::{declared, ExecId, Executor};
use crate::interop::RunSync;
use crate::schedule::Seg;
use crate::worker::{Job, Step};
use ash::vk;
use cmdgraph_ir::{Alternative, Graph, Handle, MemRef, Node, NodeKind};

impl Executor {
    /// Builds `exe`'s per-run plan for every recorded copy (its command buffers must be
    /// allocated: they are, once every segment has been recorded, and re-recording keeps the
    /// handles).
    pub(crate) fn build_steps(&self, exe: &mut Executable) {
        exe.steps.clear();
        exe.device_cbs.clear();
        for copy in 0..exe.live_copies.min(exe.cmds.len()) {
            self.build_copy_steps(exe, copy);
        }
        exe.has_host = exe.sched.iter().any(|s| matches!(s, Seg::Host(_) | Seg::Loop(_)));
        exe.plans_built += 1;
    }

    /// The run plan of copy `copy` (the next one: copies are built in order).
    pub(crate) fn build_copy_steps(&self, exe: &mut Executable, copy: usize) {
        let graph = &self.loaded.module.graphs[exe.graph];
        let mut copy_steps = Vec::with_capacity(exe.sched.len());
        let mut copy_cbs = Vec::new();
        let cmds = exe.cmds.get(copy).map_or(&[][..], Vec::as_slice);
        // Only a schedule with host tasks needs their waits (each node's memory effect: O(nodes),
        // not to be paid for a second copy recorded on a run's path), and only an executor that
        // lets them overlap device work.
        let waits = (self.overlap_host_tasks && exe.sched.iter().any(|s| matches!(s, Seg::Host(_))))
            .then(|| self.host_waits(exe, graph));
        for (si, seg) in exe.sched.iter().enumerate() {
            match seg {
                Seg::Device(_) => {
                    let cb = cmds.get(si).copied().unwrap_or_default();
                    copy_cbs.push(vk::CommandBufferSubmitInfo::default().command_buffer(cb));
                    copy_steps.push(Ok(Step::Device(cb)));
                }
                Seg::Host(h) => {
                    // Without waits worked out, a host task waits for everything before it.
                    let all = copy_cbs.len() as u64;
                    copy_steps.push(self.host_step(exe, graph, *h, |access| {
                        waits.as_ref().map_or(all, |w| w.steps_before(h.index(), si, access))
                    }))
                }
                Seg::Loop(h) => {
                    let cb = cmds.get(si).copied().unwrap_or_default();
                    copy_cbs.push(vk::CommandBufferSubmitInfo::default().command_buffer(cb));
                    copy_steps.push(loop_step(exe, graph, *h, cb, self.loop_round_limit));
                }
            }
        }
        exe.steps.truncate(copy);
        exe.device_cbs.truncate(copy);
        exe.steps.push(copy_steps);
        exe.device_cbs.push(copy_cbs);
    }

    /// Submits one run. Without host tasks this is one `vkQueueSubmit` of every device
    /// segment; a run waits for the previous run of the same executable on the device (never
    /// two at once) and later submissions keep queue order. A run with host tasks (or any
    /// run while such a run is under way) goes to the host-task thread, so `run` returns
    /// without waiting for the host tasks; [`wait`](Self::wait) waits for them and reports
    /// their errors. Host work per run is O(segments): the plan was built at finalize.
    pub fn run(&mut self, id: ExecId) -> Result<()> {
        self.run_synced(id, &RunSync::default())
    }

    /// [`run`](Self::run), with the application's semaphores waited for before the run's
    /// first command and signalled after its last ([`Executor::run_with`]).
    pub(crate) fn run_synced(&mut self, id: ExecId, sync: &RunSync) -> Result<()> {
        if let Some(e) = self.worker.take_error(id.0) {
            return Err(e);
        }
        self.with_exec(id, |ex, exe| {
            // A host task whose memory could not be resolved, or whose callback is not
            // registered (callbacks may be registered after finalize), fails the run here.
            if exe.has_host {
                let names = ex.host.lock().map_err(|_| ExecError::Invalid("callback registry poisoned".into()))?;
                for step in exe.steps.first().into_iter().flatten() {
                    match step {
                        Err(e) => return Err(e.clone()),
                        Ok(Step::Host { node, callback, .. }) if !names.contains_key(callback) => {
                            return Err(ExecError::Host {
                                node: node.clone(),
                                reason: format!("callback \"{callback}\" is not registered"),
                            });
                        }
                        Ok(_) => {}
                    }
                }
            }
            exe.submit_ns = Some(u64::try_from(ex.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX));
            // The copy of the command buffers this run submits; the run that last submitted
            // it must be complete first (with two copies that is the run before the
            // previous one, normally long finished).
            let copies = exe.cmds.len().max(1);
            let copy = if exe.live_copies >= copies {
                (exe.runs % copies as u64) as usize
            } else if timeline_value(&ex.ctx, exe.timeline)? >= exe.copy_end[0] {
                0
            } else {
                // The first copy is in flight: record the second now, once.
                ex.record_second_copy(exe)?;
                // Alternation starts here: this run is copy 1's, the next is copy 0's.
                exe.runs = 1;
                1
            };
            // One simultaneous-use copy may be submitted while pending: nothing to wait for.
            let ready = if copies > 1 { exe.copy_end.get(copy).copied().unwrap_or(0) } else { 0 };
            let (steps, cbs) = (&exe.steps[copy], &exe.device_cbs[copy]);
            let start = exe.submitted;
            let end = start + cbs.len() as u64;
            exe.last_run_steps = steps.len() as u64;
            let mut job_seq = 0;
            if exe.has_host || !ex.worker.idle() {
                let steps: Vec<Step> = steps.iter().filter_map(|s| s.as_ref().ok().cloned()).collect();
                let begun = if ex.worker.idle() && sync.is_empty() {
                    begin_loop(&ex.ctx, exe.timeline, (start, ready), &steps)?
                } else {
                    None
                };
                let job = Job { exec: id.0, timeline: exe.timeline, start, ready, steps, sync: sync.clone(), begun };
                ex.worker.push(&ex.ctx, &ex.host, job)?;
                job_seq = ex.worker.queued();
                exe.queue_ordered = false;
            } else if !cbs.is_empty() || !sync.is_empty() {
                crate::worker::wait_timeline(&ex.ctx, exe.timeline, ready)?;
                let wait_for = if exe.queue_ordered { 0 } else { start };
                submit_all(&ex.ctx, exe.timeline, cbs, (wait_for, start, end), sync)?;
                exe.queue_ordered |= end > start;
            }
            exe.runs_submitted += 1;
            exe.run_tickets.push_back((end, job_seq));
            exe.submitted = end;
            exe.copy_end[copy] = end;
            exe.runs += 1;
            Ok(())
        })
    }

    /// Per host task of executable `id`, in schedule order: its node, the device segments
    /// its run submits before it, and how many of those it waits for (the first ones: those
    /// holding its ancestors or touching its memory, docs/executor.md, "Host tasks and
    /// overlap"). The rest keep running while it does.
    pub fn host_task_waits(&self, id: ExecId) -> Result<Vec<HostTaskWait>> {
        let exe = self.exec_ref(id)?;
        let mut out = Vec::new();
        let mut before = 0u64;
        for step in exe.steps.first().into_iter().flatten() {
            match step {
                Ok(Step::Device(_) | Step::Loop(_)) => before += 1,
                Ok(Step::Host { node, need, .. }) => {
                    out.push(HostTaskWait { node: node.clone(), submitted_before: before, waits_for: *need })
                }
                Err(e) => return Err(e.clone()),
            }
        }
        Ok(out)
    }

    /// A host task of a run: its current command and the memory it declares, resolved (at
    /// finalize, and again when an update changes its callback), and the timeline steps it
    /// waits for (`need`, given what it declares).
    fn host_step(
        &self,
        exe: &Executable,
        graph: &Graph,
        h: Handle<Node>,
        need: impl FnOnce(&[cmdgraph_ir::MemAccess]) -> u64,
    ) -> Result<Step> {
        let n = &graph.nodes[h];
        let cmd = match (exe.hosts.get(&h.index()), &n.kind) {
            // An update replaced the node's command.
            (Some(c), _) => c.clone(),
            (None, NodeKind::HostTask(c)) => c.clone(),
            (None, NodeKind::Comm(c)) => cmdgraph_ir::comm::host_task(&graph.name, &n.name, c),
            (None, NodeKind::Dynamic { dcg }) => {
                let d = &graph.dcgs[*dcg];
                let i = exe.active.get(dcg.index()).copied().unwrap_or(d.active);
                match d.alternatives.get(i as usize) {
                    Some(Alternative::HostTask(c)) => c.clone(),
                    _ => return Err(ExecError::Invalid(format!("%{}: active alternative is not a host task", n.name))),
                }
            }
            _ => return Err(ExecError::Invalid(format!("%{} is not a host task", n.name))),
        };
        let host_err = |reason: String| ExecError::Host { node: n.name.clone(), reason };
        let place = |m: MemRef| match m {
            MemRef::Alloc(a) => exe.allocs.get(&a.index()).cloned(),
            MemRef::Memory(_) => None,
        };
        let pool = exe.pool.as_ref().map(|p| (p, &place as &dyn Fn(MemRef) -> Option<(String, u64, u64)>));
        let access = declared(&self.loaded.module, &self.memories, pool, &cmd.access).map_err(host_err)?;
        Ok(Step::Host { node: n.name.clone(), callback: cmd.callback, access, need: need(&cmd.access) })
    }
}

/// What one host task waits for ([`Executor::host_task_waits`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostTaskWait {
    /// The host task's node (without `%`).
    pub node: String,
    /// Device segments (and `while` nodes) its run submits before it.
    pub submitted_before: u64,
    /// How many of those, the first ones, it waits for.
    pub waits_for: u64,
}

/// The run step of `while` node `h`, whose segment's command buffer is `tail`.
fn loop_step(exe: &Executable, graph: &Graph, h: Handle<Node>, tail: vk::CommandBuffer, limit: u64) -> Result<Step> {
    let node = graph.nodes[h].name.clone();
    let c = exe.cond.as_ref().and_then(|s| s.nodes.get(&h.index()));
    let (Some(l), Some(words)) = (c.and_then(|c| c.looping.as_ref()), c.and_then(|c| c.loop_words.as_ref())) else {
        return Err(ExecError::Invalid(format!("%{node}: a `while` node without its resources")));
    };
    let words =
        words.mapped_addr().ok_or_else(|| ExecError::Invalid(format!("%{node}: the loop's words are not mapped")))?;
    Ok(Step::Loop(crate::worker::LoopStep {
        node,
        tail,
        chunks: l.chunks.clone(),
        last: l.last.clone(),
        words,
        sem: l.sem,
        counter: l.counter.clone(),
        limit,
    }))
}

/// When a run's first steps are at most one device segment and a `while` node, makes the
/// loop's first submission (with that segment) from `run` itself, so the device starts at
/// once rather than when the host-task thread wakes for the job (docs/executor.md,
/// "Conditional nodes"); the job then carries on from the loop's answer. The worker must be
/// idle (nothing queued may come first) and the run without the application's semaphores.
/// Returns the loop's index in `steps` with what its first submission left.
fn begin_loop(
    ctx: &crate::vk::Context,
    timeline: vk::Semaphore,
    (start, ready): (u64, u64),
    steps: &[Step],
) -> Result<Option<(usize, crate::worker::LoopStart)>> {
    let Some(k) = steps.iter().position(|s| matches!(s, Step::Loop(_))) else { return Ok(None) };
    let before: Vec<vk::CommandBuffer> = steps[..k]
        .iter()
        .filter_map(|s| match s {
            Step::Device(cb) => Some(*cb),
            _ => None,
        })
        .collect();
    let (Some(Step::Loop(l)), true) = (steps.get(k), k <= 1 && before.len() == k) else { return Ok(None) };
    crate::worker::wait_timeline(ctx, timeline, ready)?;
    let mut at = start;
    crate::worker::start_loop(ctx, timeline, &mut at, l, &before).map(|b| Some((k, b)))
}

/// The timeline's current value (what the runs submitted so far have signalled).
pub(super) fn timeline_value(ctx: &crate::vk::Context, timeline: vk::Semaphore) -> Result<u64> {
    // SAFETY: the semaphore is a live timeline semaphore of this device.
    Ok(unsafe { ctx.device.get_semaphore_counter_value(timeline) }?)
}

/// One `vkQueueSubmit` of every device segment of a run in order: it waits for timeline
/// value `wait_for` (the previous run, when that run may be signalled from the host; 0: no
/// wait) and the application's semaphores, and signals `end` (when above `start`) and the
/// application's. Each command buffer opens with a barrier after all earlier work, so
/// segments, within the batch and after earlier submissions, run in submission order.
///
/// Waiting on the timeline for a value an earlier submission to the same queue signals
/// orders nothing the opening barrier does not; on the H200 it cost about 1 µs per run of
/// back-to-back runs (docs/performance.md, `copy`).
fn submit_all(
    ctx: &crate::vk::Context,
    timeline: vk::Semaphore,
    cbs: &[vk::CommandBufferSubmitInfo<'static>],
    (wait_for, start, end): (u64, u64, u64),
    sync: &RunSync,
) -> Result<()> {
    let on = |value| {
        vk::SemaphoreSubmitInfo::default()
            .semaphore(timeline)
            .value(value)
            .stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS)
    };
    let (own_wait, own_signal) = ([on(wait_for)], [on(end)]);
    let (own_wait, own_signal) = (&own_wait[..usize::from(wait_for > 0)], &own_signal[..usize::from(end > start)]);
    // A plain run (the replay path) allocates nothing; only the application's semaphores
    // (`run_with`) make lists.
    let (joined_waits, joined_signals);
    let (waits, signals): (&[vk::SemaphoreSubmitInfo<'_>], &[vk::SemaphoreSubmitInfo<'_>]) = if sync.is_empty() {
        (own_wait, own_signal)
    } else {
        joined_waits = [sync.wait_infos(), own_wait.to_vec()].concat();
        joined_signals = [sync.signal_infos(), own_signal.to_vec()].concat();
        (&joined_waits, &joined_signals)
    };
    let submit = [vk::SubmitInfo2::default()
        .wait_semaphore_infos(waits)
        .command_buffer_infos(cbs)
        .signal_semaphore_infos(signals)];
    // SAFETY: the command buffers are not pending (one of two copies whose previous run has
    // completed) or were recorded with SIMULTANEOUS_USE, and every resource they
    // use lives as long as the executable, which is not destroyed before its runs finish;
    // the queue is used by one thread at a time (the worker is idle here).
    Ok(unsafe { ctx.device.queue_submit2(ctx.queue, &submit, vk::Fence::null()) }?)
}
