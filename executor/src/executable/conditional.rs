//! Conditional nodes on Vulkan (docs/conditional.md, "Executor"): `if`, `switch` and `while`
//! without a host round trip per decision.
//!
//! Each body graph is finalized as an executable of its own (its kernels' argument blocks
//! and descriptor sets; nothing recorded), and recorded inline where its node stands. The
//! predicate kernel (`vk/predicate.rs`) turns the condition word into one word per body in
//! the executable's predicate buffer, and each body's dispatches run under
//! `vkCmdBeginConditionalRenderingEXT` on its word. Conditional rendering cannot nest, so a
//! node inside a body ends the enclosing body's rendering, computes its words as the
//! enclosing word *and* its own test, and begins the enclosing rendering again after its
//! bodies: the stack of active predicates is [`Executor::pred_stack`].
//!
//! A `while` node is a segment of its own ([`Seg::Loop`]): a command buffer of
//! [`LADDER`]`[0]` predicated rounds (the predicate refreshed from the condition before
//! each), then the predicate of the next round copied to a host-visible word. The run reads
//! it after that submission and, while the loop still runs, submits command buffers of more
//! rounds (the ladder doubles up to 256), so n rounds cost about log2(n) host round trips
//! rather than n, and a round the loop did not need costs only its skipped dispatches.
#![allow(unsafe_code)]

use super::Executable;
use crate::error::{ExecError, Result};
use crate::exec::{ExecId, Executor, NativeFn};
use crate::schedule::Seg;
use crate::vk::predicate::{self, MODE_CASE, MODE_TRUTH, NO_PARENT};
use crate::vk::{Buffer, Context, Place};
use ash::vk;
use cmdgraph_ir::graph::CondKind;
use cmdgraph_ir::{Graph, Handle, MemRef, Node, NodeKind};
use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// Rounds per command buffer of a `while` loop: the first submission's, then each further
/// submission's (the last repeats). Cut where a chunk would record more than
/// [`MAX_CHUNK_COMMANDS`] body commands.
pub const LADDER: [u32; 5] = [16, 32, 64, 128, 256];
/// The most body commands one chunk of rounds records.
const MAX_CHUNK_COMMANDS: u64 = 1 << 16;
/// Rounds after which a loop that still runs is an error: the interpreter's default round
/// limit (`RunOptions::fuel`), so both runtimes stop the same runaway loop.
pub(crate) const ROUND_LIMIT: u64 = 1 << 20;

/// The conditional nodes of one executable and their predicate words.
pub(crate) struct CondState {
    /// One predicate word per body of every conditional node (device memory).
    pub(crate) preds: Buffer,
    /// By node index.
    pub(crate) nodes: BTreeMap<usize, CondNode>,
}

/// One conditional node's resources.
pub(crate) struct CondNode {
    pub(crate) kind: CondKind,
    /// Its bodies' executables, in body order.
    pub(crate) bodies: Vec<ExecId>,
    /// Its first word in the predicate buffer, and how many (one per body; `if` two).
    pub(crate) word: u32,
    pub(crate) words: u32,
    /// The condition's buffer and the index of its word in it.
    pub(crate) cond: (vk::Buffer, u32),
    /// The predicate kernel's set (condition, enclosing predicates, own predicates).
    pub(crate) set: (vk::DescriptorPool, vk::DescriptorSet),
    /// A `while` node's further chunks and the word the host reads.
    pub(crate) looping: Option<LoopRes>,
}

/// What a `while` node's run needs beyond its segment's command buffer.
pub(crate) struct LoopRes {
    /// Rounds in the segment's own command buffer.
    pub(crate) first: u32,
    /// Further chunks: (command buffer, rounds), in the order they are submitted.
    pub(crate) more: Vec<(vk::CommandBuffer, u32)>,
    /// Host-visible word: the predicate of the round after the last submitted chunk.
    pub(crate) readback: Buffer,
    /// Timeline of the further chunks' submissions (they are not the run's own segments).
    pub(crate) sem: vk::Semaphore,
    pub(crate) counter: Arc<AtomicU64>,
}

