//! Properties of the planner on random DAG problems, against brute force:
//! - the conflict graph is exactly "neither free is an ancestor of the other's malloc"
//!   (checked with a plain DFS per pair);
//! - no two conflicting allocations share a byte, every offset is aligned, the pool holds
//!   every allocation;
//! - the min-flow bound equals the heaviest antichain found by enumerating subsets, and the
//!   pool is at least the bound.

use cmdgraph_passes::analysis::Csr;
use cmdgraph_passes::memory::lifetimes::{AllocNames, Allocation, Problem};
use cmdgraph_passes::memory::{lower_bound, order, plan_problem, planner};
use proptest::prelude::*;

/// A random DAG (edges from lower to higher vertex) with allocations on it.
fn problem() -> impl Strategy<Value = Problem> {
    (3usize..24)
        .prop_flat_map(|n| {
            let edges = proptest::collection::vec((0..n as u32, 0..n as u32), 0..3 * n);
            let allocs = proptest::collection::vec((0..n as u32, 0..n as u32, 1u64..2000, 0u8..10), 1..12);
            (Just(n), edges, allocs)
        })
        .prop_map(|(n, edges, allocs)| {
            let mut pairs: Vec<(u32, u32)> =
                edges.into_iter().filter(|(a, b)| a != b).map(|(a, b)| (a.min(b), a.max(b))).collect();
            // Each allocation gets a malloc and a free vertex of its own, after/before the
            // chosen DAG vertices, the free after the malloc.
            let mut next = n as u32;
            let mut list = Vec::new();
            for (x, y, size, kind) in allocs {
                let (m, f) = (next, next + 1);
                next += 2;
                pairs.push((x.min(y), m));
                pairs.push((m, f));
                if x != y {
                    pairs.push((f, x.max(y)));
                }
                let free = if kind == 0 { None } else { Some(f) };
                list.push(Allocation { malloc: m, free, size, zero_init: kind == 1 });
            }
            Problem { succ: Csr::from_pairs(next as usize, &pairs), allocs: list }
        })
}

fn reaches(succ: &Csr, from: u32, to: u32) -> bool {
    let mut seen = vec![false; succ.len()];
    let mut stack = vec![from];
    while let Some(v) = stack.pop() {
        if v == to {
            return true;
        }
        for &w in succ.neighbours(v) {
            if !seen[w as usize] {
                seen[w as usize] = true;
                stack.push(w);
            }
        }
    }
    false
}

/// `a ≺ b` by definition.
fn before(p: &Problem, a: usize, b: usize) -> bool {
    let (a, b) = (&p.allocs[a], &p.allocs[b]);
    !a.zero_init && !b.zero_init && a.free.is_some_and(|f| reaches(&p.succ, f, b.malloc))
}

fn names(p: &Problem) -> AllocNames {
    AllocNames {
        malloc: (0..p.allocs.len()).map(|i| format!("m{i}")).collect(),
        free: p.allocs.iter().enumerate().map(|(i, a)| a.free.map(|_| format!("f{i}"))).collect(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn conflicts_are_exact(p in problem()) {
        let c = order::conflicts(&p).unwrap();
        for a in 0..p.allocs.len() {
            for b in 0..p.allocs.len() {
                if a == b { continue; }
                let expected = !before(&p, a, b) && !before(&p, b, a);
                prop_assert_eq!(c.conflict(&p, a as u32, b as u32), expected, "pair {} {}", a, b);
            }
        }
    }

    #[test]
    fn plan_is_valid_and_above_the_exact_bound(p in problem(), align_pow in 0u32..9) {
        let alignment = 1u64 << align_pow;
        let plan = plan_problem(&p, &names(&p), "g", alignment).unwrap();
        let n = p.allocs.len();
        for (i, a) in plan.allocations.iter().enumerate() {
            prop_assert_eq!(a.offset % alignment, 0);
            prop_assert!(a.offset + a.size <= plan.pool_size);
            for j in 0..i {
                let b = &plan.allocations[j];
                let overlap = a.offset < b.offset + b.size && b.offset < a.offset + a.size && a.size > 0 && b.size > 0;
                if overlap {
                    prop_assert!(before(&p, i, j) || before(&p, j, i), "{} and {} share bytes while both live", i, j);
                }
            }
        }
        prop_assert_eq!(plan.pool_size % alignment, 0);
        // Brute force heaviest antichain in aligned units.
        let units = planner::units(&p, alignment);
        let mut best = 0u64;
        for mask in 0u32..(1 << n) {
            let members: Vec<usize> = (0..n).filter(|i| mask & (1 << i) != 0).collect();
            let anti = members.iter().all(|&a| members.iter().all(|&b| a == b || (!before(&p, a, b) && !before(&p, b, a))));
            if anti {
                best = best.max(members.iter().map(|&i| units[i]).sum());
            }
        }
        let c = order::conflicts(&p).unwrap();
        prop_assert_eq!(lower_bound::lower_bound(&p, &c, &units), best);
        prop_assert_eq!(plan.lower_bound, best * alignment);
        prop_assert!(plan.pool_size >= plan.lower_bound);
        prop_assert!(plan.pool_size <= plan.naive);
        prop_assert!(plan.dpcpp >= plan.lower_bound);
    }
}
