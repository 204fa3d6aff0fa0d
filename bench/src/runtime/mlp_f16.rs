//! `cmdgraph-bench mlp-f16` (issue 32, target 4's f16 item): the `mlp` suite's network in f16
//! on tensor cores. Per layer one kernel computes `r = x + gelu(x·W + b)` on KHR cooperative
//! matrices (`cmdgraph_codegen::coop_gemm`, an external SPIR-V kernel: f16 in and out, f32
//! sums, rounded to f16 once), and one kernel-language kernel `x' = layernorm(r)` (f16 in and
//! out, f32 inside, four values a load). scripts/torch_fusion.py runs the same network in f16
//! (`mlp_f16`), where each `+`, GELU and layer norm rounds to f16 on its own.
//!
//! The device output is checked against [`reference`], the same network on the host with the
//! kernels' roundings (f32 sums in another order): more than [`TOLERANCE`] fails the suite. A
//! device without cooperative matrices, or with less than 48 KiB of work-group memory (llvmpipe
//! lacks both), refuses the bundle, and the suite says so.

use super::fusion_run::{compile_to, executor, kernel_nodes, Header, Torch};
use super::harness::{finish, read, write, write_bytes, Common, Phase};
use super::mlp::{breakdown, max_abs_diff, time_runs, torch_row, Shape};
use cmdgraph_codegen::coop_gemm::{self, Epilogue, Gemm, Tile};
use half::f16;
use std::fmt::Write as _;
use std::path::Path;

/// Largest |device − host reference| accepted: four f16 units in the last place at the
/// outputs' magnitude (|y| < 8), for sums added in another order and a `tanh` of Vulkan's
/// precision, whose last-bit differences can flip an f16 rounding and carry to later layers.
pub const TOLERANCE: f32 = 4.0 / 256.0;

/// The product's tiling for `s`: the measured tile, or half its rows for small batches.
pub fn gemm(s: Shape) -> Gemm {
    let tile = if s.batch >= 32 { Tile::MEASURED } else { Tile { bm: 16, wm: 1, ..Tile::MEASURED } };
    Gemm { m: s.batch, n: s.hidden, k: s.hidden, tile, epilogue: Epilogue::BiasGeluResidual }
}

fn spv_name(s: Shape) -> String {
    format!("mlp_f16_{s}.spv")
}

/// The layer norm over rows of `vec4<f16>`: as the `mlp` suite's, with four values a load.
const LAYERNORM: &str = "kernel @layernorm(%in: buf<vec4<f16>, read>, %out: buf<vec4<f16>, write>, %ps: local<f32>, %pq: local<f32>, %n4: u32) {
  %row = group_id 0
  %lid = local_id 0
  %ls = local_range 0
  %zero = const 0 : u32
  %one = const 1 : u32
  %fzero = const 0.0 : f32
  %base = mul %row, %n4
  %s, %q = for %c = %lid to %n4 step %ls carry(%s0 = %fzero, %q0 = %fzero) {
    %idx = add %base, %c
    %vh = load %in[%idx]
    %v = cast %vh to vec4<f32>
    %v0 = extract %v, 0
    %v1 = extract %v, 1
    %v2 = extract %v, 2
    %v3 = extract %v, 3
    %p01 = add %v0, %v1
    %p23 = add %v2, %v3
    %p = add %p01, %p23
    %s1 = add %s0, %p
    %r0 = mul %v0, %v0
    %r1 = fma %v1, %v1, %r0
    %r2 = fma %v2, %v2, %r1
    %r3 = fma %v3, %v3, %r2
    %q1 = add %q0, %r3
    yield %s1, %q1
  }
  %ss = subgroup_reduce add %s
  %sq = subgroup_reduce add %q
  %sid = subgroup_id
  %lane = subgroup_local_id
  %first = eq %lane, %zero
  if %first {
    store %ps[%sid], %ss
    store %pq[%sid], %sq
  }
  group_barrier
  %groups = num_subgroups
  %ts, %tq = for %k = %zero to %groups step %one carry(%ts0 = %fzero, %tq0 = %fzero) {
    %pk = load %ps[%k]
    %qk = load %pq[%k]
    %ts1 = add %ts0, %pk
    %tq1 = add %tq0, %qk
    yield %ts1, %tq1
  }
  %four = const 4 : u32
  %n = mul %n4, %four
  %nf = cast %n to f32
  %mean = div %ts, %nf
  %ex2 = div %tq, %nf
  %m2 = mul %mean, %mean
  %var = sub %ex2, %m2
  %eps = const 0.00001 : f32
  %ve = add %var, %eps
  %inv = rsqrt %ve
  %mean4 = splat %mean : vec4<f32>
  %inv4 = splat %inv : vec4<f32>
  for %c2 = %lid to %n4 step %ls {
    %idx2 = add %base, %c2
    %vh2 = load %in[%idx2]
    %w2 = cast %vh2 to vec4<f32>
    %d = sub %w2, %mean4
    %o = mul %d, %inv4
    %oh = cast %o to vec4<f16>
    store %out[%idx2], %oh
  }
}
";

