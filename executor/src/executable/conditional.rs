//! Conditional nodes on Vulkan (docs/conditional.md, "Executor"): `if`, `switch` and `while`
//! without a host round trip per decision.
//!
//! Each body graph is finalized as an executable of its own (its kernels' argument blocks
//! and descriptor sets; nothing recorded), and recorded inline where its node stands. Its
//! kernels are predicated variants (docs/abi.md, "Predicated variants"): each reads a word
//! and returns at once when the word says the body does not run, so a body needs no
//! conditional rendering and no barrier into the command processor. The word is the
//! condition itself for an `if` or `switch` at the top level whose bodies neither touch the
//! condition's memory nor hold conditional nodes (no predicate dispatch at all); otherwise the
//! predicate kernel (`vk/predicate.rs`) writes one word per body into the executable's
//! predicate buffer, a nested node's words being its enclosing body's word *and* its own
//! test. A body with a kernel that is not predicated (external SPIR-V) runs under
//! `vkCmdBeginConditionalRenderingEXT` on its word instead; conditional rendering cannot
//! nest, so a node inside such a body ends the enclosing rendering and begins it again after
//! its bodies: the stack of active predicates is [`Executor::pred_stack`].
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
use cmdgraph_ir::bundle::MemorySlot;
use cmdgraph_ir::graph::CondKind;
use cmdgraph_ir::{Graph, Handle, MemRef, Module, Node, NodeKind};
use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// Rounds per command buffer of a `while` loop: a run submits a sum of distinct ones (each
/// at most once per submission), so any count up to 511 is one submission (docs/conditional.md,
/// "Executor"). Cut where a chunk would record more than [`MAX_CHUNK_COMMANDS`] body commands.
pub const LADDER: [u32; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 256];
/// Rounds a `while` loop's first submission runs when nothing predicts its count.
pub const FIRST_ROUNDS: u64 = 16;
/// Bytes between the even and the odd rounds' words of a `while` node: descriptor windows
/// must start at a multiple of `minStorageBufferOffsetAlignment` (at most 256), and disjoint
/// windows keep the validation layer from taking one round's predicate write for a hazard
/// with the other's reads.
const LOOP_WINDOW: u64 = 256;
/// The most body commands one chunk of rounds records.
const MAX_CHUNK_COMMANDS: u64 = 1 << 16;
/// Rounds after which a loop that still runs is an error: the interpreter's default round
/// limit (`RunOptions::fuel`), so both runtimes stop the same runaway loop.
pub(crate) const ROUND_LIMIT: u64 = 1 << 20;

/// What a body executable's predicated kernels test: set by the node whose body it is.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Enclosing {
    /// The predicate buffer of the executable holding the node (nested nodes' predicate
    /// dispatches read their enclosing word there).
    pub(crate) preds: vk::Buffer,
    /// The buffer the kernels read their word from: `preds`, or the condition's memory; and
    /// the window of it their predicate slot binds (`vk::WHOLE_SIZE`: to its end).
    pub(crate) buffer: vk::Buffer,
    pub(crate) window: (u64, u64),
    /// Argument-block words 6 and 7 (the mode and index, the value compared).
    pub(crate) control: u32,
    pub(crate) expect: u32,
}

/// An executable's predicate binding (its kernels' `MemorySlot::Predicate`).
pub(crate) struct PredicateBinding {
    /// Not owned: the enclosing executable's, the user's, or this executable's own buffer.
    pub(crate) buffer: Buffer,
    /// The window of it the predicate slot binds.
    pub(crate) window: (u64, u64),
    pub(crate) control: u32,
    pub(crate) expect: u32,
}

impl PredicateBinding {
    /// A body's binding, or "always run" (mode 0) over `own`.
    pub(crate) fn of(enclosing: Option<&Enclosing>, own: &Buffer) -> PredicateBinding {
        match enclosing {
            Some(e) => PredicateBinding {
                buffer: Buffer::imported(e.buffer, 0, 4),
                window: e.window,
                control: e.control,
                expect: e.expect,
            },
            None => PredicateBinding {
                buffer: Buffer::imported(own.buffer, 0, own.size),
                window: (0, vk::WHOLE_SIZE),
                control: 0,
                expect: 0,
            },
        }
    }
}

