//! Fuzz target: every module that parses and verifies runs on the reference interpreter
//! without panicking.
//!
//! Each graph is finalized and run once in a random valid order (seeded from the input) with
//! the race detector on and a fuel limit, so runaway loops end as `OutOfFuel` errors. Modules
//! whose memory would exceed 64 MiB are skipped: a huge allocation is a resource limit the
//! interpreter reports as an error, not a defect, and it would trip libFuzzer's RSS limit.
//! Faults, races and errors are fine; only a panic, a sanitizer report or a hang is a finding.

#![no_main]

use cmdgraph_interp::{Interpreter, Order, RunOptions};
use cmdgraph_ir::{Module, NodeKind};
use libfuzzer_sys::fuzz_target;

/// Largest total of user memory plus graph allocations that is run.
const MAX_BYTES: u64 = 64 << 20;

/// Kernel op executions per run.
const FUEL: u64 = 1 << 20;

/// Bytes of user memory and graph-owned allocations, saturating.
fn footprint(module: &Module) -> u64 {
    let user = module.memories.iter().fold(0u64, |sum, (_, m)| sum.saturating_add(m.size_bytes()));
    module.graphs.iter().flat_map(|(_, g)| g.nodes.iter()).fold(user, |sum, (_, node)| match &node.kind {
        NodeKind::AsyncMalloc { elem, count, .. } => sum.saturating_add(elem.size().saturating_mul(*count)),
        _ => sum,
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(module) = cmdgraph_ir::text::parse(text) else {
        return;
    };
    if cmdgraph_ir::verify::verify(&module).is_err() || footprint(&module) > MAX_BYTES {
        return;
    }
    let Ok(mut interp) = Interpreter::new(&module) else {
        return;
    };
    let seed = data.iter().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(*b)));
    let names: Vec<String> = module.graphs.iter().map(|(_, g)| g.name.clone()).collect();
    for name in names {
        let Ok(exec) = interp.finalize(&name) else {
            continue;
        };
        let opts = RunOptions { order: Order::Random(seed), check_races: true, fuel: Some(FUEL), ..RunOptions::default() };
        let _ = interp.run_with(exec, &opts);
        let _ = interp.drop_exec(exec);
    }
});
