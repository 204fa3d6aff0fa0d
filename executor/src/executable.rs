//! Executable graphs: finalize (resources, argument blocks, pre-recorded command buffers),
//! run (submission with a timeline semaphore, host-task segments) and updates that rewrite
//! memory instead of re-recording (docs/executor.md).
#![allow(unsafe_code)]

use crate::args::{encode, Encoded, Limits, Place as ArgPlace, Target};
use crate::barriers::{Effect, SegmentPlan};
use crate::error::{ExecError, Result};
use crate::exec::{ExecId, Executor, RecordOptions};
use crate::profile::Queries;
use crate::schedule::{self, Seg};
use crate::vk::buffer::full_barrier;
use crate::vk::{Buffer, Context, Place};
use crate::worker::{wait_timeline, Step};
use ash::vk;
use cmdgraph_ir::footprint::Footprint;
use cmdgraph_ir::{
    Alternative, Arg, ArgValue, Graph, Handle, HostTaskCommand, KernelCommand, Launch, MemRef, Node, NodeKind,
};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

mod alts;
pub(crate) mod conditional;
pub(crate) mod copies;
mod effects;
mod lifetimes;
pub(crate) mod plan;
mod record;
mod sets;
mod waits;

/// Which kernel resources: (node index, alternative index of a `dynamic` node; `None` for a
/// kernel node). Stable for the executable's life: updates change a [`KNode`]'s command,
/// never which alternative's resources it is.
pub(crate) type KKey = (usize, Option<u32>);

/// Alignment of graph allocations when the bundle has no pool plan.
const DEFAULT_ALIGN: u64 = 256;

/// A kernel node's resources.
pub(crate) struct KNode {
    /// The command as it now stands (active alternative, updated launch).
    pub(crate) cmd: KernelCommand,
    /// Index into the bundle's kernels (and the executor's pipelines).
    pub(crate) variant: usize,
    pub(crate) args_off: u64,
    pub(crate) ind_off: u64,
    pub(crate) desc_pool: vk::DescriptorPool,
    pub(crate) set: vk::DescriptorSet,
    /// The buffer, offset and range bound now at bindings 0, 1, ... (to rewrite only what
    /// changed; a range alone changes when a pointer moves to memory of another size).
    pub(crate) bound: Vec<(vk::Buffer, u64, u64)>,
    /// The device segment that records it.
    pub(crate) segment: usize,
    /// The alternative of a `dynamic` node these resources belong to (`None`: a kernel node).
    pub(crate) alt: Option<u32>,
    /// What its dispatch reads and writes with the arguments it holds now (set by prepare).
    pub(crate) effect: Option<Effect>,
    /// Recorded as `vkCmdDispatch` with `groups` rather than from its indirect command: a
    /// kernel node of a graph without `updatable`. NVIDIA's driver pays for every indirect
    /// dispatch at each `vkQueueSubmit` (docs/executor.md, "Recording"), while updates, which
    /// indirect commands make free, need the property (a launch change of a direct node
    /// re-records its segment).
    pub(crate) direct: bool,
    /// The group counts a direct dispatch was recorded with.
    pub(crate) groups: [u32; 3],
}

/// One executable graph.
pub(crate) struct Executable {
    pub(crate) graph: Handle<Graph>,
    pub(crate) device: u32,
    pub(crate) sched: Vec<Seg>,
    /// Per copy, one command buffer per device segment (null for host segments): two
    /// copies used by runs in turn, or one simultaneous-use copy (`RecordOptions`).
    pub(crate) cmds: Vec<Vec<vk::CommandBuffer>>,
    /// Copies recorded so far (`cmds[..live_copies]`). Finalize records the first only; the
    /// second is recorded by the first run that finds the first still in flight, so a
    /// graph whose runs never overlap never pays for it.
    pub(crate) live_copies: usize,
    /// How it was recorded (the executor's options at finalize).
    pub(crate) options: RecordOptions,
    /// Per segment, the barriers its command buffers were recorded with.
    pub(crate) plans: Vec<Option<SegmentPlan>>,
    /// (segment, node index) of kernels whose memory effect grew since recording (updates).
    pub(crate) stale_nodes: BTreeSet<(usize, usize)>,
    /// Per segment, the recorded effects by stretch and buffer (for updates).
    pub(crate) indexes: Vec<Option<crate::barriers::SegmentIndex>>,
    /// Per segment, the nodes its command buffers record, in order.
    pub(crate) orders: Vec<Vec<Handle<Node>>>,
    /// Per node index, its position in its segment's `orders` (`u32::MAX`: records nothing).
    pub(crate) positions: Vec<u32>,
    /// Segments whose direct dispatches changed group counts since recording (updates).
    pub(crate) must_record: BTreeSet<usize>,
    /// Per copy, the timeline value the last run that submitted it signals.
    pub(crate) copy_end: Vec<u64>,
    /// Runs submitted (once both copies are live, the next run uses copy `runs % cmds.len()`).
    pub(crate) runs: u64,
    /// Whether the last run was one submission to the queue that signals `submitted`: the
    /// next run then needs no wait on the timeline, since queue order and its segments'
    /// opening barriers (after all earlier work) order it after that run. A run through the
    /// host-task thread may signal from the host, which only a semaphore wait orders.
    pub(crate) queue_ordered: bool,
    /// The kernel each node runs now (a `dynamic` node: its active alternative's resources).
    pub(crate) kernels: BTreeMap<usize, KNode>,
    /// The other kernel alternatives of `dynamic` nodes, recorded next to the active one with
    /// group counts (0, 0, 0): (node index, alternative index) → resources.
    pub(crate) spare: BTreeMap<(usize, u32), KNode>,
    /// Per dynamic parameter (by index): the kernel resources whose command names it.
    pub(crate) users: Vec<BTreeSet<KKey>>,
    /// Per dynamic command group (by index): the nodes that run it.
    pub(crate) dcg_nodes: Vec<Vec<usize>>,
    /// (is a dynamic command group, name) → index: dynamic parameters (`false`) and groups
    /// (`true`) by name, so an update finds its target without scanning the graph.
    pub(crate) names: BTreeMap<(bool, String), usize>,
    /// What a run does, built at finalize (rebuilt by a host-task update): one step per
    /// segment, or the error `run` reports for a host task whose memory cannot be resolved.
    /// Per copy of the command buffers.
    pub(crate) steps: Vec<Vec<Result<Step>>>,
    /// Per copy, the device segments' command buffers in order, as one submission takes them.
    pub(crate) device_cbs: Vec<Vec<vk::CommandBufferSubmitInfo<'static>>>,
    /// Whether any segment is a host task (then runs go to the host-task thread).
    pub(crate) has_host: bool,
    /// Times `steps` was built (finalize, updates that change a host task).
    pub(crate) plans_built: u64,
    /// Segments the last `run` walked.
    pub(crate) last_run_steps: u64,
    pub(crate) pool: Option<Buffer>,
    /// async_malloc node index → (name, byte offset, size).
    pub(crate) allocs: BTreeMap<usize, (String, u64, u64)>,
    pub(crate) args: Buffer,
    pub(crate) indirect: Buffer,
    /// Fill patterns for fills `vkCmdFillBuffer` cannot do (node index → offset).
    pub(crate) consts: Option<Buffer>,
    pub(crate) const_offs: BTreeMap<usize, u64>,
    pub(crate) cmd_pool: vk::CommandPool,
    pub(crate) timeline: vk::Semaphore,
    /// The descriptor pools every kernel resource's set comes from.
    pub(crate) sets: sets::SetPools,
    /// Footprints by (kernel index, launch): a footprint depends on nothing else, and
    /// thousands of nodes launch the same kernel the same way.
    pub(crate) footprints: std::cell::RefCell<HashMap<(usize, Launch), Arc<Footprint>>>,
    /// Kernel resources at finalize: the size of the first descriptor pool.
    pub(crate) set_count: u32,
    /// The timeline value the last submitted work signals.
    pub(crate) submitted: u64,
    /// Runs submitted, and how many of them are known complete.
    pub(crate) runs_submitted: u64,
    pub(crate) runs_completed: u64,
    /// Per run not yet known complete, oldest first: the timeline value it signals last and
    /// its host-task job's sequence number (0: it had none).
    pub(crate) run_tickets: std::collections::VecDeque<(u64, u64)>,
    pub(crate) dyn_values: Vec<ArgValue>,
    pub(crate) active: Vec<u32>,
    /// Host-task commands replaced by updates (node index → command).
    pub(crate) hosts: BTreeMap<usize, HostTaskCommand>,
    /// Command buffers recorded so far (finalize included).
    pub(crate) recorded: u64,
    /// Timestamp queries (graphs with `enable_profiling` on devices with timestamps).
    pub(crate) queries: Option<Queries>,
    /// Host time of the last run's submission (ns since the executor was created).
    pub(crate) submit_ns: Option<u64>,
    /// Room for overlapping memcpys, which copy through it (memmove, as the interpreter).
    pub(crate) scratch: Option<Buffer>,
    /// Overlapping memcpy node index → its byte offset in `scratch`.
    pub(crate) scratch_offs: BTreeMap<usize, u64>,
    /// Where graph allocations are live, for pointer updates (built by the first one).
    pub(crate) lifetimes: lifetimes::Lifetimes,
    /// The copy kernel's descriptor sets (copies.rs).
    pub(crate) copy_sets: std::cell::RefCell<copies::CopySets>,
    /// Conditional nodes' bodies and predicate words (conditional.rs); `None` without any.
    pub(crate) cond: Option<conditional::CondState>,
    /// This executable is a conditional node's body: recorded inline by the node, never run
    /// on its own.
    pub(crate) is_body: bool,
    /// What the predicate slot of its predicated kernel variants is bound to and tests
    /// (conditional.rs): a body's predicate, or "always run" for a graph of its own.
    pub(crate) predicate: conditional::PredicateBinding,
}

