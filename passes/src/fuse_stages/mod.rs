//! `fuse-stages`: a chain of kernels whose dependences stay inside one work-group becomes
//! one dispatch, each kernel a stage, with a `group_barrier` between two stages.
//!
//! Between two dependent dispatches a Vulkan queue drains the GPU and pays a pipeline
//! barrier; for small kernels that, not the work, is the time (docs/performance.md,
//! `latency`). Inside one dispatch a work-group barrier orders the same work-items for the
//! price of a few cycles. It orders the work-items of one group only, so a chain fuses when:
//!
//! - every node is a plain kernel node with an IR body, in a graph that is not `updatable`
//!   (an update may change a node's arguments or range alone);
//! - consecutive nodes are joined so that fusing orders no work that could have overlapped:
//!   the earlier one's other successors are `async_free`s, the later one's other
//!   predecessors `async_malloc`s, and no path through other nodes leads from the chain to
//!   the later one (fusing would make a cycle);
//! - they launch the same way: `single_task`; or one work-group (`nd_range` with local size
//!   equal to the global size, or a `range` of at most [`MAX_ONE_GROUP`] work-items, which
//!   becomes one work-group); or the same 1-D `nd_range` (a 1-D `range` a multiple of
//!   [`RANGE_LOCAL`] gets that local size), offsets zero; or, beside a 1-D one-work-group
//!   stage of W work-items, any 1-D launch of at most [`MAX_COARSE_PER_ITEM`] × W
//!   work-items whose body reads no builtin but `global_id 0` and `global_range 0` and has
//!   no work-group memory, barrier, subgroup operation or call: such a stage becomes a loop
//!   `for %v = local_id 0 to items step W` inside the group ([`Stage::coarse`]), every
//!   work-item of its launch run once;
//! - with several work-groups, every memory one stage writes and another touches is touched
//!   by each work-group only inside its own window ([`windows`]): work-group `G` of every
//!   stage stays in the same byte range of it;
//! - their work-group memory together stays within [`MAX_LOCAL_BYTES`].
//!
//! A fused stage runs exactly what its kernel ran with its arguments, so the result is
//! exact, not within a tolerance. The fused node keeps the name of the member created last;
//! [`PassContext::origins`] records every member. Chains of identical stage lists share one
//! kernel. Element-wise chains over a `range` are `fuse-kernels`' and run before this pass.

pub mod windows;

use crate::analysis::{topological_order, Csr};
use crate::fuse::build::{self, Replacement};
use crate::{PassContext, PassError, PassInfo};
use cmdgraph_ir::graph::{Arg, ArgValue, Graph, KernelCommand, Launch, NodeKind};
use cmdgraph_ir::inline::{concat_stages, Stage};
use cmdgraph_ir::kernel::{Builtin, Kernel, KernelBody, OpKind, Param, ParamType};
use cmdgraph_ir::module::Item;
use cmdgraph_ir::types::Access;
use cmdgraph_ir::{Handle, Module, Span};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use windows::{Groups, MemKey, Touch};

/// Registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "fuse-stages",
    summary: "fuse chains of kernels whose dependences stay in a work-group into one dispatch with group barriers",
    statistics: &[
        ("fusions", "chains replaced by one kernel node"),
        ("kernels-fused", "kernel nodes that became a stage of a fused node"),
        ("launches-saved", "dispatches removed"),
        ("group-barriers", "group_barrier ops put between stages"),
        ("kernels-shared", "fusions that reuse an identical fused kernel"),
        ("refused", "links of a chain a legality rule refused (see --explain)"),
        ("stages-coarsened", "stages of other launches run as a loop inside the chain's one work-group"),
    ],
    preserves: "the name of the member created last, with origins for all members; every result bit for \
                bit; updatable graphs are left alone",
    run,
};

