//! Graph-owned allocations (000 §8.4.3): every use of an allocation happens after its
//! `async_malloc` and before its `async_free` on every path, the free follows the malloc,
//! and an allocation is freed at most once.
//!
//! "On every path" is reachability in the happens-before relation: the malloc must reach
//! the user, and the user must reach the free. A use is any command operand naming the
//! allocation, a dynamic parameter holding it that is registered on the node, any
//! alternative of a `dynamic` node's command group, and host task or native access lists.
//!
//! # Cost
//!
//! The questions are answered exactly, together, over the graph's topological ranks
//! (topo.rs, batch.rs): one forward job per allocation (does the malloc reach each user
//! and free?), one backward job (does each user reach the first free?), and, only for
//! users that do not, one forward job from the free to tell a use after free (E0245) from
//! an unordered one (E0246). A job only looks at ranks between its source and its farthest
//! target. Collecting the uses is O(nodes + operands).
//!
//! When allocations live over short stretches of the graph, as temporaries do, the total
//! is near-linear: O(nodes x size classes + edges), where a size class is a power of two
//! of lifetime length (in ranks). When many allocations each live across most of the
//! graph, it is O(allocations / 64 x (nodes + edges)) in the worst case: jobs share
//! 64-bit sweeps, but the work still grows with the product.

use super::batch::{Jobs, Sweep};
use super::ctx::Gx;
use super::error::VerifyError;
use super::topo::Topo;
use super::uses::{for_each_node_use, Use};
use crate::arena::Handle;
use crate::graph::{MemRef, Node, NodeKind};

/// What one allocation is used and freed by.
struct Lifetime {
    /// The `async_malloc` node.
    malloc: Handle<Node>,
    /// Using nodes, each with its first use, in creation order.
    users: Users,
    /// `async_free` nodes, in creation order.
    frees: Vec<Handle<Node>>,
}

/// Nodes using an allocation, each with its first use of it.
type Users = Vec<(Handle<Node>, Use)>;

/// No lifetime (in `slot`), no user yet (in `last_user`).
const NONE: u32 = u32::MAX;

/// Every allocation of the graph with its users and frees, in malloc creation order.
fn lifetimes(gx: &Gx<'_>) -> Vec<Lifetime> {
    let g = gx.g;
    // slot[i]: the index in `lives` of the allocation node `i` makes.
    let mut slot = vec![NONE; g.nodes.len()];
    let mut lives: Vec<Lifetime> = Vec::new();
    // last_user[l]: the last node recorded as a user of `lives[l]`, so that a node naming
    // an allocation several times counts once, at its first use.
    let mut last_user: Vec<u32> = Vec::new();
    let mut life = |m: Handle<Node>, lives: &mut Vec<Lifetime>, last_user: &mut Vec<u32>| -> Option<usize> {
        let s = slot.get_mut(m.index())?;
        if *s == NONE {
            *s = lives.len() as u32;
            lives.push(Lifetime { malloc: m, users: Vec::new(), frees: Vec::new() });
            last_user.push(NONE);
        }
        Some(*s as usize)
    };
    for (n, node) in g.nodes.iter() {
        match &node.kind {
            NodeKind::AsyncMalloc { .. } => {
                life(n, &mut lives, &mut last_user);
            }
            NodeKind::AsyncFree { alloc } if gx.is_malloc(*alloc) => {
                if let Some(l) = life(*alloc, &mut lives, &mut last_user) {
                    lives[l].frees.push(n);
                }
            }
            _ => for_each_node_use(gx, n, node, &mut |u| {
                let MemRef::Alloc(a) = u.mem else { return };
                if !gx.is_malloc(a) {
                    return;
                }
                let Some(l) = life(a, &mut lives, &mut last_user) else { return };
                if last_user[l] != n.index() as u32 {
                    last_user[l] = n.index() as u32;
                    lives[l].users.push((n, u));
                }
            }),
        }
    }
    // A free or use may name a malloc created after it (reported elsewhere).
    lives.sort_by_key(|l| l.malloc.index());
    lives
}

