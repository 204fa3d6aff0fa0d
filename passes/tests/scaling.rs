//! The graph passes stay near-linear (issue 17): on the benchmark's generated graphs
//! (bench/src/generate.rs: blocks of ten nodes with a temporary, kernels, a memcpy, a
//! memset and an empty join) of 10^3 and 10^4 nodes, the elements each pass visits
//! ([`cmdgraph_passes::work::visited`]) may grow at most 15-fold; quadratic work grows
//! 100-fold. A count, not a timing, so the test means the same on every machine. Before
//! the fixes plan-memory propagated chain labels over every node for every allocation's
//! chain (its label count grew 100-fold), and dead-node elimination rescanned every node
//! once per link of a chain of dead writers.

#[path = "../../bench/src/generate.rs"]
#[allow(dead_code)]
mod generate;

use cmdgraph_ir::Module;
use cmdgraph_passes::work::visited;
use cmdgraph_passes::{lookup, PassContext};
use std::fmt::Write;

/// The passes checked, in default-pipeline order (fusion, checked by its own tests, left
/// out: the others then see the graph as the generator wrote it).
const PASSES: &[&str] = &[
    "inline-subgraphs",
    "eliminate-empty-nodes",
    "eliminate-barriers",
    "dead-node-elimination",
    "transitive-reduction",
    "plan-memory",
];

/// Elements each pass of [`PASSES`] visits on `module`, run in order.
fn work(mut module: Module) -> Vec<(&'static str, u64)> {
    let mut ctx = PassContext::default();
    PASSES
        .iter()
        .map(|&name| {
            let pass = lookup(name).unwrap_or_else(|| panic!("no pass {name}"));
            let before = visited();
            (pass.run)(&mut module, &mut ctx).unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, visited() - before)
        })
        .collect()
}

fn generated(nodes: usize) -> Module {
    cmdgraph_ir::text::parse(&generate::module_text(nodes)).unwrap_or_else(|_| panic!("the generated text parses"))
}

#[test]
fn every_pass_visits_about_ten_times_more_on_ten_times_the_nodes() {
    let small = work(generated(1_000));
    let large = work(generated(10_000));
    let mut report = String::new();
    for ((name, s), (_, l)) in small.iter().zip(&large) {
        let _ = writeln!(report, "{name}: {s} at 10^3 nodes, {l} at 10^4");
    }
    eprint!("{report}");
    for ((name, s), (_, l)) in small.iter().zip(&large) {
        // Passes with nothing to count (no barrier, no sub-graph) visit nothing at all.
        if matches!(*name, "inline-subgraphs" | "eliminate-barriers") {
            continue;
        }
        assert!(*s >= 1_000, "{name} visited {s} elements on 10^3 nodes: the counter is not counting\n{report}");
        assert!(*l <= 15 * s, "{name}: {s} -> {l} elements from 10^3 to 10^4 nodes, not linear\n{report}");
    }
}

/// A chain of `k` kernels, each reading the temporary the one before wrote and writing its
/// own, the last one's unread: all of them are dead, found one link at a time.
fn dead_chain(k: usize) -> Module {
    let mut text = String::from(
        "kernel @copy(%a: buf<f32, read>, %b: buf<f32, write>) {
  %i = global_id 0
  %v = load %a[%i]
  store %b[%i], %v
}

usm @x : f32[64]

graph @g {
",
    );
    for i in 0..k {
        let _ = writeln!(text, "  %t{i} = async_malloc f32[64]");
    }
    for i in 0..k {
        let src = if i == 0 { "@x".to_string() } else { format!("%t{}", i - 1) };
        let after = if i == 0 { String::new() } else { format!(", %k{}", i - 1) };
        let _ = writeln!(text, "  %k{i} = kernel @copy range(64) args({src}, %t{i}) after(%t{i}{after})");
    }
    text.push_str("}\n");
    cmdgraph_ir::text::parse(&text).unwrap_or_else(|d| panic!("{}", cmdgraph_ir::diag::render_all(&d, "chain", &text)))
}

#[test]
fn dead_node_elimination_is_linear_on_a_chain_of_dead_writers() {
    let pass = lookup("dead-node-elimination").expect("registered");
    let run = |k: usize| {
        let mut m = dead_chain(k);
        let mut ctx = PassContext::default();
        let before = visited();
        (pass.run)(&mut m, &mut ctx).expect("runs");
        let g = m.graph_by_name("g").expect("graph");
        assert_eq!(m.graphs[g].nodes.len(), 0, "every kernel and allocation of the chain is dead");
        (visited() - before, ctx.stats.get("commands-removed").copied().unwrap_or(0))
    };
    let (small, removed) = run(300);
    assert_eq!(removed, 300);
    let (large, _) = run(3_000);
    assert!(small >= 300, "{small} elements visited: the counter is not counting");
    assert!(large <= 15 * small, "dead-node elimination: {small} -> {large} elements for 10x the chain");
}
