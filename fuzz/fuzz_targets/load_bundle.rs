//! Fuzz target: the bundle loader (parsing and every check before Vulkan) never panics.
//!
//! Two kinds of input. Bytes are loaded as they are (`load_bytes`): arbitrary bytes, and
//! libFuzzer's mutations of the valid seed bundles in `fuzz/seeds/load_bundle` (which mostly
//! fail the content hash). When the bytes are a bundle that reads, it is also mutated
//! structurally, steered by its own bytes:
//! SPIR-V words overwritten, layouts shifted, IR and schedule text cut, versions and sizes
//! changed; each variant goes through `load::check`. Errors are expected; only a panic, a
//! sanitizer report, a hang or an out-of-memory is a finding. No device is touched.

#![no_main]

use cmdgraph_executor::load;
use cmdgraph_ir::bundle::Bundle;
use libfuzzer_sys::fuzz_target;

#[path = "mutate_bundle.rs"]
mod mutate_bundle;
use mutate_bundle::{mutate, Steer};

fuzz_target!(|data: &[u8]| {
    let _ = load::load_bytes(data);
    let Ok(bundle) = Bundle::from_bytes(data) else {
        return;
    };
    let _ = load::check(bundle.clone());
    let mut steer = Steer { data, at: data.len() / 2 };
    for i in 0..8 {
        let which = steer.next().wrapping_add(i);
        let _ = load::check(mutate(&bundle, &mut steer, which));
    }
});
