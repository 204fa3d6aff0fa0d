//! The exact search (passes/src/memory/exact.rs):
//! - on small random problems, general DAGs and interval instances alike, it reaches the
//!   optimum found by enumerating every order of canonical placement, and its placement is
//!   valid (conflicting allocations apart);
//! - it is deterministic;
//! - on MiniMalloc's `input.12` and challenging instance K, whose capacities are known to be
//!   reachable, the planner's pool is that capacity.

use cmdgraph_passes::analysis::Csr;
use cmdgraph_passes::memory::exact::search_only;
use cmdgraph_passes::memory::lifetimes::{Allocation, Problem};
use cmdgraph_passes::memory::workloads::{intervals_text, parse_minimalloc_csv};
use cmdgraph_passes::memory::{order, plan_graph, planner};
use proptest::prelude::*;

/// A random DAG problem (as in memory_plan.rs) without `zero_init` allocations.
fn dag_problem() -> impl Strategy<Value = Problem> {
    (3usize..16)
        .prop_flat_map(|n| {
            let edges = proptest::collection::vec((0..n as u32, 0..n as u32), 0..2 * n);
            let allocs = proptest::collection::vec((0..n as u32, 0..n as u32, 1u64..40, 0u8..8), 1..7);
            (Just(n), edges, allocs)
        })
        .prop_map(|(n, edges, allocs)| {
            let mut pairs: Vec<(u32, u32)> =
                edges.into_iter().filter(|(a, b)| a != b).map(|(a, b)| (a.min(b), a.max(b))).collect();
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
                list.push(Allocation { malloc: m, free: (kind != 0).then_some(f), size, zero_init: false });
            }
            Problem { succ: Csr::from_pairs(next as usize, &pairs), allocs: list }
        })
}

/// An interval instance (MiniMalloc style) as a problem, through the graph converter.
fn interval_problem() -> impl Strategy<Value = Problem> {
    proptest::collection::vec((0u64..10, 1u64..6, 1u64..40), 1..8).prop_map(|v| {
        let intervals: Vec<(u64, u64, u64)> = v.into_iter().map(|(l, w, s)| (l, l + w, s)).collect();
        let module = cmdgraph_ir::text::parse(&intervals_text(&intervals)).unwrap();
        let g = module.graph_by_name("g").unwrap();
        Problem::from_graph(module.graphs.try_get(g).unwrap()).unwrap()
    })
}

/// The optimum: every order, each allocation at the lowest offset above its conflicting
/// predecessors in the order (every gravity-packed placement is one of these).
fn brute_force(p: &Problem, c: &order::Conflicts, units: &[u64]) -> u64 {
    fn go(p: &Problem, c: &order::Conflicts, units: &[u64], placed: &mut Vec<(u32, u64)>, best: &mut u64) {
        let n = units.len();
        if placed.len() == n {
            *best = (*best).min(placed.iter().map(|&(i, o)| o + units[i as usize]).max().unwrap_or(0));
            return;
        }
        for b in 0..n as u32 {
            if placed.iter().any(|&(i, _)| i == b) {
                continue;
            }
            let at = placed
                .iter()
                .filter(|&&(i, _)| c.conflict(p, i, b))
                .map(|&(i, o)| o + units[i as usize])
                .max()
                .unwrap_or(0);
            placed.push((b, at));
            go(p, c, units, placed, best);
            placed.pop();
        }
    }
    let mut best = u64::MAX;
    go(p, c, units, &mut Vec::new(), &mut best);
    best
}

fn check(p: &Problem) -> Result<(), TestCaseError> {
    let c = order::conflicts(p).unwrap();
    let units = planner::units(p, 1);
    let (offsets, top) = search_only(p, &c, 1, 10_000_000);
    prop_assert_eq!(top, brute_force(p, &c, &units));
    for a in 0..units.len() {
        prop_assert!(offsets[a] + units[a] <= top);
        for b in 0..a {
            let apart = offsets[a] + units[a] <= offsets[b] || offsets[b] + units[b] <= offsets[a];
            prop_assert!(apart || !c.conflict(p, a as u32, b as u32), "{} and {} overlap", a, b);
        }
    }
    prop_assert_eq!(search_only(p, &c, 1, 10_000_000), (offsets, top), "deterministic");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn reaches_the_optimum_on_dags(p in dag_problem()) {
        check(&p)?;
    }

    #[test]
    fn reaches_the_optimum_on_intervals(p in interval_problem()) {
        check(&p)?;
    }
}

fn minimalloc(name: &str) -> u64 {
    let path = format!("{}/../bench/data/minimalloc/{name}", env!("CARGO_MANIFEST_DIR"));
    let intervals = parse_minimalloc_csv(&std::fs::read_to_string(path).unwrap()).unwrap();
    let module = cmdgraph_ir::text::parse(&intervals_text(&intervals)).unwrap();
    let g = module.graph_by_name("g").unwrap();
    let plan = plan_graph(module.graphs.try_get(g).unwrap(), 1).unwrap();
    assert_eq!(plan, plan_graph(module.graphs.try_get(g).unwrap(), 1).unwrap(), "deterministic");
    plan.pool_size
}

#[test]
fn minimalloc_input_12_fits_its_capacity() {
    assert_eq!(minimalloc("input.12.csv"), 12);
}

#[test]
fn minimalloc_k_fits_its_capacity() {
    // The greedy orders and the local search leave K 17 % above this; the exact search
    // reaches the capacity the instance was built for, which is also the min-flow bound.
    assert_eq!(minimalloc("K.1048576.csv"), 1_048_576);
}
