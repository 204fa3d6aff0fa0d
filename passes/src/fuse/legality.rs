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

use crate::analysis::{topological_order, Csr};
use cmdgraph_ir::edit::referenced_nodes;
use cmdgraph_ir::graph::{Alternative, Arg, ArgValue, Graph, MemRef, NodeKind, NodeType};
use cmdgraph_ir::kernel::{Builtin, KernelBody, MemBase, OpKind, ParamType, ValueDef};
use cmdgraph_ir::types::Type;
use cmdgraph_ir::{Handle, Module, Node};
use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};

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
    let NodeKind::Kernel(cmd) = &graph.nodes.try_get(node)?.kind else { return None };
    let n = match &cmd.launch {
        cmdgraph_ir::graph::Launch::Range(r) if r.len() == 1 => *r.first()?,
        _ => return None,
    };
    let kernel = module.kernels.try_get(cmd.kernel)?;
    let KernelBody::Ir(body) = &kernel.body else { return None };
    if kernel.params.len() != cmd.args.len() {
        return None;
    }
    let mut param_mem = vec![None; kernel.params.len()];
    let mut has_dyn = false;
    for (i, (param, arg)) in kernel.params.iter().zip(&cmd.args).enumerate() {
        match (param.ty, arg) {
            (ParamType::Buffer { elem, .. }, Arg::Value(ArgValue::Pointer(p))) if p.offset == 0 => {
                let (mem_elem, count) = memory_shape(module, graph, p.base)?;
                if mem_elem != elem || count < n {
                    return None;
                }
                param_mem[i] = Some((p.base, elem.size()));
            }
            (ParamType::Value(_), Arg::Value(ArgValue::Scalar(_))) => {}
            (ParamType::Value(_), Arg::Dyn(p)) => {
                if !matches!(graph.dyn_params.try_get(*p)?.value, ArgValue::Scalar(_)) {
                    return None;
                }
                has_dyn = true;
            }
            _ => return None,
        }
    }
    let is_gid = |v| match body.values.try_get(v).map(|v| v.def) {
        Some(ValueDef::Result(op, 0)) => {
            matches!(body.ops.try_get(op).map(|o| &o.kind), Some(OpKind::Builtin(Builtin::GlobalId, 0)))
        }
        _ => false,
    };
    let mem_of = |mem: &MemBase| match mem {
        MemBase::Value(v) => match body.values.try_get(*v).map(|v| v.def) {
            Some(ValueDef::Param(i)) => param_mem.get(i as usize).copied().flatten(),
            _ => None,
        },
        MemBase::Global(_) => None,
    };
    let mut reads: Vec<(MemRef, u64)> = Vec::new();
    let mut writes: Vec<(MemRef, u64)> = Vec::new();
    let add = |list: &mut Vec<(MemRef, u64)>, entry: (MemRef, u64)| {
        if !list.iter().any(|(m, _)| *m == entry.0) {
            list.push(entry);
        }
    };
    for &op in &body.entry.ops {
        match &body.ops.try_get(op)?.kind {
            OpKind::Load { mem, index } if is_gid(*index) => {
                add(&mut reads, mem_of(mem)?);
            }
            OpKind::Store { mem, index, .. } if is_gid(*index) => {
                add(&mut writes, mem_of(mem)?);
            }
            OpKind::Builtin(Builtin::GlobalId, 0)
            | OpKind::Const(..)
            | OpKind::Unary(..)
            | OpKind::Binary(..)
            | OpKind::Fma(..)
            | OpKind::Cmp(..)
            | OpKind::Select(..)
            | OpKind::Cast(..)
            | OpKind::Splat(..)
            | OpKind::Extract(..)
            | OpKind::Insert(..)
            | OpKind::Construct(..) => {}
            _ => return None,
        }
    }
    let bytes = reads.iter().chain(&writes).map(|(_, b)| b).sum();
    let (reads, writes) = (reads.into_iter().map(|r| r.0).collect(), writes.into_iter().map(|w| w.0).collect());
    Some(Candidate { n, reads, writes, bytes, has_dyn })
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
/// sub-graphs and dynamic command groups with host-task alternatives.
pub fn is_fence(graph: &Graph, node: Handle<Node>) -> bool {
    matches!(
        graph.node_type(node),
        NodeType::HostTask | NodeType::NativeCommand | NodeType::Barrier | NodeType::Subgraph
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

/// The nodes each group of a greedy round contracts into one (its members), the group
/// owning each such node, and the topological positions each group spans. Only groups of two or more nodes are kept: a single node
/// contracts to itself.
#[derive(Default)]
pub struct Contracted {
    sets: Vec<Vec<u32>>,
    owner: BTreeMap<u32, usize>,
    spans: BTreeMap<usize, (u32, u32)>,
    /// The largest last position over `spans` (spans only grow, so a running maximum).
    max_hi: u32,
}

impl Contracted {
    /// Records that group `g` now contracts `nodes`, which span topological positions `span`.
    fn set(&mut self, g: usize, nodes: BTreeSet<u32>, span: (u32, u32)) {
        if nodes.len() < 2 {
            return;
        }
        if self.sets.len() <= g {
            self.sets.resize(g + 1, Vec::new());
        }
        for &v in &nodes {
            self.owner.entry(v).or_insert(g);
        }
        self.spans.insert(g, span);
        self.max_hi = self.max_hi.max(span.1);
        if let Some(slot) = self.sets.get_mut(g) {
            *slot = nodes.into_iter().collect();
        }
    }

    /// The last topological position from which a path may still come back to positions
    /// before `max`: a group starting before the bound ends inside it, so a jump through
    /// it can lead back.
    ///
    /// Groups grow in topological order, so every span usually ends at or before `max`:
    /// then nothing widens the bound and no span is scanned (scanning them all for every
    /// check made grouping quadratic in the number of groups).
    fn horizon(&self, max: u32, except: usize, work: &Cell<u64>) -> u32 {
        if self.max_hi <= max {
            return max;
        }
        let mut bound = max;
        loop {
            let wider = self
                .spans
                .iter()
                .inspect(|_| work.set(work.get() + 1))
                .filter(|(g, (lo, _))| **g != except && *lo < bound)
                .map(|(_, (_, hi))| *hi)
                .fold(bound, u32::max);
            if wider == bound {
                return bound;
            }
            bound = wider;
        }
    }
}

/// The grouping state of one graph.
pub struct Planner<'a> {
    graph: &'a Graph,
    cands: &'a [Option<Candidate>],
    temps: &'a BTreeMap<u32, Temp>,
    blocked: BTreeSet<u32>,
    succ: Csr,
    pred: Csr,
    order: Vec<u32>,
    pos: Vec<u32>,
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
            pos[v as usize] = i as u32;
        }
        Some(Planner { graph, cands, temps, blocked: BTreeSet::new(), succ, pred, order, pos, work: Cell::new(0) })
    }

    fn name(&self, v: u32) -> String {
        Handle::<Node>::from_usize(v as usize)
            .and_then(|h| self.graph.nodes.try_get(h))
            .map(|n| format!("%{}", n.name))
            .unwrap_or_default()
    }

    fn cand(&self, v: u32) -> Option<&Candidate> {
        self.cands.get(v as usize).and_then(|c| c.as_ref())
    }

    fn temp_dies(&self, m: &MemRef) -> Option<u32> {
        let MemRef::Alloc(a) = m else { return None };
        let a = a.index() as u32;
        (self.temps.get(&a)?.fusable && !self.blocked.contains(&a)).then_some(a)
    }

    /// Groups of two or more members, and why links were refused (for `--explain`).
    pub fn plan(self) -> (Vec<Group>, Vec<String>) {
        let (groups, refusals, _) = self.plan_counted();
        (groups, refusals)
    }

    /// [`Planner::plan`], with the steps its legality checks took (nodes visited by
    /// reachability searches, spans scanned): proportional to the graph's size when
    /// grouping is near-linear (`passes/tests/fuse.rs` holds it to that).
    pub fn plan_counted(mut self) -> (Vec<Group>, Vec<String>, u64) {
        loop {
            let (groups, refusals) = self.greedy();
            // A temporary whose uses ended in different groups does not die: block it and
            // group again (each round blocks at least one temporary).
            let mut group_of = BTreeMap::new();
            for (g, group) in groups.iter().enumerate() {
                for &m in &group.members {
                    group_of.insert(m, g);
                }
            }
            let mut changed = false;
            for (&a, t) in self.temps {
                if !t.fusable || self.blocked.contains(&a) {
                    continue;
                }
                let gs: BTreeSet<_> = t.users.iter().map(|u| group_of.get(u)).collect();
                if gs.len() > 1 || gs.contains(&None) {
                    self.blocked.insert(a);
                    changed = true;
                }
            }
            if !changed {
                let groups = groups.into_iter().filter(|g| g.members.len() > 1).collect();
                return (groups, refusals, self.work.get());
            }
        }
    }

    fn greedy(&self) -> (Vec<Group>, Vec<String>) {
        let mut groups: Vec<Group> = Vec::new();
        let mut group_of: BTreeMap<u32, usize> = BTreeMap::new();
        let mut contracted = Contracted::default();
        let mut last_writer: BTreeMap<(bool, usize), u32> = BTreeMap::new();
        let mut last_reader: BTreeMap<(bool, usize), u32> = BTreeMap::new();
        let mut refusals = Vec::new();
        for &v in &self.order {
            let Some(c) = self.cand(v) else { continue };
            let same_n = |w: &u32| self.cand(*w).is_some_and(|d| d.n == c.n);
            let mut options: Vec<(usize, bool, u32)> = Vec::new();
            for m in &c.reads {
                let Some(&w) = last_writer.get(&key(m)).filter(|w| same_n(w)) else { continue };
                if matches!(m, MemRef::Alloc(_)) && self.temp_dies(m).is_none() {
                    if let MemRef::Alloc(a) = m {
                        let by = self.temps.get(&(a.index() as u32)).and_then(|t| t.outside_user);
                        let by = by.map(|u| format!(" (by {})", self.name(u))).unwrap_or_default();
                        refusals.push(format!(
                            "not fused: {} -> {}: temporary {} is used outside the chain{by}",
                            self.name(w),
                            self.name(v),
                            self.name(a.index() as u32)
                        ));
                    }
                    continue;
                }
                if let Some(&g) = group_of.get(&w) {
                    options.push((g, true, w));
                }
            }
            for m in &c.reads {
                if let Some(&g) = last_reader.get(&key(m)).filter(|w| same_n(w)).and_then(|w| group_of.get(w)) {
                    options.push((g, false, v));
                }
            }
            options.retain(|(g, _, _)| groups.get(*g).is_some_and(|gr| gr.members.len() < MAX_MEMBERS));
            let mut tried = BTreeSet::new();
            let mut joined = None;
            for (g, vertical, w) in options {
                if !tried.insert(g) {
                    continue;
                }
                let Some(group) = groups.get(g) else { continue };
                let mut members = group.members.clone();
                members.push(v);
                match self.check(&members, g, &contracted) {
                    Ok(set) => {
                        let span = self.span(&set);
                        contracted.set(g, set, span);
                        joined = Some((g, vertical));
                        break;
                    }
                    Err(why) if vertical => {
                        refusals.push(format!("not fused: {} -> {}: {why}", self.name(w), self.name(v)))
                    }
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
            group_of.insert(v, g);
            for m in &c.writes {
                last_writer.insert(key(m), v);
            }
            for m in &c.reads {
                last_reader.insert(key(m), v);
            }
        }
        for group in &mut groups {
            let (removed, dead) = self.removed(&group.members);
            group.removed = removed;
            group.dead = dead;
        }
        (groups, refusals)
    }

    /// The `async_malloc`/`async_free` nodes and allocations of the temporaries that die
    /// with `members`.
    fn removed(&self, members: &[u32]) -> (Vec<u32>, Vec<u32>) {
        let mut dead = BTreeSet::new();
        for &m in members {
            if let Some(c) = self.cand(m) {
                dead.extend(c.reads.iter().chain(&c.writes).filter_map(|r| self.temp_dies(r)));
            }
        }
        // The allocation goes with its first user; its frees only once every user is in
        // (until then they run after a user outside the group).
        let mut removed = BTreeSet::new();
        for &a in &dead {
            removed.insert(a);
            if let Some(t) = self.temps.get(&a).filter(|t| t.users.iter().all(|u| members.contains(u))) {
                removed.extend(t.frees.iter().copied());
            }
        }
        (removed.into_iter().collect(), dead.into_iter().collect())
    }

    /// Whether `members`, as the new content of group `group`, can become one node while every other group of `contracted` becomes
    /// one node too: contracting them creates no cycle, no work moves across a fence, and a
    /// dynamic parameter does not land on a node recorded from a queue. Returns the nodes
    /// the group then contracts.
    pub fn check(&self, members: &[u32], group: usize, contracted: &Contracted) -> Result<BTreeSet<u32>, String> {
        // The dying temporaries' `async_malloc`/`async_free` nodes are removed with a bypass
        // (their ordering stays as edges), not contracted: a free recorded after a later
        // node must not pull that node into the group.
        let set: BTreeSet<u32> = members.iter().copied().collect();
        let pos = |v: u32| self.pos.get(v as usize).copied().unwrap_or(0);
        let max = set.iter().map(|&v| pos(v)).max().unwrap_or(0);
        let min = set.iter().map(|&v| pos(v)).min().unwrap_or(0);
        // A path leaving the set and coming back would become a cycle through the fused
        // node. Paths run in the quotient graph: entering another group continues from all
        // of its nodes, since that group becomes one node too. Two groups checked one at a
        // time against the input graph could otherwise each be acyclic and form a cycle
        // together (a -> d and c -> b with {a, b} and {c, d} fused).
        let horizon = contracted.horizon(max, group, &self.work);
        // The dying temporaries' nodes are bypassed: a path that reaches the set again
        // through them only becomes an edge inside the fused node. A path is `real` once it
        // passes any other node.
        let (bypassed, _) = self.removed(members);
        let bypassed: BTreeSet<u32> = bypassed.into_iter().collect();
        let (mut seen, mut jumped) = (BTreeSet::new(), BTreeSet::new());
        let mut stack: Vec<(u32, bool)> = set
            .iter()
            .flat_map(|&s| self.succ.neighbours(s).iter().copied())
            .filter(|w| !set.contains(w))
            .map(|w| (w, !bypassed.contains(&w)))
            .collect();
        while let Some((x, real)) = stack.pop() {
            if !seen.insert((x, real)) {
                continue;
            }
            self.work.set(self.work.get() + 1);
            let other = contracted
                .owner
                .get(&x)
                .filter(|&&h| h != group && jumped.insert(h))
                .and_then(|&h| contracted.sets.get(h));
            let jumps = other.into_iter().flatten().copied().filter(|y| *y != x);
            for y in jumps {
                if set.contains(&y) {
                    return Err(format!("fusing would create a cycle through {}", self.name(x)));
                }
                stack.push((y, true));
            }
            for &w in self.succ.neighbours(x) {
                if set.contains(&w) {
                    if real {
                        return Err(format!("fusing would create a cycle through {}", self.name(x)));
                    }
                    continue;
                }
                // Past the horizon no path comes back, through the input's edges or through
                // another group's contraction.
                if pos(w) <= horizon {
                    stack.push((w, real || !bypassed.contains(&w)));
                }
            }
        }
        // A fence before (after) one member must be before (after) every member already.
        for &s in &set {
            for &x in self.pred.neighbours(s) {
                if !set.contains(&x) && node(x).is_some_and(|h| is_fence(self.graph, h)) {
                    let reached = self.reach(x, &self.succ, |w| pos(w) <= max);
                    if let Some(&m) = members.iter().find(|m| !reached.contains(m)) {
                        return Err(format!("{} would move after {}", self.name(m), self.name(x)));
                    }
                }
            }
            for &y in self.succ.neighbours(s) {
                if !set.contains(&y) && node(y).is_some_and(|h| is_fence(self.graph, h)) {
                    let reached = self.reach(y, &self.pred, |w| pos(w) >= min);
                    if let Some(&m) = members.iter().find(|m| !reached.contains(m)) {
                        return Err(format!("{} would move before {}", self.name(m), self.name(y)));
                    }
                }
            }
        }
        let last = members.iter().copied().max().unwrap_or(0);
        let queued = node(last).and_then(|h| self.graph.nodes.try_get(h)).is_some_and(|n| n.queue.is_some());
        if queued && members.iter().any(|&m| self.cand(m).is_some_and(|c| c.has_dyn)) {
            return Err(format!("a dynamic parameter cannot move to {}, recorded from a queue", self.name(last)));
        }
        Ok(set)
    }

    /// The first and last topological positions of `nodes`.
    fn span(&self, nodes: &BTreeSet<u32>) -> (u32, u32) {
        let pos = |v: u32| self.pos.get(v as usize).copied().unwrap_or(0);
        let lo = nodes.iter().map(|&v| pos(v)).min().unwrap_or(0);
        let hi = nodes.iter().map(|&v| pos(v)).max().unwrap_or(0);
        (lo, hi)
    }

    fn reach(&self, from: u32, adj: &Csr, within: impl Fn(u32) -> bool) -> BTreeSet<u32> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from];
        while let Some(x) = stack.pop() {
            self.work.set(self.work.get() + 1);
            for &w in adj.neighbours(x) {
                if within(w) && seen.insert(w) {
                    stack.push(w);
                }
            }
        }
        seen
    }
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
