//! `inline-subgraphs` cannot hang (issue 18): its work is linear in the size of its output,
//! counted by [`cmdgraph_passes::work::visited`] (a count, not a timing, so the bound means
//! the same on every machine), and a module whose graphs would grow past
//! `PassOptions::max_inlined_nodes` is rejected before anything is copied.
//!
//! Before the fix each copied node looked up its incoming edges by scanning every edge of
//! the child (`Graph::inline_edges`), and the sources of edges into a `subgraph` node were
//! deduplicated with `Vec::contains`: both quadratic. Counting the edges that scan visited,
//! the first test measured 8192 -> 65536 child nodes as 64-fold more work (8.5e7 -> 5.5e9
//! elements; release build 0.08 s -> 4.7 s) and failed; it is now 8-fold (6.5e4 -> 5.2e5
//! elements, 0.02 s -> 0.3 s).

use cmdgraph_ir::Module;
use cmdgraph_passes::work::visited;
use cmdgraph_passes::{lookup, PassContext, PassError, PassOptions};
use std::fmt::Write;
use std::time::Instant;

/// A parent whose one `subgraph` node embeds a child of `n` nodes: a chain with an extra
/// edge skipping one node at every fourth node, and `n / 8` parent nodes all feeding the
/// `subgraph` node (the fan-in that was deduplicated quadratically).
fn fan_and_chain(n: usize) -> String {
    let mut text = String::from("graph @child {\n  %c0 = empty\n");
    for i in 1..n {
        let _ = write!(text, "  %c{i} = empty after(%c{}", i - 1);
        if i % 4 == 0 && i >= 2 {
            let _ = write!(text, ", %c{}", i - 2);
        }
        text.push_str(")\n");
    }
    text.push_str("}\n\ngraph @parent {\n");
    let fan = n / 8;
    for i in 0..fan {
        let _ = writeln!(text, "  %p{i} = empty");
    }
    let preds: Vec<String> = (0..fan).map(|i| format!("%p{i}")).collect();
    let _ = writeln!(text, "  %s = subgraph @child after({})", preds.join(", "));
    text.push_str("  %t = empty after(%s)\n}\n");
    text
}

fn parse(text: &str) -> Module {
    cmdgraph_ir::text::parse(text).unwrap_or_else(|e| panic!("the generated text parses: {e:?}"))
}

/// Runs `inline-subgraphs` on `module` with `options`; the elements visited and the result.
fn inline(module: &mut Module, options: PassOptions) -> (u64, Result<(), PassError>) {
    let pass = lookup("inline-subgraphs").expect("registered");
    let mut ctx = PassContext { options, ..PassContext::default() };
    let before = visited();
    let result = (pass.run)(module, &mut ctx);
    (visited() - before, result)
}

fn graph_nodes(module: &Module, name: &str) -> usize {
    module.graphs.iter().find(|(_, g)| g.name == name).map(|(_, g)| g.nodes.len()).expect("graph exists")
}

#[test]
fn inlining_a_child_eight_times_larger_is_about_eight_times_the_work() {
    let mut counts = Vec::new();
    let mut report = String::new();
    for n in [8_192usize, 65_536] {
        let mut module = parse(&fan_and_chain(n));
        let start = Instant::now();
        let (work, result) = inline(&mut module, PassOptions::default());
        result.unwrap_or_else(|e| panic!("{e}"));
        let _ = writeln!(report, "{n} child nodes: {work} elements visited, {:?}", start.elapsed());
        // The copy, the fan and %t: nothing lost, so the count is of the real work.
        assert_eq!(graph_nodes(&module, "parent"), n + n / 8 + 1, "{report}");
        assert!(work >= n as u64, "{work} elements for {n} nodes: the counter is not counting\n{report}");
        counts.push(work);
    }
    eprint!("{report}");
    // Linear is 8-fold; the per-node edge scan was 64-fold.
    assert!(counts[1] <= 12 * counts[0], "not linear in the child's size:\n{report}");
}

/// `levels` graphs, each (but the first, one `empty` node) holding two `subgraph` nodes of
/// the previous one: `@g{levels-1}` is 2^(levels-1) nodes after inlining.
fn doubling(levels: usize) -> String {
    let mut text = String::from("graph @g0 {\n  %n = empty\n}\n");
    for l in 1..levels {
        let _ =
            write!(text, "\ngraph @g{l} {{\n  %a = subgraph @g{p}\n  %b = subgraph @g{p} after(%a)\n}}\n", p = l - 1);
    }
    text
}

#[test]
fn forty_levels_of_doubling_fail_at_once_naming_the_node_and_the_count() {
    let text = doubling(40);
    assert!(text.len() < 4096, "a few KB of text: {}", text.len());
    let mut module = parse(&text);
    let start = Instant::now();
    let (work, result) = inline(&mut module, PassOptions::default());
    let elapsed = start.elapsed();
    let Err(PassError::Failed { pass, graph, node, message }) = result else {
        panic!("40 levels of doubling were not rejected: {result:?}");
    };
    assert_eq!(pass, "inline-subgraphs");
    // 2^24 > 10^7 >= 2^23: @g24 is the first graph over the default limit.
    assert_eq!(graph, "g24", "{message}");
    assert_eq!(node.as_deref(), Some("a"), "{message}");
    assert!(message.contains("16777216 nodes"), "{message}");
    assert!(message.contains("limit of 10000000"), "{message}");
    assert!(message.contains("@g23 as 8388608 nodes"), "{message}");
    assert!(message.contains("nest fewer levels"), "{message}");
    let shown = PassError::Failed { pass, graph, node, message }.to_string();
    assert!(shown.starts_with("pass `inline-subgraphs` failed on @g24, node %a: inlining would make"), "{shown}");
    // Nothing was copied: the work is the size check over 40 small graphs.
    assert!(work < 1_000, "{work} elements visited before rejecting");
    assert!(elapsed.as_secs() < 5, "took {elapsed:?}");
    assert_eq!(graph_nodes(&module, "g39"), 2, "the module was changed");
}

#[test]
fn counts_past_u64_saturate_instead_of_wrapping() {
    // 2^70 nodes would wrap a u64 count back to small numbers and be let through.
    let mut module = parse(&doubling(72));
    let options = PassOptions { max_inlined_nodes: Some(u64::MAX - 1), ..PassOptions::default() };
    let (_, result) = inline(&mut module, options);
    let Err(PassError::Failed { graph, message, .. }) = result else {
        panic!("2^71 nodes were not rejected: {result:?}");
    };
    assert_eq!(graph, "g64", "{message}");
    assert!(message.contains("more than 1.8e19 nodes"), "{message}");
}

#[test]
fn the_limit_is_an_option_and_is_inclusive() {
    // @g7 is 128 nodes after inlining.
    let mut module = parse(&doubling(8));
    let tight = PassOptions { max_inlined_nodes: Some(127), ..PassOptions::default() };
    let (_, result) = inline(&mut module, tight);
    match result {
        Err(PassError::Failed { graph, message, .. }) => {
            assert_eq!(graph, "g7", "{message}");
            assert!(message.contains("128 nodes, above the limit of 127"), "{message}");
        }
        other => panic!("128 nodes passed a limit of 127: {other:?}"),
    }
    let exact = PassOptions { max_inlined_nodes: Some(128), ..PassOptions::default() };
    let (_, result) = inline(&mut module, exact);
    result.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(graph_nodes(&module, "g7"), 128);
}
