//! Recording a `while` node's segment and its chunks of rounds (docs/conditional.md,
//! "Executor").
#![allow(unsafe_code)]

use super::record::{begin_rendering, compute_to_compute, end_rendering, into_compute, predicate_barrier};
use super::{Executable, LADDER, LOOP_WINDOW, MAX_CHUNK_COMMANDS};
use crate::error::{ExecError, Result};
use crate::exec::{ExecId, Executor, NativeFn};
use crate::schedule::Seg;
use crate::vk::predicate::{self, MODE_TRUTH, NO_PARENT};
use ash::vk;
use cmdgraph_ir::{Handle, Node};
use std::collections::BTreeMap;

impl Executor {
    /// Where in a `while` body (executable `id`) the next round's predicate can be computed:
    /// the first command after a barrier that follows every command that may write the
    /// condition at `place` (a nested conditional node counts as one). `None` when no such
    /// command exists (the last writer is the last stretch): the predicate then follows the
    /// round's closing barrier, with one more barrier of its own.
    fn loop_split(&self, id: ExecId, place: &(crate::args::Target, u64)) -> Result<Option<usize>> {
        let body = self.exec_ref(id)?;
        if body.sched.len() != 1 {
            return Ok(None);
        }
        let graph = &self.loaded.module.graphs[body.graph];
        let (order, plan) = self.segment_plan(body, 0)?;
        let (target, offset) = place;
        let mut last_writer = None;
        for (i, &h) in order.iter().enumerate() {
            let writes = match self.node_effect(body, graph, h)? {
                Some(e) => {
                    e.work == crate::barriers::Work::Native
                        || e.writes.iter().any(|w| &w.target == target && w.lo < offset + 4 && *offset < w.hi)
                }
                None => false,
            };
            if writes {
                last_writer = Some(i);
            }
        }
        let from = last_writer.map_or(0, |j| j + 1);
        Ok((from..order.len()).find(|&k| k > 0 && matches!(plan.before.get(k), Some(Some(_)))))
    }

