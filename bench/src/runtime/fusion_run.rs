//! `cmdgraph-bench fusion-run` (issue 9, item 3; issue 16, item 4): element-wise chains of K
//! kernels run on the Vulkan executor, compiled with the default pipeline (fused) and with the
//! same pipeline without `fuse-kernels` (unfused), beside a hand-written vec4 kernel computing
//! the same chain (external SPIR-V from `bench/data/hand_vec4.spvasm`, the bandwidth a kernel
//! can reach) and a device-to-device `memcpy` of the same bytes. GPU times are the executor's
//! profiling timestamps (docs/executor.md, "Profiling"); the four peers run interleaved in one
//! process.
//!
//! The helpers at the end (compiling, loading, timing, the report header, the PyTorch JSON)
//! are shared with [`super::mlp`].

use super::harness::{finish, median, read, write, Common, Phase};
use crate::fusion::chain_text;
use crate::report;
use cmdgraph_codegen::bundle::{compile_module, Llvm};
use cmdgraph_codegen::external::{self, WithExternal};
use cmdgraph_codegen::Options;
use cmdgraph_executor::{load_bytes, ContextOptions, DeviceChoice, ExecId, Executor};
use cmdgraph_ir::graph::NodeKind;
use cmdgraph_passes::{lookup, PassInfo, DEFAULT_PIPELINE};
use std::fmt::Write as _;
use std::path::Path;

/// The scale every chain step applies (`v * S + v`).
const STEP: f32 = 0.5;

/// The hand-written kernel's SPIR-V assembly, a template (`hand_asm` fills it in).
const HAND_TEMPLATE: &str = include_str!("../../data/hand_vec4.spvasm");

/// The hand-written kernel's work-group size (its `LocalSize`).
pub const HAND_LOCAL: u32 = 256;

/// One measured configuration.
pub struct Row {
    /// Kernels in the chain.
    pub k: usize,
    /// Elements.
    pub n: u64,
    /// Median GPU ms: fused, unfused, the hand-written vec4 kernel, copy.
    pub fused: f64,
    /// See `fused`.
    pub unfused: f64,
    /// See `fused`.
    pub hand: f64,
    /// See `fused`.
    pub copy: f64,
    /// PyTorch eager and `torch.compile` ms (`None` when the script skipped it), when given.
    pub torch: Option<(f64, Option<f64>)>,
}

impl Row {
    /// Bytes the fused kernel must move: the input read once, the output written once.
    fn bytes(&self) -> f64 {
        2.0 * 4.0 * self.n as f64
    }
    fn speedup(&self) -> f64 {
        self.unfused / self.fused
    }
    fn fused_gbs(&self) -> f64 {
        self.bytes() / (self.fused * 1e6)
    }
    fn copy_gbs(&self) -> f64 {
        self.bytes() / (self.copy * 1e6)
    }
    fn hand_gbs(&self) -> f64 {
        self.bytes() / (self.hand * 1e6)
    }
    /// The fused kernel's bandwidth as a fraction of the hand-written kernel's.
    fn of_hand(&self) -> f64 {
        self.hand / self.fused
    }
    fn label(&self) -> String {
        format!("K={} 2^{}", self.k, self.n.trailing_zeros())
    }
}

/// The module of one configuration: the chain as graph `@g` (with profiling) and a copy of
/// the input into `@c0` as graph `@copy`.
pub fn module_text(k: usize, n: u64) -> String {
    let chain = chain_text(k, n, 1).replacen(
        "graph @g {\n",
        &format!("usm @c0 : f32[{n}]\n\ngraph @g properties(enable_profiling) {{\n"),
        1,
    );
    format!("{chain}\ngraph @copy properties(enable_profiling) {{\n  %cp = memcpy @c0, @x0, {}\n}}\n", n * 4)
}

/// What the fused bundle's module adds to [`module_text`]: the hand-written kernel (the SPIR-V
/// file `spv`, relative to the module's directory), its input `@xv` and output `@hv` (`n / 4`
/// vec4s each: the same bytes as `@x0` and `@y0`) and graph `@hand` launching it over `n / 4`
/// work-items.
pub fn hand_text(n: u64, spv: &str) -> String {
    let v = n / 4;
    format!(
        "\n// The hand-written vec4 peer (bench/data/hand_vec4.spvasm); binding 0 the argument block, 1 %x, 2 %y.\n\
         kernel @hand_vec4(%x: buf<vec4<f32>, read>, %y: buf<vec4<f32>, write>) spirv \"{spv}\" entry \"main\"\n\n\
         usm @xv : vec4<f32>[{v}]\nusm @hv : vec4<f32>[{v}]\n\n\
         graph @hand properties(enable_profiling) {{\n  %h = kernel @hand_vec4 range({v}) args(@xv, @hv)\n}}\n"
    )
}

/// The hand-written kernel's SPIR-V assembly for a chain of `k` steps and work-group size
/// `local`: the template with the steps unrolled, `%v{j+1} = %v{j} * 0.5 + %v{j}` lane by lane,
/// each multiply and add `NoContraction` (as codegen emits the IR chain).
pub fn hand_asm(k: usize, local: u32) -> String {
    let mut decorations = String::new();
    let mut steps = String::new();
    for j in 0..k {
        let _ = writeln!(decorations, "               OpDecorate %m{} NoContraction", j + 1);
        let _ = writeln!(decorations, "               OpDecorate %v{} NoContraction", j + 1);
        let _ = writeln!(steps, "         %m{} = OpVectorTimesScalar %v4float %v{j} %half", j + 1);
        let _ = writeln!(steps, "         %v{} = OpFAdd %v4float %m{} %v{j}", j + 1, j + 1);
    }
    HAND_TEMPLATE
        .replace("@LOCAL@", &local.to_string())
        .replace("@DECORATIONS@\n", &decorations)
        .replace("@STEPS@\n", &steps)
        .replace("@LAST@", &format!("%v{k}"))
}

