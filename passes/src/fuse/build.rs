//! Rewriting the graph: each group becomes one kernel node, its dying temporaries go.
//!
//! Members are contracted; the dying temporaries' `async_malloc`/`async_free` nodes are then
//! removed with [`crate::bypass::remove_and_bypass`], so the orderings they carried (a free
//! recorded after some later node, an allocation between two queue commands) stay as edges.
//!
//! The fused node reuses the member created last (so every allocation its arguments name,
//! and every node an inline edge into it starts from, is created before it) and keeps that
//! member's name, queue and comments. Edges between two nodes of one group disappear. An
//! edge into another member becomes an optimizer `make_edge` edge into the fused node; an
//! edge out of another member keeps its place (and its provenance, unless that names a
//! queue the fused node is not on) when its destination was created after the fused node,
//! and becomes a `make_edge` edge otherwise. Barrier `wait(...)` lists follow the members
//! to the fused node. Then [`cmdgraph_ir::edit::retain`] drops the other members and remaps
//! every handle.

use crate::bypass::{remove_and_bypass, BypassError};
use cmdgraph_ir::edit::{self, DanglingReference};
use cmdgraph_ir::graph::{EdgeKind, Graph, KernelCommand, NodeKind};
use cmdgraph_ir::Handle;
use std::collections::{BTreeSet, HashSet};

/// One group to apply: every node it removes or replaces, and the fused command.
pub struct Replacement {
    /// Member kernel nodes (indices).
    pub nodes: Vec<u32>,
    /// The dying temporaries' `async_malloc` and `async_free` nodes (indices), removed with
    /// a bypass after the contraction.
    pub bypass: Vec<u32>,
    /// The node that becomes the fused kernel node (the member created last).
    pub keep: u32,
    /// Its new command.
    pub command: KernelCommand,
}

/// Applies every replacement at once (their node sets are disjoint).
pub fn apply(graph: &mut Graph, mut groups: Vec<Replacement>) -> Result<(), BypassError> {
    // The bypass runs first, on the acyclic input: contracting first would turn a path
    // member -> async_malloc -> member into a cycle through the allocation. Members stop
    // naming the dying temporaries before it (the kept one gets the fused command, the
    // others are removed by the contraction anyway).
    for g in &groups {
        for &v in &g.nodes {
            if let Some(n) = Handle::from_usize(v as usize).and_then(|h| graph.nodes.try_get_mut(h)) {
                n.kind = if v == g.keep { NodeKind::Kernel(g.command.clone()) } else { NodeKind::Empty };
            }
        }
    }
    let mut remove = vec![false; graph.nodes.len()];
    for &v in groups.iter().flat_map(|g| g.bypass.iter()) {
        if let Some(slot) = remove.get_mut(v as usize) {
            *slot = true;
        }
    }
    if remove.contains(&true) {
        let map = remove_and_bypass(graph, &remove)?;
        let new = |v: u32| Handle::from_usize(v as usize).and_then(|h| map.node(h)).map(|h| h.index() as u32);
        for g in &mut groups {
            g.nodes = g.nodes.iter().filter_map(|&v| new(v)).collect();
            g.keep = new(g.keep).ok_or(BypassError::Cycle)?;
        }
    }
    contract(graph, groups).map_err(BypassError::Dangling)?;
    Ok(())
}