/// The layer norm's work-group size: one `vec4` per item where the row allows.
fn local(s: Shape) -> u32 {
    (s.hidden / 4).min(256)
}

/// The module of `shape` (its product kernel read from [`spv_name`] beside it): `@x`,
/// `@w{l}`, `@b{l}`, `@y` and graph `@mlp`, every intermediate a graph-owned temporary.
pub fn module_text(s: Shape) -> String {
    let g = gemm(s);
    let (gx, gy) = g.launch();
    let (h, ls, e4) = (s.hidden, local(s), s.elems() / 4);
    let mut t = format!("kernel @layer({}) spirv \"{}\" entry \"main\"\n\n{LAYERNORM}\n", g.signature(), spv_name(s));
    let _ = writeln!(t, "usm @x : vec4<f16>[{e4}]");
    for l in 0..s.layers {
        let _ =
            writeln!(t, "usm @w{l} : vec4<f16>[{}]\nusm @b{l} : vec4<f16>[{}]", u64::from(h) * u64::from(h) / 4, h / 4);
    }
    let _ = writeln!(t, "usm @y : vec4<f16>[{e4}]\n\ngraph @mlp properties(enable_profiling) {{");
    let mut input = "@x".to_string();
    let mut prev: Option<String> = None;
    for l in 0..s.layers {
        let after = prev.as_ref().map_or(String::new(), |p| format!("{p}, "));
        let _ = writeln!(t, "  %r{l} = async_malloc vec4<f16>[{e4}]");
        let _ = writeln!(
            t,
            "  %mm{l} = kernel @layer range({gx}, {gy}) args({input}, @w{l}, @b{l}, %r{l}) after({after}%r{l})"
        );
        if l > 0 {
            let _ = writeln!(t, "  %fx{l} = async_free {input} after(%mm{l})");
        }
        let out = if l + 1 == s.layers {
            "@y".to_string()
        } else {
            let _ = writeln!(t, "  %x{} = async_malloc vec4<f16>[{e4}]", l + 1);
            format!("%x{}", l + 1)
        };
        let out_dep = if l + 1 == s.layers { String::new() } else { format!(", {out}") };
        let _ = writeln!(
            t,
            "  %ln{l} = kernel @layernorm nd_range(global({}), local({ls})) args(%r{l}, {out}, local f32[{ls}], local f32[{ls}], {}) after(%mm{l}{out_dep})",
            s.batch * ls,
            h / 4
        );
        let _ = writeln!(t, "  %fr{l} = async_free %r{l} after(%ln{l})");
        input = out;
        prev = Some(format!("%ln{l}"));
    }
    t.push_str("}\n");
    t
}

/// The inputs of `shape` as f16 (the `mlp` suite's formulas, rounded; scripts/torch_fusion.py
/// makes the same).
pub fn inputs(s: Shape) -> Vec<(String, Vec<f16>)> {
    super::mlp::inputs(s).into_iter().map(|(n, v)| (n, v.into_iter().map(f16::from_f32).collect())).collect()
}

