//! Topological identity of two graphs, as whole-graph update requires it (000 §8.4.2).
//!
//! Two graphs are topologically identical when they have the same number of nodes and
//! edges, nodes paired by creation order have the same node type and (for kernels) the
//! same kernel identity, and each node's edges were created in the same order by the same
//! API call, from corresponding nodes. The spec leaves a mismatch undefined behaviour;
//! [`topologically_identical`] reports the first difference instead, the way CUDA's
//! `cudaGraphExecUpdateResultInfo` names the offending node.

use crate::arena::Handle;
use crate::graph::{Alternative, Edge, EdgeKind, Graph, Node, NodeKind, NodeType};
use crate::module::Module;
use std::fmt;

/// Why two graphs are not topologically identical.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mismatch {
    /// A graph handle does not name a graph of its module.
    MissingGraph,
    /// Different node counts.
    NodeCount {
        /// Nodes in graph A.
        a: usize,
        /// Nodes in graph B.
        b: usize,
    },
    /// Different edge counts.
    EdgeCount {
        /// Edges in graph A.
        a: usize,
        /// Edges in graph B.
        b: usize,
    },
    /// Corresponding nodes have different node types.
    NodeType {
        /// Type in A.
        a: NodeType,
        /// Type in B.
        b: NodeType,
    },
    /// Corresponding nodes run on different devices (docs/multi-device.md): an update
    /// cannot move a node.
    Device {
        /// Device in A.
        a: u32,
        /// Device in B.
        b: u32,
    },
    /// Corresponding kernel nodes launch different kernels.
    Kernel {
        /// Kernel name in A.
        a: String,
        /// Kernel name in B.
        b: String,
    },
    /// Corresponding nodes have a different number of incoming edges.
    InDegree {
        /// Incoming edges in A.
        a: usize,
        /// Incoming edges in B.
        b: usize,
    },
    /// The `index`-th incoming edge comes from non-corresponding nodes.
    EdgeSource {
        /// Position among the node's incoming edges, in creation order.
        index: usize,
        /// Source node in A.
        a: Handle<Node>,
        /// Source node in B.
        b: Handle<Node>,
    },
    /// The `index`-th incoming edge was made by different API calls.
    EdgeProvenance {
        /// Position among the node's incoming edges, in creation order.
        index: usize,
        /// Provenance in A.
        a: EdgeKind,
        /// Provenance in B.
        b: EdgeKind,
    },
}

/// The first difference between two graphs: what differs, at which node (by creation
/// index, with both graphs' names for it) and, for edges, which edge of each graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdentityMismatch {
    /// What differs.
    pub mismatch: Mismatch,
    /// The node (creation index, the same in both graphs) the difference is at.
    pub node: Option<Handle<Node>>,
    /// The node's name in graph A and in graph B.
    pub names: Option<(String, String)>,
    /// The differing edge in graph A and in graph B.
    pub edges: Option<(Handle<Edge>, Handle<Edge>)>,
}

impl IdentityMismatch {
    fn at(mismatch: Mismatch, node: Handle<Node>, a: &Graph, b: &Graph) -> IdentityMismatch {
        let name = |g: &Graph| g.nodes.try_get(node).map(|n| n.name.clone()).unwrap_or_default();
        IdentityMismatch { mismatch, node: Some(node), names: Some((name(a), name(b))), edges: None }
    }

    fn global(mismatch: Mismatch) -> IdentityMismatch {
        IdentityMismatch { mismatch, node: None, names: None, edges: None }
    }
}

impl fmt::Display for IdentityMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let (Some(node), Some((a, b))) = (self.node, &self.names) {
            write!(f, "node #{} (`%{a}` / `%{b}`): ", node.index())?;
        }
        match &self.mismatch {
            Mismatch::MissingGraph => write!(f, "a graph handle does not name a graph of its module"),
            Mismatch::NodeCount { a, b } => write!(f, "node counts differ ({a} vs {b})"),
            Mismatch::EdgeCount { a, b } => write!(f, "edge counts differ ({a} vs {b})"),
            Mismatch::NodeType { a, b } => write!(f, "node types differ ({} vs {})", a.name(), b.name()),
            Mismatch::Kernel { a, b } => write!(f, "kernels differ (`@{a}` vs `@{b}`)"),
            Mismatch::Device { a, b } => write!(f, "the node runs on device {a} in one graph and {b} in the other"),
            Mismatch::InDegree { a, b } => write!(f, "numbers of incoming edges differ ({a} vs {b})"),
            Mismatch::EdgeSource { index, a, b } => write!(
                f,
                "incoming edge {index} comes from node #{} in one graph and node #{} in the other",
                a.index(),
                b.index()
            ),
            Mismatch::EdgeProvenance { index, a, b } => write!(
                f,
                "incoming edge {index} was made by different API calls (`{}` vs `{}`)",
                a.keyword(),
                b.keyword()
            ),
        }
    }
}