/// Most work-items a `range` may have to become one work-group: the least
/// `maxComputeWorkGroupInvocations` Vulkan allows.
pub const MAX_ONE_GROUP: u64 = 128;
/// The work-group size a 1-D `range` of several groups is given.
pub const RANGE_LOCAL: u64 = 64;
/// Most work-group memory the stages of one fused kernel may use together: the least
/// `maxComputeSharedMemorySize` Vulkan allows.
pub const MAX_LOCAL_BYTES: u64 = 16 * 1024;
/// Most stages in one fused kernel (its SPIR-V grows with each).
pub const MAX_STAGES: usize = 128;
/// Most work-items of a coarsened stage per work-item of the one work-group it runs in.
/// Each turn of the loop waits for its loads (the driver does not overlap the turns), and a
/// dependent dispatch with its barrier costs about 2-3.5 µs on the H200: at 16 items per
/// work-item (`cond`'s Jacobi body, 4096-item sweep and commit inside the residual's group
/// of 256) a round took 13.3 µs against 11.3 µs for the three dispatches (2026-11-30), so
/// only a few turns pay.
pub const MAX_COARSE_PER_ITEM: u64 = 4;

/// How a node launches, as fusion compares launches.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Shape {
    /// `single_task`: one work-item; stages need no barrier.
    Single,
    /// One work-group of this size (per dimension).
    OneGroup(Vec<u64>),
    /// A 1-D launch of several work-groups.
    Groups { local: u64, groups: u64 },
    /// Another 1-D launch of this many work-items: it fuses only as a coarsened stage.
    Items(u64),
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shape::Single => write!(f, "single_task"),
            Shape::OneGroup(g) => {
                let dims: Vec<String> = g.iter().map(u64::to_string).collect();
                write!(f, "one work-group of {}", dims.join("x"))
            }
            Shape::Groups { local, groups } => write!(f, "{groups} work-groups of {local}"),
            Shape::Items(n) => write!(f, "a range of {n} work-items"),
        }
    }
}

impl Shape {
    fn of(launch: &Launch) -> Option<Shape> {
        match launch {
            Launch::SingleTask => Some(Shape::Single),
            Launch::NdRange { global, local, offset } if offset.iter().all(|&o| o == 0) => {
                if global == local {
                    Some(Shape::OneGroup(global.clone()))
                } else if let ([g], [l]) = (global.as_slice(), local.as_slice()) {
                    (*l > 0 && g % l == 0).then_some(Shape::Groups { local: *l, groups: g / l })
                } else {
                    None
                }
            }
            Launch::Range(r) => {
                let items: u64 = r.iter().product();
                if items <= MAX_ONE_GROUP && r.get(2).is_none_or(|&z| z <= 64) {
                    Some(Shape::OneGroup(r.clone()))
                } else if let [n] = r.as_slice() {
                    (n % RANGE_LOCAL == 0).then_some(Shape::Groups { local: RANGE_LOCAL, groups: n / RANGE_LOCAL })
                } else {
                    None
                }
            }
            Launch::NdRange { .. } => None,
        }
    }

    fn launch(&self) -> Launch {
        match self {
            Shape::Single => Launch::SingleTask,
            Shape::OneGroup(g) => Launch::NdRange { global: g.clone(), local: g.clone(), offset: Vec::new() },
            Shape::Groups { local, groups } => {
                Launch::NdRange { global: vec![local * groups], local: vec![*local], offset: Vec::new() }
            }
            Shape::Items(n) => Launch::Range(vec![*n]),
        }
    }
}

/// What the pass knows of one candidate node.
struct Member<'a> {
    cmd: &'a KernelCommand,
    kernel: &'a Kernel,
    shape: Shape,
    /// `Some(items)` when the node can run as a loop inside one work-group of another stage
    /// (a coarsened stage, [`Stage::coarse`]): a 1-D launch of `items` work-items (1 for
    /// `single_task`) whose body reads no builtin but `global_id 0` and `global_range 0` and
    /// has no work-group memory, barrier, subgroup operation or call.
    coarse: Option<u64>,
    /// Work-group memory bytes.
    local_bytes: u64,
    /// Memory touched, for launches of several work-groups (`Err`: why it is not known).
    touches: Result<BTreeMap<MemKey, Touch>, String>,
}

