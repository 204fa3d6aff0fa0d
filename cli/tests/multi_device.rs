//! Multi-device graphs (docs/multi-device.md), what exists of them so far: the interpreter
//! runs a graph whose nodes name devices with one device's semantics (every memory object the
//! same bits as the graph with its placement removed); the default pipeline keeps every
//! node's device and fuses only nodes of one device (counted, and checked on the
//! interpreter); the executor, which drives one device, refuses such a graph at finalize,
//! naming the node.

mod support;

use cmdgraph_interp::Interpreter;
use cmdgraph_ir::{Module, NodeKind};
use support::{compile, executor, random_bytes, Rng};

/// Four element-wise steps, two on device 0 and two on device 1, joined by transfers both
/// ways; a replicated input read on both devices; a temporary allocated on device 1; a
/// `while` loop whose condition and body are on device 1.
const PLACED: &str = "kernel @axpy(%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32) {
  %i = global_id 0
  %xv = load %x[%i]
  %yv = load %y[%i]
  %r = fma %a, %xv, %yv
  store %y[%i], %r
}

kernel @scale(%x: buf<f32, read>, %y: buf<f32, write>, %s: f32) {
  %i = global_id 0
  %v = load %x[%i]
  %r = mul %v, %s
  store %y[%i], %r
}

kernel @countdown(%c: buf<u32, read_write>) {
  %z = const 0 : u32
  %one = const 1 : u32
  %n = load %c[%z]
  %n1 = sub %n, %one
  store %c[%z], %n1
}

usm @w : f32[256] replicated
usm @a : f32[256]
usm @b : f32[256] home(1)
usm @back : f32[256]
usm @flags : u32[1] home(1)

graph @loop_body {
  %s = kernel @axpy range(256) args(@w, @b, 0.25) device(1)
  %c = kernel @countdown single_task args(@flags) device(1) after(%s)
}

graph @g {
  %k0 = kernel @axpy range(256) args(@w, @a, 1.5)
  %k1 = kernel @axpy range(256) args(@w, @a, -0.75) after(%k0)
  %t = memcpy @b, @a, 1024 after(%k1)
  %m = async_malloc f32[256] device(1)
  %k2 = kernel @scale range(256) args(@b, %m, 3.0) device(1) after(%t, %m)
  %k3 = kernel @axpy range(256) args(%m, @b, 0.5) device(1) after(%k2)
  %f = async_free %m device(1) after(%k3)
  %w = while @flags do @loop_body device(1) after(%k3)
  %u = memcpy @back, @b, 1024 device(1) after(%w)
}
";

fn parse(text: &str) -> Module {
    let m = cmdgraph_ir::text::parse(text).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
    cmdgraph_ir::verify::verify(&m).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
    m
}

/// `PLACED` with every `device(N)`, `home(N)` and `replicated` removed: one device.
fn unplaced() -> String {
    let mut s = PLACED.replace(" replicated", "").replace(" home(1)", "");
    for d in 0..4 {
        s = s.replace(&format!(" device({d})"), "");
    }
    s
}

/// Runs `@g` of `m` on the interpreter from `inputs`; every memory object afterwards.
fn interpret(m: &Module, inputs: &[(&str, Vec<u8>)]) -> Vec<(String, Vec<u8>)> {
    let mut it = Interpreter::new(m).unwrap();
    for (name, bytes) in inputs {
        it.bind(name, bytes).unwrap();
    }
    let e = it.finalize("g").unwrap();
    it.run(e).unwrap();
    m.memories.iter().map(|(_, o)| (o.name.clone(), it.read(&o.name).unwrap().to_vec())).collect()
}

fn inputs(seed: u64, rounds: u32) -> Vec<(&'static str, Vec<u8>)> {
    let mut rng = Rng(seed);
    let f32s = |rng: &mut Rng| random_bytes(cmdgraph_ir::Type::F32, 256, rng);
    vec![("w", f32s(&mut rng)), ("a", f32s(&mut rng)), ("b", f32s(&mut rng)), ("flags", rounds.to_le_bytes().to_vec())]
}

