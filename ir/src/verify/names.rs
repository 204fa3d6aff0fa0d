//! Names and listing order: every name spellable in the text format, no duplicate in a
//! namespace, and the module item list and each graph body listing every entity once.
//!
//! The parser guarantees all of this for parsed text; modules built or rewritten through
//! the API can break it, and the printer would then write text that does not read back.

use super::ctx::Gx;
use super::error::VerifyError;
use crate::arena::Arena;
use crate::graph::Stmt;
use crate::module::{Item, Module};
use crate::span::Span;
use std::collections::hash_map::{Entry, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

/// The longest name the text format accepts, in bytes (docs/ir.md, Limits).
const MAX_NAME: usize = 1024;

/// Whether `name` is a legal name after its sigil: `[A-Za-z0-9_.$-]+`, at most 1024 bytes.
pub(super) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'$' | b'-'))
}

/// A fast hash for names (the multiply-rotate hash rustc uses for its own tables): names
/// are short, and SipHash cost more than the rest of the name checks together. Not
/// resistant to crafted collisions, which could only slow a check down, never change
/// its result.
#[derive(Default)]
struct NameHasher(u64);

impl NameHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0 ^ word).wrapping_mul(0xf135_7aea_2e62_a9c5);
    }
}

impl Hasher for NameHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        let mut word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        self.add(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 59));
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn finish(&self) -> u64 {
        // The table indexes with the low bits: move the well-mixed high bits there.
        self.0.rotate_left(26)
    }
}

/// One definition in a namespace, for duplicate detection.
struct Def<'a> {
    kind: &'static str,
    sigil: char,
    name: &'a str,
    span: Span,
}

/// Reports invalid names and duplicates. Definitions are taken in source order (by span),
/// so the second one written is the one reported; API-built entities (no span) come after,
/// in the order given.
fn check_namespace(mut defs: Vec<Def<'_>>, errors: &mut Vec<VerifyError>) {
    defs.sort_by_key(|d| d.span.start);
    // Only looked up, never iterated, so its order cannot reach the output; a hash map
    // keeps 10^5 node names at one hash each instead of a string comparison per tree level.
    let mut seen: HashMap<&str, Span, BuildHasherDefault<NameHasher>> =
        HashMap::with_capacity_and_hasher(defs.len(), BuildHasherDefault::default());
    for def in defs {
        if !valid_name(def.name) {
            errors.push(VerifyError::InvalidName { kind: def.kind, name: def.name.to_string(), span: def.span });
        }
        match seen.entry(def.name) {
            Entry::Occupied(first) => errors.push(VerifyError::DuplicateName {
                kind: def.kind,
                name: format!("{}{}", def.sigil, def.name),
                span: def.span,
                first: *first.get(),
            }),
            Entry::Vacant(slot) => {
                slot.insert(def.span);
            }
        }
    }
}

/// Module-level names (kernels, memory objects and graphs share one namespace) and the
/// module item list.
pub(super) fn check_module(m: &Module, errors: &mut Vec<VerifyError>) {
    let mut defs = Vec::new();
    for (h, k) in m.kernels.iter() {
        defs.push(Def { kind: "kernel", sigil: '@', name: &k.name, span: m.kernels.span(h) });
    }
    for (h, mem) in m.memories.iter() {
        defs.push(Def { kind: "memory object", sigil: '@', name: &mem.name, span: m.memories.span(h) });
    }
    for (h, g) in m.graphs.iter() {
        defs.push(Def { kind: "graph", sigil: '@', name: &g.name, span: m.graphs.span(h) });
    }
    check_namespace(defs, errors);

    let mut kernels = vec![0usize; m.kernels.len()];
    let mut memories = vec![0usize; m.memories.len()];
    let mut graphs = vec![0usize; m.graphs.len()];
    for item in &m.items {
        let (slot, what, index) = match *item {
            Item::Kernel(h) => (kernels.get_mut(h.index()), "kernel", h.index()),
            Item::Memory(h) => (memories.get_mut(h.index()), "memory object", h.index()),
            Item::Graph(h) => (graphs.get_mut(h.index()), "graph", h.index()),
        };
        match slot {
            Some(count) => *count += 1,
            None => errors.push(VerifyError::DanglingHandle { what, index, span: Span::UNDEFINED }),
        }
    }
    listed_once("module items", &kernels, &m.kernels, |k| format!("@{}", k.name), errors);
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
    let mut defs = Vec::new();
    for (h, n) in g.nodes.iter() {
        defs.push(Def { kind: "node", sigil: '%', name: &n.name, span: g.nodes.span(h) });
    }
    for (h, p) in g.dyn_params.iter() {
        defs.push(Def { kind: "dynamic parameter", sigil: '%', name: &p.name, span: g.dyn_params.span(h) });
    }
    for (h, d) in g.dcgs.iter() {
        defs.push(Def { kind: "dynamic command group", sigil: '%', name: &d.name, span: g.dcgs.span(h) });
    }
    check_namespace(defs, errors);
    let queues = g
        .queues
        .iter()
        .map(|(h, q)| Def { kind: "queue", sigil: '@', name: &q.name, span: g.queues.span(h) })
        .collect();
    check_namespace(queues, errors);

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
