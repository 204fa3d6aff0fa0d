//! Whole-graph update on Vulkan, as sycl/tests/update.rs checks it on the interpreter: a
//! topologically identical source changes arguments, launches and host-task callbacks;
//! anything else is refused naming the node, and a refused update changes nothing.
//! Re-recorded command buffers are counted per kind of change.

mod common;

use cmdgraph_executor::Executor;
use cmdgraph_interp::Interpreter;
use cmdgraph_ir::bundle::{CompiledKernel, GraphPlan};
use common::*;

/// The graph body: `%k` scales `@a` into `@out` by `s` over `n` items; `%k2` adds `src` and
/// `@out` into `@out2`.
fn graph(name: &str, s: f32, n: u64, src: &str, extra: &str) -> String {
    format!(
        "graph @{name} properties(updatable) {{
  %fa = kernel @ramp range(1000) args(@a)
  %k = kernel @scale range({n}) args(@a, @out, {s:?}) after(%fa)
  %k2 = kernel @add2 range(1000) args({src}, @out, @out2) after(%k)
{extra}}}
"
    )
}

fn module(graphs: &[String]) -> String {
    format!(
        "{KERNELS_IR}
usm @a : f32[1000]
usm @b : f32[1000]
usm @out : f32[1000]
usm @out2 : f32[1000]
{}",
        graphs.join("\n")
    )
}

fn setup(extra: Vec<CompiledKernel>, plans: Vec<GraphPlan>) -> (Executor, cmdgraph_executor::ExecId) {
    let ir = module(&[graph("g", 2.0, 1000, "@a", "")]);
    let mut ex = executor(bundle(&ir, extra, plans));
    let bvals: Vec<f32> = (0..1000).map(|i| 3.0 * i as f32).collect();
    ex.bind_as("b", &bvals).unwrap();
    let e = ex.finalize("g").unwrap();
    ex.run(e).unwrap();
    (ex, e)
}

fn parse(text: &str) -> cmdgraph_ir::Module {
    cmdgraph_ir::text::parse(text).unwrap()
}

fn outputs(ex: &Executor) -> Vec<Vec<f32>> {
    ["out", "out2"].iter().map(|n| ex.read_as(n).unwrap()).collect()
}

#[test]
fn whole_graph_update_matches_interpreter_and_counts_rerecords() {
    let (mut ex, e) = setup(vec![], vec![]);
    let base = ex.recorded(e).unwrap();
    // Scalar and range changes: memory only.
    let new = graph("g", 5.0, 500, "@a", "");
    ex.update_graph(e, &parse(&module(std::slice::from_ref(&new))), "g").unwrap();
    ex.run(e).unwrap();
    assert_eq!(ex.recorded(e).unwrap(), base, "scalar and range updates re-record nothing");
    // A pointer to another buffer.
    let new2 = graph("g", 5.0, 500, "@b", "");
    ex.update_graph(e, &parse(&module(std::slice::from_ref(&new2))), "g").unwrap();
    ex.run(e).unwrap();
    let want = if ex.context().update_after_bind() { base } else { base + 1 };
    assert_eq!(ex.recorded(e).unwrap(), want, "another buffer re-records only without UPDATE_AFTER_BIND");
    // The interpreter runs the three graphs in turn on the same memory.
    let both = module(&[graph("g", 2.0, 1000, "@a", ""), new.replace("@g ", "@g1 "), new2.replace("@g ", "@g2 ")]);
    let m = parse(&both);
    let mut it = Interpreter::new(&m).unwrap();
    let bvals: Vec<f32> = (0..1000).map(|i| 3.0 * i as f32).collect();
    it.bind_as("b", &bvals).unwrap();
    for g in ["g", "g1", "g2"] {
        let x = it.finalize(g).unwrap();
        it.run(x).unwrap();
    }
    let want: Vec<Vec<f32>> = ["out", "out2"].iter().map(|n| it.read_as(n).unwrap()).collect();
    assert_eq!(outputs(&ex), want);
    // Spot check: items past 500 keep the first run's 2·i; before it 5·i.
    assert_eq!(want[0][10], 50.0);
    assert_eq!(want[0][600], 1200.0);
    no_messages(&ex);
}

#[test]
fn whole_graph_update_to_another_work_group_size_rerecords_one_segment() {
    let nd = |local: u32| {
        graph("g", 2.0, 1000, "@a", "").replace(
            "%k = kernel @scale range(1000)",
            &format!("%k = kernel @scale nd_range(global(1024), local({local}))"),
        )
    };
    let ir = module(&[nd(64)]);
    let mut ex = executor(bundle(&ir, vec![compiled(&SCALE, 8)], vec![]));
    let e = ex.finalize("g").unwrap();
    let base = ex.recorded(e).unwrap();
    ex.update_graph(e, &parse(&module(&[nd(8)])), "g").unwrap();
    assert_eq!(ex.recorded(e).unwrap(), base + 1, "another variant re-records the node's segment");
    ex.run(e).unwrap();
    let out: Vec<f32> = ex.read_as("out").unwrap();
    assert_eq!(out[999], 1998.0);
    // No variant for 16; a range launch cannot become an nd_range one.
    for bad in [nd(16), graph("g", 2.0, 1000, "@a", "")] {
        let err = ex.update_graph(e, &parse(&module(&[bad])), "g").unwrap_err().to_string();
        assert!(err.contains("%k"), "{err}");
    }
    assert_eq!(ex.recorded(e).unwrap(), base + 1);
    no_messages(&ex);
}

