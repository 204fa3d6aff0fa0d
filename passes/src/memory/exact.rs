//! An exact, anytime solver for small problems: MiniMalloc's branch and bound (Moffitt,
//! ASPLOS 2023; github.com/google/minimalloc, `src/solver.cc`) on the conflict graph of a DAG.
//!
//! The search builds *canonical* placements: allocations in non-decreasing offset order, each
//! at the lowest offset above its already placed neighbours in the conflict graph. Every
//! placement can be pushed down into one of these (let each allocation fall until it rests on
//! a neighbour), so searching them all is complete. A node branches on the unplaced
//! allocations by (lowest offset, static preorder), pruned by:
//! - *canonicity*: a branch must not come before the last placement in that order;
//! - *dominance*: an allocation whose lowest offset is at or above the lowest top any other
//!   unplaced allocation could reach is skipped (that one would fit under it);
//! - *section inference* ([`super::sections`]): in each clique the unplaced allocations stack
//!   above the clique's floor (the top of its last placement, the current offset, the lowest
//!   offset of its unplaced members), and that stack must fit under the capacity;
//! - *hatless pruning*: when the allocation just placed has no unplaced neighbour, no other
//!   branch at this node can succeed (it would be left below the rising floor).
//!
//! The planner's greedy result is the incumbent. Capacities between the min-flow bound and
//! the incumbent are probed, the bound first, then by bisection; each probe runs three static
//! preorders round robin with doubling node limits (MiniMalloc's defaults: width, area, clique
//! total in three priorities). Everything is counted in a work budget — list entries
//! visited, no clock — so the result is the same on every machine. A probe that runs out of
//! its share is treated like one proven infeasible: the answer is always a valid placement,
//! optimal when it reaches the bound.
//!
//! Connected components of the conflict graph are independent and searched one at a time.

use super::lifetimes::Problem;
use super::order::{Adjacency, Conflicts};
use super::sections::Sections;

const UNPLACED: u64 = u64::MAX;

/// The result of one search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    /// A placement under the capacity is in `best`.
    Found,
    /// The whole tree was searched: there is none.
    Infeasible,
    /// The node limit or the work budget ran out.
    Aborted,
}

/// The exact solver's input: sizes in units, the conflict graph, the lowest offset.
pub(super) struct Input<'a> {
    /// The problem (its DAG gives the sections).
    pub problem: &'a Problem,
    /// Sizes in alignment units.
    pub units: &'a [u64],
    /// The conflict graph (`zero_init` allocations have no entries).
    pub adj: &'a Adjacency,
    /// The lowest offset (above the `zero_init` allocations).
    pub base: u64,
}

/// The exact search alone, from the naive placement (every allocation stacked), down to the
/// min-flow bound: offsets in alignment units (`zero_init` ones stacked at the bottom) and the
/// pool top in units. For tests and comparisons; the planner seeds it with its greedy result.
pub fn search_only(problem: &Problem, conflicts: &Conflicts, alignment: u64, budget: u64) -> (Vec<u64>, u64) {
    let units = super::planner::units(problem, alignment);
    let mut offset = vec![0u64; units.len()];
    let mut top = 0u64;
    for zero_init in [true, false] {
        for (i, a) in problem.allocs.iter().enumerate() {
            if a.zero_init == zero_init {
                offset[i] = top;
                top = top.saturating_add(units[i]);
            }
        }
    }
    let base = problem.allocs.iter().zip(&units).filter(|(a, _)| a.zero_init).map(|(_, u)| *u).sum();
    let target = super::lower_bound::lower_bound(problem, conflicts, &units);
    let input = Input { problem, units: &units, adj: &conflicts.adj, base };
    let top = improve(&input, &mut offset, top.max(base), target, budget);
    (offset, top)
}

