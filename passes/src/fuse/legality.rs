//! Which kernel nodes may be fused, and into which groups.
//!
//! A node is a *candidate* when it is a plain kernel node (never a `dynamic` node) launched
//! over a 1-D `range(N)`, its body is one region of element-wise operations whose loads and
//! stores all index `global_id 0`, and each argument is a pointer at offset 0 (to memory of
//! at least `N` elements of the parameter's type), a literal scalar or a dynamic scalar.
//! Every work-item of a candidate then touches only the element at its own index, which is
//! what makes the fused work-item equal to the members' work-items run in order.
//!
//! Groups grow greedily in topological order: a candidate joins the group of the last
//! candidate that wrote memory it reads (vertical) or else of the last candidate that read
//! memory it reads (horizontal), over the same `N`, when [`Planner::check`] accepts the
//! group. A vertical link through a graph-owned temporary exists only when every use of the
//! temporary is a candidate (it then dies inside the group, with its `async_malloc` and
//! `async_free`); a temporary read by anything else after the chain keeps the chain apart.
//!
//! Fusion never orders unordered kernels: two members that touch common memory, one
//! writing it, must already be joined by a path ([`Refusal::Unordered`] otherwise). A
//! "producer" with no path to its "consumer" is a data race, not a producer.

use crate::analysis::{topological_order, Csr};
use cmdgraph_ir::edit::referenced_nodes;
use cmdgraph_ir::graph::{Alternative, Arg, ArgValue, Graph, MemRef, NodeKind, NodeType};
use cmdgraph_ir::kernel::{Builtin, KernelBody, MemBase, OpKind, ParamType, ValueDef};
use cmdgraph_ir::types::Type;
use cmdgraph_ir::{Handle, Module, Node};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// Most kernels one fused node may stand for: keeps each e-graph small and the fused
/// kernel's register pressure bounded when many siblings share an input.
pub const MAX_MEMBERS: usize = 64;

/// What fusion needs to know about a candidate kernel node.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// The 1-D range.
    pub n: u64,
    /// Memory it loads (each once, in first-load order).
    pub reads: Vec<MemRef>,
    /// Memory it stores (each once, in first-store order).
    pub writes: Vec<MemRef>,
    /// Bytes one work-item moves (each memory loaded or stored counted once per kind).
    pub bytes: u64,
    /// Whether an argument is a dynamic parameter.
    pub has_dyn: bool,
}

/// The candidate facts of `node`, `None` if it cannot be fused.
pub fn candidate(module: &Module, graph: &Graph, node: Handle<Node>) -> Option<Candidate> {
    candidate_or_why(module, graph, node).ok()
}

/// Why a node is not a candidate, for `--explain`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotCandidate {
    /// Not a kernel node at all (never reported: only kernel nodes could have fused).
    NotKernel,
    /// Why this kernel node cannot fuse, as `--explain` says it.
    Kernel(String),
}

