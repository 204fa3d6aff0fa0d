//! The pipeline runner: spec parsing, verify-each, dumps, restore on failure, the report.

mod support;

use cmdgraph_ir::graph::NodeKind;
use cmdgraph_ir::Module;
use cmdgraph_passes::pipeline::{
    parse_pipeline, render_stats, render_timings, run_pipeline, DumpPosition, PipelineEvent, RunOptions,
};
use cmdgraph_passes::{PassContext, PassError, PassInfo, REGISTRY};

const TEXT: &str = "usm @x : f32[4]\n\ngraph @g {\n  %a = memset @x, 0, 16\n  %b = memset @x, 1, 16 after(%a)\n}\n";

/// Adds an edge that closes a cycle: the verifier must reject it.
fn break_graph(m: &mut Module, ctx: &mut PassContext) -> Result<(), PassError> {
    ctx.bump("edges-broken", 1);
    for (_, g) in m.graphs.iter_mut() {
        let (Some(a), Some(b)) = (g.node_by_name("a"), g.node_by_name("b")) else { continue };
        cmdgraph_ir::edit::add_edge(g, b, a);
    }
    Ok(())
}

/// Renames a node, then fails: the runner must undo the rename.
fn fail_after_change(m: &mut Module, _: &mut PassContext) -> Result<(), PassError> {
    for (_, g) in m.graphs.iter_mut() {
        for (_, n) in g.nodes.iter_mut() {
            n.name.push_str("_changed");
        }
    }
    Err(PassError::Failed { pass: "fail", graph: "g".into(), node: None, message: "on purpose".into() })
}

/// Counts nodes into a statistic.
fn count(m: &mut Module, ctx: &mut PassContext) -> Result<(), PassError> {
    let n = m.graphs.iter().map(|(_, g)| g.nodes.len() as u64).sum();
    ctx.bump("nodes", n);
    Ok(())
}

static BROKEN: PassInfo =
    PassInfo { name: "broken", summary: "adds a cycle", statistics: &[], preserves: "nothing", run: break_graph };
static FAIL: PassInfo =
    PassInfo { name: "fail", summary: "fails", statistics: &[], preserves: "nothing", run: fail_after_change };
static COUNT: PassInfo =
    PassInfo { name: "count", summary: "counts", statistics: &[("nodes", "nodes")], preserves: "all", run: count };

#[test]
fn unknown_pass_names_the_closest_one() {
    let err = parse_pipeline("inline-subgraphs,dead-node-elimnation", REGISTRY).unwrap_err();
    assert_eq!(
        err,
        PassError::UnknownPass { name: "dead-node-elimnation".into(), suggestion: Some("dead-node-elimination") }
    );
    assert!(err.to_string().contains("did you mean `dead-node-elimination`?"), "{err}");
    let err = parse_pipeline("inline", REGISTRY).unwrap_err();
    assert!(matches!(err, PassError::UnknownPass { suggestion: Some("inline-calls"), .. }), "{err:?}");
    let err = parse_pipeline("zzzzzz", REGISTRY).unwrap_err();
    assert!(matches!(err, PassError::UnknownPass { suggestion: None, .. }), "{err:?}");
    let err = parse_pipeline("inline-subgraphs,,dead-node-elimination", REGISTRY).unwrap_err();
    assert!(matches!(err, PassError::UnknownPass { ref name, .. } if name.is_empty()), "{err:?}");
}

#[test]
fn spec_keeps_order_and_repeats() {
    let passes = parse_pipeline(" dead-node-elimination , inline-subgraphs,dead-node-elimination", REGISTRY).unwrap();
    let names: Vec<_> = passes.iter().map(|p| p.name).collect();
    assert_eq!(names, ["dead-node-elimination", "inline-subgraphs", "dead-node-elimination"]);
    assert!(parse_pipeline("", REGISTRY).unwrap().is_empty());
}

#[test]
fn verify_each_catches_a_broken_pass_and_restores_the_module() {
    let original = support::module(TEXT);
    let mut m = original.clone();
    let options = RunOptions { verify_each: true, ..RunOptions::default() };
    let err = run_pipeline(&mut m, &[&COUNT, &BROKEN], &options, &mut PassContext::default(), &mut |_| {}).unwrap_err();
    let PassError::VerifyFailed { pass, diagnostics } = err else { panic!("{err:?}") };
    assert_eq!(pass, "broken");
    assert!(diagnostics.contains("error[E0251]"), "{diagnostics}");
    assert!(diagnostics.contains("<printed module>:"), "located in the printed module: {diagnostics}");
    assert_eq!(m, original);
    // Without verify-each the broken output goes through.
    let mut m = original.clone();
    run_pipeline(&mut m, &[&BROKEN], &RunOptions::default(), &mut PassContext::default(), &mut |_| {}).unwrap();
    assert_ne!(m, original);
}