impl Executor {
    /// Finalizes the bodies of graph `gh`'s conditional nodes and makes its predicate words
    /// (`None`: it has no conditional node). `enclosing`: the predicate buffer of the node
    /// whose body this graph is.
    pub(crate) fn prepare_conditionals(&mut self, gh: Handle<Graph>) -> Result<Option<CondState>> {
        let graph = &self.loaded.module.graphs[gh];
        let nodes: Vec<(usize, String, CondKind, cmdgraph_ir::Pointer, Vec<String>)> = graph
            .nodes
            .iter()
            .filter_map(|(h, n)| match &n.kind {
                NodeKind::Conditional { kind, cond, bodies } => Some((
                    h.index(),
                    n.name.clone(),
                    *kind,
                    *cond,
                    bodies.iter().map(|b| self.loaded.module.graphs[*b].name.clone()).collect(),
                )),
                _ => None,
            })
            .collect();
        let Some((_, first, ..)) = nodes.first() else { return Ok(None) };
        let gname = graph.name.clone();
        if self.ctx.conditional_rendering.is_none() {
            return Err(ExecError::Invalid(format!(
                "@{gname} %{first}: conditional nodes need VK_EXT_conditional_rendering, which device \"{}\" lacks (or the application's device was not created with); run the graph with `cmdgraph interp` (docs/conditional.md)",
                self.ctx.device_name()
            )));
        }
        if self.predicate_kernel.is_none() {
            self.predicate_kernel = Some(predicate::PredicateKernel::new(&self.ctx, self.cache)?);
        }
        let words: u32 = nodes
            .iter()
            .map(|(_, _, kind, _, bodies)| if *kind == CondKind::If { 2 } else { bodies.len().max(1) as u32 })
            .sum();
        let mut state =
            CondState { preds: Buffer::predicates(&self.ctx, 4 * u64::from(words))?, nodes: BTreeMap::new() };
        let mut word = 0u32;
        for (index, name, kind, cond, bodies) in nodes {
            let made = self.condition_word(cond.base, cond.offset).and_then(|c| {
                let mut ids = Vec::new();
                for b in &bodies {
                    match self.finalize_in(b, Some(state.preds.buffer)) {
                        Ok(id) => ids.push(id),
                        Err(e) => {
                            for id in ids {
                                let _ = self.drop_exec(id);
                            }
                            return Err(e);
                        }
                    }
                }
                Ok((c, ids))
            });
            let (cond, ids) = match made {
                Ok(x) => x,
                Err(e) => {
                    self.free_conditionals(state);
                    return Err(match e {
                        ExecError::Invalid(m) => ExecError::Invalid(format!("@{gname} %{name}: {m}")),
                        other => other,
                    });
                }
            };
            let words = if kind == CondKind::If { 2 } else { ids.len().max(1) as u32 };
            state.nodes.insert(
                index,
                CondNode {
                    kind,
                    bodies: ids,
                    word,
                    words,
                    cond,
                    set: (vk::DescriptorPool::null(), vk::DescriptorSet::null()),
                    looping: None,
                },
            );
            word += words;
        }
        Ok(Some(state))
    }

    /// The buffer and word index of a condition at `offset` bytes into user memory `base`.
    fn condition_word(&self, base: MemRef, offset: u64) -> Result<(vk::Buffer, u32)> {
        let p = self.place_user(base, offset)?;
        let crate::args::Target::User(i) = p.target else {
            return Err(ExecError::Invalid("the condition is not user memory".into()));
        };
        let b = self.memories.get(i).and_then(|b| b.as_ref()).ok_or_else(|| ExecError::Invalid("no buffer".into()))?;
        let index = u32::try_from(p.offset / 4).ok().filter(|_| p.offset % 4 == 0 && p.avail >= 4);
        let index = index.ok_or_else(|| {
            ExecError::Invalid(format!(
                "the condition word at byte {} is not a whole aligned u32 of its buffer",
                p.offset
            ))
        })?;
        Ok((b.buffer, index))
    }

