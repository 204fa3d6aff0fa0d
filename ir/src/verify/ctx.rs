//! Lookups shared by the graph checks: handles resolved without panicking, names with
//! their sigils, the best span for a site, and what memory a [`MemRef`] denotes.

use super::error::VerifyError;
use super::needs::KernelNeeds;
use crate::arena::Handle;
use crate::graph::{Graph, MemRef, Node, NodeKind, Site};
use crate::module::{MemoryKind, Module};
use crate::span::Span;
use crate::types::Type;

/// The kind of memory a [`MemRef`] resolves to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum MemClass {
    /// A module `usm` allocation.
    Usm,
    /// A module `buffer`.
    Buffer,
    /// A module `device_global`.
    DeviceGlobal,
    /// A graph-owned allocation (an `async_malloc` node).
    Alloc,
}

/// What a [`MemRef`] denotes.
#[derive(Clone, Debug)]
pub(super) struct MemInfo<'a> {
    /// `@` or `%`.
    sigil: char,
    /// The name after the sigil; [`MemInfo::name`] joins them only for a diagnostic.
    bare: &'a str,
    /// Its kind.
    pub class: MemClass,
    /// Element type.
    pub elem: Type,
    /// Element count.
    pub count: u64,
    /// Size in bytes (saturating; an overflowing size is reported where it is declared).
    pub size: u64,
}

impl MemInfo<'_> {
    /// `@x` or `%t`, for a diagnostic.
    pub(super) fn name(&self) -> String {
        format!("{}{}", self.sigil, self.bare)
    }
}

/// Why a [`MemRef`] does not resolve.
pub(super) enum Unresolved {
    /// The handle is out of range.
    Dangling(&'static str, usize),
    /// It names a node that is not an `async_malloc`.
    NotAlloc(Handle<Node>),
}

/// One graph of the module under verification.
#[derive(Clone, Copy)]
pub(super) struct Gx<'a> {
    /// The module.
    pub m: &'a Module,
    /// The graph.
    pub g: &'a Graph,
    /// Its handle.
    pub gh: Handle<Graph>,
    /// What each kernel of the module needs from its launch, indexed by kernel handle.
    pub needs: &'a [KernelNeeds],
}

impl<'a> Gx<'a> {
    /// The node behind `n`, if in range.
    pub(super) fn node(&self, n: Handle<Node>) -> Option<&'a Node> {
        self.g.nodes.try_get(n)
    }

    /// The node's span.
    pub(super) fn node_span(&self, n: Handle<Node>) -> Span {
        self.g.nodes.span(n)
    }

    /// `%name` of a node, or a placeholder for a dangling handle.
    pub(super) fn node_name(&self, n: Handle<Node>) -> String {
        match self.node(n) {
            Some(node) => format!("%{}", node.name),
            None => format!("%<node {}>", n.index()),
        }
    }

    /// `@name` of the graph.
    pub(super) fn graph_name(&self) -> String {
        format!("@{}", self.g.name)
    }

    /// The span recorded for `site`, or `fallback` when none was recorded.
    pub(super) fn site(&self, site: Site, fallback: Span) -> Span {
        let span = self.g.spans.get(&site);
        if span.is_defined() {
            span
        } else {
            fallback
        }
    }

    /// Whether `n` is an `async_malloc` node.
    pub(super) fn is_malloc(&self, n: Handle<Node>) -> bool {
        matches!(self.node(n).map(|n| &n.kind), Some(NodeKind::AsyncMalloc { .. }))
    }

    /// Resolves a memory reference.
    pub(super) fn resolve(&self, r: MemRef) -> Result<MemInfo<'a>, Unresolved> {
        match r {
            MemRef::Memory(h) => {
                let mem = self.m.memories.try_get(h).ok_or(Unresolved::Dangling("memory object", h.index()))?;
                let class = match mem.kind {
                    MemoryKind::Usm(_) => MemClass::Usm,
                    MemoryKind::Buffer => MemClass::Buffer,
                    MemoryKind::DeviceGlobal(_) => MemClass::DeviceGlobal,
                };
                Ok(MemInfo {
                    sigil: '@',
                    bare: &mem.name,
                    class,
                    elem: mem.elem,
                    count: mem.count,
                    size: mem.size_bytes(),
                })
            }
            MemRef::Alloc(n) => {
                let node = self.node(n).ok_or(Unresolved::Dangling("node", n.index()))?;
                match node.kind {
                    NodeKind::AsyncMalloc { elem, count, .. } => Ok(MemInfo {
                        sigil: '%',
                        bare: &node.name,
                        class: MemClass::Alloc,
                        elem,
                        count,
                        size: elem.size().saturating_mul(count),
                    }),
                    _ => Err(Unresolved::NotAlloc(n)),
                }
            }
        }
    }

    /// Resolves a memory reference, reporting why it does not resolve.
    pub(super) fn resolve_reported(&self, r: MemRef, span: Span, errors: &mut Vec<VerifyError>) -> Option<MemInfo<'a>> {
        match self.resolve(r) {
            Ok(info) => Some(info),
            Err(Unresolved::Dangling(what, index)) => {
                errors.push(VerifyError::DanglingHandle { what, index, span });
                None
            }
            Err(Unresolved::NotAlloc(n)) => {
                errors.push(VerifyError::NotAnAllocation { name: self.node_name(n), span, target: self.node_span(n) });
                None
            }
        }
    }

    /// `@name` or `%name` of a memory reference, without checking what it names.
    pub(super) fn mem_name(&self, r: MemRef) -> String {
        match r {
            MemRef::Memory(h) => match self.m.memories.try_get(h) {
                Some(mem) => format!("@{}", mem.name),
                None => format!("@<memory {}>", h.index()),
            },
            MemRef::Alloc(n) => self.node_name(n),
        }
    }

    /// The edge written `%a -> %b`.
    pub(super) fn edge_name(&self, from: Handle<Node>, to: Handle<Node>) -> String {
        format!("{} -> {}", self.node_name(from), self.node_name(to))
    }

    /// `@name` of a queue.
    pub(super) fn queue_name(&self, q: Handle<crate::graph::Queue>) -> String {
        match self.g.queues.try_get(q) {
            Some(queue) => format!("@{}", queue.name),
            None => format!("@<queue {}>", q.index()),
        }
    }
}

/// Whether a vector type has a legal lane count.
pub(super) fn valid_type(ty: Type) -> bool {
    (1..=4).contains(&ty.lanes)
}

/// Reports an illegal lane count.
pub(super) fn check_type(ty: Type, span: Span, errors: &mut Vec<VerifyError>) -> bool {
    if valid_type(ty) {
        return true;
    }
    errors.push(VerifyError::InvalidType { lanes: ty.lanes, span });
    false
}

/// `1 element`, `2 elements`.
pub(super) fn plural(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
