//! The executable form of a graph: one DAG with every sub-graph expanded in place.
//!
//! A `subgraph` node becomes two pseudo-nodes, *enter* and *exit*: the node's predecessors
//! lead to *enter*, *enter* leads to the child graph's roots, the child's leaves lead to
//! *exit*, and *exit* leads to the node's successors (000 §8.2.3 and ambiguity A12). So the
//! child runs after the sub-graph node's predecessors and before its successors, and the
//! race detector sees the child's nodes one by one. Flat node order is creation order with
//! each child inserted at its sub-graph node's position; it is the default schedule's
//! tie-break.

use super::error::InterpError;
use cmdgraph_ir::arena::Handle;
use cmdgraph_ir::graph::{Graph, Node, NodeKind};
use cmdgraph_ir::module::Module;

/// Most sub-graph nesting the interpreter follows (as docs/ir.md bounds region nesting).
const MAX_DEPTH: usize = 256;
/// Most nodes in an expanded graph.
const MAX_NODES: usize = 1 << 24;

/// What a flat node stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// A node that executes its command.
    Command,
    /// The start of a sub-graph node (does nothing).
    Enter,
    /// The end of a sub-graph node (does nothing).
    Exit,
}

/// One node of the expanded graph.
#[derive(Clone, Debug)]
pub(crate) struct FlatNode {
    /// The graph the node belongs to.
    pub graph: Handle<Graph>,
    /// The node in that graph.
    pub node: Handle<Node>,
    /// Path name: `k0`, `sg/k0`, `outer/inner/k0`.
    pub name: String,
    /// What it stands for.
    pub role: Role,
    /// Predecessors (flat indices; duplicate edges kept).
    pub preds: Vec<u32>,
    /// Successors (flat indices; duplicate edges kept).
    pub succs: Vec<u32>,
}

/// An expanded, acyclic graph.
#[derive(Clone, Debug, Default)]
pub(crate) struct Flat {
    /// Nodes in flat creation order.
    pub nodes: Vec<FlatNode>,
}

impl Flat {
    /// Expands `root`, checking handles, nesting, sub-graph restrictions and acyclicity.
    pub fn build(module: &Module, root: Handle<Graph>) -> Result<Flat, InterpError> {
        let mut flat = Flat::default();
        let mut stack = Vec::new();
        flat.expand(module, root, "", &mut stack)?;
        flat.check_acyclic(module)?;
        Ok(flat)
    }

    fn push(&mut self, graph: Handle<Graph>, node: Handle<Node>, name: String, role: Role) -> Result<u32, InterpError> {
        if self.nodes.len() >= MAX_NODES {
            return Err(InterpError::api(format!("expanded graph exceeds {MAX_NODES} nodes")));
        }
        self.nodes.push(FlatNode { graph, node, name, role, preds: Vec::new(), succs: Vec::new() });
        Ok((self.nodes.len() - 1) as u32)
    }

    fn edge(&mut self, from: u32, to: u32) {
        self.nodes[from as usize].succs.push(to);
        self.nodes[to as usize].preds.push(from);
    }

