//! Data races (E0280) and in-order queue order (E0259).
//!
//! A **data race** is two commands with no happens-before between them (no path either way
//! along the graph's edges) whose memory footprints overlap, at least one of them writing.
//! Footprints are the ones the executor's barriers are built from (executor.md,
//! "Barriers"): byte ranges of memcpy, memset and memfill; host task and native access
//! lists (the whole memory, read or written as the mode says); for kernels, the footprint
//! of their launch (footprint.rs: access flags and element ranges, exact where the index
//! intervals are known) mapped to bytes of the memory each argument binds (pointer offset,
//! accessor range); a `dynamic` node touches what all of its alternatives touch (switching
//! alternatives must not create a race); a `subgraph` node what its graph's commands touch.
//! `prefetch` and `memadvise` are hints and touch nothing; allocations are checked by
//! alloc.rs. A dynamic parameter is taken at its current value.
//!
//! # Cost
//!
//! Commands are visited once, in topological order, and each memory keeps only the
//! accesses a later command can still race with (the idea of vector-clock race detectors
//! such as FastTrack, with reachability in place of clocks): an access that reaches a later
//! write covering its bytes is dropped, since anything racing with it later races with that
//! write too; a read reaching a later read that covers it is dropped likewise (checked
//! against the last read only, which is the chain case and costs one question). Live
//! accesses are indexed by their first byte, so disjoint ranges of one memory (tiles) are
//! not compared with each other. Each command reports at most one race per memory and stops
//! looking there, so a graph of 10^4 unordered writers costs O(n), not O(n²) reports.
//!
//! Reachability questions are answered by a direct edge, else by a short depth-first search
//! from the earlier node through ranks below the later one's (at most [`QUICK_STEPS`] nodes,
//! epoch marks, no hashing), else by a search that is resumed, not restarted, by the next
//! question from the same node (questions come in rank order) and is dropped with that
//! node's last live access. For a graph where each memory is rewritten every few commands
//! (the usual case, and the benchmark graph) this is near-linear. The worst case, an access
//! kept live across the whole graph and asked about from every later command, costs one
//! resumed search per such access: O(live accesses × (nodes + edges)).

use super::ctx::Gx;
use super::error::VerifyError;
use super::topo::Topo;
use crate::arena::Handle;
use crate::footprint::{kernel_footprint, Extent, Footprint, Place};
use crate::graph::{Alternative, Arg, ArgValue, Graph, HostTaskCommand, KernelCommand, Launch, MemRef, Node, NodeKind};
use crate::kernel::ParamType;
use crate::module::Module;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// Byte ranges of one memory a command touches.
#[derive(Clone, Copy, Debug)]
struct Touch {
    mem: MemRef,
    lo: u64,
    hi: u64,
    write: bool,
}

/// Deepest sub-graph nesting followed (docs/ir.md's limit, E0268); deeper chains are
/// reported there and summarised as touching nothing more.
const MAX_LEVELS: usize = 256;

/// What commands touch, with the footprints and sub-graph summaries computed once.
struct Touches<'a> {
    m: &'a Module,
    /// Footprints by kernel, then launch: 10^5 launches of one kernel cost one analysis,
    /// and a lookup allocates nothing (a kernel has few distinct launches).
    footprints: HashMap<usize, Vec<(Launch, Footprint)>>,
    /// What each sub-graph's commands touch together (byte hulls per memory and mode).
    graphs: HashMap<usize, Vec<Touch>>,
    /// Graphs being summarised (a graph that contains itself is E0265).
    open: HashSet<usize>,
}