fn member<'a>(module: &'a Module, graph: &'a Graph, v: u32) -> Option<Member<'a>> {
    let NodeKind::Kernel(cmd) = &graph.nodes.try_get(Handle::from_usize(v as usize)?)?.kind else { return None };
    let kernel = module.kernels.try_get(cmd.kernel)?;
    let KernelBody::Ir(body) = &kernel.body else { return None };
    if kernel.params.len() != cmd.args.len() {
        return None;
    }
    let local_bytes: u64 = cmd
        .args
        .iter()
        .map(|a| match a {
            Arg::Value(ArgValue::Local { elem, count }) => elem.size().saturating_mul(*count),
            _ => 0,
        })
        .fold(local_alloc_bytes(body), u64::saturating_add);
    let coarse = coarse_items(cmd, body).filter(|_| local_bytes == 0);
    let shape = Shape::of(&cmd.launch).or(coarse.map(Shape::Items))?;
    let touches = match shape {
        Shape::Groups { local, groups } => windows::touches(module, cmd, body, Groups { local, groups }),
        _ => Ok(BTreeMap::new()),
    };
    Some(Member { cmd, kernel, shape, coarse, local_bytes, touches })
}

/// Bytes of work-group memory `body`'s `local` ops allocate.
pub(crate) fn local_alloc_bytes(body: &cmdgraph_ir::kernel::Body) -> u64 {
    body.ops
        .iter()
        .map(|(_, op)| match &op.kind {
            OpKind::LocalAlloc { elem, count } => elem.size().saturating_mul(*count),
            _ => 0,
        })
        .fold(0, u64::saturating_add)
}

/// The work-items of a launch that can become a loop in one work-group ([`Member::coarse`]).
fn coarse_items(cmd: &KernelCommand, body: &cmdgraph_ir::kernel::Body) -> Option<u64> {
    let items = match &cmd.launch {
        Launch::SingleTask => 1,
        Launch::Range(r) => match r.as_slice() {
            [n] => *n,
            _ => return None,
        },
        Launch::NdRange { global, offset, .. } => match global.as_slice() {
            [n] if offset.iter().all(|&o| o == 0) => *n,
            _ => return None,
        },
    };
    let plain = body.ops.iter().all(|(_, op)| match &op.kind {
        OpKind::Builtin(b, d) => *d == 0 && matches!(b, Builtin::GlobalId | Builtin::GlobalRange),
        OpKind::GroupBarrier | OpKind::LocalAlloc { .. } | OpKind::Subgroup(_) | OpKind::Call { .. } => false,
        _ => true,
    });
    (plain && items > 0).then_some(items)
}

/// The size of a 1-D one-work-group shape.
fn one_group(shape: &Shape) -> Option<u64> {
    match shape {
        Shape::OneGroup(g) => match g.as_slice() {
            [w] => Some(*w),
            _ => None,
        },
        _ => None,
    }
}

/// Whether `m` can run as stage of one work-group of `group` work-items: it is launched so,
/// or coarsened ([`MAX_COARSE_PER_ITEM`]).
fn fits_group(m: &Member<'_>, group: u64) -> bool {
    one_group(&m.shape) == Some(group) || m.coarse.is_some_and(|n| n <= group.saturating_mul(MAX_COARSE_PER_ITEM))
}

/// A chain being grown: its members and what they touch together.
struct Chain<'a> {
    nodes: Vec<u32>,
    members: Vec<Member<'a>>,
    shape: Shape,
    local_bytes: u64,
    locals: usize,
    touches: BTreeMap<MemKey, Touch>,
}

