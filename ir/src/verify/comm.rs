//! Communication nodes (docs/mpi.md): each node's operands, and across the graphs of one
//! module that run as ranks (`@step.r0`, `@step.r1`, ...), that every send has its receive
//! and every rank runs the same all-reduces.

use super::ctx::Gx;
use super::error::VerifyError;
use super::memory::{check_byte_range, check_pointer};
use crate::arena::Handle;
use crate::comm::{self, CommCommand, CommOp};
use crate::graph::{Graph, Node, NodeKind};
use crate::module::Module;
use std::collections::BTreeMap;

/// Checks one communication node: its memory range, its peer (in a rank graph), and the
/// element type of an all-reduce.
pub(super) fn check_node(gx: &Gx<'_>, n: Handle<Node>, cmd: &CommCommand, errors: &mut Vec<VerifyError>) {
    let span = gx.node_span(n);
    let node = gx.node_name(n);
    let context = "a communication operand";
    let Some(info) = check_pointer(gx, &cmd.ptr, context, true, span, errors) else { return };
    check_byte_range("communication range", &info, &cmd.ptr, Some(cmd.bytes), span, errors);
    let mut refuse = |problem: String, help: String| {
        errors.push(VerifyError::CommOperand { node: node.clone(), problem, help, span });
    };
    match cmd.op {
        CommOp::Send { peer, .. } | CommOp::Recv { peer, .. } => {
            let ranks = comm::rank_of(&gx.g.name).and_then(|(base, rank)| Some((rank, rank_count(gx.m, base)?)));
            if let Some((rank, size)) = ranks {
                if peer == rank || peer >= size {
                    refuse(
                        format!("its peer is rank {peer}, but @{} is rank {rank} of {size}", gx.g.name),
                        format!("name another rank, 0 to {}, other than {rank}", size.saturating_sub(1)),
                    );
                }
            }
        }
        CommOp::AllReduce(op) => {
            let ty = info.elem.scalar;
            if !comm::reducible(ty) {
                refuse(
                    format!("`{}` over {}, which holds {}", op.keyword(), info.name(), ty.keyword()),
                    "reduce integer, f32 or f64 memory".to_string(),
                );
            } else if !cmd.ptr.offset.is_multiple_of(ty.size()) || !cmd.bytes.is_multiple_of(ty.size()) {
                refuse(
                    format!(
                        "bytes {}..{} of {} are not whole {} elements",
                        cmd.ptr.offset,
                        cmd.ptr.offset.saturating_add(cmd.bytes),
                        info.name(),
                        ty.keyword()
                    ),
                    format!("start and size the range at multiples of {} bytes", ty.size()),
                );
            }
        }
    }
}

/// How many rank graphs `@base.r0`, `@base.r1`, ... the module has, counting up from 0
/// while they exist.
fn rank_count(m: &Module, base: &str) -> Option<u32> {
    let names: std::collections::BTreeSet<&str> = m.graphs.iter().map(|(_, g)| g.name.as_str()).collect();
    let n = (0u32..).take_while(|r| names.contains(format!("{base}.r{r}").as_str())).count() as u32;
    (n > 0).then_some(n)
}

/// One rank's all-reduces, in node order.
type Reduces<'g> = Vec<(&'g Node, &'g CommCommand)>;