/// The network on the host with the kernels' roundings: f32 sums (in row order), bias, GELU
/// and residual in f32, `r` rounded to f16; the layer norm in f32 (sums in row order), its
/// output rounded to f16.
pub fn reference(s: Shape, inputs: &[(String, Vec<f16>)]) -> Vec<f16> {
    const GELU_C: f32 = 0.797_884_6;
    const GELU_A: f32 = 0.044_715;
    let get = |name: &str| -> Vec<f32> {
        inputs.iter().find(|(n, _)| n == name).map(|(_, v)| v.iter().map(|x| x.to_f32()).collect()).unwrap_or_default()
    };
    let (b, h) = (s.batch as usize, s.hidden as usize);
    let mut x = get("x");
    let mut out = Vec::new();
    for l in 0..s.layers {
        let (w, bias) = (get(&format!("w{l}")), get(&format!("b{l}")));
        let mut r = vec![0f32; b * h];
        let mut sum = vec![0f32; h];
        for row in 0..b {
            sum.iter_mut().for_each(|v| *v = 0.0);
            for (j, &xv) in x[row * h..(row + 1) * h].iter().enumerate() {
                for (acc, &wv) in sum.iter_mut().zip(&w[j * h..(j + 1) * h]) {
                    *acc = xv.mul_add(wv, *acc);
                }
            }
            for col in 0..h {
                let z = sum[col] + bias.get(col).copied().unwrap_or(0.0);
                let u = GELU_C * (z + GELU_A * (z * z * z));
                let g = 0.5 * z * (1.0 + u.tanh());
                r[row * h + col] = f16::from_f32(x[row * h + col] + g).to_f32();
            }
        }
        out.clear();
        for row in r.chunks(h) {
            let ts: f32 = row.iter().sum();
            let tq: f32 = row.iter().map(|v| v * v).sum();
            let mean = ts / h as f32;
            let inv = 1.0 / (tq / h as f32 - mean * mean + 1e-5).sqrt();
            out.extend(row.iter().map(|v| f16::from_f32((v - mean) * inv)));
        }
        x = out.iter().map(|v| v.to_f32()).collect();
    }
    out
}

fn bundle_name(s: Shape) -> String {
    format!("mlp_f16_{s}.cgb")
}

/// Writes each shape's product kernel and compiles its bundle into `dir` (with
/// `mlp-f16.manifest`).
pub fn prepare(dir: &Path, shapes: &[Shape]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut manifest = String::new();
    for &s in shapes {
        let words = coop_gemm::module(&gemm(s)).map_err(|e| format!("mlp-f16 {s}: {e}"))?;
        write_bytes(&dir.join(spv_name(s)), &cmdgraph_ir::data::to_bytes(&words))?;
        compile_to(&dir.join(bundle_name(s)), &module_text(s), true)?;
        let _ = writeln!(manifest, "{s}");
        eprintln!("mlp-f16: compiled {s}");
    }
    write(&dir.join("mlp-f16.manifest"), &manifest)
}

/// One measured shape, or why it did not run.
pub struct Row {
    /// The shape.
    pub shape: Shape,
    /// GPU ms, host ms, max |device − host reference|, kernel nodes of the bundle, and the
    /// per-kind breakdown; `Err` when the device refused the bundle.
    pub result: Result<Measured, String>,
    /// PyTorch f16: eager ms, CUDA Graph ms, max |cmdgraph − torch| over its output sample.
    pub torch: Option<(f64, f64, Option<f32>)>,
}

/// What a shape that ran measured.
pub struct Measured {
    /// Median GPU ms of one graph run.
    pub gpu: f64,
    /// Median host ms from `run` to the end of `wait`.
    pub host: f64,
    /// Largest |device − host reference|.
    pub err_host: f32,
    /// Kernel nodes in the bundle's graph.
    pub kernels: usize,
    /// Per kind of node (`mm`, `ln`), GPU ms per run summed over the layers.
    pub breakdown: Vec<(String, f64)>,
}

