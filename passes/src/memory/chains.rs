//! Ancestry between frees and mallocs through a chain cover of the DAG (order.rs uses it
//! for the pairs of allocations whose intervals in its topological order are disjoint).
//!
//! The ancestors of a vertex on one chain form a prefix of that chain, so one number per
//! (vertex, chain) holds the whole ancestor set; the frees on a chain that are *not*
//! ancestors of a malloc form a suffix of the chain's free list, walked only as far as the
//! malloc's position. Labels are propagated for a bounded block of chains at a time.

use crate::analysis::Csr;

/// The most chains in one block of labels.
pub(super) const MAX_BLOCK: usize = 64;

/// The inputs of the label propagation.
struct Propagate<'p> {
    topo: &'p [u32],
    pred: &'p Csr,
    /// Index of each vertex in its chain.
    idx: &'p [u32],
    /// Chain of each vertex.
    chain_of: &'p [u32],
    /// Slot of each chain in the block, `u32::MAX` when not in it.
    slot_of: &'p [u32],
}

impl Propagate<'_> {
    /// Labels with `W` slots per vertex: a vertex's labels are the maximum over its
    /// predecessors' (each finished, the order being topological), and its own chain's
    /// count includes it.
    fn run<const W: usize>(&self, labels: &mut [u32]) {
        let get = |labels: &[u32], v: usize| -> [u32; W] {
            labels.get(v * W..v * W + W).and_then(|l| l.try_into().ok()).unwrap_or([0; W])
        };
        for &v in self.topo {
            let v = v as usize;
            let mut acc = [0u32; W];
            for &p in self.pred.neighbours(v as u32) {
                let l = get(labels, p as usize);
                for (a, l) in acc.iter_mut().zip(l) {
                    *a = (*a).max(l);
                }
            }
            let slot = self.chain_of.get(v).and_then(|&c| self.slot_of.get(c as usize)).copied().unwrap_or(u32::MAX);
            if let Some(a) = acc.get_mut(slot as usize) {
                *a = (*a).max(self.idx.get(v).copied().unwrap_or(0) + 1);
            }
            if let Some(dst) = labels.get_mut(v * W..v * W + W) {
                dst.copy_from_slice(&acc);
            }
        }
    }
}

/// A chain cover: per vertex its chain and index in it, per chain its length.
pub(super) struct Cover {
    /// Chain of each vertex.
    pub chain_of: Vec<u32>,
    /// Index of each vertex in its chain.
    pub idx: Vec<u32>,
    /// Number of vertices of each chain.
    pub len: Vec<u32>,
}

/// A greedy chain cover: each vertex, in topological order, extends the chain of its latest
/// predecessor (in topological position) that is still that chain's tail, or starts a chain.
/// The latest one, because on a recorded graph it is the previous command of the same
/// queue: taking an event predecessor instead would steal another queue's chain and make
/// every later command of that queue start a new one.
pub(super) fn cover(topo: &[u32], pred: &Csr, pos: &[u32]) -> Cover {
    let n = pred.len();
    let mut chain_of = vec![0u32; n];
    let mut idx = vec![0u32; n];
    let mut tails: Vec<u32> = Vec::new();
    for &v in topo {
        let mut extend: Option<(u32, u32)> = None; // (position, predecessor)
        for &p in pred.neighbours(v) {
            let c = chain_of.get(p as usize).copied().unwrap_or(0);
            let pp = pos.get(p as usize).copied().unwrap_or(0);
            if tails.get(c as usize) == Some(&p) && extend.is_none_or(|(best, _)| pp > best) {
                extend = Some((pp, p));
            }
        }
        let (c, i) = match extend {
            Some((_, p)) => {
                let c = chain_of[p as usize];
                tails[c as usize] = v;
                (c, idx[p as usize] + 1)
            }
            None => {
                tails.push(v);
                (tails.len() as u32 - 1, 0)
            }
        };
        chain_of[v as usize] = c;
        idx[v as usize] = i;
    }
    let len = tails.iter().map(|&t| idx[t as usize] + 1).collect();
    Cover { chain_of, idx, len }
}

/// The frees on one chain: (chain, (index in the chain, allocation) in chain order).
pub(super) type ChainFrees = (u32, Vec<(u32, u32)>);