/// Assembles `asm` into `out` with `spirv-as --target-env vulkan1.3`.
pub(crate) fn assemble(asm: &str, out: &Path) -> Result<(), String> {
    let src = out.with_extension("spvasm");
    write(&src, asm)?;
    let output = std::process::Command::new("spirv-as")
        .args(["--target-env", "vulkan1.3"])
        .arg(&src)
        .arg("-o")
        .arg(out)
        .output()
        .map_err(|e| format!("cannot run spirv-as (SPIRV-Tools) for the hand-written kernel: {e}"))?;
    if !output.status.success() {
        return Err(format!("spirv-as {}: {}", src.display(), String::from_utf8_lossy(&output.stderr).trim()));
    }
    Ok(())
}

fn bundle_name(k: usize, n: u64, fused: bool) -> String {
    format!("fusion_k{k}_n{n}_{}.cgb", if fused { "fused" } else { "unfused" })
}

/// The hand-written kernel's vec4 count, or why `n` cannot be split into vec4s.
fn vec4s(n: u64) -> Result<u64, String> {
    if n == 0 || !n.is_multiple_of(4) {
        return Err(format!(
            "fusion-run: {n} elements is not a positive multiple of 4 (the hand-written kernel reads vec4<f32>)"
        ));
    }
    Ok(n / 4)
}

/// Generates and compiles every configuration into `dir` (bundles and `fusion-run.manifest`).
/// The fused bundle holds graphs `@g` (the chain), `@hand` and `@copy`; the unfused one `@g`
/// and `@copy`.
pub fn prepare(dir: &Path, chains: &[usize], sizes: &[u64]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for &n in sizes {
        vec4s(n)?;
    }
    let mut manifest = String::new();
    for &k in chains {
        assemble(&hand_asm(k, HAND_LOCAL), &dir.join(format!("hand_k{k}.spv")))?;
    }
    for &n in sizes {
        for &k in chains {
            let text = module_text(k, n);
            let with_hand = format!("{text}{}", hand_text(n, &format!("hand_k{k}.spv")));
            compile_to(&dir.join(bundle_name(k, n, true)), &with_hand, true)?;
            compile_to(&dir.join(bundle_name(k, n, false)), &text, false)?;
            let _ = writeln!(manifest, "{k} {n}");
            eprintln!("fusion-run: compiled K={k} N={n}");
        }
    }
    write(&dir.join("fusion-run.manifest"), &manifest)
}

/// Runs every configuration of `dir`'s manifest, `reps` timed runs each, and checks outputs.
pub fn run_from(dir: &Path, device: Option<&str>, reps: usize, torch: &Torch) -> Result<(Vec<Row>, String), String> {
    let manifest = read(&dir.join("fusion-run.manifest"))?;
    let mut rows = Vec::new();
    let mut device_name = String::new();
    for line in manifest.lines().filter(|l| !l.trim().is_empty()) {
        let mut it = line.split_whitespace().map(str::parse::<u64>);
        let (Some(Ok(k)), Some(Ok(n))) = (it.next(), it.next()) else {
            return Err(format!("fusion-run.manifest: bad line `{line}`"));
        };
        let k = k as usize;
        vec4s(n)?;
        let mut fused = executor(&dir.join(bundle_name(k, n, true)), device)?;
        let mut unfused = executor(&dir.join(bundle_name(k, n, false)), device)?;
        device_name = fused.context().device_name().to_string();
        let fused_kernels = kernel_nodes(&fused, "g");
        if fused_kernels != 1 || kernel_nodes(&unfused, "g") != k {
            return Err(format!("K={k}: expected 1 fused and {k} unfused kernel nodes, got {fused_kernels}"));
        }
        let x = inputs(n);
        for ex in [&mut fused, &mut unfused] {
            ex.bind_as::<f32>("x0", &x).map_err(|e| e.to_string())?;
        }
        // The hand-written kernel reads the same values as vec4s from its own buffer.
        fused.bind_as::<f32>("xv", &x).map_err(|e| e.to_string())?;
        let ef = fused.finalize("g").map_err(|e| e.to_string())?;
        let eh = fused.finalize("hand").map_err(|e| e.to_string())?;
        let ec = fused.finalize("copy").map_err(|e| e.to_string())?;
        let eu = unfused.finalize("g").map_err(|e| e.to_string())?;
        // One warm-up run of each; the outputs are checked after the timed runs, because
        // reading back hundreds of MiB leaves the GPU idle for seconds, and on the H100 the
        // device then stayed at a low clock (half speed for every later run).
        gpu_ms(&mut fused, ef)?;
        gpu_ms(&mut unfused, eu)?;
        gpu_ms(&mut fused, eh)?;
        gpu_ms(&mut fused, ec)?;
        let (mut tf, mut tu, mut th, mut tc) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..reps.max(1) {
            tf.push(gpu_ms(&mut fused, ef)?);
            tu.push(gpu_ms(&mut unfused, eu)?);
            th.push(gpu_ms(&mut fused, eh)?);
            tc.push(gpu_ms(&mut fused, ec)?);
        }
        check(k, &x, &fused, &unfused)?;
        let row = Row {
            k,
            n,
            fused: median(&tf),
            unfused: median(&tu),
            hand: median(&th),
            copy: median(&tc),
            torch: torch.fusion(k, n),
        };
        eprintln!(
            "fusion-run: K={k} N={n}: fused {:.3} ms, unfused {:.3} ms, hand vec4 {:.3} ms, copy {:.3} ms",
            row.fused, row.unfused, row.hand, row.copy
        );
        rows.push(row);
    }
    Ok((rows, device_name))
}