impl<'a> Touches<'a> {
    fn new(m: &'a Module) -> Touches<'a> {
        Touches { m, footprints: HashMap::default(), graphs: HashMap::default(), open: HashSet::default() }
    }

    /// Size in bytes of the memory `r` names in graph `g`, `None` when it does not resolve
    /// (reported by the operand checks).
    fn size(&self, g: &Graph, r: MemRef) -> Option<u64> {
        match r {
            MemRef::Memory(h) => self.m.memories.try_get(h).map(|mem| mem.size_bytes()),
            MemRef::Alloc(n) => match g.nodes.try_get(n)?.kind {
                NodeKind::AsyncMalloc { elem, count, .. } => Some(elem.size().saturating_mul(count)),
                _ => None,
            },
        }
    }

    /// Pushes `[lo, lo + bytes)` of `mem`, cut to the memory.
    fn push(&self, g: &Graph, mem: MemRef, lo: u64, bytes: u64, write: bool, out: &mut Vec<Touch>) {
        let Some(size) = self.size(g, mem) else { return };
        let hi = lo.saturating_add(bytes).min(size);
        if lo < hi {
            out.push(Touch { mem, lo, hi, write });
        }
    }

    /// Everything node `node` of `g` touches, appended to `out`.
    fn node(&mut self, g: &Graph, node: &Node, level: usize, out: &mut Vec<Touch>) {
        match &node.kind {
            NodeKind::Kernel(cmd) => self.kernel(g, cmd, out),
            NodeKind::Memcpy { dst, src, bytes } => {
                self.push(g, src.base, src.offset, *bytes, false, out);
                self.push(g, dst.base, dst.offset, *bytes, true, out);
            }
            NodeKind::Memset { dst, bytes, .. } => self.push(g, dst.base, dst.offset, *bytes, true, out),
            NodeKind::Memfill { dst, pattern, count } => {
                let bytes = pattern.ty.map_or(0, |t| t.size().saturating_mul(*count));
                self.push(g, dst.base, dst.offset, bytes, true, out);
            }
            NodeKind::HostTask(t) | NodeKind::Native(t) => self.host(g, t, out),
            // A send reads its bytes, a receive writes them, an all-reduce does both.
            NodeKind::Comm(c) => {
                let a = c.op.access();
                if a.reads() {
                    self.push(g, c.ptr.base, c.ptr.offset, c.bytes, false, out);
                }
                if a.writes() {
                    self.push(g, c.ptr.base, c.ptr.offset, c.bytes, true, out);
                }
            }
            NodeKind::Dynamic { dcg } => {
                for alt in g.dcgs.try_get(*dcg).into_iter().flat_map(|d| &d.alternatives) {
                    match alt {
                        Alternative::Kernel(cmd) => self.kernel(g, cmd, out),
                        Alternative::HostTask(t) => self.host(g, t, out),
                        Alternative::Other(_) => {}
                    }
                }
            }
            NodeKind::Subgraph { graph } => out.extend(self.subgraph(graph.index(), level + 1)),
            // The condition word is read; the bodies touch what they touch, each run as a
            // sub-graph (docs/conditional.md).
            NodeKind::Conditional { cond, bodies, .. } => {
                self.push(g, cond.base, cond.offset, 4, false, out);
                for b in bodies {
                    out.extend(self.subgraph(b.index(), level + 1));
                }
            }
            NodeKind::Empty
            | NodeKind::Prefetch { .. }
            | NodeKind::Memadvise { .. }
            | NodeKind::Barrier { .. }
            | NodeKind::AsyncMalloc { .. }
            | NodeKind::AsyncFree { .. } => {}
        }
    }

    /// A host task or native command touches the whole of each memory it lists.
    fn host(&self, g: &Graph, t: &HostTaskCommand, out: &mut Vec<Touch>) {
        for a in &t.access {
            self.push(g, a.mem, 0, u64::MAX, a.mode.writes(), out);
        }
    }

    /// A kernel command: its launch's footprint on the memory its arguments bind.
    fn kernel(&mut self, g: &Graph, cmd: &KernelCommand, out: &mut Vec<Touch>) {
        let Some(kernel) = self.m.kernels.try_get(cmd.kernel) else { return };
        let known = self.footprints.entry(cmd.kernel.index()).or_default();
        let at = match known.iter().position(|(l, _)| *l == cmd.launch) {
            Some(at) => at,
            None => {
                known.push((cmd.launch.clone(), kernel_footprint(&self.m.functions, kernel, &cmd.launch)));
                known.len() - 1
            }
        };
        let Some((_, fp)) = self.footprints.get(&cmd.kernel.index()).and_then(|k| k.get(at)) else { return };
        for (place, access) in &fp.accesses {
            let (mem, window, elem) = match *place {
                Place::Param(i) => {
                    let value = match cmd.args.get(i as usize) {
                        Some(Arg::Value(v)) => v,
                        Some(Arg::Dyn(d)) => match g.dyn_params.try_get(*d) {
                            Some(p) => &p.value,
                            None => continue,
                        },
                        None => continue,
                    };
                    let Some(ParamType::Buffer { elem, .. }) = kernel.params.get(i as usize).map(|p| p.ty) else {
                        continue;
                    };
                    let es = elem.size();
                    match value {
                        ArgValue::Pointer(p) => {
                            let Some(size) = self.size(g, p.base) else { continue };
                            // `Whole` is the whole memory the pointer is into.
                            (p.base, (p.offset, size, 0, size), es)
                        }
                        ArgValue::Accessor(a) => {
                            let Some(size) = self.size(g, a.buffer) else { continue };
                            // Only the accessor's range is reachable; indices count from its start.
                            let (lo, hi) = a
                                .range
                                .map_or((0, size), |(lo, hi)| (lo.saturating_mul(es), hi.saturating_mul(es).min(size)));
                            (a.buffer, (lo, hi, lo, hi), es)
                        }
                        _ => continue,
                    }
                }
                Place::Global(h) => {
                    let Some(mem) = self.m.memories.try_get(h) else { continue };
                    let size = mem.size_bytes();
                    (MemRef::Memory(h), (0, size, 0, size), mem.elem.size())
                }
            };
            // (base of the indices, memory end, window start, window end)
            let (base, _, wlo, whi) = window;
            // An accessor range or offset past the memory is reported by the operand checks.
            if wlo >= whi {
                continue;
            }
            let (lo, hi) = match access.extent {
                Extent::Elems { lo, hi } => {
                    (base.saturating_add(lo.saturating_mul(elem)), base.saturating_add(hi.saturating_mul(elem)))
                }
                Extent::Whole => (wlo, whi),
            };
            // Bounds from index types may run past the memory; past it is out of bounds.
            let (lo, hi) = (lo.clamp(wlo, whi), hi.clamp(wlo, whi));
            if lo < hi && (access.read || access.write) {
                out.push(Touch { mem, lo, hi, write: access.write });
            }
        }
    }

    /// What the commands of graph `gi` touch together: one byte hull per memory and mode.
    fn subgraph(&mut self, gi: usize, level: usize) -> Vec<Touch> {
        if let Some(t) = self.graphs.get(&gi) {
            return t.clone();
        }
        let Some(g) = Handle::<Graph>::from_usize(gi).and_then(|h| self.m.graphs.try_get(h)) else {
            return Vec::new();
        };
        if level > MAX_LEVELS || !self.open.insert(gi) {
            return Vec::new();
        }
        let mut all = Vec::new();
        for (_, node) in g.nodes.iter() {
            self.node(g, node, level, &mut all);
        }
        self.open.remove(&gi);
        let mut hulls: BTreeMap<((bool, usize), bool), Touch> = BTreeMap::new();
        for t in all {
            hulls
                .entry((key(t.mem), t.write))
                .and_modify(|h| {
                    h.lo = h.lo.min(t.lo);
                    h.hi = h.hi.max(t.hi);
                })
                .or_insert(t);
        }
        let touches: Vec<Touch> = hulls.into_values().collect();
        self.graphs.insert(gi, touches.clone());
        touches
    }
}

/// An orderable key of a memory reference.
fn key(m: MemRef) -> (bool, usize) {
    match m {
        MemRef::Memory(h) => (false, h.index()),
        MemRef::Alloc(n) => (true, n.index()),
    }
}

/// A search from one node along the edges, resumable: every node of rank up to `done`
/// that the source reaches is in `seen`; `frontier` holds reached nodes not yet expanded.
#[derive(Default)]
struct Search {
    seen: HashSet<u32>,
    frontier: BinaryHeap<Reverse<(u32, u32)>>,
    /// How many live accesses may still ask about this source.
    users: u32,
}

/// Reachability questions in topological rank order (see the module documentation).
struct Reach<'t> {
    topo: &'t Topo,
    searches: HashMap<u32, Search>,
    /// Finished searches, emptied, to reuse their memory.
    spare: Vec<Search>,
    /// Marks of the one-off searches: node `i` is seen when `mark[i] == epoch`.
    mark: Vec<u32>,
    epoch: u32,
    stack: Vec<u32>,
}

