//! The `replay` section: the two tables, the targets of issue 15 with their measured
//! verdicts, and the text that says how the numbers were taken.

use super::{shapes, Args, Row, Shape};
use crate::runtime::harness;
use std::fmt::Write as _;

/// The CUDA Graph and PyTorch eager times per node (seconds) of a configuration.
pub(super) fn torch_row(torch: &Option<serde_json::Value>, shape: Shape, n: usize) -> Option<(f64, f64)> {
    let rows = torch.as_ref()?.get("rows")?.as_array()?;
    let r = rows.iter().find(|r| {
        r.get("shape").and_then(|s| s.as_str()) == Some(shape.name())
            && r.get("n").and_then(|v| v.as_u64()) == Some(n as u64)
    })?;
    let g = r.get("graph_us_per_node")?.as_f64()?;
    let e = r.get("eager_us_per_node")?.as_f64()?;
    Some((g * 1e-6, e * 1e-6))
}

pub(super) fn section(args: &Args, device: &str, rows: &[Row], torch: &Option<serde_json::Value>) -> String {
    let missing = harness::torch_missing(torch);
    let torch_device = torch
        .as_ref()
        .and_then(|t| t.get("device"))
        .and_then(|d| d.as_str())
        .map_or(String::new(), |d| format!(" PyTorch peer on {d}."));
    let how = format!(
        "medians of S repetitions per row (S = min(200, runs·max(1, 1000/N)), runs = {}), every peer run once \
         in each repetition (in the order of the second table, then the hand peer) after one warm-up each, \
         all in one process on one device and queue. Host times from `Instant`; the executor's GPU time \
         from its timestamps (`@gp` with `enable_profiling` and default options: last segment end − \
         first segment start); the hand peer's from its two timestamps (first command reached, last \
         dispatch done). PyTorch: `torch.cuda.Event` elapsed time after warm-up (scripts/torch_replay.py).\
         {torch_device}",
        args.common.runs
    );
    let mut s =
        harness::header("Graph replay against a hand-recorded peer and eager submission", device, &args.common, &how);
    s.push_str(INPUT);
    s.push_str(
        "| graph | N | replay wall µs/node | hand wall µs/node | replay / hand wall | GPU µs/node | hand GPU µs/node | \
         replay / hand GPU | barriers (executor / hand) | CUDA Graph µs/node | replay wall / CUDA Graph | GPU / CUDA Graph | S |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        let n = r.n as f64;
        let (cg, wall_cg, gpu_cg) = match (torch_row(torch, r.shape, r.n), &missing) {
            (Some((g, _)), None) => (harness::us(g), format!("{:.2}", r.wall / n / g), format!("{:.2}", r.gpu / n / g)),
            (_, Some(m)) => (m.clone(), "-".into(), "-".into()),
            (None, None) => ("-".into(), "-".into(), "-".into()),
        };
        let (hand_gpu, gpu_ratio) = match r.hand_gpu {
            Some(h) => (format!("{:.3}", h * 1e6 / n), format!("{:.2}", r.gpu / h.max(1e-12))),
            None => ("-".into(), "-".into()),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {:.3} | {:.3} | {:.2} | {:.3} | {hand_gpu} | {gpu_ratio} | {} / {} | {cg} | {wall_cg} | {gpu_cg} | {} |",
            r.shape.name(),
            r.n,
            r.wall * 1e6 / n,
            r.hand_wall * 1e6 / n,
            r.wall / r.hand_wall.max(1e-12),
            r.gpu * 1e6 / n,
            r.barriers.0,
            r.barriers.1,
            r.samples,
        );
    }
    s.push_str(
        "\n| graph | N | submit µs/run | submit µs, simultaneous-use | hand submit µs | hand submit µs, indirect | \
         hand submit µs, update-after-bind | submit ns/node | \
         replay wall µs/run | profiled wall µs/run (segment stamps) | overhead ns/node | profiled wall µs/run (node stamps) | \
         overhead ns/node | eager wall µs/run | eager µs/node | replay vs eager | PyTorch eager µs/node |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        let n = r.n as f64;
        let te = match (torch_row(torch, r.shape, r.n), &missing) {
            (Some((_, e)), None) => harness::us(e),
            (_, Some(m)) => m.clone(),
            (None, None) => "-".into(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {:.0} | {} | {} | {:.0} | {} | {:.0} | {} | {} | {:.1}× | {te} |",
            r.shape.name(),
            r.n,
            harness::us(r.submit),
            harness::us(r.submit_simul),
            harness::us(r.hand_submit),
            harness::us(r.hand_submit_indirect),
            harness::us(r.hand_submit_uab),
            r.submit * 1e9 / n,
            harness::us(r.wall),
            harness::us(r.wall_prof),
            (r.wall_prof - r.wall) * 1e9 / n,
            harness::us(r.wall_prof_nodes),
            (r.wall_prof_nodes - r.wall) * 1e9 / n,
            harness::us(r.eager),
            harness::us(r.eager / n),
            r.eager / r.wall.max(1e-12),
        );
    }
    s.push_str(&targets(rows, torch));
    s.push_str(READING);
    s
}

const INPUT: &str = "Input (bench/src/runtime/replay.rs): *chain* = N kernels `x[i] += 1.0` on one 64-float USM \
buffer, each after the previous; *wide* = N such kernels on disjoint 64-float slices and one empty join. \
Compiled with no passes (the graph as written). Peers, all in one process on the executor's device and \
queue: *replay* = `Executor::run` + `wait` of the finalized graph (default `RecordOptions`: barriers only \
where memory conflicts, two ordinary command-buffer copies used in turn); *hand* = \
`cmdgraph_executor::peer::dispatch::DispatchPeer`: the same N dispatches of the bundle's own compiled kernel \
(the SPIR-V the executor runs; one descriptor set per dispatch, direct `vkCmdDispatch`, pipeline bound once) \
recorded by hand with ash into one command buffer, submitted with a fence and waited for, with one opening \
barrier and between dispatches the minimal barrier (COMPUTE_SHADER / SHADER_WRITE → COMPUTE_SHADER / \
SHADER_READ|SHADER_WRITE) after every chain dispatch but the last and none in the wide graph; *barriers* = \
pipeline barriers between commands (`Executor::barriers`, the peer's count; opening barriers not counted); \
*submit* = time inside `run` (one `vkQueueSubmit` of pre-recorded command buffers; it returns before the \
device finishes), with the default two copies and with `RecordOptions::simultaneous_use` (one \
SIMULTANEOUS_USE copy, the executor's earlier recording), and the hand peer's `vkQueueSubmit2` call alone; \
*profiled* = `@gp` (`enable_profiling`) with \
default options (a timestamp pair per segment) and finalized with `RecordOptions::node_profiling` (a pair \
per node), overhead = (profiled − replay wall) / N; *eager* = `run_eager`: per kernel a command buffer \
recorded at submission time (a full barrier, as an in-order queue, then the dispatch) and its own \
`vkQueueSubmit`, then a fence wait. *CUDA Graph* = `torch.cuda.CUDAGraph` replay of the same adds (wide: \
captured over 16 streams), GPU time per node, beside our wall and GPU time per node. Every peer's output is \
checked once per configuration (chain: every element N; wide: every element 1).\n\n";

/// `**met**` or `**missed**`.
fn verdict(ok: bool) -> &'static str {
    if ok {
        "**met**"
    } else {
        "**missed**"
    }
}