/// Improves `offset` (units, one per allocation; the allocations with units > 0 that are not
/// `zero_init` are searched, the others left alone) whose pool top is `top`, towards `target`
/// (a lower bound), spending at most `budget` work. Returns the new top (≤ `top`).
pub(super) fn improve(input: &Input<'_>, offset: &mut [u64], top: u64, target: u64, budget: u64) -> u64 {
    let Input { problem, units, adj, base } = *input;
    let n = units.len();
    let searched: Vec<bool> =
        (0..n).map(|i| units[i] > 0 && problem.allocs.get(i).is_some_and(|a| !a.zero_init)).collect();
    let Some(sections) = Sections::new(problem, &searched) else { return top };
    let components = components(adj, &searched);
    let mut s = Search::new(units, adj, base, &sections);
    s.budget = budget;
    let comp_top = |c: &[u32], offset: &[u64]| {
        c.iter().map(|&b| offset[b as usize].saturating_add(units[b as usize])).max().unwrap_or(base)
    };
    let mut hi = top;
    let mut lo = target.min(hi);
    let mut first = true;
    while lo < hi && s.work < s.budget {
        // The bound first (usually where the optimum is on hard instances), then bisection.
        let cap = if first { lo } else { lo + (hi - lo) / 2 };
        first = false;
        let share = (s.budget - s.work) / 3 + 1;
        let mut all = true;
        for comp in &components {
            if comp_top(comp, offset) <= cap {
                continue;
            }
            s.limit = s.work.saturating_add(share).min(s.budget);
            if s.solve(comp, cap) == Status::Found {
                for &b in comp {
                    offset[b as usize] = s.best[b as usize];
                }
            } else {
                all = false;
                break;
            }
        }
        hi = components.iter().map(|c| comp_top(c, offset)).max().unwrap_or(base).max(base).min(hi);
        if !all {
            lo = cap + 1;
        }
    }
    hi
}

/// Connected components of the conflict graph among searched allocations, each sorted, in
/// order of their smallest member.
fn components(adj: &Adjacency, searched: &[bool]) -> Vec<Vec<u32>> {
    let n = searched.len();
    let mut comp = vec![u32::MAX; n];
    let mut out: Vec<Vec<u32>> = Vec::new();
    let mut stack = Vec::new();
    for r in 0..n {
        if !searched[r] || comp[r] != u32::MAX {
            continue;
        }
        let id = out.len() as u32;
        comp[r] = id;
        stack.push(r as u32);
        let mut members = Vec::new();
        while let Some(v) = stack.pop() {
            members.push(v);
            for &w in adj.neighbours(v) {
                if searched.get(w as usize).copied().unwrap_or(false) && comp[w as usize] == u32::MAX {
                    comp[w as usize] = id;
                    stack.push(w);
                }
            }
        }
        members.sort_unstable();
        out.push(members);
    }
    out
}

/// The branch-and-bound state, reused between searches.
struct Search<'a> {
    units: &'a [u64],
    adj: &'a Adjacency,
    base: u64,
    sections: &'a Sections,
    cap: u64,
    /// Current offsets (`UNPLACED` when not placed).
    offset: Vec<u64>,
    /// Lowest offset above the placed neighbours.
    min_offset: Vec<u64>,
    /// Static preorder rank (`u32::MAX`: not in the component searched).
    rank: Vec<u32>,
    /// Per section: floor and the unplaced size in it.
    floor: Vec<u64>,
    total: Vec<u64>,
    /// Per boundary between sections `s` and `s + 1`: unplaced allocations spanning it.
    cuts: Vec<u32>,
    /// Per section: the stamp of the last placement that rescanned it.
    seen: Vec<u64>,
    stamp: u64,
    /// Whether the component is an interval problem (conflict iff section runs overlap), so a
    /// boundary no unplaced allocation spans splits it into independent parts.
    decompose: bool,
    /// Undo logs.
    offset_log: Vec<(u32, u64)>,
    floor_log: Vec<(u32, u64)>,
    /// Offsets of the placement found: written at every placement, so the successful path,
    /// being the last, leaves its offsets.
    best: Vec<u64>,
    nodes_left: u64,
    work: u64,
    /// Work at which the current probe stops.
    limit: u64,
    /// Work at which everything stops.
    budget: u64,
}