    /// Records `while` segment `si` (node `h`): the segment's command buffer (each live copy),
    /// which ends every submission of rounds, makes their writes visible to the host; the
    /// chunks of rounds are recorded once.
    pub(crate) fn record_loop(
        &self,
        exe: &mut Executable,
        si: usize,
        h: Handle<Node>,
        native: &mut BTreeMap<String, NativeFn>,
    ) -> Result<()> {
        let body_commands = {
            let c = exe.cond.as_ref().and_then(|s| s.nodes.get(&h.index()));
            let c = c.ok_or_else(|| ExecError::Invalid("a `while` node without resources".into()))?;
            let body = self.exec_ref(*c.bodies.first().ok_or_else(|| ExecError::Invalid("no body".into()))?)?;
            let graph = &self.loaded.module.graphs[body.graph];
            (body.sched.iter())
                .map(|s| match s {
                    Seg::Device(stages) => stages.iter().map(Vec::len).sum::<usize>() as u64,
                    _ => 0,
                })
                .sum::<u64>()
                .max(graph.nodes.len() as u64)
                .max(1)
        };
        let cap = (MAX_CHUNK_COMMANDS / body_commands).max(1);
        let ladder: Vec<u32> = LADDER.iter().copied().filter(|&r| u64::from(r) <= cap).collect();
        let d = self.ctx.device.clone();
        let flags = if exe.options.simultaneous_use {
            vk::CommandBufferUsageFlags::SIMULTANEOUS_USE
        } else {
            vk::CommandBufferUsageFlags::empty()
        };
        for copy in 0..exe.live_copies.min(exe.cmds.len()) {
            let cb = allocate_or_reset(&d, exe.cmd_pool, exe.cmds[copy][si])?;
            exe.cmds[copy][si] = cb;
            // SAFETY: the command buffer is this executable's and not pending (the executable
            // is idle whenever it is recorded).
            unsafe {
                d.begin_command_buffer(cb, &vk::CommandBufferBeginInfo::default().flags(flags))?;
                // The rounds' writes (whether the loop still runs, the tallies) visible to
                // the host, which reads them through the mapping.
                crate::vk::buffer::full_barrier(
                    &d,
                    cb,
                    vk::PipelineStageFlags2::COMPUTE_SHADER,
                    vk::PipelineStageFlags2::HOST,
                );
                d.end_command_buffer(cb)?;
            }
        }
        let done = exe.cond.as_ref().and_then(|s| s.nodes.get(&h.index())).and_then(|c| c.looping.as_ref());
        if done.is_some_and(|l| !l.chunks.is_empty()) {
            return Ok(());
        }
        // Where each round computes the next one's predicate, the same for every chunk (none
        // under conditional rendering, which would predicate that dispatch off too).
        let split = {
            let c = exe.cond.as_ref().and_then(|s| s.nodes.get(&h.index()));
            match c {
                Some(c) if !c.tail && !c.rendering.first().copied().unwrap_or(false) => match c.bodies.first() {
                    Some(&b) => self.loop_split(b, &c.cond_place)?,
                    None => None,
                },
                _ => None,
            }
        };
        let mut chunks = Vec::new();
        let largest = ladder.last().copied();
        for &rounds in &ladder {
            let mut record = |opens: bool| -> Result<vk::CommandBuffer> {
                let cb = allocate_or_reset(&d, exe.cmd_pool, vk::CommandBuffer::null())?;
                // SAFETY: as above.
                unsafe { d.begin_command_buffer(cb, &vk::CommandBufferBeginInfo::default().flags(flags))? };
                let r = self.record_rounds(exe, h, cb, (rounds, opens), split, native);
                // SAFETY: as above.
                unsafe { d.end_command_buffer(cb)? };
                r.map(|()| cb)
            };
            let open = record(true)?;
            // The largest chunk is first wherever it is taken (worker.rs, `chunks_for`).
            let more = if Some(rounds) == largest { vk::CommandBuffer::null() } else { record(false)? };
            chunks.push(crate::worker::Chunk { open, more, rounds });
        }
        if let Some(l) = exe.cond.as_mut().and_then(|s| s.nodes.get_mut(&h.index())).and_then(|c| c.looping.as_mut()) {
            l.chunks = chunks;
            l.split = split.is_some();
        }
        exe.recorded += 1;
        Ok(())
    }

