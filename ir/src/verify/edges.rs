//! Edges: endpoints exist and differ, provenance agrees with the statements that create
//! edges, and each provenance is one its endpoints can have.
//!
//! Provenance consistency: walking the graph body, a node statement creates its inline
//! edges (every non-`make_edge` edge into it, in arena order) and an `edge` statement
//! creates its `make_edge` edge. That walk must create each edge exactly once, in arena
//! (creation) order, and an edge only after both of its endpoints. Whole-graph update
//! compares edges by creation order and API call, so this is data, not decoration.

use super::ctx::Gx;
use super::error::VerifyError;
use super::uses::{is_buffer, node_uses};
use crate::arena::Handle;
use crate::graph::{Edge, EdgeKind, Node, NodeKind, Stmt};

/// Checks every edge.
pub(super) fn check(gx: &Gx<'_>, errors: &mut Vec<VerifyError>) {
    let g = gx.g;
    let mut valid = vec![false; g.edges.len()];
    for (e, edge) in g.edges.iter() {
        let span = g.edges.span(e);
        let mut ok = true;
        for end in [edge.from, edge.to] {
            if gx.node(end).is_none() {
                errors.push(VerifyError::DanglingHandle { what: "node", index: end.index(), span });
                ok = false;
            }
        }
        if ok && edge.from == edge.to {
            errors.push(VerifyError::SelfEdge { node: gx.node_name(edge.from), span });
            ok = false;
        }
        if let Some(slot) = valid.get_mut(e.index()) {
            *slot = ok;
        }
        if ok {
            check_kind(gx, e, edge, errors);
        }
    }
    check_provenance(gx, &valid, errors);
}

