//! `plan-memory`: lifetimes of graph-owned allocations on the DAG, offsets in one pool, and
//! the numbers that judge the plan (lower bound, naive sum, DPC++'s exact-size reuse).
//!
//! The model is described in docs/memory.md. In short: two allocations may share bytes only
//! if the free of one is an ancestor of the malloc of the other ([`lifetimes`], [`order`]);
//! offsets are multiples of the alignment ([`DEFAULT_ALIGNMENT`] unless the context says
//! otherwise) and are chosen by greedy best fit over several orders ([`planner`]); the pool
//! is compared with the heaviest antichain ([`lower_bound`]) and with DPC++'s heuristic
//! ([`dpcpp`]). The pass changes no graph: it records one [`MemoryPlan`] per graph with
//! allocations in [`PassContext::memory_plans`].

mod best_fit;
mod canonical;
mod chains;
pub mod dpcpp;
pub mod exact;
pub mod lifetimes;
pub mod lower_bound;
pub mod order;
pub mod parallel;
pub mod planner;
mod priority;
pub mod report;
mod sections;
pub mod workloads;

use crate::{PassContext, PassError, PassInfo};
use cmdgraph_ir::pool::PoolLayout;
use cmdgraph_ir::{Graph, Module};
use lifetimes::{AllocNames, Problem};
use serde::{Deserialize, Serialize};

pub use report::{report_svg, report_text};

/// The default offset alignment in bytes: 256 is the largest `minStorageBufferOffsetAlignment`
/// that Vulkan devices report (and CUDA's allocation alignment), so it is valid everywhere.
pub const DEFAULT_ALIGNMENT: u64 = 256;

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "plan-memory",
    summary: "assign graph-owned allocations offsets in one pool, reusing memory across disjoint DAG lifetimes",
    statistics: &[
        ("allocations", "graph-owned allocations planned"),
        ("pool-bytes", "bytes of the planned pools (required_mem_size), summed over graphs"),
        ("lower-bound-bytes", "heaviest antichain of allocations, summed over graphs"),
        ("naive-bytes", "sum of the aligned allocation sizes"),
        ("dpcpp-bytes", "footprint of DPC++'s exact-size reuse"),
        ("multi-device-graphs-left", "graphs allocating on several devices, left without a pool"),
    ],
    preserves: "everything: the graph is not changed, only a plan is recorded",
    run,
};

/// One allocation of a plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedAlloc {
    /// The `async_malloc` node (without `%`).
    pub node: String,
    /// The `async_free` node that ends its lifetime; `None`: live to the end of the run.
    pub free: Option<String>,
    /// Byte offset in the pool (a multiple of the alignment).
    pub offset: u64,
    /// Size in bytes (unrounded).
    pub size: u64,
    /// `zero_init`: placed where nothing else ever is.
    pub zero_init: bool,
    /// Position of the malloc in the topological order the report draws lifetimes in.
    pub start: u32,
    /// Position of the free in that order; `None` when live to the end.
    pub end: Option<u32>,
}

/// The memory plan of one graph: what an executor needs (pool size, offsets) and what the
/// report shows. Deterministic for a given graph and alignment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryPlan {
    /// The graph (without `@`).
    pub graph: String,
    /// Offset alignment in bytes.
    pub alignment: u64,
    /// Pool size in bytes: `get_required_mem_size()`.
    pub pool_size: u64,
    /// The heaviest set of pairwise unordered allocations (aligned sizes): no plan is smaller.
    pub lower_bound: u64,
    /// The sum of the aligned sizes (no reuse).
    pub naive: u64,
    /// What DPC++'s exact-size reuse would need.
    pub dpcpp: u64,
    /// The heuristic that produced the offsets.
    pub strategy: String,
    /// Conflicting pairs of allocations (zero_init ones not counted).
    pub conflicts: u64,
    /// Every allocation, in node creation order.
    pub allocations: Vec<PlannedAlloc>,
}

impl MemoryPlan {
    /// The plan as the interpreter's pool layout for `graph` (allocations matched by name).
    pub fn pool_layout(&self, graph: &Graph) -> PoolLayout {
        let mut layout = PoolLayout { size: self.pool_size, ..Default::default() };
        for a in &self.allocations {
            if let Some(h) = graph.node_by_name(&a.node) {
                layout.offsets.insert(h, a.offset);
            }
        }
        layout
    }
}