/// Words of the executable's predicate buffer a node takes: one per body (`if` two; a `while`
/// none, its words are its own), in a window of its own that starts at a multiple of
/// [`LOOP_WINDOW`] bytes, so that no node's predicate dispatch writes bytes another node's
/// kernels bind (the validation layer would take that for a hazard).
fn space(kind: CondKind, bodies: usize) -> u32 {
    let words = match kind {
        CondKind::If => 2,
        CondKind::While => 0,
        CondKind::Switch => bodies.max(1) as u32,
    };
    words.next_multiple_of((LOOP_WINDOW / 4) as u32)
}

/// Argument-block word 6 of a predicated kernel: run when word `index` is non-zero.
fn nonzero(index: u32) -> u32 {
    1 | (index << 2)
}

/// Argument-block word 6: run when word `index` equals word 7.
fn equal(index: u32) -> u32 {
    2 | (index << 2)
}

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
    /// The bodies' kernels read the condition itself: no predicate dispatch.
    pub(crate) direct: bool,
    /// Per body: it has a kernel that is not predicated, so it runs under conditional
    /// rendering on its word.
    pub(crate) rendering: Vec<bool>,
    /// A `while` node's chunks and the words the host reads.
    pub(crate) looping: Option<LoopRes>,
    /// A `while` node's words: even rounds' predicate and tally at byte 0, odd rounds' at
    /// [`LOOP_WINDOW`] (bodies 0 and 1 read one each).
    pub(crate) loop_words: Option<Buffer>,
    /// Where the condition word is (its backing buffer and byte offset), to find the body
    /// commands that write it.
    pub(crate) cond_place: (crate::args::Target, u64),
}

/// What a `while` node's run needs beyond its segment's command buffer (which resets the
/// round tally and runs no round).
pub(crate) struct LoopRes {
    /// Chunks of rounds: (command buffer, rounds), rounds ascending ([`LADDER`]).
    pub(crate) chunks: Vec<(vk::CommandBuffer, u32)>,
    /// Host-visible words each chunk ends by writing: the predicate of the round after it,
    /// and the rounds run so far in this run.
    pub(crate) readback: Buffer,
    /// The rounds the last run took: what the next run submits at once.
    pub(crate) last: Arc<AtomicU64>,
    /// The next round's predicate is computed inside the body, beside its commands after
    /// its last write of the condition (`record_rounds`).
    pub(crate) split: bool,
    /// The predicate kernel's sets of even and odd rounds: the condition, then the round's
    /// window (binding 1 unread: no enclosing word) twice.
    pub(crate) sets: [(vk::DescriptorPool, vk::DescriptorSet); 2],
    /// Timeline of the further chunks' submissions (they are not the run's own segments).
    pub(crate) sem: vk::Semaphore,
    pub(crate) counter: Arc<AtomicU64>,
}