/// [`candidate`], or why `node` is not one. The reasons are the checks `candidate` makes, in
/// its order, so `--explain` names the first one that fails.
pub fn candidate_or_why(module: &Module, graph: &Graph, node: Handle<Node>) -> Result<Candidate, NotCandidate> {
    let why = |s: String| NotCandidate::Kernel(s);
    let Some(NodeKind::Kernel(cmd)) = graph.nodes.try_get(node).map(|n| &n.kind) else {
        return Err(NotCandidate::NotKernel);
    };
    let n = match &cmd.launch {
        cmdgraph_ir::graph::Launch::Range(r) if r.len() == 1 => r.first().copied().unwrap_or(0),
        cmdgraph_ir::graph::Launch::Range(r) => {
            return Err(why(format!("launched over a {}-D range (fusion needs a 1-D range(N))", r.len())))
        }
        _ => return Err(why("launched over an nd_range (fusion needs a 1-D range(N))".into())),
    };
    let Some(kernel) = module.kernels.try_get(cmd.kernel) else { return Err(why("unknown kernel".into())) };
    let KernelBody::Ir(body) = &kernel.body else {
        return Err(why(format!("@{} is an external SPIR-V kernel (its body cannot be read)", kernel.name)));
    };
    if kernel.params.len() != cmd.args.len() {
        return Err(why(format!("its arguments do not match @{}'s parameters", kernel.name)));
    }
    let mut param_mem = vec![None; kernel.params.len()];
    let mut has_dyn = false;
    let mut short = None;
    for (i, (param, arg)) in kernel.params.iter().zip(&cmd.args).enumerate() {
        match (param.ty, arg) {
            (ParamType::Buffer { elem, .. }, Arg::Value(ArgValue::Pointer(p))) if p.offset == 0 => {
                let name = mem_ref_name(module, graph, p.base);
                let Some((mem_elem, count)) = memory_shape(module, graph, p.base) else {
                    return Err(why(format!("argument {i}: {name} is not memory fusion can follow")));
                };
                // Said after the body's checks: a buffer shorter than the range is usually
                // one the body reads at another index (a broadcast), the better reason.
                if mem_elem != elem && short.is_none() {
                    short = Some(format!("argument {i}: {name} holds {mem_elem} but the parameter reads {elem}"));
                }
                if count < n && short.is_none() {
                    short = Some(format!("argument {i}: {name} has {count} elements, fewer than range({n})"));
                }
                param_mem[i] = Some((p.base, elem.size()));
            }
            (ParamType::Buffer { .. }, Arg::Value(ArgValue::Pointer(p))) => {
                return Err(why(format!(
                    "argument {i}: {} at offset {} (fusion needs offset 0)",
                    mem_ref_name(module, graph, p.base),
                    p.offset
                )))
            }
            (ParamType::Value(_), Arg::Value(ArgValue::Scalar(_))) => {}
            (ParamType::Value(_), Arg::Dyn(p)) => {
                if !graph.dyn_params.try_get(*p).is_some_and(|d| matches!(d.value, ArgValue::Scalar(_))) {
                    return Err(why(format!("argument {i} is a dynamic parameter that is not a scalar")));
                }
                has_dyn = true;
            }
            (_, Arg::Dyn(p)) => {
                let name = graph.dyn_params.try_get(*p).map_or("?", |d| d.name.as_str());
                return Err(why(format!(
                    "argument {i} is the dynamic pointer %{name} (it could be rebound to alias anything)"
                )));
            }
            _ => return Err(why(format!("argument {i} is neither a pointer at offset 0 nor a scalar"))),
        }
    }
    let is_gid = |v| match body.values.try_get(v).map(|v| v.def) {
        Some(ValueDef::Result(op, 0)) => {
            matches!(body.ops.try_get(op).map(|o| &o.kind), Some(OpKind::Builtin(Builtin::GlobalId, 0)))
        }
        _ => false,
    };
    let is_const = |v| match body.values.try_get(v).map(|v| v.def) {
        Some(ValueDef::Result(op, 0)) => matches!(body.ops.try_get(op).map(|o| &o.kind), Some(OpKind::Const(..))),
        _ => false,
    };
    let mem_of = |mem: &MemBase| match mem {
        MemBase::Value(v) => match body.values.try_get(*v).map(|v| v.def) {
            Some(ValueDef::Param(i)) => param_mem.get(i as usize).copied().flatten(),
            _ => None,
        },
        MemBase::Global(_) => None,
    };
    // The memory a load or store names, as `--explain` prints it.
    let mem_text = |mem: &MemBase| match mem_of(mem) {
        Some((m, _)) => mem_ref_name(module, graph, m),
        None => "memory that is not a plain argument".to_string(),
    };
    let mut reads: Vec<(MemRef, u64)> = Vec::new();
    let mut writes: Vec<(MemRef, u64)> = Vec::new();
    let add = |list: &mut Vec<(MemRef, u64)>, entry: (MemRef, u64)| {
        if !list.iter().any(|(m, _)| *m == entry.0) {
            list.push(entry);
        }
    };
    let not_plain =
        |what: &str, mem: &MemBase| why(format!("{what} {} (a device_global or local memory)", mem_text(mem)));
    for &op in &body.entry.ops {
        let Some(kind) = body.ops.try_get(op).map(|o| &o.kind) else { return Err(why("a missing op".into())) };
        match kind {
            OpKind::Load { mem, index } if is_gid(*index) => {
                add(&mut reads, mem_of(mem).ok_or_else(|| not_plain("load of", mem))?);
            }
            OpKind::Store { mem, index, .. } if is_gid(*index) => {
                add(&mut writes, mem_of(mem).ok_or_else(|| not_plain("store to", mem))?);
            }
            // A work-item that reads another's element would read it before the fused
            // producer's work-item for that element has stored it.
            OpKind::Load { mem, index } if is_const(*index) => {
                return Err(why(format!(
                    "broadcast load of {}: reads other work-items' elements (index is a constant, not global_id 0)",
                    mem_text(mem)
                )))
            }
            OpKind::Load { mem, .. } => {
                return Err(why(format!(
                    "gather load of {}: reads other work-items' elements (index is not global_id 0)",
                    mem_text(mem)
                )))
            }
            OpKind::Store { mem, .. } => {
                return Err(why(format!(
                    "scattered store to {}: writes other work-items' elements (index is not global_id 0)",
                    mem_text(mem)
                )))
            }
            OpKind::Builtin(Builtin::GlobalId, 0) => {}
            other if is_elementwise_value_op(other) => {}
            other => return Err(why(format!("`{}` is not an element-wise operation", op_word(other)))),
        }
    }
    if let Some(short) = short {
        return Err(why(short));
    }
    let bytes = reads.iter().chain(&writes).map(|(_, b)| b).sum();
    let (reads, writes) = (reads.into_iter().map(|r| r.0).collect(), writes.into_iter().map(|w| w.0).collect());
    Ok(Candidate { n, reads, writes, bytes, has_dyn })
}

/// Whether `kind` computes a value from values alone, lane by lane (no memory, no builtin,
/// no control flow): what an element-wise body may hold besides its loads and stores
/// (also `tile-contractions`' epilogues).
pub fn is_elementwise_value_op(kind: &OpKind) -> bool {
    matches!(
        kind,
        OpKind::Const(..)
            | OpKind::Unary(..)
            | OpKind::Binary(..)
            | OpKind::Fma(..)
            | OpKind::Cmp(..)
            | OpKind::Select(..)
            | OpKind::Cast(..)
            | OpKind::Bitcast(..)
            | OpKind::Splat(..)
            | OpKind::Extract(..)
            | OpKind::Insert(..)
            | OpKind::Construct(..)
    )
}

