//! The race detector: pairs of nodes the DAG leaves unordered that touched the same bytes,
//! at least one of them writing.
//!
//! Happens-before is reachability over the expanded graph (sub-graph children included),
//! kept as one bitset row per node over the columns of the nodes that touched memory. The
//! byte sets are the exact bytes each node touched in this run (see `access`). For every
//! memory a sweep over the intervals sorted by start finds the overlapping pairs; `async_malloc`
//! and `async_free` count as writes of the whole allocation, so a node not ordered between
//! its allocation's malloc and free is reported too. In pool mode, two allocations a memory
//! plan placed on overlapping bytes are reported (as a pair of `async_malloc` nodes) unless
//! the `async_free` of one happens before the `async_malloc` of the other: that is the
//! condition for sharing memory, and it can fail even when every node is ordered.

use super::access::{AccessKind, NodeLog};
use super::error::InterpError;
use super::flat::Flat;
use super::memory::Loc;
use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;

/// Most bits the happens-before table may hold (256 MiB).
const MAX_REACH_BITS: u64 = 1 << 31;

/// Two nodes not ordered by the graph that touched overlapping bytes, one of them writing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Race {
    /// The node created first (path name, e.g. `k1` or `sg/k1`).
    pub first: String,
    /// The other node.
    pub second: String,
    /// The memory: `@x`, `%t`, or `pool (%a, %b)` for a planned pool.
    pub memory: String,
    /// The bytes both touched: the smallest range covering every conflicting overlap.
    pub range: Range<u64>,
    /// How `first` and `second` touched those bytes (the strongest kind each used there).
    pub kinds: (AccessKind, AccessKind),
}

impl fmt::Display for Race {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "race on {} bytes {}..{}: %{} ({}) and %{} ({}) are not ordered by any path",
            self.memory, self.range.start, self.range.end, self.first, self.kinds.0, self.second, self.kinds.1
        )
    }
}

/// Ancestor bitsets over the nodes that touched memory.
struct HappensBefore {
    /// Column of each flat node, if it touched memory.
    column: Vec<Option<usize>>,
    words: usize,
    rows: Vec<u64>,
}

impl HappensBefore {
    fn build(flat: &Flat, topo: &[u32], touched: &[bool]) -> Result<HappensBefore, InterpError> {
        let n = flat.nodes.len();
        let mut column = vec![None; n];
        let mut k = 0usize;
        for (i, t) in touched.iter().enumerate() {
            if *t {
                column[i] = Some(k);
                k += 1;
            }
        }
        let words = k.div_ceil(64);
        if (n as u64).saturating_mul(words as u64 * 64) > MAX_REACH_BITS {
            return Err(InterpError::api(format!(
                "race detection over {n} nodes ({k} touching memory) exceeds the {MAX_REACH_BITS}-bit table limit"
            )));
        }
        let mut rows = vec![0u64; n * words];
        for &v in topo {
            let v = v as usize;
            for &p in &flat.nodes[v].preds {
                let p = p as usize;
                for w in 0..words {
                    let bits = rows[p * words + w];
                    rows[v * words + w] |= bits;
                }
                if let Some(c) = column[p] {
                    rows[v * words + c / 64] |= 1 << (c % 64);
                }
            }
        }
        Ok(HappensBefore { column, words, rows })
    }

    /// Whether `a` happens before `b`.
    fn before(&self, a: usize, b: usize) -> bool {
        match self.column[a] {
            Some(c) => self.rows[b * self.words + c / 64] & (1 << (c % 64)) != 0,
            None => false,
        }
    }
}

/// A graph allocation that ran in pool mode: its pool bytes and the flat indices of its
/// `async_malloc` and (if it ran) `async_free` nodes.
#[derive(Clone, Debug)]
pub(crate) struct PoolAlloc {
    /// Bytes of the pool it occupies.
    pub range: Range<u64>,
    /// Its `async_malloc` node.
    pub malloc: u32,
    /// Its `async_free` node, if one ran.
    pub free: Option<u32>,
}

