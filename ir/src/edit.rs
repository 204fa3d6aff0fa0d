//! Structural edits of a [`Graph`] for passes: removing nodes and edges (compacting the
//! arenas and remapping every handle that names a node) and adding optimizer edges.
//!
//! Arenas are append-only, so removal rebuilds them: kept nodes and edges stay in their
//! creation order, which keeps whole-graph-update pairing and the E0252 statement-order
//! invariant true. Every reference to a node is rewritten: edge endpoints, barrier wait
//! lists, `async_free` targets, `%alloc` pointers and accessors in arguments, dynamic
//! parameter values, dynamic command group alternatives and host-task access lists, body
//! statements, edge comments and diagnostic spans.
//!
//! Edges a pass adds are `make_edge` edges appended after every existing edge, each with its
//! own `edge %a -> %b` statement at the end of the body: the optimizer, not the recording
//! API, created them, and printing them as statements keeps the text an exact inverse.

use crate::arena::{Arena, Handle};
use crate::graph::{
    Accessor, Alternative, Arg, ArgValue, Edge, EdgeKind, Graph, HostTaskCommand, KernelCommand, MemRef, Node,
    NodeKind, Pointer, Site, Stmt,
};
use crate::span::SpanTable;
use std::fmt;

/// Where old node handles went after [`retain`].
#[derive(Clone, Debug, Default)]
pub struct NodeMap {
    /// Indexed by old node index: the new handle, or `None` if the node was removed.
    nodes: Vec<Option<Handle<Node>>>,
    /// Indexed by old edge index: the new handle, or `None` if the edge was removed.
    edges: Vec<Option<Handle<Edge>>>,
}

impl NodeMap {
    /// The new handle of an old node, `None` if it was removed.
    pub fn node(&self, old: Handle<Node>) -> Option<Handle<Node>> {
        self.nodes.get(old.index()).copied().flatten()
    }

    /// The new handle of an old edge, `None` if it was removed.
    pub fn edge(&self, old: Handle<Edge>) -> Option<Handle<Edge>> {
        self.edges.get(old.index()).copied().flatten()
    }
}

/// A kept node (or dynamic parameter / dynamic command group) that names a removed node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DanglingReference {
    /// Name of the entity holding the reference (without its sigil).
    pub holder: String,
    /// Name of the removed node it names.
    pub removed: String,
}

impl fmt::Display for DanglingReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{} still refers to removed node %{}", self.holder, self.removed)
    }
}

impl std::error::Error for DanglingReference {}

/// Keeps the nodes for which `keep_node` is true and the edges for which `keep_edge` is true
/// (an edge touching a removed node is always dropped), in creation order, and remaps every
/// handle. Barrier `wait(...)` entries naming a removed node, or a node whose edge into the
/// barrier was removed, are dropped (the edges are the truth after recording).
///
/// On error the graph is unchanged: a kept entity names a removed node through a pointer,
/// an accessor, an access list or an `async_free`.
pub fn retain(
    graph: &mut Graph,
    keep_node: impl Fn(Handle<Node>) -> bool,
    keep_edge: impl Fn(Handle<Edge>) -> bool,
) -> Result<NodeMap, DanglingReference> {
    let mut map = NodeMap { nodes: vec![None; graph.nodes.len()], edges: vec![None; graph.edges.len()] };
    let mut next = 0usize;
    for h in graph.nodes.handles() {
        if keep_node(h) {
            map.nodes[h.index()] = Handle::from_usize(next);
            next += 1;
        }
    }
    let mut next = 0usize;
    for (h, e) in graph.edges.iter() {
        if keep_edge(h) && map.node(e.from).is_some() && map.node(e.to).is_some() {
            map.edges[h.index()] = Handle::from_usize(next);
            next += 1;
        }
    }
    check_references(graph, &map)?;
    // Every node kept: handles do not change, so nodes, parameters and command groups stay
    // as they are (transitive reduction removes edges only). Otherwise nodes are moved, not
    // cloned, into the new arena: linear, and no allocation per node.
    let all_nodes = map.nodes.iter().all(Option::is_some);
    if !all_nodes {
        let kept = map.nodes.iter().flatten().count();
        let mut nodes = Arena::new();
        nodes.reserve(kept);
        for (h, mut node, span) in std::mem::take(&mut graph.nodes).into_entries() {
            if map.node(h).is_none() {
                continue;
            }
            remap_kind(&mut node.kind, &map);
            nodes.append(node, span);
        }
        graph.nodes = nodes;
    }
    let mut edges = Arena::new();
    edges.reserve(next);
    for (h, e) in graph.edges.iter() {
        if map.edge(h).is_none() {
            continue;
        }
        let (Some(from), Some(to)) = (map.node(e.from), map.node(e.to)) else { continue };
        edges.append(Edge { from, to, kind: e.kind }, graph.edges.span(h));
    }
    // Drop wait entries whose edge into the barrier is gone.
    if graph.nodes.iter().any(|(_, n)| matches!(n.kind, NodeKind::Barrier { .. })) {
        let mut has_edge = std::collections::HashSet::new();
        for (_, e) in edges.iter() {
            has_edge.insert((e.from, e.to));
        }
        for (h, node) in graph.nodes.iter_mut() {
            if let NodeKind::Barrier { wait } = &mut node.kind {
                wait.retain(|w| has_edge.contains(&(*w, h)));
            }
        }
    }
    if !all_nodes {
        for (_, p) in graph.dyn_params.iter_mut() {
            remap_value(&mut p.value, &map);
        }
        for (_, d) in graph.dcgs.iter_mut() {
            for alt in &mut d.alternatives {
                match alt {
                    Alternative::Kernel(cmd) => remap_kernel(cmd, &map),
                    Alternative::HostTask(t) => remap_access(t, &map),
                    Alternative::Other(kind) => remap_kind(kind, &map),
                }
            }
        }
    }
    graph.body.retain_mut(|stmt| match stmt {
        Stmt::Node(n) => map.node(*n).map(|new| *n = new).is_some(),
        Stmt::MakeEdge(e) => map.edge(*e).map(|new| *e = new).is_some(),
        _ => true,
    });
    graph.edge_comments =
        std::mem::take(&mut graph.edge_comments).into_iter().filter_map(|(e, c)| Some((map.edge(e)?, c))).collect();
    if !all_nodes {
        let mut spans = SpanTable::default();
        for (site, span) in graph.spans.iter() {
            if let Some(site) = remap_site(*site, &map) {
                spans.insert(site, span);
            }
        }
        graph.spans = spans;
    }
    graph.edges = edges;
    Ok(map)
}

