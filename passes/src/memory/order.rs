//! The conflict graph of allocations: which pairs may not share a byte.
//!
//! Two allocations conflict unless one's free is an ancestor of the other's malloc. Pairs are
//! found without a transitive closure:
//! - fix one topological order; `a` and `b` (with `a`'s malloc first) whose intervals
//!   `[malloc, free]` in it overlap conflict for sure (an ancestor comes earlier); a sweep
//!   lists them;
//! - for the others (`a` freed before `b`'s malloc in that order) ancestry is decided with a
//!   chain cover of the DAG: the ancestors of a vertex on one chain form a prefix of it, so
//!   one number per (vertex, chain) holds the whole ancestor set, and the frees on a chain
//!   that are *not* ancestors of `b`'s malloc form a suffix, walked only as far as `b`'s
//!   position. Labels are propagated for a few chains at a time to bound memory.
//!
//! The order is cut into sections first (chains.rs): where every vertex before a position is
//! its ancestor and every vertex after it its descendant, the chains and labels start over.
//! The cost is O(Σ over sections of (vertices + edges) × chains with frees + conflicts);
//! the chain count of a section is about its width (the number of queues for recorded
//! graphs), so a graph that joins everything now and then (the generated benchmark graphs,
//! a training step per iteration) is planned in time linear in its size.

use super::chains;
use super::lifetimes::Problem;
use super::parallel::{self, Threads};
use crate::analysis::{topological_order, Csr};
use std::ops::Range;

/// Position meaning "live until the end of the run".
pub const END: u32 = u32::MAX;

/// Conflicts between the allocations of a [`Problem`], and their positions in one
/// topological order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Conflicts {
    /// Topological position of each allocation's malloc.
    pub start: Vec<u32>,
    /// Topological position of each allocation's free, [`END`] when it lives to the end.
    pub end: Vec<u32>,
    /// For each allocation, the allocations it conflicts with (sorted). `zero_init`
    /// allocations have empty lists here: they conflict with everything (see the planner).
    pub adj: Adjacency,
    /// Number of chains of the chain cover that hold a free (for the report and tests).
    pub chains: usize,
}

impl Conflicts {
    /// Whether allocations `a` and `b` conflict (`zero_init` ones with everything).
    pub fn conflict(&self, problem: &Problem, a: u32, b: u32) -> bool {
        let zi = |x: u32| problem.allocs.get(x as usize).is_some_and(|a| a.zero_init);
        a != b && (zi(a) || zi(b) || self.adj.neighbours(a).binary_search(&b).is_ok())
    }

    /// Number of conflicting pairs (without `zero_init` ones).
    pub fn pairs(&self) -> usize {
        self.adj.entries() / 2
    }
}

/// Labels per vertex, in chains per block: bounded so a block costs at most about 16 MiB.
const LABEL_BUDGET: usize = 1 << 22;

/// Computes the conflicts of `problem`, on the threads available. `Err` if its DAG has a
/// cycle.
pub fn conflicts(problem: &Problem) -> Result<Conflicts, String> {
    conflicts_with(problem, Threads::available())
}

