//! The pool plan of a graph: `plan-memory`'s when the pipeline ran it, else the naive
//! layout (every allocation at its own aligned offset, no reuse), so that a bundle compiled
//! without the pass still runs.

use cmdgraph_ir::bundle::PoolPlan;
use cmdgraph_ir::{Graph, NodeKind};
use cmdgraph_passes::memory::{report_text, MemoryPlan, DEFAULT_ALIGNMENT};

/// The pool plan of `graph`, from `plan` when there is one.
pub fn pool_plan(graph: &Graph, plan: Option<&MemoryPlan>) -> PoolPlan {
    if let Some(plan) = plan {
        return PoolPlan {
            size: plan.pool_size,
            alignment: plan.alignment,
            offsets: plan.allocations.iter().map(|a| (a.node.clone(), a.offset)).collect(),
            report: report_text(plan),
        };
    }
    let mut size = 0u64;
    let mut offsets = Vec::new();
    for (_, node) in graph.nodes.iter() {
        if let NodeKind::AsyncMalloc { elem, count, .. } = &node.kind {
            offsets.push((node.name.clone(), size));
            size = size.saturating_add(align_up(elem.size().saturating_mul(*count), DEFAULT_ALIGNMENT));
        }
    }
    let report = if offsets.is_empty() {
        String::new()
    } else {
        format!(
            "memory plan @{}: {} allocations, alignment {DEFAULT_ALIGNMENT} B, naive layout \
             (plan-memory was not in the pipeline): pool {size} B\n",
            graph.name,
            offsets.len()
        )
    };
    PoolPlan { size, alignment: DEFAULT_ALIGNMENT, offsets, report }
}

/// `value` rounded up to a multiple of `alignment` (saturating).
pub fn align_up(value: u64, alignment: u64) -> u64 {
    let alignment = alignment.max(1);
    value.div_ceil(alignment).saturating_mul(alignment)
}