/// Deterministic inputs in [-1, 1] (the same formula as scripts/torch_fusion.py).
pub fn inputs(n: u64) -> Vec<f32> {
    (0..n).map(|i| pattern(i, 1)).collect()
}

/// Element `i` of input stream `seed`: `((i * 2654435761 + seed * 40503) mod 2001) / 1000 - 1`,
/// computed in f64 and rounded once (scripts/torch_fusion.py computes the same).
pub fn pattern(i: u64, seed: u64) -> f32 {
    let m = (i.wrapping_mul(2_654_435_761).wrapping_add(seed.wrapping_mul(40_503))) % 2001;
    (m as f64 / 1000.0 - 1.0) as f32
}

/// Fused and unfused `@y0` and the hand-written kernel's `@hv` must be bit-identical
/// (reassociation and contraction are off in all three), close to the chain computed here,
/// and the copy must equal the input.
fn check(k: usize, x: &[f32], fused: &Executor, unfused: &Executor) -> Result<(), String> {
    let yf: Vec<f32> = fused.read_as("y0").map_err(|e| e.to_string())?;
    let yu: Vec<f32> = unfused.read_as("y0").map_err(|e| e.to_string())?;
    let yh: Vec<f32> = fused.read_as("hv").map_err(|e| e.to_string())?;
    let c: Vec<f32> = fused.read_as("c0").map_err(|e| e.to_string())?;
    if let Some(i) = (0..yf.len()).find(|&i| yf[i].to_bits() != yu.get(i).map_or(0, |v| v.to_bits())) {
        return Err(format!("K={k}: fused and unfused differ at {i}: {} vs {:?}", yf[i], yu.get(i)));
    }
    if yh.len() != yf.len() {
        return Err(format!("K={k}: @hv has {} elements, @y0 {}", yh.len(), yf.len()));
    }
    if let Some(i) = (0..yf.len()).find(|&i| yf[i].to_bits() != yh[i].to_bits()) {
        return Err(format!("K={k}: fused and the hand-written kernel differ at {i}: {} vs {}", yf[i], yh[i]));
    }
    if let Some(i) = (0..x.len()).find(|&i| c.get(i).map(|v| v.to_bits()) != Some(x[i].to_bits())) {
        return Err(format!("K={k}: the copy differs from the input at {i}"));
    }
    for (i, (&got, &x)) in yf.iter().zip(x).enumerate() {
        let want = (0..k).fold(x, |v, _| v * STEP + v);
        if (got - want).abs() > 1e-5 * want.abs().max(1.0) {
            return Err(format!("K={k}: @y0[{i}] = {got}, expected {want}"));
        }
    }
    Ok(())
}

/// The Markdown table.
pub fn table(rows: &[Row], torch: &Torch) -> String {
    let mut s = String::from(
        "| K | elements | fused ms | unfused ms | speed-up | hand vec4 ms | fused GB/s | hand vec4 GB/s | copy GB/s | fused / hand | fused/copy | PyTorch eager ms | torch.compile ms |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        let (eager, compiled) = match r.torch {
            Some((e, c)) => (format!("{e:.3}"), c.map_or_else(|| "not run".into(), |c| format!("{c:.3}"))),
            None => (torch.missing(), torch.missing()),
        };
        let _ = writeln!(
            s,
            "| {} | 2^{} | {:.3} | {:.3} | {:.2} | {:.3} | {:.1} | {:.1} | {:.1} | {:.0} % | {:.2} | {eager} | {compiled} |",
            r.k,
            r.n.trailing_zeros(),
            r.fused,
            r.unfused,
            r.speedup(),
            r.hand,
            r.fused_gbs(),
            r.hand_gbs(),
            r.copy_gbs(),
            100.0 * r.of_hand(),
            r.copy / r.fused,
        );
    }
    s
}