impl Executor {
    /// Finalizes the bodies of graph `gh`'s conditional nodes and makes its predicate words
    /// (`None`: it has no conditional node). `nested`: the graph is itself a body.
    pub(crate) fn prepare_conditionals(&mut self, gh: Handle<Graph>, nested: bool) -> Result<Option<CondState>> {
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
        if nodes.is_empty() {
            return Ok(None);
        }
        let gname = graph.name.clone();
        if self.predicate_kernel.is_none() {
            self.predicate_kernel = Some(predicate::PredicateKernel::new(&self.ctx, self.cache)?);
        }
        let words: u32 = nodes.iter().map(|(_, _, kind, _, bodies)| space(*kind, bodies.len())).sum();
        let mut state =
            CondState { preds: Buffer::predicates(&self.ctx, 4 * u64::from(words))?, nodes: BTreeMap::new() };
        let mut word = 0u32;
        for (index, name, kind, cond, bodies) in nodes {
            let words = if kind == CondKind::If { 2 } else { bodies.len().max(1) as u32 };
            let rendering: Vec<bool> = bodies.iter().map(|b| self.needs_rendering(b)).collect();
            if rendering.iter().any(|&r| r) && self.ctx.conditional_rendering.is_none() {
                self.free_conditionals(state);
                return Err(ExecError::Invalid(format!(
                    "@{gname} %{name}: a body of this node runs a kernel that cannot test its predicate (external SPIR-V), which needs VK_EXT_conditional_rendering, and device \"{}\" lacks it (or the application's device was not created with it); write the kernel in the kernel language, or run the graph with `cmdgraph interp` (docs/conditional.md)",
                    self.ctx.device_name()
                )));
            }
            let direct = !nested && kind != CondKind::While && !rendering.iter().any(|&r| r) && {
                let m = &self.loaded.module;
                bodies.iter().all(|b| m.graph_by_name(b).is_some_and(|h| !touches_or_branches(m, h, cond.base)))
            };
            let loop_words = match kind {
                CondKind::While => match Buffer::predicates(&self.ctx, 2 * LOOP_WINDOW) {
                    Ok(b) => Some(b),
                    Err(e) => {
                        self.free_conditionals(state);
                        return Err(e);
                    }
                },
                _ => None,
            };
            let cond_place = self.place_user(cond.base, cond.offset).map(|p| (p.target, p.offset));
            let made = cond_place.clone().and_then(|_| self.condition_word(cond.base, cond.offset)).and_then(|c| {
                let mut ids = Vec::new();
                for (i, b) in bodies.iter().enumerate() {
                    let i = i as u32;
                    let (buffer, control, expect) = match (direct, kind) {
                        (true, CondKind::If) if i == 0 => (c.0, nonzero(c.1), 0),
                        (true, CondKind::If) => (c.0, equal(c.1), 0),
                        (true, _) => (c.0, equal(c.1), i),
                        (false, _) => (state.preds.buffer, nonzero(i), 0),
                    };
                    // The bodies of a node with a predicate dispatch bind the node's window.
                    let window = match direct {
                        true => (0, vk::WHOLE_SIZE),
                        false => (u64::from(word) * 4, u64::from(space(kind, bodies.len())) * 4),
                    };
                    let enclosing = Enclosing { preds: state.preds.buffer, buffer, window, control, expect };
                    let parities =
                        if kind == CondKind::While { loop_words.iter().collect::<Vec<_>>() } else { Vec::new() };
                    // A `while` body twice, reading the predicate of even and of odd rounds
                    // (each in a window of its own: see `record_rounds`).
                    let instances: Vec<Enclosing> = if parities.is_empty() {
                        vec![enclosing]
                    } else {
                        (0..2u64)
                            .map(|p| Enclosing {
                                preds: parities[0].buffer,
                                buffer: parities[0].buffer,
                                window: (p * LOOP_WINDOW, 8),
                                control: nonzero(0),
                                expect: 0,
                            })
                            .collect()
                    };
                    for e in instances {
                        match self.finalize_in(b, Some(e)) {
                            Ok(id) => ids.push(id),
                            Err(e) => {
                                for id in ids {
                                    let _ = self.drop_exec(id);
                                }
                                return Err(e);
                            }
                        }
                    }
                }
                Ok((c, ids))
            });
            let (cond, ids) = match made {
                Ok(x) => x,
                Err(e) => {
                    if let Some(mut b) = loop_words {
                        b.destroy(&self.ctx);
                    }
                    self.free_conditionals(state);
                    return Err(match e {
                        ExecError::Invalid(m) => ExecError::Invalid(format!("@{gname} %{name}: {m}")),
                        other => other,
                    });
                }
            };
            state.nodes.insert(
                index,
                CondNode {
                    kind,
                    bodies: ids,
                    word,
                    words,
                    cond,
                    set: (vk::DescriptorPool::null(), vk::DescriptorSet::null()),
                    direct,
                    rendering,
                    looping: None,
                    loop_words,
                    cond_place: cond_place.unwrap_or((crate::args::Target::Pool, 0)),
                },
            );
            word += space(kind, words as usize);
        }
        Ok(Some(state))
    }

