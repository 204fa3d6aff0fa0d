//! Many reachability questions over one ranked graph, answered together.
//!
//! A job ([`Jobs`]) asks whether its source reaches each of its targets. In a graph whose keys
//! increase along every edge (topological ranks, topo.rs), a path from `s` to `t` only
//! visits keys in `[s, t]`, so a job never needs to look past its largest target (its
//! bound), and a target below the source is unreachable without a search.
//!
//! Jobs run 64 at a time, one bit each: a single sweep over the keys of the chunk's window
//! (smallest source to largest bound) ORs each visited key's bits into its successors. A
//! job's bit stops spreading once the sweep passes its bound, so a key costs its successor
//! list only while some job of the chunk is still live there and reached it. Jobs are
//! chunked by the size of their window (powers of two) and then by source, so that a chunk
//! holds jobs of similar reach that lie close together.
//!
//! Cost of a chunk: its window length (a sequential scan of one word per key) plus the
//! successor lists of the keys it reaches. For jobs whose windows are short or nested
//! (graph allocations used near where they are made, the usual case) the windows of one
//! size class tile the graph, so the total is O(keys x size classes + edges), near-linear.
//! In the worst case, every job spanning the whole graph, it is O(jobs / 64 x (keys +
//! edges)): still quadratic, but 64 times below one search per job.

use super::topo::{Csr, Topo};

/// Reachability questions: job `j` asks whether node `sources[j]` reaches each node of
/// `targets[starts[j]..starts[j + 1]]`. Flat lists, so that 10^4 jobs cost no allocation each.
#[derive(Default)]
pub(super) struct Jobs {
    sources: Vec<u32>,
    starts: Vec<usize>,
    targets: Vec<u32>,
}

impl Jobs {
    /// Adds a job; returns its index.
    pub(super) fn push(&mut self, source: usize, targets: impl IntoIterator<Item = usize>) -> usize {
        if self.starts.is_empty() {
            self.starts.push(0);
        }
        // Out-of-range nodes (never passed by the checks) become a node no search reaches.
        let clamp = |i: usize| u32::try_from(i).unwrap_or(u32::MAX);
        self.sources.push(clamp(source));
        self.targets.extend(targets.into_iter().map(clamp));
        self.starts.push(self.targets.len());
        self.sources.len() - 1
    }

    /// Number of jobs.
    pub(super) fn len(&self) -> usize {
        self.sources.len()
    }

    /// Where job `j`'s targets (and answers) lie in the flat lists.
    pub(super) fn range(&self, j: usize) -> std::ops::Range<usize> {
        match (self.starts.get(j), self.starts.get(j + 1)) {
            (Some(&a), Some(&b)) => a..b,
            _ => 0..0,
        }
    }
}

/// Searches over a graph's edges in one direction, keyed by topological rank so that keys
/// increase along every edge searched.
pub(super) struct Sweep<'t> {
    topo: &'t Topo,
    /// Successor lists (forward) or predecessor lists (backward), by node.
    adj: &'t Csr,
    /// Keys count down from the last rank: a backward search.
    backward: bool,
}

impl<'t> Sweep<'t> {
    /// Searches along the edges.
    pub(super) fn forward(topo: &'t Topo) -> Sweep<'t> {
        Sweep { topo, adj: &topo.succ, backward: false }
    }

    /// Searches against the edges; `pred` is `topo.succ.transpose()`.
    pub(super) fn backward(topo: &'t Topo, pred: &'t Csr) -> Sweep<'t> {
        Sweep { topo, adj: pred, backward: true }
    }

    /// The key of a node, `None` out of range.
    fn key(&self, node: u32) -> Option<u32> {
        let r = *self.topo.rank.get(node as usize)?;
        Some(if self.backward { (self.topo.ranks as u32).saturating_sub(1).saturating_sub(r) } else { r })
    }