/// The "Against the targets" lines, from the measured rows.
pub fn targets(rows: &[Row]) -> String {
    let mut s = String::from("Against the targets:\n\n");
    let missed: Vec<&Row> = rows.iter().filter(|r| r.speedup() < 0.8 * r.k as f64).collect();
    if missed.is_empty() {
        s.push_str("- fused/unfused speed-up ≥ 0.8·K: **met** on every row.\n");
    } else {
        let list: Vec<String> =
            missed.iter().map(|r| format!("K={} 2^{} ({:.2})", r.k, r.n.trailing_zeros(), r.speedup())).collect();
        // The measured reason: how the fused time grows with K at a fixed size.
        let growth: Vec<String> = group_by_n(rows)
            .into_iter()
            .filter_map(|(n, rs)| {
                let (a, b) = (rs.first()?, rs.last()?);
                Some(format!("2^{}: K={} {:.3} ms → K={} {:.3} ms", n.trailing_zeros(), a.k, a.fused, b.k, b.fused))
            })
            .collect();
        let cost: Vec<String> = missed.iter().map(|r| format!("{:.2}", r.fused * r.k as f64 / r.unfused)).collect();
        let _ = writeln!(
            s,
            "- fused/unfused speed-up ≥ 0.8·K: **missed** on {} of {} rows: {}. Measured reason: there one \
             fused kernel costs {} unfused kernels (the target needs at most 1.25): its time grows with K ({}), \
             the K steps of arithmetic per element adding to the fixed per-element cost of a kernel. What would \
             close it: nothing in the graph (one launch, one read, one write is the floor); fewer instructions \
             per element (`--fuse-fp-reassoc` contracts `v*s+v` to one `fma`).",
            missed.len(),
            rows.len(),
            list.join(", "),
            cost.join(", "),
            growth.join("; ")
        );
    }
    let slow: Vec<&Row> = rows.iter().filter(|r| r.copy / r.fused < 0.9).collect();
    if slow.is_empty() {
        s.push_str("- fused ≥ 90% of the copy bandwidth: **met** on every row.\n");
    } else {
        let list: Vec<String> = slow
            .iter()
            .map(|r| format!("K={} 2^{} ({:.0}%)", r.k, r.n.trailing_zeros(), 100.0 * r.copy / r.fused))
            .collect();
        let shortest = rows.iter().min_by_key(|r| r.k).map_or(0.0, |r| 100.0 * r.copy / r.fused);
        let _ = writeln!(
            s,
            "- fused ≥ 90% of the copy bandwidth: **missed** on {} of {} rows: {}. Measured reason: even the \
             shortest chain reaches {shortest:.0}% of the copy, so the gap is the cost of running a kernel over \
             the data at all, not the chain's arithmetic (the copy is a transfer command, no shader). What would \
             close it: on llvmpipe nothing in the graph (its compute shaders run on the CPU's SIMD lanes, its \
             copy is a `memcpy`); on a GPU, more bytes in flight per invocation in codegen.",
            slow.len(),
            rows.len(),
            list.join(", ")
        );
    }
    s.push_str(&hand_target(rows));
    let with: Vec<&Row> = rows.iter().filter(|r| r.torch.is_some()).collect();
    if with.is_empty() {
        s.push_str(
            "- faster than PyTorch eager and fused ≤ 1.1× `torch.compile`: **not measured** in this run \
             (no CUDA; the GPU run gives these columns).\n",
        );
    } else {
        let lose_eager: Vec<String> =
            with.iter().filter(|r| r.torch.is_some_and(|(e, _)| r.fused >= e)).map(|r| r.label()).collect();
        let compiled: Vec<(&Row, f64)> = with.iter().filter_map(|r| Some((*r, r.fused / r.torch?.1?))).collect();
        let losers: Vec<&(&Row, f64)> = compiled.iter().filter(|(_, ratio)| *ratio > COMPILE_RATIO).collect();
        let lose_compile: Vec<String> =
            losers.iter().map(|(r, ratio)| format!("{} ({ratio:.2}×)", r.label())).collect();
        // Where the hand-written kernel itself is past 1.1× `torch.compile`, the gap is the
        // Vulkan kernel's against Triton's, not codegen's.
        let hand_loses: Vec<String> = losers
            .iter()
            .map(|(r, ratio)| (r, ratio * r.of_hand()))
            .filter(|(_, hand)| *hand > COMPILE_RATIO)
            .map(|(r, hand)| format!("{} ({hand:.2}×)", r.label()))
            .collect();
        let eager = if lose_eager.is_empty() {
            "**met** on every row".to_string()
        } else {
            format!("**missed** on {}", lose_eager.join(", "))
        };
        let worst = compiled.iter().map(|(_, ratio)| *ratio).fold(f64::NAN, f64::max);
        let compile = if compiled.is_empty() {
            "**not measured** (no `torch.compile` times in the JSON)".to_string()
        } else if lose_compile.is_empty() {
            format!(
                "**met** on every row with a `torch.compile` time ({} of {}; fused / torch.compile at most {worst:.2}×)",
                compiled.len(),
                rows.len()
            )
        } else {
            let reason = if hand_loses.is_empty() {
                "the hand-written vec4 kernel is within 1.1× of `torch.compile` on those rows, so the gap is \
                 codegen's kernel against the hand-written one (the fused / hand column); what would close it: \
                 the code codegen generates around the chain's arithmetic"
                    .to_string()
            } else {
                format!(
                    "the hand-written vec4 kernel itself is past 1.1× of `torch.compile` on {} (hand / \
                     torch.compile), so there the gap is a Vulkan kernel's against Triton's on this device, \
                     not codegen's alone; what would close it there: the timing or the access pattern of the \
                     hand kernel too (its LocalSize, a grid-stride loop), then codegen's",
                    hand_loses.join(", ")
                )
            };
            format!(
                "**missed** on {} of {} rows with a `torch.compile` time: {}. Measured reason: {reason}",
                lose_compile.len(),
                compiled.len(),
                lose_compile.join(", ")
            )
        };
        let _ = writeln!(s, "- faster than PyTorch eager: {eager}. Fused ≤ 1.1× `torch.compile`: {compile}.");
    }
    s
}

/// The largest fused / `torch.compile` time ratio the target allows.
const COMPILE_RATIO: f64 = 1.1;

/// The least fraction of the hand-written kernel's bandwidth the target asks of the fused one.
const HAND_FRACTION: f64 = 0.9;

/// The sizes (log2 elements) the hand-kernel target names.
const HAND_SIZES: [u32; 2] = [24, 26];