/// Appends a `make_edge` edge `from -> to` with its own statement at the end of the body.
pub fn add_edge(graph: &mut Graph, from: Handle<Node>, to: Handle<Node>) -> Handle<Edge> {
    let edge = graph.edges.append(Edge { from, to, kind: EdgeKind::MakeEdge }, crate::Span::UNDEFINED);
    graph.body.push(Stmt::MakeEdge(edge));
    edge
}

/// Every node a node's command names (pointers, accessors, access lists, `async_free`,
/// barrier waits), in argument order.
pub fn referenced_nodes(graph: &Graph, kind: &NodeKind) -> Vec<Handle<Node>> {
    let mut out = Vec::new();
    let mut push = |m: &MemRef| {
        if let MemRef::Alloc(n) = m {
            out.push(*n);
        }
    };
    memrefs(kind, &mut push);
    match kind {
        NodeKind::AsyncFree { alloc } => out.push(*alloc),
        NodeKind::Barrier { wait } => out.extend(wait.iter().copied()),
        NodeKind::Kernel(cmd) => {
            for arg in &cmd.args {
                if let Arg::Dyn(p) = arg {
                    if let Some(MemRef::Alloc(n)) = graph.dyn_params.try_get(*p).and_then(|p| value_memref(&p.value)) {
                        out.push(n);
                    }
                }
            }
        }
        _ => {}
    }
    out
}

fn value_memref(value: &ArgValue) -> Option<MemRef> {
    match value {
        ArgValue::Pointer(p) => Some(p.base),
        ArgValue::Accessor(a) => Some(a.buffer),
        _ => None,
    }
}

/// Calls `f` on every memory reference inside a command: arguments given as values (not
/// dynamic parameters), copy and fill ends, ranges, conditions, access lists; not barrier
/// waits or `async_free` targets.
pub fn memrefs(kind: &NodeKind, f: &mut impl FnMut(&MemRef)) {
    match kind {
        NodeKind::Kernel(cmd) => kernel_memrefs(cmd, f),
        NodeKind::Memcpy { dst, src, .. } => {
            f(&dst.base);
            f(&src.base);
        }
        NodeKind::Memset { dst, .. } | NodeKind::Memfill { dst, .. } => f(&dst.base),
        NodeKind::Prefetch { ptr, .. } | NodeKind::Memadvise { ptr, .. } | NodeKind::Conditional { cond: ptr, .. } => {
            f(&ptr.base)
        }
        NodeKind::HostTask(t) | NodeKind::Native(t) => t.access.iter().for_each(|a| f(&a.mem)),
        NodeKind::Comm(c) => f(&c.ptr.base),
        _ => {}
    }
}

/// [`memrefs`] of a kernel command (a node's, or a dynamic command group alternative's).
pub fn kernel_memrefs(cmd: &KernelCommand, f: &mut impl FnMut(&MemRef)) {
    for arg in &cmd.args {
        if let Arg::Value(v) = arg {
            if let Some(m) = value_memref(v) {
                f(&m);
            }
        }
    }
}

