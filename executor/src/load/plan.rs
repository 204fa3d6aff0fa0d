//! Checks of a graph plan against the graph it is for: the launch table (existing kernel
//! nodes and alternatives, variants of the right kernel, no duplicates) and the memory plan
//! (offsets inside the pool and aligned, each allocation placed once, and no two allocations
//! that can be live at once sharing bytes). The schedule is checked at finalize
//! (schedule.rs, `from_plan`).
//!
//! The lifetime rule is the planner's (passes/src/memory/lifetimes.rs), which the executor
//! cannot link: allocation `a` ends before `b` begins (`a ≺ b`) iff `a`'s `async_free` is an
//! ancestor of `b`'s `async_malloc`; an allocation without exactly one free lives to the end.
//! Two allocations may share bytes only if one ends before the other begins, and a
//! `zero_init` allocation never shares bytes (it is zeroed once per finalize, not per run).

use crate::error::{ExecError, Result};
use cmdgraph_ir::bundle::{Bundle, GraphPlan};
use cmdgraph_ir::graph::{Alternative, Graph, NodeKind};
use cmdgraph_ir::Module;
use cmdgraph_ir::{Handle, Node};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::HashSet;

/// Checks every plan of `bundle` against `module` (one plan per graph at most).
pub(crate) fn check_plans(bundle: &Bundle, module: &Module) -> Result<()> {
    let mut seen = HashSet::with_capacity(bundle.graphs.len());
    for plan in &bundle.graphs {
        let Some(gh) = module.graph_by_name(&plan.name) else {
            return Err(ExecError::Bundle(format!("plan for unknown graph @{}", plan.name)));
        };
        if !seen.insert(plan.name.as_str()) {
            return Err(ExecError::Bundle(format!("two plans for graph @{}", plan.name)));
        }
        let Some(graph) = module.graphs.try_get(gh) else {
            return Err(ExecError::Bundle(format!("plan for unknown graph @{}", plan.name)));
        };
        // Node names are unique in a verified graph; one map serves both checks.
        let names = cmdgraph_ir::edit::node_names(graph);
        check_launches(bundle, module, graph, plan, &names)?;
        check_memory(graph, plan, &names)?;
    }
    Ok(())
}

/// The launch table: each entry names a kernel node (no alternative) or an existing kernel
/// alternative of a `dynamic` node, once, with a variant of that command's kernel.
fn check_launches(
    bundle: &Bundle,
    module: &Module,
    graph: &Graph,
    plan: &GraphPlan,
    names: &FxHashMap<&str, Handle<Node>>,
) -> Result<()> {
    let bad = |i: usize, m: String| ExecError::Bundle(format!("@{}: launches[{i}]: {m}", plan.name));
    let mut seen = FxHashSet::with_capacity_and_hasher(plan.launches.len(), Default::default());
    for (i, l) in plan.launches.iter().enumerate() {
        let name = l.node.trim_start_matches('%');
        let node = names
            .get(name)
            .and_then(|&h| graph.nodes.try_get(h))
            .ok_or_else(|| bad(i, format!("node %{name} is not in the graph")))?;
        let cmd = match (&node.kind, l.alternative) {
            (NodeKind::Kernel(cmd), None) => cmd,
            (NodeKind::Dynamic { dcg }, Some(a)) => {
                let alt = graph.dcgs.try_get(*dcg).and_then(|d| d.alternatives.get(a as usize));
                match alt {
                    Some(Alternative::Kernel(cmd)) => cmd,
                    Some(_) => return Err(bad(i, format!("alternative {a} of %{name} is not a kernel"))),
                    None => return Err(bad(i, format!("%{name} has no alternative {a}"))),
                }
            }
            (NodeKind::Dynamic { .. }, None) => {
                return Err(bad(i, format!("%{name} is a dynamic node: the entry needs an alternative")))
            }
            (_, Some(a)) => return Err(bad(i, format!("alternative {a} of %{name}, which is not a dynamic node"))),
            (_, None) => return Err(bad(i, format!("%{name} is not a kernel node"))),
        };
        if !seen.insert((name, l.alternative)) {
            return Err(bad(i, format!("second entry for %{name} alternative {:?}", l.alternative)));
        }
        let kernel = module.kernels.try_get(cmd.kernel).map(|k| k.name.as_str()).unwrap_or_default();
        match bundle.kernels.get(l.kernel as usize) {
            Some(k) if k.kernel == kernel => {}
            Some(k) => {
                return Err(bad(i, format!("%{name} runs @{kernel}, but variant {} is one of @{}", l.kernel, k.kernel)))
            }
            None => return Err(bad(i, format!("variant {} of {} compiled kernels", l.kernel, bundle.kernels.len()))),
        }
    }
    Ok(())
}