impl Executable {
    pub(crate) fn destroy(&mut self, ctx: &Context) {
        // SAFETY: the executor waits for the device before destroying executables.
        unsafe {
            ctx.device.destroy_command_pool(self.cmd_pool, None);
            ctx.device.destroy_semaphore(self.timeline, None);
        }
        self.sets.destroy(ctx);
        self.copy_sets.get_mut().reset(ctx);
        if let Some(q) = &self.queries {
            q.destroy(ctx);
        }
        if let Some(b) = self.scratch.as_mut() {
            b.destroy(ctx);
        }
        for b in [Some(&mut self.args), Some(&mut self.indirect), self.pool.as_mut(), self.consts.as_mut()]
            .into_iter()
            .flatten()
        {
            b.destroy(ctx);
        }
    }

    fn place(&self, ex: &Executor, mem: MemRef, offset: u64) -> Result<ArgPlace> {
        match mem {
            MemRef::Memory(_) => ex.place_user(mem, offset),
            MemRef::Alloc(n) => {
                let (name, base, size) = self
                    .allocs
                    .get(&n.index())
                    .ok_or_else(|| ExecError::Invalid("pointer to an unknown allocation".into()))?;
                if offset > *size {
                    return Err(ExecError::Invalid(format!("offset {offset} past allocation %{name}")));
                }
                let elem =
                    match ex.loaded.module.graphs.try_get(self.graph).and_then(|g| g.nodes.try_get(n)).map(|n| &n.kind)
                    {
                        Some(NodeKind::AsyncMalloc { elem, .. }) => elem.size(),
                        _ => 1,
                    };
                let buffer_size = self.pool.as_ref().map_or(base + size, |b| b.size);
                Ok(ArgPlace { target: Target::Pool, offset: base + offset, avail: size - offset, elem, buffer_size })
            }
        }
    }

    fn buffer_of<'a>(&'a self, ex: &'a Executor, t: &Target) -> Result<&'a Buffer> {
        match t {
            Target::User(i) => ex.memories.get(*i).and_then(|b| b.as_ref()),
            Target::Pool => self.pool.as_ref(),
            Target::Global(name) => ex.globals.get(&(self.device, name.clone())),
            Target::Predicate => Some(&self.predicate.buffer),
        }
        .ok_or_else(|| ExecError::Invalid(format!("no buffer for {t:?}")))
    }

    fn args_of(&self, cmd: &KernelCommand) -> Result<Vec<ArgValue>> {
        cmd.args
            .iter()
            .map(|a| match a {
                Arg::Value(v) => Ok(v.clone()),
                Arg::Dyn(h) => {
                    self.dyn_values.get(h.index()).cloned().ok_or_else(|| ExecError::Ir("bad dynamic parameter".into()))
                }
            })
            .collect()
    }
}

/// The kernel command a node runs now (`None` for non-kernel nodes).
fn kernel_cmd(graph: &Graph, node: Handle<Node>, active: &[u32]) -> Result<Option<KernelCommand>> {
    match &graph.nodes[node].kind {
        NodeKind::Kernel(c) => Ok(Some(c.clone())),
        NodeKind::Dynamic { dcg } => {
            let d = graph.dcgs.try_get(*dcg).ok_or_else(|| ExecError::Ir("bad dynamic command group".into()))?;
            let i = active.get(dcg.index()).copied().unwrap_or(d.active);
            match d.alternatives.get(i as usize) {
                Some(Alternative::Kernel(c)) => Ok(Some(c.clone())),
                Some(_) => Ok(None),
                None => Err(ExecError::Invalid(format!("%{}: no alternative {i}", d.name))),
            }
        }
        _ => Ok(None),
    }
}

pub(crate) fn check_cmd_supported(graph: &Graph, node: Handle<Node>) -> Result<()> {
    let n = &graph.nodes[node];
    match &n.kind {
        NodeKind::Subgraph { .. } => Err(ExecError::Invalid(format!(
            "%{}: sub-graph nodes must be inlined by the pass pipeline (inline-subgraphs) before codegen",
            n.name
        ))),
        _ => Ok(()),
    }
}

impl Executor {
    pub(crate) fn exec_ref(&self, id: ExecId) -> Result<&Executable> {
        self.execs.get(id.0).and_then(|e| e.as_ref()).ok_or_else(|| ExecError::Unknown(format!("executable {}", id.0)))
    }

    /// Runs `f` with the executable taken out of the executor (so both can be borrowed).
    pub(crate) fn with_exec<T>(
        &mut self,
        id: ExecId,
        f: impl FnOnce(&mut Executor, &mut Executable) -> Result<T>,
    ) -> Result<T> {
        let mut ex = self
            .execs
            .get_mut(id.0)
            .and_then(|e| e.take())
            .ok_or_else(|| ExecError::Unknown(format!("executable {}", id.0)))?;
        let r = f(self, &mut ex);
        if let Some(slot) = self.execs.get_mut(id.0) {
            *slot = Some(ex);
        }
        r
    }