/// Nodes a one-off search may expand before the question moves to a resumable search.
const QUICK_STEPS: u32 = 512;

impl Reach<'_> {
    fn rank(&self, v: u32) -> u32 {
        self.topo.rank.get(v as usize).copied().unwrap_or(u32::MAX)
    }

    /// Whether `from` reaches `to` (`from` earlier in rank; the graph is acyclic).
    fn reaches(&mut self, from: u32, to: u32) -> bool {
        let target = self.rank(to);
        if self.rank(from) >= target {
            return false;
        }
        // The chain case: a direct edge, without a search.
        if self.topo.succ.next(from as usize).contains(&to) {
            return true;
        }
        // Most questions are answered by a short search that costs no hashing; one that runs
        // long (an access asked about from far away, again and again) is answered by a
        // resumable search instead, so that repeated questions do not repeat the work.
        let resumed = self.searches.get(&from).is_some_and(|s| !s.seen.is_empty());
        if !resumed {
            if let Some(found) = self.quick(from, to, target) {
                return found;
            }
        }
        let topo = self.topo;
        let s = self.searches.entry(from).or_insert_with(|| self.spare.pop().unwrap_or_default());
        if s.seen.is_empty() {
            s.seen.insert(from);
            s.frontier.push(Reverse((topo.rank[from as usize], from)));
        }
        while let Some(&Reverse((r, v))) = s.frontier.peek() {
            if r > target {
                break;
            }
            s.frontier.pop();
            for &w in topo.succ.next(v as usize) {
                if s.seen.insert(w) {
                    s.frontier.push(Reverse((topo.rank[w as usize], w)));
                }
            }
        }
        s.seen.contains(&to)
    }

    /// A depth-first search from `from` through ranks below `target` (the rank of `to`),
    /// of at most [`QUICK_STEPS`] nodes: whether it reaches `to`, or `None` past the budget.
    fn quick(&mut self, from: u32, to: u32, target: u32) -> Option<bool> {
        let topo = self.topo;
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.mark.fill(0);
            self.epoch = 1;
        }
        let epoch = self.epoch;
        self.stack.clear();
        self.stack.push(from);
        let mut steps = 0;
        while let Some(v) = self.stack.pop() {
            steps += 1;
            if steps > QUICK_STEPS {
                return None;
            }
            for &w in topo.succ.next(v as usize) {
                if w == to {
                    return Some(true);
                }
                // Ranks grow along edges: a node ranked at or past `to` cannot lead to it.
                let Some(m) = self.mark.get_mut(w as usize) else { continue };
                if *m != epoch && topo.rank.get(w as usize).is_some_and(|&r| r < target) {
                    *m = epoch;
                    self.stack.push(w);
                }
            }
        }
        Some(false)
    }

    /// Forgets the search from `v`, keeping its memory for the next one.
    fn drop_search(&mut self, v: u32) {
        if let Some(mut s) = self.searches.remove(&v) {
            s.seen.clear();
            s.frontier.clear();
            s.users = 0;
            self.spare.push(s);
        }
    }

    /// One more live access from `v`.
    fn hold(&mut self, v: u32) {
        let spare = &mut self.spare;
        self.searches.entry(v).or_insert_with(|| spare.pop().unwrap_or_default()).users += 1;
    }

    /// One live access from `v` fewer; its search goes with the last.
    fn release(&mut self, v: u32) {
        if let Some(s) = self.searches.get_mut(&v) {
            s.users = s.users.saturating_sub(1);
            if s.users == 0 {
                self.drop_search(v);
            }
        }
    }
}

