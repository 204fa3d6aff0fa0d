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
use super::reach::{Adjacency, Search};
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
    let mut search = Search::new(n);
    for (&m, life) in &allocs {
        let Some(malloc) = Handle::<Node>::from_usize(m) else { continue };
        let alloc = gx.node_name(malloc);
        let malloc_span = gx.node_span(malloc);
        let users: Vec<usize> = life.users.iter().map(|(u, _)| u.index()).collect();
        let mut targets = users.clone();
        targets.extend(life.frees.iter().map(|f| f.index()));
        search.run(&forward, m, &targets);
        let after_malloc: Vec<bool> = life.users.iter().map(|(u, _)| search.reached(u.index())).collect();
        for (i, &f) in life.frees.iter().enumerate() {
            if i > 0 {
                errors.push(VerifyError::DoubleFree {
                    alloc: alloc.clone(),
                    span: gx.node_span(f),
                    first: gx.node_span(life.frees[0]),
                });
            }
            if !search.reached(f.index()) {
                errors.push(VerifyError::FreeNotAfterMalloc {
                    alloc: alloc.clone(),
                    span: gx.node_span(f),
                    malloc: malloc_span,
                });
            }
        }
        for (&(user, span), &ok) in life.users.iter().zip(&after_malloc) {
            if !ok {
                errors.push(VerifyError::UseBeforeMalloc {
                    alloc: alloc.clone(),
                    user: gx.node_name(user),
                    span,
                    malloc: malloc_span,
                });
            }
        }
        let Some(&free) = life.frees.first() else { continue };
        search.run(&backward, free.index(), &users);
        let late: Vec<(Handle<Node>, Span)> =
            life.users.iter().filter(|(u, _)| !search.reached(u.index())).copied().collect();
        if late.is_empty() {
            continue;
        }
        let late_ix: Vec<usize> = late.iter().map(|(u, _)| u.index()).collect();
        search.run(&forward, free.index(), &late_ix);
        for (user, span) in late {
            let (user_name, free_span) = (gx.node_name(user), gx.node_span(free));
            errors.push(if search.reached(user.index()) {
                VerifyError::UseAfterFree { alloc: alloc.clone(), user: user_name, span, free: free_span }
            } else {
                VerifyError::UseNotBeforeFree { alloc: alloc.clone(), user: user_name, span, free: free_span }
            });
        }
    }
}
