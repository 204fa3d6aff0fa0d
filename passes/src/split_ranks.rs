//! `split-ranks`: makes every multi-device graph the graphs of as many MPI ranks, one per
//! device (docs/mpi.md, "One graph, many ranks"): graph `@g` becomes `@g.r0`, `@g.r1`, ...,
//! each holding the nodes of its device, to run in a process of its own.
//!
//! Every memory object lives on one device (`home(N)`, or its graph's), so data crosses
//! devices only through transfers, and a transfer becomes a pair: a `send` of the source on
//! its rank and a `recv` into the destination on the other. Every other edge between nodes of
//! two ranks becomes a message of no bytes (a token), so each rank keeps the order the graph
//! gave its nodes, including order that ran through another rank. Tags number the pairs, so
//! messages match one for one; each run sends them again in the same order.
//!
//! Each process has one device and all of the module's memory, so the placement goes: every
//! graph runs on device 0 of its process, no memory has a home, barriers become empty nodes
//! (their queues and wait lists named nodes of other ranks; their edges order the same).
//! What the pass refuses, with the reason: dynamic parameters and command groups (each rank
//! would need its share), and `home(host)` memory (one copy every device reaches cannot be
//! split between processes).

use crate::analysis::{topological_order, Csr};
use crate::{PassContext, PassError, PassInfo};
use cmdgraph_ir::comm::{rank_graph, CommCommand, CommOp};
use cmdgraph_ir::graph::{Edge, EdgeKind, Graph, MemRef, Node, NodeKind, Pointer, Stmt};
use cmdgraph_ir::module::{Home, Item, MemoryKind, MemoryObject, UsmKind};
use cmdgraph_ir::placement::{run_device, transfer};
use cmdgraph_ir::types::{ScalarType, Type};
use cmdgraph_ir::{Handle, Module, Span};

/// Registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "split-ranks",
    summary: "make each multi-device graph one graph per rank, transfers send/receive pairs",
    statistics: &[
        ("graphs-split", "multi-device graphs made rank graphs"),
        ("rank-graphs", "rank graphs made"),
        ("transfers", "transfers made send/receive pairs"),
        ("tokens", "edges between ranks made messages of no bytes"),
    ],
    preserves: "node names (a transfer's halves are `<node>.send` and `<node>.recv`)",
    run,
};

/// Where a node of the source graph went: its rank graph and node there, two for a transfer
/// (sending side first).
type Placed = Vec<(u32, Handle<Node>)>;