/// Contracts each group's members into its kept node (which already holds the fused command).
fn contract(graph: &mut Graph, groups: Vec<Replacement>) -> Result<edit::NodeMap, DanglingReference> {
    let mut owner: Vec<Option<u32>> = vec![None; graph.nodes.len()];
    for g in &groups {
        for &v in &g.nodes {
            if let Some(slot) = owner.get_mut(v as usize) {
                *slot = Some(g.keep);
            }
        }
    }
    let target = |v: u32| owner.get(v as usize).copied().flatten().unwrap_or(v);
    let inside = |v: u32| owner.get(v as usize).copied().flatten();
    let queue_of = |g: &Graph, v: u32| Handle::from_usize(v as usize).and_then(|h| g.nodes.try_get(h)).map(|n| n.queue);

    // One pass over the edges with a per-edge flag and a hash set of the edges present:
    // linear in the graph, once per graph whatever the number of groups.
    let mut drop_edges = vec![false; graph.edges.len()];
    let mut dropped = |h: usize| {
        if let Some(d) = drop_edges.get_mut(h) {
            *d = true;
        }
    };
    // Only edges with an end in a group can be asked about (every rewritten or added edge
    // has one), so only those are recorded.
    let mut present: HashSet<(u32, u32)> = HashSet::new();
    let mut rewrites = Vec::new();
    let mut additions = Vec::new();
    for (h, e) in graph.edges.iter() {
        let (a, b) = (e.from.index() as u32, e.to.index() as u32);
        if inside(a).is_some() && inside(a) == inside(b) {
            dropped(h.index());
            continue;
        }
        let (a2, b2) = (target(a), target(b));
        if (a2, b2) == (a, b) {
            if inside(a).is_some() || inside(b).is_some() {
                present.insert((a, b));
            }
        } else if b2 == b && a2 < b && !present.contains(&(a2, b)) {
            let kind = match e.kind {
                EdgeKind::InOrder | EdgeKind::Event if queue_of(graph, a2) != queue_of(graph, a) => EdgeKind::DependsOn,
                k => k,
            };
            present.insert((a2, b));
            rewrites.push((h, a2, kind));
        } else {
            dropped(h.index());
            additions.push((a2, b2));
        }
    }
    for (h, from, kind) in rewrites {
        if let (Some(e), Some(from)) = (graph.edges.try_get_mut(h), Handle::from_usize(from as usize)) {
            e.from = from;
            e.kind = kind;
        }
    }
    // In (from, to) order, each once.
    additions.sort_unstable();
    additions.dedup();
    for (a, b) in additions {
        if present.insert((a, b)) {
            if let (Some(a), Some(b)) = (Handle::from_usize(a as usize), Handle::from_usize(b as usize)) {
                edit::add_edge(graph, a, b);
            }
        }
    }
    for (_, node) in graph.nodes.iter_mut() {
        if let NodeKind::Barrier { wait } = &mut node.kind {
            let mut seen = BTreeSet::new();
            let mapped: Vec<_> = wait
                .iter()
                .filter_map(|w| Handle::from_usize(target(w.index() as u32) as usize))
                .filter(|w| seen.insert(*w))
                .collect();
            *wait = mapped;
        }
    }
    let mut remove = vec![false; graph.nodes.len()];
    for g in groups {
        for &v in &g.nodes {
            if v != g.keep {
                if let Some(r) = remove.get_mut(v as usize) {
                    *r = true;
                }
            }
        }
    }
    edit::retain(
        graph,
        |h| !remove.get(h.index()).copied().unwrap_or(false),
        |e| !drop_edges.get(e.index()).copied().unwrap_or(false),
    )
}

/// Puts kernels a pass added (`added`, in order) after the module's last kernel item, where
/// the printer then shows them.
pub fn place_kernels(module: &mut cmdgraph_ir::Module, added: Vec<cmdgraph_ir::module::Item>) {
    use cmdgraph_ir::module::Item;
    let at = module.items.iter().rposition(|i| matches!(i, Item::Kernel(_))).map(|i| i + 1).unwrap_or(0);
    module.items.splice(at..at, added);
}

/// A kernel name built from `base` (cut to 64 bytes) that is not in `taken`: `base`, else
/// `base.1`, `base.2`, ...
pub fn new_kernel_name(taken: &BTreeSet<String>, mut base: String) -> String {
    if base.len() > 64 {
        let cut = (0..=64).rev().find(|&i| base.is_char_boundary(i)).unwrap_or(0);
        base.truncate(cut);
    }
    if !taken.contains(&base) {
        return base;
    }
    (1..).map(|i| format!("{base}.{i}")).find(|n| !taken.contains(n)).unwrap_or_default()
}