#[test]
fn a_multi_device_graph_interprets_as_the_same_graph_on_one_device() {
    let (placed, one) = (parse(PLACED), parse(&unplaced()));
    let g = &placed.graphs[placed.graph_by_name("g").unwrap()];
    assert!(g.is_multi_device());
    assert!(!one.graphs[one.graph_by_name("g").unwrap()].is_multi_device());
    for (seed, rounds) in [(1u64, 0u32), (2, 1), (3, 7)] {
        let input = inputs(seed, rounds);
        let (got, want) = (interpret(&placed, &input), interpret(&one, &input));
        assert_eq!(got, want, "seed {seed}, {rounds} rounds");
        // The run did something: `@back` is `@b` after the loop, not zeros.
        let back = &got.iter().find(|(n, _)| n == "back").unwrap().1;
        assert!(back.iter().any(|&b| b != 0));
    }
}

#[test]
fn the_default_pipeline_keeps_devices_and_fuses_within_one_device_only() {
    let source = parse(PLACED);
    let bundle = compile(&source, None).unwrap_or_else(|e| panic!("{e}"));
    let bundle = cmdgraph_ir::bundle::Bundle::from_bytes(&bundle).unwrap();
    let optimized = parse(&bundle.optimized);
    let g = &optimized.graphs[optimized.graph_by_name("g").unwrap()];
    // Kernel nodes per device: the two steps of each device fused into one, never across.
    let mut kernels = [0usize; 2];
    for (h, n) in g.nodes.iter() {
        if matches!(n.kind, NodeKind::Kernel(_)) {
            kernels[g.node_device(h) as usize] += 1;
        }
    }
    assert_eq!(kernels, [1, 1], "kernel nodes on devices 0 and 1 after the default pipeline:\n{}", bundle.optimized);
    // Every node keeps the device it had in the source (fused nodes take their members').
    let src = &source.graphs[source.graph_by_name("g").unwrap()];
    for (h, n) in g.nodes.iter() {
        if let Some(s) = src.node_by_name(&n.name) {
            assert_eq!(g.node_device(h), src.node_device(s), "%{}", n.name);
        }
    }
    for (seed, rounds) in [(4u64, 0u32), (5, 3)] {
        let input = inputs(seed, rounds);
        assert_eq!(interpret(&optimized, &input), interpret(&source, &input), "seed {seed}");
    }
}

#[test]
fn the_executor_refuses_a_multi_device_graph_naming_the_node() {
    let bundle = compile(&parse(PLACED), None).unwrap_or_else(|e| panic!("{e}"));
    let mut ex = executor(&bundle).unwrap_or_else(|e| panic!("{e}"));
    let err = ex.finalize("g").expect_err("a multi-device graph").to_string();
    assert!(err.contains("runs on device 1, the graph on device 0") && err.contains("docs/multi-device.md"), "{err}");
    // The same module on one device runs.
    let bundle = compile(&parse(&unplaced()), None).unwrap();
    let mut ex = executor(&bundle).unwrap();
    let e = ex.finalize("g").unwrap();
    for (name, bytes) in inputs(6, 2) {
        ex.bind(name, &bytes).unwrap();
    }
    ex.run(e).unwrap();
    ex.wait(e).unwrap();
    assert!(ex.context().take_messages().is_empty());
}

/// Two sibling kernels over one range: fused into one when they share a device (the
/// horizontal fusion fires), left apart when they run on two.
#[test]
fn siblings_on_two_devices_are_not_fused() {
    let text = |placed: bool| {
        let (home, device) = if placed { (" home(1)", " device(1)") } else { ("", "") };
        format!(
            "kernel @axpy(%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32) {{
  %i = global_id 0
  %xv = load %x[%i]
  %yv = load %y[%i]
  %r = fma %a, %xv, %yv
  store %y[%i], %r
}}

usm @w : f32[256]{}
usm @a : f32[256]
usm @b : f32[256]{home}

graph @g {{
  %k0 = kernel @axpy range(256) args(@w, @a, 1.5)
  %k1 = kernel @axpy range(256) args(@w, @b, -0.75){device}
  %j = empty after(%k0, %k1)
}}
",
            if placed { " replicated" } else { "" }
        )
    };
    for (placed, want) in [(false, 1usize), (true, 2)] {
        let source = parse(&text(placed));
        let bundle = cmdgraph_ir::bundle::Bundle::from_bytes(&compile(&source, None).unwrap()).unwrap();
        let optimized = parse(&bundle.optimized);
        let g = &optimized.graphs[optimized.graph_by_name("g").unwrap()];
        let kernels = g.nodes.iter().filter(|(_, n)| matches!(n.kind, NodeKind::Kernel(_))).count();
        assert_eq!(kernels, want, "placed: {placed}\n{}", bundle.optimized);
        let input = inputs(7, 0);
        assert_eq!(interpret(&optimized, &input[..3]), interpret(&source, &input[..3]));
    }
}