    /// Frees what [`prepare_conditionals`](Self::prepare_conditionals) and
    /// [`conditional_resources`](Self::conditional_resources) made (descriptor sets and
    /// command buffers go with the executable's pools). The device is done with them.
    pub(crate) fn free_conditionals(&mut self, mut state: CondState) {
        for (_, mut c) in std::mem::take(&mut state.nodes) {
            for id in c.bodies.drain(..) {
                let _ = self.drop_exec(id);
            }
            if let Some(mut l) = c.looping.take() {
                l.readback.destroy(&self.ctx);
                // SAFETY: no submission using the semaphore is pending (the caller's contract).
                unsafe { self.ctx.device.destroy_semaphore(l.sem, None) };
            }
        }
        state.preds.destroy(&self.ctx);
    }

    /// The predicate kernel's descriptor sets and the `while` nodes' readback words and
    /// semaphores, once the executable has its pools. `enclosing`: see
    /// [`prepare_conditionals`](Self::prepare_conditionals).
    pub(crate) fn conditional_resources(&self, exe: &mut Executable, enclosing: Option<vk::Buffer>) -> Result<()> {
        let Some(mut state) = exe.cond.take() else { return Ok(()) };
        let r = self.fill_conditional_resources(exe, &mut state, enclosing);
        exe.cond = Some(state);
        r
    }

    fn fill_conditional_resources(
        &self,
        exe: &mut Executable,
        state: &mut CondState,
        enclosing: Option<vk::Buffer>,
    ) -> Result<()> {
        let kernel = self.predicate_kernel.as_ref().ok_or_else(|| ExecError::Invalid("no predicate kernel".into()))?;
        let own = state.preds.buffer;
        for c in state.nodes.values_mut() {
            c.set = exe.sets.allocate(&self.ctx, kernel.set_layout, 3, exe.set_count.max(1))?;
            predicate::write_set(&self.ctx, c.set.1, [c.cond.0, enclosing.unwrap_or(own), own]);
            if c.kind == CondKind::While {
                c.looping = Some(loop_resources(&self.ctx)?);
            }
        }
        Ok(())
    }

    /// Records conditional node `h` (an `if` or `switch`) of `exe` into `cb`, inside a device
    /// segment: the predicate dispatch, then each body under conditional rendering on its
    /// word. Returns whether `h` is a conditional node.
    pub(crate) fn record_conditional(
        &self,
        exe: &Executable,
        h: Handle<Node>,
        cb: vk::CommandBuffer,
        native: &mut BTreeMap<String, NativeFn>,
    ) -> Result<bool> {
        let Some((state, c)) = exe.cond.as_ref().and_then(|s| Some((s, s.nodes.get(&h.index())?))) else {
            return Ok(false);
        };
        let (cr, kernel) = self.conditional_tools()?;
        let d = &self.ctx.device;
        let parent = self.pred_stack.borrow().last().copied();
        let mode = if c.kind == CondKind::Switch { MODE_CASE } else { MODE_TRUTH };
        // SAFETY: `cb` is recording; the set, the buffers and the words are this executable's
        // (sized at finalize for every node's words); rendering begun here ends here.
        unsafe {
            if parent.is_some() {
                // Conditional rendering does not nest: the enclosing body's is resumed below.
                (cr.fp().cmd_end_conditional_rendering_ext)(cb);
            }
            around(d, cb, parent.is_some());
            let push = [c.cond.1, parent.map_or(NO_PARENT, |p| p.1), c.word, c.words, mode];
            predicate::record(d, cb, kernel, c.set.1, push);
            predicate_to_rendering(d, cb);
        }
        let mut result = Ok(());
        for (i, &body) in c.bodies.iter().enumerate() {
            let word = c.word + i as u32;
            // SAFETY: as above.
            unsafe {
                if i > 0 {
                    // Only one body runs, but the validation layer cannot know that.
                    compute_to_compute(d, cb);
                }
                begin_rendering(cr, cb, state.preds.buffer, word);
            }
            self.pred_stack.borrow_mut().push((state.preds.buffer, word));
            let r = self.record_body(body, cb, native);
            self.pred_stack.borrow_mut().pop();
            // SAFETY: as above: the rendering begun for this body.
            unsafe { (cr.fp().cmd_end_conditional_rendering_ext)(cb) };
            if r.is_err() && result.is_ok() {
                result = r;
            }
        }
        // SAFETY: as above.
        unsafe {
            around(d, cb, parent.is_some());
            if let Some((buffer, word)) = parent {
                begin_rendering(cr, cb, buffer, word);
            }
        }
        result.map(|()| true)
    }

