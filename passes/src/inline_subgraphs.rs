//! `inline-subgraphs`: replace every `subgraph @g` node by a copy of `@g`'s nodes and edges.
//!
//! Graphs are processed children first, so a child is already flat when it is copied and
//! nesting is handled at any depth. The parent graph is rebuilt by walking its body in
//! statement order (creation order is data: kept nodes and edges keep their relative order,
//! which keeps E0252 and whole-graph-update pairing among them). At a `subgraph %s` statement
//! the child's body is copied in its own order:
//!
//! - nodes, dynamic parameters, dynamic command groups are named `<s>.<name>`, queues
//!   `@<s>.<queue>`; a taken name gets `.1`, `.2`, ... (the first free one) so the result
//!   is deterministic;
//! - the child's internal edges keep their provenance (their queues are copied too, so
//!   `in_order`, `barrier` and `event` edges stay true);
//! - each edge into `%s` becomes an edge into every root of the copy (nodes without
//!   predecessors), created with the root (`depends_on`); each edge out of `%s` leaves from
//!   every leaf (nodes without successors): inline edges keep `all_leaves`, `transitive` and
//!   `barrier` (into a barrier) provenance and become `depends_on` otherwise, since the leaf is
//!   not on the queue or buffer that made them; `make_edge` edges stay `make_edge`;
//! - a barrier's `wait(%s)` waits for every leaf.
//!
//! A child without nodes becomes an `empty` node named `%s`, on `%s`'s queue, with `%s`'s
//! edges unchanged, so the ordering through it is kept (`eliminate-empty-nodes` removes it).
//! Dynamic parameters of the child are copied per `subgraph` node (a sub-graph is an
//! executable graph: its values are fixed when it is embedded, and each embedding owns them).
//! Sub-graphs have no graph-owned allocations (E0266), so no allocation is copied. Graphs
//! used as sub-graphs stay in the module: they are graphs of their own.
//!
//! Size: before copying anything, the node count of every graph after inlining is computed
//! children first with saturating arithmetic (a node counts 1, a `subgraph` node its child's
//! count, at least 1). A few lines of text nesting sub-graphs by doubling would otherwise
//! ask for 2^40 nodes and never finish, so a graph above [`PassOptions::max_inlined_nodes`]
//! (default [`DEFAULT_MAX_INLINED_NODES`]) is rejected naming its largest `subgraph` node.
//!
//! Work: linear in the size of the output. Each copied graph's inline edges are indexed by
//! target once (looking them up per node scanned every edge: quadratic in a child's edges,
//! issue 18), and the sources of edges into a `subgraph` node are deduplicated with a set.

use crate::{work, PassContext, PassError, PassInfo, PassOptions};
use cmdgraph_ir::graph::{
    Accessor, Alternative, Arg, ArgValue, DynCommandGroup, DynParam, Edge, EdgeKind, HostTaskCommand, KernelCommand,
    MemRef, Node, NodeKind, Pointer, Queue, Site, Stmt,
};
use cmdgraph_ir::span::SpanTable;
use cmdgraph_ir::{Graph, Handle, Module, Span};
use std::collections::{BTreeSet, HashSet};

/// Registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "inline-subgraphs",
    summary: "replace each `subgraph @g` node by a copy of @g's nodes and edges (recursively)",
    statistics: &[
        ("subgraphs-inlined", "subgraph nodes replaced"),
        ("nodes-created", "nodes created: copies of child nodes and `empty` stand-ins for empty children"),
        ("edges-created", "edges into roots, out of leaves and copies of child edges"),
    ],
    preserves: "names, order and edges of every node it keeps; the copies run as the child did (no profiling \
                event for the subgraph node itself)",
    run,
};

/// The default of [`PassOptions::max_inlined_nodes`]: ten million nodes in one graph after
/// inlining, far above real command graphs (thousands of nodes) and still small enough to
/// build in memory (a node and its edges take some hundred bytes).
pub const DEFAULT_MAX_INLINED_NODES: u64 = 10_000_000;

fn run(module: &mut Module, ctx: &mut PassContext) -> Result<(), PassError> {
    let order = children_first(module)?;
    check_sizes(module, &order, ctx.options)?;
    for g in order {
        let graph = &module.graphs[g];
        if !graph.nodes.iter().any(|(_, n)| matches!(n.kind, NodeKind::Subgraph { .. })) {
            continue;
        }
        let flat = Inliner::new(module, graph, ctx).build(graph)?;
        module.graphs[g] = flat;
    }
    Ok(())
}

