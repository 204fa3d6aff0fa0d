//! `split-devices`: gives every multi-device graph the single-device graphs it runs as, one
//! per stage and device (`cmdgraph_ir::placement::stages`, docs/multi-device.md, "Running
//! on several devices"): graph `@g.s1.d0` holds the nodes device 0 runs in stage 1, with
//! the edges between them (ordering nodes looked through). The graph itself stays: the
//! runtime reads the stages and the transfers between them from it, the interpreter runs it
//! whole. Each stage graph is an ordinary graph of one device, so every later pass, codegen
//! and the executor treat it as any other.
//!
//! A graph allocation made, used and freed within one stage graph stays one. An allocation
//! that spans stage graphs (used on two devices, or across a transfer) becomes a memory
//! object of its device (`@<graph>.<node>`, `home(N)`), in the graph too: its `async_malloc`
//! becomes a `memset` to zero where it was `zero_init` and an empty node otherwise, its
//! frees empty nodes. The contents of an allocation are undefined until written, so this
//! changes no result.
//!
//! A conditional node's bodies are graphs of the node's graph's device whose nodes name the
//! node's; a stage graph of another device runs copies of them for that device
//! (`@<body>.d1`, [`bodies`]).
//!
//! Dynamic parameters and dynamic command groups go, under their own names, into every
//! stage graph whose nodes use them, and `updatable` stays, so the runtime updates a
//! multi-device executable by name on each device it reaches.

mod bodies;
mod lower;

use crate::analysis::{topological_order, Csr};
use crate::{PassContext, PassError, PassInfo};
use cmdgraph_ir::graph::{
    Alternative, Arg, ArgValue, DynCommandGroup, DynParam, Edge, EdgeKind, Graph, MemRef, Node, NodeKind, Stmt,
};
use cmdgraph_ir::module::{Home, Item, MemoryKind, MemoryObject, UsmKind};
use cmdgraph_ir::placement::{stage_graph_name, stages, Stages};
use cmdgraph_ir::{Handle, Module, Span};
use std::collections::BTreeMap;

/// Registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "split-devices",
    summary: "add, for each multi-device graph, the single-device graph each device runs in each stage",
    statistics: &[
        ("graphs-split", "multi-device graphs given stage graphs"),
        ("stage-graphs", "single-device graphs added"),
        ("stages", "stages, summed over graphs"),
        ("transfers-lowered", "transfers made two device copies through host memory every device reaches"),
        ("allocations-promoted", "graph allocations spanning stage graphs made memory objects of their device"),
        ("bodies-copied", "conditional bodies copied for the device their node runs on"),
    ],
    preserves: "every graph as it was (stage graphs are added beside them)",
    run,
};

