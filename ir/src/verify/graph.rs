//! One graph: runs every graph check in order, and checks each node's command on its own
//! (operands, sizes, ranges, queue, barrier wait list, sub-graph compatibility).

use super::args::{check_kernel_command, CmdSpans};
use super::ctx::{check_type, Gx, MemClass};
use super::error::VerifyError;
use super::memory::{check_byte_range, check_pointer, literal_problem};
use super::needs::KernelNeeds;
use super::order::Order;
use super::topo::Topo;
use super::{alloc, cycle, dcg, edges, names, races, uses};
use crate::arena::Handle;
use crate::graph::{CondKind, Graph, MemRef, Node, NodeKind, Site};
use crate::module::{Module, UsmKind};

/// Runs every check of one graph.
pub(super) fn check_graph(
    m: &Module,
    needs: &[KernelNeeds],
    gh: Handle<Graph>,
    g: &Graph,
    errors: &mut Vec<VerifyError>,
) {
    let gx = Gx { m, g, gh, needs };
    names::check_graph(gx, errors);
    let waits = barrier_preds(g);
    // One walk over the nodes for the checks that look at each: a graph of 10^5 nodes is
    // read from memory once, not once per check. Definition order is checked first, as if
    // on its own walk.
    let mut order = Order::new(&gx);
    let mut uses = alloc::Collector::new(g.nodes.len());
    let mark = errors.len();
    for (n, node) in g.nodes.iter() {
        order.visit_node(&gx, n, node);
        check_node(&gx, n, node, &waits, errors);
        uses.visit(&gx, n, node);
    }
    order.finish(&gx, mark, errors);
    dcg::check_dyn_params(&gx, errors);
    dcg::check_dcgs(&gx, errors);
    uses::check_buffer_lifetime(&gx, errors);
    edges::check(&gx, errors);
    // One order for both checks that need one.
    let topo = Topo::new(g);
    cycle::check(&gx, &topo, errors);
    alloc::check(&gx, uses, &topo, errors);
    races::check(&gx, &topo, errors);
}

/// For each barrier with a wait list, its direct predecessors, sorted (index `i` of the
/// result is node `i`; other nodes get an empty list). One pass over the edges, so a
/// barrier waiting on many nodes costs a binary search per entry.
fn barrier_preds(g: &Graph) -> Vec<Vec<usize>> {
    let mut preds: Vec<Vec<usize>> = Vec::new();
    // Most graphs have no wait list: then nothing is allocated.
    let waiting: Vec<bool> =
        g.nodes.iter().map(|(_, n)| matches!(&n.kind, NodeKind::Barrier { wait } if !wait.is_empty())).collect();
    if !waiting.contains(&true) {
        return preds;
    }
    preds.resize_with(g.nodes.len(), Vec::new);
    for (_, e) in g.edges.iter() {
        if waiting.get(e.to.index()).copied().unwrap_or(false) {
            preds[e.to.index()].push(e.from.index());
        }
    }
    for list in &mut preds {
        list.sort_unstable();
    }
    preds
}

