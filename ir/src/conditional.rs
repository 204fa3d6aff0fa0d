//! What the Vulkan executor can run inside the bodies of conditional nodes
//! (docs/conditional.md, "Executor"), as one rule that `compile` (E0506, at the node) and the
//! executor's loader (a bundle made elsewhere) both apply.
//!
//! A body runs predicated: its dispatches under `VK_EXT_conditional_rendering` on a word the
//! predicate kernel computes. Conditional rendering predicates dispatches only, so a body may
//! hold kernels (also `dynamic` ones), ordering-only nodes and further `if`/`switch` nodes;
//! copies and fills (`vkCmdCopyBuffer`, `vkCmdFillBuffer` would run whatever the condition),
//! host tasks and native commands (host work between dispatches), and a `while` inside a
//! body (it needs the host between rounds) are refused. Sub-graph nodes in a body are
//! inlined by the pass pipeline, so their children are checked as part of the body.

use crate::arena::Handle;
use crate::graph::{CondKind, Graph, Node, NodeKind, NodeType};
use crate::module::Module;
use std::collections::BTreeSet;

/// A node of a body graph the Vulkan executor cannot run predicated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotInBody {
    /// The body graph (or a sub-graph child of one) holding the node.
    pub graph: Handle<Graph>,
    /// The node.
    pub node: Handle<Node>,
    /// What the node is and why it cannot run in a body.
    pub reason: &'static str,
    /// What to do instead.
    pub help: &'static str,
}

/// Every graph that runs as (part of) a conditional node's body: the bodies, and the graphs
/// they reach through bodies and sub-graph nodes. In graph order.
pub fn body_graphs(module: &Module) -> BTreeSet<Handle<Graph>> {
    let mut seen = BTreeSet::new();
    let mut work: Vec<Handle<Graph>> = module
        .graphs
        .iter()
        .flat_map(|(_, g)| g.nodes.iter())
        .filter_map(|(_, n)| match &n.kind {
            NodeKind::Conditional { bodies, .. } => Some(bodies.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    while let Some(g) = work.pop() {
        if !seen.insert(g) {
            continue;
        }
        let Some(graph) = module.graphs.try_get(g) else { continue };
        for (_, n) in graph.nodes.iter() {
            match &n.kind {
                NodeKind::Conditional { bodies, .. } => work.extend(bodies.iter().copied()),
                NodeKind::Subgraph { graph } => work.push(*graph),
                _ => {}
            }
        }
    }
    seen
}

/// The nodes of body graphs the Vulkan executor cannot run (see the module documentation),
/// in graph order, then node order.
pub fn not_in_bodies(module: &Module) -> Vec<NotInBody> {
    let mut out = Vec::new();
    for g in body_graphs(module) {
        let Some(graph) = module.graphs.try_get(g) else { continue };
        for (h, n) in graph.nodes.iter() {
            let refuse = |reason, help| Some(NotInBody { graph: g, node: h, reason, help });
            let found = match &n.kind {
                NodeKind::Memcpy { .. } | NodeKind::Memset { .. } | NodeKind::Memfill { .. } => refuse(
                    "a copy or fill inside a conditional body does not run on Vulkan yet (conditional rendering predicates dispatches only)",
                    "write the copy or fill as a kernel in the body, or move it out of the body",
                ),
                NodeKind::HostTask(_) | NodeKind::Native(_) | NodeKind::Comm(_) => refuse(
                    "host work inside a conditional body does not run on Vulkan yet",
                    "move the host task out of the body, or run the graph with `cmdgraph interp`",
                ),
                NodeKind::Dynamic { .. } if graph.node_type(h) == NodeType::HostTask => refuse(
                    "host work inside a conditional body does not run on Vulkan yet",
                    "move the host task out of the body, or run the graph with `cmdgraph interp`",
                ),
                NodeKind::Conditional { kind: CondKind::While, .. } => refuse(
                    "a `while` inside a conditional body does not run on Vulkan yet (a loop goes back to the host between rounds)",
                    "make the loop a node of the top-level graph, or run the graph with `cmdgraph interp`",
                ),
                _ => None,
            };
            out.extend(found);
        }
    }
    out
}