/// Each variant of the source differs in one way topological identity forbids.
#[test]
fn whole_graph_update_refuses_non_identical_sources_and_changes_nothing() {
    let (mut ex, e) = setup(vec![], vec![]);
    let before = outputs(&ex);
    let base = ex.recorded(e).unwrap();
    let cases: Vec<(&str, String, &str)> = vec![
        ("node count", graph("g", 2.0, 1000, "@a", "  %e = empty after(%k2)\n"), "node counts"),
        (
            "other kernel",
            graph("g", 2.0, 1000, "@a", "").replace(
                "%k2 = kernel @add2 range(1000) args(@a, @out, @out2)",
                "%k2 = kernel @scale range(1000) args(@a, @out2, 1.0)",
            ),
            "kernels differ",
        ),
        (
            "edge source",
            graph("g", 2.0, 1000, "@a", "").replace("@out2) after(%k)", "@out2) after(%fa)"),
            "incoming edge 0",
        ),
        (
            "provenance",
            graph("g", 2.0, 1000, "@a", "").replace("@out2) after(%k)", "@out2) after(%k via event)"),
            "different API calls",
        ),
        (
            "in-degree",
            graph("g", 2.0, 1000, "@a", "").replace("@out2) after(%k)", "@out2) after(%k, %fa)"),
            "edge counts",
        ),
        (
            "node type",
            graph("g", 2.0, 1000, "@a", "")
                .replace("%k2 = kernel @add2 range(1000) args(@a, @out, @out2)", "%k2 = empty"),
            "node types differ",
        ),
        (
            "memset",
            graph("g", 2.0, 1000, "@a", "")
                .replace("%k2 = kernel @add2 range(1000) args(@a, @out, @out2)", "%k2 = memset @out2, 0, 16"),
            "row 27",
        ),
    ];
    for (what, g, expect) in cases {
        let m = parse(&module(&[g]));
        let err = ex.update_graph(e, &m, "g").expect_err(what).to_string();
        assert!(err.contains(expect), "{what}: {err}");
        assert!(err.contains("%k2") || err.contains("%e"), "{what}: the error names the node: {err}");
    }
    assert_eq!(ex.recorded(e).unwrap(), base, "refused updates re-record nothing");
    ex.run(e).unwrap();
    assert_eq!(outputs(&ex), before, "refused updates change nothing");
    no_messages(&ex);
}

#[test]
fn whole_graph_update_refusals_by_property_and_optimizer() {
    // Not updatable (row 29).
    let ir = module(&[graph("g", 2.0, 1000, "@a", "").replace(" properties(updatable)", "")]);
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    let e = ex.finalize("g").unwrap();
    let err = ex.update_graph(e, &parse(&ir), "g").unwrap_err().to_string();
    assert!(err.contains("updatable"), "{err}");
    // The optimizer wrote %k differently from the source (as constant folding would): %k
    // cannot change, other nodes can.
    let source = module(&[graph("g", 2.0, 1000, "@a", "")]);
    let mut b = bundle(&source, vec![], vec![]);
    b.optimized = module(&[graph("g", 4.0, 1000, "@a", "")]);
    b.pipeline = "fold".into();
    let mut ex = executor(b);
    let e = ex.finalize("g").unwrap();
    let err = ex.update_graph(e, &parse(&module(&[graph("g", 3.0, 1000, "@a", "")])), "g").unwrap_err().to_string();
    assert!(err.contains("%k") && err.contains("optimizer transformed"), "{err}");
    ex.update_graph(e, &parse(&module(&[graph("g", 2.0, 1000, "@b", "")])), "g").unwrap();
    ex.run(e).unwrap();
    let out: Vec<f32> = ex.read_as("out").unwrap();
    assert_eq!(out[3], 12.0, "the optimized %k still runs");
    no_messages(&ex);
}

/// Decision A1: a host task's callback is swapped by whole-graph update.
#[test]
fn whole_graph_update_swaps_host_task() {
    let g = |cb: &str| {
        format!(
            "graph @g properties(updatable) {{
  %fa = kernel @ramp range(16) args(@a)
  %h = host_task \"{cb}\" access(@a read, @out write) after(%fa)
}}
"
        )
    };
    let ir = module(&[g("times2")]);
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    for (name, f) in [("times2", 2.0f32), ("times5", 5.0)] {
        ex.register_callback(name, move |ctx| {
            let a: Vec<f32> = ctx.read_as("a")?;
            ctx.write_as("out", 0, &a.iter().map(|v| v * f).collect::<Vec<_>>())
        });
    }
    let e = ex.finalize("g").unwrap();
    ex.run(e).unwrap();
    assert_eq!(ex.read_as::<f32>("out").unwrap()[3], 6.0);
    ex.update_graph(e, &parse(&module(&[g("times5")])), "g").unwrap();
    ex.run(e).unwrap();
    assert_eq!(ex.read_as::<f32>("out").unwrap()[3], 15.0);
    // The access list is not updatable.
    let other = g("times5").replace("@a read", "@b read");
    let err = ex.update_graph(e, &parse(&module(&[other])), "g").unwrap_err().to_string();
    assert!(err.contains("%h") && err.contains("access"), "{err}");
    no_messages(&ex);
}