/// Checks one node's command. `waits[i]` lists the direct predecessors of barrier `i`,
/// sorted, when it has a wait list.
fn check_node(gx: &Gx<'_>, n: Handle<Node>, node: &Node, waits: &[Vec<usize>], errors: &mut Vec<VerifyError>) {
    let span = gx.node_span(n);
    if let Some(q) = node.queue {
        if gx.g.queues.try_get(q).is_none() {
            errors.push(VerifyError::DanglingHandle { what: "queue", index: q.index(), span });
        }
    }
    match &node.kind {
        NodeKind::Empty => {}
        NodeKind::Kernel(cmd) => {
            let arg = |i: u32| gx.site(Site::NodeArg(n, i), span);
            let launch = || gx.site(Site::NodeLaunch(n), span);
            let spans = CmdSpans { cmd: span, launch: &launch, arg: &arg };
            check_kernel_command(gx, cmd, &spans, node.queue, errors);
        }
        NodeKind::Memcpy { dst, src, bytes } => {
            let d = check_pointer(gx, dst, "a memcpy operand", true, span, errors);
            let s = check_pointer(gx, src, "a memcpy operand", true, span, errors);
            let d_ok =
                d.as_ref().is_some_and(|d| check_byte_range("memcpy destination", d, dst, Some(*bytes), span, errors));
            let s_ok =
                s.as_ref().is_some_and(|s| check_byte_range("memcpy source", s, src, Some(*bytes), span, errors));
            let overlap = *bytes > 0
                && dst.offset < src.offset.saturating_add(*bytes)
                && src.offset < dst.offset.saturating_add(*bytes);
            if d_ok && s_ok && dst.base == src.base && overlap {
                errors.push(VerifyError::MemcpyOverlap {
                    name: gx.mem_name(dst.base),
                    dst: dst.offset,
                    src: src.offset,
                    bytes: *bytes,
                    span,
                });
            }
        }
        NodeKind::Memset { dst, bytes, .. } => {
            if let Some(info) = check_pointer(gx, dst, "a memset operand", false, span, errors) {
                check_byte_range("memset range", &info, dst, Some(*bytes), span, errors);
            }
        }
        NodeKind::Memfill { dst, pattern, count } => {
            let info = check_pointer(gx, dst, "a memfill operand", true, span, errors);
            let Some(ty) = pattern.ty else {
                errors.push(VerifyError::MemfillPattern { problem: "the pattern has no type".to_string(), span });
                return;
            };
            if let Some(problem) = literal_problem(pattern, ty) {
                errors.push(VerifyError::MemfillPattern { problem, span });
            }
            if let Some(info) = info {
                check_byte_range("memfill range", &info, dst, ty.size().checked_mul(*count), span, errors);
            }
        }
        NodeKind::Prefetch { ptr, bytes } => {
            if let Some(info) = check_pointer(gx, ptr, "a prefetch operand", false, span, errors) {
                check_byte_range("prefetch range", &info, ptr, Some(*bytes), span, errors);
            }
        }
        NodeKind::Memadvise { ptr, bytes, .. } => {
            if let Some(info) = check_pointer(gx, ptr, "a memadvise operand", false, span, errors) {
                check_byte_range("memadvise range", &info, ptr, Some(*bytes), span, errors);
            }
        }
        NodeKind::Barrier { wait } => {
            if node.queue.is_none() {
                errors.push(VerifyError::BarrierWithoutQueue { node: gx.node_name(n), span });
            }
            let preds = waits.get(n.index()).map_or(&[][..], Vec::as_slice);
            for (i, w) in wait.iter().enumerate() {
                let item = gx.site(Site::NodeListItem(n, i as u32), span);
                if gx.node(*w).is_none() {
                    errors.push(VerifyError::DanglingHandle { what: "node", index: w.index(), span: item });
                } else if preds.binary_search(&w.index()).is_err() {
                    errors.push(VerifyError::BarrierWaitNotPredecessor {
                        barrier: gx.node_name(n),
                        waited: gx.node_name(*w),
                        span: item,
                    });
                }
            }
        }
        NodeKind::HostTask(task) | NodeKind::Native(task) => {
            let context = if matches!(node.kind, NodeKind::HostTask(_)) {
                "a host_task access entry"
            } else {
                "a native access entry"
            };
            for (i, a) in task.access.iter().enumerate() {
                let item = gx.site(Site::NodeListItem(n, i as u32), span);
                if let Some(info) = gx.resolve_reported(a.mem, item, errors) {
                    if info.class == MemClass::DeviceGlobal {
                        errors.push(VerifyError::DeviceGlobalOperand { name: info.name(), context, span: item });
                    }
                }
            }
        }
        NodeKind::Comm(c) => super::comm::check_node(gx, n, c, errors),
        NodeKind::Subgraph { graph } => check_subgraph(gx, *graph, span, errors),
        NodeKind::Conditional { kind, cond, bodies } => check_conditional(gx, *kind, cond, bodies, span, errors),
        NodeKind::AsyncMalloc { elem, count, kind, .. } => {
            if *kind != UsmKind::Device {
                errors.push(VerifyError::AllocKindNotDevice { kind: kind.keyword(), span });
            }
            if check_type(*elem, span, errors) && (*count == 0 || elem.size().checked_mul(*count).is_none()) {
                errors.push(VerifyError::BadSize {
                    what: format!("graph allocation {}", gx.node_name(n)),
                    count: *count,
                    span,
                });
            }
        }
        NodeKind::AsyncFree { alloc } => match gx.node(*alloc) {
            None => errors.push(VerifyError::DanglingHandle { what: "node", index: alloc.index(), span }),
            Some(_) if !gx.is_malloc(*alloc) => errors.push(VerifyError::FreeOfForeignMemory {
                name: gx.node_name(*alloc),
                span,
                target: gx.node_span(*alloc),
            }),
            Some(_) => {}
        },
        NodeKind::Dynamic { dcg } => {
            if gx.g.dcgs.try_get(*dcg).is_none() {
                errors.push(VerifyError::DanglingHandle { what: "dynamic command group", index: dcg.index(), span });
            }
            if let Some(q) = node.queue {
                errors.push(VerifyError::DcgOnRecordedNode { node: gx.node_name(n), queue: gx.queue_name(q), span });
            }
        }
    }
}

