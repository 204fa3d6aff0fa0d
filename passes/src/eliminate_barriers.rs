//! `eliminate-barriers`: removes `barrier` nodes, wiring their predecessors to their
//! successors.
//!
//! After recording, a barrier is pure ordering: what it waited for became its incoming
//! edges (`via barrier`, from its wait list or from the leaves of its queue) and what it
//! orders became its outgoing edges to later submissions on its queue. The edges are the
//! truth, so a barrier can be bypassed like an empty node, with the same blow-up policy
//! (see `eliminate-empty-nodes`: removed only when `f · s <= f + s`). Bypass edges are
//! `make_edge` edges. A later barrier that named a removed one in its `wait(...)` list
//! drops that entry (`edit::retain`), so every wait entry still names a direct
//! predecessor (E0261); its edges from the removed barrier's predecessors are the bypass.

use crate::bypass::{eliminate_nodes, ELIMINATE_STATS};
use crate::{PassContext, PassError, PassInfo};
use cmdgraph_ir::{Module, NodeKind};

/// Registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "eliminate-barriers",
    summary: "remove recorded barrier nodes, wiring predecessors to successors (wide ones whose removal would add edges stay)",
    statistics: ELIMINATE_STATS,
    preserves: "happens-before among the remaining nodes; node names, creation order and every edge between kept nodes; \
                wait lists name only direct predecessors; dynamic parameters and command groups untouched \
                (queue-recorded nodes have none); profiling: removed barriers had no command to time",
    run,
};

fn run(module: &mut Module, ctx: &mut PassContext) -> Result<(), PassError> {
    eliminate_nodes(module, ctx, INFO.name, |kind| matches!(kind, NodeKind::Barrier { .. }))
}