/// Node count of each graph after inlining, computed over `order` (children first) with
/// saturating arithmetic, so nothing is copied before every graph is known to fit the limit.
/// The first graph over the limit is rejected at its largest `subgraph` node.
fn check_sizes(module: &Module, order: &[Handle<Graph>], options: PassOptions) -> Result<(), PassError> {
    let limit = options.max_inlined_nodes.unwrap_or(DEFAULT_MAX_INLINED_NODES);
    let mut size = vec![0u64; module.graphs.len()];
    for &g in order {
        let graph = &module.graphs[g];
        work::count(graph.nodes.len());
        let mut total = 0u64;
        let mut nested = false;
        // The `subgraph` node contributing most (ties: the first), for the diagnostic.
        let mut largest: Option<(&str, &str, u64)> = None;
        for (_, n) in graph.nodes.iter() {
            let count = match n.kind {
                NodeKind::Subgraph { graph: c } => {
                    nested = true;
                    // A child that is missing is reported by the copy; it counts 1 here. An
                    // empty child becomes one `empty` node.
                    let count = size.get(c.index()).copied().unwrap_or(1).max(1);
                    if largest.is_none_or(|(_, _, m)| count > m) {
                        let child = module.graphs.try_get(c).map_or("?", |c| c.name.as_str());
                        largest = Some((n.name.as_str(), child, count));
                    }
                    count
                }
                _ => 1,
            };
            total = total.saturating_add(count);
        }
        if let Some(slot) = size.get_mut(g.index()) {
            *slot = total;
        }
        if let (true, Some((node, child, count))) = (nested && total > limit, largest) {
            let shown = |n: u64| if n == u64::MAX { "more than 1.8e19".to_string() } else { n.to_string() };
            return Err(PassError::Failed {
                pass: INFO.name,
                graph: graph.name.clone(),
                node: Some(node.to_string()),
                message: format!(
                    "inlining would make @{} {} nodes, above the limit of {limit}: this `subgraph` node alone \
                     embeds @{child} as {} nodes (sub-graphs nested by doubling grow exponentially); nest fewer \
                     levels, or keep the sub-graphs out of this pipeline (raise \
                     `PassOptions::max_inlined_nodes` only if the module really is this large)",
                    graph.name,
                    shown(total),
                    shown(count),
                ),
            });
        }
    }
    Ok(())
}

/// Inline edges (everything but `make_edge`, which is a statement of its own) of one graph
/// by target node, in creation order.
struct InEdges {
    /// `edges[offsets[i]..offsets[i + 1]]` go into node `i`.
    offsets: Vec<usize>,
    edges: Vec<Edge>,
}