/// The "≥ 90 % of the hand-written vec4 kernel" line: a verdict per row at the target's sizes,
/// the other sizes for reference, and for misses the measured reason.
fn hand_target(rows: &[Row]) -> String {
    let mut s = String::from("- element-wise at ≥ 90 % of the hand-written vec4 kernel at 2^24 and 2^26: ");
    let cell = |r: &Row| {
        let verdict = if r.of_hand() >= HAND_FRACTION { "met" } else { "missed" };
        format!("{} {:.0} % **{verdict}**", r.label(), 100.0 * r.of_hand())
    };
    let (at, other): (Vec<&Row>, Vec<&Row>) =
        rows.iter().partition(|r| r.n.is_power_of_two() && HAND_SIZES.contains(&r.n.trailing_zeros()));
    let missed: Vec<&Row> = at.iter().copied().filter(|r| r.of_hand() < HAND_FRACTION).collect();
    if at.is_empty() {
        s.push_str("**not measured** at those sizes in this run");
    } else if missed.is_empty() {
        let _ = write!(s, "**met** on every row ({} of {})", at.len(), at.len());
    } else {
        let _ = write!(s, "**missed** on {} of {} rows", missed.len(), at.len());
    }
    if !at.is_empty() {
        let _ = write!(s, ": {}", at.iter().map(|r| cell(r)).collect::<Vec<_>>().join("; "));
    }
    if !other.is_empty() {
        let _ = write!(
            s,
            ". At other sizes, for reference (not the target's): {}",
            other.iter().map(|r| format!("{} {:.0} %", r.label(), 100.0 * r.of_hand())).collect::<Vec<_>>().join("; ")
        );
    }
    s.push('.');
    if !missed.is_empty() {
        // The measured reason: how the fraction moves with K at each size that misses.
        let trend: Vec<String> = group_by_n(at.iter().copied())
            .into_iter()
            .filter(|(_, rs)| rs.iter().any(|r| r.of_hand() < HAND_FRACTION))
            .filter_map(|(n, rs)| {
                let (a, b) = (rs.first()?, rs.last()?);
                Some(format!(
                    "2^{}: K={} {:.0} % → K={} {:.0} %",
                    n.trailing_zeros(),
                    a.k,
                    100.0 * a.of_hand(),
                    b.k,
                    100.0 * b.of_hand()
                ))
            })
            .collect();
        let shortest_misses = group_by_n(at.iter().copied())
            .iter()
            .any(|(_, rs)| rs.first().is_some_and(|r| r.of_hand() < HAND_FRACTION));
        let _ = write!(
            s,
            " Measured reason: the hand-written kernel does the same K multiplies and K adds per element, \
             uncontracted, and reads and writes the same bytes, so the gap is the code codegen generates \
             around them; the fraction by K ({}){}",
            trend.join("; "),
            if shortest_misses {
                " is below 90 % already at the shortest chain, so it is in the memory access (the loads and \
                 stores per invocation), not the chain's arithmetic. What would close it: codegen's element-wise \
                 loads and stores as wide as the hand kernel's (one 16-byte access per invocation)."
            } else {
                " falls as K grows, so it is the instructions per step beside the hand kernel's two vector \
                 operations. What would close it: fewer instructions per step in codegen's fused kernel \
                 (its SPIR-V beside bench/data/hand_vec4.spvasm shows which)."
            }
        );
    }
    s.push('\n');
    s
}

fn group_by_n<'a>(rows: impl IntoIterator<Item = &'a Row>) -> Vec<(u64, Vec<&'a Row>)> {
    let mut out: Vec<(u64, Vec<&'a Row>)> = Vec::new();
    for r in rows {
        match out.iter_mut().find(|(n, _)| *n == r.n) {
            Some((_, v)) => v.push(r),
            None => out.push((r.n, vec![r])),
        }
    }
    for (_, v) in &mut out {
        v.sort_by_key(|r| r.k);
    }
    out
}

/// The section body for docs/performance.md.
pub fn section(rows: &[Row], torch: &Torch, head: &Header, reps: usize) -> String {
    format!(
        "## Kernel fusion at run time\n\n{}\
         Input (bench/src/runtime/fusion_run.rs): the chains of the `fusion` suite, `x -> t0 -> ... -> y`, K \
         kernels `v * 0.5 + v` over `f32` elements through graph-owned temporaries, compiled twice with \
         LLVM -O2: *fused* with the default pipeline (one kernel node), *unfused* with the same pipeline \
         without `fuse-kernels` (K kernel nodes, temporaries in the planned pool). *hand vec4* is the same \
         chain written by hand in SPIR-V assembly (bench/data/hand_vec4.spvasm, the K steps unrolled at \
         `--prepare` and assembled by `spirv-as`; an external kernel, docs/abi.md): one `vec4<f32>` load, \
         K vector multiplies and adds (each `NoContraction`, as codegen emits them) and one `vec4<f32>` store \
         per invocation, LocalSize {HAND_LOCAL}, launched over n / 4 work-items in a graph of the fused \
         bundle. It reads its own input `@xv`, the same values as `@x0` (an external kernel's buffer is a \
         runtime array of its parameter's element type, so it cannot read `@x0`'s `f32`s as vec4s), and \
         writes `@hv`. *copy* is a graph of one `memcpy` of the input (`vkCmdCopyBuffer`). Times: GPU time \
         of one graph run from the executor's profiling timestamps (first command to last), median of \
         {reps} runs after one warm-up run, the four peers interleaved run by run in one process. GB/s \
         counts the bytes the fused kernel must move (the input read once, the output written once: 8 \
         bytes per element), for the hand kernel and the copy too. Checked after the timed runs (a \
         read-back of hundreds of MiB before them left the GPU at a low clock for the whole table): fused \
         and unfused `@y0` and the hand kernel's `@hv` bit-identical, all within 1e-5 of the chain computed \
         on the host, the copy equal to the input; a mismatch fails the suite.{}\n\n{}\n{}\n\
         Reading the numbers: *speed-up* is unfused / fused GPU time; fusion removes K - 1 launches, the \
         barriers between them and 2(K - 1) passes over memory, so on a bandwidth-bound device it \
         approaches K. *fused / hand* is the fused kernel's bandwidth as a percentage of the hand-written \
         kernel's (hand time / fused time): the hand kernel moves the same bytes with the same arithmetic, \
         so below 100 % is what codegen's kernel costs beyond what the device needs. *fused/copy* is the \
         fraction of the copy's bandwidth the fused kernel reaches (in the NVIDIA runs the copy command \
         was slower than the fused kernel, so the hand kernel is the ceiling to read there). On llvmpipe (a CPU) the kernels are \
         bound by arithmetic rather than bandwidth as K grows, so ratios, not absolute times, are the \
         result there.\n",
        head.render(),
        torch.note(),
        table(rows, torch),
        targets(rows)
    )
}

// ---- Helpers shared with the MLP suite -------------------------------------------------

/// The default pipeline, with or without the fusion passes (`fuse-kernels`, and
/// `fuse-stages`, which would otherwise put the unfused chains into one dispatch).
pub(crate) fn pipeline(fuse: bool) -> Vec<&'static PassInfo> {
    let fusion = |n: &str| n == "fuse-kernels" || n == "fuse-stages";
    DEFAULT_PIPELINE.iter().filter(|n| fuse || !fusion(n)).filter_map(|n| lookup(n)).collect()
}

