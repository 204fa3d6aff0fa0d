//! The command schedule of a graph: segments split at host tasks, device segments split
//! into stages of mutually independent nodes (docs/abi.md, "Schedule"; docs/bundle.md).
//!
//! Every node has one of three roles:
//! - **host**: a `host_task`, a `native` command, a `dynamic` node whose alternatives are
//!   host tasks, or a `while` node (the host decides after a chunk of rounds whether to submit
//!   more: docs/conditional.md). Each runs as a segment of its own.
//! - **ordering only**: `empty`, `barrier`, `async_malloc`, `async_free`. They do no device
//!   work (allocations live in the planned pool; `zero_init` happens at finalize), so they
//!   are not scheduled, but the order they carry is kept: their predecessors' effects reach
//!   their successors.
//! - **device work**: every other node (kernels, `dynamic` kernels, copies, fills,
//!   prefetch, memadvise, sub-graphs).
//!
//! Placement is as-soon-as-possible along one topological sweep. Each node gets a position
//! `(segment group, stage)`, compared lexicographically: a device node goes to the largest
//! position its predecessors finish at (a device node at `(g, s)` finishes at `(g, s + 1)`,
//! a host task in group `g` at `(g + 1, 0)`, an ordering-only node where its predecessors
//! do). The output is device segment 0, the host tasks of group 0 (one segment each, in
//! creation order), device segment 1, and so on, dropping empty device segments. Within a
//! segment, a node's stage is its longest path of device nodes from the segment start, so
//! the number of stages, and of barriers between them, is the longest such chain: no
//! valid staging has fewer. Nodes in a stage are listed in creation order, so the schedule
//! is a function of the graph alone.
//!
//! A group's device segment is split in two when only part of it leads to the group's host
//! tasks: first the ancestors of those host tasks, then the rest (restaged by its own longest
//! chains). The executor submits both before it runs the host tasks, which wait only for
//! the first (docs/executor.md, "Host tasks and overlap"): a communication node sends the
//! boundary a kernel computed while the interior is still being computed.

use cmdgraph_ir::bundle::Segment;
use cmdgraph_ir::{Graph, NodeKind, NodeType};
use cmdgraph_passes::analysis::{topological_order, Csr};
use std::fmt;

/// What a node does in the schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Runs on the host, as a segment of its own.
    Host,
    /// Carries order only; not scheduled.
    OrderingOnly,
    /// Device work, placed in a stage.
    Device,
}

/// The role of `node` (by arena index order) in `graph`.
pub fn role(graph: &Graph, node: cmdgraph_ir::Handle<cmdgraph_ir::Node>) -> Role {
    match &graph.nodes[node].kind {
        NodeKind::Empty | NodeKind::Barrier { .. } | NodeKind::AsyncMalloc { .. } | NodeKind::AsyncFree { .. } => {
            Role::OrderingOnly
        }
        NodeKind::HostTask(_)
        | NodeKind::Comm(_)
        | NodeKind::Native(_)
        | NodeKind::Conditional { kind: cmdgraph_ir::graph::CondKind::While, .. } => Role::Host,
        NodeKind::Dynamic { .. } if graph.node_type(node) == NodeType::HostTask => Role::Host,
        _ => Role::Device,
    }
}

/// Why a graph cannot be scheduled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScheduleError {
    /// The graph has a cycle (only possible under `no_cycle_check`).
    Cycle {
        /// The graph (without `@`).
        graph: String,
    },
}

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScheduleError::Cycle { graph } => write!(f, "@{graph} has a cycle and cannot be scheduled"),
        }
    }
}

impl std::error::Error for ScheduleError {}

/// A position: (segment group, stage within the group's device segment).
type Position = (u32, u32);

