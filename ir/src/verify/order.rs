//! Definition before use inside a graph body: the text format requires every `%` name and
//! queue to be defined by an earlier statement, so a module whose body order breaks this
//! would print to text that does not parse. (Edges are checked in edges.rs.)

use super::ctx::Gx;
use super::error::VerifyError;
use crate::arena::Handle;
use crate::graph::{Alternative, Arg, ArgValue, KernelCommand, MemRef, Node, NodeKind, Stmt};
use crate::span::Span;

/// Body positions of every graph entity (`None` when not listed).
struct Positions {
    nodes: Vec<Option<usize>>,
    dyns: Vec<Option<usize>>,
    dcgs: Vec<Option<usize>>,
    queues: Vec<Option<usize>>,
}

/// A name referred to by a statement.
enum Ref {
    Node(Handle<Node>),
    Dyn(Handle<crate::graph::DynParam>),
    Dcg(Handle<crate::graph::DynCommandGroup>),
    Queue(Handle<crate::graph::Queue>),
}

/// Checks that every statement only names entities of earlier statements, sharing the
/// walk over the nodes with the other per-node checks (graph.rs): [`Order::new`] before
/// the walk, [`Order::visit_node`] for each node, [`Order::finish`] after it.
pub(super) struct Order {
    pos: Positions,
    /// `stmt[i]`: the body position of node `i`, when the body lists every node exactly
    /// once (as parsed modules do), so that nodes can be checked as they are walked.
    /// `None` otherwise: then `finish` walks the body itself.
    stmt: Option<Vec<usize>>,
    /// Errors found so far, with the position of the statement they belong to.
    found: Vec<(usize, VerifyError)>,
    /// Scratch list, reused for every statement.
    refs: Vec<Ref>,
}

impl Order {
    /// Records where the body lists each entity.
    pub(super) fn new(gx: &Gx<'_>) -> Order {
        let g = gx.g;
        let mut pos = Positions {
            nodes: vec![None; g.nodes.len()],
            dyns: vec![None; g.dyn_params.len()],
            dcgs: vec![None; g.dcgs.len()],
            queues: vec![None; g.queues.len()],
        };
        let mut once = true;
        for (i, stmt) in g.body.iter().enumerate() {
            let slot = match *stmt {
                Stmt::Node(h) => pos.nodes.get_mut(h.index()),
                Stmt::DynParam(h) => pos.dyns.get_mut(h.index()),
                Stmt::Dcg(h) => pos.dcgs.get_mut(h.index()),
                Stmt::Queue(h) => pos.queues.get_mut(h.index()),
                Stmt::MakeEdge(_) => None,
            };
            match (slot, stmt) {
                (Some(slot), _) => {
                    once &= !(slot.is_some() && matches!(stmt, Stmt::Node(_)));
                    slot.get_or_insert(i);
                }
                // A dangling node handle (reported elsewhere) is skipped by the body walk.
                (None, Stmt::Node(_)) => once = false,
                (None, _) => {}
            }
        }
        let stmt = once.then(|| pos.nodes.iter().map(|p| p.unwrap_or(usize::MAX)).collect::<Vec<_>>());
        let stmt = stmt.filter(|s| !s.contains(&usize::MAX));
        Order { pos, stmt, found: Vec::new(), refs: Vec::new() }
    }

    /// Checks node `n`'s statement, if the body lists nodes so that `finish` need not.
    pub(super) fn visit_node(&mut self, gx: &Gx<'_>, n: Handle<Node>, node: &Node) {
        let Some(&i) = self.stmt.as_ref().and_then(|s| s.get(n.index())) else { return };
        self.refs.clear();
        node_refs(node, &mut self.refs);
        self.check_refs(gx, i, gx.g.nodes.span(n));
    }

    /// Checks the statements the walk did not, then adds every error to `errors` at
    /// `mark` (where they go had the body been checked before the walk), in body order.
    pub(super) fn finish(mut self, gx: &Gx<'_>, mark: usize, errors: &mut Vec<VerifyError>) {
        let g = gx.g;
        for (i, stmt) in g.body.iter().enumerate() {
            self.refs.clear();
            let span = match *stmt {
                Stmt::Node(h) if self.stmt.is_none() => match g.nodes.try_get(h) {
                    Some(node) => {
                        node_refs(node, &mut self.refs);
                        g.nodes.span(h)
                    }
                    None => continue,
                },
                Stmt::DynParam(h) => match g.dyn_params.try_get(h) {
                    Some(p) => {
                        value_refs(&p.value, &mut self.refs);
                        g.dyn_params.span(h)
                    }
                    None => continue,
                },
                Stmt::Dcg(h) => match g.dcgs.try_get(h) {
                    Some(d) => {
                        for alt in &d.alternatives {
                            match alt {
                                Alternative::Kernel(cmd) => command_refs(cmd, &mut self.refs),
                                Alternative::HostTask(t) => {
                                    self.refs.extend(t.access.iter().filter_map(|a| mem_ref(a.mem)))
                                }
                                Alternative::Other(_) => {}
                            }
                        }
                        g.dcgs.span(h)
                    }
                    None => continue,
                },
                Stmt::Node(_) | Stmt::Queue(_) | Stmt::MakeEdge(_) => continue,
            };
            self.check_refs(gx, i, span);
        }
        // Stable: the errors of one statement keep their order.
        self.found.sort_by_key(|(i, _)| *i);
        let at = mark.min(errors.len());
        errors.splice(at..at, self.found.into_iter().map(|(_, e)| e));
    }

    /// Reports each name in `self.refs` (of the statement at body position `i`, written at
    /// `span`) that is defined by a later statement.
    fn check_refs(&mut self, gx: &Gx<'_>, i: usize, span: Span) {
        let (g, pos) = (gx.g, &self.pos);
        for r in &self.refs {
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
            self.found.push((i, VerifyError::UseBeforeDefinition { name, span, def }));
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
fn node_refs(node: &Node, out: &mut Vec<Ref>) {
    out.extend(node.queue.map(Ref::Queue));
    match &node.kind {
        NodeKind::Kernel(cmd) => command_refs(cmd, out),
        NodeKind::Memcpy { dst, src, .. } => {
            out.extend(mem_ref(dst.base));
            out.extend(mem_ref(src.base));
        }
        NodeKind::Memset { dst, .. } | NodeKind::Memfill { dst, .. } => out.extend(mem_ref(dst.base)),
        NodeKind::Prefetch { ptr, .. } | NodeKind::Memadvise { ptr, .. } | NodeKind::Conditional { cond: ptr, .. } => {
            out.extend(mem_ref(ptr.base))
        }
        NodeKind::Comm(c) => out.extend(mem_ref(c.ptr.base)),
        NodeKind::Barrier { wait } => out.extend(wait.iter().map(|w| Ref::Node(*w))),
        NodeKind::HostTask(t) | NodeKind::Native(t) => out.extend(t.access.iter().filter_map(|a| mem_ref(a.mem))),
        NodeKind::AsyncFree { alloc } => out.push(Ref::Node(*alloc)),
        NodeKind::Dynamic { dcg } => out.push(Ref::Dcg(*dcg)),
        NodeKind::Empty | NodeKind::Subgraph { .. } | NodeKind::AsyncMalloc { .. } => {}
    }
}