    /// [`with_exec`](Self::with_exec) for an update: afterwards (whether it succeeded or
    /// was rolled back) the recording is brought up to date ([`refresh_recording`]).
    ///
    /// [`refresh_recording`]: Self::refresh_recording
    pub(crate) fn with_exec_update<T>(
        &mut self,
        id: ExecId,
        f: impl FnOnce(&mut Executor, &mut Executable) -> Result<T>,
    ) -> Result<T> {
        self.with_exec(id, |ex, exe| {
            let r = f(ex, exe);
            let refreshed = ex.refresh_recording(exe);
            let t = r?;
            refreshed.map(|()| t)
        })
    }

    /// The compiled variant a launch of node `node` (alternative `alt` of a dynamic node)
    /// of graph `graph` runs ([`Loaded::variant_of`](crate::Loaded::variant_of), which the
    /// loader also checks every launch with).
    pub(crate) fn variant_of(
        &self,
        graph: &str,
        node: &str,
        alt: Option<u32>,
        kernel: &str,
        launch: &Launch,
    ) -> Result<usize> {
        self.loaded.variant_of(graph, node, alt, kernel, launch)
    }

    /// Makes an executable of graph `name`: graph memory (pool at the planned offsets,
    /// `zero_init` done here only), argument blocks, descriptor sets, command buffers.
    pub fn finalize(&mut self, name: &str) -> Result<ExecId> {
        self.finalize_in(name, None)
    }

    /// [`finalize`](Self::finalize) of a graph, or of a conditional node's body (`enclosing`:
    /// its predicate, and the predicate buffer of the executable holding the node; nothing is
    /// recorded then).
    pub(crate) fn finalize_in(&mut self, name: &str, enclosing: Option<conditional::Enclosing>) -> Result<ExecId> {
        self.worker.drain(self.ctx.timeout())?;
        let name = name.strip_prefix('@').unwrap_or(name);
        let gh = self.loaded.module.graph_by_name(name).ok_or_else(|| ExecError::Unknown(format!("graph @{name}")))?;
        one_device(&self.loaded.module.graphs[gh], self.ctx.device_name())?;
        let mut cond = self.prepare_conditionals(gh, enclosing.is_some())?;
        let made = self.finalize_graph(gh, name, enclosing, &mut cond);
        if let Some(c) = cond.take() {
            self.free_conditionals(c);
        }
        made
    }