impl InEdges {
    fn of(g: &Graph) -> InEdges {
        let n = g.nodes.len();
        let inline = || g.edges.iter().filter(|(_, e)| e.kind != EdgeKind::MakeEdge && e.to.index() < n);
        work::count(2 * g.edges.len());
        let mut offsets = vec![0usize; n + 1];
        for (_, e) in inline() {
            offsets[e.to.index() + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        // Stable: the edges into one node stay in creation order.
        let mut edges: Vec<Edge> = inline().map(|(_, e)| *e).collect();
        edges.sort_by_key(|e| e.to.index());
        InEdges { offsets, edges }
    }

    /// The inline edges into `node`, in creation order.
    fn into(&self, node: Handle<Node>) -> &[Edge] {
        let i = node.index();
        match (self.offsets.get(i), self.offsets.get(i + 1)) {
            (Some(&lo), Some(&hi)) => &self.edges[lo..hi],
            _ => &[],
        }
    }
}

/// Every graph, each after the graphs its `subgraph` nodes run (depth-first post-order,
/// module order otherwise). A cycle (the verifier rejects those, E0265) is an error.
fn children_first(module: &Module) -> Result<Vec<Handle<Graph>>, PassError> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let mut mark = vec![Mark::New; module.graphs.len()];
    let mut order = Vec::with_capacity(module.graphs.len());
    for root in module.graphs.handles() {
        // Explicit stack of (graph, next node index to look at): nesting can be deep.
        let mut stack = vec![(root, 0usize)];
        while let Some(&mut (g, ref mut next)) = stack.last_mut() {
            if *next == 0 {
                match mark[g.index()] {
                    Mark::Done => {
                        stack.pop();
                        continue;
                    }
                    Mark::Open => {
                        return Err(PassError::Failed {
                            pass: INFO.name,
                            graph: module.graphs[g].name.clone(),
                            node: None,
                            message: "the graph contains itself through sub-graphs".into(),
                        })
                    }
                    Mark::New => mark[g.index()] = Mark::Open,
                }
            }
            let graph = &module.graphs[g];
            let child = graph.nodes.iter().skip(*next).find_map(|(h, n)| match n.kind {
                NodeKind::Subgraph { graph } => Some((h, graph)),
                _ => None,
            });
            match child {
                Some((h, c)) if module.graphs.try_get(c).is_some() => {
                    *next = h.index() + 1;
                    if mark[c.index()] != Mark::Done {
                        stack.push((c, 0));
                    }
                }
                Some((h, _)) => *next = h.index() + 1,
                None => {
                    mark[g.index()] = Mark::Done;
                    order.push(g);
                    stack.pop();
                }
            }
        }
    }
    Ok(order)
}

/// What an old node became in the rebuilt graph.
#[derive(Clone, Debug, Default)]
enum Slot {
    /// Not built yet.
    #[default]
    Unset,
    /// A node of its own (kept, or an `empty` stand-in for an empty child).
    Kept(Handle<Node>),
    /// A sub-graph copy: edges in go to `roots`, edges out leave from `leaves`.
    Expanded { roots: Vec<Handle<Node>>, leaves: Vec<Handle<Node>> },
}

/// Handle maps from one source graph (the parent, or one child copy) into the output.
#[derive(Default)]
struct Maps {
    nodes: Vec<Slot>,
    queues: Vec<Option<Handle<Queue>>>,
    dyn_params: Vec<Option<Handle<DynParam>>>,
    dcgs: Vec<Option<Handle<DynCommandGroup>>>,
}

impl Maps {
    fn for_graph(g: &Graph) -> Maps {
        Maps {
            nodes: vec![Slot::Unset; g.nodes.len()],
            queues: vec![None; g.queues.len()],
            dyn_params: vec![None; g.dyn_params.len()],
            dcgs: vec![None; g.dcgs.len()],
        }
    }

    /// The output nodes an edge out of `old` leaves from.
    fn sources(&self, old: Handle<Node>) -> Vec<Handle<Node>> {
        match self.nodes.get(old.index()) {
            Some(Slot::Kept(h)) => vec![*h],
            Some(Slot::Expanded { leaves, .. }) => leaves.clone(),
            _ => Vec::new(),
        }
    }

    /// The output nodes an edge into `old` goes to.
    fn targets(&self, old: Handle<Node>) -> Vec<Handle<Node>> {
        match self.nodes.get(old.index()) {
            Some(Slot::Kept(h)) => vec![*h],
            Some(Slot::Expanded { roots, .. }) => roots.clone(),
            _ => Vec::new(),
        }
    }

    fn expanded(&self, old: Handle<Node>) -> bool {
        matches!(self.nodes.get(old.index()), Some(Slot::Expanded { .. }))
    }
}

/// Builds the flat form of one parent graph.
struct Inliner<'a> {
    module: &'a Module,
    ctx: &'a mut PassContext,
    parent: String,
    out: Graph,
    /// `%` names in use (nodes, dynamic parameters, dynamic command groups).
    locals: BTreeSet<String>,
    /// `@` names in use (module items and this graph's queues).
    globals: BTreeSet<String>,
}

type Built<T> = Result<T, PassError>;