/// One planned allocation.
#[derive(Clone, Copy)]
struct Placed {
    start: u64,
    end: u64,
    malloc: u32,
    free: Option<u32>,
    zero_init: bool,
    /// Index into `plan.memory.offsets` (for messages).
    entry: usize,
}

/// The memory plan: every offset names an `async_malloc` of the graph once, is aligned to
/// the plan's alignment and lies inside the pool, and allocations that can be live at once
/// do not share bytes. An empty plan (size 0, no offsets) means "no plan": finalize lays
/// allocations out one after another.
fn check_memory(graph: &Graph, plan: &GraphPlan, names: &FxHashMap<&str, Handle<Node>>) -> Result<()> {
    let mem = &plan.memory;
    if mem.size == 0 && mem.offsets.is_empty() {
        return Ok(());
    }
    let bad = |m: String| ExecError::Bundle(format!("@{}: memory plan: {m}", plan.name));
    if mem.alignment == 0 || !mem.alignment.is_power_of_two() {
        return Err(bad(format!("alignment {} is not a power of two", mem.alignment)));
    }
    // The one free of each allocation (by malloc node); two frees: live to the end.
    let mut frees: FxHashMap<usize, (u32, u32)> = FxHashMap::default();
    for (h, n) in graph.nodes.iter() {
        if let NodeKind::AsyncFree { alloc } = n.kind {
            let e = frees.entry(alloc.index()).or_insert((h.index() as u32, 0));
            e.1 += 1;
        }
    }
    let mut placed = Vec::with_capacity(mem.offsets.len());
    let mut named = FxHashSet::with_capacity_and_hasher(mem.offsets.len(), Default::default());
    for (i, (name, offset)) in mem.offsets.iter().enumerate() {
        let name = name.trim_start_matches('%');
        let node = names.get(name).and_then(|&h| Some((h.index(), graph.nodes.try_get(h)?)));
        let Some((index, NodeKind::AsyncMalloc { elem, count, zero_init, .. })) = node.map(|(i, n)| (i, &n.kind))
        else {
            return Err(bad(format!("offsets[{i}] names %{name}, not an async_malloc of the graph")));
        };
        if !named.insert(name) {
            return Err(bad(format!("offsets[{i}] places %{name} a second time")));
        }
        if offset % mem.alignment != 0 {
            return Err(bad(format!("%{name} at offset {offset}, not a multiple of the alignment {}", mem.alignment)));
        }
        let size = elem.size().saturating_mul(*count);
        let end = offset.checked_add(size).filter(|&e| e <= mem.size);
        let Some(end) = end else {
            return Err(bad(format!(
                "%{name} at offset {offset} ({size} bytes) ends past the pool of {} bytes",
                mem.size
            )));
        };
        let free = frees.get(&index).filter(|f| f.1 == 1).map(|f| f.0);
        placed.push(Placed { start: *offset, end, malloc: index as u32, free, zero_init: *zero_init, entry: i });
    }
    check_lifetimes(graph, placed).map_err(bad)
}

/// Reachability on the graph for the lifetime check: successor lists, a topological rank
/// per node, and depth-first searches pruned by rank, under a work budget so that a plan
/// built to make the check slow is refused instead of stalling the load.
struct Reach {
    offsets: Vec<u32>,
    targets: Vec<u32>,
    rank: Vec<u32>,
    stamp: Vec<u32>,
    epoch: u32,
    stack: Vec<u32>,
    budget: u64,
}