fn run(module: &mut Module, ctx: &mut PassContext) -> Result<(), PassError> {
    let graphs: Vec<Handle<Graph>> = module.graphs.handles().collect();
    for gh in graphs {
        let graph = &module.graphs[gh];
        if !cmdgraph_ir::placement::spans_devices(module, graph) {
            continue;
        }
        let name = graph.name.clone();
        let fail_early =
            |m: &str| PassError::Failed { pass: INFO.name, graph: name.clone(), node: None, message: m.into() };
        if let Some(what) = dynamic_allocation(graph) {
            return Err(fail_early(&format!(
                "{what} names a graph allocation: in a multi-device graph, dynamic parameters and command groups name memory objects"
            )));
        }
        let fail = |node: Option<String>, message: String| PassError::Failed {
            pass: INFO.name,
            graph: name.clone(),
            node,
            message,
        };
        let order: Vec<usize> = topological_order(&Csr::successors(graph))
            .ok_or_else(|| fail(None, "the graph has a cycle".into()))?
            .into_iter()
            .map(|v| v as usize)
            .collect();
        let st = stages(module, graph, &order).map_err(|(h, m)| fail(Some(graph.nodes[h].name.clone()), m))?;
        let spanning = spanning_allocations(graph, &st);
        let promoted = spanning.len() as u64;
        if !spanning.is_empty() {
            // The promoted allocations' nodes are fills or ordering nodes now.
            promote(module, gh, &spanning);
        }
        // The transfers become device copies through host memory; the stages of what is
        // left are the ones the devices run.
        let mut lowered = 0;
        let source = module.graphs[gh].clone();
        let graph = lower::transfers(module, &source, &mut lowered);
        let order: Vec<usize> = topological_order(&Csr::successors(&graph))
            .ok_or_else(|| fail(None, "the graph has a cycle".into()))?
            .into_iter()
            .map(|v| v as usize)
            .collect();
        let st = stages(module, &graph, &order).map_err(|(h, m)| fail(Some(graph.nodes[h].name.clone()), m))?;
        let conditionals: Vec<(Vec<Handle<Graph>>, u32)> = graph
            .nodes
            .iter()
            .filter_map(|(h, n)| match &n.kind {
                NodeKind::Conditional { bodies, .. } => Some((bodies.clone(), st.device[h.index()])),
                _ => None,
            })
            .collect();
        let mut body_copies = 0;
        let body_map = bodies::for_devices(module, &conditionals, &mut body_copies);
        let graph = &graph;
        let mut made = Vec::new();
        for &(s, d) in &st.parts {
            let part = |h: Handle<Node>| {
                st.stage[h.index()] == Some(s)
                    && st.device[h.index()] == d
                    && !st.transfers.contains(&h)
                    && !matches!(graph.nodes[h].kind, NodeKind::Empty | NodeKind::Barrier { .. })
            };
            let mut g = Graph {
                name: stage_graph_name(&name, s, d),
                device: d,
                context: graph.context,
                properties: graph.properties,
                ..Graph::default()
            };
            let mut map: BTreeMap<Handle<Node>, Handle<Node>> = BTreeMap::new();
            let mut dynamic = DynamicMap::default();
            for &i in &order {
                let Some(h) = Handle::<Node>::from_usize(i) else { continue };
                if !part(h) {
                    continue;
                }
                let node = &graph.nodes[h];
                let kind = remap(&node.kind, &map).map_err(|alloc| {
                    fail(
                        Some(node.name.clone()),
                        format!(
                            "graph allocation %{} is made in another stage or on another device: an allocation must be made, used and freed by nodes of one device between two transfers",
                            graph.nodes.try_get(alloc).map_or("?", |n| n.name.as_str())
                        ),
                    )
                })?;
                let mut kind = dynamic.carry(graph, &mut g, kind);
                if let NodeKind::Conditional { bodies, .. } = &mut kind {
                    for b in bodies.iter_mut() {
                        *b = body_map.get(&(*b, d)).copied().unwrap_or(*b);
                    }
                }
                let copy =
                    Node { name: node.name.clone(), kind, queue: None, device: None, comments: Default::default() };
                let nh = g.nodes.append(copy, graph.nodes.span(h));
                map.insert(h, nh);
                for p in &st.preds[i] {
                    if let Some(&from) = map.get(p) {
                        g.edges.append(Edge { from, to: nh, kind: EdgeKind::DependsOn }, Span::UNDEFINED);
                    }
                }
                g.body.push(Stmt::Node(nh));
            }
            made.push(g);
        }
        ctx.bump("graphs-split", 1);
        ctx.bump("stage-graphs", made.len() as u64);
        ctx.bump("stages", u64::from(st.count));
        ctx.bump("transfers-lowered", lowered);
        ctx.bump("allocations-promoted", promoted);
        ctx.bump("bodies-copied", body_copies);
        let at = module.items.iter().position(|i| *i == Item::Graph(gh)).map_or(module.items.len(), |i| i + 1);
        for (k, g) in made.into_iter().enumerate() {
            let h = module.graphs.append(g, Span::UNDEFINED);
            module.items.insert(at + k, Item::Graph(h));
        }
    }
    Ok(())
}