impl<'a> Search<'a> {
    fn new(units: &'a [u64], adj: &'a Adjacency, base: u64, sections: &'a Sections) -> Search<'a> {
        let n = units.len();
        let s = sections.len();
        Search {
            units,
            adj,
            base,
            sections,
            cap: 0,
            offset: vec![UNPLACED; n],
            min_offset: vec![base; n],
            rank: vec![u32::MAX; n],
            floor: vec![base; s],
            total: vec![0; s],
            cuts: vec![0; s],
            seen: vec![0; s],
            stamp: 0,
            decompose: false,
            offset_log: Vec::new(),
            floor_log: Vec::new(),
            best: vec![UNPLACED; n],
            nodes_left: 0,
            work: 0,
            limit: 0,
            budget: 0,
        }
    }

    fn range(&self, b: u32) -> std::ops::Range<u32> {
        let (lo, hi) = self.sections.range.get(b as usize).copied().unwrap_or((0, 0));
        lo..hi
    }

    /// Looks for a placement of `comp` with every top at most `cap`, round robin over the
    /// preorders with doubling node limits, until the probe's work limit.
    fn solve(&mut self, comp: &[u32], cap: u64) -> Status {
        self.cap = cap;
        let mut secs: Vec<u32> = comp.iter().flat_map(|&b| self.range(b)).collect();
        secs.sort_unstable();
        secs.dedup();
        for &s in &secs {
            self.total[s as usize] = 0;
            self.cuts[s as usize] = 0;
        }
        for &b in comp {
            let r = self.range(b);
            for s in r.clone() {
                self.total[s as usize] += self.units[b as usize];
            }
            for s in r.start..r.end.saturating_sub(1) {
                self.cuts[s as usize] += 1;
            }
        }
        let overlap = |a: u32, b: u32| {
            let (x, y) = (self.range(a), self.range(b));
            x.start < y.end && y.start < x.end
        };
        self.decompose = comp.iter().all(|&b| self.adj.neighbours(b).iter().all(|&j| overlap(b, j)));
        // Static data for the preorders: the largest clique total each allocation is in.
        let tot: Vec<u64> =
            comp.iter().map(|&b| self.range(b).map(|s| self.total[s as usize]).max().unwrap_or(0)).collect();
        let width = |b: u32| self.sections.width.get(b as usize).copied().unwrap_or(0);
        let area = |b: u32| width(b).saturating_mul(self.units[b as usize]);
        type Key = (u64, u64, u64);
        let preorders: [&dyn Fn(usize, u32) -> Key; 3] =
            [&|k, b| (width(b), area(b), tot[k]), &|k, b| (tot[k], area(b), width(b)), &|k, b| {
                (tot[k], width(b), area(b))
            }];
        let orders: Vec<Vec<u32>> = preorders
            .iter()
            .map(|key| {
                let mut keyed: Vec<(std::cmp::Reverse<Key>, u32)> =
                    comp.iter().enumerate().map(|(k, &b)| (std::cmp::Reverse(key(k, b)), b)).collect();
                keyed.sort_unstable();
                keyed.into_iter().map(|(_, b)| b).collect()
            })
            .collect();
        let mut node_limit = comp.len() as u64;
        loop {
            node_limit = node_limit.saturating_mul(2);
            for order in &orders {
                if self.work >= self.limit {
                    return Status::Aborted;
                }
                match self.run(order, node_limit, &secs) {
                    Status::Aborted => continue,
                    status => return status,
                }
            }
        }
    }

    /// One depth-first search with preorder `order` and at most `nodes` nodes.
    fn run(&mut self, order: &[u32], nodes: u64, secs: &[u32]) -> Status {
        for (r, &b) in order.iter().enumerate() {
            self.rank[b as usize] = r as u32;
            self.offset[b as usize] = UNPLACED;
            self.min_offset[b as usize] = self.base;
        }
        for &s in secs {
            self.floor[s as usize] = self.base;
        }
        self.offset_log.clear();
        self.floor_log.clear();
        self.nodes_left = nodes;
        if !self.check(secs, self.base) {
            return Status::Infeasible;
        }
        self.node(secs, order, (0, 0))
    }

    /// Section inference: every clique's unplaced allocations fit above its floor.
    fn check(&mut self, secs: &[u32], offset: u64) -> bool {
        self.work += secs.len() as u64;
        secs.iter().all(|&s| {
            let s = s as usize;
            self.floor[s].max(offset).saturating_add(self.total[s]) <= self.cap
        })
    }

    /// A search node of the part with sections `secs`: `parent` holds its unplaced
    /// allocations (and maybe placed ones) sorted by the parent's keys; `last` is the key of
    /// the last placement in this part.
    fn node(&mut self, secs: &[u32], parent: &[u32], last: (u64, u32)) -> Status {
        if self.nodes_left == 0 || self.work >= self.limit {
            return Status::Aborted;
        }
        self.nodes_left -= 1;
        let mut ordering: Vec<u32> = parent.iter().copied().filter(|&b| self.offset[b as usize] == UNPLACED).collect();
        if ordering.is_empty() {
            return Status::Found;
        }
        // Keys only rise, so the parent's order is nearly sorted: a stable merge sort is fast.
        ordering.sort_by_key(|&b| (self.min_offset[b as usize], self.rank[b as usize]));
        self.work += ordering.len() as u64;
        let min_height =
            ordering.iter().map(|&b| self.min_offset[b as usize] + self.units[b as usize]).min().unwrap_or(0);
        for &b in &ordering {
            let bu = b as usize;
            let key = (self.min_offset[bu], self.rank[bu]);
            if key < last {
                continue;
            }
            let x = key.0;
            if x >= min_height {
                break;
            }
            let h = x + self.units[bu];
            if h > self.cap {
                continue;
            }
            let (olog, flog) = (self.offset_log.len(), self.floor_log.len());
            let hat = self.place(b, x);
            let status = if !self.check(secs, x) {
                Status::Infeasible
            } else if self.decompose {
                self.split(b, secs, &ordering, key)
            } else {
                self.node(secs, &ordering, key)
            };
            self.unplace(b, olog, flog);
            if status != Status::Infeasible {
                return status;
            }
            if !hat {
                break;
            }
        }
        Status::Infeasible
    }

    /// After placing `b`: when boundaries it spanned are spanned by no unplaced allocation any
    /// more, the part falls apart there and each piece is searched on its own (MiniMalloc's
    /// dynamic decomposition); otherwise the search goes on.
    fn split(&mut self, b: u32, secs: &[u32], ordering: &[u32], key: (u64, u32)) -> Status {
        let r = self.range(b);
        let mut cutpoints: Vec<u32> = Vec::new();
        for s in r.start..r.end.saturating_sub(1) {
            let c = &mut self.cuts[s as usize];
            *c = c.saturating_sub(1);
            if *c == 0 {
                cutpoints.push(s + 1);
            }
        }
        let status = if cutpoints.is_empty() {
            self.node(secs, ordering, key)
        } else {
            let mut status = Status::Found;
            let mut from = 0usize;
            for k in 0..=cutpoints.len() {
                let to = cutpoints.get(k).map_or(secs.len(), |&c| secs.partition_point(|&s| s < c));
                let piece = secs.get(from..to).unwrap_or(&[]);
                from = to;
                let (Some(&lo), Some(&hi)) = (piece.first(), piece.last()) else { continue };
                let mut members: Vec<u32> = ordering
                    .iter()
                    .copied()
                    .filter(|&m| self.offset[m as usize] == UNPLACED && (lo..=hi).contains(&self.range(m).start))
                    .collect();
                if members.is_empty() {
                    continue;
                }
                members.sort_unstable_by_key(|&m| self.rank[m as usize]);
                status = self.node(piece, &members, (0, 0));
                if status != Status::Found {
                    break;
                }
            }
            status
        };
        for s in r.start..r.end.saturating_sub(1) {
            self.cuts[s as usize] += 1;
        }
        status
    }

    /// Places `b` at `x`: raises its unplaced neighbours' lowest offsets and the floors of
    /// the sections around. Returns whether any unplaced neighbour was left (a "hat").
    fn place(&mut self, b: u32, x: u64) -> bool {
        let bu = b as usize;
        let h = x + self.units[bu];
        self.offset[bu] = x;
        self.best[bu] = x;
        let mut hat = false;
        let adj = self.adj;
        let first = self.offset_log.len();
        self.work += adj.neighbours(b).len() as u64;
        for &j in adj.neighbours(b) {
            let ju = j as usize;
            if self.offset[ju] != UNPLACED || self.rank[ju] == u32::MAX {
                continue;
            }
            hat = true;
            if self.min_offset[ju] < h {
                self.offset_log.push((j, self.min_offset[ju]));
                self.min_offset[ju] = h;
            }
        }
        for s in self.range(b) {
            let su = s as usize;
            self.floor_log.push((s, self.floor[su]));
            self.floor[su] = self.floor[su].max(h);
            self.total[su] -= self.units[bu];
        }
        // Unallocated floor: a section's unplaced members all start at their lowest offsets.
        // Each section touched by a raised neighbour is rescanned at most once.
        self.stamp += 1;
        let sections = self.sections;
        for k in first..self.offset_log.len() {
            let (j, old) = self.offset_log[k];
            for s in self.range(j) {
                let su = s as usize;
                // The least lowest offset of a section's unplaced members is at most its
                // floor (kept so below); raising `j` changes it only if `j` was at or under it.
                if self.seen[su] == self.stamp || old > self.floor[su] {
                    continue;
                }
                self.seen[su] = self.stamp;
                let members = sections.members(s);
                self.work += members.len() as u64;
                let low = members
                    .iter()
                    .filter(|&&m| self.offset[m as usize] == UNPLACED && self.rank[m as usize] != u32::MAX)
                    .map(|&m| self.min_offset[m as usize])
                    .min();
                if let Some(low) = low {
                    if low > self.floor[su] {
                        self.floor_log.push((s, self.floor[su]));
                        self.floor[su] = low;
                    }
                }
            }
        }
        hat
    }

    /// Undoes [`Search::place`].
    fn unplace(&mut self, b: u32, olog: usize, flog: usize) {
        while self.floor_log.len() > flog {
            if let Some((s, f)) = self.floor_log.pop() {
                self.floor[s as usize] = f;
            }
        }
        while self.offset_log.len() > olog {
            if let Some((j, o)) = self.offset_log.pop() {
                self.min_offset[j as usize] = o;
            }
        }
        for s in self.range(b) {
            self.total[s as usize] += self.units[b as usize];
        }
        self.offset[b as usize] = UNPLACED;
    }
}
