//! `cmdgraph-bench latency` (issue 32, item 2): the wall time of `run` + `wait` of small
//! graphs against the Vulkan floor and CUDA Graphs.
//!
//! The graphs are `replay`'s (chains and wide graphs of N one-group kernels adding 1.0 to 64
//! floats), for small N. Peers in one process on one device and queue, each once per
//! repetition: the executor as it waits by default (polling the timeline value for
//! `Context::wait_spin`, then blocking), the executor with a blocking wait (spin 0), and the
//! same dispatches of the bundle's own kernel recorded by hand with ash
//! (`peer::dispatch::DispatchPeer`) waited the three ways a Vulkan program can: by fence, by a
//! blocking timeline wait, by polling the timeline value. CUDA Graph replay + synchronize of
//! the same kernels comes from `scripts/torch_replay.py` (`wall_us`, `--torch-json`).
//!
//! For chains, a third hand program runs the minimal kernel (`bench/data/minimal_inc.spvasm`:
//! one work-group of 64 invocations, one element each, no argument block read, no bounds
//! check, no prologue) in the same chain of dispatches: the floor issue 32's per-dispatch
//! target holds the executor's GPU time per dependent node to.

use super::harness::{self, Common, Phase};
use super::replay::{hand_work, module_text, Shape, ELEMS};
use cmdgraph_executor::peer::dispatch::{DispatchPeer, PeerWait};
use cmdgraph_executor::{ExecId, Executor};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// Options of `cmdgraph-bench latency`.
#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// Options every runtime suite takes.
    #[command(flatten)]
    pub common: Common,
    /// Graph sizes in kernels.
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 10, 100])]
    pub sizes: Vec<usize>,
    /// The C API's latency program (bench/c/latency.c built against libcmdgraph by
    /// `bash scripts/bench.sh capi-latency`); without it the C API column says so.
    #[arg(long)]
    pub capi_bin: Option<std::path::PathBuf>,
}

/// The target: the executor's default wait within 1.1x the hand program's best wait.
const TARGET: f64 = 1.1;

/// Medians of one (shape, N), in seconds.
struct Row {
    shape: Shape,
    n: usize,
    samples: usize,
    /// The executor, default wait (poll, then block).
    exec: f64,
    /// The executor, blocking wait.
    exec_block: f64,
    /// The hand program: fence, blocking timeline wait, polling.
    fence: f64,
    timeline: f64,
    spin: f64,
    /// CUDA Graph replay + synchronize, if measured.
    cuda: Option<f64>,
    /// The same chain through the SYCL API and the C API (chains only).
    sycl: Option<f64>,
    capi: Option<f64>,
    /// GPU time of one run: the executor's profile of the profiled twin `@gp` (segment
    /// start to end), the hand program's two timestamps; `None` without timestamps.
    exec_gpu: Option<f64>,
    hand_gpu: Option<f64>,
    /// GPU time of the minimal kernel's chain (chains only).
    minimal_gpu: Option<f64>,
}

impl Row {
    fn best_hand(&self) -> f64 {
        self.fence.min(self.timeline).min(self.spin)
    }
    fn ratio(&self) -> f64 {
        self.exec / self.best_hand().max(1e-12)
    }
    /// The executor's GPU time over the minimal kernel's, for the same dispatches.
    fn dispatch_ratio(&self) -> Option<f64> {
        Some(self.exec_gpu? / self.minimal_gpu?.max(1e-12))
    }
}

/// Issue 32's per-dispatch target: GPU time within 1.1x the minimal kernel's.
const DISPATCH_TARGET: f64 = 1.1;

fn minimal_name(local: u32) -> String {
    format!("minimal_inc_{local}.spv")
}

/// The minimal kernel for work-groups of `local` invocations, assembled into `dir`.
fn prepare_minimal(dir: &std::path::Path, local: u32) -> Result<(), String> {
    let asm = include_str!("../../data/minimal_inc.spvasm").replace("@LOCAL@", &local.to_string());
    super::fusion_run::assemble(&asm, &dir.join(minimal_name(local)))
}