/// Plans a problem: conflicts, offsets, bound and comparisons.
pub fn plan_problem(problem: &Problem, names: &AllocNames, graph: &str, alignment: u64) -> Result<MemoryPlan, String> {
    let alignment = alignment.max(1);
    let threads = parallel::Threads::available();
    let conflicts = order::conflicts_with(problem, threads)?;
    let units = planner::units(problem, alignment);
    let bound = || lower_bound::lower_bound(problem, &conflicts, &units);
    let dpcpp = || dpcpp::exact_size_reuse(problem, &conflicts, alignment);
    let n = problem.allocs.len();
    let (bound_units, (placement, dpcpp)) = if n > planner::LARGE {
        // Above LARGE the planner uses the bound only to skip the size order once the area
        // order reaches it, and then the size order could not have won anyway: the plan is
        // the same without it, so the bound and the comparison are computed beside it.
        let place = || planner::plan_with(problem, &conflicts, alignment, None, threads);
        parallel::join(threads, n, bound, || parallel::join(threads, n, place, dpcpp))
    } else {
        let b = bound();
        (b, (planner::plan_with(problem, &conflicts, alignment, Some(b), threads), dpcpp()))
    };
    let lower_bound = bound_units.saturating_mul(alignment);
    let naive = units.iter().fold(0u64, |s, u| s.saturating_add(*u)).saturating_mul(alignment);
    let allocations = problem
        .allocs
        .iter()
        .enumerate()
        .map(|(i, a)| PlannedAlloc {
            node: names.malloc.get(i).cloned().unwrap_or_else(|| format!("a{i}")),
            free: names.free.get(i).cloned().flatten(),
            offset: placement.offsets.get(i).copied().unwrap_or(0),
            size: a.size,
            zero_init: a.zero_init,
            start: conflicts.start.get(i).copied().unwrap_or(0),
            end: conflicts.end.get(i).copied().filter(|&e| e != order::END),
        })
        .collect();
    Ok(MemoryPlan {
        graph: graph.to_string(),
        alignment,
        pool_size: placement.pool,
        lower_bound,
        naive,
        dpcpp,
        strategy: placement.strategy,
        conflicts: conflicts.pairs() as u64,
        allocations,
    })
}

/// Plans graph `graph` of a module.
pub fn plan_graph(graph: &Graph, alignment: u64) -> Result<MemoryPlan, String> {
    let problem = Problem::from_graph(graph)?;
    let names = AllocNames::from_graph(graph, &problem);
    plan_problem(&problem, &names, &graph.name, alignment)
}

fn run(module: &mut Module, ctx: &mut PassContext) -> Result<(), PassError> {
    let alignment = ctx.memory_alignment.unwrap_or(DEFAULT_ALIGNMENT);
    for (_, graph) in module.graphs.iter() {
        let mut devices = graph
            .nodes
            .iter()
            .filter(|(_, n)| matches!(n.kind, cmdgraph_ir::NodeKind::AsyncMalloc { .. }))
            .map(|(h, _)| graph.node_device(h));
        let Some(first) = devices.next() else { continue };
        // One pool lives on one device: a graph allocating on several gets no plan here
        // (its allocations are made one by one; docs/multi-device.md).
        if devices.any(|d| d != first) {
            ctx.bump("multi-device-graphs-left", 1);
            continue;
        }
        let plan = plan_graph(graph, alignment).map_err(|message| PassError::Failed {
            pass: INFO.name,
            graph: graph.name.clone(),
            node: None,
            message,
        })?;
        ctx.bump("allocations", plan.allocations.len() as u64);
        ctx.bump("pool-bytes", plan.pool_size);
        ctx.bump("lower-bound-bytes", plan.lower_bound);
        ctx.bump("naive-bytes", plan.naive);
        ctx.bump("dpcpp-bytes", plan.dpcpp);
        ctx.memory_plans.insert(graph.name.clone(), plan);
    }
    Ok(())
}
