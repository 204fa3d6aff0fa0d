//! Properties of the planner on random DAG problems, against brute force:
//! - the conflict graph is exactly "neither free is an ancestor of the other's malloc"
//!   (checked with a plain DFS per pair);
//! - no two conflicting allocations share a byte, every offset is aligned, the pool holds
//!   every allocation;
//! - the min-flow bound equals the heaviest antichain found by enumerating subsets, and the
//!   pool is at least the bound.

use cmdgraph_passes::analysis::Csr;
use cmdgraph_passes::memory::lifetimes::{AllocNames, Allocation, Problem};
use cmdgraph_passes::memory::parallel::Threads;
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Cutting the sweep and the adjacency into ranges at every possible place gives the
    /// conflicts and the plan of one thread, bit for bit.
    #[test]
    fn conflicts_do_not_depend_on_the_threads(p in problem(), t in 2usize..6, chunk in 1usize..4) {
        let one = order::conflicts_with(&p, Threads::ONE).unwrap();
        let many = order::conflicts_with(&p, Threads::new(t).with_min_chunk(chunk)).unwrap();
        prop_assert_eq!(&one, &many);
    }
}

/// A random DAG whose edges only reach a few vertices ahead (vertex `v`'s predecessors lie
/// within `window` before it, some vertices have none), so its topological order often has
/// cuts (a vertex every earlier one reaches and every later one descends from) and the
/// conflicts come from several sections (chains.rs). Allocations may span cuts.
fn sectioned() -> impl Strategy<Value = Problem> {
    (4usize..48, 1u32..5)
        .prop_flat_map(|(n, window)| {
            let preds = proptest::collection::vec(proptest::collection::vec(1..=window, 0..3), n);
            let allocs = proptest::collection::vec((0..n as u32, 1u32..12, 1u64..2000, 0u8..10), 1..16);
            (Just(n), preds, allocs)
        })
        .prop_map(|(n, preds, allocs)| {
            let mut pairs = Vec::new();
            for (v, back) in preds.into_iter().enumerate() {
                for d in back {
                    if let Some(p) = (v as u32).checked_sub(d) {
                        pairs.push((p, v as u32));
                    }
                }
            }
            let mut list = Vec::new();
            for (m, len, size, kind) in allocs {
                let f = (m + len).min(n as u32 - 1);
                let free = if kind == 0 || f == m { None } else { Some(f) };
                if let Some(f) = free {
                    pairs.push((m, f));
                }
                list.push(Allocation { malloc: m, free, size, zero_init: kind == 1 });
            }
            Problem { succ: Csr::from_pairs(n, &pairs), allocs: list }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// Conflicts on graphs with cuts are exactly the pairs neither of which is before the
    /// other, on any number of threads.
    #[test]
    fn conflicts_across_sections_are_exact(p in sectioned(), t in 2usize..5) {
        let one = order::conflicts_with(&p, Threads::ONE).unwrap();
        for a in 0..p.allocs.len() {
            for b in 0..p.allocs.len() {
                if a != b {
                    let expected = !before(&p, a, b) && !before(&p, b, a);
                    prop_assert_eq!(one.conflict(&p, a as u32, b as u32), expected, "pair {} {}", a, b);
                }
            }
        }
        prop_assert_eq!(order::conflicts_with(&p, Threads::new(t).with_min_chunk(1)).unwrap(), one);
    }
}

/// `copies` copies of [`wide`] one after the other, each joined to the next through one
/// vertex that waits for all of its sinks: sections of more chains holding frees than one
/// block of labels holds.
fn wide_sections(copies: u32, chains: u32, allocs: u32, cross: u32) -> Problem {
    let one = wide(chains, allocs, cross);
    let n = one.succ.len() as u32;
    let mut pairs = Vec::new();
    let mut list = Vec::new();
    let stride = n + 1;
    for c in 0..copies {
        let base = c * stride;
        for v in 0..n {
            for &w in one.succ.neighbours(v) {
                pairs.push((base + v, base + w));
            }
            if one.succ.neighbours(v).is_empty() {
                pairs.push((base + v, base + n));
            }
            if c > 0 && !pairs.iter().any(|&(_, w)| w == base + v) {
                pairs.push((base - 1, base + v));
            }
        }
        list.extend(one.allocs.iter().map(|a| Allocation {
            malloc: base + a.malloc,
            free: a.free.map(|f| base + f),
            size: a.size,
            zero_init: a.zero_init,
        }));
    }
    Problem { succ: Csr::from_pairs((copies * stride) as usize, &pairs), allocs: list }
}

#[test]
fn conflicts_of_wide_sections_are_exact_on_any_threads() {
    let p = wide_sections(3, 70, 140, 9);
    let one = order::conflicts_with(&p, Threads::ONE).unwrap();
    assert!(one.chains > 3 * 64, "{} chains hold a free", one.chains);
    for a in 0..p.allocs.len() {
        for b in 0..p.allocs.len() {
            if a != b {
                let expected = !before(&p, a, b) && !before(&p, b, a);
                assert_eq!(one.conflict(&p, a as u32, b as u32), expected, "pair {a} {b}");
            }
        }
    }
    for (t, chunk) in [(2, 1), (3, 50)] {
        assert_eq!(order::conflicts_with(&p, Threads::new(t).with_min_chunk(chunk)).unwrap(), one, "{t} threads");
    }
}

/// A wide DAG: `chains` independent chains of malloc → kernel → free, allocations taken
/// round-robin over the chains, with a cross edge from a free to a later malloc every
/// `cross` allocations. More chains than one block of labels holds (64), so the conflicts
/// come from several blocks.
fn wide(chains: u32, allocs: u32, cross: u32) -> Problem {
    let mut pairs = Vec::new();
    let mut tail: Vec<Option<u32>> = vec![None; chains as usize];
    let mut list = Vec::new();
    let mut next = 0u32;
    for i in 0..allocs {
        let c = (i % chains) as usize;
        let (m, k, f) = (next, next + 1, next + 2);
        next += 3;
        if let Some(t) = tail[c] {
            pairs.push((t, m));
        }
        pairs.push((m, k));
        pairs.push((k, f));
        if i >= cross && i % cross == 0 {
            if let Some(prev) = list.get((i - cross) as usize).and_then(|a: &Allocation| a.free) {
                pairs.push((prev, m));
            }
        }
        tail[c] = Some(f);
        list.push(Allocation { malloc: m, free: Some(f), size: 1 + u64::from(i * 7919 % 97), zero_init: i % 41 == 5 });
    }
    Problem { succ: Csr::from_pairs(next as usize, &pairs), allocs: list }
}

#[test]
fn conflicts_from_several_label_blocks_are_exact_on_any_threads() {
    let p = wide(150, 450, 7);
    let one = order::conflicts_with(&p, Threads::ONE).unwrap();
    assert!(one.chains > 64, "{} chains hold a free: a single block", one.chains);
    for a in 0..p.allocs.len() {
        for b in 0..p.allocs.len() {
            if a != b {
                let expected = !before(&p, a, b) && !before(&p, b, a);
                assert_eq!(one.conflict(&p, a as u32, b as u32), expected, "pair {a} {b}");
            }
        }
    }
    for (t, chunk) in [(2, 1), (3, 50), (16, 7)] {
        assert_eq!(order::conflicts_with(&p, Threads::new(t).with_min_chunk(chunk)).unwrap(), one, "{t} threads");
    }
}

/// Inputs over `planner::LARGE` allocations, where the planner runs two orders at once and
/// the conflicts are built by ranges: the plan is the one of a single thread, and valid.
#[test]
fn large_plans_do_not_depend_on_the_threads() {
    use cmdgraph_passes::memory::workloads::{Shape, Sizes, Spec};
    for (shape, queues, seed) in [(Shape::RandomDag { window: 8 }, 3, 21), (Shape::LayerStack { skip: 3 }, 2, 22)] {
        let spec = Spec { shape, ops: 24_000, queues, base: 256, sizes: Sizes::Mixed { max_factor: 64 }, seed };
        let module = cmdgraph_ir::text::parse(&spec.program().to_text()).unwrap();
        let graph = &module.graphs[module.graph_by_name("g").unwrap()];
        let p = Problem::from_graph_with(graph, Threads::ONE).unwrap();
        assert!(p.allocs.len() > planner::LARGE);
        assert!(Problem::from_graph_with(graph, Threads::new(3).with_min_chunk(1_000)).unwrap() == p);
        let one = order::conflicts_with(&p, Threads::ONE).unwrap();
        let plan_one = planner::plan_with(&p, &one, 256, None, Threads::ONE);
        // plan_problem plans large inputs without the bound, beside computing it: the bound
        // would not have changed the plan.
        let bound = lower_bound::lower_bound(&p, &one, &planner::units(&p, 256));
        assert_eq!(planner::plan_with(&p, &one, 256, Some(bound), Threads::ONE), plan_one);
        for t in [2, 5] {
            let threads = Threads::new(t).with_min_chunk(1_000);
            let c = order::conflicts_with(&p, threads).unwrap();
            assert!(c == one, "{t} threads: other conflicts");
            assert_eq!(planner::plan_with(&p, &c, 256, None, threads), plan_one, "{t} threads: another plan");
        }
        // No two conflicting allocations share a byte.
        let units = planner::units(&p, 256);
        for a in 0..p.allocs.len() as u32 {
            for &b in one.adj.neighbours(a) {
                let (oa, ob) = (plan_one.offsets[a as usize], plan_one.offsets[b as usize]);
                let (sa, sb) = (units[a as usize] * 256, units[b as usize] * 256);
                assert!(oa + sa <= ob || ob + sb <= oa || sa == 0 || sb == 0, "{a} and {b} overlap");
            }
        }
        assert!(plan_one.offsets.iter().all(|o| o % 256 == 0));
    }
}
