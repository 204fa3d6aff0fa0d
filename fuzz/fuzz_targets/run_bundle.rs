//! Fuzz target: bundles that pass the loader go on to the device. Every graph of a bundle
//! that loads is finalized and run once on the default Vulkan device (llvmpipe here) with a
//! 2 s deadline, so what the loader lets through is exercised by pipeline creation,
//! descriptor writes, recording and execution, not just by the checks.
//!
//! An input picks one of the valid seed bundles (`fuzz/seeds/load_bundle`, built in) with its
//! first byte and steers zero to three structural mutations of it with the rest
//! (`mutate_bundle.rs`, shared with `load_bundle`): SPIR-V words, layouts, launch sizes,
//! plans, IR text cut short.
//! Loader refusals, finalize and run errors and timeouts are expected; a panic, a crash in
//! the driver (SIGSEGV), a hang past libFuzzer's `-timeout` or an out-of-memory is a finding.

#![no_main]

use cmdgraph_executor::{load, ContextOptions, Executor};
use cmdgraph_ir::bundle::Bundle;
use libfuzzer_sys::fuzz_target;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// How far inputs got, printed every 4096 inputs (libFuzzer has no end-of-run hook), so a
/// run's report can say what share reached the device: inputs, loaded, executor created,
/// graphs finalized, graphs run to completion.
static STAGES: [AtomicU64; 5] = [const { AtomicU64::new(0) }; 5];

fn reached(stage: usize) {
    let n = STAGES[stage].fetch_add(1, Relaxed) + 1;
    if stage == 0 && n.is_multiple_of(4096) {
        let [i, l, e, f, r] = STAGES.each_ref().map(|s| s.load(Relaxed));
        eprintln!("run_bundle stages: inputs {i}, loaded {l}, executor {e}, finalized {f}, ran {r}");
    }
}

#[path = "mutate_bundle.rs"]
mod mutate_bundle;
use mutate_bundle::{mutate, Steer};

/// Creates an executor for `loaded`, then finalizes, runs and waits for every graph.
fn run_all(loaded: load::Loaded) {
    let graphs: Vec<String> = loaded.module.graphs.iter().map(|(_, g)| g.name.clone()).collect();
    let options = ContextOptions { timeout: Some(Duration::from_secs(2)), ..ContextOptions::default() };
    let Ok(mut ex) = Executor::new(loaded, &options) else { return };
    reached(2);
    for name in graphs {
        if let Ok(e) = ex.finalize(&name) {
            reached(3);
            if ex.run(e).is_ok() && ex.wait(e).is_ok() {
                reached(4);
            }
        }
    }
}

/// The valid bundles every input starts from (the byte mutations libFuzzer makes to a
/// bundle file almost never pass its content hash, so the input steers structural
/// mutations of a known-good bundle instead).
const SEEDS: [&[u8]; 3] = [
    include_bytes!("../seeds/load_bundle/seed0.cgb"),
    include_bytes!("../seeds/load_bundle/seed1.cgb"),
    include_bytes!("../seeds/load_bundle/seed2.cgb"),
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    reached(0);
    let Ok(mut bundle) = Bundle::from_bytes(SEEDS[usize::from(pick) % SEEDS.len()]) else {
        return;
    };
    // Zero to three mutations, each steered by the rest of the input.
    let mut steer = Steer { data: rest, at: 0 };
    let rounds = if rest.is_empty() { 0 } else { 1 + steer.next() % 3 };
    for _ in 0..rounds {
        let which = steer.next();
        bundle = mutate(&bundle, &mut steer, which);
    }
    // `RUN_BUNDLE_DUMP=FILE`: write the mutated bundle, to reproduce a finding with
    // `cmdgraph run FILE`.
    if let Ok(path) = std::env::var("RUN_BUNDLE_DUMP") {
        if let Ok(bytes) = bundle.to_bytes() {
            let _ = std::fs::write(&path, bytes);
        }
        // And each variant's SPIR-V, for spirv-val and spirv-dis.
        for (i, k) in bundle.kernels.iter().enumerate() {
            let words: Vec<u8> = k.spirv.iter().flat_map(|w| w.to_le_bytes()).collect();
            let _ = std::fs::write(format!("{path}.{i}.spv"), words);
        }
    }
    if let Ok(loaded) = load::check(bundle) {
        reached(1);
        run_all(loaded);
    }
});