/// A live access: its node and end (its start is its key).
#[derive(Clone, Copy)]
struct Entry {
    node: u32,
    hi: u64,
}

/// The live accesses of one kind to one memory, by first byte.
#[derive(Default)]
struct Live {
    by_lo: BTreeMap<(u64, u64), Entry>,
    /// The longest range ever inserted: an entry overlapping `[lo, hi)` starts at or after
    /// `lo - max_len`.
    max_len: u64,
    /// The last entry inserted, if still live.
    last: Option<(u64, u64)>,
}

impl Live {
    /// Keys and entries overlapping `[lo, hi)`, in order of first byte.
    fn overlapping(&self, lo: u64, hi: u64) -> impl Iterator<Item = ((u64, u64), Entry)> + '_ {
        self.by_lo
            .range((lo.saturating_sub(self.max_len), 0)..(hi, 0))
            .filter(move |(_, e)| e.hi > lo)
            .map(|(k, e)| (*k, *e))
    }
}

/// The live accesses of one memory.
#[derive(Default)]
struct MemState {
    writes: Live,
    reads: Live,
}

/// Checks every pair of unordered commands for a data race, and every in-order queue for
/// a missing order between consecutive submissions. Needs an acyclic graph (a cycle is
/// already E0251, and no order is defined then).
pub(super) fn check(gx: &Gx<'_>, topo: &Topo, errors: &mut Vec<VerifyError>) {
    if !topo.acyclic {
        return;
    }
    let mut reach = Reach {
        topo,
        searches: HashMap::default(),
        spare: Vec::new(),
        mark: vec![0; topo.rank.len()],
        epoch: 0,
        stack: Vec::new(),
    };
    check_in_order(gx, &mut reach, errors);
    let g = gx.g;
    let mut touches = Touches::new(gx.m);
    let mut states: HashMap<(bool, usize), MemState> = HashMap::default();
    let mut scratch = Vec::new();
    let mut drop: Vec<(bool, (u64, u64), u32)> = Vec::new();
    let mut seq = 0u64;
    for r in 0..topo.ranks {
        let Some(&b) = topo.nodes_at(r).first() else { continue };
        let Some(node) = Handle::<Node>::from_usize(b as usize).and_then(|h| g.nodes.try_get(h)) else { continue };
        scratch.clear();
        touches.node(g, node, 1, &mut scratch);
        for t in &scratch {
            let st = states.entry(key(t.mem)).or_default();
            drop.clear();
            let mut raced = None;
            // Writes conflict with everything; reads only with writes.
            let lists: &[(bool, &Live)] =
                if t.write { &[(true, &st.writes), (false, &st.reads)] } else { &[(true, &st.writes)] };
            'scan: for &(is_write, live) in lists {
                for (k, e) in live.overlapping(t.lo, t.hi) {
                    if e.node == b {
                        continue;
                    }
                    if !reach.reaches(e.node, b) {
                        raced = Some((e, k.0, is_write));
                        break 'scan;
                    }
                    // Anything racing later with an access covered by this write races with
                    // the write too.
                    if t.write && t.lo <= k.0 && e.hi <= t.hi {
                        drop.push((is_write, k, e.node));
                    }
                }
            }
            if !t.write {
                // A read covered by a later read it reaches adds nothing: any later write
                // racing with it also races with the later read.
                if let Some(k) = st.reads.last {
                    if let Some(e) = st.reads.by_lo.get(&k).copied() {
                        if e.node != b && t.lo <= k.0 && e.hi <= t.hi && reach.reaches(e.node, b) {
                            drop.push((false, k, e.node));
                        }
                    }
                }
            }
            for &(is_write, k, v) in &drop {
                let live = if is_write { &mut st.writes } else { &mut st.reads };
                if live.by_lo.remove(&k).is_some() {
                    if live.last == Some(k) {
                        live.last = None;
                    }
                    reach.release(v);
                }
            }
            let live = if t.write { &mut st.writes } else { &mut st.reads };
            let k = (t.lo, seq);
            seq += 1;
            live.by_lo.insert(k, Entry { node: b, hi: t.hi });
            live.max_len = live.max_len.max(t.hi - t.lo);
            live.last = Some(k);
            reach.hold(b);
            if let Some((e, lo, write)) = raced {
                if let (Some(first), Some(second)) =
                    (Handle::from_usize(e.node as usize), Handle::from_usize(b as usize))
                {
                    errors.push(race(gx, t, (first, e.hi, lo, write), second));
                }
            }
        }
    }
}