impl<'a> Chain<'a> {
    /// Adds `m` (node `v`) if the chain's stages and `m` may share a dispatch.
    fn admit(&mut self, v: u32, m: Member<'a>, graph: &Graph, module: &Module) -> Result<(), String> {
        if self.nodes.len() >= MAX_STAGES {
            return Err(format!("the chain already has {MAX_STAGES} stages"));
        }
        if m.shape != self.shape || matches!(self.shape, Shape::Items(_)) {
            // Different launches share a dispatch when one is a 1-D work-group and the others
            // are small enough to loop inside it.
            let joined = match (one_group(&self.shape), one_group(&m.shape)) {
                (Some(w), _) if fits_group(&m, w) => Some(w),
                (_, Some(w)) if self.members.iter().all(|x| fits_group(x, w)) => Some(w),
                _ => None,
            };
            let Some(w) = joined else {
                return Err(format!(
                    "launched as {}, the chain as {} (neither runs in the other's work-group: a stage loops inside \
                     one work-group of {MAX_COARSE_PER_ITEM} items per work-item at most, without builtins but \
                     global_id 0, work-group memory or barriers)",
                    m.shape, self.shape
                ));
            };
            self.shape = Shape::OneGroup(vec![w]);
        }
        let device = |v: u32| Handle::from_usize(v as usize).map(|h| graph.node_device(h));
        if let Some(&first) = self.nodes.first() {
            if device(first) != device(v) {
                let (theirs, ours) = (device(v).unwrap_or(0), device(first).unwrap_or(0));
                return Err(format!("it runs on device {theirs}, the chain on device {ours}"));
            }
        }
        let local = self.local_bytes.saturating_add(m.local_bytes);
        if local > MAX_LOCAL_BYTES && self.locals + usize::from(m.local_bytes > 0) > 1 {
            return Err(format!("together the stages would use {local} bytes of work-group memory"));
        }
        if let Shape::Groups { .. } = self.shape {
            let theirs = m.touches.as_ref().map_err(Clone::clone)?;
            for (k, t) in theirs {
                let Some(mine) = self.touches.get(k) else { continue };
                if (t.writes || mine.writes) && (t.window.is_none() || t.window != mine.window) {
                    let name = memory_name(module, graph, *k);
                    return Err(format!(
                        "{name} is written and its work-groups do not stay in one window of it in both \
                         (a work-group barrier orders one work-group only)"
                    ));
                }
            }
            for (k, t) in theirs {
                let e = self.touches.entry(*k).or_insert(*t);
                if e.window != t.window {
                    e.window = None;
                }
                e.writes |= t.writes;
            }
        }
        self.nodes.push(v);
        self.local_bytes = local;
        self.locals += usize::from(m.local_bytes > 0);
        self.members.push(m);
        Ok(())
    }
}

fn memory_name(module: &Module, graph: &Graph, (alloc, i): MemKey) -> String {
    let name = if alloc {
        Handle::from_usize(i).and_then(|h| graph.nodes.try_get(h)).map(|n| format!("%{}", n.name))
    } else {
        Handle::from_usize(i).and_then(|h| module.memories.try_get(h)).map(|m| format!("@{}", m.name))
    };
    name.unwrap_or_else(|| "memory".into())
}

/// Most nodes the search for a path around a link may visit before the link is refused.
const MAX_PATH_SEARCH: usize = 4096;

fn kind(graph: &Graph, v: u32) -> Option<&NodeKind> {
    Handle::from_usize(v as usize).and_then(|h| graph.nodes.try_get(h)).map(|n| &n.kind)
}

/// The next member after `cur`, when the chain may take it: `cur`'s successors are one
/// kernel node and `async_free`s (freeing later delays nothing else), and that node's other
/// predecessors are `async_malloc`s (allocations, which do no work), so fusing orders no work
/// that could have overlapped.
fn next_link(graph: &Graph, succ: &Csr, pred: &Csr, cur: u32) -> Option<u32> {
    let mut next = None;
    for &s in succ.neighbours(cur) {
        match kind(graph, s)? {
            NodeKind::AsyncFree { .. } => {}
            NodeKind::Kernel(_) if next.is_none_or(|n| n == s) => next = Some(s),
            _ => return None,
        }
    }
    let next = next?;
    let others_allocate =
        pred.neighbours(next).iter().all(|&p| p == cur || matches!(kind(graph, p), Some(NodeKind::AsyncMalloc { .. })));
    others_allocate.then_some(next)
}

