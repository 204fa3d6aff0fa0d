//! Sections for the exact solver: cliques of the conflict graph read off one topological order.
//!
//! In *any* topological order, allocations live at the same point (malloc passed, free not
//! yet) conflict pairwise: if `a ≺ b`, `a`'s free comes before `b`'s malloc in every order.
//! So each point gives a clique, and the allocations of a clique need the sum of their sizes
//! stacked above whatever lies below them: that is MiniMalloc's section inference, here on a
//! DAG. The order chosen keeps allocations live as long as it can (mallocs as early and frees
//! as late as the DAG allows), which makes the cliques large; on a MiniMalloc instance
//! (converted by `workloads::intervals_text`) its sections are exactly the instance's time
//! sections. Only the points just before a free after a malloc are kept: the live set grows
//! between them, so the others are subsets.

use super::lifetimes::Problem;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// The sections of a problem and, per allocation, the contiguous run of sections it is in.
#[derive(Clone, Debug, Default)]
pub(super) struct Sections {
    /// Per allocation: sections `lo..hi` (empty for allocations not searched).
    pub range: Vec<(u32, u32)>,
    /// Per allocation: how long it stays live in the order (for the preorders).
    pub width: Vec<u64>,
    /// Members of section `s`: `members[offsets[s]..offsets[s + 1]]`.
    offsets: Vec<u32>,
    members: Vec<u32>,
}

impl Sections {
    /// Number of sections.
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// The allocations of section `s`.
    pub fn members(&self, s: u32) -> &[u32] {
        let lo = self.offsets.get(s as usize).copied().unwrap_or(0) as usize;
        let hi = self.offsets.get(s as usize + 1).copied().unwrap_or(0) as usize;
        self.members.get(lo..hi).unwrap_or(&[])
    }

    /// The sections of the allocations with `searched[i]`; `None` if the DAG has a cycle.
    pub fn new(problem: &Problem, searched: &[bool]) -> Option<Sections> {
        let n = problem.succ.len();
        let m = problem.allocs.len();
        let mut indeg = vec![0u32; n];
        for v in 0..n as u32 {
            for &w in problem.succ.neighbours(v) {
                *indeg.get_mut(w as usize)? += 1;
            }
        }
        // Per vertex: allocations malloc'ed and freed there (only searched ones).
        let mut at_malloc: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut at_free: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (i, a) in problem.allocs.iter().enumerate() {
            if !searched.get(i).copied().unwrap_or(false) {
                continue;
            }
            at_malloc.get_mut(a.malloc as usize)?.push(i as u32);
            if let Some(f) = a.free {
                at_free.get_mut(f as usize)?.push(i as u32);
            }
        }
        // Longest path to a sink, per vertex: a free that blocks a long path is needed soon.
        let topo = crate::analysis::topological_order(&problem.succ)?;
        let mut height = vec![0u32; n];
        for &v in topo.iter().rev() {
            let h = problem.succ.neighbours(v).iter().map(|&w| height[w as usize] + 1).max().unwrap_or(0);
            height[v as usize] = h;
        }
        // Kahn's algorithm; a vertex that frees something waits while anything else is ready,
        // then the one with the longest path after it goes first.
        let mut ready: VecDeque<u32> = VecDeque::new();
        let mut ready_free: BinaryHeap<(u32, Reverse<u32>)> = BinaryHeap::new();
        let push = |v: u32, ready: &mut VecDeque<u32>, ready_free: &mut BinaryHeap<(u32, Reverse<u32>)>| {
            if at_free[v as usize].is_empty() {
                ready.push_back(v)
            } else {
                ready_free.push((height[v as usize], Reverse(v)))
            }
        };
        for v in 0..n as u32 {
            if indeg[v as usize] == 0 {
                push(v, &mut ready, &mut ready_free);
            }
        }
        let mut sec = Sections { range: vec![(0, 0); m], width: vec![0; m], offsets: vec![0], members: Vec::new() };
        let mut start = vec![0u64; m];
        // The live set with O(1) removal.
        let mut live: Vec<u32> = Vec::new();
        let mut slot = vec![usize::MAX; m];
        let mut grew = false;
        let mut seen = 0usize;
        while let Some(v) = ready.pop_front().or_else(|| ready_free.pop().map(|(_, Reverse(v))| v)) {
            let t = seen as u64;
            seen += 1;
            let frees = &at_free[v as usize];
            if !frees.is_empty() && grew {
                sec.emit(&live);
                grew = false;
            }
            for &a in frees {
                let s = std::mem::replace(&mut slot[a as usize], usize::MAX);
                if s == usize::MAX {
                    // Freed before (or without) its malloc: a malformed problem; not searched.
                    continue;
                }
                live.swap_remove(s);
                if let Some(&moved) = live.get(s) {
                    slot[moved as usize] = s;
                }
                sec.range[a as usize].1 = sec.len() as u32;
                sec.width[a as usize] = t - start[a as usize];
            }
            for &a in &at_malloc[v as usize] {
                slot[a as usize] = live.len();
                live.push(a);
                sec.range[a as usize] = (sec.len() as u32, sec.len() as u32);
                start[a as usize] = t;
                grew = true;
            }
            for &w in problem.succ.neighbours(v) {
                let d = &mut indeg[w as usize];
                *d -= 1;
                if *d == 0 {
                    push(w, &mut ready, &mut ready_free);
                }
            }
        }
        if seen != n {
            return None;
        }
        if grew {
            sec.emit(&live);
        }
        for &a in &live {
            sec.range[a as usize].1 = sec.len() as u32;
            sec.width[a as usize] = (n as u64).saturating_sub(start[a as usize]).saturating_mul(2);
        }
        Some(sec)
    }

    fn emit(&mut self, live: &[u32]) {
        let mut members = live.to_vec();
        members.sort_unstable();
        self.members.extend(members);
        self.offsets.push(self.members.len() as u32);
    }
}