/// The E0280 error for `t` (of node `b`) racing with the live access `(a, hi, lo, write)`
/// to `[lo, hi)`. The pair is told in creation order: the fix orders the node created first
/// before the other, as the program most likely meant, and `after(...)` on the later node
/// can always name it. Either edge keeps the graph acyclic, as neither node reaches the other.
fn race(gx: &Gx<'_>, t: &Touch, (a, hi, lo, write): (Handle<Node>, u64, u64, bool), b: Handle<Node>) -> VerifyError {
    let (elem_size, elem_ty) = match gx.resolve(t.mem) {
        Ok(info) => (info.elem.size(), info.elem.to_string()),
        Err(_) => (1, "u8".to_string()),
    };
    let (x, y) = ((a, write, (lo, hi)), (b, t.write, (t.lo, t.hi)));
    let ((first, first_writes, first_bytes), (second, second_writes, second_bytes)) =
        if a.index() < b.index() { (x, y) } else { (y, x) };
    VerifyError::DataRace {
        memory: gx.mem_name(t.mem),
        first: gx.node_name(first),
        first_writes,
        first_bytes,
        second: gx.node_name(second),
        second_writes,
        second_bytes,
        elem: (elem_size, elem_ty),
        fix: format!("add `after({})` to {}", gx.node_name(first), gx.node_name(second)),
        span: gx.node_span(second),
        first_span: gx.node_span(first),
    }
}

/// E0259: on an `in_order` queue each submission is ordered after the previous one.
/// Reachability, not a direct edge, is required, so that passes removing a node in between
/// keep the graph valid.
fn check_in_order(gx: &Gx<'_>, reach: &mut Reach<'_>, errors: &mut Vec<VerifyError>) {
    let g = gx.g;
    if !g.queues.iter().any(|(_, q)| q.in_order) {
        return;
    }
    let mut last: HashMap<usize, Handle<Node>> = HashMap::default();
    for (n, node) in g.nodes.iter() {
        let Some(q) = node.queue else { continue };
        if !g.queues.try_get(q).is_some_and(|q| q.in_order) {
            continue;
        }
        if let Some(prev) = last.insert(q.index(), n) {
            let found = reach.reaches(prev.index() as u32, n.index() as u32);
            // One-off questions: no live access holds these searches.
            reach.drop_search(prev.index() as u32);
            if !found {
                errors.push(VerifyError::InOrderUnordered {
                    queue: gx.queue_name(q),
                    prev: gx.node_name(prev),
                    node: gx.node_name(n),
                    span: gx.node_span(n),
                    prev_span: gx.node_span(prev),
                });
            }
        }
    }
}