    /// The rest of [`finalize_in`](Self::finalize_in), with the conditional nodes' resources
    /// (taken into the executable, or left in `cond` on an error for the caller to free).
    fn finalize_graph(
        &mut self,
        gh: Handle<Graph>,
        name: &str,
        enclosing: Option<conditional::Enclosing>,
        cond: &mut Option<conditional::CondState>,
    ) -> Result<ExecId> {
        // Device globals used by any kernel variant exist before encoding (first: this
        // needs the executor mutably, what follows borrows the graph from it).
        let device = self.loaded.module.graphs[gh].device;
        let globals: Vec<String> = self
            .loaded
            .bundle
            .kernels
            .iter()
            .flat_map(|k| k.layout.slots.iter())
            .filter_map(|s| match s {
                cmdgraph_ir::bundle::MemorySlot::DeviceGlobal { name, .. } => Some(name.clone()),
                _ => None,
            })
            .collect();
        for g in globals {
            self.global(device, &g)?;
        }
        if self.wants_copy_kernels(&self.loaded.module.graphs[gh]) {
            self.copy_kernels = Some(crate::vk::copy::CopyKernels::new(&self.ctx, self.cache)?);
        }
        // Borrowed, not cloned (a clone of a 10^6-node graph was 5% of finalize).
        let graph = &self.loaded.module.graphs[gh];
        for h in graph.nodes.handles() {
            check_cmd_supported(graph, h)?;
        }
        let plan = self.loaded.bundle.graphs.iter().find(|p| p.name == name);
        let sched = match &plan {
            Some(p) if !p.segments.is_empty() => schedule::from_plan(graph, &p.segments)?,
            _ => schedule::plan(graph)?,
        };
        // Graph memory: planned offsets, or one allocation after another.
        let mut allocs = BTreeMap::new();
        let mut pool_size = 0u64;
        let mut zero = Vec::new();
        // The plan's offsets by node name: one pass over the plan, not a scan per allocation.
        let planned: Option<std::collections::HashMap<&str, u64>> = plan
            .as_ref()
            .filter(|p| p.memory.size > 0 || !p.memory.offsets.is_empty())
            .map(|p| p.memory.offsets.iter().map(|(nn, o)| (nn.trim_start_matches('%'), *o)).collect());
        for (h, n) in graph.nodes.iter() {
            if let NodeKind::AsyncMalloc { elem, count, zero_init, .. } = &n.kind {
                let size = elem.size().saturating_mul(*count);
                let off = match &planned {
                    Some(offsets) => offsets
                        .get(n.name.as_str())
                        .copied()
                        .ok_or_else(|| ExecError::Bundle(format!("pool plan misses %{}", n.name)))?,
                    None => pool_size.next_multiple_of(DEFAULT_ALIGN),
                };
                let end = off.checked_add(size).ok_or_else(|| ExecError::Bundle("pool offset overflows".into()))?;
                if let Some(p) = &plan {
                    if p.memory.size > 0 && end > p.memory.size {
                        return Err(ExecError::Bundle(format!(
                            "%{} ends at {end}, past the pool ({})",
                            n.name, p.memory.size
                        )));
                    }
                }
                pool_size = pool_size.max(end);
                if *zero_init {
                    zero.push((off, size));
                }
                allocs.insert(h.index(), (n.name.clone(), off, size));
            }
        }
        if let Some(p) = &plan {
            pool_size = pool_size.max(p.memory.size);
        }
        let ctx = &self.ctx;
        let min_align = ctx.props.limits.min_storage_buffer_offset_alignment.max(4);
        // Argument block and indirect offsets per kernel node and per kernel alternative of a
        // `dynamic` node (each with room for the largest variant of any of the node's kernels:
        // a node update may give one alternative's resources another alternative's command).
        let mut layout = Vec::new();
        let (mut args_size, mut ind_size) = (0u64, 0u64);
        let active: Vec<u32> = graph.dcgs.iter().map(|(_, d)| d.active).collect();
        for (si, seg) in sched.iter().enumerate() {
            let Seg::Device(stages) = seg else { continue };
            for &h in stages.iter().flatten() {
                let alts: Vec<(Option<u32>, &KernelCommand)> = match &graph.nodes[h].kind {
                    NodeKind::Kernel(c) => vec![(None, c)],
                    NodeKind::Dynamic { dcg } => graph.dcgs[*dcg]
                        .alternatives
                        .iter()
                        .enumerate()
                        .filter_map(|(i, a)| match a {
                            Alternative::Kernel(c) => Some((Some(i as u32), c)),
                            _ => None,
                        })
                        .collect(),
                    _ => continue,
                };
                let mut block = 0u64;
                for (_, c) in &alts {
                    let kname = &self.loaded.module.kernels[c.kernel].name;
                    for k in self.loaded.bundle.kernels.iter().filter(|k| &k.kernel == kname) {
                        block = block.max(u64::from(k.layout.block_size));
                    }
                }
                for (alt, _) in alts {
                    let args_off = args_size.next_multiple_of(min_align);
                    args_size = args_off + block.max(32);
                    layout.push((h, si, alt, args_off, ind_size));
                    ind_size += 12;
                }
            }
        }
        // Fill patterns that vkCmdFillBuffer cannot express.
        let mut consts_bytes = Vec::new();
        let mut const_offs = BTreeMap::new();
        for (h, n) in graph.nodes.iter() {
            let (dst, pattern, total) = match &n.kind {
                NodeKind::Memset { dst, value, bytes } => (dst, vec![*value], *bytes),
                NodeKind::Memfill { dst, pattern, count } => {
                    let ty = pattern
                        .ty
                        .map(cmdgraph_ir::Type::scalar)
                        .ok_or_else(|| ExecError::Ir(format!("%{}: untyped pattern", n.name)))?;
                    let p = crate::args::scalar_bytes(pattern.value, ty.scalar)
                        .ok_or_else(|| ExecError::Ir(format!("%{}: pattern does not fit", n.name)))?;
                    let total = (p.len() as u64).saturating_mul(*count);
                    (dst, p, total)
                }
                _ => continue,
            };
            if fill_word(&pattern, dst.offset, total).is_none() && total > 0 {
                let off = (consts_bytes.len() as u64).next_multiple_of(4);
                consts_bytes.resize(off as usize, 0);
                consts_bytes.extend(pattern.iter().cycle().take(total as usize));
                const_offs.insert(h.index(), off);
            }
        }
        let mut res = Resources::new(ctx, args_size, ind_size, pool_size, &consts_bytes, !allocs.is_empty())?;
        // The pool starts poisoned (0xCD, as the interpreter) with zero_init ranges zeroed.
        if let Some(pool) = &res.pool {
            let r = self.transfers.run(ctx, |d, cb| {
                // SAFETY: the pool is live; the ranges were checked against its size.
                unsafe {
                    d.cmd_fill_buffer(cb, pool.buffer, 0, vk::WHOLE_SIZE, 0xCDCD_CDCD);
                    full_barrier(d, cb, vk::PipelineStageFlags2::TRANSFER, vk::PipelineStageFlags2::TRANSFER);
                    for &(off, size) in &zero {
                        fill_any(d, cb, pool.buffer, off, size, 0);
                    }
                }
            });
            if let Err(e) = r {
                res.destroy(ctx);
                return Err(e);
            }
        }
        let options = self.recording;
        let queries = match Queries::new(&self.ctx, graph, &sched, options.node_profiling) {
            Ok(q) => q,
            Err(e) => {
                res.destroy(&self.ctx);
                return Err(e);
            }
        };
        let (scratch_offs, scratch_size) = overlapping_copies(graph, &allocs);
        let scratch = match scratch_size {
            0 => None,
            n => match Buffer::new(&self.ctx, n, Place::Device) {
                Ok(b) => Some(b),
                Err(e) => {
                    res.destroy(&self.ctx);
                    if let Some(q) = &queries {
                        q.destroy(&self.ctx);
                    }
                    return Err(e);
                }
            },
        };
        let Resources { args, indirect, pool, consts, cmd_pool, timeline } = res;
        // A graph of its own binds its predicated variants' predicate slot to its argument
        // blocks (any live buffer: the kernels do not read it in mode 0).
        let args_view = Buffer::imported(args.buffer, 0, args.size);
        let max_bindings = self.pipelines.iter().map(|p| p.bindings).max().unwrap_or(1);
        let has_host = sched.iter().any(|s| matches!(s, Seg::Host(_) | Seg::Loop(_)));
        let copies = if options.simultaneous_use || has_host { 1 } else { 2 };
        let mut exe = Executable {
            graph: gh,
            device,
            // A graph with host tasks runs segment by segment from the host-task thread,
            // which cannot tell when a copy is free again: it keeps one simultaneous-use copy.
            cmds: vec![vec![vk::CommandBuffer::null(); sched.len()]; copies],
            live_copies: 1,
            queue_ordered: true,
            options: RecordOptions { simultaneous_use: copies == 1, ..options },
            plans: vec![None; sched.len()],
            stale_nodes: BTreeSet::new(),
            orders: vec![Vec::new(); sched.len()],
            indexes: vec![None; sched.len()],
            positions: vec![u32::MAX; graph.nodes.len()],
            must_record: BTreeSet::new(),
            copy_end: vec![0; copies],
            runs: 0,
            sched,
            kernels: BTreeMap::new(),
            spare: BTreeMap::new(),
            users: vec![BTreeSet::new(); graph.dyn_params.len()],
            dcg_nodes: vec![Vec::new(); graph.dcgs.len()],
            names: graph
                .dyn_params
                .iter()
                .map(|(h, p)| ((false, p.name.clone()), h.index()))
                .chain(graph.dcgs.iter().map(|(h, d)| ((true, d.name.clone()), h.index())))
                .collect(),
            steps: Vec::new(),
            device_cbs: Vec::new(),
            has_host: false,
            plans_built: 0,
            last_run_steps: 0,
            pool,
            allocs,
            args,
            indirect,
            consts,
            const_offs,
            cmd_pool,
            timeline,
            sets: sets::SetPools::new(max_bindings),
            footprints: Default::default(),
            set_count: layout.len() as u32,
            submitted: 0,
            runs_submitted: 0,
            runs_completed: 0,
            run_tickets: Default::default(),
            dyn_values: graph.dyn_params.iter().map(|(_, p)| p.value.clone()).collect(),
            active,
            hosts: BTreeMap::new(),
            recorded: 0,
            queries,
            submit_ns: None,
            scratch,
            scratch_offs,
            lifetimes: Default::default(),
            copy_sets: Default::default(),
            cond: cond.take(),
            is_body: enclosing.is_some(),
            predicate: conditional::PredicateBinding::of(enclosing.as_ref(), &args_view),
        };
        let mut native = std::mem::take(&mut self.native);
        let built = (|| {
            for (h, si, alt, args_off, ind_off) in layout {
                let node = &graph.nodes[h];
                let (cmd, active) = match (&node.kind, alt) {
                    (NodeKind::Kernel(c), None) => (c.clone(), true),
                    (NodeKind::Dynamic { dcg }, Some(i)) => {
                        let d = &graph.dcgs[*dcg];
                        let Some(Alternative::Kernel(c)) = d.alternatives.get(i as usize) else { continue };
                        let now = exe.active.get(dcg.index()).copied().unwrap_or(d.active);
                        (c.clone(), now == i)
                    }
                    _ => continue,
                };
                let kname = &self.loaded.module.kernels[cmd.kernel].name;
                let variant = self.variant_of(&graph.name, &node.name, alt, kname, &cmd.launch);
                let variant = match (variant, active) {
                    (Ok(v), _) => v,
                    (Err(e), true) => return Err(e),
                    // An alternative that cannot run as recorded is left out: switching to
                    // it takes the re-recording path, which reports the error then.
                    (Err(_), false) => continue,
                };
                let mut k = KNode {
                    cmd,
                    variant,
                    args_off,
                    ind_off,
                    desc_pool: vk::DescriptorPool::null(),
                    set: vk::DescriptorSet::null(),
                    bound: Vec::new(),
                    segment: si,
                    alt,
                    effect: None,
                    direct: !graph.properties.updatable && alt.is_none(),
                    groups: [0; 3],
                };
                // Prepared before it is stored: one map insertion per node.
                let prepared = self.prepare_k(&mut exe, h.index(), &mut k, active, true);
                if active {
                    exe.kernels.insert(h.index(), k);
                    prepared?;
                } else if let Some(i) = alt {
                    match prepared {
                        Ok(_) => {
                            exe.spare.insert((h.index(), i), k);
                        }
                        // Nothing recorded the set yet.
                        Err(_) => exe.sets.free(&self.ctx, k.desc_pool, k.set),
                    }
                }
            }
            exe.reindex();
            for (h, n) in graph.nodes.iter() {
                if let NodeKind::Dynamic { dcg } = n.kind {
                    if let Some(v) = exe.dcg_nodes.get_mut(dcg.index()) {
                        v.push(h.index());
                    }
                }
            }
            self.conditional_resources(&mut exe, enclosing.as_ref().map(|e| e.preds))?;
            if exe.is_body {
                return Ok(());
            }
            for si in 0..exe.sched.len() {
                self.record_with(&mut exe, si, &mut native)?;
            }
            self.build_steps(&mut exe);
            Ok(())
        })();
        self.native = native;
        if let Err(e) = built {
            *cond = exe.cond.take();
            exe.destroy(&self.ctx);
            return Err(e);
        }
        self.execs.push(Some(exe));
        Ok(ExecId(self.execs.len() - 1))
    }