/// Sends and receives by (source, destination, tag), each side in node order.
type Traffic<'g> = BTreeMap<(u32, u32, u32), (Vec<(&'g Node, u64)>, Vec<(&'g Node, u64)>)>;

/// Across each group of rank graphs: the k-th send from rank `a` to `b` with a tag must
/// have a k-th receive on `b` from `a` with that tag and the same byte count, and every
/// rank must run the same all-reduces. Graphs that run communication inside sub-graphs or
/// conditional bodies are not checked (what runs there is only known at run time).
pub(super) fn check_ranks(m: &Module, errors: &mut Vec<VerifyError>) {
    let mut groups: BTreeMap<&str, BTreeMap<u32, &Graph>> = BTreeMap::new();
    for (_, g) in m.graphs.iter() {
        if let Some((base, rank)) = comm::rank_of(&g.name) {
            groups.entry(base).or_default().insert(rank, g);
        }
    }
    for (base, ranks) in groups {
        let size = ranks.len() as u32;
        if !ranks.keys().copied().eq(0..size) {
            continue;
        }
        let nested = |g: &Graph| {
            g.nodes.iter().any(|(_, n)| matches!(n.kind, NodeKind::Subgraph { .. } | NodeKind::Conditional { .. }))
        };
        if ranks.values().any(|g| nested(g)) {
            continue;
        }
        let mut traffic: Traffic = BTreeMap::new();
        let mut reduces: Vec<(u32, Reduces)> = Vec::new();
        for (&rank, g) in &ranks {
            let mut mine = Vec::new();
            for (_, node) in g.nodes.iter() {
                let NodeKind::Comm(c) = &node.kind else { continue };
                match c.op {
                    CommOp::Send { peer, tag } => traffic.entry((rank, peer, tag)).or_default().0.push((node, c.bytes)),
                    CommOp::Recv { peer, tag } => traffic.entry((peer, rank, tag)).or_default().1.push((node, c.bytes)),
                    CommOp::AllReduce(_) => mine.push((node, c)),
                }
            }
            reduces.push((rank, mine));
        }
        let span_of = |rank: u32, node: &Node| {
            let g = ranks[&rank];
            g.nodes.iter().find(|(_, n)| std::ptr::eq(*n, node)).map(|(h, _)| g.nodes.span(h)).unwrap_or_default()
        };
        for ((from, to, tag), (sends, recvs)) in &traffic {
            if *from >= size || *to >= size || from == to {
                continue; // a bad peer, reported at the node (E0294)
            }
            for i in 0..sends.len().max(recvs.len()) {
                let (problem, at) = match (sends.get(i), recvs.get(i)) {
                    (Some((s, a)), Some((r, b))) if a != b => (
                        format!(
                            "%{} of @{base}.r{to} receives {b} bytes with tag {tag}, but the matching %{} of @{base}.r{from} sends {a}",
                            r.name, s.name
                        ),
                        span_of(*to, r),
                    ),
                    (Some(_), Some(_)) => continue,
                    (Some((s, _)), None) => (
                        format!("%{} of @{base}.r{from} sends to rank {to} with tag {tag}, and no receive of @{base}.r{to} takes it", s.name),
                        span_of(*from, s),
                    ),
                    (None, Some((r, _))) => (
                        format!("%{} of @{base}.r{to} receives from rank {from} with tag {tag}, and @{base}.r{from} sends nothing for it", r.name),
                        span_of(*to, r),
                    ),
                    (None, None) => continue,
                };
                let help =
                    "pair each send with a receive of the same byte count and tag on its peer, in the same order"
                        .to_string();
                errors.push(VerifyError::CommUnmatched { problem, help, span: at });
            }
        }
        let Some((_, first)) = reduces.first() else { continue };
        for (rank, mine) in &reduces[1..] {
            for i in 0..first.len().max(mine.len()) {
                let (problem, at) = match (first.get(i), mine.get(i)) {
                    (Some((_, a)), Some((_, b))) if a.op == b.op && a.bytes == b.bytes => continue,
                    (Some((na, a)), Some((nb, b))) => (
                        format!(
                            "all-reduce {} of @{base}.r{rank} is %{} ({}), but rank 0's is %{} ({})",
                            i + 1,
                            nb.name,
                            b.text("…"),
                            na.name,
                            a.text("…")
                        ),
                        span_of(*rank, nb),
                    ),
                    (Some((na, _)), None) => (
                        format!(
                            "@{base}.r{rank} runs {} all-reduces, but rank 0 runs %{} as all-reduce {}",
                            mine.len(),
                            na.name,
                            i + 1
                        ),
                        span_of(0, na),
                    ),
                    (None, Some((nb, _))) => (
                        format!(
                            "@{base}.r{rank} runs %{} as all-reduce {}, but rank 0 runs {}",
                            nb.name,
                            i + 1,
                            first.len()
                        ),
                        span_of(*rank, nb),
                    ),
                    (None, None) => continue,
                };
                let help =
                    "every rank runs the same all-reduces (operation and byte count), in the same order".to_string();
                errors.push(VerifyError::CommUnmatched { problem, help, span: at });
                break;
            }
        }
    }
}