/// [`memrefs`] with each reference changeable in place.
pub fn memrefs_mut(kind: &mut NodeKind, f: &mut impl FnMut(&mut MemRef)) {
    match kind {
        NodeKind::Kernel(cmd) => {
            for arg in &mut cmd.args {
                match arg {
                    Arg::Value(ArgValue::Pointer(p)) => f(&mut p.base),
                    Arg::Value(ArgValue::Accessor(a)) => f(&mut a.buffer),
                    _ => {}
                }
            }
        }
        NodeKind::Memcpy { dst, src, .. } => {
            f(&mut dst.base);
            f(&mut src.base);
        }
        NodeKind::Memset { dst, .. } | NodeKind::Memfill { dst, .. } => f(&mut dst.base),
        NodeKind::Prefetch { ptr, .. } | NodeKind::Memadvise { ptr, .. } | NodeKind::Conditional { cond: ptr, .. } => {
            f(&mut ptr.base)
        }
        NodeKind::HostTask(t) | NodeKind::Native(t) => t.access.iter_mut().for_each(|a| f(&mut a.mem)),
        NodeKind::Comm(c) => f(&mut c.ptr.base),
        _ => {}
    }
}

fn check_references(graph: &Graph, map: &NodeMap) -> Result<(), DanglingReference> {
    let name = |n: Handle<Node>| graph.nodes.try_get(n).map(|n| n.name.clone()).unwrap_or_default();
    let dangling = |m: &MemRef| match m {
        MemRef::Alloc(n) if map.node(*n).is_none() => Some(*n),
        _ => None,
    };
    for (h, node) in graph.nodes.iter() {
        if map.node(h).is_none() {
            continue;
        }
        let mut bad = None;
        memrefs(&node.kind, &mut |m| bad = bad.or(dangling(m)));
        if let NodeKind::AsyncFree { alloc } = node.kind {
            if map.node(alloc).is_none() {
                bad = Some(alloc);
            }
        }
        if let Some(n) = bad {
            return Err(DanglingReference { holder: node.name.clone(), removed: name(n) });
        }
    }
    for (_, p) in graph.dyn_params.iter() {
        if let Some(n) = value_memref(&p.value).as_ref().and_then(dangling) {
            return Err(DanglingReference { holder: p.name.clone(), removed: name(n) });
        }
    }
    for (_, d) in graph.dcgs.iter() {
        for alt in &d.alternatives {
            let mut bad = None;
            match alt {
                Alternative::Kernel(cmd) => kernel_memrefs(cmd, &mut |m| bad = bad.or(dangling(m))),
                Alternative::HostTask(t) => t.access.iter().for_each(|a| bad = bad.or(dangling(&a.mem))),
                Alternative::Other(kind) => memrefs(kind, &mut |m| bad = bad.or(dangling(m))),
            }
            if let Some(n) = bad {
                return Err(DanglingReference { holder: d.name.clone(), removed: name(n) });
            }
        }
    }
    Ok(())
}

fn remap_memref(m: &mut MemRef, map: &NodeMap) {
    if let MemRef::Alloc(n) = m {
        // check_references guarantees kept entities only name kept nodes.
        if let Some(new) = map.node(*n) {
            *n = new;
        }
    }
}

fn remap_pointer(p: &mut Pointer, map: &NodeMap) {
    remap_memref(&mut p.base, map);
}

fn remap_value(value: &mut ArgValue, map: &NodeMap) {
    match value {
        ArgValue::Pointer(p) => remap_pointer(p, map),
        ArgValue::Accessor(Accessor { buffer, .. }) => remap_memref(buffer, map),
        _ => {}
    }
}

fn remap_kernel(cmd: &mut KernelCommand, map: &NodeMap) {
    for arg in &mut cmd.args {
        if let Arg::Value(v) = arg {
            remap_value(v, map);
        }
    }
}

fn remap_access(t: &mut HostTaskCommand, map: &NodeMap) {
    for a in &mut t.access {
        remap_memref(&mut a.mem, map);
    }
}

fn remap_kind(kind: &mut NodeKind, map: &NodeMap) {
    memrefs_mut(kind, &mut |m| remap_memref(m, map));
    match kind {
        NodeKind::Barrier { wait } => {
            *wait = wait.iter().filter_map(|w| map.node(*w)).collect();
        }
        NodeKind::AsyncFree { alloc } => {
            if let Some(new) = map.node(*alloc) {
                *alloc = new;
            }
        }
        _ => {}
    }
}

fn remap_site(site: Site, map: &NodeMap) -> Option<Site> {
    Some(match site {
        Site::NodeArg(n, i) => Site::NodeArg(map.node(n)?, i),
        Site::NodeLaunch(n) => Site::NodeLaunch(map.node(n)?),
        Site::NodeListItem(n, i) => Site::NodeListItem(map.node(n)?, i),
        other => other,
    })
}

/// Name → handle index of a graph's nodes (names are unique after verification).
pub fn node_names(graph: &Graph) -> rustc_hash::FxHashMap<&str, Handle<Node>> {
    // Hashed, not ordered: lookups only, and an ordered map of 10^5 names spent its time
    // comparing strings (finalize at 10^5 nodes).
    let mut names = rustc_hash::FxHashMap::with_capacity_and_hasher(graph.nodes.len(), Default::default());
    for (h, n) in graph.nodes.iter() {
        names.entry(n.name.as_str()).or_insert(h);
    }
    names
}
