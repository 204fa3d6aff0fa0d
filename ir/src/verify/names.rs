//! Names and listing order: every name spellable in the text format, no duplicate in a
//! namespace, and the module item list and each graph body listing every entity once.
//!
//! The parser guarantees all of this for parsed text; modules built or rewritten through
//! the API can break it, and the printer would then write text that does not read back.

use super::ctx::Gx;
use super::error::VerifyError;
use super::namespace::{self, Segment};
use crate::arena::Arena;
use crate::graph::Stmt;
use crate::module::{Item, Module};
use crate::span::Span;

/// The longest name the text format accepts, in bytes (docs/ir.md, Limits).
const MAX_NAME: usize = 1024;

/// Whether `name` is a legal name after its sigil: `[A-Za-z0-9_.$-]+`, at most 1024 bytes.
pub(super) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'$' | b'-'))
}

/// Module-level names (kernels, functions, memory objects and graphs share one namespace) and the
/// module item list.
pub(super) fn check_module(m: &Module, errors: &mut Vec<VerifyError>) {
    namespace::check(
        &[
            Segment::of("kernel", '@', &m.kernels, |k| &k.name),
            Segment::of("function", '@', &m.functions, |f| &f.def.name),
            Segment::of("memory object", '@', &m.memories, |mem| &mem.name),
            Segment::of("graph", '@', &m.graphs, |g| &g.name),
        ],
        errors,
    );

    let mut kernels = vec![0usize; m.kernels.len()];
    let mut functions = vec![0usize; m.functions.len()];
    let mut memories = vec![0usize; m.memories.len()];
    let mut graphs = vec![0usize; m.graphs.len()];
    for item in &m.items {
        let (slot, what, index) = match *item {
            Item::Kernel(h) => (kernels.get_mut(h.index()), "kernel", h.index()),
            Item::Function(h) => (functions.get_mut(h.index()), "function", h.index()),
            Item::Memory(h) => (memories.get_mut(h.index()), "memory object", h.index()),
            Item::Graph(h) => (graphs.get_mut(h.index()), "graph", h.index()),
        };
        match slot {
            Some(count) => *count += 1,
            None => errors.push(VerifyError::DanglingHandle { what, index, span: Span::UNDEFINED }),
        }
    }
    listed_once("module items", &kernels, &m.kernels, |k| format!("@{}", k.name), errors);
    listed_once("module items", &functions, &m.functions, |f| format!("@{}", f.def.name), errors);
    listed_once("module items", &memories, &m.memories, |mem| format!("@{}", mem.name), errors);
    listed_once("module items", &graphs, &m.graphs, |g| format!("@{}", g.name), errors);
}

/// Reports entities listed zero or several times.
fn listed_once<T>(
    list: &'static str,
    counts: &[usize],
    arena: &Arena<T>,
    name: impl Fn(&T) -> String,
    errors: &mut Vec<VerifyError>,
) {
    for (h, value) in arena.iter() {
        let problem = match counts.get(h.index()).copied().unwrap_or(0) {
            0 => "is not listed, so it would not be printed",
            1 => continue,
            _ => "is listed more than once",
        };
        errors.push(VerifyError::OrderList { list, entity: name(value), problem, span: arena.span(h) });
    }
}

/// Graph-local names (nodes, dynamic parameters and command groups share one namespace;
/// queues have their own) and the graph body listing.
pub(super) fn check_graph(gx: Gx<'_>, errors: &mut Vec<VerifyError>) {
    let g = gx.g;
    namespace::check(
        &[
            Segment::of("node", '%', &g.nodes, |n| &n.name),
            Segment::of("dynamic parameter", '%', &g.dyn_params, |p| &p.name),
            Segment::of("dynamic command group", '%', &g.dcgs, |d| &d.name),
        ],
        errors,
    );
    namespace::check(&[Segment::of("queue", '@', &g.queues, |q| &q.name)], errors);

    let graph_span = gx.m.graphs.span(gx.gh);
    let mut queues = vec![0usize; g.queues.len()];
    let mut dyns = vec![0usize; g.dyn_params.len()];
    let mut dcgs = vec![0usize; g.dcgs.len()];
    let mut nodes = vec![0usize; g.nodes.len()];
    let mut last_node: Option<usize> = None;
    for stmt in &g.body {
        let (slot, what, index) = match *stmt {
            Stmt::Queue(h) => (queues.get_mut(h.index()), "queue", h.index()),
            Stmt::DynParam(h) => (dyns.get_mut(h.index()), "dynamic parameter", h.index()),
            Stmt::Dcg(h) => (dcgs.get_mut(h.index()), "dynamic command group", h.index()),
            Stmt::Node(h) => {
                if let Some(node) = g.nodes.try_get(h) {
                    if last_node.is_some_and(|last| last > h.index()) {
                        errors.push(VerifyError::OrderList {
                            list: "graph body",
                            entity: format!("%{}", node.name),
                            problem: "is listed out of node creation order",
                            span: g.nodes.span(h),
                        });
                    }
                    last_node = Some(last_node.map_or(h.index(), |l| l.max(h.index())));
                }
                (nodes.get_mut(h.index()), "node", h.index())
            }
            // `edge` statements are checked with edge provenance (edges.rs).
            Stmt::MakeEdge(h) => {
                if g.edges.try_get(h).is_none() {
                    errors.push(VerifyError::DanglingHandle { what: "edge", index: h.index(), span: graph_span });
                }
                continue;
            }
        };
        match slot {
            Some(count) => *count += 1,
            None => errors.push(VerifyError::DanglingHandle { what, index, span: graph_span }),
        }
    }
    listed_once("graph body", &queues, &g.queues, |q| format!("@{}", q.name), errors);
    listed_once("graph body", &dyns, &g.dyn_params, |p| format!("%{}", p.name), errors);
    listed_once("graph body", &dcgs, &g.dcgs, |d| format!("%{}", d.name), errors);
    listed_once("graph body", &nodes, &g.nodes, |n| format!("%{}", n.name), errors);
}
