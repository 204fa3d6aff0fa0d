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
    for (i, stmt) in g.body.iter().enumerate() {
        let (refs, span) = match *stmt {
            Stmt::Node(h) => match g.nodes.try_get(h) {
                Some(node) => (node_refs(node), g.nodes.span(h)),
                None => continue,
            },
            Stmt::DynParam(h) => match g.dyn_params.try_get(h) {
                Some(p) => (value_refs(&p.value), g.dyn_params.span(h)),
                None => continue,
            },
            Stmt::Dcg(h) => match g.dcgs.try_get(h) {
                Some(d) => {
                    let mut refs = Vec::new();
                    for alt in &d.alternatives {
                        match alt {
                            Alternative::Kernel(cmd) => refs.extend(command_refs(cmd)),
                            Alternative::HostTask(t) => refs.extend(t.access.iter().filter_map(|a| mem_ref(a.mem))),
                            Alternative::Other(_) => {}
                        }
                    }
                    (refs, g.dcgs.span(h))
                }
                None => continue,
            },
            Stmt::Queue(_) | Stmt::MakeEdge(_) => continue,
        };
        for r in refs {
            let (defined, name, def) = match r {
                Ref::Node(h) => (pos.nodes.get(h.index()), gx.node_name(h), g.nodes.span(h)),
                Ref::Dyn(h) => match g.dyn_params.try_get(h) {
                    Some(p) => (pos.dyns.get(h.index()), format!("%{}", p.name), g.dyn_params.span(h)),
                    None => continue,
                },
                Ref::Dcg(h) => match g.dcgs.try_get(h) {
                    Some(d) => (pos.dcgs.get(h.index()), format!("%{}", d.name), g.dcgs.span(h)),
                    None => continue,
                },
                Ref::Queue(h) => (pos.queues.get(h.index()), gx.queue_name(h), g.queues.span(h)),
            };
            // A reference to itself (`%t = async_free %t`) is diagnosed by the command checks.
            if defined.copied().flatten().is_some_and(|p| p > i) {
                errors.push(VerifyError::UseBeforeDefinition { name, span, def });
            }
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
fn value_refs(value: &ArgValue) -> Vec<Ref> {
    match value {
        ArgValue::Pointer(p) => mem_ref(p.base).into_iter().collect(),
        ArgValue::Accessor(a) => mem_ref(a.buffer).into_iter().collect(),
        _ => Vec::new(),
    }
}

/// Names in a kernel command.
fn command_refs(cmd: &KernelCommand) -> Vec<Ref> {
    let mut out = Vec::new();
    for arg in &cmd.args {
        match arg {
            Arg::Value(v) => out.extend(value_refs(v)),
            Arg::Dyn(d) => out.push(Ref::Dyn(*d)),
        }
    }
    out
}

/// Names in a node statement.
fn node_refs(node: &crate::graph::Node) -> Vec<Ref> {
    let mut out: Vec<Ref> = node.queue.map(Ref::Queue).into_iter().collect();
    match &node.kind {
        NodeKind::Kernel(cmd) => out.extend(command_refs(cmd)),
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
    out
}
