//! `cmdgraph-bench replay`: graph replay against a hand-recorded peer and eager submission
//! (issue 9, item 1; issue 15, item 6).
//!
//! Chains (each kernel depends on the previous through one buffer) and wide graphs (N
//! independent kernels on disjoint slices, one empty join) of N tiny kernels: one f32 add of
//! 1.0 on 64 elements. Peers in one process on one device and queue, each run once in every
//! repetition: the finalized graph replayed by `Executor::run` (default recording, and the
//! single simultaneous-use copy), the same graph with `enable_profiling` (segment stamps,
//! and per-node stamps with `RecordOptions::node_profiling`), `Executor::run_eager` (one
//! command buffer recorded and one `vkQueueSubmit` per kernel, in order), and the same
//! dispatches of the bundle's own kernel recorded by hand with ash
//! (`peer::dispatch::DispatchPeer`, the minimal barriers: between chain dispatches, none in
//! the wide graph). The CUDA Graph peer comes from `scripts/torch_replay.py`. Compiled with
//! no passes: the graph as written (fusion would merge the chain into one kernel, which is
//! not what is measured here).

mod report;

use super::harness::{self, Common, Phase};
use cmdgraph_executor::peer::dispatch::{Barriers, Dispatch, DispatchPeer, PeerOptions};
use cmdgraph_executor::{ExecId, Executor, RecordOptions};
use std::fmt::Write as _;
use std::time::Instant;

/// Options of `cmdgraph-bench replay`.
#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// Options every runtime suite takes.
    #[command(flatten)]
    pub common: Common,
    /// Graph sizes in kernels (issue 9 asks for 10,100,1000,10000).
    #[arg(long, value_delimiter = ',', default_values_t = [10usize, 100, 1000, 10_000])]
    pub sizes: Vec<usize>,
}

/// Elements each kernel adds to.
pub(crate) const ELEMS: usize = 64;

/// The kernel of every graph: adds 1.0 to the element of its work-item (also the `latency`
/// suite's SYCL and C API chains).
pub(crate) const KERNEL: &str = "kernel @inc(%x: buf<f32, read_write>) {
  %i = global_id 0
  %v = load %x[%i]
  %one = const 1.0 : f32
  %r = add %v, %one
  store %x[%i], %r
}
";

/// The two graph shapes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Each kernel after the previous, all on `@x`.
    Chain,
    /// Independent kernels on disjoint slices of `@x`, then one empty join.
    Wide,
}

impl Shape {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Shape::Chain => "chain",
            Shape::Wide => "wide",
        }
    }

    /// Elements of `@x`.
    pub(crate) fn elems(self, n: usize) -> usize {
        match self {
            Shape::Chain => ELEMS,
            Shape::Wide => ELEMS * n,
        }
    }

    /// `@x` after one run from zeros.
    pub(crate) fn expected(self, n: usize) -> Vec<f32> {
        match self {
            Shape::Chain => vec![n as f32; ELEMS],
            Shape::Wide => vec![1.0; ELEMS * n],
        }
    }
}

/// The module: graph `@g` and the same graph with `enable_profiling` as `@gp`.
pub fn module_text(shape: Shape, n: usize) -> String {
    let mut s = format!("{KERNEL}\nusm @x : f32[{}]\n", shape.elems(n));
    for (name, props) in [("g", ""), ("gp", " properties(enable_profiling)")] {
        let _ = writeln!(s, "\ngraph @{name}{props} {{");
        for i in 0..n {
            match shape {
                Shape::Chain if i > 0 => {
                    let _ = writeln!(s, "  %k{i} = kernel @inc range({ELEMS}) args(@x) after(%k{})", i - 1);
                }
                Shape::Chain => {
                    let _ = writeln!(s, "  %k{i} = kernel @inc range({ELEMS}) args(@x)");
                }
                Shape::Wide => {
                    let _ = writeln!(s, "  %k{i} = kernel @inc range({ELEMS}) args(@x + {})", i * ELEMS * 4);
                }
            }
        }
        if shape == Shape::Wide {
            let all: Vec<String> = (0..n).map(|i| format!("%k{i}")).collect();
            let _ = writeln!(s, "  %join = empty after({})", all.join(", "));
        }
        s.push_str("}\n");
    }
    s
}