    /// Records the device segments of body executable `id` into `cb`, with the barriers its
    /// segment plans place between commands, under whatever predicate is active. The plans'
    /// opening and closing barriers are left out: the node's own barriers before its
    /// predicate dispatch and after the body order the body against everything around it.
    fn record_body(&self, id: ExecId, cb: vk::CommandBuffer, native: &mut BTreeMap<String, NativeFn>) -> Result<()> {
        let body = self.exec_ref(id)?;
        let graph = &self.loaded.module.graphs[body.graph];
        let d = &self.ctx.device;
        for (si, seg) in body.sched.iter().enumerate() {
            if !matches!(seg, Seg::Device(_)) {
                return Err(ExecError::Invalid(format!("@{}: a body runs device work only", graph.name)));
            }
            let (order, plan) = self.segment_plan(body, si)?;
            let mut bound = vk::Pipeline::null();
            if si > 0 {
                // SAFETY: `cb` is recording (the caller's contract).
                unsafe { compute_to_compute(d, cb) };
            }
            for (i, &h) in order.iter().enumerate() {
                if let Some(Some(m)) = plan.before.get(i) {
                    // SAFETY: as above.
                    unsafe { m.record(d, cb) };
                }
                self.record_node(body, graph, h, cb, native, &mut bound)?;
            }
        }
        Ok(())
    }