    /// Whether body graph `name` launches a kernel variant without a predicate slot (one the
    /// compiler could not predicate: external SPIR-V).
    fn needs_rendering(&self, name: &str) -> bool {
        let b = &self.loaded.bundle;
        b.graphs.iter().find(|g| g.name == name).is_some_and(|g| {
            g.launches.iter().any(|l| {
                b.kernels.get(l.kernel as usize).is_none_or(|k| k.layout.slots.last() != Some(&MemorySlot::Predicate))
            })
        })
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
            if let Some(mut b) = c.loop_words.take() {
                b.destroy(&self.ctx);
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
        let whole = |b: vk::Buffer| (b, 0, vk::WHOLE_SIZE);
        for c in state.nodes.values_mut() {
            if c.kind != CondKind::While {
                c.set = exe.sets.allocate(&self.ctx, kernel.set_layout, 3, exe.set_count.max(1))?;
                let window = (own, u64::from(c.word) * 4, u64::from(space(c.kind, c.words as usize)) * 4);
                predicate::write_set(&self.ctx, c.set.1, [whole(c.cond.0), whole(enclosing.unwrap_or(own)), window]);
            }
            if let (CondKind::While, Some(words)) = (c.kind, &c.loop_words) {
                let mut l = loop_resources(&self.ctx)?;
                for (p, slot) in l.sets.iter_mut().enumerate() {
                    *slot = exe.sets.allocate(&self.ctx, kernel.set_layout, 3, exe.set_count.max(1))?;
                    let window = (words.buffer, p as u64 * LOOP_WINDOW, 8);
                    predicate::write_set(&self.ctx, slot.1, [whole(c.cond.0), window, window]);
                }
                c.looping = Some(l);
            }
        }
        Ok(())
    }

    /// Records conditional node `h` (an `if` or `switch`) of `exe` into `cb`, inside a device
    /// segment (whose barrier plan orders it, a native-like command, against everything
    /// around it): the predicate dispatch unless the bodies read the condition directly, then
    /// each body, under conditional rendering on its word where it needs it. Returns whether
    /// `h` is a conditional node.
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
        let d = &self.ctx.device;
        let parent = self.pred_stack.borrow().last().copied();
        let rendering = c.rendering.iter().any(|&r| r);
        if !c.direct {
            let kernel =
                self.predicate_kernel.as_ref().ok_or_else(|| ExecError::Invalid("no predicate kernel".into()))?;
            let mode = if c.kind == CondKind::Switch { MODE_CASE } else { MODE_TRUTH };
            // SAFETY: `cb` is recording; the set, the buffers and the words are this
            // executable's (sized at finalize for every node's words).
            unsafe {
                if let Some(p) = parent.filter(|p| p.2) {
                    // Conditional rendering does not nest: the enclosing body's is resumed below.
                    end_rendering(self.rendering_fns(p.2)?, cb);
                }
                if parent.is_some() {
                    // Inside a body the segment plan has no barrier before the node's first
                    // command; bodies hold compute work only.
                    compute_to_compute(d, cb);
                }
                // Words relative to the node's window (binding 2).
                let push = [c.cond.1, parent.map_or(NO_PARENT, |p| p.1), 0, c.words, mode, NO_PARENT];
                predicate::record(d, cb, kernel, c.set.1, push);
                predicate_barrier(d, cb, rendering);
            }
        }
        let mut result = Ok(());
        for (i, &body) in c.bodies.iter().enumerate() {
            let word = c.word + i as u32;
            let under = c.rendering.get(i).copied().unwrap_or(false);
            // SAFETY: as above.
            unsafe {
                if i > 0 {
                    // Only one body runs, but the validation layer cannot know that.
                    compute_to_compute(d, cb);
                }
                if under {
                    begin_rendering(self.rendering_fns(true)?, cb, state.preds.buffer, word);
                }
            }
            self.pred_stack.borrow_mut().push((state.preds.buffer, word, under));
            let r = self.record_body(body, cb, native);
            self.pred_stack.borrow_mut().pop();
            if under {
                // SAFETY: as above: the rendering begun for this body.
                unsafe { end_rendering(self.rendering_fns(true)?, cb) };
            }
            if r.is_err() && result.is_ok() {
                result = r;
            }
        }
        // SAFETY: as above.
        unsafe {
            if parent.is_some() && !c.direct {
                compute_to_compute(d, cb);
            }
            if let Some((buffer, word, true)) = parent.filter(|_| !c.direct) {
                begin_rendering(self.rendering_fns(true)?, cb, buffer, word);
            }
        }
        result.map(|()| true)
    }

