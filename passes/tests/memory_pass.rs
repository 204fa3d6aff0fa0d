//! The `plan-memory` pass through the pipeline: it records a deterministic plan per graph
//! with allocations, honours the context's alignment, reports its statistics, changes no
//! graph, and its plan runs on the interpreter with the outputs of separate allocations.

use cmdgraph_interp::{AllocLayout, Interpreter};
use cmdgraph_passes::memory::workloads::{Shape, Sizes, Spec};
use cmdgraph_passes::pipeline::{run_pipeline, RunOptions};
use cmdgraph_passes::{lookup, PassContext};

fn run(text: &str, alignment: Option<u64>) -> (cmdgraph_ir::Module, PassContext, String) {
    let mut module = cmdgraph_ir::text::parse(text).unwrap();
    let before = cmdgraph_ir::text::print(&module);
    let mut ctx = PassContext { memory_alignment: alignment, ..PassContext::default() };
    let pass = lookup("plan-memory").unwrap();
    let options = RunOptions { verify_each: true, ..RunOptions::default() };
    run_pipeline(&mut module, &[pass], &options, &mut ctx, &mut |_| {}).unwrap();
    (module, ctx, before)
}

#[test]
fn saxpy_chain_temporaries_are_planned() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/saxpy_chain.cgir")).unwrap();
    let (module, ctx, before) = run(&text, None);
    assert_eq!(cmdgraph_ir::text::print(&module), before, "the pass changes no graph");
    let plan = &ctx.memory_plans["main"];
    // %t1 is allocated while %t0 is live (k1 reads t0 and writes t1): no sharing possible.
    assert_eq!(plan.pool_size, 2 * 65536 * 4);
    assert_eq!(plan.lower_bound, plan.pool_size);
    assert_eq!(plan.alignment, 256);
    let names: Vec<&str> = plan.allocations.iter().map(|a| a.node.as_str()).collect();
    assert_eq!(names, ["t0", "t1"]);
    assert_eq!(plan.allocations[0].free.as_deref(), Some("f0"));
}

#[test]
fn plans_are_deterministic_and_follow_the_alignment() {
    let spec = Spec {
        shape: Shape::RandomDag { window: 5 },
        ops: 60,
        queues: 3,
        base: 3,
        sizes: Sizes::Mixed { max_factor: 9 },
        seed: 7,
    };
    let text = spec.program().to_text();
    let (_, a, _) = run(&text, Some(64));
    let (_, b, _) = run(&text, Some(64));
    assert_eq!(a.memory_plans, b.memory_plans);
    let plan = &a.memory_plans["g"];
    assert_eq!(plan.alignment, 64);
    assert!(plan.allocations.iter().all(|x| x.offset % 64 == 0));
    assert!(plan.pool_size >= plan.lower_bound && plan.pool_size < plan.naive);
    let report = cmdgraph_passes::memory::report_text(plan);
    assert!(plan.allocations.iter().all(|x| report.contains(&format!("%{} ", x.node))));
    assert!(report.contains(&format!("pool (required_mem_size): {} B", plan.pool_size)));
}

#[test]
fn the_plan_runs_like_separate_allocations() {
    let spec = Spec {
        shape: Shape::EncoderDecoder { levels: 3 },
        ops: 30,
        queues: 2,
        base: 8,
        sizes: Sizes::Mixed { max_factor: 4 },
        seed: 3,
    };
    let text = spec.program().to_text();
    let (module, ctx, _) = run(&text, None);
    let graph = &module.graphs[module.graph_by_name("g").unwrap()];
    let layout = ctx.memory_plans["g"].pool_layout(graph);
    let x: Vec<f32> = (0..8).map(|i| i as f32 - 2.5).collect();
    let mut out = Vec::new();
    for layout in [AllocLayout::Separate, AllocLayout::Pool(layout)] {
        let mut interp = Interpreter::new(&module).unwrap();
        interp.bind_as("x", &x).unwrap();
        let exec = interp.finalize_with("g", layout).unwrap();
        interp.run(exec).unwrap();
        out.push(interp.read_as::<f32>("out").unwrap());
    }
    assert_eq!(out[0], out[1]);
}

#[test]
fn statistics_are_reported() {
    let text = "graph @g {\n  %a = async_malloc f32[64]\n  %fa = async_free %a after(%a)\n  %b = async_malloc f32[64] after(%fa)\n  %fb = async_free %b after(%b)\n}\n";
    let mut module = cmdgraph_ir::text::parse(text).unwrap();
    let mut ctx = PassContext::default();
    let pass = lookup("plan-memory").unwrap();
    let report = run_pipeline(&mut module, &[pass], &RunOptions::default(), &mut ctx, &mut |_| {}).unwrap();
    let stats = cmdgraph_passes::pipeline::render_stats(&report);
    assert!(stats.contains("allocations") && stats.contains("pool-bytes"), "{stats}");
    assert_eq!(ctx.memory_plans["g"].pool_size, 256);
    assert_eq!(ctx.memory_plans["g"].naive, 512);
    assert_eq!(ctx.memory_plans["g"].dpcpp, 256);
}

/// MiniMalloc instances become graphs whose conflicts are exactly the overlapping intervals.
#[test]
fn converted_minimalloc_instances_keep_interval_semantics() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../bench/data/minimalloc/");
    let csv = std::fs::read_to_string(format!("{dir}A.1048576.csv")).unwrap();
    let intervals = cmdgraph_passes::memory::workloads::parse_minimalloc_csv(&csv).unwrap();
    assert_eq!(intervals.len(), 154);
    let module = cmdgraph_ir::text::parse(&cmdgraph_passes::memory::workloads::intervals_text(&intervals)).unwrap();
    cmdgraph_ir::verify::verify(&module).unwrap();
    let graph = &module.graphs[module.graph_by_name("g").unwrap()];
    let problem = cmdgraph_passes::memory::lifetimes::Problem::from_graph(graph).unwrap();
    let conflicts = cmdgraph_passes::memory::order::conflicts(&problem).unwrap();
    // Allocation k of the problem is the k-th malloc in node order; map it back by name.
    let names = cmdgraph_passes::memory::lifetimes::AllocNames::from_graph(graph, &problem);
    let index: Vec<usize> = names.malloc.iter().map(|n| n.trim_start_matches('m').parse().unwrap()).collect();
    for a in 0..index.len() {
        for b in 0..index.len() {
            let (x, y) = (intervals[index[a]], intervals[index[b]]);
            let overlap = x.0 < y.1 && y.0 < x.1;
            assert_eq!(conflicts.conflict(&problem, a as u32, b as u32), a != b && overlap, "{a} {b}");
        }
    }
    let small = std::fs::read_to_string(format!("{dir}input.12.csv")).unwrap();
    let small = cmdgraph_passes::memory::workloads::parse_minimalloc_csv(&small).unwrap();
    let module = cmdgraph_ir::text::parse(&cmdgraph_passes::memory::workloads::intervals_text(&small)).unwrap();
    let plan = cmdgraph_passes::memory::plan_graph(&module.graphs[module.graph_by_name("g").unwrap()], 1).unwrap();
    assert_eq!((plan.pool_size, plan.lower_bound, plan.naive), (12, 12, 20));
    assert!(cmdgraph_passes::memory::workloads::parse_minimalloc_csv("id,lower,upper,size\n0,5,5,1\n").is_err());
    assert!(cmdgraph_passes::memory::workloads::parse_minimalloc_csv("id,lower,upper,size\n0,x,5,1\n").is_err());
}