impl std::error::Error for IdentityMismatch {}

/// The kernel identity of a node: the kernel's name, for kernel nodes and for dynamic
/// nodes whose active alternative is a kernel.
fn kernel_identity<'m>(module: &'m Module, g: &Graph, kind: &NodeKind) -> Option<&'m str> {
    let kernel = match kind {
        NodeKind::Kernel(cmd) => cmd.kernel,
        NodeKind::Dynamic { dcg } => match g.dcgs.try_get(*dcg).and_then(|d| d.alternatives.get(d.active as usize)) {
            Some(Alternative::Kernel(cmd)) => cmd.kernel,
            _ => return None,
        },
        _ => return None,
    };
    module.kernels.try_get(kernel).map(|k| k.name.as_str())
}

/// Incoming edges of each node, in edge creation order.
fn incoming(g: &Graph) -> Vec<Vec<(Handle<Edge>, Edge)>> {
    let mut out = vec![Vec::new(); g.nodes.len()];
    for (h, e) in g.edges.iter() {
        if let Some(list) = out.get_mut(e.to.index()) {
            list.push((h, *e));
        }
    }
    out
}

/// Checks that graph `graph_a` of `module_a` and graph `graph_b` of `module_b` are
/// topologically identical (000 §8.4.2); the error names the first difference.
pub fn topologically_identical(
    module_a: &Module,
    graph_a: Handle<Graph>,
    module_b: &Module,
    graph_b: Handle<Graph>,
) -> Result<(), IdentityMismatch> {
    let (Some(a), Some(b)) = (module_a.graphs.try_get(graph_a), module_b.graphs.try_get(graph_b)) else {
        return Err(IdentityMismatch::global(Mismatch::MissingGraph));
    };
    if a.nodes.len() != b.nodes.len() {
        let mismatch = Mismatch::NodeCount { a: a.nodes.len(), b: b.nodes.len() };
        let first_extra = Handle::from_usize(a.nodes.len().min(b.nodes.len()));
        return Err(match first_extra {
            Some(node) => IdentityMismatch::at(mismatch, node, a, b),
            None => IdentityMismatch::global(mismatch),
        });
    }
    let (ia, ib) = (incoming(a), incoming(b));
    if a.edges.len() != b.edges.len() {
        // Name the first node whose incoming edges differ in number, as the place to look.
        let mismatch = Mismatch::EdgeCount { a: a.edges.len(), b: b.edges.len() };
        let node = a.nodes.handles().zip(ia.iter().zip(&ib)).find(|(_, (x, y))| x.len() != y.len()).map(|(h, _)| h);
        return Err(match node {
            Some(node) => IdentityMismatch::at(mismatch, node, a, b),
            None => IdentityMismatch::global(mismatch),
        });
    }
    for ((node, na), (_, nb)) in a.nodes.iter().zip(b.nodes.iter()) {
        let (ta, tb) = (a.node_type(node), b.node_type(node));
        if ta != tb {
            return Err(IdentityMismatch::at(Mismatch::NodeType { a: ta, b: tb }, node, a, b));
        }
        let (da, db) = (a.node_device(node), b.node_device(node));
        if da != db {
            return Err(IdentityMismatch::at(Mismatch::Device { a: da, b: db }, node, a, b));
        }
        let (ka, kb) = (kernel_identity(module_a, a, &na.kind), kernel_identity(module_b, b, &nb.kind));
        if ka != kb {
            let name = |k: Option<&str>| k.unwrap_or("?").to_string();
            return Err(IdentityMismatch::at(Mismatch::Kernel { a: name(ka), b: name(kb) }, node, a, b));
        }
    }
    for (node, (ea, eb)) in a.nodes.handles().zip(ia.iter().zip(&ib)) {
        if ea.len() != eb.len() {
            return Err(IdentityMismatch::at(Mismatch::InDegree { a: ea.len(), b: eb.len() }, node, a, b));
        }
        for (index, ((ha, xa), (hb, xb))) in ea.iter().zip(eb).enumerate() {
            let mismatch = if xa.from != xb.from {
                Mismatch::EdgeSource { index, a: xa.from, b: xb.from }
            } else if xa.kind != xb.kind {
                Mismatch::EdgeProvenance { index, a: xa.kind, b: xb.kind }
            } else {
                continue;
            };
            let mut m = IdentityMismatch::at(mismatch, node, a, b);
            m.edges = Some((*ha, *hb));
            return Err(m);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{Edge, Node as IrNode};
    use crate::span::Span;

    fn graph(nodes: &[NodeKind], edges: &[(usize, usize, EdgeKind)]) -> Graph {
        let mut g = Graph::default();
        for (i, k) in nodes.iter().enumerate() {
            let node = IrNode {
                device: None,
                name: format!("n{i}"),
                kind: k.clone(),
                queue: None,
                comments: Default::default(),
            };
            g.nodes.append(node, Span::UNDEFINED);
        }
        for (f, t, kind) in edges {
            let (Some(from), Some(to)) = (Handle::from_usize(*f), Handle::from_usize(*t)) else { continue };
            g.edges.append(Edge { from, to, kind: *kind }, Span::UNDEFINED);
        }
        g
    }

    fn module(g: Graph) -> (Module, Handle<Graph>) {
        let mut m = Module::default();
        let h = m.graphs.append(g, Span::UNDEFINED);
        (m, h)
    }

    fn check(a: Graph, b: Graph) -> Result<(), IdentityMismatch> {
        let (ma, ha) = module(a);
        let (mb, hb) = module(b);
        topologically_identical(&ma, ha, &mb, hb)
    }

    #[test]
    fn identical_graphs_pass() {
        let e = [(0, 1, EdgeKind::DependsOn), (0, 2, EdgeKind::Event)];
        let nodes = [NodeKind::Empty, NodeKind::Empty, NodeKind::Empty];
        assert_eq!(check(graph(&nodes, &e), graph(&nodes, &e)), Ok(()));
    }

    #[test]
    fn provenance_difference_names_node_and_edges() {
        let nodes = [NodeKind::Empty, NodeKind::Empty];
        let err = check(graph(&nodes, &[(0, 1, EdgeKind::DependsOn)]), graph(&nodes, &[(0, 1, EdgeKind::MakeEdge)]));
        let err = err.expect_err("different provenance");
        assert_eq!(err.node.map(Handle::index), Some(1));
        assert_eq!(err.mismatch, Mismatch::EdgeProvenance { index: 0, a: EdgeKind::DependsOn, b: EdgeKind::MakeEdge });
        assert!(err.edges.is_some());
        assert!(err.to_string().contains("`depends_on` vs `make_edge`"), "{err}");
    }

    #[test]
    fn a_node_moved_to_another_device_is_named() {
        let nodes = [
            NodeKind::Empty,
            NodeKind::Memset {
                dst: crate::graph::Pointer {
                    base: crate::graph::MemRef::Alloc(Handle::from_usize(0).unwrap_or_else(|| unreachable!())),
                    offset: 0,
                },
                value: 0,
                bytes: 4,
            },
        ];
        let a = graph(&nodes, &[]);
        let mut b = graph(&nodes, &[]);
        if let Some(n) = Handle::from_usize(1).and_then(|h| b.nodes.try_get_mut(h)) {
            n.device = Some(1);
        }
        let err = check(a, b).expect_err("moved");
        assert_eq!(err.mismatch, Mismatch::Device { a: 0, b: 1 });
        assert!(err.to_string().contains("runs on device 0 in one graph and 1 in the other"), "{err}");
    }

    #[test]
    fn edge_order_matters() {
        let nodes = [NodeKind::Empty, NodeKind::Empty, NodeKind::Empty];
        let a = graph(&nodes, &[(0, 2, EdgeKind::DependsOn), (1, 2, EdgeKind::DependsOn)]);
        let b = graph(&nodes, &[(1, 2, EdgeKind::DependsOn), (0, 2, EdgeKind::DependsOn)]);
        let err = check(a, b).expect_err("order differs");
        assert!(matches!(err.mismatch, Mismatch::EdgeSource { index: 0, .. }), "{err}");
    }

    #[test]
    fn counts_are_checked_first() {
        let err =
            check(graph(&[NodeKind::Empty], &[]), graph(&[NodeKind::Empty, NodeKind::Empty], &[])).expect_err("counts");
        assert_eq!(err.mismatch, Mismatch::NodeCount { a: 1, b: 2 });
        assert_eq!(err.node.map(Handle::index), Some(1));
        let nodes = [NodeKind::Empty, NodeKind::Empty, NodeKind::Empty];
        let err = check(graph(&nodes, &[]), graph(&nodes, &[(0, 2, EdgeKind::DependsOn)])).expect_err("edges");
        assert_eq!(err.mismatch, Mismatch::EdgeCount { a: 0, b: 1 });
        assert_eq!(err.node.map(Handle::index), Some(2), "the node whose edges differ");
    }
}