/// Medians of one (shape, N) configuration, in seconds.
struct Row {
    shape: Shape,
    n: usize,
    samples: usize,
    /// Time inside `run` (submission, before waiting), default recording (two copies).
    submit: f64,
    /// The same with `RecordOptions::simultaneous_use` (one SIMULTANEOUS_USE copy).
    submit_simul: f64,
    /// Segments the default executable's `run` walked (its host work besides the driver).
    steps: u64,
    /// `run` + `wait`.
    wall: f64,
    /// The same for `@gp`: segment start/end timestamps only (default options).
    wall_prof: f64,
    /// The same for `@gp` finalized with `node_profiling`.
    wall_prof_nodes: f64,
    /// Profile end − start of `@gp` (segment stamps only).
    gpu: f64,
    /// `run_eager` (it waits).
    eager: f64,
    /// The hand-recorded peer: submit + fence wait.
    hand_wall: f64,
    /// The hand peer's timestamps (`None` without timestamps).
    hand_gpu: Option<f64>,
    /// The hand peer's `vkQueueSubmit2` alone.
    hand_submit: f64,
    /// The hand peer's submission with indirect dispatches.
    hand_submit_indirect: f64,
    /// The hand peer's submission with update-after-bind descriptors.
    hand_submit_uab: f64,
    /// Pipeline barriers between commands: the executor's (`Executor::barriers`), the hand
    /// peer's.
    barriers: (u64, u64),
}

fn bundle_name(shape: Shape, n: usize) -> String {
    format!("{}_{n}", shape.name())
}

fn shapes() -> [Shape; 2] {
    [Shape::Chain, Shape::Wide]
}

/// The hand peer's dispatches and barriers for a shape: the chain on the one slice with a
/// barrier between consecutive dispatches, the wide graph on disjoint slices with none.
pub(crate) fn hand_work(shape: Shape, n: usize) -> (Vec<Dispatch>, Barriers) {
    let e = ELEMS as u32;
    match shape {
        Shape::Chain => (vec![Dispatch { elem_offset: 0, elems: e }; n], Barriers::Between),
        Shape::Wide => ((0..n as u32).map(|i| Dispatch { elem_offset: i * e, elems: e }).collect(), Barriers::None),
    }
}

/// Runs the suite.
pub fn main(args: &Args) -> Result<(), String> {
    let phase = Phase::of(&args.common, "replay")?;
    let r = run(args, &phase);
    phase.cleanup();
    r
}