/// Parses `text`, compiles it at -O2 and writes the bundle to `path`. External SPIR-V
/// kernels are read relative to `path`'s directory, as `cmdgraph compile` loads them.
pub(crate) fn compile_to(path: &Path, text: &str, fuse: bool) -> Result<(), String> {
    let name = path.display().to_string();
    let module = cmdgraph_ir::text::parse(text).map_err(|d| cmdgraph_ir::diag::render_all(&d, &name, text))?;
    let external = external::load(&module, path.parent().unwrap_or(Path::new(".")))
        .map_err(|d| cmdgraph_ir::diag::render_all(&d, &name, text))?;
    let compiler = WithExternal { inner: &Llvm, external: &external };
    let (bundle, _) = compile_module(&module, &pipeline(fuse), &Options { opt_level: 2 }, &compiler)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    super::harness::write_bytes(path, &bundle.to_bytes().map_err(|e| e.to_string())?)
}

/// An executor on `device` (validation off: these are timings) for the bundle at `path`.
pub(crate) fn executor(path: &Path, device: Option<&str>) -> Result<Executor, String> {
    let loaded = load_bytes(&super::harness::read_bytes(path)?).map_err(|e| format!("{}: {e}", path.display()))?;
    let opts = ContextOptions {
        validation: false,
        device: device.map(DeviceChoice::parse).unwrap_or(DeviceChoice::Default),
        ..Default::default()
    };
    Executor::new(loaded, &opts).map_err(|e| format!("{}: {e}", path.display()))
}

/// Kernel nodes of graph `name` of the executor's (optimized) module.
pub(crate) fn kernel_nodes(ex: &Executor, name: &str) -> usize {
    ex.module()
        .graphs
        .iter()
        .filter(|(_, g)| g.name == name)
        .flat_map(|(_, g)| g.nodes.iter())
        .filter(|(_, n)| matches!(n.kind, NodeKind::Kernel(_)))
        .count()
}

/// Runs `id` once and returns its GPU time in ms (profiling timestamps; waits for the run).
pub(crate) fn gpu_ms(ex: &mut Executor, id: ExecId) -> Result<f64, String> {
    ex.run(id).map_err(|e| e.to_string())?;
    let p = ex.profile(id).map_err(|e| e.to_string())?;
    Ok(p.end_ns.saturating_sub(p.start_ns) as f64 / 1e6)
}

/// What the header of a runtime table states.
pub struct Header {
    /// The command line.
    pub command: String,
    /// The executor's device name.
    pub device: String,
}

impl Header {
    /// The command as run (`cmdgraph-bench` and its arguments).
    pub fn new(device: String) -> Header {
        let args: Vec<String> = std::env::args().skip(1).collect();
        Header { command: format!("cmdgraph-bench {}", args.join(" ")), device }
    }

    pub(crate) fn render(&self) -> String {
        format!(
            "Command: `{}` (without `--prepare`/`--from`: `cargo run --release -p cmdgraph-bench -- ...` \
             compiles into a temporary directory and runs in one process)  \n\
             Device: {} (Vulkan, through `cmdgraph_executor`); driver: {}  \n\
             Date: {}  \n\
             Host: {}\n\n",
            self.command,
            self.device,
            driver(),
            report::today(),
            report::machine()
        )
    }
}

/// The GPU driver's version where the system says it (NVIDIA's proc file), else what is known.
pub(crate) fn driver() -> String {
    match std::fs::read_to_string("/proc/driver/nvidia/version") {
        Ok(t) => t.lines().next().map_or_else(|| "NVIDIA (unknown version)".into(), |l| l.trim().to_string()),
        Err(_) => "not reported by the executor (Mesa's on llvmpipe)".to_string(),
    }
}

/// The numbers of `scripts/torch_fusion.py`, or why there are none.
pub struct Torch {
    json: Option<serde_json::Value>,
    reason: String,
}