/// Schedules `graph` (see the module documentation). O(nodes + edges) for the sweeps, then
/// one sort of the placed nodes by (group, part, stage, creation order): O(n log n) in all.
pub fn schedule(graph: &Graph) -> Result<Vec<Segment>, ScheduleError> {
    let preds = Csr::predecessors(graph);
    let succs = Csr::successors(graph);
    let order = topological_order(&succs).ok_or_else(|| ScheduleError::Cycle { graph: graph.name.clone() })?;
    let n = graph.nodes.len();
    let roles: Vec<Role> =
        (0..n).map(|v| cmdgraph_ir::Handle::from_usize(v).map_or(Role::OrderingOnly, |h| role(graph, h))).collect();
    let mut start: Vec<Position> = vec![(0, 0); n];
    let mut finish: Vec<Position> = vec![(0, 0); n];
    for &v in &order {
        let at = preds.neighbours(v).iter().filter_map(|&p| finish.get(p as usize)).max().copied().unwrap_or((0, 0));
        let (Some(slot), Some(end)) = (start.get_mut(v as usize), finish.get_mut(v as usize)) else { continue };
        *slot = at;
        *end = match roles[v as usize] {
            Role::OrderingOnly => at,
            Role::Device => (at.0, at.1 + 1),
            Role::Host => (at.0 + 1, 0),
        };
    }
    let part = split_parts(&order, &preds, &succs, &roles, &start);
    // (group, part, stage, node index) of device nodes; (group, node index) of host nodes.
    let mut device: Vec<(u32, u32, u32, u32)> = Vec::new();
    let mut host: Vec<(u32, u32)> = Vec::new();
    for v in 0..n {
        let (g, stage) = start[v];
        match roles[v] {
            Role::Device => device.push((g, part[v].0, part[v].1.unwrap_or(stage), v as u32)),
            Role::Host => host.push((g, v as u32)),
            Role::OrderingOnly => {}
        }
    }
    device.sort_unstable();
    host.sort_unstable();
    let name = |v: u32| {
        cmdgraph_ir::Handle::from_usize(v as usize)
            .and_then(|h| graph.nodes.try_get(h))
            .map(|node| node.name.clone())
            .unwrap_or_default()
    };
    let mut segments = Vec::new();
    let (mut d, mut h) = (device.as_slice(), host.as_slice());
    // Groups in order: each one's device segments (their stages), then its host tasks.
    while let Some(group) = d.first().map(|x| x.0).into_iter().chain(h.first().map(|x| x.0)).min() {
        while let Some(&(g, p, _, _)) = d.first().filter(|x| x.0 == group) {
            let count = d.iter().take_while(|x| (x.0, x.1) == (g, p)).count();
            let (mine, rest) = d.split_at(count);
            d = rest;
            let mut stages: Vec<Vec<String>> = Vec::new();
            let mut last = None;
            for &(_, _, stage, v) in mine {
                if last != Some(stage) {
                    stages.push(Vec::new());
                    last = Some(stage);
                }
                if let Some(s) = stages.last_mut() {
                    s.push(name(v));
                }
            }
            segments.push(Segment::Device { stages });
        }
        let count = h.iter().take_while(|x| x.0 == group).count();
        let (mine, rest) = h.split_at(count);
        h = rest;
        segments.extend(mine.iter().map(|&(_, v)| Segment::Host { node: name(v) }));
    }
    Ok(segments)
}

/// Per node, its part of its group's device segment and its stage there when restaged:
/// `(0, None)` for a device node that leads to a host task of its group (or of a group that
/// is not split), `(1, Some(stage))` for the rest of a split group, restaged by the longest
/// chain of the rest alone (what the first part leaves is complete when the rest starts).
fn split_parts(order: &[u32], preds: &Csr, succs: &Csr, roles: &[Role], start: &[Position]) -> Vec<(u32, Option<u32>)> {
    let n = roles.len();
    let group = |v: usize| start[v].0;
    // Whether a non-host node leads, through nodes of its group, to a host task of its group.
    let mut leads = vec![false; n];
    for &v in order.iter().rev() {
        let v = v as usize;
        if roles[v] == Role::Host {
            continue;
        }
        leads[v] = succs.neighbours(v as u32).iter().any(|&s| {
            let s = s as usize;
            group(s) == group(v) && (roles[s] == Role::Host || leads[s])
        });
    }
    // A group splits when some of its device nodes lead to its host tasks and some do not.
    let groups = start.iter().map(|p| p.0 as usize + 1).max().unwrap_or(0);
    let (mut leading, mut other) = (vec![false; groups], vec![false; groups]);
    for v in (0..n).filter(|&v| roles[v] == Role::Device) {
        let g = group(v) as usize;
        if leads[v] {
            leading[g] = true;
        } else {
            other[g] = true;
        }
    }
    let split = |v: usize| leading[group(v) as usize] && other[group(v) as usize];
    let mut part = vec![(0, None); n];
    // The rest's stages: its longest chains, counting only its own device nodes.
    let mut finish = vec![0u32; n];
    for &v in order {
        let v = v as usize;
        if roles[v] == Role::Host || !split(v) {
            continue;
        }
        let at = preds
            .neighbours(v as u32)
            .iter()
            .map(|&p| p as usize)
            .filter(|&p| roles[p] != Role::Host && group(p) == group(v))
            .map(|p| finish[p])
            .max()
            .unwrap_or(0);
        finish[v] = match roles[v] {
            Role::Device if leads[v] => 0,
            Role::Device => {
                part[v] = (1, Some(at));
                at + 1
            }
            _ => at,
        };
    }
    part
}

/// Number of barriers the executor records for `segments`: one between consecutive stages
/// of each device segment.
pub fn barrier_count(segments: &[Segment]) -> usize {
    segments
        .iter()
        .map(|s| match s {
            Segment::Device { stages } => stages.len().saturating_sub(1),
            Segment::Host { .. } => 0,
        })
        .sum()
}
