//! Definition before use inside a graph body: the text format requires every `%` name and
//! queue to be defined by an earlier statement, so a module whose body order breaks this
//! would print to text that does not parse. (Edges are checked in edges.rs.)

use super::ctx::Gx;
use super::error::VerifyError;
use crate::graph::{Alternative, Arg, ArgValue, KernelCommand, MemRef, NodeKind, Stmt};

/// Body positions of every graph entity (`None` when not listed).
struct Positions {
    nodes: Vec<Option<usize>>,
    dyns: Vec<Option<usize>>,
    dcgs: Vec<Option<usize>>,
    queues: Vec<Option<usize>>,
}

/// A name referred to by a statement.
enum Ref {
    Node(crate::arena::Handle<crate::graph::Node>),
    Dyn(crate::arena::Handle<crate::graph::DynParam>),
    Dcg(crate::arena::Handle<crate::graph::DynCommandGroup>),
    Queue(crate::arena::Handle<crate::graph::Queue>),
}

/// Checks that every statement only names entities of earlier statements.
pub(super) fn check(gx: &Gx<'_>, errors: &mut Vec<VerifyError>) {
    let g = gx.g;
    let mut pos = Positions {
        nodes: vec![None; g.nodes.len()],
        dyns: vec![None; g.dyn_params.len()],
        dcgs: vec![None; g.dcgs.len()],
        queues: vec![None; g.queues.len()],
    };
    for (i, stmt) in g.body.iter().enumerate() {
        let slot = match *stmt {
            Stmt::Node(h) => pos.nodes.get_mut(h.index()),
            Stmt::DynParam(h) => pos.dyns.get_mut(h.index()),
            Stmt::Dcg(h) => pos.dcgs.get_mut(h.index()),
            Stmt::Queue(h) => pos.queues.get_mut(h.index()),
            Stmt::MakeEdge(_) => None,
        };
        if let Some(slot) = slot {
            slot.get_or_insert(i);
        }
    }
    let mut refs: Vec<Ref> = Vec::new();
    for (i, stmt) in g.body.iter().enumerate() {
        // The list is reused: one allocation for the whole body, not one per statement.
        refs.clear();
        let span = match *stmt {
            Stmt::Node(h) => match g.nodes.try_get(h) {
                Some(node) => {
                    node_refs(node, &mut refs);
                    g.nodes.span(h)
                }
                None => continue,
            },
            Stmt::DynParam(h) => match g.dyn_params.try_get(h) {
                Some(p) => {
                    value_refs(&p.value, &mut refs);
                    g.dyn_params.span(h)
                }
                None => continue,
            },
            Stmt::Dcg(h) => match g.dcgs.try_get(h) {
                Some(d) => {
                    for alt in &d.alternatives {
                        match alt {
                            Alternative::Kernel(cmd) => command_refs(cmd, &mut refs),
                            Alternative::HostTask(t) => refs.extend(t.access.iter().filter_map(|a| mem_ref(a.mem))),
                            Alternative::Other(_) => {}
                        }
                    }
                    g.dcgs.span(h)
                }
                None => continue,
            },
            Stmt::Queue(_) | Stmt::MakeEdge(_) => continue,
        };
        for r in &refs {
            let defined = match *r {
                Ref::Node(h) => pos.nodes.get(h.index()),
                Ref::Dyn(h) => pos.dyns.get(h.index()),
                Ref::Dcg(h) => pos.dcgs.get(h.index()),
                Ref::Queue(h) => pos.queues.get(h.index()),
            };
            // A reference to itself (`%t = async_free %t`) is diagnosed by the command checks.
            if defined.copied().flatten().is_none_or(|p| p <= i) {
                continue;
            }
            // Names only for the diagnostic (dangling dynamic parameters and command groups
            // are reported by their own checks).
            let (name, def) = match *r {
                Ref::Node(h) => (gx.node_name(h), g.nodes.span(h)),
                Ref::Dyn(h) => match g.dyn_params.try_get(h) {
                    Some(p) => (format!("%{}", p.name), g.dyn_params.span(h)),
                    None => continue,
                },
                Ref::Dcg(h) => match g.dcgs.try_get(h) {
                    Some(d) => (format!("%{}", d.name), g.dcgs.span(h)),
                    None => continue,
                },
                Ref::Queue(h) => (gx.queue_name(h), g.queues.span(h)),
            };
            errors.push(VerifyError::UseBeforeDefinition { name, span, def });
        }
    }
}

/// A graph allocation named by a memory reference.
fn mem_ref(mem: MemRef) -> Option<Ref> {
    match mem {
        MemRef::Alloc(n) => Some(Ref::Node(n)),
        MemRef::Memory(_) => None,
    }
}

/// Names in an argument value.
fn value_refs(value: &ArgValue, out: &mut Vec<Ref>) {
    match value {
        ArgValue::Pointer(p) => out.extend(mem_ref(p.base)),
        ArgValue::Accessor(a) => out.extend(mem_ref(a.buffer)),
        _ => {}
    }
}

/// Names in a kernel command.
fn command_refs(cmd: &KernelCommand, out: &mut Vec<Ref>) {
    for arg in &cmd.args {
        match arg {
            Arg::Value(v) => value_refs(v, out),
            Arg::Dyn(d) => out.push(Ref::Dyn(*d)),
        }
    }
}

/// Names in a node statement.
fn node_refs(node: &crate::graph::Node, out: &mut Vec<Ref>) {
    out.extend(node.queue.map(Ref::Queue));
    match &node.kind {
        NodeKind::Kernel(cmd) => command_refs(cmd, out),
        NodeKind::Memcpy { dst, src, .. } => {
            out.extend(mem_ref(dst.base));
            out.extend(mem_ref(src.base));
        }
        NodeKind::Memset { dst, .. } | NodeKind::Memfill { dst, .. } => out.extend(mem_ref(dst.base)),
        NodeKind::Prefetch { ptr, .. } | NodeKind::Memadvise { ptr, .. } => out.extend(mem_ref(ptr.base)),
        NodeKind::Barrier { wait } => out.extend(wait.iter().map(|w| Ref::Node(*w))),
        NodeKind::HostTask(t) | NodeKind::Native(t) => out.extend(t.access.iter().filter_map(|a| mem_ref(a.mem))),
        NodeKind::AsyncFree { alloc } => out.push(Ref::Node(*alloc)),
        NodeKind::Dynamic { dcg } => out.push(Ref::Dcg(*dcg)),
        NodeKind::Empty | NodeKind::Subgraph { .. } | NodeKind::AsyncMalloc { .. } => {}
    }
}
