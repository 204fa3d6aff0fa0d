//! `split-ranks` (docs/mpi.md, "One graph, many ranks") on random graphs: modules of the
//! Vulkan suite's generator placed on 2 and 3 devices (as in `place_devices.rs`), then made
//! one graph per rank. Each rank runs in its own interpreter (its own memory, as an MPI
//! process has) on the simulated communicator; every memory object must end with the bytes
//! the placed module leaves in it on one interpreter, read from the rank it lives on, graph
//! after graph, from full-precision random inputs. Transfers and tokens are counted.

mod support;

use cmdgraph_interp::Interpreter;
use cmdgraph_ir::comm::{graph_for_rank, local, SharedCommunicator};
use cmdgraph_ir::module::Home;
use cmdgraph_ir::{MemoryKind, Module};
use cmdgraph_passes::PassContext;
use std::time::Duration;
use support::{gen, random_bytes, Rng};

/// Runs `names` on `module` with `devices` devices (fast links, so that nodes spread).
fn passes(module: &mut Module, names: &[&str], devices: u32) -> PassContext {
    support::run_passes(module, names, devices, 1_000_000_000)
}

/// Every graph of `source`'s order run once on rank `rank` of `split`; the bytes of `names`
/// after each.
fn run_rank(
    split: &Module,
    graphs: &[String],
    rank: u32,
    comm: SharedCommunicator,
    inputs: &[(String, Vec<u8>)],
    names: &[String],
) -> Result<Vec<Vec<Vec<u8>>>, String> {
    let mut it = Interpreter::new(split).map_err(|e| e.to_string())?;
    support::register_interp_callbacks(&mut it, split);
    it.set_communicator(&comm);
    for (name, bytes) in inputs {
        it.bind(name, bytes).map_err(|e| e.to_string())?;
    }
    let mut out = Vec::new();
    for g in graphs {
        let g = graph_for_rank(split, g, rank);
        let e = it.finalize(&g).map_err(|e| format!("@{g}: {e}"))?;
        it.run(e).map_err(|e| format!("rank {rank}, @{g}: {e}"))?;
        out.push(names.iter().map(|n| it.read(n).unwrap().to_vec()).collect());
    }
    Ok(out)
}

#[test]
fn random_graphs_split_into_ranks_compute_what_one_process_computed() {
    let (mut split_graphs, mut transfers, mut tokens) = (0u64, 0u64, 0u64);
    for seed in 0..48u64 {
        let text = gen::module(0x35_0000 + seed, 4);
        let source = cmdgraph_ir::text::parse(&text).unwrap_or_else(|d| panic!("seed {seed}: {d:?}"));
        let devices = 2 + (seed % 2) as u32;
        let mut placed = source.clone();
        passes(&mut placed, &["inline-calls", "inline-subgraphs", "place-devices"], devices);
        let mut split = placed.clone();
        let ctx = passes(&mut split, &["split-ranks"], devices);
        cmdgraph_ir::verify::verify(&split).unwrap_or_else(|d| {
            panic!("seed {seed}: the split module does not verify: {d:?}\n{}", cmdgraph_ir::text::print(&split))
        });
        let stat = |name: &str| ctx.stats.get(name).copied().unwrap_or(0);
        split_graphs += stat("graphs-split");
        transfers += stat("transfers");
        tokens += stat("tokens");
        let mut rng = Rng(seed);
        let names: Vec<String> = placed
            .memories
            .iter()
            .filter(|(_, m)| !matches!(m.kind, MemoryKind::DeviceGlobal(_)))
            .map(|(_, m)| m.name.clone())
            .collect();
        let inputs: Vec<(String, Vec<u8>)> = source
            .memories
            .iter()
            .filter(|(_, m)| names.contains(&m.name))
            .map(|(_, m)| (m.name.clone(), random_bytes(m.elem, m.count, &mut rng)))
            .collect();
        let home: Vec<u32> = placed
            .memories
            .iter()
            .filter(|(_, m)| names.contains(&m.name))
            .map(|(_, m)| match m.home {
                Home::Device(d) => d,
                _ => 0,
            })
            .collect();
        // One process: the placed module run whole.
        let mut it = Interpreter::new(&placed).unwrap();
        support::register_interp_callbacks(&mut it, &placed);
        for (name, bytes) in &inputs {
            it.bind(name, bytes).unwrap();
        }
        let graphs: Vec<String> = source.graphs.iter().map(|(_, g)| g.name.clone()).collect();
        let mut want = Vec::new();
        for g in &graphs {
            let e = it.finalize(g).unwrap_or_else(|e| panic!("seed {seed}, @{g}: {e}"));
            it.run(e).unwrap_or_else(|e| panic!("seed {seed}, @{g}: {e}"));
            want.push(names.iter().map(|n| it.read(n).unwrap().to_vec()).collect::<Vec<_>>());
        }
        // The ranks, each in its own interpreter.
        let got = local::run(devices, Duration::from_secs(60), |r, c| run_rank(&split, &graphs, r, c, &inputs, &names));
        let got: Vec<Result<Vec<Vec<Vec<u8>>>, String>> = got.into_iter().map(|r| r.unwrap()).collect();
        let got: Vec<Vec<Vec<Vec<u8>>>> = got
            .into_iter()
            .map(|r| r.unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", cmdgraph_ir::text::print(&split))))
            .collect();
        for (g, w) in want.iter().enumerate() {
            for (i, bytes) in w.iter().enumerate() {
                let on = home[i] as usize;
                assert!(
                    &got[on][g][i] == bytes,
                    "seed {seed}, after @{}: @{} differs on rank {on} of {devices}\n{}",
                    graphs[g],
                    names[i],
                    cmdgraph_ir::text::print(&split)
                );
            }
        }
    }
    eprintln!(
        "split-ranks: {split_graphs} graphs split, {transfers} transfers made send/receive pairs, {tokens} tokens"
    );
    assert!(
        split_graphs >= 12 && transfers >= 40 && tokens >= 10,
        "{split_graphs} graphs split, {transfers} transfers, {tokens} tokens"
    );
}