/// The chains that hold a free of one of `allocs` (allocation, free vertex), each with its
/// frees in chain order, chains by number. Linear: vertices are visited in topological
/// order, so every list comes out sorted.
pub(super) fn frees_by_chain(topo: &[u32], cover: &Cover, frees: &[(u32, u32)]) -> Vec<ChainFrees> {
    let n = cover.chain_of.len();
    // The allocations freed at each vertex (a vertex may free several in a hand-built
    // problem), ascending: counted, then filled.
    let mut at = vec![0u32; n + 1];
    for &(_, f) in frees {
        if let Some(c) = at.get_mut(f as usize + 1) {
            *c += 1;
        }
    }
    for i in 0..n {
        at[i + 1] += at[i];
    }
    let mut fill = at.clone();
    let mut freed = vec![0u32; frees.len()];
    for &(a, f) in frees {
        if let Some(slot) = fill.get_mut(f as usize) {
            if let Some(t) = freed.get_mut(*slot as usize) {
                *t = a;
            }
            *slot += 1;
        }
    }
    let mut lists: Vec<Vec<(u32, u32)>> = vec![Vec::new(); cover.len.len()];
    for &v in topo {
        let (lo, hi) = (at[v as usize] as usize, at[v as usize + 1] as usize);
        for &a in freed.get(lo..hi).unwrap_or(&[]) {
            let c = cover.chain_of[v as usize] as usize;
            if let Some(list) = lists.get_mut(c) {
                list.push((cover.idx[v as usize], a));
            }
        }
    }
    lists.into_iter().enumerate().filter(|(_, l)| !l.is_empty()).map(|(c, l)| (c as u32, l)).collect()
}

/// Ancestor labels for a block of chains, and where each chain's non-ancestor frees begin.
pub(super) struct Block<'c> {
    group: &'c [ChainFrees],
    /// Labels per vertex (at least the number of chains).
    stride: usize,
    /// `labels[v * stride + i]`: number of vertices of chain `group[i]` that are ancestors-or-self
    /// of `v`.
    labels: Vec<u32>,
    /// `first_free[base[i] + k]`: position in `group[i]`'s free list of its first free at
    /// chain index `k` or later (a table instead of a binary search per allocation).
    base: Vec<usize>,
    first_free: Vec<u32>,
}

impl<'c> Block<'c> {
    /// Propagates the labels of the chains of `group` over the DAG. `slot_of` (one entry
    /// per chain, all `u32::MAX`) is scratch, returned as it came.
    pub(super) fn new(
        group: &'c [ChainFrees],
        topo: &[u32],
        pred: &Csr,
        cover: &Cover,
        slot_of: &mut [u32],
    ) -> Block<'c> {
        let n = pred.len();
        let w = group.len();
        for (i, (c, _)) in group.iter().enumerate() {
            if let Some(s) = slot_of.get_mut(*c as usize) {
                *s = i as u32;
            }
        }
        // The stride is a power of two so that each vertex's labels are a fixed-size array
        // (copied and compared without calls to memcpy); the padding stays zero.
        let stride = w.next_power_of_two().clamp(1, MAX_BLOCK);
        let mut labels = vec![0u32; n * stride];
        let ctx = Propagate { topo, pred, idx: &cover.idx, chain_of: &cover.chain_of, slot_of };
        match stride {
            1 => ctx.run::<1>(&mut labels),
            2 => ctx.run::<2>(&mut labels),
            4 => ctx.run::<4>(&mut labels),
            8 => ctx.run::<8>(&mut labels),
            16 => ctx.run::<16>(&mut labels),
            32 => ctx.run::<32>(&mut labels),
            _ => ctx.run::<MAX_BLOCK>(&mut labels),
        }
        for (c, _) in group {
            if let Some(s) = slot_of.get_mut(*c as usize) {
                *s = u32::MAX;
            }
        }
        let mut base = Vec::with_capacity(w);
        let mut first_free: Vec<u32> = Vec::new();
        for (c, frees) in group {
            base.push(first_free.len());
            let len = cover.len.get(*c as usize).copied().unwrap_or(0) as usize;
            let mut j = 0usize;
            for k in 0..=len {
                while frees.get(j).is_some_and(|&(idx, _)| (idx as usize) < k) {
                    j += 1;
                }
                first_free.push(j as u32);
            }
        }
        Block { group, stride, labels, base, first_free }
    }

    /// Appends to `out` the allocations freed on this block's chains that are freed before
    /// position `sb` (the start of the allocation whose malloc is `malloc`) in the
    /// topological order but whose free is not an ancestor of `malloc`: every step of the
    /// walk yields a conflict.
    pub(super) fn partners(&self, malloc: u32, sb: u32, end: &[u32], out: &mut Vec<u32>) {
        let w = self.stride;
        let m = malloc as usize;
        for (i, (_, frees)) in self.group.iter().enumerate() {
            let prefix = self.labels.get(m * w + i).copied().unwrap_or(0) as usize;
            let first = self
                .base
                .get(i)
                .and_then(|&b| self.first_free.get(b + prefix))
                .map_or_else(|| frees.partition_point(|&(idx, _)| (idx as usize) < prefix), |&f| f as usize);
            for &(_, a) in frees.get(first..).unwrap_or(&[]) {
                if end.get(a as usize).is_none_or(|&ea| ea >= sb) {
                    break;
                }
                out.push(a);
            }
        }
    }
}
