//! Ancestry between frees and mallocs through a chain cover of the DAG (order.rs uses it
//! for the pairs of allocations whose intervals in its topological order are disjoint).
//!
//! The ancestors of a vertex on one chain form a prefix of that chain, so one number per
//! (vertex, chain) holds the whole ancestor set; the frees on a chain that are *not*
//! ancestors of a malloc form a suffix of the chain's free list, walked only as far as the
//! malloc's position. Labels are propagated for a bounded block of chains at a time.
//!
//! The topological order is first cut into *sections* ([`Sections`]): a position is a cut
//! when every vertex before it is an ancestor of the vertex there and every vertex after it
//! a descendant (the join of a recorded graph that waits for everything, then forks again).
//! A free in an earlier section is an ancestor of every malloc in a later one, and a path
//! between two vertices of one section stays inside it, so chains never cross a cut and
//! labels are propagated, and walked, per section only: a chain of short sections costs
//! O(vertices + edges) instead of O(vertices × chains).

use crate::analysis::Csr;
use std::ops::Range;

/// The most chains in one block of labels.
pub(super) const MAX_BLOCK: usize = 64;

/// The sections of one topological order (see the module documentation).
pub(super) struct Sections {
    /// Section of each position of the order.
    of: Vec<u32>,
    /// First position of each section, then the number of positions.
    starts: Vec<u32>,
}

impl Sections {
    /// The sections of order `topo` (`pos`: the position of each vertex) of the DAG `succ`.
    /// Position `i` is a cut when every vertex before it has a successor at `i` or earlier
    /// (then, by induction downwards, every one reaches the vertex at `i`) and every vertex
    /// after it a predecessor at `i` or later. Linear.
    pub(super) fn new(topo: &[u32], pos: &[u32], succ: &Csr) -> Sections {
        let n = topo.len();
        // Per position: the earliest successor's position and one past the latest
        // predecessor's (0: none).
        let mut first_succ = vec![u32::MAX; n];
        let mut last_pred = vec![0u32; n];
        for (pu, &u) in topo.iter().enumerate() {
            for &w in succ.neighbours(u) {
                let Some(&pw) = pos.get(w as usize) else { continue };
                if let Some(f) = first_succ.get_mut(pu) {
                    *f = (*f).min(pw);
                }
                if let Some(l) = last_pred.get_mut(pw as usize) {
                    *l = (*l).max(pu as u32 + 1);
                }
            }
        }
        // after[i]: every vertex after position i has a predecessor at i or later.
        let mut after = vec![false; n];
        let mut low = u32::MAX;
        for i in (0..n).rev() {
            after[i] = low > i as u32;
            low = low.min(last_pred[i]);
        }
        let mut of = vec![0u32; n];
        let mut starts = vec![0u32];
        let mut high = 0u32;
        for i in 0..n {
            if i > 0 && high <= i as u32 && after[i] {
                starts.push(i as u32);
            }
            of[i] = starts.len() as u32 - 1;
            high = high.max(first_succ[i]);
        }
        starts.push(n as u32);
        Sections { of, starts }
    }

    /// Section of position `p`.
    pub(super) fn of(&self, p: u32) -> u32 {
        self.of.get(p as usize).copied().unwrap_or(0)
    }

    /// The positions of section `s`.
    fn range(&self, s: u32) -> Range<usize> {
        let lo = self.starts.get(s as usize).copied().unwrap_or(0) as usize;
        let hi = self.starts.get(s as usize + 1).copied().unwrap_or(0) as usize;
        lo..hi.max(lo)
    }
}

/// The inputs of the label propagation.
struct Propagate<'p> {
    topo: &'p [u32],
    pred: &'p Csr,
    /// Position of each vertex in `topo`.
    pos: &'p [u32],
    /// Index of each vertex in its chain.
    idx: &'p [u32],
    /// Chain of each vertex.
    chain_of: &'p [u32],
    /// Slot of each chain in the block, `u32::MAX` when not in it.
    slot_of: &'p [u32],
}

