//! Load and finalize of one bundle, repeated, with nothing else in the process: for
//! profiling (`perf record`) how load and finalize scale.
//!
//! `cargo run --release -p cmdgraph-executor --example finalize_scale -- BUNDLE [REPEAT]`

use cmdgraph_executor::{load_bytes, ContextOptions, DeviceChoice, Executor};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).ok_or("usage: finalize_scale BUNDLE [REPEAT]")?;
    let repeat: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(3);
    let bytes = std::fs::read(path)?;
    for _ in 0..repeat {
        let t = Instant::now();
        drop(load_bytes(&bytes)?);
        eprintln!("load {:.1} ms", t.elapsed().as_secs_f64() * 1e3);
    }
    let loaded = load_bytes(&bytes)?;
    let mut ex = Executor::new(
        loaded,
        &ContextOptions { validation: false, device: DeviceChoice::Default, ..Default::default() },
    )?;
    let graph = ex.module().graphs.iter().next().map(|(_, g)| g.name.clone()).ok_or("no graph")?;
    for _ in 0..repeat {
        let t = Instant::now();
        let e = ex.finalize(&graph)?;
        eprintln!("finalize {:.1} ms", t.elapsed().as_secs_f64() * 1e3);
        ex.drop_exec(e)?;
    }
    Ok(())
}