/// Whether a path leaves the chain `members` through a node outside it and reaches `target`
/// (fusing would then make a cycle), or the search gave up; only nodes before `target` in
/// the topological order (`position`) can be on such a path.
fn path_around(succ: &Csr, members: &[u32], target: u32, position: &[u32]) -> bool {
    let limit = position[target as usize];
    let mut seen = std::collections::HashSet::new();
    let mut stack: Vec<u32> = members
        .iter()
        .flat_map(|&m| succ.neighbours(m).iter().copied())
        .filter(|&s| s != target && !members.contains(&s))
        .collect();
    while let Some(v) = stack.pop() {
        if v == target {
            return true;
        }
        if position[v as usize] > limit || !seen.insert(v) {
            continue;
        }
        if seen.len() > MAX_PATH_SEARCH {
            return true;
        }
        stack.extend(succ.neighbours(v).iter().copied());
    }
    false
}

fn node_name(graph: &Graph, v: u32) -> String {
    Handle::from_usize(v as usize).and_then(|h| graph.nodes.try_get(h)).map(|n| n.name.clone()).unwrap_or_default()
}

/// The chains of `graph` worth fusing (two or more members), with a remark per refused link.
/// A chain to fuse: its nodes and what the pass knows of each, in order.
type Planned<'a> = (Vec<u32>, Vec<Member<'a>>, Shape);

fn plan<'a>(module: &'a Module, graph: &'a Graph, remarks: &mut Vec<String>) -> Option<Vec<Planned<'a>>> {
    let succ = Csr::successors(graph);
    let pred = Csr::predecessors(graph);
    let order = topological_order(&succ)?;
    let mut position = vec![0u32; graph.nodes.len()];
    for (i, &v) in order.iter().enumerate() {
        position[v as usize] = i as u32;
    }
    let mut taken = vec![false; graph.nodes.len()];
    let mut chains = Vec::new();
    for v in order {
        if taken[v as usize] {
            continue;
        }
        let Some(first) = member(module, graph, v) else { continue };
        let touches = match (&first.shape, &first.touches) {
            (Shape::Groups { .. }, Ok(t)) => t.clone(),
            (Shape::Groups { .. }, Err(_)) => continue,
            _ => BTreeMap::new(),
        };
        let mut chain = Chain {
            nodes: vec![v],
            shape: first.shape.clone(),
            local_bytes: first.local_bytes,
            locals: usize::from(first.local_bytes > 0),
            touches,
            members: vec![first],
        };
        let mut cur = v;
        while let Some(next) = next_link(graph, &succ, &pred, cur) {
            if taken[next as usize] {
                break;
            }
            let Some(m) = member(module, graph, next) else { break };
            let admitted = if path_around(&succ, &chain.nodes, next, &position) {
                Err("a path through other nodes leads from the chain to it, or the search for one gave up (fusing would make a cycle)".to_string())
            } else {
                chain.admit(next, m, graph, module)
            };
            if let Err(why) = admitted {
                remarks.push(format!(
                    "fuse-stages: @{}: not fused: %{} -> %{}: {why}\n",
                    graph.name,
                    node_name(graph, cur),
                    node_name(graph, next)
                ));
                break;
            }
            cur = next;
        }
        if chain.nodes.len() >= 2 {
            for &n in &chain.nodes {
                taken[n as usize] = true;
            }
            chains.push((chain.nodes, chain.members, chain.shape));
        }
    }
    Some(chains)
}

