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

/// Every allocation of a graph with what uses and frees it, in flat lists (10^4
/// allocations cost no allocation each).
struct Lifetimes {
    /// The `async_malloc` nodes, in creation order: allocation `i` is `mallocs[i]`.
    mallocs: Vec<Handle<Node>>,
    /// Nodes using allocation `i`, each once with its first use, in creation order:
    /// `users[user_start[i]..user_start[i + 1]]`.
    users: Vec<(Handle<Node>, Use)>,
    user_start: Vec<usize>,
    /// `async_free` nodes of allocation `i`, in creation order, likewise.
    frees: Vec<Handle<Node>>,
    free_start: Vec<usize>,
}

impl Lifetimes {
    fn users(&self, i: usize) -> &[(Handle<Node>, Use)] {
        range(&self.users, &self.user_start, i)
    }

    fn frees(&self, i: usize) -> &[Handle<Node>] {
        range(&self.frees, &self.free_start, i)
    }
}

/// Group `i` of a list grouped by `start` offsets.
fn range<'a, T>(list: &'a [T], start: &[usize], i: usize) -> &'a [T] {
    match (start.get(i), start.get(i + 1)) {
        (Some(&a), Some(&b)) => list.get(a..b).unwrap_or(&[]),
        _ => &[],
    }
}