/// `kind` with its graph-allocation references mapped into the stage graph; `Err(alloc)`
/// when one is not there.
fn remap(kind: &NodeKind, map: &BTreeMap<Handle<Node>, Handle<Node>>) -> Result<NodeKind, Handle<Node>> {
    let mut kind = kind.clone();
    let mut missing = None;
    let mut fix = |r: &mut MemRef| {
        if let MemRef::Alloc(a) = r {
            match map.get(a) {
                Some(&b) => *a = b,
                None => missing = Some(*a),
            }
        }
    };
    cmdgraph_ir::edit::memrefs_mut(&mut kind, &mut fix);
    if let NodeKind::AsyncFree { alloc } = &mut kind {
        match map.get(alloc) {
            Some(&b) => *alloc = b,
            None => missing = Some(*alloc),
        }
    }
    match missing {
        Some(a) => Err(a),
        None => Ok(kind),
    }
}

/// The allocations of `graph` whose malloc, frees and users are not all in one stage graph.
fn spanning_allocations(graph: &Graph, st: &Stages) -> Vec<Handle<Node>> {
    let mut parts: BTreeMap<Handle<Node>, Vec<Option<(u32, u32)>>> = BTreeMap::new();
    let part = |h: Handle<Node>| match st.transfers.contains(&h) {
        true => None,
        false => st.stage[h.index()].map(|s| (s, st.device[h.index()])),
    };
    for (h, n) in graph.nodes.iter() {
        if matches!(n.kind, NodeKind::AsyncMalloc { .. }) {
            parts.entry(h).or_default().push(part(h));
        }
        for a in cmdgraph_ir::edit::referenced_nodes(graph, &n.kind) {
            if matches!(graph.nodes.try_get(a).map(|x| &x.kind), Some(NodeKind::AsyncMalloc { .. })) {
                parts.entry(a).or_default().push(part(h));
            }
        }
    }
    parts
        .into_iter()
        .filter(|(_, p)| p.iter().any(|x| x.is_none()) || p.windows(2).any(|w| w[0] != w[1]))
        .map(|(a, _)| a)
        .collect()
}

/// Makes each allocation of `allocs` a memory object of its device (see the module doc).
fn promote(module: &mut Module, gh: Handle<Graph>, allocs: &[Handle<Node>]) {
    let mut renames: BTreeMap<Handle<Node>, Handle<MemoryObject>> = BTreeMap::new();
    for &a in allocs {
        let graph = &module.graphs[gh];
        let NodeKind::AsyncMalloc { elem, count, .. } = graph.nodes[a].kind else { continue };
        let device = graph.node_device(a);
        let name = unused_name(module, &format!("{}.{}", graph.name, graph.nodes[a].name));
        let object = MemoryObject {
            name,
            elem,
            count,
            kind: MemoryKind::Usm(UsmKind::Device),
            home: Home::Device(device),
            comments: Default::default(),
        };
        let h = module.memories.append(object, Span::UNDEFINED);
        let at = module.items.iter().rposition(|i| matches!(i, Item::Memory(_))).map_or(0, |i| i + 1);
        module.items.insert(at, Item::Memory(h));
        renames.insert(a, h);
    }
    let graph = &mut module.graphs[gh];
    let handles: Vec<Handle<Node>> = graph.nodes.handles().collect();
    for h in handles {
        let Some(node) = graph.nodes.try_get_mut(h) else { continue };
        match &mut node.kind {
            NodeKind::AsyncMalloc { elem, count, zero_init, .. } if renames.contains_key(&h) => {
                let bytes = elem.size().saturating_mul(*count);
                node.kind = match (*zero_init, renames.get(&h)) {
                    (true, Some(&m)) => NodeKind::Memset {
                        dst: cmdgraph_ir::graph::Pointer { base: MemRef::Memory(m), offset: 0 },
                        value: 0,
                        bytes,
                    },
                    _ => {
                        node.device = None;
                        NodeKind::Empty
                    }
                };
            }
            NodeKind::AsyncFree { alloc } if renames.contains_key(alloc) => {
                node.kind = NodeKind::Empty;
                node.device = None;
            }
            kind => cmdgraph_ir::edit::memrefs_mut(kind, &mut |r| {
                if let MemRef::Alloc(a) = r {
                    if let Some(&m) = renames.get(a) {
                        *r = MemRef::Memory(m);
                    }
                }
            }),
        }
    }
}

