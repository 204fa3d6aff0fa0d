//! Memory plans checked by running them: generated model-shaped graphs run on the reference
//! interpreter with their allocations aliased into one planned pool give exactly the outputs
//! they give with separate allocations, in creation order and in random valid orders, with
//! no race (the race detector also checks the sharing condition on pool bytes).

use cmdgraph_interp::{AllocLayout, Interpreter, Order, RunOptions};
use cmdgraph_passes::memory::workloads::{Shape, Sizes, Spec};
use cmdgraph_passes::memory::{plan_graph, DEFAULT_ALIGNMENT};
use proptest::prelude::*;

/// Runs graph `@g` of `text` twice (allocations keep contents between runs) and returns
/// `@out`; `pooled` selects the planned layout.
fn run(text: &str, pooled: bool, order: Order) -> (Vec<f32>, u64) {
    let module = cmdgraph_ir::text::parse(text).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
    cmdgraph_ir::verify::verify(&module).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
    let g = module.graph_by_name("g").unwrap();
    let plan = plan_graph(&module.graphs[g], DEFAULT_ALIGNMENT).unwrap();
    let mut interp = Interpreter::new(&module).unwrap();
    let base = module.memories[module.memory_by_name("x").unwrap()].count as usize;
    let x: Vec<f32> = (0..base).map(|i| i as f32 * 0.75 - 3.0).collect();
    interp.bind_as("x", &x).unwrap();
    let layout = if pooled { AllocLayout::Pool(plan.pool_layout(&module.graphs[g])) } else { AllocLayout::Separate };
    let exec = interp.finalize_with("g", layout).unwrap();
    for _ in 0..2 {
        let stats = interp
            .run_with(exec, &RunOptions { order, check_races: true, fuel: None, ..RunOptions::default() })
            .unwrap();
        assert!(stats.races.is_empty(), "races: {:?}", stats.races);
    }
    (interp.read_as("out").unwrap(), plan.pool_size)
}

fn shapes() -> impl Strategy<Value = Shape> {
    prop_oneof![
        (2usize..5).prop_map(|skip| Shape::LayerStack { skip }),
        (1usize..4).prop_map(|levels| Shape::EncoderDecoder { levels }),
        (1usize..6).prop_map(|window| Shape::RandomDag { window }),
    ]
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Pooled and separate layouts give the same `@out`, bit for bit.
    #[test]
    fn pooled_equals_separate(shape in shapes(), ops in 1usize..28, queues in 1usize..4, seed in any::<u64>(), order_seed in any::<u64>()) {
        let spec = Spec { shape, ops, queues, base: 4, sizes: Sizes::Mixed { max_factor: 8 }, seed };
        let text = spec.program().to_text();
        let (separate, _) = run(&text, false, Order::Creation);
        let (pooled, _) = run(&text, true, Order::Creation);
        prop_assert_eq!(bits(&separate), bits(&pooled));
        let (random, _) = run(&text, true, Order::Random(order_seed));
        prop_assert_eq!(bits(&separate), bits(&random));
    }
}

/// The check can fail: putting every allocation of a residual stack at offset 0 makes
/// tensors that are read together alias, which the race detector reports.
#[test]
fn a_wrong_plan_is_caught() {
    let spec =
        Spec { shape: Shape::LayerStack { skip: 2 }, ops: 6, queues: 1, base: 4, sizes: Sizes::Uniform, seed: 1 };
    let text = spec.program().to_text();
    let module = cmdgraph_ir::text::parse(&text).unwrap();
    let g = module.graph_by_name("g").unwrap();
    let graph = &module.graphs[g];
    let plan = plan_graph(graph, DEFAULT_ALIGNMENT).unwrap();
    assert!(plan.pool_size < plan.naive, "{plan:?}");
    let mut interp = Interpreter::new(&module).unwrap();
    interp.bind_as("x", &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let mut layout = plan.pool_layout(graph);
    for v in layout.offsets.values_mut() {
        *v = 0;
    }
    let exec = interp.finalize_with("g", AllocLayout::Pool(layout)).unwrap();
    let stats = interp.run_with(exec, &RunOptions { check_races: true, ..RunOptions::default() }).unwrap();
    assert!(!stats.races.is_empty());
}