/// The IR word of an op that keeps a kernel from fusing.
fn op_word(kind: &OpKind) -> &'static str {
    match kind {
        OpKind::Builtin(..) => "a built-in other than global_id 0",
        OpKind::Atomic { .. } => "atomic",
        OpKind::GroupBarrier => "barrier",
        OpKind::LocalAlloc { .. } => "local",
        OpKind::For { .. } => "for",
        OpKind::If { .. } => "if",
        OpKind::Loop { .. } => "loop",
        _ => "an op",
    }
}

/// `@name` of module memory or `%name` of an allocation.
pub fn mem_ref_name(module: &Module, graph: &Graph, m: MemRef) -> String {
    match m {
        MemRef::Memory(h) => format!("@{}", module.memories.try_get(h).map_or("?", |m| m.name.as_str())),
        MemRef::Alloc(h) => format!("%{}", graph.nodes.try_get(h).map_or("?", |n| n.name.as_str())),
    }
}

fn memory_shape(module: &Module, graph: &Graph, mem: MemRef) -> Option<(Type, u64)> {
    match mem {
        MemRef::Memory(h) => module.memories.try_get(h).map(|m| (m.elem, m.count)),
        MemRef::Alloc(h) => match graph.nodes.try_get(h)?.kind {
            NodeKind::AsyncMalloc { elem, count, .. } => Some((elem, count)),
            _ => None,
        },
    }
}

/// Whether work may never move across `node`: host tasks, native commands, barriers,
/// sub-graphs, conditional nodes (whose bodies run as the device decides) and dynamic
/// command groups with host-task alternatives.
pub fn is_fence(graph: &Graph, node: Handle<Node>) -> bool {
    matches!(
        graph.node_type(node),
        NodeType::HostTask | NodeType::NativeCommand | NodeType::Barrier | NodeType::Subgraph | NodeType::Conditional
    )
}

/// A graph-owned allocation and who uses it.
#[derive(Clone, Debug, Default)]
pub struct Temp {
    /// Nodes that use it (not its `async_free`).
    pub users: Vec<u32>,
    /// Its `async_free` nodes.
    pub frees: Vec<u32>,
    /// Every use is a candidate kernel and it is not `zero_init`: it can die in a group.
    pub fusable: bool,
    /// A use that is not a candidate, for `--explain`.
    pub outside_user: Option<u32>,
}

/// Every allocation of the graph, by `async_malloc` node index.
pub fn temps(graph: &Graph, cands: &[Option<Candidate>]) -> BTreeMap<u32, Temp> {
    let mut out: BTreeMap<u32, Temp> = BTreeMap::new();
    let mut pinned = BTreeSet::new();
    for (h, node) in graph.nodes.iter() {
        if let NodeKind::AsyncMalloc { zero_init, .. } = node.kind {
            out.entry(h.index() as u32).or_default();
            if zero_init {
                pinned.insert(h.index() as u32);
            }
        }
    }
    for (h, node) in graph.nodes.iter() {
        let v = h.index() as u32;
        let mut seen = BTreeSet::new();
        for a in referenced_nodes(graph, &node.kind) {
            let Some(t) = out.get_mut(&(a.index() as u32)) else { continue };
            if !seen.insert(a) {
                continue;
            }
            match node.kind {
                NodeKind::AsyncFree { .. } => t.frees.push(v),
                _ => {
                    t.users.push(v);
                    if cands.get(v as usize).is_none_or(|c| c.is_none()) && t.outside_user.is_none() {
                        t.outside_user = Some(v);
                    }
                }
            }
        }
        // A dynamic command group naming the allocation pins it.
        if let NodeKind::Dynamic { dcg } = node.kind {
            for alt in graph.dcgs.try_get(dcg).map(|d| d.alternatives.as_slice()).unwrap_or(&[]) {
                let kind = match alt {
                    Alternative::Kernel(cmd) => NodeKind::Kernel(cmd.clone()),
                    Alternative::HostTask(t) => NodeKind::HostTask(t.clone()),
                    Alternative::Other(k) => (**k).clone(),
                };
                for a in referenced_nodes(graph, &kind) {
                    pinned.insert(a.index() as u32);
                }
            }
        }
    }
    for (_, p) in graph.dyn_params.iter() {
        if let ArgValue::Pointer(cmdgraph_ir::graph::Pointer { base: MemRef::Alloc(a), .. }) = p.value {
            pinned.insert(a.index() as u32);
        }
    }
    for (a, t) in out.iter_mut() {
        t.fusable = !pinned.contains(a) && !t.users.is_empty() && t.outside_user.is_none();
    }
    out
}

/// A group to fuse: its members in the order they run and what dies with it.
#[derive(Clone, Debug, Default)]
pub struct Group {
    /// Member kernel nodes in topological order.
    pub members: Vec<u32>,
    /// `async_malloc` and `async_free` nodes of the temporaries that die in the group.
    pub removed: Vec<u32>,
    /// The temporaries that die in the group (`async_malloc` node indices).
    pub dead: Vec<u32>,
    /// Whether a member joined through a producer it reads (vertical fusion).
    pub vertical: bool,
    /// Whether a member joined through an input it shares (horizontal fusion).
    pub horizontal: bool,
}

/// No group, no node: the empty slot of the per-node tables.
const NONE: u32 = u32::MAX;