/// The minimal kernel in the bundle kernel `k`'s interface (its argument block is written but
/// not read): one work-group of `local` invocations, one element each.
fn minimal_kernel(
    dir: &std::path::Path,
    k: &cmdgraph_ir::bundle::CompiledKernel,
    local: u32,
) -> Result<cmdgraph_ir::bundle::CompiledKernel, String> {
    let path = dir.join(minimal_name(local));
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let spirv = bytes.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect();
    Ok(cmdgraph_ir::bundle::CompiledKernel {
        spirv,
        entry: "main".into(),
        workgroup_size: [local, 1, 1],
        items_per_invocation: 1,
        ..k.clone()
    })
}

fn bundle_name(shape: Shape, n: usize) -> String {
    format!("latency_{}_{n}", shape.name())
}

/// Runs the suite.
pub fn main(args: &Args) -> Result<(), String> {
    let phase = Phase::of(&args.common, "latency")?;
    let r = run(args, &phase);
    phase.cleanup();
    r
}

fn run(args: &Args, phase: &Phase) -> Result<(), String> {
    let shapes = [Shape::Chain, Shape::Wide];
    if phase.prepares() {
        for shape in shapes {
            for &n in &args.sizes {
                let (bundle, _) = harness::compile(&module_text(shape, n), &[])?;
                harness::save(phase.dir(), &bundle_name(shape, n), &bundle)?;
                prepare_minimal(phase.dir(), ELEMS as u32)?;
            }
        }
        super::stages::prepare(phase.dir(), &stage_sizes(args))?;
        super::api_latency::prepare(phase.dir(), &args.sizes)?;
    }
    if !phase.runs() {
        return Ok(());
    }
    let torch = harness::torch(&args.common)?;
    let (mut rows, mut device, mut spin) = (Vec::new(), String::new(), Duration::ZERO);
    for shape in shapes {
        for &n in &args.sizes {
            let mut row = measure(args, phase, shape, n, &mut device, &mut spin)?;
            row.cuda = cuda_wall(&torch, shape.name(), n);
            if shape == Shape::Chain {
                let samples = args.common.runs.max(1) * 100;
                row.sycl = Some(super::api_latency::sycl(phase.dir(), n, samples)?);
                if let Some(bin) = &args.capi_bin {
                    row.capi = Some(super::api_latency::capi(bin, phase.dir(), n, samples)?);
                }
            }
            eprintln!(
                "latency: {} N={n}: executor {:.1} µs (blocking {:.1}), hand fence {:.1} / timeline {:.1} / spin {:.1} µs",
                shape.name(),
                row.exec * 1e6,
                row.exec_block * 1e6,
                row.fence * 1e6,
                row.timeline * 1e6,
                row.spin * 1e6
            );
            rows.push(row);
        }
    }
    let mut stage_rows = super::stages::measure(phase.dir(), &args.common, &stage_sizes(args))?;
    for r in &mut stage_rows {
        r.cuda = cuda_wall(&torch, "stages", r.n);
        eprintln!("latency: stages N={}: fused {:.1} µs, unfused {:.1} µs", r.n, r.fused * 1e6, r.unfused * 1e6);
    }
    let missing = harness::torch_missing(&torch);
    let mut body = section(args, &device, spin, &rows, missing.as_deref());
    body.push_str(&super::stages::section(&stage_rows, spin, missing.as_deref()));
    harness::finish(&args.common, "latency", &body)
}

/// The stage chains' sizes: the suite's sizes of two kernels or more.
fn stage_sizes(args: &Args) -> Vec<usize> {
    args.sizes.iter().copied().filter(|&n| n >= 2).collect()
}

/// CUDA Graph replay + synchronize wall seconds of the row named `shape` (`chain`, `wide`,
/// `stages`) from `torch_replay.py`'s JSON.
fn cuda_wall(torch: &Option<serde_json::Value>, shape: &str, n: usize) -> Option<f64> {
    let rows = torch.as_ref()?.get("rows")?.as_array()?;
    let row = rows.iter().find(|r| {
        r.get("shape").and_then(|s| s.as_str()) == Some(shape) && r.get("n").and_then(|v| v.as_u64()) == Some(n as u64)
    })?;
    if row.get("output_ok").and_then(|o| o.as_bool()) != Some(true) {
        return None;
    }
    Some(row.get("wall_us")?.as_f64()? * 1e-6)
}