#[test]
fn failed_pass_leaves_the_module_as_the_previous_pass_left_it() {
    let original = support::module(TEXT);
    let mut m = original.clone();
    let err = run_pipeline(&mut m, &[&COUNT, &FAIL], &RunOptions::default(), &mut PassContext::default(), &mut |_| {})
        .unwrap_err();
    assert!(matches!(err, PassError::Failed { pass: "fail", .. }));
    assert_eq!(m, original);
    assert!(m.graphs.iter().all(|(_, g)| g.nodes.iter().all(|(_, n)| !n.name.ends_with("_changed"))));
}

#[test]
fn discard_on_error_keeps_no_undo_copy_but_still_reports_the_failure() {
    let original = support::module(TEXT);
    let mut m = original.clone();
    let options = RunOptions { discard_on_error: true, verify_each: true, ..RunOptions::default() };
    let err = run_pipeline(&mut m, &[&COUNT, &FAIL], &options, &mut PassContext::default(), &mut |_| {}).unwrap_err();
    assert!(matches!(err, PassError::Failed { pass: "fail", .. }));
    // No copy was put back: the failing pass's rename is still there.
    assert!(m.graphs.iter().all(|(_, g)| g.nodes.iter().all(|(_, n)| n.name.ends_with("_changed"))));
    let mut m = original.clone();
    let err = run_pipeline(&mut m, &[&BROKEN], &options, &mut PassContext::default(), &mut |_| {}).unwrap_err();
    assert!(matches!(err, PassError::VerifyFailed { pass: "broken", .. }), "{err:?}");
    assert_ne!(m, original);
}

#[test]
fn print_before_and_after_select_passes() {
    let mut m = support::module(TEXT);
    let options = RunOptions {
        print_before: ["dead-node-elimination".to_string()].into(),
        print_after: ["count".to_string()].into(),
        ..RunOptions::default()
    };
    let dne = cmdgraph_passes::lookup("dead-node-elimination").unwrap();
    let mut seen = Vec::new();
    run_pipeline(&mut m, &[&COUNT, dne, &COUNT], &options, &mut PassContext::default(), &mut |e| {
        if let PipelineEvent::IrDump { position, pass, graphs, text } = e {
            assert_eq!(graphs, 1);
            assert!(text.contains("graph @g {"), "{text}");
            seen.push((position, pass));
        }
    })
    .unwrap();
    assert_eq!(
        seen,
        [
            (DumpPosition::After, "count"),
            (DumpPosition::Before, "dead-node-elimination"),
            (DumpPosition::After, "count")
        ]
    );
}

#[test]
fn print_after_all_and_dot_events_cover_every_step() {
    let mut m = support::module(TEXT);
    let options = RunOptions { print_after_all: true, dump_dot: true, ..RunOptions::default() };
    let mut dumps = 0;
    let mut dots = Vec::new();
    let mut started = Vec::new();
    run_pipeline(&mut m, &[&COUNT, &COUNT], &options, &mut PassContext::default(), &mut |e| match e {
        PipelineEvent::PassStarted { index, total, pass } => started.push((index, total, pass)),
        PipelineEvent::IrDump { .. } => dumps += 1,
        PipelineEvent::Dot { step, name, text } => {
            assert!(text.contains("digraph"), "{text}");
            dots.push((step, name));
        }
    })
    .unwrap();
    assert_eq!(dumps, 2);
    assert_eq!(dots, [(0, "input"), (1, "count"), (2, "count")]);
    assert_eq!(started, [(0, 2, "count"), (1, 2, "count")]);
}

#[test]
fn statistics_are_collected_per_pass_and_rendered() {
    let mut m = support::module(TEXT);
    let mut ctx = PassContext::default();
    ctx.bump("stale", 7);
    let report = run_pipeline(&mut m, &[&COUNT, &COUNT], &RunOptions::default(), &mut ctx, &mut |_| {}).unwrap();
    assert_eq!(report.passes.len(), 2);
    for r in &report.passes {
        assert_eq!(r.pass, "count");
        assert_eq!(r.stats.get("nodes"), Some(&2));
        assert!(!r.stats.contains_key("stale"));
    }
    let stats = render_stats(&report);
    assert_eq!(stats.matches("2 count - nodes").count(), 2, "{stats}");
    let timings = render_timings(&report);
    assert!(timings.contains("Total Execution Time:"), "{timings}");
    assert_eq!(timings.lines().filter(|l| l.ends_with("  count")).count(), 2, "{timings}");
}

#[test]
fn default_pipeline_keeps_every_example_valid_and_equivalent() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "cgir") {
            let text = std::fs::read_to_string(&path).unwrap();
            // The interpreter runs no SPIR-V, so a module with an external kernel has no
            // reference here; it runs on Vulkan against a twin in cli/tests/vulkan_external.rs.
            if text.contains(") spirv \"") {
                continue;
            }
            let after = support::check_semantics(&text, &cmdgraph_passes::DEFAULT_PIPELINE.join(","));
            let subgraphs = after
                .graphs
                .iter()
                .flat_map(|(_, g)| g.nodes.iter())
                .filter(|(_, n)| matches!(n.kind, NodeKind::Subgraph { .. }))
                .count();
            assert_eq!(subgraphs, 0, "{}", path.display());
            seen += 1;
        }
    }
    assert!(seen >= 5);
}