fn targets(rows: &[Row], torch: &Option<serde_json::Value>) -> String {
    let mut s = String::from("\nAgainst the targets (issue 15):\n");
    for shape in shapes() {
        let of: Vec<&Row> = rows.iter().filter(|r| r.shape == shape).collect();
        if of.is_empty() {
            continue;
        }
        // Replay wall per node against the hand peer, at every N.
        let ratios: Vec<f64> = of.iter().map(|r| r.wall / r.hand_wall.max(1e-12)).collect();
        let ok = ratios.iter().all(|&x| x <= 1.15);
        let list: Vec<String> = of.iter().zip(&ratios).map(|(r, x)| format!("{x:.3}× at N = {}", r.n)).collect();
        let mut line = format!(
            "- {} replay wall per node ≤ 1.15× the hand peer: {}: {}",
            shape.name(),
            verdict(ok),
            list.join(", ")
        );
        if !ok {
            line.push_str(&wall_gap(&of, &ratios));
        }
        let _ = writeln!(s, "{line}.");
        if shape == Shape::Wide {
            let _ = writeln!(s, "{}", against_cuda(&of, torch));
        }
        let _ = writeln!(s, "{}", host_time(shape, &of));
    }
    s
}

/// Where the worst row's wall-time gap to the hand peer lies: inside the timestamps
/// (device time) or outside them (submission and wake-up), with the barrier counts.
fn wall_gap(of: &[&Row], ratios: &[f64]) -> String {
    let Some((r, _)) = of.iter().zip(ratios).max_by(|a, b| a.1.total_cmp(b.1)) else { return String::new() };
    let n = r.n as f64;
    let gap = (r.wall - r.hand_wall) * 1e6 / n;
    match r.hand_gpu {
        Some(h) => {
            let dev = (r.gpu - h) * 1e6 / n;
            format!(
                "; at N = {} the replay takes {gap:.3} µs/node more wall time, of which {dev:.3} µs/node between the \
                 timestamps (GPU {:.3} against {:.3} µs/node, {} against {} barriers) and {:.3} µs/node outside them \
                 (submission, completion wait)",
                r.n,
                r.gpu * 1e6 / n,
                h * 1e6 / n,
                r.barriers.0,
                r.barriers.1,
                gap - dev
            )
        }
        None => format!("; at N = {} the replay takes {gap:.3} µs/node more wall time (no timestamps here)", r.n),
    }
}