fn run(module: &mut Module, ctx: &mut PassContext) -> Result<(), PassError> {
    let graphs: Vec<Handle<Graph>> = module
        .graphs
        .iter()
        .filter(|(_, g)| cmdgraph_ir::placement::spans_devices(module, g))
        .map(|(h, _)| h)
        .collect();
    if graphs.is_empty() {
        return Ok(());
    }
    let ranks = ctx.options.ranks.or(ctx.options.devices).unwrap_or(1).max(1);
    let token_mem = token_memory(module);
    for gh in graphs {
        let graph = &module.graphs[gh];
        let fail = |node: Option<String>, message: String| PassError::Failed {
            pass: INFO.name,
            graph: graph.name.clone(),
            node,
            message,
        };
        if let Some(what) = crate::split_devices::dynamic_allocation(graph) {
            return Err(fail(None, format!("{what} names a graph allocation: in a graph split between ranks, dynamic parameters and command groups name memory objects")));
        }
        // Dynamic parameters and groups go, under their own names, to the ranks whose nodes
        // use them (as split-devices carries them to stage graphs).
        let mut dynamic: Vec<crate::split_devices::DynamicMap> = (0..ranks).map(|_| Default::default()).collect();
        let mut parts: Vec<Graph> = (0..ranks)
            .map(|r| Graph {
                name: rank_graph(&graph.name, r),
                context: graph.context,
                properties: graph.properties,
                ..Graph::default()
            })
            .collect();
        let order =
            topological_order(&Csr::successors(graph)).ok_or_else(|| fail(None, "the graph has a cycle".into()))?;
        let mut preds: Vec<Vec<Handle<Node>>> = vec![Vec::new(); graph.nodes.len()];
        for (_, e) in graph.edges.iter() {
            preds[e.to.index()].push(e.from);
        }
        let mut placed: Vec<Placed> = vec![Vec::new(); graph.nodes.len()];
        // By node, then rank: the nodes of that rank the node's part there (or, without one,
        // its successors' parts there) come after; see [`nearest_on`].
        let mut frontier: Vec<Vec<Vec<Handle<Node>>>> = vec![Vec::new(); graph.nodes.len()];
        let (mut tag, mut transfers, mut tokens) = (0u32, 0u64, 0u64);
        // In topological order, so that every edge of a rank graph goes from an earlier
        // statement to a later one, as the text writes edges.
        for i in order {
            let Some(h) = Handle::<Node>::from_usize(i as usize) else { continue };
            let node = &graph.nodes[h];
            let span = graph.nodes.span(h);
            let check = |d: u32| {
                (d < ranks).then_some(d).ok_or_else(|| {
                    fail(
                        Some(node.name.clone()),
                        format!("it runs on device {d}, and there are {ranks} ranks: give --ranks {}", d + 1),
                    )
                })
            };
            // What the node becomes: (rank, name, command), a transfer's sending half first.
            let halves: Vec<(u32, String, NodeKind)> = match (transfer(module, graph, h), &node.kind) {
                (Some((s, d)), NodeKind::Memcpy { dst, src, bytes }) => {
                    let (s, d) = (check(s)?, check(d)?);
                    let send =
                        CommCommand { op: CommOp::Send { peer: d, tag }, ptr: local(*src, &placed, s), bytes: *bytes };
                    let recv =
                        CommCommand { op: CommOp::Recv { peer: s, tag }, ptr: local(*dst, &placed, d), bytes: *bytes };
                    tag += 1;
                    transfers += 1;
                    vec![
                        (s, format!("{}.send", node.name), NodeKind::Comm(send)),
                        (d, format!("{}.recv", node.name), NodeKind::Comm(recv)),
                    ]
                }
                _ => {
                    let rank = check(run_device(module, graph, h).map_err(|m| fail(Some(node.name.clone()), m))?)?;
                    let mut kind = match &node.kind {
                        NodeKind::Barrier { .. } => NodeKind::Empty,
                        other => other.clone(),
                    };
                    cmdgraph_ir::edit::memrefs_mut(&mut kind, &mut |r: &mut MemRef| {
                        if let MemRef::Alloc(a) = r {
                            *a = placed[a.index()].first().map_or(*a, |&(_, x)| x);
                        }
                    });
                    if let NodeKind::AsyncFree { alloc } = &mut kind {
                        *alloc = placed[alloc.index()].first().map_or(*alloc, |&(_, x)| x);
                    }
                    let kind = dynamic[rank as usize].carry(graph, &mut parts[rank as usize], kind);
                    vec![(rank, node.name.clone(), kind)]
                }
            };
            // Each half's predecessors on its rank; a predecessor no rank shares with the node
            // orders it through a token, from where the predecessor ends (a transfer's
            // receive) to where the node starts (a transfer's send).
            let mut before: Vec<Vec<Handle<Node>>> = vec![Vec::new(); halves.len()];
            for (k, (rank, _, _)) in halves.iter().enumerate() {
                before[k] = nearest_on(*rank, &preds[i as usize], &frontier);
            }
            for p in &preds[i as usize] {
                let from = &placed[p.index()];
                let shared = halves.iter().any(|(rank, _, _)| from.iter().any(|(r, _)| r == rank));
                let (Some(&(a_rank, a)), false) = (from.last(), shared) else { continue };
                let b_rank = halves[0].0;
                let ptr = Pointer { base: MemRef::Memory(token_mem), offset: 0 };
                let (pn, vn) = (&graph.nodes[*p].name, &node.name);
                let send = CommCommand { op: CommOp::Send { peer: b_rank, tag }, ptr, bytes: 0 };
                let recv = CommCommand { op: CommOp::Recv { peer: a_rank, tag }, ptr, bytes: 0 };
                tag += 1;
                tokens += 1;
                append(
                    &mut parts[a_rank as usize],
                    format!("{pn}.to.{vn}"),
                    NodeKind::Comm(send),
                    &[a],
                    Span::UNDEFINED,
                );
                let r = append(
                    &mut parts[b_rank as usize],
                    format!("{vn}.from.{pn}"),
                    NodeKind::Comm(recv),
                    &[],
                    Span::UNDEFINED,
                );
                before[0].push(r);
            }
            placed[i as usize] = halves
                .into_iter()
                .zip(before)
                .map(|((rank, name, kind), before)| {
                    (rank, append(&mut parts[rank as usize], name, kind, &before, span))
                })
                .collect();
            frontier[i as usize] = (0..ranks)
                .map(|r| match placed[i as usize].iter().find(|(q, _)| *q == r) {
                    Some(&(_, here)) => vec![here],
                    None => nearest_on(r, &preds[i as usize], &frontier),
                })
                .collect();
        }
        ctx.bump("graphs-split", 1);
        ctx.bump("rank-graphs", u64::from(ranks));
        ctx.bump("transfers", transfers);
        ctx.bump("tokens", tokens);
        // Rank 0's graph takes the graph's place (and handle); the others follow it.
        let at = module.items.iter().position(|i| *i == Item::Graph(gh)).map_or(module.items.len(), |i| i + 1);
        let mut parts = parts.into_iter();
        if let Some(first) = parts.next() {
            module.graphs[gh] = first;
        }
        for (k, g) in parts.enumerate() {
            let h = module.graphs.append(g, Span::UNDEFINED);
            module.items.insert(at + k, Item::Graph(h));
        }
    }
    // Each process runs its graphs on its one device, all memory its own.
    if let Some(m) = module.memories.iter().find(|(_, m)| m.home == Home::Host) {
        return Err(PassError::Failed {
            pass: INFO.name,
            graph: String::new(),
            node: None,
            message: format!("@{} lives in host memory every device reaches (`home(host)`), which ranks in separate processes do not share", m.1.name),
        });
    }
    for h in module.memories.handles().collect::<Vec<_>>() {
        module.memories[h].home = Home::Graph;
    }
    for h in module.graphs.handles().collect::<Vec<_>>() {
        let g = &mut module.graphs[h];
        g.device = 0;
        for n in g.nodes.handles().collect::<Vec<_>>() {
            g.nodes[n].device = None;
        }
    }
    Ok(())
}

