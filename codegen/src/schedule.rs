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

/// Schedules `graph` (see the module documentation). O(nodes + edges) for the sweep, then
/// one sort of the placed nodes by (group, stage, creation order): O(n log n) in all.
pub fn schedule(graph: &Graph) -> Result<Vec<Segment>, ScheduleError> {
    let preds = Csr::predecessors(graph);
    let order =
        topological_order(&Csr::successors(graph)).ok_or_else(|| ScheduleError::Cycle { graph: graph.name.clone() })?;
    let n = graph.nodes.len();
    let mut finish: Vec<Position> = vec![(0, 0); n];
    // (group, stage, node index) of device nodes; (group, node index) of host nodes.
    let mut device: Vec<(u32, u32, u32)> = Vec::new();
    let mut host: Vec<(u32, u32)> = Vec::new();
    for v in order {
        let Some(handle) = cmdgraph_ir::Handle::from_usize(v as usize).filter(|_| (v as usize) < n) else { continue };
        let start = preds.neighbours(v).iter().filter_map(|&p| finish.get(p as usize)).max().copied().unwrap_or((0, 0));
        let end = match role(graph, handle) {
            Role::OrderingOnly => start,
            Role::Device => {
                device.push((start.0, start.1, v));
                (start.0, start.1 + 1)
            }
            Role::Host => {
                host.push((start.0, v));
                (start.0 + 1, 0)
            }
        };
        if let Some(slot) = finish.get_mut(v as usize) {
            *slot = end;
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
    // Groups in order: each one's device segment (its stages), then its host tasks.
    while let Some(group) = d.first().map(|x| x.0).into_iter().chain(h.first().map(|x| x.0)).min() {
        let count = d.iter().take_while(|x| x.0 == group).count();
        let (mine, rest) = d.split_at(count);
        d = rest;
        if !mine.is_empty() {
            let mut stages: Vec<Vec<String>> = Vec::new();
            let mut last = None;
            for &(_, stage, v) in mine {
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