/// Checks that the body creates each edge once, in creation order, after its endpoints.
fn check_provenance(gx: &Gx<'_>, valid: &[bool], errors: &mut Vec<VerifyError>) {
    let g = gx.g;
    let mut node_pos: Vec<Option<usize>> = vec![None; g.nodes.len()];
    for (p, stmt) in g.body.iter().enumerate() {
        if let Stmt::Node(n) = stmt {
            if let Some(slot) = node_pos.get_mut(n.index()) {
                slot.get_or_insert(p);
            }
        }
    }
    // The inline edges of node `i`, in creation order, are `inline[start[i]..start[i + 1]]`
    // (a counting sort: no list per node).
    let into = |e: Handle<Edge>, edge: &Edge| {
        (edge.kind != EdgeKind::MakeEdge && valid.get(e.index()).copied().unwrap_or(false))
            .then_some(edge.to.index())
            .filter(|&to| to < g.nodes.len())
    };
    let mut start = vec![0usize; g.nodes.len() + 1];
    for (e, edge) in g.edges.iter() {
        if let Some(to) = into(e, edge) {
            start[to + 1] += 1;
        }
    }
    for i in 0..g.nodes.len() {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut inline: Vec<Option<Handle<Edge>>> = vec![None; start[g.nodes.len()]];
    for (e, edge) in g.edges.iter() {
        if let Some(to) = into(e, edge) {
            inline[fill[to]] = Some(e);
            fill[to] += 1;
        }
    }
    let inline_of = |n: usize| match (start.get(n), start.get(n + 1)) {
        (Some(&a), Some(&b)) => inline.get(a..b).unwrap_or(&[]),
        _ => &[],
    };
    let describe = |e: Handle<Edge>, edge: &Edge| (gx.edge_name(edge.from, edge.to), g.edges.span(e));
    let mut listed = vec![0u32; g.edges.len()];
    let mut seq: Vec<Handle<Edge>> = Vec::with_capacity(g.edges.len());
    let mut node_done = vec![false; g.nodes.len()];
    // An endpoint created after the statement at `p` that creates the edge.
    let late_endpoint = |edge: &Edge, p: usize| {
        [edge.from, edge.to].into_iter().find(|n| node_pos.get(n.index()).copied().flatten().is_some_and(|q| q > p))
    };
    for (p, stmt) in g.body.iter().enumerate() {
        match *stmt {
            Stmt::Node(n) => {
                let Some(done) = node_done.get_mut(n.index()) else { continue };
                if std::mem::replace(done, true) {
                    continue;
                }
                for &e in inline_of(n.index()).iter().flatten() {
                    let edge = &g.edges[e];
                    listed[e.index()] += 1;
                    seq.push(e);
                    if let Some(late) = late_endpoint(edge, p) {
                        let (name, span) = describe(e, edge);
                        errors.push(VerifyError::EdgeBeforeEndpoint {
                            edge: name,
                            node: gx.node_name(late),
                            span,
                            node_span: gx.node_span(late),
                        });
                    }
                }
            }
            Stmt::MakeEdge(e) => {
                let Some(edge) = g.edges.try_get(e) else { continue };
                // Names are formatted only for an error: this runs once per edge at load.
                if edge.kind != EdgeKind::MakeEdge {
                    let (name, span) = describe(e, edge);
                    errors.push(VerifyError::EdgeProvenance {
                        edge: name,
                        problem: format!(
                            "is created by an `edge` statement but records provenance `via {}`",
                            edge.kind.keyword()
                        ),
                        span,
                    });
                    continue;
                }
                listed[e.index()] += 1;
                if listed[e.index()] > 1 {
                    let (name, span) = describe(e, edge);
                    errors.push(VerifyError::EdgeProvenance {
                        edge: name,
                        problem: "is created by more than one `edge` statement".to_string(),
                        span,
                    });
                    continue;
                }
                seq.push(e);
                if valid.get(e.index()).copied().unwrap_or(false) {
                    if let Some(late) = late_endpoint(edge, p) {
                        let (name, span) = describe(e, edge);
                        errors.push(VerifyError::EdgeBeforeEndpoint {
                            edge: name,
                            node: gx.node_name(late),
                            span,
                            node_span: gx.node_span(late),
                        });
                    }
                }
            }
            _ => {}
        }
    }
    for (e, edge) in g.edges.iter() {
        if listed[e.index()] == 0 && edge.kind == EdgeKind::MakeEdge {
            let (name, span) = describe(e, edge);
            errors.push(VerifyError::EdgeProvenance {
                edge: name,
                problem: "is a make_edge edge but no `edge` statement creates it".to_string(),
                span,
            });
        }
    }
    // Only the first inversion is reported: one misplaced edge shifts all that follow.
    if let Some(w) = seq.windows(2).find(|w| w[1] < w[0]) {
        let (name, span) = describe(w[1], &g.edges[w[1]]);
        let (before, _) = describe(w[0], &g.edges[w[0]]);
        errors.push(VerifyError::EdgeProvenance {
            edge: name,
            problem: format!("was created before {before} but the statements create it after"),
            span,
        });
    }
}

/// Checks that the edge's provenance is one its endpoints can have.
fn check_kind(gx: &Gx<'_>, e: Handle<Edge>, edge: &Edge, errors: &mut Vec<VerifyError>) {
    let (Some(from), Some(to)) = (gx.node(edge.from), gx.node(edge.to)) else { return };
    let span = gx.g.edges.span(e);
    let name = || gx.edge_name(edge.from, edge.to);
    match edge.kind {
        EdgeKind::InOrder => {
            let problem = match (from.queue, to.queue) {
                (None, _) => Some(format!("{} was not recorded from a queue", gx.node_name(edge.from))),
                (_, None) => Some(format!("{} was not recorded from a queue", gx.node_name(edge.to))),
                (Some(a), Some(b)) if a != b => Some(format!(
                    "its endpoints were recorded from different queues, {} and {}",
                    gx.queue_name(a),
                    gx.queue_name(b)
                )),
                (Some(q), Some(_)) => match gx.g.queues.try_get(q) {
                    Some(queue) if !queue.in_order => Some(format!("queue {} is not in_order", gx.queue_name(q))),
                    _ => None,
                },
            };
            if let Some(problem) = problem {
                errors.push(VerifyError::InOrderEdge { edge: name(), problem, span });
            }
        }
        EdgeKind::Event => {
            if let Some(q) = from.queue {
                if gx.g.queues.try_get(q).is_some_and(|queue| queue.discard_events) {
                    errors.push(VerifyError::EventFromDiscardQueue { edge: name(), queue: gx.queue_name(q), span });
                }
            }
        }
        EdgeKind::Barrier => {
            let into_barrier = matches!(to.kind, NodeKind::Barrier { .. });
            let out_of_barrier =
                matches!(from.kind, NodeKind::Barrier { .. }) && from.queue.is_some() && from.queue == to.queue;
            if !into_barrier && !out_of_barrier {
                errors.push(VerifyError::BarrierEdge { edge: name(), span });
            }
        }
        EdgeKind::Transitive => {
            if to.queue.is_none() {
                errors.push(VerifyError::TransitiveEdge { edge: name(), span });
            }
        }
        EdgeKind::Accessor => {
            if !buffer_conflict(gx, edge.from, from, edge.to, to) {
                errors.push(VerifyError::AccessorEdge { edge: name(), span });
            }
        }
        EdgeKind::MakeEdge | EdgeKind::DependsOn | EdgeKind::AllLeaves => {}
    }
}

/// Whether the two nodes touch a common buffer and at least one of them writes it.
fn buffer_conflict(gx: &Gx<'_>, a: Handle<Node>, an: &Node, b: Handle<Node>, bn: &Node) -> bool {
    let ua = node_uses(gx, a, an);
    let ub = node_uses(gx, b, bn);
    ua.iter()
        .filter(|u| is_buffer(gx, u))
        .any(|x| ub.iter().any(|y| y.mem == x.mem && (x.mode.writes() || y.mode.writes()) && is_buffer(gx, y)))
}