/// Computes the conflicts of `problem` on up to `threads` threads; the result does not
/// depend on the thread count. `Err` if its DAG has a cycle.
pub fn conflicts_with(problem: &Problem, threads: Threads) -> Result<Conflicts, String> {
    let succ = &problem.succ;
    let n = succ.len();
    crate::work::count(n + problem.allocs.len());
    let inside = |v: u32| (v as usize) < n;
    if let Some(i) = problem.allocs.iter().position(|a| !inside(a.malloc) || a.free.is_some_and(|f| !inside(f))) {
        return Err(format!("allocation {i} names a vertex outside the graph"));
    }
    // The predecessor lists and the order are independent: built at once.
    let (pred, positions) = parallel::join(threads, n, || transpose(succ), || Positions::new(problem));
    let Positions { topo, pos, start, end, live, by_start } = positions?;
    let allocs = &problem.allocs;

    // Disjoint intervals that are still unordered: chain cover and ancestor labels, per
    // section of the order and block of chains.
    let sections = chains::Sections::new(&topo, &pos, succ);
    let cover = chains::cover(&topo, &pred, &pos, &sections);
    let frees: Vec<(u32, u32)> = live.iter().filter_map(|&a| allocs[a as usize].free.map(|f| (a, f))).collect();
    let chains = chains::frees_by_chain(&topo, &cover, &frees);
    // A power of two, so a block's labels fit its stride (chains.rs) within the budget.
    let block = 1usize << (LABEL_BUDGET / n.max(1)).clamp(1, chains::MAX_BLOCK).ilog2();
    let mut slot_of = vec![u32::MAX; cover.len.len()];
    let layers = chains::layers(&chains, block, &sections, &end);
    let mut layers = layers.iter();
    // The first layer is walked during the sweep below; any further ones (sections with
    // more than `block` chains holding frees) first store their partners per allocation.
    let first = layers.next().map(|l| chains::Block::new(l, &topo, &pred, &pos, &cover, &sections, &mut slot_of));
    // Further layers: each range of the sweep's rows gets its own partner rows.
    let mut found: Vec<Vec<Rows>> = Vec::new();
    for layer in layers {
        let block = chains::Block::new(layer, &topo, &pred, &pos, &cover, &sections, &mut slot_of);
        let rows = parallel::map_ranges(threads, by_start.len(), |_, range| {
            let mut rows = Rows::with_capacity(range.len());
            for &b in &by_start[range] {
                block.partners(start[b as usize], &end, &mut rows.targets);
                rows.close()?;
            }
            Ok(rows)
        });
        found.push(rows.into_iter().collect::<Result<_, String>>()?);
    }

    // Overlapping intervals (a sweep in start order) joined with the partners the chains
    // give: each allocation's earlier partners, sorted. Each pair is found once (the two
    // searches are disjoint and a free lies on one chain), so the lists need no dedup.
    let input = SweepInput { by_start: &by_start, start: &start, end: &end, first: first.as_ref(), found: &found };
    let sweeps = parallel::map_ranges(threads, by_start.len(), |k, range| input.sweep(k, range));
    let sweeps: Vec<Sweep> = sweeps.into_iter().collect::<Result<_, String>>()?;
    drop(found);
    let (earlier, degrees): (Vec<Rows>, Vec<Vec<u32>>) = sweeps.into_iter().map(|s| (s.rows, s.degree)).unzip();
    let degree = merge_degrees(threads, degrees, allocs.len());
    let adj = Adjacency::from_earlier(threads, &by_start, &earlier, &degree)?;
    Ok(Conflicts { start, end, adj, chains: chains.len() })
}

/// One topological order and the allocations' places in it.
struct Positions {
    topo: Vec<u32>,
    /// Position of each vertex in `topo`.
    pos: Vec<u32>,
    start: Vec<u32>,
    end: Vec<u32>,
    /// The allocations that are not `zero_init`.
    live: Vec<u32>,
    /// `live` in start order (ties by index).
    by_start: Vec<u32>,
}

impl Positions {
    fn new(problem: &Problem) -> Result<Positions, String> {
        let succ = &problem.succ;
        let n = succ.len();
        // The lowest-index topological order follows creation order, so on a recorded graph
        // a command's previous command on its queue is still a chain tail when it comes (a
        // FIFO order interleaves queues and the chain cover falls apart into thousands of
        // chains). When every edge goes from a lower to a higher index (graphs read from
        // text, whose `after` lists name earlier nodes), index order is that order already.
        let forward = (0..n as u32).all(|v| succ.neighbours(v).iter().all(|&w| w > v));
        let topo = if forward {
            (0..n as u32).collect()
        } else {
            topological_order(succ).ok_or_else(|| "the graph has a cycle".to_string())?
        };
        let mut pos = vec![0u32; n];
        for (i, &v) in topo.iter().enumerate() {
            pos[v as usize] = i as u32;
        }
        let vpos = |v: u32| pos.get(v as usize).copied().unwrap_or(0);
        let allocs = &problem.allocs;
        let start: Vec<u32> = allocs.iter().map(|a| vpos(a.malloc)).collect();
        let end: Vec<u32> = allocs.iter().map(|a| a.free.map_or(END, vpos)).collect();
        let live: Vec<u32> = (0..allocs.len() as u32).filter(|&i| !allocs[i as usize].zero_init).collect();
        // Every conflicting pair is found when its later-starting member comes, so each
        // allocation's "earlier" partners are produced together, which lets the rows be
        // built without a list of pairs.
        let mut by_start = live.clone();
        by_start.sort_by_key(|&i| start[i as usize]);
        Ok(Positions { topo, pos, start, end, live, by_start })
    }
}

