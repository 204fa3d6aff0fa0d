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
//! A `while` node is a segment of its own (`Seg::Loop`, rounds.rs): chunks of [`LADDER`]
//! rounds recorded once, each round's predicate computed during the round before; a run
//! submits chunks adding up to the rounds the last run took, and more while the host reads
//! that the loop still runs (worker.rs). This file sets the nodes up; record.rs records `if`
//! and `switch` nodes and bodies.
#![allow(unsafe_code)]

mod record;
mod rounds;
mod tail;

use super::Executable;
use crate::error::{ExecError, Result};
use crate::exec::{ExecId, Executor};
use crate::vk::predicate;
use crate::vk::{Buffer, Context};
use ash::vk;
use cmdgraph_ir::bundle::MemorySlot;
use cmdgraph_ir::graph::CondKind;
use cmdgraph_ir::{Graph, Handle, MemRef, Module, NodeKind};
use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// Rounds per command buffer of a `while` loop: a run submits a sum of distinct ones (each
/// at most once per submission), so any count up to 511 is one submission (docs/conditional.md,
/// "Executor"). Cut where a chunk would record more than 2^16 body commands.
pub const LADDER: [u32; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 256];
/// Rounds a `while` loop's first submission runs when nothing predicts its count.
pub const FIRST_ROUNDS: u64 = 16;
/// Bytes between the even and the odd rounds' words of a `while` node: descriptor windows
/// must start at a multiple of `minStorageBufferOffsetAlignment` (at most 256), and disjoint
/// windows keep the validation layer from taking one round's predicate write for a hazard
/// with the other's reads.
pub(crate) const LOOP_WINDOW: u64 = 256;
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
    /// A `while` node whose body's one kernel writes each round's successor predicate
    /// (tail.rs): its rounds record no predicate dispatch.
    pub(crate) tail: bool,
}

/// What a `while` node's run needs beyond its segment's command buffer (which ends each
/// submission of rounds: it makes their writes visible to the host, and runs no round).
pub(crate) struct LoopRes {
    /// Chunks of rounds, rounds ascending ([`LADDER`]).
    pub(crate) chunks: Vec<crate::worker::Chunk>,
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
            let tail = match (kind, bodies.as_slice()) {
                (CondKind::While, [body]) if !rendering.iter().any(|&r| r) => self.loop_tail(body, cond),
                _ => None,
            };
            let loop_words = match kind {
                CondKind::While => match Buffer::loop_words(&self.ctx, 2 * LOOP_WINDOW) {
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
                    // With a loop predicate each instance binds both windows: it reads its
                    // own and writes the other's (tail.rs).
                    let instances: Vec<Enclosing> = if parities.is_empty() {
                        vec![enclosing]
                    } else {
                        (0..2u64)
                            .map(|p| {
                                let (window, control, expect) = match tail {
                                    Some(element) => ((0, LOOP_WINDOW + 8), tail::mode3_of(p), element),
                                    None => ((p * LOOP_WINDOW, 8), nonzero(0), 0),
                                };
                                let buffer = parities[0].buffer;
                                Enclosing { preds: buffer, buffer, window, control, expect }
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
                    tail: tail.is_some(),
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
                b.kernels
                    .get(l.kernel as usize)
                    .is_none_or(|k| !k.layout.slots.last().is_some_and(MemorySlot::is_predicate))
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
            if let Some(l) = c.looping.take() {
                // SAFETY: no submission using the semaphore is pending (the caller's contract).
                unsafe { self.ctx.device.destroy_semaphore(l.sem, None) };
            }
        }
        state.preds.destroy(&self.ctx);
    }

    /// The predicate kernel's descriptor sets and the `while` nodes' semaphores, once the
    /// executable has its pools. `enclosing`: see
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
                c.set = exe.sets.allocate(&self.ctx, kernel.set_layout(), 3, exe.set_count.max(1))?;
                let window = (own, u64::from(c.word) * 4, u64::from(space(c.kind, c.words as usize)) * 4);
                predicate::write_set(&self.ctx, c.set.1, [whole(c.cond.0), whole(enclosing.unwrap_or(own)), window]);
            }
            if let (CondKind::While, Some(words)) = (c.kind, &c.loop_words) {
                let mut l = loop_resources(&self.ctx)?;
                for (p, slot) in l.sets.iter_mut().enumerate() {
                    *slot = exe.sets.allocate(&self.ctx, kernel.set_layout(), 3, exe.set_count.max(1))?;
                    let window = (words.buffer, p as u64 * LOOP_WINDOW, 8);
                    predicate::write_set(&self.ctx, slot.1, [whole(c.cond.0), window, window]);
                }
                c.looping = Some(l);
            }
        }
        Ok(())
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
            let how = if c.tail { "a predicated kernel that writes the next round's predicate itself" } else { how };
            let text = match (&c.looping, c.kind) {
                (Some(l), _) => format!(
                    "while: {how}{}; rounds in chunks of {}, a submission as many as the last run took ({FIRST_ROUNDS} the first time), then doubling while the host reads that the loop still runs",
                    if l.split { ", the next round's inside the body after its last write of the condition" } else { "" },
                    l.chunks.iter().map(|m| m.rounds.to_string()).collect::<Vec<_>>().join(", ")
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

/// A `while` node's semaphore (its words are made with the node).
fn loop_resources(ctx: &Context) -> Result<LoopRes> {
    let mut type_info =
        vk::SemaphoreTypeCreateInfo::default().semaphore_type(vk::SemaphoreType::TIMELINE).initial_value(0);
    // SAFETY: a valid create info on a live device.
    let sem =
        unsafe { ctx.device.create_semaphore(&vk::SemaphoreCreateInfo::default().push_next(&mut type_info), None) }?;
    Ok(LoopRes {
        chunks: Vec::new(),
        sets: [(vk::DescriptorPool::null(), vk::DescriptorSet::null()); 2],
        last: Arc::new(AtomicU64::new(0)),
        split: false,
        sem,
        counter: Arc::new(AtomicU64::new(0)),
    })
}