    /// Records the device segments of body executable `id` into `cb`, with the barriers its
    /// segment plans place between commands, under whatever predicate is active. The plans'
    /// opening and closing barriers are left out: the node's own barriers before its
    /// predicate dispatch and after the body order the body against everything around it.
    fn record_body(&self, id: ExecId, cb: vk::CommandBuffer, native: &mut BTreeMap<String, NativeFn>) -> Result<()> {
        self.record_body_with(id, cb, native, None)
    }

    /// [`record_body`](Self::record_body), calling `hook` just before command `at` of the
    /// first segment (after the barrier in front of it).
    fn record_body_with(
        &self,
        id: ExecId,
        cb: vk::CommandBuffer,
        native: &mut BTreeMap<String, NativeFn>,
        hook: Option<(usize, &dyn Fn(vk::CommandBuffer))>,
    ) -> Result<()> {
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
                if let Some((at, f)) = hook.filter(|(at, _)| si == 0 && *at == i) {
                    let _ = at;
                    f(cb);
                    bound = vk::Pipeline::null();
                }
                self.record_node(body, graph, h, cb, native, &mut bound)?;
            }
        }
        Ok(())
    }

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

    /// Records `while` segment `si` (node `h`): the segment's command buffer (each live copy)
    /// resets the round tally; the chunks of rounds are recorded once.
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
        let words = {
            let state = exe.cond.as_ref().ok_or_else(|| ExecError::Invalid("no conditional resources".into()))?;
            let c = state.nodes.get(&h.index()).ok_or_else(|| ExecError::Invalid("no conditional resources".into()))?;
            c.loop_words.as_ref().map(|b| b.buffer).ok_or_else(|| ExecError::Invalid("no loop words".into()))?
        };
        for copy in 0..exe.live_copies.min(exe.cmds.len()) {
            let cb = allocate_or_reset(&d, exe.cmd_pool, exe.cmds[copy][si])?;
            exe.cmds[copy][si] = cb;
            // SAFETY: the command buffer is this executable's and not pending (the executable
            // is idle whenever it is recorded); the tally words are inside the loop's words.
            unsafe {
                d.begin_command_buffer(cb, &vk::CommandBufferBeginInfo::default().flags(flags))?;
                all_to_all(&d, cb);
                d.cmd_fill_buffer(cb, words, 4, 4, 0);
                d.cmd_fill_buffer(cb, words, LOOP_WINDOW + 4, 4, 0);
                all_to_all(&d, cb);
                d.end_command_buffer(cb)?;
            }
        }
        let done = exe.cond.as_ref().and_then(|s| s.nodes.get(&h.index())).and_then(|c| c.looping.as_ref());
        if done.is_some_and(|l| !l.chunks.is_empty()) {
            return Ok(());
        }
        let mut chunks = Vec::new();
        for &rounds in &ladder {
            let cb = allocate_or_reset(&d, exe.cmd_pool, vk::CommandBuffer::null())?;
            // SAFETY: as above.
            unsafe { d.begin_command_buffer(cb, &vk::CommandBufferBeginInfo::default().flags(flags))? };
            let r = self.record_rounds(exe, h, cb, rounds, native);
            // SAFETY: as above.
            unsafe { d.end_command_buffer(cb)? };
            r?;
            chunks.push((cb, rounds));
        }
        let split = {
            let c = exe.cond.as_ref().and_then(|s| s.nodes.get(&h.index()));
            match c {
                Some(c) if !c.rendering.first().copied().unwrap_or(false) => match c.bodies.first() {
                    Some(&b) => self.loop_split(b, &c.cond_place)?.is_some(),
                    None => false,
                },
                _ => false,
            }
        };
        if let Some(l) = exe.cond.as_mut().and_then(|s| s.nodes.get_mut(&h.index())).and_then(|c| c.looping.as_mut()) {
            l.chunks = chunks;
            l.split = split;
        }
        exe.recorded += 1;
        Ok(())
    }

    /// Records `rounds` rounds of `while` node `h` into `cb`, then copies the predicate of the
    /// round after them and the rounds' tallies into the host-visible words.
    ///
    /// Even rounds run body 0, which reads the predicate at the loop's words' byte 0; odd
    /// rounds body 1, reading byte [`LOOP_WINDOW`]. The predicate kernel computes round j+1's
    /// word during round j, right after the barrier that follows the body's last write of the
    /// condition ([`loop_split`](Self::loop_split)), beside the commands after it, which read
    /// round j's word: so a round costs the body's own barriers and one more, not two. Each
    /// predicate counts its round in its window's tally when the round runs.
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
        let words = c.loop_words.as_ref().ok_or_else(|| ExecError::Invalid("no loop words".into()))?.buffer;
        let (even, odd) = match c.bodies.as_slice() {
            [e, o, ..] => (*e, *o),
            _ => return Err(ExecError::Invalid("a `while` node without its two body executables".into())),
        };
        let kernel = self.predicate_kernel.as_ref().ok_or_else(|| ExecError::Invalid("no predicate kernel".into()))?;
        let under = c.rendering.first().copied().unwrap_or(false);
        // Under conditional rendering the early predicate would itself be predicated off.
        let split = if under { None } else { self.loop_split(even, &c.cond_place)? };
        let d = &self.ctx.device;
        // The predicate of round `j` (parity j % 2), counted when `count`.
        let predicate = |cb: vk::CommandBuffer, j: u32, count: bool| {
            let push = [c.cond.1, NO_PARENT, 0, 1, MODE_TRUTH, if count { 1 } else { NO_PARENT }];
            // SAFETY: `cb` is recording; the set's windows hold words 0 and 1.
            unsafe { predicate::record(d, cb, kernel, l.sets[(j % 2) as usize].1, push) };
        };
        // SAFETY: `cb` is recording; set, buffers and words are this executable's.
        unsafe { all_to_all(d, cb) };
        predicate(cb, 0, rounds > 0);
        // SAFETY: as above.
        unsafe { predicate_barrier(d, cb, under) };
        for j in 0..rounds {
            let (body, offset) = if j % 2 == 0 { (even, 0) } else { (odd, LOOP_WINDOW) };
            // SAFETY: as above; the rendering begun here ends before the next round.
            if under {
                unsafe { begin_rendering_at(self.rendering_fns(true)?, cb, words, offset) };
            }
            let next = |cb: vk::CommandBuffer| predicate(cb, j + 1, j + 1 < rounds);
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
            if split.is_none() {
                next(cb);
                // SAFETY: as above.
                unsafe { predicate_barrier(d, cb, under) };
            }
        }
        let last = u64::from(rounds % 2) * LOOP_WINDOW;
        let regions = [
            vk::BufferCopy { src_offset: last, dst_offset: 0, size: 4 },
            vk::BufferCopy { src_offset: 4, dst_offset: 4, size: 4 },
            vk::BufferCopy { src_offset: LOOP_WINDOW + 4, dst_offset: 8, size: 4 },
        ];
        // SAFETY: as above; the readback buffer holds 12 bytes.
        unsafe {
            crate::vk::buffer::full_barrier(
                d,
                cb,
                vk::PipelineStageFlags2::COMPUTE_SHADER,
                vk::PipelineStageFlags2::TRANSFER,
            );
            d.cmd_copy_buffer(cb, words, l.readback.buffer, &regions);
            crate::vk::buffer::full_barrier(
                d,
                cb,
                vk::PipelineStageFlags2::TRANSFER,
                vk::PipelineStageFlags2::HOST | vk::PipelineStageFlags2::ALL_COMMANDS,
            );
        }
        Ok(())
    }

    /// `VK_EXT_conditional_rendering`'s commands (`want`: a body needs them).
    fn rendering_fns(&self, want: bool) -> Result<&ash::ext::conditional_rendering::Device> {
        match (want, self.ctx.conditional_rendering.as_ref()) {
            (true, Some(cr)) => Ok(cr),
            _ => Err(ExecError::Invalid("conditional rendering is not enabled on this device".into())),
        }
    }

    /// The rounds each `while` node of executable `id` took in its last finished run (0 before
    /// any), in node order: counted on the device, and what the next run submits at once.
    pub fn loop_rounds(&self, id: ExecId) -> Result<Vec<(String, u64)>> {
        let exe = self.exec_ref(id)?;
        let graph = &self.loaded.module.graphs[exe.graph];
        let mut out = Vec::new();
        for (&index, c) in exe.cond.iter().flat_map(|s| s.nodes.iter()) {
            let (Some(l), Some((_, n))) = (&c.looping, graph.nodes.iter().nth(index)) else { continue };
            out.push((n.name.clone(), l.last.load(std::sync::atomic::Ordering::Relaxed)));
        }
        Ok(out)
    }

    /// How each conditional node of executable `id` runs on this device, for `inspect` and
    /// `run --profile`: (node name, description), in node order.
    pub fn conditional_paths(&self, id: ExecId) -> Result<Vec<(String, String)>> {
        let exe = self.exec_ref(id)?;
        let graph = &self.loaded.module.graphs[exe.graph];
        let mut out = Vec::new();
        for (&index, c) in exe.cond.iter().flat_map(|s| s.nodes.iter()) {
            let Some((_, n)) = graph.nodes.iter().nth(index) else { continue };
            let how = match (c.rendering.iter().any(|&r| r), c.direct) {
                (true, _) => "under conditional rendering (a body runs a kernel that cannot test its predicate)",
                (false, true) => "predicated kernels reading the condition itself, no predicate dispatch",
                (false, false) => "predicated kernels reading words a predicate dispatch computes",
            };
            let text = match (&c.looping, c.kind) {
                (Some(l), _) => format!(
                    "while: {how}{}; rounds in chunks of {}, a submission as many as the last run took ({FIRST_ROUNDS} the first time), then doubling while the host reads that the loop still runs",
                    if l.split { ", the next round's inside the body after its last write of the condition" } else { "" },
                    l.chunks.iter().map(|m| m.1.to_string()).collect::<Vec<_>>().join(", ")
                ),
                (None, kind) => format!("{}: {how}; no host round trip", kind.keyword()),
            };
            out.push((n.name.clone(), text));
        }
        Ok(out)
    }
}