fn measure(
    args: &Args,
    phase: &Phase,
    shape: Shape,
    n: usize,
    device: &mut String,
    spin: &mut Duration,
) -> Result<Row, String> {
    let name = bundle_name(shape, n);
    let bytes = harness::bundle_bytes(phase.dir(), &name)?;
    let bundle = cmdgraph_ir::bundle::Bundle::from_bytes(&bytes).map_err(|e| format!("{name}: {e}"))?;
    let kernel = harness::launch_kernel(&bundle, "g").map_err(|e| format!("{name}: {e}"))?;
    let mut ex = harness::executor(&bytes, &args.common)?;
    *spin = ex.context().wait_spin();
    let err = |e: cmdgraph_executor::ExecError| format!("{name}: {e}");
    let e = ex.finalize("g").map_err(err)?;
    let profiled = ex.finalize("gp").map_err(err)?;
    // Where argument blocks live decides a dependent dispatch's cost (docs/performance.md).
    let heap = ex.context().shared_heap_bytes().map_or("none".to_string(), |b| format!("{} MiB", b >> 20));
    *device = format!(
        "{}; device-local host-visible heap: {heap}, buffers that fell back to system memory: {}",
        ex.context().device_name(),
        ex.context().shared_fallbacks()
    );
    let (dispatches, barriers) = hand_work(shape, n);
    let elems = shape.elems(n);
    let mut hand = DispatchPeer::beside(&ex, &kernel, elems as u64, &dispatches, barriers).map_err(err)?;
    // The minimal kernel reads no offsets: chains only (every dispatch at element 0).
    let mut minimal = match shape {
        Shape::Chain => {
            let k = minimal_kernel(phase.dir(), &kernel, ELEMS as u32)?;
            Some(DispatchPeer::beside(&ex, &k, elems as u64, &dispatches, barriers).map_err(err)?)
        }
        Shape::Wide => None,
    };
    // Outputs once, from zeros: the executor with either wait, the hand program each way.
    let want = shape.expected(n);
    for block in [false, true] {
        ex.context().set_wait_spin(if block { Duration::ZERO } else { *spin });
        ex.bind_as("x", &vec![0f32; elems]).map_err(err)?;
        timed(&mut ex, e).map_err(err)?;
        harness::same(&format!("{name} executor"), &ex.read_as::<f32>("x").map_err(err)?, &want)?;
    }
    for wait in [PeerWait::Fence, PeerWait::Timeline, PeerWait::Spin] {
        hand.bind_zero().map_err(err)?;
        hand.run_waiting(wait).map_err(err)?;
        harness::same(&format!("{name} hand ({wait:?})"), &hand.read_f32().map_err(err)?, &want)?;
    }
    if let Some(m) = minimal.as_mut() {
        m.bind_zero().map_err(err)?;
        m.run_waiting(PeerWait::Spin).map_err(err)?;
        harness::same(&format!("{name} minimal kernel"), &m.read_f32().map_err(err)?, &want)?;
    }
    let samples = args.common.runs.max(1) * 100;
    let (mut t_exec, mut t_block, mut t_fence, mut t_tl, mut t_spin) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut g_exec, mut g_hand, mut g_min) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..samples {
        ex.context().set_wait_spin(*spin);
        t_exec.push(timed(&mut ex, e).map_err(err)?);
        ex.context().set_wait_spin(Duration::ZERO);
        t_block.push(timed(&mut ex, e).map_err(err)?);
        t_fence.push(hand.run_waiting(PeerWait::Fence).map_err(err)?.as_secs_f64());
        t_tl.push(hand.run_waiting(PeerWait::Timeline).map_err(err)?.as_secs_f64());
        t_spin.push(hand.run_waiting(PeerWait::Spin).map_err(err)?.as_secs_f64());
        if let Some(ns) = hand.gpu_ns().map_err(err)? {
            g_hand.push(ns as f64 * 1e-9);
        }
        if let Some(m) = minimal.as_mut() {
            m.run_waiting(PeerWait::Spin).map_err(err)?;
            if let Some(ns) = m.gpu_ns().map_err(err)? {
                g_min.push(ns as f64 * 1e-9);
            }
        }
        timed(&mut ex, profiled).map_err(err)?;
        if let Ok(p) = ex.profile(profiled) {
            g_exec.push(p.end_ns.saturating_sub(p.start_ns) as f64 * 1e-9);
        }
    }
    ex.context().set_wait_spin(*spin);
    let m = harness::median;
    Ok(Row {
        shape,
        n,
        samples,
        exec: m(&t_exec),
        exec_block: m(&t_block),
        fence: m(&t_fence),
        timeline: m(&t_tl),
        spin: m(&t_spin),
        cuda: None,
        sycl: None,
        capi: None,
        exec_gpu: (!g_exec.is_empty()).then(|| m(&g_exec)),
        hand_gpu: (!g_hand.is_empty()).then(|| m(&g_hand)),
        minimal_gpu: (!g_min.is_empty()).then(|| m(&g_min)),
    })
}