    /// [`prepare_key`](Self::prepare_key) for the kernel node `node` runs now.
    pub(crate) fn prepare_node(&self, exe: &mut Executable, node: usize, new_set: bool) -> Result<bool> {
        let alt = exe.kernels.get(&node).ok_or_else(|| ExecError::Invalid("not a kernel node".into()))?.alt;
        self.prepare_key(exe, (node, alt), new_set)
    }

    /// Encodes the argument block and indirect command of kernel resources `key` and
    /// rewrites the descriptors that changed; `new_set` allocates a descriptor set for its
    /// current variant first. An inactive alternative's group counts are (0, 0, 0). Returns
    /// whether a descriptor of an existing set changed (which, without UPDATE_AFTER_BIND,
    /// invalidates the command buffer that binds it).
    pub(crate) fn prepare_key(&self, exe: &mut Executable, key: KKey, new_set: bool) -> Result<bool> {
        let active = exe.is_active(key);
        let mut k = exe.take_knode(key)?;
        let r = self.prepare_k(exe, key.0, &mut k, active, new_set);
        exe.put_knode(key, active, k);
        r
    }

    fn prepare_k(&self, exe: &mut Executable, node: usize, k: &mut KNode, active: bool, new_set: bool) -> Result<bool> {
        let variant =
            self.loaded.bundle.kernels.get(k.variant).ok_or_else(|| ExecError::Bundle("bad variant".into()))?;
        let kernel = &self.loaded.module.kernels[k.cmd.kernel];
        let args = exe.args_of(&k.cmd)?;
        let lim = &self.ctx.props.limits;
        let limits = Limits {
            max_groups: lim.max_compute_work_group_count,
            max_range: u64::from(lim.max_storage_buffer_range),
            min_align: lim.min_storage_buffer_offset_alignment.max(4),
        };
        let Encoded { mut block, slots, mut windows, groups } =
            encode(kernel, variant, &k.cmd.launch, &args, &|m, o| exe.place(self, m, o), &limits)?;
        if variant.layout.slots.last().is_some_and(cmdgraph_ir::bundle::MemorySlot::is_predicate) {
            // Words 6 and 7: what the kernel's predicate test reads, and the window of the
            // predicate words it binds (conditional.rs).
            let p = &exe.predicate;
            if let Some(w) = block.get_mut(24..32) {
                w[..4].copy_from_slice(&p.control.to_le_bytes());
                w[4..].copy_from_slice(&p.expect.to_le_bytes());
            }
            if let Some(w) = windows.last_mut() {
                *w = p.window;
            }
        }
        let effect = self.kernel_effect(exe, k)?;
        if k.effect.as_ref() != Some(&effect) {
            // Recorded already and touching memory it did not: its stretch of the segment is
            // checked for a new conflict before the update returns. A footprint that stays
            // within the old one keeps every barrier valid.
            let grew = k.effect.as_ref().is_none_or(|old| !effect.within(old));
            if grew
                && exe.cmds.first().and_then(|c| c.get(k.segment)).is_some_and(|cb| *cb != vk::CommandBuffer::null())
            {
                exe.stale_nodes.insert((k.segment, node));
            }
            k.effect = Some(effect);
        }
        let mut buffers = Vec::with_capacity(slots.len());
        for t in &slots {
            buffers.push(exe.buffer_of(self, t)?.buffer);
        }
        let pipeline = self.pipelines.get(k.variant).ok_or_else(|| ExecError::Bundle("bad variant".into()))?;
        let (args_off, ind_off, block_size) = (k.args_off, k.ind_off, u64::from(variant.layout.block_size));
        let d = &self.ctx.device;
        if new_set {
            // The old set is referenced only by command buffers that are re-recorded before
            // their next submission, and the executable is idle here.
            exe.sets.free(&self.ctx, k.desc_pool, k.set);
            k.desc_pool = vk::DescriptorPool::null();
            k.set = vk::DescriptorSet::null();
            let (pool, set) = exe.sets.allocate(&self.ctx, pipeline.set_layout, pipeline.bindings, exe.set_count)?;
            k.desc_pool = pool;
            k.set = set;
            k.bound.clear();
        }
        let set = k.set;
        exe.args.write(args_off, &block)?;
        let groups = if active { groups } else { [0; 3] };
        if k.direct && k.groups != groups {
            if exe.cmds.first().and_then(|c| c.get(k.segment)).is_some_and(|cb| *cb != vk::CommandBuffer::null()) {
                exe.must_record.insert(k.segment);
            }
            k.groups = groups;
        }
        let ind: Vec<u8> = groups.iter().flat_map(|g| g.to_le_bytes()).collect();
        exe.indirect.write(ind_off, &ind)?;
        // Each memory slot reaches its own memory only (args::Limits::window, docs/abi.md
        // "Bounds").
        let mut want = vec![(exe.args.buffer, args_off, block_size)];
        want.extend(
            buffers
                .iter()
                .zip(&windows)
                .map(|(&b, &(off, r))| (b, off, if r == u64::MAX { vk::WHOLE_SIZE } else { r })),
        );
        let bound = &k.bound;
        let infos: Vec<(usize, [vk::DescriptorBufferInfo; 1])> = want
            .iter()
            .enumerate()
            .filter(|(i, w)| bound.get(*i) != Some(w))
            .map(|(i, &(buffer, offset, range))| (i, [vk::DescriptorBufferInfo { buffer, offset, range }]))
            .collect();
        let changed = !new_set && !infos.is_empty();
        k.bound = want;
        let writes: Vec<vk::WriteDescriptorSet> = infos
            .iter()
            .map(|(i, info)| {
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(*i as u32)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(info)
            })
            .collect();
        // SAFETY: the set and buffers are live; the bindings are UPDATE_AFTER_BIND and the
        // executable is idle, so recorded command buffers stay valid.
        unsafe { d.update_descriptor_sets(&writes, &[]) };
        Ok(changed)
    }