    /// Records `while` segment `si` (node `h`): its first chunk into each live copy of the
    /// segment's command buffer, and the further chunks once.
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
        let mut ladder: Vec<u32> = LADDER.iter().copied().filter(|&r| u64::from(r) <= cap).collect();
        if ladder.is_empty() {
            ladder.push(u32::try_from(cap).unwrap_or(1).min(LADDER[0]));
        }
        let d = self.ctx.device.clone();
        let flags = if exe.options.simultaneous_use {
            vk::CommandBufferUsageFlags::SIMULTANEOUS_USE
        } else {
            vk::CommandBufferUsageFlags::empty()
        };
        let chunk = |exe: &Executable, cb: vk::CommandBuffer, rounds: u32, native: &mut BTreeMap<String, NativeFn>| {
            // SAFETY: the command buffer is this executable's and not pending (the executable
            // is idle whenever it is recorded).
            unsafe { d.begin_command_buffer(cb, &vk::CommandBufferBeginInfo::default().flags(flags))? };
            let r = self.record_rounds(exe, h, cb, rounds, native);
            // SAFETY: as above.
            unsafe { d.end_command_buffer(cb)? };
            r
        };
        for copy in 0..exe.live_copies.min(exe.cmds.len()) {
            let cb = allocate_or_reset(&d, exe.cmd_pool, exe.cmds[copy][si])?;
            exe.cmds[copy][si] = cb;
            chunk(exe, cb, ladder[0], native)?;
        }
        let already = exe.cond.as_ref().and_then(|s| s.nodes.get(&h.index())).and_then(|c| c.looping.as_ref());
        if already.is_some_and(|l| !l.more.is_empty()) {
            return Ok(());
        }
        let mut more = Vec::new();
        for &rounds in ladder.iter().skip(1).chain(ladder.last().filter(|_| ladder.len() == 1)) {
            let cb = allocate_or_reset(&d, exe.cmd_pool, vk::CommandBuffer::null())?;
            chunk(exe, cb, rounds, native)?;
            more.push((cb, rounds));
        }
        if let Some(l) = exe.cond.as_mut().and_then(|s| s.nodes.get_mut(&h.index())).and_then(|c| c.looping.as_mut()) {
            l.first = ladder[0];
            l.more = more;
        }
        exe.recorded += 1;
        Ok(())
    }

    /// Records `rounds` rounds of `while` node `h` into `cb`, then the predicate of the next
    /// round into the host-visible word.
    fn record_rounds(
        &self,
        exe: &Executable,
        h: Handle<Node>,
        cb: vk::CommandBuffer,
        rounds: u32,
        native: &mut BTreeMap<String, NativeFn>,
    ) -> Result<()> {
        let state = exe.cond.as_ref().ok_or_else(|| ExecError::Invalid("no conditional resources".into()))?;
        let c = state.nodes.get(&h.index()).ok_or_else(|| ExecError::Invalid("no conditional resources".into()))?;
        let l = c.looping.as_ref().ok_or_else(|| ExecError::Invalid("no loop resources".into()))?;
        let body = *c.bodies.first().ok_or_else(|| ExecError::Invalid("no body".into()))?;
        let (cr, kernel) = self.conditional_tools()?;
        let d = &self.ctx.device;
        let push = [c.cond.1, NO_PARENT, c.word, 1, MODE_TRUTH];
        // SAFETY: `cb` is recording; set, buffers and words are this executable's.
        unsafe { all_to_all(d, cb) };
        for _ in 0..rounds {
            // SAFETY: as above; the rendering begun here ends before the next round.
            unsafe {
                predicate::record(d, cb, kernel, c.set.1, push);
                predicate_to_rendering(d, cb);
                begin_rendering(cr, cb, state.preds.buffer, c.word);
            }
            self.pred_stack.borrow_mut().push((state.preds.buffer, c.word));
            let r = self.record_body(body, cb, native);
            self.pred_stack.borrow_mut().pop();
            // SAFETY: as above.
            unsafe {
                (cr.fp().cmd_end_conditional_rendering_ext)(cb);
                // The body's writes (its condition among them) before the next round's
                // predicate and body: bodies hold compute work only (conditional.rs in ir).
                compute_to_compute(d, cb);
            }
            r?;
        }
        let region = [vk::BufferCopy { src_offset: u64::from(c.word) * 4, dst_offset: 0, size: 4 }];
        // SAFETY: as above; the readback buffer holds 4 bytes.
        unsafe {
            predicate::record(d, cb, kernel, c.set.1, push);
            crate::vk::buffer::full_barrier(
                d,
                cb,
                vk::PipelineStageFlags2::COMPUTE_SHADER,
                vk::PipelineStageFlags2::TRANSFER,
            );
            d.cmd_copy_buffer(cb, state.preds.buffer, l.readback.buffer, &region);
            crate::vk::buffer::full_barrier(
                d,
                cb,
                vk::PipelineStageFlags2::TRANSFER,
                vk::PipelineStageFlags2::HOST | vk::PipelineStageFlags2::ALL_COMMANDS,
            );
        }
        Ok(())
    }

    fn conditional_tools(&self) -> Result<(&ash::ext::conditional_rendering::Device, &predicate::PredicateKernel)> {
        match (self.ctx.conditional_rendering.as_ref(), self.predicate_kernel.as_ref()) {
            (Some(cr), Some(k)) => Ok((cr, k)),
            _ => Err(ExecError::Invalid("conditional nodes need VK_EXT_conditional_rendering".into())),
        }
    }

    /// How each conditional node of executable `id` runs on this device, for `inspect` and
    /// `run --profile`: (node name, description), in node order.
    pub fn conditional_paths(&self, id: ExecId) -> Result<Vec<(String, String)>> {
        let exe = self.exec_ref(id)?;
        let graph = &self.loaded.module.graphs[exe.graph];
        let mut out = Vec::new();
        for (&index, c) in exe.cond.iter().flat_map(|s| s.nodes.iter()) {
            let Some((_, n)) = graph.nodes.iter().nth(index) else { continue };
            let text = match (&c.looping, c.kind) {
                (Some(l), _) => format!(
                    "while: conditional rendering, {} predicated rounds per submission then {}, the host reading the condition between submissions",
                    l.first,
                    l.more.iter().map(|m| m.1.to_string()).collect::<Vec<_>>().join(", ")
                ),
                (None, kind) => format!(
                    "{}: conditional rendering on {} predicate word(s), no host round trip",
                    kind.keyword(),
                    c.words
                ),
            };
            out.push((n.name.clone(), text));
        }
        Ok(out)
    }
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