/// Compressed rows built by appending: row `r` is `targets[offsets[r]..offsets[r + 1]]`.
struct Rows {
    offsets: Vec<u32>,
    targets: Vec<u32>,
}

impl Rows {
    fn with_capacity(rows: usize) -> Rows {
        let mut offsets = Vec::with_capacity(rows + 1);
        offsets.push(0);
        Rows { offsets, targets: Vec::new() }
    }

    /// Number of rows closed.
    fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// Ends the current row (the targets pushed since the last call).
    fn close(&mut self) -> Result<(), String> {
        let end = u32::try_from(self.targets.len()).map_err(|_| TOO_MANY.to_string())?;
        self.offsets.push(end);
        Ok(())
    }

    fn row(&self, r: usize) -> &[u32] {
        let lo = self.offsets.get(r).copied().unwrap_or(0) as usize;
        let hi = self.offsets.get(r + 1).copied().unwrap_or(0) as usize;
        self.targets.get(lo..hi).unwrap_or(&[])
    }
}

/// What the sweep over one range of allocations reads.
struct SweepInput<'s> {
    /// Allocations in start order.
    by_start: &'s [u32],
    start: &'s [u32],
    end: &'s [u32],
    /// The first block of chains, walked during the sweep.
    first: Option<&'s chains::Block<'s>>,
    /// Partner rows of further blocks: per block, per range of the sweep.
    found: &'s [Vec<Rows>],
}

/// One range's sweep: its allocations' earlier partners, and how many partners each
/// allocation got from them (as the earlier or the later member).
struct Sweep {
    rows: Rows,
    degree: Vec<u32>,
}

impl SweepInput<'_> {
    /// Rows `range` of the sweep, the `k`-th range. It starts with the allocations that are
    /// live there: those that started earlier and end after the range's first start, in start
    /// order, which is what the sweep over the rows before would have left active.
    fn sweep(&self, k: usize, range: Range<usize>) -> Result<Sweep, String> {
        let (start, end) = (self.start, self.end);
        let at = |i: u32| i as usize;
        let mut active: Vec<u32> = match self.by_start.get(range.start) {
            Some(&b0) if range.start > 0 => {
                let s0 = start[at(b0)];
                self.by_start[..range.start].iter().copied().filter(|&a| end[at(a)] > s0).collect()
            }
            _ => Vec::new(),
        };
        let mut rows = Rows::with_capacity(range.len());
        rows.targets.reserve(range.len() * 8);
        let mut degree = vec![0u32; start.len()];
        for (r, &b) in self.by_start[range.clone()].iter().enumerate() {
            let s = start[at(b)];
            active.retain(|&a| end[at(a)] > s);
            let from = rows.targets.len();
            // The chains' partners ended before `b` started, so they mostly come before the
            // live ones in start order: in this order the row is nearly sorted already, which
            // is what the insertion sort that sorts short rows is fast on.
            if let Some(block) = self.first {
                block.partners(s, end, &mut rows.targets);
            }
            for found in self.found {
                if let Some(part) = found.get(k) {
                    rows.targets.extend_from_slice(part.row(r));
                }
            }
            // Pushed one by one: a call to memmove per row costs more than the copy.
            for &a in &active {
                rows.targets.push(a);
            }
            let row = &mut rows.targets[from..];
            crate::work::count(1 + active.len() + row.len());
            row.sort_unstable();
            for &a in row.iter() {
                degree[at(a)] += 1;
            }
            degree[at(b)] += row.len() as u32;
            rows.close()?;
            active.push(b);
        }
        Ok(Sweep { rows, degree })
    }
}

/// The sum of the ranges' partner counts, per allocation.
fn merge_degrees(threads: Threads, mut degrees: Vec<Vec<u32>>, n: usize) -> Vec<u32> {
    if degrees.len() == 1 {
        return degrees.pop().unwrap_or_default();
    }
    let parts = parallel::map_ranges(threads, n, |_, range| {
        let mut sum = vec![0u32; range.len()];
        for degree in &degrees {
            for (t, &d) in sum.iter_mut().zip(&degree[range.clone()]) {
                *t += d;
            }
        }
        sum
    });
    parts.concat()
}

const TOO_MANY: &str = "more than 2^32 conflict entries";