/// A conditional node (docs/conditional.md): its condition is a `u32` of `usm` or `buffer`
/// memory, inside it, at a multiple of 4 bytes; its bodies follow the sub-graph rules, as many
/// as the construct takes; a `while` body can write the condition.
fn check_conditional(
    gx: &Gx<'_>,
    kind: CondKind,
    cond: &crate::graph::Pointer,
    bodies: &[Handle<Graph>],
    span: crate::span::Span,
    errors: &mut Vec<VerifyError>,
) {
    let problem = |p: String| VerifyError::ConditionWord { problem: p, span };
    if let Some(info) = gx.resolve_reported(cond.base, span, errors) {
        if !matches!(info.class, MemClass::Usm | MemClass::Buffer) {
            errors.push(problem(format!("{} is not `usm` or `buffer` memory", info.name())));
        } else if info.elem != crate::types::Type::U32 {
            errors.push(problem(format!("{} holds {}, not u32", info.name(), info.elem)));
        } else if !cond.offset.is_multiple_of(4) || cond.offset.checked_add(4).is_none_or(|end| end > info.size) {
            errors.push(problem(format!(
                "byte offset {} of {} ({} bytes) is not a whole u32 inside it",
                cond.offset,
                info.name(),
                info.size
            )));
        }
    }
    let (lo, hi) = kind.body_counts();
    if bodies.len() < lo || bodies.len() > hi {
        errors.push(problem(format!("`{}` takes {lo} to {hi} bodies, not {}", kind.keyword(), bodies.len())));
    }
    for &b in bodies {
        check_subgraph(gx, b, span, errors);
    }
    if kind == CondKind::While {
        if let (Some(&body), MemRef::Memory(word)) = (bodies.first(), cond.base) {
            if gx.m.graphs.try_get(body).is_some() && !super::conditional::may_write(gx.m, body, word) {
                let name = gx.m.graphs.try_get(body).map_or(String::new(), |g| format!("@{}", g.name));
                errors.push(VerifyError::WhileNeverWrites { cond: gx.mem_name(cond.base), body: name, span });
            }
        }
    }
}

/// A sub-graph must exist, share the parent's device and context (§22 #38) and own no
/// allocations (§22 #37, #39, #57). Recursion is checked over the whole module (subgraph.rs).
fn check_subgraph(gx: &Gx<'_>, child: Handle<Graph>, span: crate::span::Span, errors: &mut Vec<VerifyError>) {
    let Some(c) = gx.m.graphs.try_get(child) else {
        errors.push(VerifyError::DanglingHandle { what: "graph", index: child.index(), span });
        return;
    };
    if (c.device, c.context) != (gx.g.device, gx.g.context) {
        errors.push(VerifyError::SubgraphDeviceMismatch {
            child: format!("@{}", c.name),
            parent: (gx.g.device, gx.g.context),
            found: (c.device, c.context),
            span,
        });
    }
    if let Some((h, _)) = c.nodes.iter().find(|(_, n)| matches!(n.kind, NodeKind::AsyncMalloc { .. })) {
        errors.push(VerifyError::SubgraphWithAllocations {
            child: format!("@{}", c.name),
            span,
            alloc: c.nodes.span(h),
        });
    }
}