/// `items` tagged with their group, stably grouped: the items and where each of `groups`
/// groups starts.
fn group<T: Copy>(groups: usize, items: &[(u32, T)]) -> (Vec<T>, Vec<usize>) {
    let mut start = vec![0usize; groups + 1];
    for &(g, _) in items {
        start[g as usize + 1] += 1;
    }
    for i in 0..groups {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut out = Vec::with_capacity(items.len());
    // Every slot is written below; a copy of the first item fills them meanwhile.
    if let Some(&(_, first)) = items.first() {
        out.resize(items.len(), first);
    }
    for &(g, item) in items {
        out[fill[g as usize]] = item;
        fill[g as usize] += 1;
    }
    (out, start)
}

/// No allocation (in `slot`), no user yet (in `last_user`).
const NONE: u32 = u32::MAX;

/// Gathers every allocation of a graph with its users and frees, one node at a time, so
/// that the walk over the nodes can be shared with the other per-node checks (graph.rs):
/// 10^5 nodes cost their cache misses once.
pub(super) struct Collector {
    /// slot[i]: the allocation made by node `i`, numbered as first met (a free or use may
    /// name a malloc created after it, which is reported elsewhere).
    slot: Vec<u32>,
    mallocs: Vec<Handle<Node>>,
    /// last_user[a]: the last node recorded as a user of allocation `a`, so that a node
    /// naming an allocation several times counts once, at its first use.
    last_user: Vec<u32>,
    users: Vec<(u32, (Handle<Node>, Use))>,
    frees: Vec<(u32, Handle<Node>)>,
}

impl Collector {
    /// A collector for a graph of `nodes` nodes.
    pub(super) fn new(nodes: usize) -> Collector {
        Collector {
            slot: vec![NONE; nodes],
            mallocs: Vec::new(),
            last_user: Vec::new(),
            users: Vec::new(),
            frees: Vec::new(),
        }
    }

    /// The allocation made by `m`, numbered on first sight.
    fn alloc_of(&mut self, m: Handle<Node>) -> Option<u32> {
        let s = self.slot.get_mut(m.index())?;
        if *s == NONE {
            *s = self.mallocs.len() as u32;
            self.mallocs.push(m);
            self.last_user.push(NONE);
        }
        Some(*s)
    }

    /// Records what node `n` allocates, frees or uses. Nodes come in creation order.
    pub(super) fn visit(&mut self, gx: &Gx<'_>, n: Handle<Node>, node: &Node) {
        match &node.kind {
            NodeKind::AsyncMalloc { .. } => {
                self.alloc_of(n);
            }
            NodeKind::AsyncFree { alloc } if gx.is_malloc(*alloc) => {
                if let Some(a) = self.alloc_of(*alloc) {
                    self.frees.push((a, n));
                }
            }
            _ => for_each_node_use(gx, n, node, &mut |u| {
                let MemRef::Alloc(m) = u.mem else { return };
                if !gx.is_malloc(m) {
                    return;
                }
                let Some(a) = self.alloc_of(m) else { return };
                if let Some(last) = self.last_user.get_mut(a as usize) {
                    if *last != n.index() as u32 {
                        *last = n.index() as u32;
                        self.users.push((a, (n, u)));
                    }
                }
            }),
        }
    }

    /// The lifetimes, allocations numbered in malloc creation order.
    fn finish(self) -> Lifetimes {
        let Collector { mut mallocs, mut users, mut frees, .. } = self;
        if !mallocs.is_sorted_by_key(|m| m.index()) {
            let mut by_malloc: Vec<u32> = (0..mallocs.len() as u32).collect();
            by_malloc.sort_by_key(|&a| mallocs[a as usize].index());
            let mut renumber = vec![0u32; mallocs.len()];
            for (new, &old) in by_malloc.iter().enumerate() {
                renumber[old as usize] = new as u32;
            }
            mallocs.sort_by_key(|m| m.index());
            for (a, _) in users.iter_mut() {
                *a = renumber[*a as usize];
            }
            for (a, _) in frees.iter_mut() {
                *a = renumber[*a as usize];
            }
        }
        let (users, user_start) = group(mallocs.len(), &users);
        let (frees, free_start) = group(mallocs.len(), &frees);
        Lifetimes { mallocs, users, user_start, frees, free_start }
    }
}

/// Checks every graph allocation of the graph, given what `uses` collected from every node.
pub(super) fn check(gx: &Gx<'_>, uses: Collector, topo: &Topo, errors: &mut Vec<VerifyError>) {
    let lives = uses.finish();
    if lives.users.is_empty() && lives.frees.is_empty() {
        return;
    }
    let count = lives.mallocs.len();
    let forward = Sweep::forward(topo);
    // Does the malloc reach each user, then each free? Job `i` is allocation `i`'s.
    let mut jobs = Jobs::default();
    for (i, m) in lives.mallocs.iter().enumerate() {
        let targets = lives.users(i).iter().map(|u| u.0.index()).chain(lives.frees(i).iter().map(|f| f.index()));
        jobs.push(m.index(), targets);
    }
    let (reached, _) = forward.reach(&jobs);
    // Does each user reach the first free? Searched backwards from the free.
    let mut back = Jobs::default();
    // back_job[i]: allocation `i`'s job in `back`, if it is freed.
    let mut back_job: Vec<Option<usize>> = vec![None; count];
    for (i, job) in back_job.iter_mut().enumerate() {
        if let Some(f) = lives.frees(i).first() {
            *job = Some(back.push(f.index(), lives.users(i).iter().map(|u| u.0.index())));
        }
    }
    let before_free = if back.len() > 0 {
        let pred = topo.succ.transpose();
        Sweep::backward(topo, &pred).reach(&back).0
    } else {
        Vec::new()
    };
    // Users that do not reach the free: does the free reach them (use after free)? Their
    // list lines up with the jobs' targets.
    let mut late = Jobs::default();
    let mut late_users: Vec<(Handle<Node>, Use)> = Vec::new();
    let mut late_job: Vec<Option<usize>> = vec![None; count];
    for (i, job) in late_job.iter_mut().enumerate() {
        let (Some(b), Some(&free)) = (back_job[i], lives.frees(i).first()) else { continue };
        let ok = before_free.get(back.range(b)).unwrap_or(&[]);
        let before = late_users.len();
        late_users.extend(lives.users(i).iter().zip(ok).filter(|(_, &ok)| !ok).map(|(u, _)| *u));
        if late_users.len() > before {
            *job = Some(late.push(free.index(), late_users[before..].iter().map(|u| u.0.index())));
        }
    }
    let (after_free, _) = forward.reach(&late);
    let mut pred: Option<super::topo::Csr> = None;
    let mut follow = Follow::new(topo.succ.len(), 16 * (topo.succ.len() + topo.succ.all_targets().len()) + 4096);

    for (i, &malloc) in lives.mallocs.iter().enumerate() {
        let (users, frees) = (lives.users(i), lives.frees(i));
        // Only for diagnostics: most allocations have none.
        let alloc = || gx.node_name(malloc);
        let malloc_span = gx.node_span(malloc);
        let reached = reached.get(jobs.range(i)).unwrap_or(&[]);
        let (users_ok, frees_ok) = reached.split_at(users.len().min(reached.len()));
        // One missing edge shows up several times: a user not ordered after the malloc
        // leaves every node after it unordered too (later users, the free). Only the first
        // ones are reported: the edge that orders them orders the rest.
        let early = users.iter().zip(users_ok).filter(|(_, &ok)| !ok).map(|(u, _)| u.0.index());
        let follows_early = follow.after(&topo.succ, early);
        let after_early = |n: usize| follows_early.as_ref().is_some_and(|r| r.binary_search(&n).is_ok());
        // Users ordered after the malloc but not before the free (E0246, not E0245).
        let late_here: Vec<(Handle<Node>, Use, bool)> = match (late_job[i], frees.first()) {
            (Some(job), Some(_)) => {
                let range = late.range(job);
                let after = after_free.get(range.clone()).unwrap_or(&[]);
                late_users.get(range).unwrap_or(&[]).iter().zip(after).map(|(&(n, u), &a)| (n, u, a)).collect()
            }
            _ => Vec::new(),
        };
        let unordered = late_here.iter().filter(|l| !l.2).map(|l| l.0.index());
        let reaches_unordered = if late_here.iter().filter(|l| !l.2).nth(1).is_some() {
            let pred = pred.get_or_insert_with(|| topo.succ.transpose());
            follow.after(pred, unordered)
        } else {
            None
        };
        // An edge from an unordered user that the malloc reaches to the free also orders the
        // free after the malloc.
        let reached_ok = |n: Handle<Node>| users.iter().zip(users_ok).any(|(u, &ok)| ok && u.0 == n);
        let free_fixed_by_user = late_here.iter().any(|l| !l.2 && reached_ok(l.0));
        for (j, (&f, &ok)) in frees.iter().zip(frees_ok).enumerate() {
            if j > 0 {
                errors.push(VerifyError::DoubleFree {
                    alloc: alloc(),
                    span: gx.node_span(f),
                    first: gx.node_span(frees[0]),
                });
            }
            let cascaded = after_early(f.index()) || (j == 0 && free_fixed_by_user);
            if !ok && !cascaded {
                errors.push(VerifyError::FreeNotAfterMalloc {
                    alloc: alloc(),
                    span: gx.node_span(f),
                    malloc: malloc_span,
                });
            }
        }
        for (&(user, u), &ok) in users.iter().zip(users_ok) {
            if !ok && !after_early(user.index()) {
                errors.push(VerifyError::UseBeforeMalloc {
                    alloc: alloc(),
                    user: gx.node_name(user),
                    span: u.span(gx),
                    malloc: malloc_span,
                });
            }
        }
        let Some(&free) = frees.first() else { continue };
        let free_span = gx.node_span(free);
        for &(user, u, after) in &late_here {
            // A user that runs before another unordered one is ordered by that one's edge.
            if !after && reaches_unordered.as_ref().is_some_and(|r| r.binary_search(&user.index()).is_ok()) {
                continue;
            }
            let (user, span) = (gx.node_name(user), u.span(gx));
            errors.push(if after {
                VerifyError::UseAfterFree { alloc: alloc(), user, span, free: free_span }
            } else {
                VerifyError::UseNotBeforeFree { alloc: alloc(), user, span, free: free_span }
            });
        }
    }
}

/// Which nodes follow a set of nodes (by one edge or more), for telling a first missing
/// edge from what it leaves unordered downstream. Each search costs the nodes and edges it
/// visits, out of a budget for the whole graph (a constant number of sweeps): past it,
/// nothing is called a consequence and every error is reported, so a graph with many broken
/// allocations stays near-linear to verify.
struct Follow {
    /// `seen[v] == stamp`: reached in the current search.
    seen: Vec<u32>,
    stamp: u32,
    budget: usize,
}

impl Follow {
    fn new(nodes: usize, budget: usize) -> Follow {
        Follow { seen: vec![0; nodes], stamp: 0, budget }
    }

    /// The nodes reached from `from` through one or more edges of `next` (successors, or
    /// predecessors for "reaches"), or `None` when there is nothing to search or the budget
    /// is spent. Only called when an allocation has errors.
    fn after(&mut self, next: &super::topo::Csr, from: impl Iterator<Item = usize>) -> Option<Vec<usize>> {
        let mut stack: Vec<usize> = Vec::new();
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.seen.iter_mut().for_each(|s| *s = 0);
            self.stamp = 1;
        }
        for v in from {
            stack.extend(next.next(v).iter().map(|&w| w as usize));
        }
        if stack.is_empty() || self.budget == 0 {
            return None;
        }
        let mut reached = Vec::new();
        while let Some(v) = stack.pop() {
            let Some(slot) = self.seen.get_mut(v) else { continue };
            if *slot == self.stamp {
                continue;
            }
            *slot = self.stamp;
            reached.push(v);
            let succ = next.next(v);
            self.budget = self.budget.saturating_sub(1 + succ.len());
            if self.budget == 0 {
                return None;
            }
            stack.extend(succ.iter().map(|&w| w as usize));
        }
        reached.sort_unstable();
        Some(reached)
    }
}