/// Whether body graph `g` (with the graphs it reaches through sub-graph nodes) may touch
/// memory `mem` or holds a conditional node: then its kernels cannot read the condition
/// directly (a body writing it would change its own predicate mid-way; a nested node needs a
/// word its predicate dispatch can AND with). Conservative: any argument that is a dynamic
/// parameter, and any node that is not a kernel or ordering-only, counts as touching it.
fn touches_or_branches(m: &Module, g: Handle<Graph>, mem: MemRef) -> bool {
    use cmdgraph_ir::{Arg, ArgValue};
    let Some(graph) = m.graphs.try_get(g) else { return true };
    graph.nodes.iter().any(|(h, n)| match &n.kind {
        NodeKind::Kernel(_) | NodeKind::Dynamic { .. } => graph.kernel_commands(h).any(|(_, cmd)| {
            cmd.args.iter().any(|a| match a {
                Arg::Dyn(_) => true,
                Arg::Value(ArgValue::Pointer(p)) => p.base == mem,
                Arg::Value(ArgValue::Accessor(acc)) => acc.buffer == mem,
                Arg::Value(_) => false,
            })
        }),
        NodeKind::Subgraph { graph: child } => touches_or_branches(m, *child, mem),
        NodeKind::Empty | NodeKind::Barrier { .. } | NodeKind::Prefetch { .. } | NodeKind::Memadvise { .. } => false,
        _ => true,
    })
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
    let mut readback = Buffer::new(ctx, 12, Place::Host)?;
    let mut type_info =
        vk::SemaphoreTypeCreateInfo::default().semaphore_type(vk::SemaphoreType::TIMELINE).initial_value(0);
    // SAFETY: a valid create info on a live device.
    match unsafe { ctx.device.create_semaphore(&vk::SemaphoreCreateInfo::default().push_next(&mut type_info), None) } {
        Ok(sem) => Ok(LoopRes {
            chunks: Vec::new(),
            sets: [(vk::DescriptorPool::null(), vk::DescriptorSet::null()); 2],
            readback,
            last: Arc::new(AtomicU64::new(0)),
            split: false,
            sem,
            counter: Arc::new(AtomicU64::new(0)),
        }),
        Err(e) => {
            readback.destroy(ctx);
            Err(e.into())
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

/// The predicate kernel's writes visible to the bodies' kernels (which test them) and, where a
/// body runs under conditional rendering, to the command processor that reads them.
///
/// # Safety
/// `cb` is recording.
unsafe fn predicate_barrier(d: &ash::Device, cb: vk::CommandBuffer, rendering: bool) {
    let (mut stages, mut access) = (vk::PipelineStageFlags2::COMPUTE_SHADER, vk::AccessFlags2::SHADER_READ);
    if rendering {
        stages |= vk::PipelineStageFlags2::CONDITIONAL_RENDERING_EXT;
        access |= vk::AccessFlags2::CONDITIONAL_RENDERING_READ_EXT;
    }
    let barrier = [vk::MemoryBarrier2::default()
        .src_stage_mask(vk::PipelineStageFlags2::COMPUTE_SHADER)
        .src_access_mask(vk::AccessFlags2::SHADER_WRITE)
        .dst_stage_mask(stages)
        .dst_access_mask(access)];
    // SAFETY: the caller's contract.
    unsafe { d.cmd_pipeline_barrier2(cb, &vk::DependencyInfo::default().memory_barriers(&barrier)) };
}

/// Ends conditional rendering.
///
/// # Safety
/// `cb` is recording inside conditional rendering.
unsafe fn end_rendering(cr: &ash::ext::conditional_rendering::Device, cb: vk::CommandBuffer) {
    // SAFETY: the caller's contract.
    unsafe { (cr.fp().cmd_end_conditional_rendering_ext)(cb) };
}

/// Begins conditional rendering on the word at byte `offset` of `buffer`.
///
/// # Safety
/// As [`begin_rendering`].
unsafe fn begin_rendering_at(
    cr: &ash::ext::conditional_rendering::Device,
    cb: vk::CommandBuffer,
    buffer: vk::Buffer,
    offset: u64,
) {
    let info = vk::ConditionalRenderingBeginInfoEXT::default().buffer(buffer).offset(offset);
    // SAFETY: the caller's contract.
    unsafe { (cr.fp().cmd_begin_conditional_rendering_ext)(cb, &info) };
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