impl<'a> Inliner<'a> {
    fn new(module: &'a Module, parent: &Graph, ctx: &'a mut PassContext) -> Inliner<'a> {
        let mut locals = BTreeSet::new();
        locals.extend(parent.nodes.iter().map(|(_, n)| n.name.clone()));
        locals.extend(parent.dyn_params.iter().map(|(_, p)| p.name.clone()));
        locals.extend(parent.dcgs.iter().map(|(_, d)| d.name.clone()));
        let mut globals = BTreeSet::new();
        globals.extend(module.kernels.iter().map(|(_, k)| k.name.clone()));
        globals.extend(module.memories.iter().map(|(_, m)| m.name.clone()));
        globals.extend(module.graphs.iter().map(|(_, g)| g.name.clone()));
        globals.extend(parent.queues.iter().map(|(_, q)| q.name.clone()));
        let out = Graph {
            name: parent.name.clone(),
            properties: parent.properties,
            device: parent.device,
            context: parent.context,
            closing_comments: parent.closing_comments.clone(),
            comments: parent.comments.clone(),
            ..Graph::default()
        };
        Inliner { module, ctx, parent: parent.name.clone(), out, locals, globals }
    }

    fn fail(&self, node: Option<&str>, message: impl Into<String>) -> PassError {
        PassError::Failed {
            pass: INFO.name,
            graph: self.parent.clone(),
            node: node.map(str::to_string),
            message: message.into(),
        }
    }

    fn build(mut self, parent: &Graph) -> Built<Graph> {
        let mut maps = Maps::for_graph(parent);
        let into = InEdges::of(parent);
        for stmt in &parent.body {
            match *stmt {
                Stmt::Node(n) => {
                    let node = parent.nodes.try_get(n).ok_or_else(|| self.fail(None, "statement names no node"))?;
                    match node.kind {
                        NodeKind::Subgraph { graph } => self.expand(parent, &into, &mut maps, n, graph)?,
                        _ => self.copy_node(parent, &into, &mut maps, n, None, None, false).map(|_| ())?,
                    }
                }
                other => self.copy_stmt(parent, &mut maps, other, None)?,
            }
        }
        copy_spans(parent, &maps, &mut self.out.spans);
        Ok(self.out)
    }

    /// A fresh name `base`, `base.1`, `base.2`, ... not in `taken`.
    fn fresh(taken: &mut BTreeSet<String>, base: String) -> String {
        let mut name = base.clone();
        let mut i = 1u64;
        while taken.contains(&name) {
            name = format!("{base}.{i}");
            i += 1;
        }
        taken.insert(name.clone());
        name
    }

    /// Copies a queue, dynamic parameter, dynamic command group or `make_edge` statement of
    /// `src` (the parent when `prefix` is `None`, else a child copied under `prefix`).
    fn copy_stmt(&mut self, src: &Graph, maps: &mut Maps, stmt: Stmt, prefix: Option<&str>) -> Built<()> {
        let missing = || self.fail(None, format!("a statement of @{} names a missing entity", src.name));
        match stmt {
            Stmt::Queue(q) => {
                let queue = src.queues.try_get(q).ok_or_else(missing)?;
                let mut queue = queue.clone();
                if let Some(p) = prefix {
                    queue.name = Self::fresh(&mut self.globals, format!("{p}.{}", queue.name));
                }
                let h = self.out.queues.append(queue, src.queues.span(q));
                set(&mut maps.queues, q.index(), h);
                self.out.body.push(Stmt::Queue(h));
            }
            Stmt::DynParam(d) => {
                let param = src.dyn_params.try_get(d).ok_or_else(missing)?;
                let mut param = param.clone();
                if let Some(p) = prefix {
                    param.name = Self::fresh(&mut self.locals, format!("{p}.{}", param.name));
                }
                param.value = remap_value(&param.value, maps).ok_or_else(|| self.fail(None, "unresolved pointer"))?;
                let h = self.out.dyn_params.append(param, src.dyn_params.span(d));
                set(&mut maps.dyn_params, d.index(), h);
                self.out.body.push(Stmt::DynParam(h));
            }
            Stmt::Dcg(d) => {
                let dcg = src.dcgs.try_get(d).ok_or_else(missing)?;
                let mut dcg = dcg.clone();
                if let Some(p) = prefix {
                    dcg.name = Self::fresh(&mut self.locals, format!("{p}.{}", dcg.name));
                }
                for alt in &mut dcg.alternatives {
                    *alt = remap_alternative(alt, maps).ok_or_else(|| self.fail(None, "unresolved reference"))?;
                }
                let h = self.out.dcgs.append(dcg, src.dcgs.span(d));
                set(&mut maps.dcgs, d.index(), h);
                self.out.body.push(Stmt::Dcg(h));
            }
            Stmt::MakeEdge(e) => {
                let edge = *src.edges.try_get(e).ok_or_else(missing)?;
                let comments = src.edge_comments.get(&e).cloned();
                let mut first = true;
                for from in maps.sources(edge.from) {
                    for to in maps.targets(edge.to) {
                        let h = self.out.edges.append(Edge { from, to, kind: EdgeKind::MakeEdge }, src.edges.span(e));
                        self.out.body.push(Stmt::MakeEdge(h));
                        if first {
                            if let Some(c) = &comments {
                                self.out.edge_comments.insert(h, c.clone());
                            }
                            first = false;
                        }
                        let new = prefix.is_some() || maps.expanded(edge.from) || maps.expanded(edge.to);
                        self.ctx.bump("edges-created", u64::from(new));
                    }
                }
            }
            Stmt::Node(_) => return Err(self.fail(None, "internal: node statement in copy_stmt")),
        }
        Ok(())
    }

    /// Copies node `n` of `src` with its inline edges (the parent's own node when `prefix`
    /// is `None`), plus `depends_on` edges from `roots_from` when it is a root of a copy.
    #[allow(clippy::too_many_arguments)]
    fn copy_node(
        &mut self,
        src: &Graph,
        in_edges: &InEdges,
        maps: &mut Maps,
        n: Handle<Node>,
        prefix: Option<&str>,
        roots_from: Option<&[Handle<Node>]>,
        empty: bool,
    ) -> Built<Handle<Node>> {
        let node = src.nodes.try_get(n).ok_or_else(|| self.fail(None, "statement names no node"))?;
        let name = match prefix {
            Some(p) => Self::fresh(&mut self.locals, format!("{p}.{}", node.name)),
            None => node.name.clone(),
        };
        let kind = if empty {
            NodeKind::Empty
        } else {
            remap_kind(&node.kind, maps).ok_or_else(|| self.fail(Some(&node.name), "unresolved reference"))?
        };
        let queue = match node.queue {
            Some(q) => Some(
                maps.queues
                    .get(q.index())
                    .copied()
                    .flatten()
                    .ok_or_else(|| self.fail(Some(&node.name), "queue used before its statement"))?,
            ),
            None => None,
        };
        let is_barrier = matches!(kind, NodeKind::Barrier { .. });
        // A sub-graph's node keeps the device it ran on there.
        let device = node.device.or((src.device != self.out.device).then_some(src.device));
        let h = self.out.nodes.append(
            Node { name: name.clone(), kind, queue, device, comments: node.comments.clone() },
            src.nodes.span(n),
        );
        set_slot(&mut maps.nodes, n.index(), Slot::Kept(h));
        self.out.body.push(Stmt::Node(h));
        if prefix.is_some() {
            let key = (src.name.clone(), node.name.clone());
            let origin = self.ctx.origins.get(&key).cloned().unwrap_or_else(|| vec![key]);
            self.ctx.origins.insert((self.parent.clone(), name), origin);
            self.ctx.bump("nodes-created", 1);
        }
        let edges = in_edges.into(n);
        work::count(1 + edges.len());
        for e in edges {
            let adapt = maps.expanded(e.from);
            let kind = if !adapt {
                e.kind
            } else {
                match e.kind {
                    EdgeKind::AllLeaves | EdgeKind::Transitive => e.kind,
                    EdgeKind::Barrier if is_barrier => EdgeKind::Barrier,
                    _ => EdgeKind::DependsOn,
                }
            };
            let sources = maps.sources(e.from);
            work::count(sources.len());
            for from in sources {
                self.out.edges.append(Edge { from, to: h, kind }, Span::UNDEFINED);
                if adapt || prefix.is_some() {
                    self.ctx.bump("edges-created", 1);
                }
            }
        }
        let roots_from = roots_from.unwrap_or(&[]);
        work::count(roots_from.len());
        for &from in roots_from {
            self.out.edges.append(Edge { from, to: h, kind: EdgeKind::DependsOn }, Span::UNDEFINED);
            self.ctx.bump("edges-created", 1);
        }
        Ok(h)
    }

    /// Replaces `subgraph %s = @child` (`s`) by a copy of the child.
    fn expand(
        &mut self,
        parent: &Graph,
        parent_in: &InEdges,
        maps: &mut Maps,
        s: Handle<Node>,
        child: Handle<Graph>,
    ) -> Built<()> {
        let node = &parent.nodes[s];
        let module = self.module;
        let Some(child) = module.graphs.try_get(child) else {
            return Err(self.fail(Some(&node.name), "names no graph of the module"));
        };
        self.ctx.bump("subgraphs-inlined", 1);
        if child.nodes.is_empty() {
            // Keep the ordering through the node: same name, queue and edges, no command.
            self.copy_node(parent, parent_in, maps, s, None, None, true)?;
            let key = (parent.name.clone(), node.name.clone());
            self.ctx.origins.entry(key.clone()).or_insert_with(|| vec![key]);
            self.ctx.bump("nodes-created", 1);
            return Ok(());
        }
        if child.nodes.iter().any(|(_, n)| matches!(n.kind, NodeKind::Subgraph { .. })) {
            return Err(self.fail(Some(&node.name), format!("@{} was not inlined first", child.name)));
        }
        // Edges into %s, resolved, in creation order, without repeats.
        let mut into: Vec<Handle<Node>> = Vec::new();
        let mut seen: HashSet<Handle<Node>> = HashSet::new();
        for e in parent_in.into(s) {
            let sources = maps.sources(e.from);
            work::count(1 + sources.len());
            for from in sources {
                if seen.insert(from) {
                    into.push(from);
                }
            }
        }
        let (mut has_pred, mut has_succ) = (vec![false; child.nodes.len()], vec![false; child.nodes.len()]);
        for (_, e) in child.edges.iter() {
            if let Some(p) = has_pred.get_mut(e.to.index()) {
                *p = true;
            }
            if let Some(s) = has_succ.get_mut(e.from.index()) {
                *s = true;
            }
        }
        let child_in = InEdges::of(child);
        let prefix = node.name.clone();
        let mut cmaps = Maps::for_graph(child);
        let (mut roots, mut leaves) = (Vec::new(), Vec::new());
        for stmt in &child.body {
            match *stmt {
                Stmt::Node(n) => {
                    let root = !has_pred.get(n.index()).copied().unwrap_or(false);
                    let roots_from = root.then_some(into.as_slice());
                    let h = self.copy_node(child, &child_in, &mut cmaps, n, Some(&prefix), roots_from, false)?;
                    if root {
                        roots.push(h);
                    }
                    if !has_succ.get(n.index()).copied().unwrap_or(false) {
                        leaves.push(h);
                    }
                }
                other => self.copy_stmt(child, &mut cmaps, other, Some(&prefix))?,
            }
        }
        copy_spans(child, &cmaps, &mut self.out.spans);
        set_slot(&mut maps.nodes, s.index(), Slot::Expanded { roots, leaves });
        Ok(())
    }
}

