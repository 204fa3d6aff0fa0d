//! `eliminate-empty-nodes`: removes `empty` nodes, wiring their predecessors to their
//! successors.
//!
//! An empty node is pure ordering: it runs nothing and no command names it. Removing it
//! with [`remove_and_bypass`](crate::bypass::remove_and_bypass) keeps the happens-before
//! relation among the other nodes.
//!
//! Blow-up policy: a join/fork node with `f` predecessors and `s` successors is replaced by
//! up to `f · s` edges, none of which the transitive reduction can remove when the node
//! joins independent work (an all-to-all barrier between two wide layers: 1,000 × 1,000
//! becomes 10^6 edges). So a node is removed only when that does not increase the edge
//! count (`f · s <= f + s`: `f <= 1`, `s <= 1` or `f = s = 2`, with `f` counted after the
//! removal of earlier empty nodes; see
//! [`removable_without_growth`](crate::bypass::removable_without_growth)). A wide empty
//! node is the cheaper encoding of all-to-all ordering, for the executor as well as for
//! the size of the graph, so it stays; `nodes-kept-wide` counts them. The decision is one
//! linear walk, so the pass stays fast at 10^6 nodes.

use crate::bypass::{eliminate_nodes, ELIMINATE_STATS};
use crate::{PassContext, PassError, PassInfo};
use cmdgraph_ir::{Module, NodeKind};

/// Registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "eliminate-empty-nodes",
    summary: "remove empty nodes, wiring predecessors to successors (wide fan-in/fan-out nodes whose removal would add edges stay)",
    statistics: ELIMINATE_STATS,
    preserves: "happens-before among the remaining nodes; node names, creation order and every edge between kept nodes; \
                dynamic parameters, their registrations and dynamic command groups (empty nodes carry none); \
                profiling: removed nodes had no command to time",
    run,
};

fn run(module: &mut Module, ctx: &mut PassContext) -> Result<(), PassError> {
    eliminate_nodes(module, ctx, INFO.name, |kind| matches!(kind, NodeKind::Empty))
}