/// Seconds of one `run` + `wait`.
fn timed(ex: &mut Executor, id: ExecId) -> cmdgraph_executor::Result<f64> {
    let t = Instant::now();
    ex.run(id)?;
    ex.wait(id)?;
    Ok(t.elapsed().as_secs_f64())
}

fn section(args: &Args, device: &str, spin: Duration, rows: &[Row], missing: Option<&str>) -> String {
    let how = "wall time of `run` + `wait` (the hand program: submit + wait), median of 100 × `--runs` \
               repetitions after one checked run each; the peers alternate within every repetition, in one \
               process on one device and queue.";
    let mut s = harness::header("Small-graph latency against the Vulkan floor", device, &args.common, how);
    let _ = write!(
        s,
        "Input (bench/src/runtime/latency.rs): `replay`'s graphs, compiled with no passes: a chain of N \
         one-group kernels each adding 1.0 to the same 64 floats, and N such kernels on disjoint slices with \
         an empty join (wide). *executor*: `Executor::run` + `wait` as it waits by default (it polls the \
         timeline value for {} µs, `Context::wait_spin`, then blocks); *blocking*: the same with the poll \
         off. *hand*: the same dispatches of the bundle's kernel recorded once with ash \
         (executor/src/peer/dispatch.rs: the minimal barriers), submitted and waited by fence, by a blocking \
         `vkWaitSemaphores`, or by polling `vkGetSemaphoreCounterValue`. *CUDA Graph*: \
         scripts/torch_replay.py, the same N adds captured from PyTorch, wall of `replay()` + \
         `torch.cuda.synchronize()`. *GPU µs*: the executor's profile of the same graph with \
         `enable_profiling` (segment start to end) and the hand program's two timestamps, run in the same \
         repetitions. Every peer's output is checked once from zeros.\n\n",
        spin.as_micros()
    );
    s.push_str(
        "| graph | N | executor µs | blocking µs | hand fence µs | hand timeline µs | hand polling µs | \
         executor / best hand | CUDA Graph µs | executor GPU µs | hand GPU µs | minimal kernel GPU µs |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        let cuda = r.cuda.map_or(missing.unwrap_or("n/a").to_string(), |c| format!("{:.1}", c * 1e6));
        let gpu = |g: Option<f64>| g.map_or("—".to_string(), |g| format!("{:.1}", g * 1e6));
        let _ = writeln!(
            s,
            "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2}x | {cuda} | {} | {} | {} |",
            r.shape.name(),
            r.n,
            r.exec * 1e6,
            r.exec_block * 1e6,
            r.fence * 1e6,
            r.timeline * 1e6,
            r.spin * 1e6,
            r.ratio(),
            gpu(r.exec_gpu),
            gpu(r.hand_gpu),
            gpu(r.minimal_gpu)
        );
    }
    let missed: Vec<String> = rows
        .iter()
        .filter(|r| r.ratio() > TARGET)
        .map(|r| format!("{} N={} ({:.2}x)", r.shape.name(), r.n, r.ratio()))
        .collect();
    let worst = rows.iter().map(Row::ratio).fold(0.0, f64::max);
    let verdict = if missed.is_empty() {
        format!("**met** (worst {worst:.2}x)")
    } else {
        format!("**missed** on {}", missed.join(", "))
    };
    let samples = rows.first().map_or(0, |r| r.samples);
    let per_dispatch: Vec<String> = rows
        .iter()
        .filter(|r| r.n >= 10)
        .filter_map(|r| {
            let v = r.dispatch_ratio()?;
            let per = |g: Option<f64>| g.map_or(0.0, |g| g * 1e6 / r.n as f64);
            Some(format!(
                "{} N={}: {:.2} against {:.2} µs per dispatch, {:.2}x{}",
                r.shape.name(),
                r.n,
                per(r.exec_gpu),
                per(r.minimal_gpu),
                v,
                if v <= DISPATCH_TARGET { "" } else { " (**missed**)" }
            ))
        })
        .collect();
    let _ = write!(
        s,
        "\nTarget (executor ≤ {TARGET}x the hand program's best wait, every row): {verdict}. {samples} samples per \
         peer and row.\n"
    );
    s.push_str(&api_section(rows));
    if !per_dispatch.is_empty() {
        let _ = writeln!(
            s,
            "\nPer-dispatch target (chain GPU time ≤ {DISPATCH_TARGET}x the minimal kernel's, N ≥ 10): {}.",
            per_dispatch.join("; ")
        );
    }
    s
}