impl Torch {
    /// Reads `path` when given.
    pub fn load(path: Option<&Path>) -> Result<Torch, String> {
        let Some(path) = path else {
            return Ok(Torch { json: None, reason: "no CUDA".into() });
        };
        let v: serde_json::Value =
            serde_json::from_str(&read(path)?).map_err(|e| format!("{}: {e}", path.display()))?;
        if v.get("available").and_then(|a| a.as_bool()) != Some(true) {
            let why = v.get("reason").and_then(|r| r.as_str()).unwrap_or("unavailable").to_string();
            return Ok(Torch { json: None, reason: format!("no CUDA: {why}") });
        }
        Ok(Torch { json: Some(v), reason: String::new() })
    }

    /// What a missing cell shows.
    pub(crate) fn missing(&self) -> String {
        if self.json.is_some() {
            "n/a (not run)".into()
        } else {
            format!("n/a ({})", self.reason)
        }
    }

    /// A sentence about the PyTorch columns for the header.
    pub(crate) fn note(&self) -> String {
        match &self.json {
            None => format!(" PyTorch columns: n/a ({}).", self.reason),
            Some(v) => format!(
                " PyTorch columns: `scripts/torch_fusion.py` on {} (torch {}), CUDA-event times, median of \
                 its repetitions after warm-up, in a separate process on the same GPU.",
                v.get("device").and_then(|d| d.as_str()).unwrap_or("?"),
                v.get("torch").and_then(|d| d.as_str()).unwrap_or("?")
            ),
        }
    }

    /// Entries of list `key` (`fusion` or `mlp`).
    pub(crate) fn entries(&self, key: &str) -> Vec<&serde_json::Value> {
        self.json
            .as_ref()
            .and_then(|v| v.get(key))
            .and_then(|l| l.as_array())
            .map(|a| a.iter().collect())
            .unwrap_or_default()
    }

    fn fusion(&self, k: usize, n: u64) -> Option<(f64, Option<f64>)> {
        let e = self.entries("fusion").into_iter().find(|e| {
            e.get("k").and_then(|v| v.as_u64()) == Some(k as u64) && e.get("n").and_then(|v| v.as_u64()) == Some(n)
        })?;
        Some((e.get("eager_ms")?.as_f64()?, e.get("compile_ms").and_then(|c| c.as_f64())))
    }
}

/// The whole suite: prepare, run, or both (into a temporary directory), then the section.
pub fn main(common: &Common, chains: &[usize], sizes: &[u64]) -> Result<(), String> {
    let phase = Phase::of(common, "fusion-run")?;
    let r = run(common, &phase, chains, sizes);
    phase.cleanup();
    r
}