/// The nodes each group of a greedy round contracts into one (its members), the group
/// owning each such node, and the topological positions each group spans. Only groups of
/// two or more nodes are kept: a single node contracts to itself.
#[derive(Default)]
pub struct Contracted {
    sets: Vec<Vec<u32>>,
    /// Group of each node (by index), [`NONE`] outside every kept group.
    owner: Vec<u32>,
    spans: Vec<Option<(u32, u32)>>,
    /// The largest last position over `spans` (spans only grow, so a running maximum).
    max_hi: u32,
}

impl Contracted {
    /// Records that group `g` now contracts `nodes` (sorted), which span topological
    /// positions `span`.
    fn set(&mut self, g: usize, nodes: Vec<u32>, span: (u32, u32)) {
        if nodes.len() < 2 {
            return;
        }
        if self.sets.len() <= g {
            self.sets.resize(g + 1, Vec::new());
            self.spans.resize(g + 1, None);
        }
        for &v in &nodes {
            if self.owner.len() <= v as usize {
                self.owner.resize(v as usize + 1, NONE);
            }
            if let Some(slot) = self.owner.get_mut(v as usize).filter(|o| **o == NONE) {
                *slot = g as u32;
            }
        }
        if let Some(slot) = self.spans.get_mut(g) {
            *slot = Some(span);
        }
        self.max_hi = self.max_hi.max(span.1);
        if let Some(slot) = self.sets.get_mut(g) {
            *slot = nodes;
        }
    }

    fn owner(&self, v: u32) -> Option<usize> {
        self.owner.get(v as usize).filter(|&&g| g != NONE).map(|&g| g as usize)
    }

    /// The last topological position from which a path may still come back to positions
    /// before `max`: a group starting before the bound ends inside it, so a jump through
    /// it can lead back.
    ///
    /// Groups grow in topological order, so every span ends at or before `max` (the
    /// position of the node joining): then nothing widens the bound and no span is
    /// scanned (scanning them all for every check made grouping quadratic).
    fn horizon(&self, max: u32, except: usize, work: &Cell<u64>) -> u32 {
        if self.max_hi <= max {
            return max;
        }
        let mut bound = max;
        loop {
            let wider = self
                .spans
                .iter()
                .enumerate()
                .inspect(|_| work.set(work.get() + 1))
                .filter_map(|(g, s)| s.filter(|_| g != except))
                .filter(|(lo, _)| *lo < bound)
                .map(|(_, hi)| hi)
                .fold(bound, u32::max);
            if wider == bound {
                return bound;
            }
            bound = wider;
        }
    }
}

/// Why a link was refused, rendered only for the round whose groups are kept.
#[derive(Clone, Debug)]
pub enum Refusal {
    /// Contracting would close a cycle through this node.
    Cycle(u32),
    /// The member would move after the fence.
    MovesAfter(u32, u32),
    /// The member would move before the fence.
    MovesBefore(u32, u32),
    /// A dynamic parameter would land on this node, recorded from a queue.
    Queued(u32),
    /// The two members have no path between them and touch common memory, one writing it:
    /// fused, they would run in order, which the graph leaves open (a data race, E0280).
    Unordered(u32, u32),
    /// The two members run on different devices (docs/multi-device.md).
    Devices(u32, u32),
}

/// Per-node marks of the legality checks, reset in O(1) by moving to the next epoch: a
/// mark is set when it holds the current epoch (hash or tree sets here cost more than the
/// searches they record).
struct Marks {
    epoch: u32,
    in_set: Vec<u32>,
    bypassed: Vec<u32>,
    seen_real: Vec<u32>,
    seen_other: Vec<u32>,
    /// By group.
    jumped: Vec<u32>,
    reach_epoch: u32,
    reached: Vec<u32>,
    /// The search stack, kept between checks.
    stack: Vec<(u32, bool)>,
    /// The checked set, kept between checks.
    set: Vec<u32>,
}

impl Marks {
    fn new(n: usize) -> Marks {
        Marks {
            epoch: 0,
            in_set: vec![0; n],
            bypassed: vec![0; n],
            seen_real: vec![0; n],
            seen_other: vec![0; n],
            jumped: vec![0; n],
            reach_epoch: 0,
            reached: vec![0; n],
            stack: Vec::new(),
            set: Vec::new(),
        }
    }
}

fn is(marks: &[u32], v: u32, epoch: u32) -> bool {
    marks.get(v as usize) == Some(&epoch)
}

/// Sets a mark; whether it was newly set.
fn mark(marks: &mut [u32], v: u32, epoch: u32) -> bool {
    match marks.get_mut(v as usize) {
        Some(m) if *m != epoch => {
            *m = epoch;
            true
        }
        _ => false,
    }
}

/// The last candidate to write and to read each memory object, by [`key`].
#[derive(Default)]
struct LastUse {
    memory: Vec<u32>,
    alloc: Vec<u32>,
}

impl LastUse {
    fn get(&self, m: &MemRef) -> Option<u32> {
        let (alloc, i) = key(m);
        let slots = if alloc { &self.alloc } else { &self.memory };
        slots.get(i).copied().filter(|&v| v != NONE)
    }

    fn set(&mut self, m: &MemRef, v: u32) {
        let (alloc, i) = key(m);
        let slots = if alloc { &mut self.alloc } else { &mut self.memory };
        if slots.len() <= i {
            slots.resize(i + 1, NONE);
        }
        if let Some(slot) = slots.get_mut(i) {
            *slot = v;
        }
    }
}

