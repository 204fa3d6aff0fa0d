//! Graph-owned allocations (000 §8.4.3): every use of an allocation happens after its
//! `async_malloc` and before its `async_free` on every path, the free follows the malloc,
//! and an allocation is freed at most once.
//!
//! "On every path" is reachability in the happens-before relation: the malloc must reach
//! the user, and the user must reach the free. A use is any command operand naming the
//! allocation, a dynamic parameter holding it that is registered on the node, any
//! alternative of a `dynamic` node's command group, and host task or native access lists.

use super::ctx::Gx;
use super::error::VerifyError;
use super::reach::Adjacency;
use super::uses::node_uses;
use crate::arena::Handle;
use crate::graph::{MemRef, Node, NodeKind};
use crate::span::Span;
use std::collections::BTreeMap;

/// What one allocation is used and freed by.
#[derive(Default)]
struct Lifetime {
    /// Using nodes, each with its first use, in creation order.
    users: Vec<(Handle<Node>, Span)>,
    /// `async_free` nodes, in creation order.
    frees: Vec<Handle<Node>>,
}

/// Checks every graph allocation of the graph.
pub(super) fn check(gx: &Gx<'_>, errors: &mut Vec<VerifyError>) {
    let g = gx.g;
    let mut allocs: BTreeMap<usize, Lifetime> = BTreeMap::new();
    for (n, node) in g.nodes.iter() {
        match &node.kind {
            NodeKind::AsyncMalloc { .. } => {
                allocs.entry(n.index()).or_default();
            }
            NodeKind::AsyncFree { alloc } if gx.is_malloc(*alloc) => {
                allocs.entry(alloc.index()).or_default().frees.push(n);
            }
            _ => {
                let mut seen = std::collections::BTreeSet::new();
                for u in node_uses(gx, n, node) {
                    if let MemRef::Alloc(a) = u.mem {
                        if gx.is_malloc(a) && seen.insert(a.index()) {
                            allocs.entry(a.index()).or_default().users.push((n, u.span));
                        }
                    }
                }
            }
        }
    }
    if allocs.values().all(|l| l.users.is_empty() && l.frees.is_empty()) {
        return;
    }
    let n = g.nodes.len();
    let pairs: Vec<(usize, usize)> = g.edges.iter().map(|(_, e)| (e.from.index(), e.to.index())).collect();
    let forward = Adjacency::new(n, &pairs);
    let backward = Adjacency::reversed(n, &pairs);
    for (&m, life) in &allocs {
        let Some(malloc) = Handle::<Node>::from_usize(m) else { continue };
        let alloc = gx.node_name(malloc);
        let malloc_span = gx.node_span(malloc);
        let after_malloc = forward.reach(m);
        let reached = |v: &[bool], h: Handle<Node>| v.get(h.index()).copied().unwrap_or(false);
        for (i, &f) in life.frees.iter().enumerate() {
            if i > 0 {
                errors.push(VerifyError::DoubleFree {
                    alloc: alloc.clone(),
                    span: gx.node_span(f),
                    first: gx.node_span(life.frees[0]),
                });
            }
            if !reached(&after_malloc, f) {
                errors.push(VerifyError::FreeNotAfterMalloc {
                    alloc: alloc.clone(),
                    span: gx.node_span(f),
                    malloc: malloc_span,
                });
            }
        }
        let free = life.frees.first().copied();
        let (after_free, before_free) = match free {
            Some(f) => (forward.reach(f.index()), backward.reach(f.index())),
            None => (Vec::new(), Vec::new()),
        };
        for &(user, span) in &life.users {
            if !reached(&after_malloc, user) {
                errors.push(VerifyError::UseBeforeMalloc {
                    alloc: alloc.clone(),
                    user: gx.node_name(user),
                    span,
                    malloc: malloc_span,
                });
            }
            let Some(f) = free else { continue };
            if reached(&after_free, user) {
                errors.push(VerifyError::UseAfterFree {
                    alloc: alloc.clone(),
                    user: gx.node_name(user),
                    span,
                    free: gx.node_span(f),
                });
            } else if !reached(&before_free, user) {
                errors.push(VerifyError::UseNotBeforeFree {
                    alloc: alloc.clone(),
                    user: gx.node_name(user),
                    span,
                    free: gx.node_span(f),
                });
            }
        }
    }
}