fn set<T>(map: &mut [Option<Handle<T>>], index: usize, h: Handle<T>) {
    if let Some(slot) = map.get_mut(index) {
        *slot = Some(h);
    }
}

fn set_slot(map: &mut [Slot], index: usize, slot: Slot) {
    if let Some(s) = map.get_mut(index) {
        *s = slot;
    }
}

/// Diagnostic spans of argument and list sites, moved to the new handles.
fn copy_spans(src: &Graph, maps: &Maps, out: &mut SpanTable<Site>) {
    let node = |n: Handle<Node>| match maps.nodes.get(n.index()) {
        Some(Slot::Kept(h)) => Some(*h),
        _ => None,
    };
    for (site, span) in src.spans.iter() {
        let moved = match *site {
            Site::NodeArg(n, i) => node(n).map(|n| Site::NodeArg(n, i)),
            Site::NodeLaunch(n) => node(n).map(Site::NodeLaunch),
            Site::NodeListItem(n, i) => node(n).map(|n| Site::NodeListItem(n, i)),
            Site::AltArg(d, a, i) => maps.dcgs.get(d.index()).copied().flatten().map(|d| Site::AltArg(d, a, i)),
            Site::Alt(d, a) => maps.dcgs.get(d.index()).copied().flatten().map(|d| Site::Alt(d, a)),
        };
        if let Some(site) = moved {
            out.insert(site, span);
        }
    }
}

