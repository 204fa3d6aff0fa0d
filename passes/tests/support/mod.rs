//! Shared by the pass tests: parse, run passes, and compare modules on the interpreter.
#![allow(dead_code)]

use cmdgraph_interp::{Interpreter, Order, RunOptions};
use cmdgraph_ir::graph::NodeKind;
use cmdgraph_ir::module::MemoryKind;
use cmdgraph_ir::Module;
use cmdgraph_passes::pipeline::{parse_pipeline, run_pipeline, RunOptions as PassOptions};
use cmdgraph_passes::{PassContext, REGISTRY};
use std::collections::BTreeMap;

/// Parses and verifies `text`, panicking with the rendered diagnostics.
pub fn module(text: &str) -> Module {
    let m = cmdgraph_ir::text::parse(text)
        .unwrap_or_else(|d| panic!("{}", cmdgraph_ir::diag::render_all(&d, "test", text)));
    if let Err(d) = cmdgraph_ir::verify::verify(&m) {
        panic!("{}", cmdgraph_ir::diag::render_all(&d, "test", text));
    }
    m
}

/// [`optimize`], also returning the statistics of the pipeline's last pass.
pub fn optimize_stats(m: &Module, spec: &str) -> (Module, BTreeMap<&'static str, u64>) {
    let passes = parse_pipeline(spec, REGISTRY).expect("known passes");
    let mut out = m.clone();
    let mut ctx = PassContext::default();
    let options = PassOptions { verify_each: true, ..PassOptions::default() };
    let report = run_pipeline(&mut out, &passes, &options, &mut ctx, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    (out, report.passes.last().map(|r| r.stats.clone()).unwrap_or_default())
}

/// Runs `spec` with verify-each on a copy of `m`; returns it with the context.
pub fn optimize(m: &Module, spec: &str) -> (Module, PassContext) {
    let passes = parse_pipeline(spec, REGISTRY).expect("known passes");
    let mut out = m.clone();
    let mut ctx = PassContext::default();
    let options = PassOptions { verify_each: true, ..PassOptions::default() };
    run_pipeline(&mut out, &passes, &options, &mut ctx, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    (out, ctx)
}

/// Every memory object's bytes after running each graph of `m` (twice, so contents carried
/// over in graph-owned memory between runs show) from the same deterministic inputs, keyed
/// `graph/@memory`. With `order`, the runs use that schedule and must be race-free.
pub fn outputs(m: &Module, order: Order) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for (_, g) in m.graphs.iter() {
        let mut interp = Interpreter::new(m).expect("interpreter");
        for (_, graph) in m.graphs.iter() {
            for (_, n) in graph.nodes.iter() {
                if let NodeKind::HostTask(t) | NodeKind::Native(t) = &n.kind {
                    interp.register_callback(&t.callback, |_| Ok(()));
                }
            }
        }
        for (_, mem) in m.memories.iter() {
            if !matches!(mem.kind, MemoryKind::DeviceGlobal(_)) {
                let size = mem.size_bytes() as usize;
                let bytes: Vec<u8> = (0..size).map(|i| ((i * 7 + mem.name.len()) % 61) as u8).collect();
                interp.bind(&mem.name, &bytes).expect("bind");
            }
        }
        let exec = interp.finalize(&g.name).expect("finalize");
        for _ in 0..2 {
            let stats = interp
                .run_with(
                    exec,
                    &RunOptions { order, check_races: true, fuel: Some(100_000_000), ..RunOptions::default() },
                )
                .unwrap_or_else(|e| panic!("@{}: {e}", g.name));
            assert!(stats.races.is_empty(), "@{}: races {:?}", g.name, stats.races);
        }
        for (_, mem) in m.memories.iter() {
            let bytes = match mem.kind {
                MemoryKind::DeviceGlobal(_) => interp.read_device_global(&mem.name, g.device).expect("dg"),
                _ => interp.read(&mem.name).expect("read").to_vec(),
            };
            out.insert(format!("{}/@{}", g.name, mem.name), bytes);
        }
    }
    out
}

/// Runs `spec` on `text` and checks that every output buffer of every graph is the same
/// before and after (after: in creation order and in three random orders, all race-free).
/// Graphs a pass added (`iterate-in-kernel`'s `@<body>.rounds`) are run, but only the
/// graphs of `text` are compared: the added ones have no counterpart before.
pub fn check_semantics(text: &str, spec: &str) -> Module {
    let before = module(text);
    let (after, _) = optimize(&before, spec);
    let expected = outputs(&before, Order::Creation);
    let of_before = |all: BTreeMap<String, Vec<u8>>| -> BTreeMap<String, Vec<u8>> {
        let graph = |k: &str| k.split('/').next().unwrap_or_default().to_string();
        all.into_iter().filter(|(k, _)| before.graph_by_name(&graph(k)).is_some()).collect()
    };
    let got = of_before(outputs(&after, Order::Creation));
    assert_eq!(got, expected, "{}", cmdgraph_ir::text::print(&after));
    for seed in 1..=3 {
        assert_eq!(of_before(outputs(&after, Order::Random(seed))), expected, "seed {seed}");
    }
    after
}

/// The printed body of graph `name` in `m`.
pub fn graph_text(m: &Module, name: &str) -> String {
    let text = cmdgraph_ir::text::print(m);
    let start = text.find(&format!("graph @{name} ")).expect("graph printed");
    let end = text[start..].find("\n}").map(|e| start + e + 2).unwrap_or(text.len());
    text[start..end].to_string()
}

/// SplitMix64, so one seed gives one generated module.
pub struct Rng(pub u64);

impl Rng {
    /// A number in `0..n` (0 for `n` = 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n.max(1)
    }
}