/// Checks every graph allocation of the graph.
pub(super) fn check(gx: &Gx<'_>, topo: &Topo, errors: &mut Vec<VerifyError>) {
    let lives = lifetimes(gx);
    if lives.iter().all(|l| l.users.is_empty() && l.frees.is_empty()) {
        return;
    }
    let forward = Sweep::forward(topo);
    // Does the malloc reach each user, then each free? Job `i` is allocation `i`'s.
    let mut jobs = Jobs::default();
    for l in &lives {
        let targets = l.users.iter().map(|u| u.0.index()).chain(l.frees.iter().map(|f| f.index()));
        jobs.push(l.malloc.index(), targets);
    }
    let (reached, _) = forward.reach(&jobs);
    let after_malloc = |i: usize| reached.get(jobs.range(i)).unwrap_or(&[]);
    // Does each user reach the first free? Searched backwards from the free.
    let mut back = Jobs::default();
    // back_job[i]: allocation `i`'s job in `back`, if it is freed.
    let mut back_job: Vec<Option<usize>> = vec![None; lives.len()];
    for (i, l) in lives.iter().enumerate() {
        if let Some(f) = l.frees.first() {
            back_job[i] = Some(back.push(f.index(), l.users.iter().map(|u| u.0.index())));
        }
    }
    let before_free = if back.len() > 0 {
        let pred = topo.succ.transpose();
        Sweep::backward(topo, &pred).reach(&back).0
    } else {
        Vec::new()
    };
    // Users that do not reach the free: does the free reach them (use after free)?
    let mut late = Jobs::default();
    // late_users[i]: allocation `i`'s job in `late` and its users there.
    let mut late_users: Vec<Option<(usize, Users)>> = vec![None; lives.len()];
    for (i, l) in lives.iter().enumerate() {
        let (Some(b), Some(&free)) = (back_job[i], l.frees.first()) else { continue };
        let ok = before_free.get(back.range(b)).unwrap_or(&[]);
        let users: Users = l.users.iter().zip(ok).filter(|(_, &ok)| !ok).map(|(u, _)| *u).collect();
        if !users.is_empty() {
            late_users[i] = Some((late.push(free.index(), users.iter().map(|u| u.0.index())), users));
        }
    }
    let (after_free, _) = forward.reach(&late);

    for (i, life) in lives.iter().enumerate() {
        let reached = after_malloc(i);
        // Only for diagnostics: most allocations have none.
        let alloc = || gx.node_name(life.malloc);
        let malloc_span = gx.node_span(life.malloc);
        let (users_ok, frees_ok) = reached.split_at(life.users.len().min(reached.len()));
        for (j, (&f, &ok)) in life.frees.iter().zip(frees_ok).enumerate() {
            if j > 0 {
                errors.push(VerifyError::DoubleFree {
                    alloc: alloc(),
                    span: gx.node_span(f),
                    first: gx.node_span(life.frees[0]),
                });
            }
            if !ok {
                errors.push(VerifyError::FreeNotAfterMalloc {
                    alloc: alloc(),
                    span: gx.node_span(f),
                    malloc: malloc_span,
                });
            }
        }
        for (&(user, u), &ok) in life.users.iter().zip(users_ok) {
            if !ok {
                errors.push(VerifyError::UseBeforeMalloc {
                    alloc: alloc(),
                    user: gx.node_name(user),
                    span: u.span(gx),
                    malloc: malloc_span,
                });
            }
        }
        let (Some((job, users)), Some(&free)) = (&late_users[i], life.frees.first()) else { continue };
        let free_span = gx.node_span(free);
        let after = after_free.get(late.range(*job)).unwrap_or(&[]);
        for (&(user, u), &after) in users.iter().zip(after) {
            let (user, span) = (gx.node_name(user), u.span(gx));
            errors.push(if after {
                VerifyError::UseAfterFree { alloc: alloc(), user, span, free: free_span }
            } else {
                VerifyError::UseNotBeforeFree { alloc: alloc(), user, span, free: free_span }
            });
        }
    }
}