    /// Records `rounds` rounds of `while` node `h` into `cb`. The predicate of the round after
    /// them is left in the window of parity `rounds % 2`, where the host reads it once the
    /// submission's last command buffer (the segment's, a barrier to the host) has run, and
    /// where a continuing chunk after this one finds it. `opens`: the chunk opens a
    /// submission, with a barrier after everything before it and round 0's predicate
    /// computed from the condition; otherwise it follows an even chunk in the same
    /// submission, whose last round's closing barrier orders it.
    ///
    /// Even rounds run body 0, which reads the predicate at the loop's words' byte 0; odd
    /// rounds body 1, reading byte [`LOOP_WINDOW`]. The predicate kernel computes round j+1's
    /// word during round j, right after the barrier that follows the body's last write of the
    /// condition ([`loop_split`](Self::loop_split)), beside the commands after it, which read
    /// round j's word: so a round costs the body's own barriers and one more, not two. Each
    /// predicate that says "run" counts its round in its window's tally, the one left for
    /// after the chunk too (worker.rs, `rounds_run`).
    fn record_rounds(
        &self,
        exe: &Executable,
        h: Handle<Node>,
        cb: vk::CommandBuffer,
        (rounds, opens): (u32, bool),
        split: Option<usize>,
        native: &mut BTreeMap<String, NativeFn>,
    ) -> Result<()> {
        let state = exe.cond.as_ref().ok_or_else(|| ExecError::Invalid("no conditional resources".into()))?;
        let c = state.nodes.get(&h.index()).ok_or_else(|| ExecError::Invalid("no conditional resources".into()))?;
        let l = c.looping.as_ref().ok_or_else(|| ExecError::Invalid("no loop resources".into()))?;
        let words = c.loop_words.as_ref().ok_or_else(|| ExecError::Invalid("no loop words".into()))?.buffer;
        let (even, odd) = match c.bodies.as_slice() {
            [e, o, ..] => (*e, *o),
            _ => return Err(ExecError::Invalid("a `while` node without its two body executables".into())),
        };
        let kernel = self.predicate_kernel.as_ref().ok_or_else(|| ExecError::Invalid("no predicate kernel".into()))?;
        let under = c.rendering.first().copied().unwrap_or(false);
        let d = &self.ctx.device;
        // The predicate of round `j` (parity j % 2), counted in its window's tally (word 1).
        let predicate = |cb: vk::CommandBuffer, j: u32| {
            let push = [c.cond.1, NO_PARENT, 0, 1, MODE_TRUTH, 1];
            // SAFETY: `cb` is recording; the set's windows hold words 0 and 1.
            unsafe { predicate::record(d, cb, kernel, l.sets[(j % 2) as usize].1, push) };
        };
        if opens {
            // SAFETY: `cb` is recording; set, buffers and words are this executable's.
            unsafe { into_rounds(d, cb, under) };
            predicate(cb, 0);
            // SAFETY: as above.
            unsafe { predicate_barrier(d, cb, under) };
        }
        for j in 0..rounds {
            let (body, offset) = if j % 2 == 0 { (even, 0) } else { (odd, LOOP_WINDOW) };
            // SAFETY: as above; the rendering begun here ends before the next round.
            if under {
                unsafe { begin_rendering(self.rendering_fns(true)?, cb, words, offset) };
            }
            let next = |cb: vk::CommandBuffer| predicate(cb, j + 1);
            self.pred_stack.borrow_mut().push((words, (offset / 4) as u32, under));
            let r = self.record_body_with(body, cb, native, split.map(|k| (k, &next as &dyn Fn(vk::CommandBuffer))));
            self.pred_stack.borrow_mut().pop();
            // SAFETY: as above.
            unsafe {
                if under {
                    end_rendering(self.rendering_fns(true)?, cb);
                }
                // The body's writes (its condition among them) before the next round's
                // predicate and body: bodies hold compute work only (conditional.rs in ir).
                compute_to_compute(d, cb);
            }
            r?;
            // A loop predicate: the body wrote round j+1's word itself, before the barrier above.
            if split.is_none() && !c.tail {
                next(cb);
                // SAFETY: as above.
                unsafe { predicate_barrier(d, cb, under) };
            }
        }
        Ok(())
    }
}

/// Orders a chunk that opens a submission after everything submitted before it (the device
/// segment before the loop, an earlier submission of rounds): their writes visible to the chunk's compute work, and, where a
/// body runs under conditional rendering, to the command processor. Narrower than a full
/// barrier on purpose: on an H200 each `ALL_COMMANDS` → `ALL_COMMANDS` barrier cost about
/// 2.7 µs inside a loop (docs/conditional.md, "Executor").
///
/// # Safety
/// `cb` is recording.
unsafe fn into_rounds(d: &ash::Device, cb: vk::CommandBuffer, rendering: bool) {
    let src = (vk::PipelineStageFlags2::ALL_COMMANDS, vk::AccessFlags2::MEMORY_WRITE);
    let access = vk::AccessFlags2::SHADER_READ | vk::AccessFlags2::SHADER_WRITE;
    // SAFETY: the caller's contract.
    unsafe { into_compute(d, cb, src, access, rendering) };
}

/// A fresh command buffer from `pool` (`cb` null), or `cb` reset.
fn allocate_or_reset(d: &ash::Device, pool: vk::CommandPool, cb: vk::CommandBuffer) -> Result<vk::CommandBuffer> {
    // SAFETY: the pool is the executable's; `cb` (when not null) came from it and is not pending.
    unsafe {
        if cb == vk::CommandBuffer::null() {
            let info = vk::CommandBufferAllocateInfo::default().command_pool(pool).command_buffer_count(1);
            Ok(d.allocate_command_buffers(&info)?.first().copied().unwrap_or_default())
        } else {
            d.reset_command_buffer(cb, vk::CommandBufferResetFlags::empty())?;
            Ok(cb)
        }
    }
}
