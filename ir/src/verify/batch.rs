//! Many reachability questions over one ranked graph, answered together.
//!
//! A [`Job`] asks whether its source reaches each of its targets. In a graph whose keys
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

/// Whether `source` reaches each of `targets` (keys of a [`Ranked`] graph).
pub(super) struct Job {
    /// Where the search starts.
    pub source: u32,
    /// What it looks for.
    pub targets: Vec<u32>,
}

/// A graph over topological keys: every edge goes from a smaller key to a larger one.
pub(super) struct Ranked {
    next: Csr,
    /// Keys count down from the last rank: edges are the graph's edges reversed.
    reversed: bool,
    ranks: u32,
}

impl Ranked {
    /// The graph's edges between ranks, keyed by rank.
    pub(super) fn forward(topo: &Topo) -> Ranked {
        Ranked::build(topo, false)
    }

    /// The graph's edges reversed, keyed so that keys still increase along them: a search
    /// here walks from a node to its predecessors.
    pub(super) fn backward(topo: &Topo) -> Ranked {
        Ranked::build(topo, true)
    }

    fn build(topo: &Topo, reversed: bool) -> Ranked {
        let ranks = topo.ranks as u32;
        let mut r = Ranked { next: Csr::new(0, &[]), reversed, ranks };
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        for (v, &rv) in topo.rank.iter().enumerate() {
            for &w in topo.succ.next(v) {
                let rw = topo.rank.get(w as usize).copied().unwrap_or(rv);
                if rw != rv {
                    pairs.push(if reversed { (r.key(rw), r.key(rv)) } else { (rv, rw) });
                }
            }
        }
        r.next = Csr::new(topo.ranks, &pairs);
        r
    }

    /// The key of a node of rank `rank`.
    pub(super) fn key(&self, rank: u32) -> u32 {
        if self.reversed {
            self.ranks.saturating_sub(1).saturating_sub(rank)
        } else {
            rank
        }
    }

    /// Answers every job: `answers[j][i]` says whether job `j` reaches its target `i` (a
    /// target equal to the source counts as reached). Also returns the work done, in keys
    /// scanned plus edges followed, for tests that guard the complexity.
    pub(super) fn reach(&self, jobs: &[Job]) -> (Vec<Vec<bool>>, u64) {
        let mut answers: Vec<Vec<bool>> =
            jobs.iter().map(|j| j.targets.iter().map(|&t| t == j.source).collect()).collect();
        let keys = self.next.len();
        // (size class, source, bound, job): only jobs with a target above the source search.
        let mut live: Vec<(u32, u32, u32, usize)> = jobs
            .iter()
            .enumerate()
            .filter_map(|(j, job)| {
                let bound = job.targets.iter().copied().filter(|&t| t > job.source && (t as usize) < keys).max()?;
                Some((u32::BITS - (bound - job.source).leading_zeros(), job.source, bound, j))
            })
            .collect();
        live.sort_unstable();
        let mut mask = vec![0u64; keys];
        let mut steps = 0u64;
        for chunk in live.chunks(64) {
            let (Some(lo), Some(hi)) = (chunk.iter().map(|c| c.1).min(), chunk.iter().map(|c| c.2).max()) else {
                continue;
            };
            let (lo, hi) = (lo as usize, hi as usize);
            // Bits leave `alive` once the sweep passes their job's bound.
            let mut ends: Vec<(u32, u64)> = Vec::with_capacity(chunk.len());
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
                for &s in self.next.next(k) {
                    steps += 1;
                    if let Some(slot) = mask.get_mut(s as usize).filter(|_| s as usize <= hi) {
                        *slot |= m;
                    }
                }
            }
            for (bit, &(_, source, _, j)) in chunk.iter().enumerate() {
                let (Some(job), Some(out)) = (jobs.get(j), answers.get_mut(j)) else { continue };
                for (&t, ans) in job.targets.iter().zip(out.iter_mut()) {
                    if t > source && mask.get(t as usize).is_some_and(|m| m & (1 << bit) != 0) {
                        *ans = true;
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
        let upairs: Vec<(usize, usize)> = pairs.iter().map(|&(a, b)| (a as usize, b as usize)).collect();
        let flipped: Vec<(usize, usize)> = upairs.iter().map(|&(a, b)| (b, a)).collect();
        for (ranked, adj) in [
            (Ranked::forward(&topo), Adjacency::new(n, &upairs)),
            (Ranked::backward(&topo), Adjacency::new(n, &flipped)),
        ] {
            // Nodes and the jobs' sources and targets, as nodes (several nodes share a key
            // in a cyclic graph).
            let mut queries: Vec<(usize, Vec<usize>)> = Vec::new();
            for _ in 0..150 {
                let source = rng.below(n);
                let targets = (0..1 + rng.below(6)).map(|_| rng.below(n)).collect();
                queries.push((source, targets));
            }
            let key = |v: usize| ranked.key(topo.rank[v]);
            let jobs: Vec<Job> = queries
                .iter()
                .map(|(s, ts)| Job { source: key(*s), targets: ts.iter().map(|&t| key(t)).collect() })
                .collect();
            let (answers, _) = ranked.reach(&jobs);
            for ((s, ts), got) in queries.iter().zip(&answers) {
                for (&t, &g) in ts.iter().zip(got) {
                    assert_eq!(adj.path(*s, t).is_some(), g, "{s} -> {t} in {pairs:?}");
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
    /// nodes and sink.
    fn block_jobs(blocks: u32) -> u64 {
        let mut pairs = Vec::new();
        let mut jobs = Vec::new();
        for b in 0..blocks {
            let base = b * 6;
            pairs.extend([(base, base + 1), (base, base + 2), (base + 1, base + 3), (base + 2, base + 3)]);
            pairs.extend([(base + 3, base + 4), (base + 4, base + 5)]);
            if b + 1 < blocks {
                pairs.push((base + 5, base + 6));
            }
            jobs.push((base, vec![base + 1, base + 2, base + 4]));
        }
        let topo = Topo::from_pairs(blocks as usize * 6, &pairs);
        let fwd = Ranked::forward(&topo);
        let jobs: Vec<Job> = jobs
            .into_iter()
            .map(|(s, ts)| Job {
                source: fwd.key(topo.rank[s as usize]),
                targets: ts.iter().map(|&t| topo.rank[t as usize]).collect(),
            })
            .collect();
        let (answers, steps) = fwd.reach(&jobs);
        assert!(answers.iter().flatten().all(|&a| a));
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
        let fwd = Ranked::forward(&topo);
        let last = topo.rank[n - 1];
        let jobs: Vec<Job> = (0..sources).map(|s| Job { source: topo.rank[s as usize], targets: vec![last] }).collect();
        let (answers, steps) = fwd.reach(&jobs);
        assert!(answers.iter().flatten().all(|&a| a));
        // Ten sweeps of the chain, not 640.
        assert!(steps <= 12 * 2 * n as u64, "{steps} steps");
    }
}