/// A refused link of a greedy round: the producer and the joining node, and why.
enum Refused {
    /// The temporary is used outside the chain.
    Temporary { from: u32, to: u32, temp: u32 },
    /// A legality check failed.
    Check { from: u32, to: u32, why: Refusal },
    /// The consumer reads what the producer wrote but runs over another range.
    Range { from: u32, to: u32, n_from: u64, n_to: u64 },
    /// The group already has [`MAX_MEMBERS`] members.
    Full { from: u32, to: u32 },
}

/// The grouping state of one graph.
pub struct Planner<'a> {
    graph: &'a Graph,
    cands: &'a [Option<Candidate>],
    temps: &'a BTreeMap<u32, Temp>,
    blocked: Vec<bool>,
    /// The temporary each node (by index) allocates.
    temp_at: Vec<Option<&'a Temp>>,
    /// Whether each node (by index) allocates a temporary that may die in a group.
    fusable: Vec<bool>,
    /// Whether each node (by index) is a fence ([`is_fence`]).
    fence: Vec<bool>,
    succ: Csr,
    pred: Csr,
    order: Vec<u32>,
    pos: Vec<u32>,
    marks: RefCell<Marks>,
    /// Steps of the legality checks: nodes visited by the reachability searches and spans
    /// scanned for the horizon (see [`Planner::plan_counted`]).
    work: Cell<u64>,
}

impl<'a> Planner<'a> {
    /// A planner, `None` if the graph has a cycle.
    pub fn new(graph: &'a Graph, cands: &'a [Option<Candidate>], temps: &'a BTreeMap<u32, Temp>) -> Option<Self> {
        let succ = Csr::successors(graph);
        let pred = Csr::predecessors(graph);
        let order = topological_order(&succ)?;
        let mut pos = vec![0u32; order.len()];
        for (i, &v) in order.iter().enumerate() {
            if let Some(p) = pos.get_mut(v as usize) {
                *p = i as u32;
            }
        }
        let n = order.len();
        let mut fusable = vec![false; n];
        let mut temp_at = vec![None; n];
        for (&a, t) in temps {
            if let (Some(f), Some(at)) = (fusable.get_mut(a as usize), temp_at.get_mut(a as usize)) {
                *f = t.fusable;
                *at = Some(t);
            }
        }
        Some(Planner {
            graph,
            cands,
            temps,
            blocked: vec![false; n],
            temp_at,
            fusable,
            fence: graph.nodes.handles().map(|h| is_fence(graph, h)).collect(),
            succ,
            pred,
            order,
            pos,
            marks: RefCell::new(Marks::new(n)),
            work: Cell::new(0),
        })
    }

    /// The text of a refusal (for `--explain`).
    pub fn explain(&self, why: &Refusal) -> String {
        let mut out = String::new();
        self.explain_into(&mut out, why);
        out
    }

    fn explain_into(&self, out: &mut String, why: &Refusal) {
        match *why {
            Refusal::Cycle(x) => {
                out.push_str("fusing would create a cycle through ");
                self.push_name(out, x);
            }
            Refusal::MovesAfter(m, x) => {
                self.push_name(out, m);
                out.push_str(" would move after ");
                self.push_name(out, x);
            }
            Refusal::MovesBefore(m, y) => {
                self.push_name(out, m);
                out.push_str(" would move before ");
                self.push_name(out, y);
            }
            Refusal::Queued(last) => {
                out.push_str("a dynamic parameter cannot move to ");
                self.push_name(out, last);
                out.push_str(", recorded from a queue");
            }
            Refusal::Unordered(m, v) => {
                self.push_name(out, m);
                out.push_str(" and ");
                self.push_name(out, v);
                out.push_str(" are unordered and touch common memory, one writing it; fusing would order them");
            }
            Refusal::Devices(a, b) => {
                self.push_name(out, a);
                out.push_str(" and ");
                self.push_name(out, b);
                out.push_str(" run on different devices");
            }
        }
    }