impl Propagate<'_> {
    /// Labels with `W` slots per position of `range` (one section; `labels[(p - lo) * W..]`
    /// for position `p`): a vertex's labels are the maximum over its predecessors' in the
    /// section (each finished, the order being topological; the block's chains have no
    /// vertex in earlier sections), and its own chain's count includes it.
    fn run<const W: usize>(&self, range: Range<usize>, labels: &mut [u32]) {
        let lo = range.start;
        let get = |labels: &[u32], p: usize| -> [u32; W] {
            labels.get(p * W..p * W + W).and_then(|l| l.try_into().ok()).unwrap_or([0; W])
        };
        for (k, &v) in self.topo.get(range).unwrap_or(&[]).iter().enumerate() {
            let v = v as usize;
            let mut acc = [0u32; W];
            for &p in self.pred.neighbours(v as u32) {
                let pp = self.pos.get(p as usize).copied().unwrap_or(0) as usize;
                if pp < lo {
                    continue;
                }
                let l = get(labels, pp - lo);
                for (a, l) in acc.iter_mut().zip(l) {
                    *a = (*a).max(l);
                }
            }
            let slot = self.chain_of.get(v).and_then(|&c| self.slot_of.get(c as usize)).copied().unwrap_or(u32::MAX);
            if let Some(a) = acc.get_mut(slot as usize) {
                *a = (*a).max(self.idx.get(v).copied().unwrap_or(0) + 1);
            }
            if let Some(dst) = labels.get_mut(k * W..k * W + W) {
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
/// every later command of that queue start a new one. Chains stay inside one section: a
/// vertex never extends a chain of an earlier one.
pub(super) fn cover(topo: &[u32], pred: &Csr, pos: &[u32], sections: &Sections) -> Cover {
    let n = pred.len();
    let mut chain_of = vec![0u32; n];
    let mut idx = vec![0u32; n];
    let mut tails: Vec<u32> = Vec::new();
    for &v in topo {
        let mut extend: Option<(u32, u32)> = None; // (position, predecessor)
        let section = sections.of(pos.get(v as usize).copied().unwrap_or(0));
        for &p in pred.neighbours(v) {
            let c = chain_of.get(p as usize).copied().unwrap_or(0);
            let pp = pos.get(p as usize).copied().unwrap_or(0);
            if tails.get(c as usize) == Some(&p)
                && sections.of(pp) == section
                && extend.is_none_or(|(best, _)| pp > best)
            {
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

/// The chains holding frees grouped into layers: layer `l` holds, for every section, that
/// section's chains `l * block..(l + 1) * block` (chains by number, so each section's are
/// contiguous: a chain's vertices lie in one section, numbered in order of their first).
/// `end`: the position of each allocation's free.
pub(super) fn layers<'c>(
    chains: &'c [ChainFrees],
    block: usize,
    sections: &Sections,
    end: &[u32],
) -> Vec<Vec<(u32, &'c [ChainFrees])>> {
    let block = block.max(1);
    let section = |c: &ChainFrees| c.1.first().and_then(|&(_, a)| end.get(a as usize)).map_or(0, |&p| sections.of(p));
    let mut layers: Vec<Vec<(u32, &[ChainFrees])>> = Vec::new();
    let mut lo = 0;
    while lo < chains.len() {
        let s = section(&chains[lo]);
        let hi = lo + chains[lo..].iter().take_while(|c| section(c) == s).count();
        for (l, group) in chains[lo..hi].chunks(block).enumerate() {
            if layers.len() <= l {
                layers.push(Vec::new());
            }
            layers[l].push((s, group));
        }
        lo = hi;
    }
    layers
}

/// Ancestor labels for one layer of chains (at most one block per section), and where each
/// chain's non-ancestor frees begin.
pub(super) struct Block<'c> {
    parts: Vec<Part<'c>>,
    sections: &'c Sections,
    /// Each part's labels: `labels[part.at + (p - lo) * part.stride + i]` is the number of
    /// vertices of chain `part.group[i]` that are ancestors-or-self of the vertex at
    /// position `p` of the section.
    labels: Vec<u32>,
    /// `first_free[bases[part.chains + i] + k]`: position in `part.group[i]`'s free list of
    /// its first free at chain index `k` or later (a table instead of a binary search per
    /// allocation).
    bases: Vec<usize>,
    first_free: Vec<u32>,
}

/// The chains of one section in a [`Block`].
struct Part<'c> {
    section: u32,
    group: &'c [ChainFrees],
    /// First position of the section.
    lo: usize,
    /// Labels per position (a power of two, at least the number of chains).
    stride: usize,
    /// Where the part's labels start.
    at: usize,
    /// Where its chains' entries of `bases` start.
    chains: usize,
}

impl<'c> Block<'c> {
    /// Propagates the labels of the chains of `layer` (section, chains of that section;
    /// sections increasing) over their sections. `slot_of` (one entry per chain, all
    /// `u32::MAX`) is scratch, returned as it came.
    pub(super) fn new(
        layer: &[(u32, &'c [ChainFrees])],
        topo: &[u32],
        pred: &Csr,
        pos: &[u32],
        cover: &Cover,
        sections: &'c Sections,
        slot_of: &mut [u32],
    ) -> Block<'c> {
        let mut block =
            Block { parts: Vec::new(), sections, labels: Vec::new(), bases: Vec::new(), first_free: Vec::new() };
        for &(section, group) in layer {
            let range = sections.range(section);
            let w = group.len();
            for (i, (c, _)) in group.iter().enumerate() {
                if let Some(s) = slot_of.get_mut(*c as usize) {
                    *s = i as u32;
                }
            }
            // The stride is a power of two so that each vertex's labels are a fixed-size
            // array (copied and compared without calls to memcpy); the padding stays zero.
            let stride = w.next_power_of_two().clamp(1, MAX_BLOCK);
            let at = block.labels.len();
            crate::work::count(range.len() * stride);
            block.labels.resize(at + range.len() * stride, 0);
            let labels = &mut block.labels[at..];
            let ctx = Propagate { topo, pred, pos, idx: &cover.idx, chain_of: &cover.chain_of, slot_of };
            match stride {
                1 => ctx.run::<1>(range.clone(), labels),
                2 => ctx.run::<2>(range.clone(), labels),
                4 => ctx.run::<4>(range.clone(), labels),
                8 => ctx.run::<8>(range.clone(), labels),
                16 => ctx.run::<16>(range.clone(), labels),
                32 => ctx.run::<32>(range.clone(), labels),
                _ => ctx.run::<MAX_BLOCK>(range.clone(), labels),
            }
            for (c, _) in group {
                if let Some(s) = slot_of.get_mut(*c as usize) {
                    *s = u32::MAX;
                }
            }
            let chains = block.bases.len();
            for (c, frees) in group {
                block.bases.push(block.first_free.len());
                let len = cover.len.get(*c as usize).copied().unwrap_or(0) as usize;
                let mut j = 0usize;
                for k in 0..=len {
                    while frees.get(j).is_some_and(|&(idx, _)| (idx as usize) < k) {
                        j += 1;
                    }
                    block.first_free.push(j as u32);
                }
            }
            block.parts.push(Part { section, group, lo: range.start, stride, at, chains });
        }
        block
    }

    /// Appends to `out` the allocations freed on this block's chains that are freed before
    /// position `sb` (the start of an allocation, the position of its malloc) in the
    /// topological order but whose free is not an ancestor of that malloc: every step of the
    /// walk yields a conflict. Only the chains of `sb`'s section can hold one.
    pub(super) fn partners(&self, sb: u32, end: &[u32], out: &mut Vec<u32>) {
        let section = self.sections.of(sb);
        let Ok(k) = self.parts.binary_search_by_key(&section, |p| p.section) else { return };
        let part = &self.parts[k];
        crate::work::count(part.group.len());
        let row = part.at + (sb as usize).saturating_sub(part.lo) * part.stride;
        for (i, (_, frees)) in part.group.iter().enumerate() {
            let prefix = self.labels.get(row + i).copied().unwrap_or(0) as usize;
            let first = self
                .bases
                .get(part.chains + i)
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