    /// Waits until the host-task thread is idle and `exe`'s timeline reaches `value`.
    pub(crate) fn wait_value(&self, exe: &Executable, value: u64) -> Result<()> {
        // A `while` node's run is on the host-task thread and short: poll for it on a GPU.
        let loops = exe.sched.iter().any(|s| matches!(s, Seg::Loop(_)));
        if loops && !self.ctx.wait_spin().is_zero() {
            self.worker.drain_spinning(crate::worker::LOOP_SPIN, self.ctx.timeout())?;
        } else {
            self.worker.drain(self.ctx.timeout())?;
        }
        wait_timeline(&self.ctx, exe.timeline, value)
    }

    /// Whether nothing this executor submitted is pending: the host-task thread is idle, no
    /// wait gave up on work still running, and every executable's timeline has reached its
    /// last run's value (transfers and eager commands wait for their own fences). Each
    /// segment's closing barrier made its writes visible to the host, so the host may then
    /// read and write user memory through its mapping.
    pub(crate) fn quiescent(&self) -> Result<bool> {
        if !self.worker.idle() || self.ctx.is_overdue() {
            return Ok(false);
        }
        for exe in self.execs.iter().flatten() {
            if exe.submitted > 0 && plan::timeline_value(&self.ctx, exe.timeline)? < exe.submitted {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Waits until every submitted run of `id` has finished.
    /// Reports the error of a run whose host task failed (once).
    pub fn wait(&self, id: ExecId) -> Result<()> {
        let exe = self.exec_ref(id)?;
        self.wait_value(exe, exe.submitted)?;
        self.worker.take_error(id.0).map_or(Ok(()), Err)
    }

    /// How many runs of `id` were submitted.
    pub fn submitted_runs(&self, id: ExecId) -> Result<u64> {
        Ok(self.exec_ref(id)?.runs_submitted)
    }

    /// How many runs of `id` are complete, without waiting (runs complete in order; a run
    /// is complete when its last device segment signalled and its host tasks are done).
    pub fn completed_runs(&mut self, id: ExecId) -> Result<u64> {
        self.with_exec(id, |ex, exe| {
            let (reached, done_jobs) = (plan::timeline_value(&ex.ctx, exe.timeline)?, ex.worker.done());
            while let Some(&(end, job)) = exe.run_tickets.front() {
                if reached < end || done_jobs < job {
                    break;
                }
                exe.run_tickets.pop_front();
                exe.runs_completed += 1;
            }
            Ok(exe.runs_completed)
        })
    }

    /// Command buffers recorded for `id` so far (finalize's included): updates that need no
    /// re-recording leave it unchanged.
    pub fn recorded(&self, id: ExecId) -> Result<u64> {
        Ok(self.exec_ref(id)?.recorded)
    }

    /// The Vulkan objects executable `id` holds (for tests of how finalize scales).
    pub fn vulkan_objects(&self, id: ExecId) -> Result<crate::exec::VulkanObjects> {
        let exe = self.exec_ref(id)?;
        let buffers =
            [Some(&exe.args), Some(&exe.indirect), exe.pool.as_ref(), exe.consts.as_ref(), exe.scratch.as_ref()]
                .into_iter()
                .flatten()
                .count();
        let (copy_pools, copy_sets) = exe.copy_sets.borrow().counts();
        Ok(crate::exec::VulkanObjects {
            command_buffers: exe.cmds.iter().flatten().filter(|c| **c != vk::CommandBuffer::null()).count(),
            buffers,
            memory_allocations: buffers,
            descriptor_pools: exe.sets.pools() + copy_pools,
            descriptor_sets: exe
                .kernels
                .values()
                .chain(exe.spare.values())
                .filter(|k| k.set != vk::DescriptorSet::null())
                .count()
                + copy_sets,
            pipelines: self.pipelines.len() + self.copy_kernels.as_ref().map_or(0, crate::vk::copy::CopyKernels::count),
        })
    }

    /// Pipeline barriers between commands in `id`'s command buffers (one copy; the barrier
    /// opening and the one closing each segment not counted): what its policy
    /// (`RecordOptions::barriers`) left the device to wait on.
    pub fn barriers(&self, id: ExecId) -> Result<u64> {
        Ok(self.exec_ref(id)?.plans.iter().flatten().map(|p| p.inner()).sum())
    }

    /// Times the per-run plan of `id` (its steps, its submission's command-buffer list) was
    /// built: once at finalize, again only by an update that changes a host task. `run`
    /// itself builds nothing (for tests and benchmarks).
    pub fn plans_built(&self, id: ExecId) -> Result<u64> {
        Ok(self.exec_ref(id)?.plans_built)
    }

    /// Segments the last `run` of `id` walked: its host work is this, whatever the number of
    /// nodes (for tests and benchmarks).
    pub fn last_run_steps(&self, id: ExecId) -> Result<u64> {
        Ok(self.exec_ref(id)?.last_run_steps)
    }

    /// The bytes of a graph allocation of an executable (after its submitted runs).
    pub fn read_alloc(&self, id: ExecId, node: &str) -> Result<Vec<u8>> {
        self.worker.drain(self.ctx.timeout())?;
        let exe = self.exec_ref(id)?;
        let node = node.trim_start_matches('%');
        let (_, off, size) = exe
            .allocs
            .values()
            .find(|a| a.0 == node)
            .ok_or_else(|| ExecError::Unknown(format!("allocation %{node}")))?;
        let pool = exe.pool.as_ref().ok_or_else(|| ExecError::Unknown(format!("allocation %{node}")))?;
        self.transfers.download(&self.ctx, pool, *off, *size)
    }

    /// Sets a dynamic parameter of executable `id` (update + `exec.update`): rewrites the
    /// argument blocks and descriptors of the nodes using it; re-records nothing. Waits for
    /// runs in flight, which keep the old value. A pointer to a graph allocation is refused
    /// ([`ExecError::AllocNotLive`], nothing changes) unless the allocation is live at every
    /// node that uses the parameter, inactive alternatives included.
    pub fn update_param(&mut self, id: ExecId, param: &str, value: ArgValue) -> Result<()> {
        let param = param.trim_start_matches('%').to_string();
        self.with_exec_update(id, |ex, exe| {
            let graph = &ex.loaded.module.graphs[exe.graph];
            let h = exe
                .names
                .get(&(false, param.clone()))
                .and_then(|&i| Handle::<cmdgraph_ir::DynParam>::from_usize(i))
                .filter(|&h| graph.dyn_params.try_get(h).is_some())
                .ok_or_else(|| ExecError::Unknown(format!("dynamic parameter %{param}")))?;
            let old = exe.dyn_values.get(h.index()).ok_or_else(|| ExecError::Ir("bad dynamic parameter".into()))?;
            if std::mem::discriminant(old) != std::mem::discriminant(&value) {
                return Err(ExecError::Invalid(format!("%{param}: the new value is of another kind")));
            }
            // A graph allocation must be live wherever the parameter is used (the window
            // alone is checked when the argument blocks are encoded).
            if let Some(alloc) = lifetimes::alloc_of(&value) {
                let nodes = exe.param_nodes(graph, h);
                ex.check_live(exe, &param, alloc, &nodes)?;
            }
            ex.wait_value(exe, exe.submitted)?;
            let previous = std::mem::replace(&mut exe.dyn_values[h.index()], value);
            // The kernels registered to it (nodes and `dynamic` alternatives), from the index
            // built at finalize: O(its registrations), not O(nodes).
            let users: Vec<KKey> = exe.users.get(h.index()).map(|u| u.iter().copied().collect()).unwrap_or_default();
            let mut stale = std::collections::BTreeSet::new();
            for &key in &users {
                let segment = exe.knode(key).map(|k| k.segment);
                match ex.prepare_key(exe, key, false) {
                    Ok(changed) => {
                        if changed && !ex.ctx.update_after_bind {
                            stale.extend(segment);
                        }
                    }
                    Err(e) => {
                        exe.dyn_values[h.index()] = previous;
                        for &m in &users {
                            let _ = ex.prepare_key(exe, m, false);
                        }
                        for &si in &stale {
                            let _ = ex.record(exe, si);
                        }
                        return Err(e);
                    }
                }
            }
            for si in stale {
                ex.record(exe, si)?;
            }
            Ok(())
        })
    }

    /// Changes the launch (range or nd-range) of kernel node `node`: the indirect command and
    /// argument header are rewritten; only a different work-group size (another compiled
    /// variant) re-records the node's segment.
    pub fn update_launch(&mut self, id: ExecId, node: &str, launch: Launch) -> Result<()> {
        let node = node.trim_start_matches('%').to_string();
        self.with_exec_update(id, |ex, exe| {
            let graph = &ex.loaded.module.graphs[exe.graph];
            let h = graph.node_by_name(&node).ok_or_else(|| ExecError::Unknown(format!("node %{node}")))?;
            let k = exe
                .kernels
                .get(&h.index())
                .ok_or_else(|| ExecError::Invalid(format!("%{node} is not a kernel node")))?;
            if k.cmd.launch.dims() != launch.dims() {
                return Err(ExecError::Invalid(format!("%{node}: a launch of other dimensions")));
            }
            if let Some((kernel, source)) = ex.specialised_kernel(exe, &node) {
                if source == launch {
                    return Ok(());
                }
                return Err(ExecError::Invalid(format!(
                    "%{node}: the optimizer specialised it to its launch (it runs @{kernel}), so the launch cannot change"
                )));
            }
            let kname = ex.loaded.module.kernels[k.cmd.kernel].name.clone();
            let alt = match &graph.nodes[h].kind {
                NodeKind::Dynamic { dcg } => exe.active.get(dcg.index()).copied(),
                _ => None,
            };
            let variant = ex.variant_of(&graph.name, &node, alt, &kname, &launch)?;
            ex.wait_value(exe, exe.submitted)?;
            ex.retarget(exe, h.index(), |k| {
                k.cmd.launch = launch;
                k.variant = variant;
            })
        })
    }

    /// Switches the active alternative of dynamic command group `dcg`. A node whose old and
    /// new alternatives are both kernels recorded at finalize re-records nothing: the old
    /// one's group counts become (0, 0, 0) and the new one's its launch's
    /// ([`activate`](Self::activate)). Otherwise (one finalize could not prepare) the node
    /// gets the alternative's command and pipeline, and its segment is re-recorded. A group
    /// of host tasks re-records nothing either: its nodes' run-plan steps name the new
    /// alternative's callback ([`activate_hosts`](Self::activate_hosts)).
    pub fn set_active(&mut self, id: ExecId, dcg: &str, index: u32) -> Result<()> {
        let dcg = dcg.trim_start_matches('%').to_string();
        self.with_exec_update(id, |ex, exe| {
            let graph = &ex.loaded.module.graphs[exe.graph];
            let (dh, d) = exe
                .names
                .get(&(true, dcg.clone()))
                .and_then(|&i| Handle::<cmdgraph_ir::graph::DynCommandGroup>::from_usize(i))
                .and_then(|h| graph.dcgs.try_get(h).map(|d| (h, d)))
                .ok_or_else(|| ExecError::Unknown(format!("dynamic command group %{dcg}")))?;
            if index as usize >= d.alternatives.len() {
                return Err(ExecError::Invalid(format!(
                    "%{dcg} has {} alternatives, not {}",
                    d.alternatives.len(),
                    index + 1
                )));
            }
            // A group's alternatives are all kernels or all host tasks (E0273).
            let host = d.alternatives.iter().any(|a| matches!(a, Alternative::HostTask(_)));
            ex.wait_value(exe, exe.submitted)?;
            let old = exe.active[dh.index()];
            exe.active[dh.index()] = index;
            let nodes = exe.dcg_nodes.get(dh.index()).cloned().unwrap_or_default();
            if host {
                ex.activate_hosts(exe, &nodes);
                return Ok(());
            }
            for n in nodes {
                let r = if exe.can_activate(n, index) {
                    ex.activate(exe, n, index)
                } else {
                    ex.switch_rerecording(exe, n, index)
                };
                if let Err(e) = r {
                    exe.active[dh.index()] = old;
                    return Err(e);
                }
            }
            Ok(())
        })
    }

    /// The re-recording switch of node `n` to alternative `index` (the group's active index
    /// is already `index`): the node's resources take the alternative's command.
    fn switch_rerecording(&mut self, exe: &mut Executable, n: usize, index: u32) -> Result<()> {
        let graph = &self.loaded.module.graphs[exe.graph];
        let h = Handle::from_usize(n).ok_or_else(|| ExecError::Ir("bad node".into()))?;
        let Some(cmd) = kernel_cmd(graph, h, &exe.active)? else { return Ok(()) };
        let kname = &self.loaded.module.kernels[cmd.kernel].name;
        let variant = self.variant_of(&graph.name, &graph.nodes[h].name, Some(index), kname, &cmd.launch)?;
        let key = (n, exe.kernels.get(&n).and_then(|k| k.alt));
        let was = exe.knode(key).map(|k| k.cmd.clone());
        let r = self.retarget(exe, n, |k| {
            k.cmd = cmd;
            k.variant = variant;
        });
        if let Some(was) = was {
            exe.reindex_key(key, &was);
        }
        r
    }

    /// Applies `change` to a kernel node; re-prepares it, and re-records its segment only if
    /// the pipeline changed. On error the node is restored.
    fn retarget(&mut self, exe: &mut Executable, node: usize, change: impl FnOnce(&mut KNode)) -> Result<()> {
        let k = exe.kernels.get_mut(&node).ok_or_else(|| ExecError::Invalid("not a kernel node".into()))?;
        let (old_cmd, old_variant, segment) = (k.cmd.clone(), k.variant, k.segment);
        change(k);
        let new_pipeline = k.variant != old_variant;
        let r = self.prepare_node(exe, node, new_pipeline).and_then(|changed| {
            if new_pipeline || (changed && !self.ctx.update_after_bind) {
                self.record(exe, segment)
            } else {
                Ok(())
            }
        });
        if r.is_err() {
            if let Some(k) = exe.kernels.get_mut(&node) {
                k.cmd = old_cmd;
                k.variant = old_variant;
            }
            let _ = self.prepare_node(exe, node, new_pipeline);
            let _ = self.record(exe, segment);
        }
        r
    }

    /// Destroys an executable after its runs finish.
    pub fn drop_exec(&mut self, id: ExecId) -> Result<()> {
        let exe = self.exec_ref(id)?;
        self.wait_value(exe, exe.submitted)?;
        // A failed run's error goes with the executable.
        let _ = self.worker.take_error(id.0);
        let mut exe = self
            .execs
            .get_mut(id.0)
            .and_then(|e| e.take())
            .ok_or_else(|| ExecError::Unknown(format!("executable {}", id.0)))?;
        if let Some(c) = exe.cond.take() {
            self.free_conditionals(c);
        }
        exe.destroy(&self.ctx);
        Ok(())
    }
}

/// The memcpy nodes whose source and destination overlap (the same user memory, or the
/// same pool bytes: allocations a plan placed on shared bytes count, as in the interpreter),
/// each with its own offset in a scratch buffer; and the scratch buffer's size.
fn overlapping_copies(graph: &Graph, allocs: &BTreeMap<usize, (String, u64, u64)>) -> (BTreeMap<usize, u64>, u64) {
    let at = |p: &cmdgraph_ir::Pointer| match p.base {
        MemRef::Memory(h) => Some((false, h.index(), p.offset)),
        MemRef::Alloc(n) => allocs.get(&n.index()).map(|a| (true, 0, a.1.saturating_add(p.offset))),
    };
    let (mut offs, mut size) = (BTreeMap::new(), 0u64);
    for (h, n) in graph.nodes.iter() {
        let NodeKind::Memcpy { dst, src, bytes } = &n.kind else { continue };
        if let (Some(d), Some(s)) = (at(dst), at(src)) {
            let overlap =
                d.0 == s.0 && d.1 == s.1 && d.2 < s.2.saturating_add(*bytes) && s.2 < d.2.saturating_add(*bytes);
            if *bytes > 0 && overlap {
                offs.insert(h.index(), size);
                size = size.saturating_add(*bytes).next_multiple_of(4);
            }
        }
    }
    (offs, size)
}

/// The 32-bit word `vkCmdFillBuffer` repeats for this fill, if the fill can be one.
fn fill_word(pattern: &[u8], offset: u64, total: u64) -> Option<u32> {
    if !offset.is_multiple_of(4) || !total.is_multiple_of(4) || pattern.is_empty() || 4 % pattern.len() != 0 {
        return None;
    }
    let b: Vec<u8> = pattern.iter().cycle().take(4).copied().collect();
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Fills any byte range with a byte value (4-aligned middle by `vkCmdFillBuffer`; the pool
/// is only zeroed at finalize, so unaligned edges use `vkCmdUpdateBuffer`-free fills of the
/// enclosing words, which were poisoned and are rewritten whole).
///
/// # Safety
/// `cb` is recording and the range is inside `buffer`.
unsafe fn fill_any(d: &ash::Device, cb: vk::CommandBuffer, buffer: vk::Buffer, off: u64, size: u64, byte: u8) {
    let start = off - off % 4;
    let end = (off + size).next_multiple_of(4);
    let word = u32::from_le_bytes([byte; 4]);
    if end > start {
        // SAFETY: the caller's contract; rounding to words stays inside the pool, whose
        // size is a multiple of 4.
        unsafe { d.cmd_fill_buffer(cb, buffer, start, end - start, word) };
    }
}

/// The per-executable Vulkan objects, destroyed together on an error during finalize.
struct Resources {
    args: Buffer,
    indirect: Buffer,
    pool: Option<Buffer>,
    consts: Option<Buffer>,
    cmd_pool: vk::CommandPool,
    timeline: vk::Semaphore,
}

impl Resources {
    fn new(ctx: &Context, args: u64, ind: u64, pool: u64, consts: &[u8], has_pool: bool) -> Result<Resources> {
        let mut made: Vec<Buffer> = Vec::new();
        let r = (|| {
            made.push(Buffer::new(ctx, args, Place::Shared)?);
            made.push(Buffer::new(ctx, ind, Place::Shared)?);
            let pool = if has_pool { Some(Buffer::new(ctx, pool, Place::Device)?) } else { None };
            let consts = if consts.is_empty() {
                None
            } else {
                let mut c = Buffer::new(ctx, consts.len() as u64, Place::Shared)?;
                let w = c.write(0, consts);
                if let Err(e) = w {
                    c.destroy(ctx);
                    return Err(e);
                }
                Some(c)
            };
            Ok((pool, consts))
        })();
        let (pool, consts) = match r {
            Ok(x) => x,
            Err(e) => {
                for b in &mut made {
                    b.destroy(ctx);
                }
                return Err(e);
            }
        };
        let mut type_info =
            vk::SemaphoreTypeCreateInfo::default().semaphore_type(vk::SemaphoreType::TIMELINE).initial_value(0);
        let pool_info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(ctx.queue_family)
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        // SAFETY: valid create infos; on failure everything made so far is destroyed.
        let objs = unsafe {
            let cmd_pool = ctx.device.create_command_pool(&pool_info, None);
            let timeline =
                ctx.device.create_semaphore(&vk::SemaphoreCreateInfo::default().push_next(&mut type_info), None);
            (cmd_pool, timeline)
        };
        let mut indirect = made.pop();
        let mut args = made.pop();
        match (objs, args.take(), indirect.take()) {
            ((Ok(cmd_pool), Ok(timeline)), Some(args), Some(indirect)) => {
                Ok(Resources { args, indirect, pool, consts, cmd_pool, timeline })
            }
            ((cp, tl), a, i) => {
                // SAFETY: nothing uses these objects yet.
                unsafe {
                    if let Ok(p) = cp {
                        ctx.device.destroy_command_pool(p, None);
                    }
                    if let Ok(t) = tl {
                        ctx.device.destroy_semaphore(t, None);
                    }
                }
                for mut b in [a, i, pool, consts].into_iter().flatten() {
                    b.destroy(ctx);
                }
                Err(ExecError::Vulkan("creating the executable's command pool or semaphore".into()))
            }
        }
    }

    fn destroy(&mut self, ctx: &Context) {
        // SAFETY: nothing was submitted with these objects.
        unsafe {
            ctx.device.destroy_command_pool(self.cmd_pool, None);
            ctx.device.destroy_semaphore(self.timeline, None);
        }
        for b in [Some(&mut self.args), Some(&mut self.indirect), self.pool.as_mut(), self.consts.as_mut()]
            .into_iter()
            .flatten()
        {
            b.destroy(ctx);
        }
    }
}

/// A graph whose nodes run on several devices (docs/multi-device.md) is refused before
/// anything is made: an executor drives one device, and running such a graph there would
/// ignore its placement. The error names the first node placed elsewhere.
fn one_device(graph: &Graph, device_name: &str) -> Result<()> {
    match graph.nodes.iter().find(|(_, n)| n.device.is_some_and(|d| d != graph.device)) {
        None => Ok(()),
        Some((h, n)) => Err(ExecError::Invalid(format!(
            "%{}: the node runs on device {}, the graph on device {}; this executor drives one device (\"{device_name}\") and does not run multi-device graphs yet: run it with `cmdgraph interp`, or place every node on one device (docs/multi-device.md)",
            n.name,
            graph.node_device(h),
            graph.device
        ))),
    }
}
