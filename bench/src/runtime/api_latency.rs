//! The `latency` suite's chains through the application APIs (issue 32, item 2): the same
//! chain of N one-group kernels built and run through the SYCL API (`cmdgraph_sycl`: a
//! graph recorded node by node, finalized from a precompiled bundle found by its key, run by
//! `queue.ext_oneapi_graph(exec)` and waited on its event) and through the C API
//! (`bench/c/latency.c` against `libcmdgraph`: `cmdgraph_exec_run` + `cmdgraph_exec_wait`,
//! a separate program the suite starts, which times itself).
//!
//! The bundles are compiled with no passes, as the suite's own chains are, so every API runs
//! the same N dispatches.

use super::harness;
use cmdgraph_sycl::{
    args, BundleSource, Context, Device, DeviceInfo, FinalizeProps, GraphProps, ModifiableGraph, Node, NodeProps,
    Queue, QueueProps, Usm,
};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Elements each kernel adds 1.0 to (one work-group), as in `replay`.
const ELEMS: u64 = super::replay::ELEMS as u64;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// A recorded chain: the context (which owns the graph's memory), the graph and `@x`.
struct Chain {
    ctx: Context,
    dev: Device,
    graph: ModifiableGraph,
    x: Usm,
}

/// Records `n` dependent `@inc` launches through the SYCL API; with `bundles`, finalize
/// takes the graph's bundle from that directory instead of the interpreter.
fn record(n: usize, bundles: Option<&Path>) -> Result<Chain, String> {
    let dev = Device::new(0, DeviceInfo::default());
    let ctx = Context::new(0, std::slice::from_ref(&dev));
    if let Some(dir) = bundles {
        ctx.run_from_bundles(BundleSource { dir: dir.to_path_buf(), validation: false });
    }
    ctx.register_kernels_from_text(super::replay::KERNEL).map_err(err)?;
    let inc = ctx.kernel("inc").ok_or("kernel @inc is not registered")?;
    let x = Usm::device::<f32>(&ctx, ELEMS).map_err(err)?;
    let graph = ModifiableGraph::new(&ctx, &dev, GraphProps::none()).map_err(err)?;
    let mut last: Option<Node> = None;
    for _ in 0..n {
        let props = match &last {
            Some(node) => NodeProps::depends_on(&[node]),
            None => NodeProps::none(),
        };
        last = Some(graph.add(|h| h.parallel_for(&inc, ELEMS, args![&x]), props).map_err(err)?);
    }
    Ok(Chain { ctx, dev, graph, x })
}

fn sycl_dir(dir: &Path) -> PathBuf {
    dir.join("sycl")
}

/// The C API's bundle of the chain of `n` (the same module as the SYCL graph's).
fn capi_bundle(dir: &Path, n: usize) -> PathBuf {
    dir.join(format!("capi_chain_{n}.cgb"))
}

/// Exports every chain's module and compiles it with no passes: `sycl/KEY.cgb` for the SYCL
/// API, and the same bundle as `capi_chain_N.cgb` for the C program.
pub fn prepare(dir: &Path, sizes: &[usize]) -> Result<(), String> {
    let out = sycl_dir(dir);
    std::fs::create_dir_all(&out).map_err(err)?;
    for &n in sizes {
        let chain = record(n, None)?;
        let exec = chain.graph.finalize(FinalizeProps::none()).map_err(err)?;
        let path = exec.export_module(&out).map_err(err)?;
        let text = harness::read(&path)?;
        let (bundle, _) = harness::compile(&text, &[])?;
        harness::save(&out, &exec.bundle_key(), &bundle)?;
        let bytes = bundle.to_bytes().map_err(err)?;
        harness::write_bytes(&capi_bundle(dir, n), &bytes)?;
        let _ = std::fs::remove_file(&path);
    }
    Ok(())
}

/// Median seconds of `ext_oneapi_graph` + event wait for the chain of `n`, after one run
/// whose output is checked (every element 1.0 times `n` from zeros).
pub fn sycl(dir: &Path, n: usize, samples: usize) -> Result<f64, String> {
    let chain = record(n, Some(&sycl_dir(dir)))?;
    let exec = chain.graph.finalize(FinalizeProps::none()).map_err(err)?;
    let q = Queue::new(&chain.ctx, &chain.dev, QueueProps::none()).map_err(err)?;
    chain.x.write(&vec![0f32; ELEMS as usize]).map_err(err)?;
    q.ext_oneapi_graph(&exec, &[]).map_err(err)?.wait().map_err(err)?;
    let got = chain.x.read::<f32>().map_err(err)?;
    harness::same(&format!("SYCL chain N={n}"), &got, &vec![n as f32; ELEMS as usize])?;
    if !exec.runtime().is_some_and(|r| r.contains("(Vulkan)")) {
        return Err(format!("SYCL chain N={n}: ran on {:?}, not Vulkan", exec.runtime()));
    }
    let mut t = Vec::with_capacity(samples);
    for _ in 0..samples {
        let start = Instant::now();
        q.ext_oneapi_graph(&exec, &[]).map_err(err)?.wait().map_err(err)?;
        t.push(start.elapsed().as_secs_f64());
    }
    Ok(harness::median(&t))
}

/// Median seconds of `cmdgraph_exec_run` + `cmdgraph_exec_wait` from the C program `bin`
/// (bench/c/latency.c), which checks its output itself and prints `median_us <value>`.
pub fn capi(bin: &Path, dir: &Path, n: usize, samples: usize) -> Result<f64, String> {
    let bundle = capi_bundle(dir, n);
    let bytes = harness::read_bytes(&bundle)?;
    let read = cmdgraph_ir::bundle::Bundle::from_bytes(&bytes).map_err(err)?;
    let graph = read.graphs.first().map(|g| g.name.clone()).ok_or("the C API's bundle has no graph")?;
    let source = cmdgraph_ir::text::parse(&read.source).map_err(|_| "the C API's bundle source does not parse")?;
    let memory =
        source.memories.iter().next().map(|(_, m)| m.name.clone()).ok_or("the C API's bundle has no memory")?;
    let out = std::process::Command::new(bin)
        .arg(&bundle)
        .arg(&graph)
        .arg(&memory)
        .arg(n.to_string())
        .arg(samples.to_string())
        .output()
        .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!("{} failed: {}{}", bin.display(), text, String::from_utf8_lossy(&out.stderr)));
    }
    parse_median(&text).ok_or_else(|| format!("{}: no `median_us` line in {text:?}", bin.display()))
}

fn parse_median(text: &str) -> Option<f64> {
    let line = text.lines().find_map(|l| l.strip_prefix("median_us "))?;
    line.trim().parse::<f64>().ok().map(|us| us * 1e-6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_c_programs_median_is_read() {
        let t = parse_median("device llvmpipe\nmedian_us 12.5\n").expect("a median");
        assert!((t - 12.5e-6).abs() < 1e-15, "{t}");
        assert_eq!(parse_median("median_us x\n"), None);
        assert_eq!(parse_median(""), None);
    }

    #[test]
    fn the_sycl_chain_runs_from_its_precompiled_bundle() {
        let dir = std::env::temp_dir().join(format!("cmdgraph-api-latency-{}", std::process::id()));
        prepare(&dir, &[3]).expect("exports and compiles");
        assert!(capi_bundle(&dir, 3).exists());
        let t = sycl(&dir, 3, 3).expect("runs on Vulkan from the bundle");
        assert!(t > 0.0);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