/// Sorted adjacency lists of the conflict graph (compressed rows).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Adjacency {
    offsets: Vec<u32>,
    targets: Vec<u32>,
}

impl Adjacency {
    /// Symmetric adjacency from each allocation's earlier partners: `earlier` row `r`
    /// holds the partners of `order[r]` that come before it in `order`, sorted; `degree`
    /// counts each allocation's partners in all. Row `x` is written as its earlier partners
    /// followed by its later ones in `order`, so when `order` is increasing (the usual case:
    /// allocations created in start order) every row comes out sorted without sorting it.
    fn from_earlier(threads: Threads, order: &[u32], earlier: &[Rows], degree: &[u32]) -> Result<Adjacency, String> {
        let n = degree.len();
        let mut offsets = Vec::with_capacity(n + 1);
        let mut total = 0u32;
        offsets.push(0);
        for &d in degree {
            total = total.checked_add(d).ok_or_else(|| TOO_MANY.to_string())?;
            offsets.push(total);
        }
        let mut targets = vec![0u32; total as usize];
        let sorted = order.windows(2).all(|w| w[0] < w[1]);
        // Each thread writes the rows of one range of allocations, reading all of `earlier`.
        let owners = parallel::ranges(threads, n);
        let parts = parallel::split_rows(&mut targets, &offsets, &owners);
        parallel::for_each(owners.into_iter().zip(parts).collect(), |(own, part)| {
            let (lo, len) = (own.start as u32, own.len() as u32);
            let mine = |x: u32| x.wrapping_sub(lo) < len;
            let base = offsets[own.start];
            let mut fill: Vec<u32> = offsets[own.clone()].iter().map(|&o| o - base).collect();
            let mut bs = order.iter();
            for rows in earlier {
                for r in 0..rows.len() {
                    let Some(&b) = bs.next() else { return };
                    let row = rows.row(r);
                    if mine(b) {
                        let at = &mut fill[(b - lo) as usize];
                        if let Some(dst) = part.get_mut(*at as usize..*at as usize + row.len()) {
                            dst.copy_from_slice(row);
                        }
                        *at += row.len() as u32;
                    }
                    for &a in row {
                        if mine(a) {
                            let at = &mut fill[(a - lo) as usize];
                            if let Some(t) = part.get_mut(*at as usize) {
                                *t = b;
                            }
                            *at += 1;
                        }
                    }
                }
            }
            if !sorted {
                let mut lo_at = 0usize;
                for x in own {
                    let hi_at = (offsets[x + 1] - base) as usize;
                    if let Some(row) = part.get_mut(lo_at..hi_at) {
                        row.sort_unstable();
                    }
                    lo_at = hi_at;
                }
            }
        });
        Ok(Adjacency { offsets, targets })
    }

    /// Number of allocations.
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// Whether there are no allocations.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The allocations `v` conflicts with, sorted (empty for an unknown `v`).
    pub fn neighbours(&self, v: u32) -> &[u32] {
        let lo = self.offsets.get(v as usize).copied().unwrap_or(0) as usize;
        let hi = self.offsets.get(v as usize + 1).copied().unwrap_or(0) as usize;
        self.targets.get(lo..hi).unwrap_or(&[])
    }

    /// Number of (ordered) entries, twice the number of pairs.
    pub fn entries(&self) -> usize {
        self.targets.len()
    }
}

/// Predecessor lists of `succ`, counted then filled (no list of pairs). Predecessors
/// come out in increasing order. (One thread: the pass is a scan of `succ`, and a thread per
/// range of vertices would scan all of it too.)
fn transpose(succ: &Csr) -> Csr {
    let n = succ.len();
    let mut count = vec![0u32; n + 1];
    for v in 0..n as u32 {
        for &w in succ.neighbours(v) {
            if let Some(c) = count.get_mut(w as usize + 1) {
                *c += 1;
            }
        }
    }
    for i in 0..n {
        count[i + 1] += count[i];
    }
    let mut fill = count.clone();
    let mut targets = vec![0u32; count[n] as usize];
    for v in 0..n as u32 {
        for &w in succ.neighbours(v) {
            if let Some(slot) = fill.get_mut(w as usize) {
                if let Some(t) = targets.get_mut(*slot as usize) {
                    *t = v;
                }
                *slot += 1;
            }
        }
    }
    Csr::from_parts(count, targets)
}