/// The dynamic parameter or command group of `graph` whose value or alternatives name a
/// graph allocation, if one does (promotion does not rewrite those).
pub(crate) fn dynamic_allocation(graph: &Graph) -> Option<String> {
    let alloc = |v: &ArgValue| match v {
        ArgValue::Pointer(p) => matches!(p.base, MemRef::Alloc(_)),
        ArgValue::Accessor(a) => matches!(a.buffer, MemRef::Alloc(_)),
        _ => false,
    };
    if let Some((_, p)) = graph.dyn_params.iter().find(|(_, p)| alloc(&p.value)) {
        return Some(format!("dynamic parameter %{}", p.name));
    }
    let names_alloc = |a: &Alternative| match a {
        Alternative::Kernel(cmd) => cmd.args.iter().any(|x| matches!(x, Arg::Value(v) if alloc(v))),
        Alternative::HostTask(t) => t.access.iter().any(|x| matches!(x.mem, MemRef::Alloc(_))),
        Alternative::Other(_) => false,
    };
    graph
        .dcgs
        .iter()
        .find(|(_, d)| d.alternatives.iter().any(names_alloc))
        .map(|(_, d)| format!("dynamic command group %{}", d.name))
}

/// The dynamic parameters and command groups a stage graph took from its graph, by handle
/// there: each is carried, under its own name, into the stage graphs whose nodes use it, so
/// an update by name reaches every node it reached before.
#[derive(Default)]
pub(crate) struct DynamicMap {
    params: BTreeMap<Handle<DynParam>, Handle<DynParam>>,
    groups: BTreeMap<Handle<DynCommandGroup>, Handle<DynCommandGroup>>,
}

impl DynamicMap {
    /// `kind` (a node of `from` being copied into stage graph `to`) with its dynamic
    /// parameters and group those of `to`, carried there first (their statements before the
    /// node's). Their values name no graph allocation ([`dynamic_allocation`]).
    pub(crate) fn carry(&mut self, from: &Graph, to: &mut Graph, mut kind: NodeKind) -> NodeKind {
        match &mut kind {
            NodeKind::Kernel(cmd) => self.args(from, to, &mut cmd.args),
            NodeKind::Dynamic { dcg } => {
                let group = match self.groups.get(dcg) {
                    Some(&g) => g,
                    None => {
                        let Some(d) = from.dcgs.try_get(*dcg) else { return kind };
                        let mut d = d.clone();
                        for alt in &mut d.alternatives {
                            if let Alternative::Kernel(cmd) = alt {
                                self.args(from, to, &mut cmd.args);
                            }
                        }
                        let g = to.dcgs.append(d, from.dcgs.span(*dcg));
                        to.body.push(Stmt::Dcg(g));
                        self.groups.insert(*dcg, g);
                        g
                    }
                };
                *dcg = group;
            }
            _ => {}
        }
        kind
    }

    /// `args` naming the parameters of `to`, each carried there at its first use.
    fn args(&mut self, from: &Graph, to: &mut Graph, args: &mut [Arg]) {
        for a in args {
            let Arg::Dyn(p) = a else { continue };
            let Some(param) = from.dyn_params.try_get(*p) else { continue };
            let mine = *self.params.entry(*p).or_insert_with(|| {
                let h = to.dyn_params.append(param.clone(), from.dyn_params.span(*p));
                to.body.push(Stmt::DynParam(h));
                h
            });
            *a = Arg::Dyn(mine);
        }
    }
}

/// `base`, or `base.2`, `base.3`, ... : the first name no memory, graph or kernel has.
pub(crate) fn unused_name(module: &Module, base: &str) -> String {
    let taken = |s: &str| {
        module.memory_by_name(s).is_some()
            || module.graph_by_name(s).is_some()
            || module.kernels.iter().any(|(_, k)| k.name == s)
    };
    if !taken(base) {
        return base.to_string();
    }
    (2u64..).map(|i| format!("{base}.{i}")).find(|s| !taken(s)).unwrap_or_else(|| base.to_string())
}