/// The chains through the SYCL and C APIs against the hand program's best wait.
fn api_section(rows: &[Row]) -> String {
    let chains: Vec<&Row> = rows.iter().filter(|r| r.sycl.is_some() || r.capi.is_some()).collect();
    if chains.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "\nThrough the application APIs (bench/src/runtime/api_latency.rs; the same chains, bundles compiled \
         with no passes): *SYCL API* = a graph recorded with `cmdgraph_sycl`, finalized from its precompiled \
         bundle, `queue.ext_oneapi_graph(exec)` + event `wait()`; *C API* = bench/c/latency.c against \
         `libcmdgraph`, `cmdgraph_exec_run` + `cmdgraph_exec_wait`, a separate process timing itself (the \
         same number of samples). Ratios against the hand program's best wait of the same row.\n\n\
         | chain N | SYCL API µs | SYCL / best hand | C API µs | C API / best hand |\n|---:|---:|---:|---:|---:|\n",
    );
    let mut missed = Vec::new();
    for r in chains {
        let cell = |v: Option<f64>, what: &str, missed: &mut Vec<String>| match v {
            Some(v) => {
                let ratio = v / r.best_hand().max(1e-12);
                if ratio > TARGET {
                    missed.push(format!("{what} N={} ({ratio:.2}x)", r.n));
                }
                (format!("{:.1}", v * 1e6), format!("{ratio:.2}x"))
            }
            None => ("not run".to_string(), "—".to_string()),
        };
        let (sycl, sycl_ratio) = cell(r.sycl, "SYCL", &mut missed);
        let (capi, capi_ratio) = cell(r.capi, "C API", &mut missed);
        let _ = writeln!(s, "| {} | {sycl} | {sycl_ratio} | {capi} | {capi_ratio} |", r.n);
    }
    let verdict =
        if missed.is_empty() { "**met**".to_string() } else { format!("**missed** on {}", missed.join(", ")) };
    let _ = writeln!(s, "\nTarget (each API ≤ {TARGET}x the hand program's best wait): {verdict}.");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_names_rows_past_the_target_and_reads_cuda_rows() {
        let row = |exec| Row {
            shape: Shape::Chain,
            n: 10,
            samples: 100,
            exec,
            exec_block: 3.0,
            fence: 2.0,
            timeline: 1.0,
            spin: 1.5,
            cuda: None,
            sycl: None,
            capi: None,
            exec_gpu: None,
            hand_gpu: None,
            minimal_gpu: None,
        };
        assert!((row(1.05).ratio() - 1.05).abs() < 1e-12, "the best hand wait is the timeline's");
        let args = Args { common: Common::default(), sizes: vec![10], capi_bin: None };
        let s = section(&args, "dev", Duration::from_micros(100), &[row(1.2)], Some("n/a (no CUDA)"));
        assert!(s.contains("**missed** on chain N=10 (1.20x)"), "{s}");
        assert!(s.contains("polls the timeline value for 100 µs"), "{s}");
        let s = section(&args, "dev", Duration::ZERO, &[row(1.0)], None);
        assert!(s.contains("**met** (worst 1.00x)"), "{s}");
        let json = serde_json::json!({"available": true, "rows": [
            {"shape": "chain", "n": 10, "wall_us": 11.8, "output_ok": true},
            {"shape": "wide", "n": 10, "wall_us": 9.0, "output_ok": false}]});
        assert_eq!(cuda_wall(&Some(json.clone()), Shape::Chain.name(), 10), Some(11.8e-6));
        assert_eq!(cuda_wall(&Some(json), Shape::Wide.name(), 10), None, "a wrong output is not a time");
    }
}
