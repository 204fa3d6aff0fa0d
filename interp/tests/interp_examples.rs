//! Every graph of every `examples/*.cgir` runs on the interpreter without a fault or a race,
//! and gives the same memory contents in every random schedule as in creation order (a
//! verified, race-free graph is deterministic).

use cmdgraph_interp::{to_bytes, Interpreter, Order, RunOptions};
use cmdgraph_ir::module::MemoryKind;
use cmdgraph_ir::types::ScalarType;
use cmdgraph_ir::{Alternative, Module, NodeKind};
use std::path::Path;

fn examples() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cgir"))
        .map(|p| (p.display().to_string(), std::fs::read_to_string(&p).unwrap()))
        .collect();
    out.sort();
    out
}

/// Every callback name used by host tasks and native commands, including alternatives.
fn callbacks(m: &Module) -> Vec<String> {
    let mut names = Vec::new();
    for (_, g) in m.graphs.iter() {
        for (_, n) in g.nodes.iter() {
            if let NodeKind::HostTask(c) | NodeKind::Native(c) = &n.kind {
                names.push(c.callback.clone());
            }
        }
        for (_, d) in g.dcgs.iter() {
            for alt in &d.alternatives {
                if let Alternative::HostTask(c) = alt {
                    names.push(c.callback.clone());
                }
            }
        }
    }
    names
}

/// An interpreter with deterministic inputs: floats in [0, 1), integers zero.
fn setup(m: &Module) -> Interpreter {
    let mut interp = Interpreter::new(m).unwrap();
    for name in callbacks(m) {
        // Reads whatever the node may read, so the race detector sees host accesses.
        interp.register_callback(&name, |ctx| {
            for mem in ctx.declared() {
                if ctx.mode(&mem).is_some_and(|m| m.reads()) {
                    ctx.read(&mem)?;
                }
            }
            Ok(())
        });
    }
    for (_, mem) in m.memories.iter() {
        if matches!(mem.kind, MemoryKind::DeviceGlobal(_)) || mem.elem.scalar != ScalarType::F32 {
            continue;
        }
        let n = (mem.count * mem.elem.size() / 4) as usize;
        let values: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 / 1000.0).collect();
        interp.bind(&mem.name, &to_bytes(&values)).unwrap();
    }
    interp
}

fn snapshot(interp: &Interpreter, m: &Module) -> Vec<(String, Vec<u8>)> {
    m.memories
        .iter()
        .filter(|(_, mem)| !matches!(mem.kind, MemoryKind::DeviceGlobal(_)))
        .map(|(_, mem)| (mem.name.clone(), interp.read(&mem.name).unwrap().to_vec()))
        .collect()
}

#[test]
fn every_example_graph_runs_race_free_and_deterministically() {
    let mut graphs_run = 0;
    for (path, text) in examples() {
        let m = cmdgraph_ir::text::parse(&text).unwrap_or_else(|_| panic!("{path} does not parse"));
        // The interpreter runs no SPIR-V: a module with an external kernel runs on Vulkan
        // against a kernel-language twin instead (cli/tests/vulkan_external.rs).
        if m.kernels.iter().any(|(_, k)| matches!(k.body, cmdgraph_ir::KernelBody::Spirv { .. })) {
            continue;
        }
        for (_, g) in m.graphs.iter() {
            let started = std::time::Instant::now();
            let mut interp = setup(&m);
            let exec = interp.finalize(&g.name).unwrap_or_else(|e| panic!("{path} @{}: {e}", g.name));
            let stats = interp
                .run_with(
                    exec,
                    &RunOptions { order: Order::Creation, check_races: true, fuel: None, ..RunOptions::default() },
                )
                .unwrap_or_else(|e| panic!("{path} @{}: {e}", g.name));
            assert!(stats.races.is_empty(), "{path} @{}: {:?}", g.name, stats.races);
            let reference = snapshot(&interp, &m);
            for seed in 0..2 {
                let mut interp = setup(&m);
                let exec = interp.finalize(&g.name).unwrap();
                let stats = interp
                    .run_with(
                        exec,
                        &RunOptions {
                            order: Order::Random(seed),
                            check_races: true,
                            fuel: None,
                            ..RunOptions::default()
                        },
                    )
                    .unwrap_or_else(|e| panic!("{path} @{} seed {seed}: {e}", g.name));
                assert!(stats.races.is_empty(), "{path} @{} seed {seed}: {:?}", g.name, stats.races);
                assert!(snapshot(&interp, &m) == reference, "{path} @{}: seed {seed} changed the outputs", g.name);
            }
            eprintln!("{path} @{}: {:?} for three runs", g.name, started.elapsed());
            graphs_run += 1;
        }
    }
    assert!(graphs_run >= 7, "only {graphs_run} example graphs ran");
}