/// The nodes of rank `rank` that a node with predecessors `preds` comes after: each nearest
/// ancestor with a part on `rank`, along paths through other ranks' nodes too (`frontier`
/// holds them for every node placed so far, computed once each in topological order). Those
/// paths order them at run time (each crossing is a message), and the rank graph says so with
/// an edge, so that the verifier sees the order (a send before a receive into the same memory).
fn nearest_on(rank: u32, preds: &[Handle<Node>], frontier: &[Vec<Vec<Handle<Node>>>]) -> Vec<Handle<Node>> {
    let mut found: Vec<Handle<Node>> =
        preds.iter().filter_map(|p| frontier[p.index()].get(rank as usize)).flatten().copied().collect();
    found.sort();
    found.dedup();
    found
}

/// Appends node `name` doing `kind` to `g`, after `before`; returns its handle.
fn append(g: &mut Graph, name: String, kind: NodeKind, before: &[Handle<Node>], span: Span) -> Handle<Node> {
    let h = g.nodes.append(Node { name, kind, queue: None, device: None, comments: Default::default() }, span);
    g.body.push(Stmt::Node(h));
    for &from in before {
        g.edges.append(Edge { from, to: h, kind: EdgeKind::DependsOn }, Span::UNDEFINED);
    }
    h
}

/// `p` on rank `rank`: a graph allocation mapped to its node in the rank graph.
fn local(p: Pointer, placed: &[Placed], rank: u32) -> Pointer {
    match p.base {
        MemRef::Alloc(a) => {
            let here = placed[a.index()].iter().find(|(r, _)| *r == rank).map_or(a, |&(_, x)| x);
            Pointer { base: MemRef::Alloc(here), offset: p.offset }
        }
        MemRef::Memory(_) => p,
    }
}

/// The memory object tokens (messages of no bytes) name: the module's first `usm` object,
/// else a new one under a name nothing else has.
fn token_memory(module: &mut Module) -> Handle<MemoryObject> {
    if let Some((h, _)) = module.memories.iter().find(|(_, m)| matches!(m.kind, MemoryKind::Usm(_))) {
        return h;
    }
    let mut name = "ranks.token".to_string();
    while module.memories.iter().any(|(_, m)| m.name == name) {
        name.push('_');
    }
    let object = MemoryObject {
        name,
        elem: Type::scalar(ScalarType::U32),
        count: 1,
        kind: MemoryKind::Usm(UsmKind::Device),
        home: Home::Graph,
        comments: Default::default(),
    };
    let h = module.memories.append(object, Span::UNDEFINED);
    let at = module.items.iter().rposition(|i| matches!(i, Item::Memory(_))).map_or(0, |i| i + 1);
    module.items.insert(at, Item::Memory(h));
    h
}
