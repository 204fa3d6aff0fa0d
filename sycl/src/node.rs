//! `node`: a handle to one node of a modifiable graph (000 §8.3.1).

use crate::args::{nd_range_launch, range_launch, NdRange, Range};
use crate::error::{ensure, Result, SyclError};
use crate::graph::GraphInner;
use crate::queue::{Event, EventKind};
use cmdgraph_ir::{Alternative, Handle, Launch, NodeKind, NodeType};
use std::cell::RefCell;
use std::rc::Rc;

/// A node of a modifiable graph. Copies name the same node; only graph APIs make nodes.
#[derive(Clone)]
pub struct Node {
    pub(crate) graph: Rc<RefCell<GraphInner>>,
    pub(crate) handle: Handle<cmdgraph_ir::Node>,
}

impl PartialEq for Node {
    fn eq(&self, other: &Node) -> bool {
        Rc::ptr_eq(&self.graph, &other.graph) && self.handle == other.handle
    }
}

impl Node {
    /// The IR handle (the node's index in creation order).
    pub fn handle(&self) -> Handle<cmdgraph_ir::Node> {
        self.handle
    }

    /// The IR name (without `%`).
    pub fn name(&self) -> String {
        self.ir_name_in(&self.graph.borrow())
    }

    pub(crate) fn ir_name_in(&self, inner: &GraphInner) -> String {
        inner.ir.nodes.try_get(self.handle).map(|n| n.name.clone()).unwrap_or_default()
    }

    /// `get_type()`. A node of a dynamic command group has its alternatives' type.
    pub fn get_type(&self) -> NodeType {
        self.graph.borrow().ir.node_type(self.handle)
    }

    fn neighbours(&self, preds: bool) -> Vec<Node> {
        let list = {
            let inner = self.graph.borrow();
            let mut list = if preds { inner.ir.predecessors(self.handle) } else { inner.ir.successors(self.handle) };
            let mut seen = std::collections::BTreeSet::new();
            list.retain(|h| seen.insert(*h));
            list
        };
        list.into_iter().map(|handle| Node { graph: self.graph.clone(), handle }).collect()
    }

    /// `get_predecessors()`: the nodes this one directly depends on, in edge order.
    pub fn get_predecessors(&self) -> Vec<Node> {
        self.neighbours(true)
    }

    /// `get_successors()`: the nodes that directly depend on this one, in edge order.
    pub fn get_successors(&self) -> Vec<Node> {
        self.neighbours(false)
    }

    /// `node::get_node_from_event(event)`: the node a recorded submission created (row 44).
    pub fn get_node_from_event(event: &Event) -> Result<Node> {
        match &*event.0 {
            EventKind::Recorded { graph, node, discard: false, .. } => graph
                .upgrade()
                .map(|graph| Node { graph, handle: *node })
                .ok_or_else(|| SyclError::invalid(44, "get_node_from_event: the event's graph no longer exists")),
            EventKind::Recorded { discard: true, .. } => Err(SyclError::invalid(
                44,
                "get_node_from_event: events of a discard_events queue are not linked to nodes",
            )),
            EventKind::Submitted(_) => Err(SyclError::invalid(
                44,
                "get_node_from_event: the event did not come from a submission to a recording queue, so no node is linked to it",
            )),
        }
    }

    /// `update_range(range)` (rows 45, 46): shows at once in the modifiable graph, in
    /// executable graphs after `exec.update(node)`. On a dynamic-command-group node it
    /// changes the active alternative (so every node sharing the group).
    pub fn update_range(&self, range: impl Into<Range>) -> Result<()> {
        let launch = range_launch(&range.into())?;
        self.update_launch(launch, "update_range")
    }

    /// `update_nd_range(ndRange)` (rows 45, 46).
    pub fn update_nd_range(&self, range: NdRange) -> Result<()> {
        let launch = nd_range_launch(&range)?;
        self.update_launch(launch, "update_nd_range")
    }

    fn update_launch(&self, launch: Launch, what: &str) -> Result<()> {
        let mut inner = self.graph.borrow_mut();
        let inner = &mut *inner;
        let node = inner
            .ir
            .nodes
            .try_get(self.handle)
            .ok_or_else(|| SyclError::invalid(46, format!("{what}: unknown node")))?;
        let name = node.name.clone();
        let target = match &node.kind {
            NodeKind::Kernel(_) => Target::Node,
            NodeKind::Dynamic { dcg } => Target::Dcg(*dcg),
            other => {
                return Err(SyclError::invalid(
                    46,
                    format!("{what}: node `%{name}` is a {} node, not a kernel", other.node_type().name()),
                ))
            }
        };
        let current = match target {
            Target::Node => match &mut inner.ir.nodes[self.handle].kind {
                NodeKind::Kernel(cmd) => &mut cmd.launch,
                _ => return Err(SyclError::invalid(46, format!("{what}: node `%{name}` is not a kernel"))),
            },
            Target::Dcg(dcg) => {
                let group = &mut inner.ir.dcgs[dcg];
                let active = group.active as usize;
                match group.alternatives.get_mut(active) {
                    Some(Alternative::Kernel(cmd)) => &mut cmd.launch,
                    _ => {
                        return Err(SyclError::invalid(
                            46,
                            format!("{what}: the active alternative of node `%{name}` is not a kernel"),
                        ))
                    }
                }
            }
        };
        ensure(current.dims() == launch.dims(), 45, || {
            format!(
                "{what}: node `%{name}` has a {}-dimensional range; the new one has {} dimensions",
                current.dims(),
                launch.dims()
            )
        })?;
        *current = launch;
        Ok(())
    }
}

enum Target {
    Node,
    Dcg(Handle<cmdgraph_ir::DynCommandGroup>),
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Node(%{})", self.name())
    }
}