fn remap_memref(m: MemRef, maps: &Maps) -> Option<MemRef> {
    match m {
        MemRef::Memory(_) => Some(m),
        MemRef::Alloc(n) => match maps.nodes.get(n.index()) {
            Some(Slot::Kept(h)) => Some(MemRef::Alloc(*h)),
            _ => None,
        },
    }
}

fn remap_pointer(p: Pointer, maps: &Maps) -> Option<Pointer> {
    Some(Pointer { base: remap_memref(p.base, maps)?, offset: p.offset })
}

fn remap_value(v: &ArgValue, maps: &Maps) -> Option<ArgValue> {
    Some(match v {
        ArgValue::Pointer(p) => ArgValue::Pointer(remap_pointer(*p, maps)?),
        ArgValue::Accessor(a) => ArgValue::Accessor(Accessor { buffer: remap_memref(a.buffer, maps)?, ..*a }),
        other => other.clone(),
    })
}

fn remap_kernel(cmd: &KernelCommand, maps: &Maps) -> Option<KernelCommand> {
    let mut args = Vec::with_capacity(cmd.args.len());
    for arg in &cmd.args {
        args.push(match arg {
            Arg::Value(v) => Arg::Value(remap_value(v, maps)?),
            Arg::Dyn(p) => Arg::Dyn(maps.dyn_params.get(p.index()).copied().flatten()?),
        });
    }
    Some(KernelCommand { kernel: cmd.kernel, launch: cmd.launch.clone(), args })
}