fn measure(dir: &Path, s: Shape, device: Option<&str>, reps: usize) -> Result<(Measured, Vec<f32>, String), String> {
    let mut ex = executor(&dir.join(bundle_name(s)), device)?;
    let name = ex.context().device_name().to_string();
    let ins = inputs(s);
    for (n, v) in &ins {
        ex.bind_as(n, v).map_err(|e| e.to_string())?;
    }
    let id = ex.finalize("mlp").map_err(|e| e.to_string())?;
    ex.run(id).map_err(|e| e.to_string())?;
    ex.wait(id).map_err(|e| e.to_string())?;
    let y: Vec<f32> = ex.read_as::<f16>("y").map_err(|e| e.to_string())?.iter().map(|v| v.to_f32()).collect();
    let want: Vec<f32> = reference(s, &ins).iter().map(|v| v.to_f32()).collect();
    let err_host = max_abs_diff(&y, &want);
    if err_host > TOLERANCE || y.len() != want.len() {
        return Err(format!("mlp-f16 {s}: the device output differs from the host reference by {err_host}"));
    }
    let (gpu, host) = time_runs(&mut ex, id, reps)?;
    let kernels = kernel_nodes(&ex, "mlp");
    let breakdown = breakdown(&mut ex, reps)?;
    Ok((Measured { gpu, host, err_host, kernels, breakdown }, y, name))
}

/// Whether `error` is the executor refusing the bundle for what this device lacks:
/// cooperative matrices, or the 48 KiB of work-group memory the tile takes (llvmpipe has 32).
pub fn refused_by_device(error: &str) -> bool {
    error.contains("cooperative matri") || error.contains("maxComputeSharedMemorySize")
}

/// Runs every shape of `dir`'s manifest. A bundle the device refuses for lack of cooperative
/// matrices or work-group memory gives a row saying so; any other failure, or a wrong output, fails the suite.
pub fn run_from(dir: &Path, device: Option<&str>, reps: usize, torch: &Torch) -> Result<(Vec<Row>, String), String> {
    let mut rows = Vec::new();
    let mut device_name = String::new();
    for line in read(&dir.join("mlp-f16.manifest"))?.lines().filter(|l| !l.trim().is_empty()) {
        let s = Shape::parse(line.trim())?;
        let row = match measure(dir, s, device, reps) {
            Ok((m, y, name)) => {
                device_name = name;
                eprintln!("mlp-f16: {s}: GPU {:.3} ms, max |Δ| vs host {:.2e}", m.gpu, m.err_host);
                Row { shape: s, torch: torch_row(torch, "mlp_f16", s, &y), result: Ok(m) }
            }
            Err(e) if refused_by_device(&e) => {
                eprintln!("mlp-f16: {s}: not run: {e}");
                Row { shape: s, result: Err(e), torch: None }
            }
            Err(e) => return Err(e),
        };
        rows.push(row);
    }
    Ok((rows, device_name))
}

/// The Markdown table.
pub fn table(rows: &[Row], torch: &Torch) -> String {
    let mut s = String::from(
        "| batch×hidden×layers | kernel nodes | cmdgraph GPU ms | cmdgraph host ms | `mm` ms | `ln` ms | PyTorch f16 eager ms | PyTorch f16 CUDA Graph ms | cmdgraph / CUDA Graph | max abs err vs host | max abs err vs torch |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        let m = match &r.result {
            Ok(m) => m,
            Err(e) => {
                let _ = writeln!(s, "| {} | not run: {} |||||||||| ", r.shape, e.replace('|', "/").replace('\n', " "));
                continue;
            }
        };
        let kind = |k: &str| m.breakdown.iter().find(|(x, _)| x == k).map_or("-".into(), |(_, v)| format!("{v:.3}"));
        let (eager, graph, ratio, err) = match r.torch {
            Some((e, g, err)) => (
                format!("{e:.3}"),
                format!("{g:.3}"),
                format!("{:.2}×", m.gpu / g),
                err.map_or("-".into(), |x| format!("{x:.1e}")),
            ),
            None => (torch.missing(), torch.missing(), "-".into(), torch.missing()),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {:.3} | {:.3} | {} | {} | {eager} | {graph} | {ratio} | {:.1e} | {err} |",
            r.shape,
            m.kernels,
            m.gpu,
            m.host,
            kind("mm"),
            kind("ln"),
            m.err_host
        );
    }
    s
}