impl Reach {
    fn new(graph: &Graph) -> Reach {
        let n = graph.nodes.len();
        let inside = |e: &cmdgraph_ir::Edge| e.from.index() < n && e.to.index() < n;
        let mut offsets = vec![0u32; n + 1];
        let mut indeg = vec![0u32; n];
        for (_, e) in graph.edges.iter().filter(|(_, e)| inside(e)) {
            offsets[e.from.index() + 1] += 1;
            indeg[e.to.index()] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut fill = offsets.clone();
        let mut targets = vec![0u32; offsets[n] as usize];
        for (_, e) in graph.edges.iter().filter(|(_, e)| inside(e)) {
            let slot = &mut fill[e.from.index()];
            targets[*slot as usize] = e.to.index() as u32;
            *slot += 1;
        }
        // Kahn's order (the verifier has rejected cycles; nodes left unranked keep u32::MAX,
        // which no search reaches through).
        let mut rank = vec![u32::MAX; n];
        let mut queue: Vec<u32> = (0..n as u32).filter(|&i| indeg[i as usize] == 0).collect();
        let mut head = 0;
        while let Some(&v) = queue.get(head) {
            rank[v as usize] = head as u32;
            head += 1;
            for &t in &targets[offsets[v as usize] as usize..offsets[v as usize + 1] as usize] {
                indeg[t as usize] -= 1;
                if indeg[t as usize] == 0 {
                    queue.push(t);
                }
            }
        }
        let budget = 64 * (n as u64 + targets.len() as u64) + 1_000_000;
        Reach { offsets, targets, rank, stamp: vec![0; n], epoch: 0, stack: Vec::new(), budget }
    }

    /// Whether `from` happens before `to` (a path of edges), or `None` when the budget ran out.
    fn reaches(&mut self, from: u32, to: u32) -> Option<bool> {
        let rank_to = *self.rank.get(to as usize)?;
        if *self.rank.get(from as usize)? >= rank_to {
            return Some(from == to);
        }
        self.epoch += 1;
        self.stack.clear();
        self.stack.push(from);
        while let Some(v) = self.stack.pop() {
            self.budget = self.budget.checked_sub(1)?;
            let (lo, hi) = (self.offsets[v as usize] as usize, self.offsets[v as usize + 1] as usize);
            for &t in &self.targets[lo..hi] {
                if t == to {
                    return Some(true);
                }
                let seen = &mut self.stamp[t as usize];
                if *seen != self.epoch && self.rank[t as usize] < rank_to {
                    *seen = self.epoch;
                    self.stack.push(t);
                }
            }
        }
        Some(false)
    }

    /// Whether `a` ends before `b` begins.
    fn before(&mut self, a: &Placed, b: &Placed) -> Option<bool> {
        match a.free {
            Some(f) => self.reaches(f, b.malloc),
            None => Some(false),
        }
    }

    fn rank(&self, a: &Placed) -> u32 {
        self.rank.get(a.malloc as usize).copied().unwrap_or(u32::MAX)
    }
}

/// No two allocations that can be live at once share bytes. Allocations of the same byte
/// range form a group that must be a chain under `≺`; sorted by the rank of their mallocs
/// (which `≺` respects), consecutive members suffice. Groups are then swept by offset, and
/// each member of a group that overlaps an earlier group must fit between two consecutive
/// members of that group's chain (found by rank). Cost: O(n log n) plus the searches, which
/// the budget bounds.
fn check_lifetimes(graph: &Graph, mut placed: Vec<Placed>) -> std::result::Result<(), String> {
    placed.retain(|p| p.end > p.start);
    if placed.len() < 2 {
        return Ok(());
    }
    let mut reach = Reach::new(graph);
    let name = |p: &Placed| {
        let h = cmdgraph_ir::Handle::from_usize(p.malloc as usize);
        let n = h.and_then(|h| graph.nodes.try_get(h)).map(|n| n.name.as_str()).unwrap_or("?");
        format!("%{n} [{}, {})", p.start, p.end)
    };
    let conflict = |a: &Placed, b: &Placed| {
        let why = if a.zero_init || b.zero_init {
            "a zero_init allocation shares no bytes"
        } else {
            "both can be live at once (neither's async_free happens before the other's async_malloc)"
        };
        format!("offsets[{}] {} and offsets[{}] {} overlap: {why}", a.entry, name(a), b.entry, name(b))
    };
    let gave_up = || {
        "too many overlapping allocations to check within the loader's budget (a plan of unordered reuse?)".to_string()
    };
    placed.sort_by_key(|p| (p.start, p.end, reach.rank(p)));
    // Groups of one byte range, each a chain in rank order.
    let mut groups: Vec<std::ops::Range<usize>> = Vec::new();
    let mut i = 0;
    while i < placed.len() {
        let mut j = i + 1;
        while j < placed.len() && (placed[j].start, placed[j].end) == (placed[i].start, placed[i].end) {
            let (a, b) = (placed[j - 1], placed[j]);
            if a.zero_init || b.zero_init || !reach.before(&a, &b).ok_or_else(gave_up)? {
                return Err(conflict(&a, &b));
            }
            j += 1;
        }
        groups.push(i..j);
        i = j;
    }
    // Sweep: `active` holds the groups whose range reaches past the current start.
    let mut active: Vec<usize> = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        let start = placed[g.start].start;
        active.retain(|&a| placed[groups[a].start].end > start);
        for &a in &active {
            let chain = &placed[groups[a].clone()];
            for x in &placed[g.clone()] {
                // Where x's malloc falls among the chain's: x must follow the member before it
                // and precede the one after it.
                let at = chain.partition_point(|c| reach.rank(c) < reach.rank(x));
                if let Some(prev) = at.checked_sub(1).and_then(|p| chain.get(p)) {
                    if x.zero_init || prev.zero_init || !reach.before(prev, x).ok_or_else(gave_up)? {
                        return Err(conflict(prev, x));
                    }
                }
                if let Some(next) = chain.get(at) {
                    if x.zero_init || next.zero_init || !reach.before(x, next).ok_or_else(gave_up)? {
                        return Err(conflict(x, next));
                    }
                }
            }
        }
        active.push(gi);
    }
    Ok(())
}