fn against_cuda(of: &[&Row], torch: &Option<serde_json::Value>) -> String {
    let cuda: Vec<(&Row, f64)> =
        of.iter().filter_map(|r| torch_row(torch, r.shape, r.n).map(|(g, _)| (*r, g))).collect();
    if harness::torch_missing(torch).is_some() || cuda.is_empty() {
        return "- wide replay wall per node ≤ 1.5× CUDA Graph: not measured here (no CUDA): the H100 run with \
                `--torch-json` fills it in."
            .into();
    }
    let ratios: Vec<f64> = cuda.iter().map(|(r, g)| r.wall / r.n as f64 / g).collect();
    let ok = ratios.iter().all(|&x| x <= 1.5);
    let list: Vec<String> = cuda.iter().zip(&ratios).map(|((r, _), x)| format!("{x:.3}× at N = {}", r.n)).collect();
    let mut line = format!("- wide replay wall per node ≤ 1.5× CUDA Graph: {}: {}", verdict(ok), list.join(", "));
    if !ok {
        if let Some(((r, g), _)) = cuda.iter().zip(&ratios).max_by(|a, b| a.1.total_cmp(b.1)) {
            let n = r.n as f64;
            let _ = write!(
                line,
                "; at N = {}: replay {:.3}, hand peer {:.3}, CUDA Graph {:.3} µs/node (our GPU time {:.3}, the hand \
                 peer's {} µs/node)",
                r.n,
                r.wall * 1e6 / n,
                r.hand_wall * 1e6 / n,
                g * 1e6,
                r.gpu * 1e6 / n,
                r.hand_gpu.map_or("-".into(), |h| format!("{:.3}", h * 1e6 / n))
            );
        }
    }
    line.push('.');
    line
}

/// Host time inside `run` at N = 10^4.
fn host_time(shape: Shape, of: &[&Row]) -> String {
    let head = format!("- {} host time in `run` ≤ 20 µs at N = 10^4", shape.name());
    let Some(r) = of.iter().find(|r| r.n == 10_000) else {
        return format!("{head}: not measured (no N = 10000 in `--sizes`).");
    };
    let ok = r.submit <= 20e-6;
    let mut line = format!(
        "{head}: {}: {:.1} µs (simultaneous-use copy: {:.1} µs)",
        verdict(ok),
        r.submit * 1e6,
        r.submit_simul * 1e6
    );
    if !ok {
        let lo = of.iter().min_by_key(|r| r.n).filter(|lo| lo.n < r.n);
        let grows = lo.map_or(String::new(), |lo| format!(" against {:.1} µs at N = {}", lo.submit * 1e6, lo.n));
        let _ = write!(
            line,
            "{grows}; `run` walked {} segment(s) of a plan built at finalize, so the rest is inside the driver's \
             `vkQueueSubmit` of the pre-recorded command buffer(s); the hand peer's `vkQueueSubmit2` of its one \
             ordinary command buffer of the same dispatches took {:.1} µs ({:.1} µs with update-after-bind \
             descriptors, {:.1} µs with indirect dispatches), so the driver's own submission of N dispatches is \
             what stays above the target",
            r.steps,
            r.hand_submit * 1e6,
            r.hand_submit_uab * 1e6,
            r.hand_submit_indirect * 1e6
        );
    }
    line.push('.');
    line
}

const READING: &str =
    "\nReading the numbers: the hand peer is what the same dispatches cost when recorded directly, so \
*replay / hand* is the executor's own overhead on this device, whatever the device; its barrier count is what \
the dependences need (the chain: one between consecutive kernels; the wide graph: none). *GPU µs/node* divides \
the device time of one replay by N; on llvmpipe it is CPU time of the rasterizer's compute path, comparable only \
as a ratio. *submit* is the host's cost of a replay (the device works afterwards); the simultaneous-use column \
shows whether the flag is what grows with N, and the hand peer's columns with indirect dispatches and with \
update-after-bind descriptors whether those are (the executor records direct dispatches in graphs without \
`updatable`, docs/executor.md). The profiling overheads say what a timestamp pair per segment and \
per node cost per node against the unprofiled replay. The CUDA Graph columns exist only for a run with \
`--torch-json` on a CUDA machine.\n";