    /// The nodes with key `k`.
    fn nodes(&self, k: usize) -> &'t [u32] {
        let r = if self.backward { self.topo.ranks.saturating_sub(1).saturating_sub(k) } else { k };
        self.topo.nodes_at(r)
    }

    /// Answers every job: `answers[i]` says whether the job owning target `i` reaches it (a
    /// target with the source's key, the source itself or a node of its cycle, counts as
    /// reached). Also returns the work done, in keys scanned plus edges followed, for tests
    /// that guard the complexity.
    pub(super) fn reach(&self, jobs: &Jobs) -> (Vec<bool>, u64) {
        let mut answers = vec![false; jobs.targets.len()];
        // (size class, source key, bound, job): only jobs with a target above the source search.
        let mut live: Vec<(u32, u32, u32, usize)> = Vec::new();
        for (j, &source) in jobs.sources.iter().enumerate() {
            let Some(sk) = self.key(source) else { continue };
            let mut bound = None;
            for (i, &t) in jobs.range(j).zip(&jobs.targets[jobs.range(j)]) {
                match self.key(t) {
                    Some(tk) if tk == sk => answers[i] = true,
                    Some(tk) if tk > sk => bound = bound.max(Some(tk)),
                    _ => {}
                }
            }
            if let Some(b) = bound {
                live.push((u32::BITS - (b - sk).leading_zeros(), sk, b, j));
            }
        }
        live.sort_unstable();
        let mut mask = vec![0u64; self.topo.ranks];
        let mut steps = 0u64;
        let mut ends: Vec<(u32, u64)> = Vec::with_capacity(64);
        for chunk in live.chunks(64) {
            let (Some(lo), Some(hi)) = (chunk.iter().map(|c| c.1).min(), chunk.iter().map(|c| c.2).max()) else {
                continue;
            };
            let (lo, hi) = (lo as usize, hi as usize);
            // Bits leave `alive` once the sweep passes their job's bound.
            ends.clear();
            let mut alive = 0u64;
            for (bit, &(_, source, bound, _)) in chunk.iter().enumerate() {
                mask[source as usize] |= 1 << bit;
                ends.push((bound, 1 << bit));
                alive |= 1 << bit;
            }
            ends.sort_unstable();
            let mut ended = ends.iter().peekable();
            for k in lo..=hi {
                while let Some(&&(bound, bit)) = ended.peek() {
                    if bound as usize >= k {
                        break;
                    }
                    alive &= !bit;
                    ended.next();
                }
                steps += 1;
                let m = mask[k] & alive;
                if m == 0 {
                    continue;
                }
                for &v in self.nodes(k) {
                    for &w in self.adj.next(v as usize) {
                        steps += 1;
                        // Edges inside a cycle (same key) add nothing; past `hi` nothing is asked.
                        if let Some(kw) = self.key(w).map(|kw| kw as usize).filter(|&kw| kw > k && kw <= hi) {
                            mask[kw] |= m;
                        }
                    }
                }
            }
            for (bit, &(_, sk, _, j)) in chunk.iter().enumerate() {
                for i in jobs.range(j) {
                    let tk = jobs.targets.get(i).and_then(|&t| self.key(t));
                    if tk.is_some_and(|tk| tk > sk && mask[tk as usize] & (1 << bit) != 0) {
                        answers[i] = true;
                    }
                }
            }
            mask[lo..=hi].fill(0);
        }
        (answers, steps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::reach::Adjacency;

    /// splitmix64, so the random graphs do not depend on a crate.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) % n.max(1) as u64) as usize
        }
    }

    /// Checks every job of both directions against a plain breadth-first search.
    fn agrees_with_bfs(n: usize, pairs: &[(u32, u32)], rng: &mut Rng) {
        let topo = Topo::from_pairs(n, pairs);
        let pred = topo.succ.transpose();
        let upairs: Vec<(usize, usize)> = pairs.iter().map(|&(a, b)| (a as usize, b as usize)).collect();
        let flipped: Vec<(usize, usize)> = upairs.iter().map(|&(a, b)| (b, a)).collect();
        for (sweep, adj) in [
            (Sweep::forward(&topo), Adjacency::new(n, &upairs)),
            (Sweep::backward(&topo, &pred), Adjacency::new(n, &flipped)),
        ] {
            let mut jobs = Jobs::default();
            let mut queries: Vec<(usize, Vec<usize>)> = Vec::new();
            for _ in 0..150 {
                let source = rng.below(n);
                let targets: Vec<usize> = (0..1 + rng.below(6)).map(|_| rng.below(n)).collect();
                jobs.push(source, targets.iter().copied());
                queries.push((source, targets));
            }
            let (answers, _) = sweep.reach(&jobs);
            for (j, (s, ts)) in queries.iter().enumerate() {
                for (&t, &got) in ts.iter().zip(&answers[jobs.range(j)]) {
                    assert_eq!(adj.path(*s, t).is_some(), got, "{s} -> {t} in {pairs:?}");
                }
            }
        }
    }

    #[test]
    fn batched_answers_equal_plain_search_on_random_graphs() {
        let mut rng = Rng(7);
        for round in 0..60 {
            let n = 1 + rng.below(120);
            let edges = rng.below(3 * n);
            // Mostly forward edges (DAGs), some rounds with back edges (cycles).
            let cyclic = round % 3 == 0;
            let mut pairs = Vec::new();
            for _ in 0..edges {
                let (a, b) = (rng.below(n), rng.below(n));
                let (a, b) = if cyclic || a < b { (a, b) } else { (b, a) };
                if a != b {
                    pairs.push((a as u32, b as u32));
                }
            }
            agrees_with_bfs(n, &pairs, &mut rng);
        }
    }

    /// A chain of blocks like the benchmark graph: a source, a few nodes, a sink, and an
    /// edge from each sink to the next source. One job per block, from its source to its
    /// nodes and sink. Returns the work done.
    fn block_jobs(blocks: usize) -> u64 {
        let mut pairs = Vec::new();
        let mut jobs = Jobs::default();
        for b in 0..blocks as u32 {
            let base = b * 6;
            pairs.extend([(base, base + 1), (base, base + 2), (base + 1, base + 3), (base + 2, base + 3)]);
            pairs.extend([(base + 3, base + 4), (base + 4, base + 5)]);
            if b + 1 < blocks as u32 {
                pairs.push((base + 5, base + 6));
            }
            let base = base as usize;
            jobs.push(base, [base + 1, base + 2, base + 4]);
        }
        let topo = Topo::from_pairs(blocks * 6, &pairs);
        let (answers, steps) = Sweep::forward(&topo).reach(&jobs);
        assert!(answers.iter().all(|&a| a));
        steps
    }

    #[test]
    fn work_grows_linearly_with_local_jobs() {
        let (small, large) = (block_jobs(2_000), block_jobs(8_000));
        // Linear work is 4x; one search per job over the rest of the graph would be 16x.
        assert!(large <= 5 * small, "{small} steps for 2000 blocks, {large} for 8000");
        assert!(large <= 20 * 6 * 8_000, "{large} steps for 48000 nodes");
    }

    #[test]
    fn jobs_spanning_the_graph_share_sweeps() {
        // 640 sources fanning into one long chain that ends at the shared target.
        let (sources, chain) = (640u32, 10_000u32);
        let mut pairs: Vec<(u32, u32)> = (0..sources).map(|s| (s, sources)).collect();
        pairs.extend((sources..sources + chain - 1).map(|i| (i, i + 1)));
        let n = (sources + chain) as usize;
        let topo = Topo::from_pairs(n, &pairs);
        let mut jobs = Jobs::default();
        for s in 0..sources as usize {
            jobs.push(s, [n - 1]);
        }
        let (answers, steps) = Sweep::forward(&topo).reach(&jobs);
        assert!(answers.iter().all(|&a| a));
        // Ten sweeps of the chain, not 640.
        assert!(steps <= 12 * 2 * n as u64, "{steps} steps");
    }
}