/// The fused kernel's parameters and each stage's binding of them, and the fused arguments.
fn bind(members: &[Member<'_>]) -> (Vec<Param>, Vec<Vec<usize>>, Vec<Arg>) {
    bind_commands(Vec::new(), Vec::new(), members.iter().map(|m| (m.kernel, m.cmd)))
}

/// Parameters for one kernel running the bodies of `members` (kernel and command each),
/// after `params` / `args` already there: each member's binding of them and the arguments.
/// The same memory or value passed to several members is one parameter (access modes
/// joined); work-group memory never is.
pub(crate) fn bind_commands<'a>(
    mut params: Vec<Param>,
    mut args: Vec<Arg>,
    members: impl Iterator<Item = (&'a Kernel, &'a KernelCommand)>,
) -> (Vec<Param>, Vec<Vec<usize>>, Vec<Arg>) {
    let mut bindings = Vec::new();
    for (kernel, cmd) in members {
        let mut binding = Vec::with_capacity(kernel.params.len());
        for (p, a) in kernel.params.iter().zip(&cmd.args) {
            // One parameter per argument: the same memory or value passed to several stages
            // is one binding (access modes joined), work-group memory never is.
            let shared = match p.ty {
                ParamType::Local { .. } => None,
                _ => params.iter().zip(&args).position(|(q, b)| b == a && same_kind(q.ty, p.ty)),
            };
            let i = match shared {
                Some(i) => {
                    if let (ParamType::Buffer { access, .. }, ParamType::Buffer { access: new, .. }) =
                        (&mut params[i].ty, p.ty)
                    {
                        if *access != new {
                            *access = Access::ReadWrite;
                        }
                    }
                    i
                }
                None => {
                    params.push(p.clone());
                    args.push(a.clone());
                    params.len() - 1
                }
            };
            binding.push(i);
        }
        bindings.push(binding);
    }
    (params, bindings, args)
}

fn same_kind(a: ParamType, b: ParamType) -> bool {
    match (a, b) {
        (ParamType::Value(x), ParamType::Value(y)) => x == y,
        (ParamType::Buffer { elem: x, .. }, ParamType::Buffer { elem: y, .. }) => x == y,
        _ => false,
    }
}

fn fused_name(taken: &BTreeSet<String>, members: &[Member<'_>]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for m in members {
        if !names.contains(&m.kernel.name.as_str()) {
            names.push(&m.kernel.name);
        }
    }
    build::new_kernel_name(taken, format!("stages.{}", names.join(".")))
}

/// The kernel a fused node runs.
enum Fused {
    /// One an earlier graph added.
    Existing(Handle<Kernel>),
    /// The one of the `i`-th chain of this graph.
    Earlier(usize),
    /// A new one, with its sharing key.
    New(String, Box<Kernel>),
}

fn failed(graph: &str, message: impl Into<String>) -> PassError {
    PassError::Failed { pass: INFO.name, graph: graph.into(), node: None, message: message.into() }
}