/// A `while` node's readback word and semaphore.
fn loop_resources(ctx: &Context) -> Result<LoopRes> {
    let mut readback = Buffer::new(ctx, 4, Place::Host)?;
    let mut type_info =
        vk::SemaphoreTypeCreateInfo::default().semaphore_type(vk::SemaphoreType::TIMELINE).initial_value(0);
    // SAFETY: a valid create info on a live device.
    match unsafe { ctx.device.create_semaphore(&vk::SemaphoreCreateInfo::default().push_next(&mut type_info), None) } {
        Ok(sem) => Ok(LoopRes { first: 0, more: Vec::new(), readback, sem, counter: Arc::new(AtomicU64::new(0)) }),
        Err(e) => {
            readback.destroy(ctx);
            Err(e.into())
        }
    }
}

/// The barrier before a conditional node's predicate dispatch and after its bodies: at the top
/// level against every kind of work (a fill may have set the condition); inside a body, where
/// only dispatches run, compute against compute.
///
/// # Safety
/// `cb` is recording.
unsafe fn around(d: &ash::Device, cb: vk::CommandBuffer, in_body: bool) {
    // SAFETY: the caller's contract.
    unsafe {
        if in_body {
            compute_to_compute(d, cb)
        } else {
            all_to_all(d, cb)
        }
    }
}

/// Compute writes visible to later compute work (the predicate dispatch, the next body).
///
/// # Safety
/// `cb` is recording.
unsafe fn compute_to_compute(d: &ash::Device, cb: vk::CommandBuffer) {
    let barrier = [vk::MemoryBarrier2::default()
        .src_stage_mask(vk::PipelineStageFlags2::COMPUTE_SHADER)
        .src_access_mask(vk::AccessFlags2::SHADER_WRITE)
        .dst_stage_mask(vk::PipelineStageFlags2::COMPUTE_SHADER)
        .dst_access_mask(vk::AccessFlags2::SHADER_READ | vk::AccessFlags2::SHADER_WRITE)];
    // SAFETY: the caller's contract.
    unsafe { d.cmd_pipeline_barrier2(cb, &vk::DependencyInfo::default().memory_barriers(&barrier)) };
}

/// Every earlier command's writes visible to every later command (the condition word a
/// fill or the host wrote).
///
/// # Safety
/// `cb` is recording.
unsafe fn all_to_all(d: &ash::Device, cb: vk::CommandBuffer) {
    crate::vk::buffer::full_barrier(
        d,
        cb,
        vk::PipelineStageFlags2::ALL_COMMANDS,
        vk::PipelineStageFlags2::ALL_COMMANDS,
    );
}

/// The predicate kernel's writes visible to conditional rendering (and to the predicate
/// dispatches of nested nodes, which read them as their enclosing word).
///
/// # Safety
/// `cb` is recording.
unsafe fn predicate_to_rendering(d: &ash::Device, cb: vk::CommandBuffer) {
    let barrier = [vk::MemoryBarrier2::default()
        .src_stage_mask(vk::PipelineStageFlags2::COMPUTE_SHADER)
        .src_access_mask(vk::AccessFlags2::SHADER_WRITE)
        .dst_stage_mask(vk::PipelineStageFlags2::CONDITIONAL_RENDERING_EXT | vk::PipelineStageFlags2::COMPUTE_SHADER)
        .dst_access_mask(vk::AccessFlags2::CONDITIONAL_RENDERING_READ_EXT | vk::AccessFlags2::SHADER_READ)];
    // SAFETY: the caller's contract.
    unsafe { d.cmd_pipeline_barrier2(cb, &vk::DependencyInfo::default().memory_barriers(&barrier)) };
}

/// Begins conditional rendering on word `word` of `buffer`.
///
/// # Safety
/// `cb` is recording outside conditional rendering; `buffer` was made with the
/// conditional-rendering usage and holds the word.
unsafe fn begin_rendering(
    cr: &ash::ext::conditional_rendering::Device,
    cb: vk::CommandBuffer,
    buffer: vk::Buffer,
    word: u32,
) {
    let info = vk::ConditionalRenderingBeginInfoEXT::default().buffer(buffer).offset(u64::from(word) * 4);
    // SAFETY: the caller's contract.
    unsafe { (cr.fp().cmd_begin_conditional_rendering_ext)(cb, &info) };
}
