//! A model of DPC++'s reuse of graph-owned memory, for comparison.
//!
//! DPC++ (`graph_mem_pool`) hands out allocations in the order their `async_malloc` nodes are
//! created. When one is created it takes a block freed earlier only if that block has
//! *exactly* the same size and the freeing node is an ancestor of the new malloc node; the
//! first such block in free order wins. Otherwise it reserves a new block. Its footprint is
//! the sum of the blocks. This model uses the same alignment as the planner (DPC++ itself
//! rounds to the backend's virtual-memory granularity, often 2 MiB, which would only make it
//! larger) and, like the planner, gives `zero_init` allocations blocks of their own.

use super::lifetimes::Problem;
use super::order::Conflicts;
use std::collections::BTreeMap;

/// The footprint in bytes of exact-size reuse on `problem`.
pub fn exact_size_reuse(problem: &Problem, conflicts: &Conflicts, alignment: u64) -> u64 {
    let alignment = alignment.max(1);
    // Creation events in node (vertex) order: (vertex, is_free, allocation).
    let mut events: Vec<(u32, bool, u32)> = Vec::new();
    for (i, a) in problem.allocs.iter().enumerate() {
        events.push((a.malloc, false, i as u32));
        if let Some(f) = a.free {
            events.push((f, true, i as u32));
        }
    }
    events.sort_unstable();
    // Free blocks by exact size: (the allocation that freed it, block size in bytes).
    let mut free: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
    let mut total = 0u64;
    for (_, is_free, i) in events {
        let Some(a) = problem.allocs.get(i as usize) else { continue };
        if is_free {
            if !a.zero_init {
                free.entry(a.size).or_default().push(i);
            }
            continue;
        }
        let reuse = if a.zero_init {
            None
        } else {
            free.get(&a.size).and_then(|list| {
                list.iter().position(|&prev| {
                    conflicts.start.get(prev as usize) < conflicts.start.get(i as usize)
                        && !conflicts.conflict(problem, prev, i)
                })
            })
        };
        match reuse {
            Some(k) => {
                if let Some(list) = free.get_mut(&a.size) {
                    list.remove(k);
                }
            }
            None => total = total.saturating_add(a.size.div_ceil(alignment).saturating_mul(alignment)),
        }
    }
    total
}