    fn temp(&self, a: u32) -> Option<&'a Temp> {
        self.temp_at.get(a as usize).copied().flatten()
    }

    fn cand(&self, v: u32) -> Option<&Candidate> {
        self.cands.get(v as usize).and_then(|c| c.as_ref())
    }

    fn pos(&self, v: u32) -> u32 {
        self.pos.get(v as usize).copied().unwrap_or(0)
    }

    fn temp_dies(&self, m: &MemRef) -> Option<u32> {
        let MemRef::Alloc(a) = m else { return None };
        let a = a.index() as u32;
        let fusable = self.fusable.get(a as usize).copied().unwrap_or(false);
        (fusable && !self.blocked.get(a as usize).copied().unwrap_or(false)).then_some(a)
    }

    /// Groups of two or more members, and why links were refused (for `--explain`).
    pub fn plan(self) -> (Vec<Group>, Vec<String>) {
        let (groups, refusals, _) = self.plan_counted();
        (groups, refusals)
    }

    /// [`Planner::plan`], with the steps its legality checks took (nodes visited by
    /// reachability searches, spans scanned): proportional to the graph's size when
    /// grouping is near-linear (`passes/tests/fuse.rs` holds it to that).
    pub fn plan_counted(self) -> (Vec<Group>, Vec<String>, u64) {
        self.plan_remarks("", "")
    }

    /// [`Planner::plan_counted`] with each refusal between `prefix` and `suffix` (the
    /// pass's remark form, built once).
    pub fn plan_remarks(mut self, prefix: &str, suffix: &str) -> (Vec<Group>, Vec<String>, u64) {
        let mut group_of = vec![NONE; self.order.len()];
        loop {
            let (groups, refused) = self.greedy();
            // A temporary whose uses ended in different groups does not die: block it and
            // group again (each round blocks at least one temporary).
            group_of.fill(NONE);
            for (g, group) in groups.iter().enumerate() {
                for &m in &group.members {
                    if let Some(slot) = group_of.get_mut(m as usize) {
                        *slot = g as u32;
                    }
                }
            }
            let mut changed = false;
            for (&a, t) in self.temps {
                if !t.fusable || self.blocked.get(a as usize).copied().unwrap_or(true) {
                    continue;
                }
                let of = |u: &u32| group_of.get(*u as usize).copied().unwrap_or(NONE);
                let first = t.users.first().map(of).unwrap_or(NONE);
                if first == NONE || t.users.iter().any(|u| of(u) != first) {
                    if let Some(b) = self.blocked.get_mut(a as usize) {
                        *b = true;
                    }
                    changed = true;
                }
            }
            if !changed {
                let refusals = refused.iter().map(|r| self.render(r, prefix, suffix)).collect();
                let groups = groups.into_iter().filter(|g| g.members.len() > 1).collect();
                return (groups, refusals, self.work.get());
            }
        }
    }

    fn render(&self, r: &Refused, prefix: &str, suffix: &str) -> String {
        let mut out = String::with_capacity(prefix.len() + suffix.len() + 96);
        out.push_str(prefix);
        out.push_str("not fused: ");
        let (Refused::Temporary { from, to, .. }
        | Refused::Check { from, to, .. }
        | Refused::Range { from, to, .. }
        | Refused::Full { from, to }) = r;
        self.push_name(&mut out, *from);
        out.push_str(" -> ");
        self.push_name(&mut out, *to);
        out.push_str(": ");
        match r {
            Refused::Temporary { temp, .. } => {
                out.push_str("temporary ");
                self.push_name(&mut out, *temp);
                out.push_str(" is used outside the chain");
                if let Some(u) = self.temps.get(temp).and_then(|t| t.outside_user) {
                    out.push_str(" (by ");
                    self.push_name(&mut out, u);
                    out.push(')');
                }
            }
            Refused::Check { why, .. } => self.explain_into(&mut out, why),
            Refused::Range { n_from, n_to, .. } => {
                let _ = write!(out, "different launch range (range({n_from}) and range({n_to}))");
            }
            Refused::Full { .. } => {
                let _ = write!(out, "the group already has {MAX_MEMBERS} members");
            }
        }
        out.push_str(suffix);
        out
    }

    /// Appends `%name` of node `v`.
    fn push_name(&self, out: &mut String, v: u32) {
        if let Some(n) = Handle::<Node>::from_usize(v as usize).and_then(|h| self.graph.nodes.try_get(h)) {
            out.push('%');
            out.push_str(&n.name);
        }
    }

    fn greedy(&self) -> (Vec<Group>, Vec<Refused>) {
        let mut groups: Vec<Group> = Vec::new();
        let mut group_of = vec![NONE; self.order.len()];
        let group_of_node =
            |group_of: &[u32], w: u32| group_of.get(w as usize).filter(|&&g| g != NONE).map(|&g| g as usize);
        let mut contracted = Contracted::default();
        let mut last_writer = LastUse::default();
        let mut last_reader = LastUse::default();
        let mut refused = Vec::new();
        let mut options: Vec<(usize, bool, u32)> = Vec::new();
        let mut tried: Vec<usize> = Vec::new();
        let mut members: Vec<u32> = Vec::new();
        for &v in &self.order {
            let Some(c) = self.cand(v) else { continue };
            let same_n = |w: &u32| self.cand(*w).is_some_and(|d| d.n == c.n);
            options.clear();
            for m in &c.reads {
                let Some(w) = last_writer.get(m) else { continue };
                if !same_n(&w) {
                    let n_from = self.cand(w).map_or(0, |d| d.n);
                    let refusal = Refused::Range { from: w, to: v, n_from, n_to: c.n };
                    // One line per pair, however many buffers link them (a pair's lines are
                    // consecutive: `v`'s links are all found here).
                    if !matches!(refused.last(), Some(Refused::Range { from, to, .. }) if (*from, *to) == (w, v)) {
                        refused.push(refusal);
                    }
                    continue;
                }
                if matches!(m, MemRef::Alloc(_)) && self.temp_dies(m).is_none() {
                    if let MemRef::Alloc(a) = m {
                        refused.push(Refused::Temporary { from: w, to: v, temp: a.index() as u32 });
                    }
                    continue;
                }
                if let Some(g) = group_of_node(&group_of, w) {
                    options.push((g, true, w));
                }
            }
            for m in &c.reads {
                if let Some(g) = last_reader.get(m).filter(same_n).and_then(|w| group_of_node(&group_of, w)) {
                    options.push((g, false, v));
                }
            }
            options.retain(|&(g, vertical, w)| {
                let room = groups.get(g).is_some_and(|gr| gr.members.len() < MAX_MEMBERS);
                if !room && vertical {
                    refused.push(Refused::Full { from: w, to: v });
                }
                room
            });
            tried.clear();
            let mut joined = None;
            for &(g, vertical, w) in &options {
                if tried.contains(&g) {
                    continue;
                }
                tried.push(g);
                let Some(group) = groups.get(g) else { continue };
                members.clear();
                members.extend_from_slice(&group.members);
                members.push(v);
                match self.check(&members, g, &contracted) {
                    Ok(set) => {
                        let span = self.span(&set);
                        contracted.set(g, set, span);
                        joined = Some((g, vertical));
                        break;
                    }
                    Err(why) if vertical => refused.push(Refused::Check { from: w, to: v, why }),
                    Err(_) => {}
                }
            }
            let g = match joined {
                Some((g, vertical)) => {
                    if let Some(group) = groups.get_mut(g) {
                        group.members.push(v);
                        group.vertical |= vertical;
                        group.horizontal |= !vertical;
                    }
                    g
                }
                None => {
                    groups.push(Group { members: vec![v], ..Group::default() });
                    groups.len() - 1
                }
            };
            if let Some(slot) = group_of.get_mut(v as usize) {
                *slot = g as u32;
            }
            for m in &c.writes {
                last_writer.set(m, v);
            }
            for m in &c.reads {
                last_reader.set(m, v);
            }
        }
        for group in &mut groups {
            if group.members.len() > 1 {
                let (removed, dead) = self.removed(&group.members);
                group.removed = removed;
                group.dead = dead;
            }
        }
        (groups, refused)
    }

    /// The `async_malloc`/`async_free` nodes and allocations of the temporaries that die
    /// with `members`.
    fn removed(&self, members: &[u32]) -> (Vec<u32>, Vec<u32>) {
        let mut dead = Vec::new();
        for &m in members {
            if let Some(c) = self.cand(m) {
                dead.extend(c.reads.iter().chain(&c.writes).filter_map(|r| self.temp_dies(r)));
            }
        }
        dead.sort_unstable();
        dead.dedup();
        // The allocation goes with its first user; its frees only once every user is in
        // (until then they run after a user outside the group).
        let mut removed = Vec::new();
        for &a in &dead {
            removed.push(a);
            if let Some(t) = self.temp(a).filter(|t| t.users.iter().all(|u| members.contains(u))) {
                removed.extend(t.frees.iter().copied());
            }
        }
        removed.sort_unstable();
        removed.dedup();
        (removed, dead)
    }

    /// Whether `members`, as the new content of group `group`, can become one node while
    /// every other group of `contracted` becomes one node too: contracting them creates no
    /// cycle, no work moves across a fence, and a dynamic parameter does not land on a node
    /// recorded from a queue. Returns the nodes the group then contracts, sorted.
    ///
    /// Costs the nodes between the group's first successor and its last member in
    /// topological order that a path from the group reaches (plus, per fence next to a
    /// member, the nodes between the fence and the group): no whole-graph search.
    pub fn check(&self, members: &[u32], group: usize, contracted: &Contracted) -> Result<Vec<u32>, Refusal> {
        // One dispatch runs on one device.
        let device = |v: u32| node(v).map(|h| self.graph.node_device(h));
        if let Some((&first, rest)) = members.split_first() {
            if let Some(&other) = rest.iter().find(|&&v| device(v) != device(first)) {
                return Err(Refusal::Devices(first, other));
            }
        }
        let mut guard = self.marks.borrow_mut();
        let marks = &mut *guard;
        marks.epoch += 1;
        let epoch = marks.epoch;
        // The dying temporaries' `async_malloc`/`async_free` nodes are removed with a bypass
        // (their ordering stays as edges), not contracted: a free recorded after a later
        // node must not pull that node into the group.
        let mut set = std::mem::take(&mut marks.set);
        set.clear();
        set.extend_from_slice(members);
        set.sort_unstable();
        set.dedup();
        for &v in &set {
            mark(&mut marks.in_set, v, epoch);
        }
        let in_set = |marks: &Marks, v: u32| is(&marks.in_set, v, epoch);
        let max = set.iter().map(|&v| self.pos(v)).max().unwrap_or(0);
        let min = set.iter().map(|&v| self.pos(v)).min().unwrap_or(0);
        // A path leaving the set and coming back would become a cycle through the fused
        // node. Paths run in the quotient graph: entering another group continues from all
        // of its nodes, since that group becomes one node too. Two groups checked one at a
        // time against the input graph could otherwise each be acyclic and form a cycle
        // together (a -> d and c -> b with {a, b} and {c, d} fused).
        let horizon = contracted.horizon(max, group, &self.work);
        // The dying temporaries' nodes are bypassed: a path that reaches the set again
        // through them only becomes an edge inside the fused node. A path is `real` once it
        // passes any other node. (What [`Planner::removed`] gives, marked directly.)
        for &m in members {
            for r in self.cand(m).into_iter().flat_map(|c| c.reads.iter().chain(&c.writes)) {
                let Some(a) = self.temp_dies(r) else { continue };
                mark(&mut marks.bypassed, a, epoch);
                if let Some(t) = self.temp(a).filter(|t| t.users.iter().all(|&u| in_set(marks, u))) {
                    for &f in &t.frees {
                        mark(&mut marks.bypassed, f, epoch);
                    }
                }
            }
        }
        let real_at = |marks: &Marks, w: u32| !is(&marks.bypassed, w, epoch);
        let mut stack = std::mem::take(&mut marks.stack);
        stack.clear();
        for &s in &set {
            for &w in self.succ.neighbours(s) {
                if !in_set(marks, w) {
                    stack.push((w, real_at(marks, w)));
                }
            }
        }
        let mut steps = 0u64;
        let outcome = loop {
            let Some((x, real)) = stack.pop() else { break Ok(()) };
            let seen = if real { &mut marks.seen_real } else { &mut marks.seen_other };
            if !mark(seen, x, epoch) {
                continue;
            }
            steps += 1;
            if let Some(h) = contracted.owner(x).filter(|&h| h != group) {
                if mark(&mut marks.jumped, h as u32, epoch) {
                    let mut closes = false;
                    for &y in contracted.sets.get(h).into_iter().flatten() {
                        if y == x {
                            continue;
                        }
                        if in_set(marks, y) {
                            closes = true;
                            break;
                        }
                        stack.push((y, true));
                    }
                    if closes {
                        break Err(Refusal::Cycle(x));
                    }
                }
            }
            let mut closes = false;
            for &w in self.succ.neighbours(x) {
                if in_set(marks, w) {
                    if real {
                        closes = true;
                        break;
                    }
                    continue;
                }
                // Past the horizon no path comes back, through the input's edges or through
                // another group's contraction.
                if self.pos(w) <= horizon {
                    stack.push((w, real || real_at(marks, w)));
                }
            }
            if closes {
                break Err(Refusal::Cycle(x));
            }
        };
        self.work.set(self.work.get() + steps);
        marks.stack = stack;
        if let Err(why) = outcome {
            marks.set = set;
            return Err(why);
        }
        // A fence before (after) one member must be before (after) every member already.
        for &s in &set {
            for &x in self.pred.neighbours(s) {
                if !in_set(marks, x) && self.fence.get(x as usize).copied().unwrap_or(false) {
                    let epoch = self.reach(marks, x, &self.succ, |w| self.pos(w) <= max);
                    if let Some(&m) = members.iter().find(|&&m| !is(&marks.reached, m, epoch)) {
                        return Err(Refusal::MovesAfter(m, x));
                    }
                }
            }
            for &y in self.succ.neighbours(s) {
                if !in_set(marks, y) && self.fence.get(y as usize).copied().unwrap_or(false) {
                    let epoch = self.reach(marks, y, &self.pred, |w| self.pos(w) >= min);
                    if let Some(&m) = members.iter().find(|&&m| !is(&marks.reached, m, epoch)) {
                        return Err(Refusal::MovesBefore(m, y));
                    }
                }
            }
        }
        // Fusion runs the members one after another in each work-item. Members with no path
        // between them that touch common memory, one writing it, race in the input: fusing
        // would order them, deciding what the graph leaves open. Members already in the
        // group were checked when they joined, so only the newest one is (one search back
        // from it, within the group's span).
        if let Some((&v, rest)) = members.split_last() {
            let conflicts = |m: &u32| self.cand(*m).zip(self.cand(v)).is_some_and(|(a, b)| conflict(a, b));
            if rest.iter().any(conflicts) {
                let epoch = self.reach(marks, v, &self.pred, |w| self.pos(w) >= min);
                if let Some(&m) = rest.iter().filter(|m| conflicts(m)).find(|&&m| !is(&marks.reached, m, epoch)) {
                    return Err(Refusal::Unordered(m, v));
                }
            }
        }
        let last = members.iter().copied().max().unwrap_or(0);
        let queued = node(last).and_then(|h| self.graph.nodes.try_get(h)).is_some_and(|n| n.queue.is_some());
        if queued && members.iter().any(|&m| self.cand(m).is_some_and(|c| c.has_dyn)) {
            return Err(Refusal::Queued(last));
        }
        Ok(set)
    }

    /// The first and last topological positions of `nodes`.
    fn span(&self, nodes: &[u32]) -> (u32, u32) {
        let lo = nodes.iter().map(|&v| self.pos(v)).min().unwrap_or(0);
        let hi = nodes.iter().map(|&v| self.pos(v)).max().unwrap_or(0);
        (lo, hi)
    }

    /// Marks in `marks.reached` (under the returned epoch) the nodes `adj` leads to from
    /// `from` through nodes `within` accepts.
    fn reach(&self, marks: &mut Marks, from: u32, adj: &Csr, within: impl Fn(u32) -> bool) -> u32 {
        marks.reach_epoch += 1;
        let epoch = marks.reach_epoch;
        let mut stack = vec![from];
        while let Some(x) = stack.pop() {
            self.work.set(self.work.get() + 1);
            for &w in adj.neighbours(x) {
                if within(w) && mark(&mut marks.reached, w, epoch) {
                    stack.push(w);
                }
            }
        }
        epoch
    }
}

/// Whether two candidates touch common memory, one of them writing it.
fn conflict(a: &Candidate, b: &Candidate) -> bool {
    let hits = |w: &[MemRef], r: &[MemRef]| w.iter().any(|m| r.contains(m));
    hits(&a.writes, &b.reads) || hits(&a.writes, &b.writes) || hits(&b.writes, &a.reads)
}

/// An orderable key of a memory reference.
pub fn key(m: &MemRef) -> (bool, usize) {
    match m {
        MemRef::Memory(h) => (false, h.index()),
        MemRef::Alloc(h) => (true, h.index()),
    }
}

/// The handle of node index `v` (`None` only past `u32::MAX - 1`, which no graph reaches).
pub fn node(v: u32) -> Option<Handle<Node>> {
    Handle::from_usize(v as usize)
}
