//! `reduce::transitive_reduction` is exact: the same edge set as petgraph's
//! `dag_transitive_reduction_closure` on random DAGs, small and dense ones and ones longer
//! than the bitset window with long edges that the window cannot answer.

use cmdgraph_passes::analysis::Csr;
use cmdgraph_passes::reduce::{transitive_reduction, WINDOW};
use petgraph::adj::{List, NodeIndex};
use petgraph::algo::tred::dag_transitive_reduction_closure;
use proptest::prelude::*;
use std::collections::BTreeSet;

/// A DAG: `ranks` are forward edges between ranks (`a < b`); node names are a permutation
/// of the ranks so that node indices are not a topological order.
#[derive(Clone, Debug)]
struct Dag {
    names: Vec<u32>,
    ranks: Vec<(u32, u32)>,
}

impl Dag {
    fn pairs(&self) -> Vec<(u32, u32)> {
        self.ranks.iter().map(|&(a, b)| (self.names[a as usize], self.names[b as usize])).collect()
    }
}

/// Ours, as a set of (from, to) names.
fn ours(dag: &Dag) -> BTreeSet<(u32, u32)> {
    let pairs = dag.pairs();
    let csr = Csr::from_pairs(dag.names.len(), &pairs);
    let keep = transitive_reduction(&csr).expect("a DAG");
    let mut out = BTreeSet::new();
    let mut slot = 0;
    for v in 0..dag.names.len() as u32 {
        for &w in csr.neighbours(v) {
            if keep[slot] {
                assert!(out.insert((v, w)), "a duplicate edge {v}->{w} kept twice");
            }
            slot += 1;
        }
    }
    out
}

/// petgraph's, over ranks (its input must be indexed by a topological order with sorted,
/// duplicate-free successor lists), mapped back to names.
fn petgraphs(dag: &Dag) -> BTreeSet<(u32, u32)> {
    let n = dag.names.len();
    let mut succ: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); n];
    for &(a, b) in &dag.ranks {
        succ[a as usize].insert(b);
    }
    let mut list: List<(), u32> = List::with_capacity(n);
    for _ in 0..n {
        list.add_node();
    }
    for (a, targets) in succ.iter().enumerate() {
        for &b in targets {
            list.add_edge(NodeIndex::from(a as u32), NodeIndex::from(b), ());
        }
    }
    let (tred, _) = dag_transitive_reduction_closure(&list);
    let mut out = BTreeSet::new();
    for e in tred.edge_indices() {
        let (a, b) = tred.edge_endpoints(e).expect("an edge");
        out.insert((dag.names[a as usize], dag.names[b as usize]));
    }
    out
}

fn shuffled(n: usize, seed: u64) -> Vec<u32> {
    let mut names: Vec<u32> = (0..n as u32).collect();
    let mut s = seed | 1;
    for i in (1..n).rev() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        names.swap(i, (s % (i as u64 + 1)) as usize);
    }
    names
}

/// Small dense DAGs, duplicates included.
fn small_dag() -> impl Strategy<Value = Dag> {
    (1usize..40, any::<u64>()).prop_flat_map(|(n, seed)| {
        let edge = (0..n as u32, 0..n as u32).prop_map(|(a, b)| (a.min(b), a.max(b)));
        proptest::collection::vec(edge, 0..4 * n).prop_map(move |ranks| {
            let ranks = ranks.into_iter().filter(|(a, b)| a < b).collect();
            Dag { names: shuffled(n, seed), ranks }
        })
    })
}

/// DAGs longer than the window: short edges (span 1..8) that keep the order tight, plus
/// long edges that skip more than the window, some implied by the short ones, some not.
fn long_dag() -> impl Strategy<Value = Dag> {
    (WINDOW + 10..3 * WINDOW, any::<u64>()).prop_flat_map(|(n, seed)| {
        // `a` is drawn below `n - d`, so every edge stays in range.
        let n32 = n as u32;
        let short = (1u32..8).prop_flat_map(move |d| (0..n32 - d).prop_map(move |a| (a, a + d)));
        let long = (WINDOW as u32..n32).prop_flat_map(move |d| (0..n32 - d).prop_map(move |a| (a, a + d)));
        (proptest::collection::vec(short, 0..2 * n), proptest::collection::vec(long, 0..20)).prop_map(
            move |(mut ranks, long)| {
                ranks.extend(long);
                Dag { names: shuffled(n, seed), ranks }
            },
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn small_dags_match_petgraph(dag in small_dag()) {
        prop_assert_eq!(ours(&dag), petgraphs(&dag));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn long_dags_match_petgraph(dag in long_dag()) {
        prop_assert_eq!(ours(&dag), petgraphs(&dag));
    }
}

/// Sparse chains of many components: mostly long edges in the topological order.
#[test]
fn interleaved_chains_match_petgraph() {
    let n = 4 * WINDOW;
    let mut ranks = Vec::new();
    // Kahn's order runs chain 0 to its end first, so every cross edge is long.
    for c in 0..4u32 {
        let base = c * WINDOW as u32;
        for i in 0..WINDOW as u32 - 1 {
            ranks.push((base + i, base + i + 1));
        }
    }
    for i in (0..WINDOW as u32).step_by(37) {
        ranks.push((i, WINDOW as u32 + i));
        ranks.push((i, 2 * WINDOW as u32 + i + 3));
        ranks.push((WINDOW as u32 + i, 2 * WINDOW as u32 + i + 1));
    }
    let dag = Dag { names: (0..n as u32).collect(), ranks };
    assert_eq!(ours(&dag), petgraphs(&dag));
}