/// The target line: issue 32 asks for ≤ 1.0× PyTorch's f16 CUDA Graph.
pub fn targets(rows: &[Row]) -> String {
    let mut s = String::from("Against the target (issue 32: at or below PyTorch's f16 CUDA Graph, GPU time):");
    let mut any = false;
    for r in rows {
        if let (Ok(m), Some((_, g, _))) = (&r.result, r.torch) {
            any = true;
            let ratio = m.gpu / g;
            let _ = write!(s, " {}: {ratio:.2}× ({}).", r.shape, if ratio <= 1.0 { "met" } else { "missed" });
        }
    }
    if !any {
        s.push_str(" not measured in this run (no CUDA peer, or no cooperative matrices).");
    }
    s.push('\n');
    s
}

/// The section body for docs/performance.md.
pub fn section(rows: &[Row], torch: &Torch, head: &Header, reps: usize) -> String {
    format!(
        "## End to end: the MLP block in f16 on tensor cores\n\n{}\
         Input (bench/src/runtime/mlp_f16.rs, generated): the `mlp` suite's network with f16 inputs, weights \
         and outputs. Per layer `mm` is one kernel for `r = x + gelu(x·W + b)`: an f16 product on KHR \
         cooperative matrices (16×16×16 fragments, f32 sums) written as SPIR-V by \
         `cmdgraph_codegen::coop_gemm` (tile {}, half the rows below batch 32; an external kernel, since neither the kernel language nor \
         LLVM's SPIR-V backend has cooperative matrices), with the bias, GELU and residual applied to each \
         f32 sum and the result rounded to f16 once; `ln` is the layer norm in the kernel language (f16 in \
         and out, f32 inside). No pass produces `mm` yet: `tile-contractions` recognises f32 contractions \
         only. Times as in the `mlp` suite (median of {reps} runs after half a second of warm-up; `mm` and \
         `ln` from a second executable with per-node timestamps, summed over the layers). The first run's \
         output is checked against the same network on the host with the kernels' roundings: more than \
         {TOLERANCE} fails the suite.{} PyTorch runs the network in f16 (`torch.mm`, `+`, \
         `F.gelu(approximate='tanh')`, `+`, `F.layer_norm`, each rounding to f16) eager and as a \
         `torch.cuda.CUDAGraph`; its first 4096 outputs give the last column (both sides round \
         differently, so that column measures f16 noise, not an error).\n\n{}\n{}",
        head.render(),
        Tile::MEASURED,
        torch.note(),
        table(rows, torch),
        targets(rows)
    )
}

/// The whole suite: prepare, run, or both (into a temporary directory), then the section.
pub fn main(common: &Common, shapes: &[String]) -> Result<(), String> {
    let shapes: Vec<Shape> = shapes.iter().map(|s| Shape::parse(s)).collect::<Result<_, _>>()?;
    let phase = Phase::of(common, "mlp-f16")?;
    let r = run(common, &phase, &shapes);
    phase.cleanup();
    r
}

fn run(common: &Common, phase: &Phase, shapes: &[Shape]) -> Result<(), String> {
    if phase.prepares() {
        prepare(phase.dir(), shapes)?;
    }
    if !phase.runs() {
        return Ok(());
    }
    let torch = Torch::load(common.torch_json.as_deref())?;
    let (rows, device) = run_from(phase.dir(), common.device.as_deref(), common.runs, &torch)?;
    finish(common, "mlp-f16", &section(&rows, &torch, &Header::new(device), common.runs))
}

#[cfg(test)]
mod tests;