fn run(args: &Args, phase: &Phase) -> Result<(), String> {
    if phase.prepares() {
        for shape in shapes() {
            for &n in &args.sizes {
                let t = Instant::now();
                let (bundle, _) = harness::compile(&module_text(shape, n), &[])?;
                harness::save(phase.dir(), &bundle_name(shape, n), &bundle)?;
                eprintln!("replay: compiled {} N={n} in {:.0} ms", shape.name(), t.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    if !phase.runs() {
        return Ok(());
    }
    let torch = harness::torch(&args.common)?;
    let mut rows = Vec::new();
    let mut device = String::new();
    for shape in shapes() {
        for &n in &args.sizes {
            let row = measure(args, phase, shape, n, &mut device)?;
            eprintln!(
                "replay: {} N={n}: replay {:.2} us/node, hand {:.2} us/node, GPU {:.3} vs {} us/node, submit {:.1} us \
                 ({:.1} simultaneous-use), eager {:.1} us",
                shape.name(),
                row.wall * 1e6 / n as f64,
                row.hand_wall * 1e6 / n as f64,
                row.gpu * 1e6 / n as f64,
                row.hand_gpu.map_or("-".into(), |g| format!("{:.3}", g * 1e6 / n as f64)),
                row.submit * 1e6,
                row.submit_simul * 1e6,
                row.eager * 1e6,
            );
            rows.push(row);
        }
    }
    let body = report::section(args, &device, &rows, &torch);
    harness::finish(&args.common, "replay", &body)
}

fn measure(args: &Args, phase: &Phase, shape: Shape, n: usize, device: &mut String) -> Result<Row, String> {
    let name = bundle_name(shape, n);
    let text = harness::bundle_bytes(phase.dir(), &name)?;
    let bundle = cmdgraph_ir::bundle::Bundle::from_bytes(&text).map_err(|e| format!("{name}: {e}"))?;
    let kernel = harness::launch_kernel(&bundle, "g").map_err(|e| format!("{name}: {e}"))?;
    let mut ex = harness::executor(&text, &args.common)?;
    *device = ex.context().device_name().to_string();
    let err = |e: cmdgraph_executor::ExecError| format!("{name}: {e}");
    // Four executables of one executor: the default recording, profiled with segment stamps
    // (default options), the single simultaneous-use copy, and profiled per node.
    let e = ex.finalize("g").map_err(err)?;
    let p = ex.finalize("gp").map_err(err)?;
    ex.set_record_options(RecordOptions { simultaneous_use: true, ..Default::default() });
    let s = ex.finalize("g").map_err(err)?;
    ex.set_record_options(RecordOptions { node_profiling: true, ..Default::default() });
    let pn = ex.finalize("gp").map_err(err)?;
    ex.set_record_options(RecordOptions::default());
    let (dispatches, policy) = hand_work(shape, n);
    let mut hand = DispatchPeer::beside(&ex, &kernel, shape.elems(n) as u64, &dispatches, policy).map_err(err)?;
    // The same hand recording with what the executor does differently, one thing each, to
    // attribute the submission cost: indirect dispatches, update-after-bind descriptors.
    let variant =
        |options| DispatchPeer::beside_with(&ex, &kernel, shape.elems(n) as u64, &dispatches, policy, options);
    let mut hand_ind = variant(PeerOptions { indirect: true, ..Default::default() }).map_err(err)?;
    let mut hand_uab = variant(PeerOptions { update_after_bind: true, ..Default::default() }).map_err(err)?;
    let zeros = vec![0f32; shape.elems(n)];
    let want = shape.expected(n);
    // Every peer's output, once, from zeros.
    let peers = [
        ("replay", e, false),
        ("replay (profiled)", p, false),
        ("replay (simultaneous-use)", s, false),
        ("replay (profiled per node)", pn, false),
        ("eager", e, true),
    ];
    for (what, id, eager) in peers {
        ex.bind_as("x", &zeros).map_err(err)?;
        if eager {
            ex.run_eager(id).map_err(err)?;
        } else {
            ex.run(id).map_err(err)?;
            ex.wait(id).map_err(err)?;
        }
        let got: Vec<f32> = ex.read_as("x").map_err(err)?;
        harness::same(&format!("{name} {what}"), &got, &want)?;
    }
    hand.bind_zero().map_err(err)?;
    hand.run().map_err(err)?;
    harness::same(&format!("{name} hand peer"), &hand.read_f32().map_err(err)?, &want)?;
    let samples = (args.common.runs.max(1) * (1000 / n.max(1)).max(1)).min(200);
    let mut t = Samples::default();
    // Warm-up, then every peer in every repetition.
    for id in [e, s, p, pn] {
        ex.run(id).map_err(err)?;
    }
    ex.wait_idle().map_err(err)?;
    ex.run_eager(e).map_err(err)?;
    hand.run().map_err(err)?;
    let mut eager_submits = 0;
    for _ in 0..samples {
        let (submit, wall) = timed_run(&mut ex, e).map_err(err)?;
        t.submit.push(submit);
        t.wall.push(wall);
        t.submit_simul.push(timed_run(&mut ex, s).map_err(err)?.0);

        t.wall_prof.push(timed_run(&mut ex, p).map_err(err)?.1);
        let prof = ex.profile(p).map_err(err)?;
        t.gpu.push(prof.end_ns.saturating_sub(prof.start_ns) as f64 * 1e-9);
        t.wall_prof_nodes.push(timed_run(&mut ex, pn).map_err(err)?.1);

        let at = Instant::now();
        eager_submits = ex.run_eager(e).map_err(err)?;
        t.eager.push(at.elapsed().as_secs_f64());

        t.hand_wall.push(hand.run().map_err(err)?.as_secs_f64());
        t.hand_submit.push(hand.last_submit().as_secs_f64());
        hand_ind.run().map_err(err)?;
        t.hand_submit_indirect.push(hand_ind.last_submit().as_secs_f64());
        hand_uab.run().map_err(err)?;
        t.hand_submit_uab.push(hand_uab.last_submit().as_secs_f64());
        if let Some(ns) = hand.gpu_ns().map_err(err)? {
            t.hand_gpu.push(ns as f64 * 1e-9);
        }
    }
    if eager_submits != n {
        return Err(format!("{name}: eager mode made {eager_submits} submissions for {n} kernels"));
    }
    let m = harness::median;
    Ok(Row {
        shape,
        n,
        samples,
        submit: m(&t.submit),
        submit_simul: m(&t.submit_simul),
        steps: ex.last_run_steps(e).map_err(err)?,
        wall: m(&t.wall),
        wall_prof: m(&t.wall_prof),
        wall_prof_nodes: m(&t.wall_prof_nodes),
        gpu: m(&t.gpu),
        eager: m(&t.eager),
        hand_wall: m(&t.hand_wall),
        hand_gpu: (!t.hand_gpu.is_empty()).then(|| m(&t.hand_gpu)),
        hand_submit: m(&t.hand_submit),
        hand_submit_indirect: m(&t.hand_submit_indirect),
        hand_submit_uab: m(&t.hand_submit_uab),
        barriers: (ex.barriers(e).map_err(err)?, hand.barriers()),
    })
}

/// Samples of one configuration, in seconds.
#[derive(Default)]
struct Samples {
    submit: Vec<f64>,
    submit_simul: Vec<f64>,
    wall: Vec<f64>,
    wall_prof: Vec<f64>,
    wall_prof_nodes: Vec<f64>,
    gpu: Vec<f64>,
    eager: Vec<f64>,
    hand_wall: Vec<f64>,
    hand_gpu: Vec<f64>,
    hand_submit: Vec<f64>,
    hand_submit_indirect: Vec<f64>,
    hand_submit_uab: Vec<f64>,
}

/// One `run` + `wait` of `id`: (time inside `run`, time of both).
fn timed_run(ex: &mut Executor, id: ExecId) -> cmdgraph_executor::Result<(f64, f64)> {
    let t = Instant::now();
    ex.run(id)?;
    let submit = t.elapsed().as_secs_f64();
    ex.wait(id)?;
    Ok((submit, t.elapsed().as_secs_f64()))
}

#[cfg(test)]
mod tests {
    use super::report::torch_row;
    use super::*;

    #[test]
    fn generated_graphs_verify() {
        for shape in shapes() {
            let text = module_text(shape, 12);
            let m = cmdgraph_ir::text::parse(&text).unwrap_or_else(|d| panic!("{} parse errors", d.len()));
            assert!(cmdgraph_ir::verify::verify(&m).is_ok(), "{}", shape.name());
            assert_eq!(m.graphs.len(), 2);
        }
        assert_eq!(Shape::Wide.expected(3).len(), 3 * ELEMS);
    }

    /// The PyTorch peer's no-CUDA path: exit 0 and `available: false` (here torch is absent
    /// or has no GPU; on a CUDA machine the rows must be there and correct).
    #[test]
    fn torch_script_without_cuda_writes_unavailable() {
        let dir = std::env::temp_dir().join(format!("cmdgraph-torch-replay-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let out = dir.join("t.json");
        let script = crate::workspace_root().join("scripts").join("torch_replay.py");
        let status = std::process::Command::new("python3")
            .arg(&script)
            .arg("--json")
            .arg(&out)
            .arg("10")
            .status()
            .unwrap_or_else(|e| panic!("python3: {e}"));
        assert!(status.success());
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&out).unwrap_or_default()).unwrap_or_else(|e| panic!("{e}"));
        let _ = std::fs::remove_dir_all(&dir);
        match v.get("available").and_then(|a| a.as_bool()) {
            Some(false) => assert!(harness::torch_missing(&Some(v)).is_some()),
            Some(true) => assert!(torch_row(&Some(v), Shape::Chain, 10).is_some()),
            None => panic!("no `available` field: {v}"),
        }
    }
}