    /// Appends graph `g`'s nodes; returns each node's (entry, exit) flat index.
    fn expand(
        &mut self,
        module: &Module,
        g: Handle<Graph>,
        prefix: &str,
        stack: &mut Vec<Handle<Graph>>,
    ) -> Result<Vec<(u32, u32)>, InterpError> {
        let graph = module.graphs.try_get(g).ok_or_else(|| InterpError::api("graph handle out of range"))?;
        if stack.len() >= MAX_DEPTH {
            return Err(InterpError::invalid(&graph.name, None, format!("sub-graphs nest deeper than {MAX_DEPTH}")));
        }
        stack.push(g);
        let mut ends = Vec::with_capacity(graph.nodes.len());
        for (h, node) in graph.nodes.iter() {
            let name = format!("{prefix}{}", node.name);
            match &node.kind {
                NodeKind::Subgraph { graph: child } => {
                    let child_graph = module.graphs.try_get(*child).ok_or_else(|| {
                        InterpError::invalid(&graph.name, Some(&name), "sub-graph handle out of range")
                    })?;
                    if stack.contains(child) {
                        return Err(InterpError::invalid(
                            &graph.name,
                            Some(&name),
                            format!("graph @{} contains itself through this sub-graph node", child_graph.name),
                        ));
                    }
                    if let Some((_, n)) = child_graph
                        .nodes
                        .iter()
                        .find(|(_, n)| matches!(n.kind, NodeKind::AsyncMalloc { .. } | NodeKind::AsyncFree { .. }))
                    {
                        return Err(InterpError::invalid(
                            &graph.name,
                            Some(&name),
                            format!(
                                "graph @{} has graph-owned allocations (node %{}) and cannot be a sub-graph \
                                 (000 §8.4.3)",
                                child_graph.name, n.name
                            ),
                        ));
                    }
                    let enter = self.push(g, h, name.clone(), Role::Enter)?;
                    let child_ends = self.expand(module, *child, &format!("{name}/"), stack)?;
                    let exit = self.push(g, h, name, Role::Exit)?;
                    let (mut has_pred, mut has_succ) = (vec![false; child_ends.len()], vec![false; child_ends.len()]);
                    for (_, e) in child_graph.edges.iter() {
                        // Handles were checked when the child was expanded.
                        has_succ[e.from.index()] = true;
                        has_pred[e.to.index()] = true;
                    }
                    for (i, &(entry, exit_of)) in child_ends.iter().enumerate() {
                        if !has_pred[i] {
                            self.edge(enter, entry);
                        }
                        if !has_succ[i] {
                            self.edge(exit_of, exit);
                        }
                    }
                    if child_ends.is_empty() {
                        self.edge(enter, exit);
                    }
                    ends.push((enter, exit));
                }
                _ => {
                    let i = self.push(g, h, name, Role::Command)?;
                    ends.push((i, i));
                }
            }
        }
        for (_, e) in graph.edges.iter() {
            let (Some(from), Some(to)) = (ends.get(e.from.index()), ends.get(e.to.index())) else {
                return Err(InterpError::invalid(&graph.name, None, "edge endpoint out of range"));
            };
            let (from, to) = (from.1, to.0);
            self.edge(from, to);
        }
        stack.pop();
        Ok(ends)
    }

    /// Fails with the first node (in flat order) on a cycle.
    fn check_acyclic(&self, module: &Module) -> Result<(), InterpError> {
        let mut indeg: Vec<usize> = self.nodes.iter().map(|n| n.preds.len()).collect();
        let mut ready: Vec<u32> = (0..self.nodes.len() as u32).filter(|&i| indeg[i as usize] == 0).collect();
        let mut seen = 0;
        while let Some(i) = ready.pop() {
            seen += 1;
            for &s in &self.nodes[i as usize].succs {
                indeg[s as usize] -= 1;
                if indeg[s as usize] == 0 {
                    ready.push(s);
                }
            }
        }
        if seen == self.nodes.len() {
            return Ok(());
        }
        // Every unscheduled node has an unscheduled predecessor; walking back through them
        // must revisit a node, and that node lies on a cycle.
        let mut at = indeg.iter().position(|&d| d > 0).unwrap_or(0);
        let mut visited = vec![false; self.nodes.len()];
        while !visited[at] {
            visited[at] = true;
            match self.nodes[at].preds.iter().find(|&&p| indeg[p as usize] > 0) {
                Some(&p) => at = p as usize,
                None => break,
            }
        }
        let n = &self.nodes[at];
        let gname = module.graphs.try_get(n.graph).map_or("?", |g| g.name.as_str());
        Err(InterpError::invalid(gname, Some(&n.name), "the graph has a cycle through this node"))
    }
}