fn run(module: &mut Module, ctx: &mut PassContext) -> Result<(), PassError> {
    let mut taken: BTreeSet<String> = module.kernels.iter().map(|(_, k)| k.name.clone()).collect();
    // Fused kernels by their stage list, so that repeated chains compile once.
    let mut shared: HashMap<String, Handle<Kernel>> = HashMap::new();
    let mut added = Vec::new();
    let graphs: Vec<_> = module.graphs.handles().collect();
    for gh in graphs {
        let Some(graph) = module.graphs.try_get(gh) else { continue };
        if graph.properties.updatable {
            continue;
        }
        let mut remarks = Vec::new();
        let chains = plan(module, graph, &mut remarks).ok_or_else(|| failed(&graph.name, "the graph has a cycle"))?;
        ctx.bump("refused", remarks.len() as u64);
        ctx.remarks.extend(remarks);
        if chains.is_empty() {
            continue;
        }
        let mut replacements = Vec::with_capacity(chains.len());
        let mut new_kernels = Vec::new();
        let mut pending: HashMap<String, usize> = HashMap::new();
        let mut origins = Vec::new();
        for (nodes, members, shape) in chains {
            let (params, bindings, args) = bind(&members);
            let barrier = shape != Shape::Single;
            // Stages launched otherwise than the chain loop inside its one work-group.
            let coarse: Vec<Option<(u64, u64)>> = members
                .iter()
                .map(|m| match (one_group(&shape), m.coarse) {
                    (Some(w), Some(n)) if m.shape != shape => Some((n, w)),
                    _ => None,
                })
                .collect();
            let key = format!(
                "{barrier}|{:?}|{:?}|{:?}|{:?}",
                members.iter().map(|m| m.cmd.kernel.index()).collect::<Vec<_>>(),
                bindings,
                params,
                coarse
            );
            let keep = nodes.iter().copied().max().unwrap_or(0);
            let fused_node = node_name(graph, keep);
            let kernel = match (shared.get(&key), pending.get(&key)) {
                (Some(&kh), _) => {
                    ctx.bump("kernels-shared", 1);
                    Fused::Existing(kh)
                }
                (None, Some(&i)) => {
                    ctx.bump("kernels-shared", 1);
                    Fused::Earlier(i)
                }
                (None, None) => {
                    let name = fused_name(&taken, &members);
                    taken.insert(name.clone());
                    let stages: Vec<Stage<'_>> = members
                        .iter()
                        .zip(bindings)
                        .zip(&nodes)
                        .zip(&coarse)
                        .map(|(((m, params), &v), &coarse)| Stage {
                            kernel: m.kernel,
                            params,
                            prefix: node_name(graph, v),
                            coarse,
                        })
                        .collect();
                    let k = concat_stages(&module.functions, name, params, &stages, barrier)
                        .map_err(|e| failed(&graph.name, e.to_string()))?;
                    pending.insert(key.clone(), new_kernels.len());
                    Fused::New(key, Box::new(k))
                }
            };
            let launch = shape.launch();
            let coarsened: Vec<String> = nodes
                .iter()
                .zip(&coarse)
                .filter(|(_, c)| c.is_some())
                .map(|(&v, _)| format!("%{}", node_name(graph, v)))
                .collect();
            ctx.bump("stages-coarsened", coarsened.len() as u64);
            ctx.bump("fusions", 1);
            ctx.bump("kernels-fused", nodes.len() as u64);
            ctx.bump("launches-saved", nodes.len() as u64 - 1);
            if barrier {
                ctx.bump("group-barriers", nodes.len() as u64 - 1);
            }
            let names: Vec<String> = nodes.iter().map(|&v| format!("%{}", node_name(graph, v))).collect();
            let looped = if coarsened.is_empty() {
                String::new()
            } else {
                format!(" ({} looped inside its {shape})", coarsened.join(", "))
            };
            ctx.remarks.push(format!(
                "fuse-stages: @{}: fused {} into %{fused_node}{looped}\n",
                graph.name,
                names.join(", ")
            ));
            origins.push((fused_node, nodes.iter().map(|&v| node_name(graph, v)).collect::<Vec<_>>()));
            new_kernels.push(kernel);
            // The kernel handle is filled in below, once the kernel is in the module.
            let command = KernelCommand { kernel: members[0].cmd.kernel, launch, args };
            replacements.push(Replacement { nodes, bypass: Vec::new(), keep, command });
        }
        let graph_name = graph.name.clone();
        let mut handles: Vec<Handle<Kernel>> = Vec::with_capacity(new_kernels.len());
        for (r, k) in replacements.iter_mut().zip(new_kernels) {
            let kh = match k {
                Fused::Existing(kh) => kh,
                Fused::Earlier(i) => {
                    handles.get(i).copied().ok_or_else(|| failed(&graph_name, "a shared kernel was never added"))?
                }
                Fused::New(key, kernel) => {
                    let kh = module.kernels.append(*kernel, Span::UNDEFINED);
                    added.push(Item::Kernel(kh));
                    shared.insert(key, kh);
                    kh
                }
            };
            handles.push(kh);
            r.command.kernel = kh;
        }
        for (node, members) in origins {
            let mut origin = Vec::with_capacity(members.len());
            for m in members {
                let key = (graph_name.clone(), m);
                match ctx.origins.remove(&key) {
                    Some(o) => origin.extend(o),
                    None => origin.push(key),
                }
            }
            ctx.origins.insert((graph_name.clone(), node), origin);
        }
        let graph = module.graphs.try_get_mut(gh).ok_or_else(|| failed(&graph_name, "the graph disappeared"))?;
        build::apply(graph, replacements).map_err(|e| failed(&graph_name, e.to_string()))?;
    }
    build::place_kernels(module, added);
    Ok(())
}