/// One recorded interval.
#[derive(Clone, Copy)]
struct Piece {
    start: u64,
    end: u64,
    node: u32,
    kind: AccessKind,
}

/// (covering range, kind of the first node, kind of the second) of one pair on one memory.
type Conflict = (Range<u64>, AccessKind, AccessKind);

/// Finds every race. `logs[i]` is what flat node `i` touched; `name` names a memory given
/// the conflicting byte range.
pub(crate) fn detect(
    flat: &Flat,
    topo: &[u32],
    logs: Vec<NodeLog>,
    pool: &[PoolAlloc],
    name: impl Fn(Loc, &Range<u64>) -> String,
) -> Result<Vec<Race>, InterpError> {
    let touched: Vec<bool> = logs.iter().map(|l| !l.sets.is_empty()).collect();
    let hb = HappensBefore::build(flat, topo, &touched)?;
    let mut per_loc: BTreeMap<Loc, Vec<Piece>> = BTreeMap::new();
    for (node, log) in logs.into_iter().enumerate() {
        for ((loc, kind), set) in log.sets {
            let pieces = per_loc.entry(loc).or_default();
            for (start, end) in set.finish() {
                pieces.push(Piece { start, end, node: node as u32, kind });
            }
        }
    }
    let mut found: BTreeMap<(u32, u32, Loc), Conflict> = BTreeMap::new();
    for (loc, mut pieces) in per_loc {
        pieces.sort_by_key(|p| (p.start, p.end, p.node, p.kind));
        let mut active: Vec<Piece> = Vec::new();
        for p in pieces {
            active.retain(|a| a.end > p.start);
            for a in &active {
                if a.node == p.node || !(a.kind.writes() || p.kind.writes()) {
                    continue;
                }
                let (x, y) = (a.node as usize, p.node as usize);
                if hb.before(x, y) || hb.before(y, x) {
                    continue;
                }
                let overlap = p.start.max(a.start)..p.end.min(a.end);
                let (first, second, kf, ks) =
                    if a.node < p.node { (a.node, p.node, a.kind, p.kind) } else { (p.node, a.node, p.kind, a.kind) };
                found
                    .entry((first, second, loc))
                    .and_modify(|(r, k1, k2)| {
                        r.start = r.start.min(overlap.start);
                        r.end = r.end.max(overlap.end);
                        *k1 = (*k1).max(kf);
                        *k2 = (*k2).max(ks);
                    })
                    .or_insert((overlap, kf, ks));
            }
            active.push(p);
        }
    }
    for (i, a) in pool.iter().enumerate() {
        for b in &pool[i + 1..] {
            let overlap = a.range.start.max(b.range.start)..a.range.end.min(b.range.end);
            let ordered =
                |x: &PoolAlloc, y: &PoolAlloc| x.free.is_some_and(|f| hb.before(f as usize, y.malloc as usize));
            if overlap.is_empty() || ordered(a, b) || ordered(b, a) {
                continue;
            }
            let (first, second) = (a.malloc.min(b.malloc), a.malloc.max(b.malloc));
            found
                .entry((first, second, Loc::Pool))
                .and_modify(|(r, k1, k2)| {
                    r.start = r.start.min(overlap.start);
                    r.end = r.end.max(overlap.end);
                    *k1 = (*k1).max(AccessKind::Alloc);
                    *k2 = (*k2).max(AccessKind::Alloc);
                })
                .or_insert((overlap, AccessKind::Alloc, AccessKind::Alloc));
        }
    }
    Ok(found
        .into_iter()
        .map(|((a, b, loc), (range, ka, kb))| Race {
            first: flat.nodes[a as usize].name.clone(),
            second: flat.nodes[b as usize].name.clone(),
            memory: name(loc, &range),
            range,
            kinds: (ka, kb),
        })
        .collect())
}