fn remap_access(t: &HostTaskCommand, maps: &Maps) -> Option<HostTaskCommand> {
    let mut t = t.clone();
    for a in &mut t.access {
        a.mem = remap_memref(a.mem, maps)?;
    }
    Some(t)
}

fn remap_alternative(alt: &Alternative, maps: &Maps) -> Option<Alternative> {
    Some(match alt {
        Alternative::Kernel(cmd) => Alternative::Kernel(remap_kernel(cmd, maps)?),
        Alternative::HostTask(t) => Alternative::HostTask(remap_access(t, maps)?),
        Alternative::Other(kind) => Alternative::Other(Box::new(remap_kind(kind, maps)?)),
    })
}

/// A command with every handle moved into the output graph.
fn remap_kind(kind: &NodeKind, maps: &Maps) -> Option<NodeKind> {
    Some(match kind {
        NodeKind::Kernel(cmd) => NodeKind::Kernel(remap_kernel(cmd, maps)?),
        NodeKind::Memcpy { dst, src, bytes } => {
            NodeKind::Memcpy { dst: remap_pointer(*dst, maps)?, src: remap_pointer(*src, maps)?, bytes: *bytes }
        }
        NodeKind::Memset { dst, value, bytes } => {
            NodeKind::Memset { dst: remap_pointer(*dst, maps)?, value: *value, bytes: *bytes }
        }
        NodeKind::Memfill { dst, pattern, count } => {
            NodeKind::Memfill { dst: remap_pointer(*dst, maps)?, pattern: *pattern, count: *count }
        }
        NodeKind::Prefetch { ptr, bytes } => NodeKind::Prefetch { ptr: remap_pointer(*ptr, maps)?, bytes: *bytes },
        NodeKind::Memadvise { ptr, bytes, advice } => {
            NodeKind::Memadvise { ptr: remap_pointer(*ptr, maps)?, bytes: *bytes, advice: *advice }
        }
        NodeKind::Barrier { wait } => NodeKind::Barrier { wait: wait.iter().flat_map(|w| maps.sources(*w)).collect() },
        NodeKind::HostTask(t) => NodeKind::HostTask(remap_access(t, maps)?),
        NodeKind::Native(t) => NodeKind::Native(remap_access(t, maps)?),
        NodeKind::Comm(c) => {
            NodeKind::Comm(cmdgraph_ir::comm::CommCommand { ptr: remap_pointer(c.ptr, maps)?, ..c.clone() })
        }
        NodeKind::AsyncFree { alloc } => match maps.nodes.get(alloc.index()) {
            Some(Slot::Kept(h)) => NodeKind::AsyncFree { alloc: *h },
            _ => return None,
        },
        NodeKind::Dynamic { dcg } => NodeKind::Dynamic { dcg: maps.dcgs.get(dcg.index()).copied().flatten()? },
        // Its bodies stay graphs of their own: never inlined across the node's boundary.
        NodeKind::Conditional { kind, cond, bodies } => {
            NodeKind::Conditional { kind: *kind, cond: remap_pointer(*cond, maps)?, bodies: bodies.clone() }
        }
        NodeKind::Empty | NodeKind::Subgraph { .. } | NodeKind::AsyncMalloc { .. } => kind.clone(),
    })
}
