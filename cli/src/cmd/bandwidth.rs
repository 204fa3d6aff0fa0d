//! `--transfer-bandwidth GBPS|measure` of `opt` and `compile`: the bandwidth between devices
//! `place-devices` prices transfers at, given or measured here (docs/multi-device.md, "The
//! place-devices pass"). Measuring runs what a transfer is at run time: a graph with one
//! `memcpy` from memory of device 0 to memory of device 1, compiled with `split-devices` and
//! run by a `MultiExecutor` on this machine's first two GPUs (two logical devices of the
//! default device where there are fewer), through imported host memory where the devices
//! allow it, as the runtime does.

use crate::exit::Failure;
use cmdgraph_executor::MultiExecutor;
use std::time::{Duration, Instant};

/// The bytes the measured transfer moves.
const PROBE_BYTES: u64 = 16 << 20;

/// A `--transfer-bandwidth` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransferBandwidth {
    /// Given, in GB/s.
    Gbps(u64),
    /// Measured on this machine's devices.
    Measure,
}

/// Parses `GBPS` (1 to 1000000) or `measure`.
pub fn parse(text: &str) -> Result<TransferBandwidth, String> {
    if text == "measure" {
        return Ok(TransferBandwidth::Measure);
    }
    match text.parse::<u64>() {
        Ok(g) if (1..=1_000_000).contains(&g) => Ok(TransferBandwidth::Gbps(g)),
        _ => Err(format!("`{text}` is not a bandwidth: give GB/s as a whole number from 1 to 1000000, or `measure`")),
    }
}

impl TransferBandwidth {
    /// Bytes per microsecond (GB/s are bytes per nanosecond); measuring prints what it found
    /// to stderr.
    pub fn bytes_per_us(self) -> Result<u64, Failure> {
        match self {
            TransferBandwidth::Gbps(g) => Ok(g.saturating_mul(1000)),
            TransferBandwidth::Measure => {
                let (gbps, how) = measure().map_err(|e| {
                    Failure::Rejected(format!(
                        "error: --transfer-bandwidth measure: {e}; give the bandwidth in GB/s instead"
                    ))
                })?;
                eprintln!(
                    "note: measured transfer bandwidth {gbps:.2} GB/s ({how}); place-devices prices transfers at it"
                );
                Ok(((gbps * 1000.0).round() as u64).max(1))
            }
        }
    }
}

/// The bandwidth of a `PROBE_BYTES` transfer from device 0 to device 1 (best of five runs
/// after one to warm up), and how it went.
pub fn measure() -> Result<(f64, String), String> {
    let words = PROBE_BYTES / 4;
    let text = format!(
        "usm @a : u32[{words}]\nusm @b : u32[{words}] home(1)\n\ngraph @move {{\n  %t = memcpy @b, @a, {PROBE_BYTES}\n}}\n"
    );
    let module = cmdgraph_ir::text::parse(&text).map_err(|d| format!("{d:?}"))?;
    let passes = cmdgraph_passes::with_place_devices(cmdgraph_passes::default_pipeline());
    let (bundle, _) = cmdgraph_codegen::bundle::compile_module_configured(
        &module,
        &passes,
        &cmdgraph_codegen::bundle::PipelineOptions::default(),
        &cmdgraph_codegen::Options::default(),
        &cmdgraph_codegen::bundle::Llvm,
        &mut |_| {},
    )
    .map_err(|e| e.to_string())?;
    let bytes = bundle.to_bytes().map_err(|e| e.to_string())?;
    let base = cmdgraph_executor::ContextOptions::default();
    let (opts, names) = super::run::multi::default_devices(2, &base);
    let mut multi = MultiExecutor::new(&bytes, &opts).map_err(|e| e.to_string())?;
    let exec = multi.finalize("move").map_err(|e| e.to_string())?;
    let mut best = Duration::MAX;
    for i in 0..6 {
        let t = Instant::now();
        multi.run(exec).map_err(|e| e.to_string())?;
        multi.wait(exec).map_err(|e| e.to_string())?;
        if i > 0 {
            best = best.min(t.elapsed());
        }
    }
    let gbps = PROBE_BYTES as f64 / best.as_secs_f64().max(1e-9) / 1e9;
    Ok((gbps, format!("{} MiB from device 0 to 1 of {names}, through {}", PROBE_BYTES >> 20, multi.transfer_path())))
}