fn run(common: &Common, phase: &Phase, chains: &[usize], sizes: &[u64]) -> Result<(), String> {
    if phase.prepares() {
        prepare(phase.dir(), chains, sizes)?;
    }
    if !phase.runs() {
        return Ok(());
    }
    let torch = Torch::load(common.torch_json.as_deref())?;
    let iree = super::iree::Iree::load(common.iree_json.as_deref())?;
    let (rows, device) = run_from(phase.dir(), common.device.as_deref(), common.runs, &torch)?;
    let fused: Vec<(usize, u64, f64)> = rows.iter().map(|r| (r.k, r.n, r.fused)).collect();
    let body = section(&rows, &torch, &Header::new(device), common.runs) + &iree.fusion_table(&fused);
    finish(common, "fusion-run", &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_module_verifies_and_the_pipelines_differ_only_in_fusion() {
        let text = module_text(4, 1024);
        let m = cmdgraph_ir::text::parse(&text)
            .unwrap_or_else(|d| panic!("{}", cmdgraph_ir::diag::render_all(&d, "m", &text)));
        assert!(cmdgraph_ir::verify::verify(&m).is_ok());
        let (a, b) = (pipeline(true), pipeline(false));
        assert_eq!(a.len(), b.len() + 2);
        for pass in ["fuse-kernels", "fuse-stages"] {
            assert!(a.iter().any(|p| p.name == pass) && !b.iter().any(|p| p.name == pass), "{pass}");
        }
    }

    #[test]
    fn inputs_are_in_range_and_match_the_python_formula() {
        // (0 * 2654435761 + 40503) % 2001 = 483; (1 * 2654435761 + 40503) % 2001 = 1690.
        assert_eq!(pattern(0, 1), (483.0f64 / 1000.0 - 1.0) as f32);
        assert_eq!(pattern(1, 1), (1690.0f64 / 1000.0 - 1.0) as f32);
        assert!(inputs(5000).iter().all(|v| (-1.0..=1.0).contains(v)));
    }

    #[test]
    fn targets_report_misses_with_the_rows() {
        let row = |k, fused, unfused| Row { k, n: 1 << 20, fused, unfused, hand: 1.0, copy: 1.0, torch: None };
        let t = targets(&[row(2, 1.0, 2.0), row(8, 4.0, 8.0)]);
        assert!(t.contains("**missed** on 1 of 2 rows: K=8 2^20 (2.00)"), "{t}");
        assert!(t.contains("not measured"), "{t}");
        let t = targets(&[row(2, 1.0, 2.0)]);
        assert!(t.contains("speed-up ≥ 0.8·K: **met**"), "{t}");
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    #[test]
    fn the_torch_script_writes_json_the_bench_reads_with_or_without_cuda() {
        let dir = std::env::temp_dir().join(format!("cmdgraph-torch-json-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let json = dir.join("torch.json");
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/torch_fusion.py");
        let status = std::process::Command::new("python3")
            .args([script, "--json"])
            .arg(&json)
            .args(["1024", "--chains", "2", "--shapes", "", "--reps", "1", "--no-compile"])
            .status()
            .unwrap_or_else(|e| panic!("python3: {e}"));
        assert!(status.success(), "{status}");
        let torch = Torch::load(Some(&json)).unwrap_or_else(|e| panic!("{e}"));
        let _ = std::fs::remove_dir_all(&dir);
        match torch.json {
            // No torch or no CUDA (this machine): every cell says why.
            None => assert!(torch.missing().starts_with("n/a (no CUDA"), "{}", torch.missing()),
            Some(_) => {
                let (eager, compiled) = torch.fusion(2, 1024).unwrap_or_else(|| panic!("no K=2 entry"));
                assert!(eager > 0.0 && compiled.is_none());
            }
        }
    }

    #[test]
    fn torch_numbers_are_found_by_configuration() {
        let dir = std::env::temp_dir().join(format!("cmdgraph-torch-fake-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let json = dir.join("t.json");
        let text = r#"{"available": true, "device": "X", "torch": "2", "fusion": [
            {"k": 2, "n": 16, "eager_ms": 1.5, "compile_ms": 0.5}, {"k": 4, "n": 16, "eager_ms": 3.0, "compile_ms": null}],
            "mlp": []}"#;
        std::fs::write(&json, text).unwrap_or_else(|e| panic!("{e}"));
        let torch = Torch::load(Some(&json)).unwrap_or_else(|e| panic!("{e}"));
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(torch.fusion(2, 16), Some((1.5, Some(0.5))));
        assert_eq!(torch.fusion(4, 16), Some((3.0, None)));
        assert_eq!(torch.fusion(8, 16), None);
        let row = Row { k: 2, n: 16, fused: 1.0, unfused: 2.0, hand: 1.0, copy: 1.0, torch: torch.fusion(2, 16) };
        let t = targets(&[row]);
        assert!(t.contains("faster than PyTorch eager: **met**"), "{t}");
        assert!(
            t.contains("`torch.compile`: **missed** on 1 of 1 rows with a `torch.compile` time: K=2 2^4 (2.00×)"),
            "{t}"
        );
        // 1.1× is allowed.
        let row = Row { k: 2, n: 16, fused: 0.55, unfused: 2.0, hand: 1.0, copy: 1.0, torch: torch.fusion(2, 16) };
        let t = targets(&[row]);
        assert!(t.contains("`torch.compile`: **met** on every row with a `torch.compile` time (1 of 1; fused / torch.compile at most 1.10×)"), "{t}");
    }

    #[test]
    fn the_hand_target_is_judged_per_row_at_its_sizes() {
        let row = |k, n: u64, fused, hand| Row { k, n, fused, unfused: 1.0, hand, copy: 1.0, torch: None };
        let rows = [row(2, 1 << 24, 1.0, 0.95), row(32, 1 << 24, 2.0, 1.0), row(2, 1 << 20, 1.0, 0.5)];
        let t = hand_target(&rows);
        assert!(t.contains("**missed** on 1 of 2 rows: K=2 2^24 95 % **met**; K=32 2^24 50 % **missed**"), "{t}");
        assert!(t.contains("for reference (not the target's): K=2 2^20 50 %"), "{t}");
        assert!(t.contains("falls as K grows"), "{t}");
        let t = hand_target(&rows[..1]);
        assert!(t.contains("**met** on every row (1 of 1): K=2 2^24 95 % **met**."), "{t}");
        let t = hand_target(&rows[2..]);
        assert!(t.contains("**not measured** at those sizes in this run. At other sizes"), "{t}");
    }

    #[test]
    fn sizes_must_split_into_vec4s() {
        assert_eq!(vec4s(1 << 20), Ok(1 << 18));
        let e = vec4s(1022).unwrap_err();
        assert!(e.contains("1022 elements is not a positive multiple of 4"), "{e}");
        assert!(vec4s(0).is_err());
    }

    #[test]
    fn the_hand_kernel_assembles_validates_and_matches_its_signature() {
        // The fused module with the hand kernel parses and verifies.
        let text = format!("{}{}", module_text(3, 1024), hand_text(1024, "hand_k3.spv"));
        let m = cmdgraph_ir::text::parse(&text)
            .unwrap_or_else(|d| panic!("{}", cmdgraph_ir::diag::render_all(&d, "m", &text)));
        assert!(cmdgraph_ir::verify::verify(&m).is_ok());
        let asm = hand_asm(3, HAND_LOCAL);
        assert!(asm.lines().all(|l| l.starts_with(';') || !l.contains('@')), "a marker is left: {asm}");
        assert!(asm.contains("%v3 = OpFAdd %v4float %m3 %v2") && asm.contains("OpStore %y_p %v3"), "{asm}");
        assert_eq!(
            asm.lines().filter(|l| l.trim_start().starts_with("OpDecorate") && l.ends_with("NoContraction")).count(),
            6
        );
        // Assembled, validated and checked against the signature as `cmdgraph compile` does.
        let dir = std::env::temp_dir().join(format!("cmdgraph-hand-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let spv = dir.join("hand_k3.spv");
        let r = assemble(&asm, &spv)
            .and_then(|()| external::load(&m, &dir).map_err(|d| cmdgraph_ir::diag::render_all(&d, "m", &text)));
        let _ = std::fs::remove_dir_all(&dir);
        let externals = r.unwrap_or_else(|e| panic!("{e}"));
        let hand = externals.get("hand_vec4").unwrap_or_else(|| panic!("no @hand_vec4"));
        assert_eq!(hand.workgroup_size, [HAND_LOCAL, 1, 1]);
    }
}
