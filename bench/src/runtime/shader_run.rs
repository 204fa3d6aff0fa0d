//! `cmdgraph-bench shader-run` (issue 30): WGSL and GLSL compute shaders translated into
//! cmdgraph kernels (`cmdgraph-shader`) against the same shaders compiled directly to SPIR-V
//! (WGSL by naga's SPIR-V back end, GLSL by glslang) and run as external kernels with ordinary
//! bindings (`spirv ... bindings`), on the bandwidth workload (saxpy) and the matmul workload
//! (one output per invocation), in one process on one device, interleaved run by run.
//!
//! Peers per (workload, language, size): *translated* (the default pass pipeline, so the
//! matmul is tiled by `tile-contractions`), *translated, no passes* (the translation and
//! codegen alone), *direct*. Times are the executor's profiling timestamps of one graph run
//! (first command to last), median of `--runs` after half a second of warm-up runs. Outputs
//! are checked before timing: both against a host computation in f64 within the error bound of f32
//! summation in any order (`k · 2^-23 · Σ|a·b|`, sampled for the matmul).

use super::harness::{self, median, read, write, Common, Phase};
use cmdgraph_codegen::bundle::{compile_module, Llvm};
use cmdgraph_codegen::external::{self, WithExternal};
use cmdgraph_codegen::Options;
use cmdgraph_executor::{ExecId, Executor};
use std::fmt::Write as _;
use std::path::Path;

/// Options of `cmdgraph-bench shader-run`.
#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// Options every runtime suite takes.
    #[command(flatten)]
    pub common: Common,
    /// saxpy element counts (the GPU run: 16777216,67108864).
    #[arg(long, value_delimiter = ',', default_values_t = [1u64 << 20])]
    pub saxpy: Vec<u64>,
    /// Square matmul sizes (the GPU run: 1024,2048).
    #[arg(long, value_delimiter = ',', default_values_t = [256u64])]
    pub matmul: Vec<u64>,
}

const SAXPY_WGSL: &str = include_str!("../../data/shaders/saxpy.wgsl");
const SAXPY_GLSL: &str = include_str!("../../data/shaders/saxpy.comp");
const MATMUL_WGSL: &str = include_str!("../../data/shaders/matmul.wgsl");
const MATMUL_GLSL: &str = include_str!("../../data/shaders/matmul.comp");

/// One configuration: a workload in a language at a size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Config {
    matmul: bool,
    wgsl: bool,
    size: u64,
}

impl Config {
    fn name(self) -> String {
        format!(
            "{}-{}-{}",
            if self.matmul { "matmul" } else { "saxpy" },
            if self.wgsl { "wgsl" } else { "glsl" },
            self.size
        )
    }

    fn source(self) -> &'static str {
        match (self.matmul, self.wgsl) {
            (false, true) => SAXPY_WGSL,
            (false, false) => SAXPY_GLSL,
            (true, true) => MATMUL_WGSL,
            (true, false) => MATMUL_GLSL,
        }
    }

    fn file(self) -> &'static str {
        match (self.matmul, self.wgsl) {
            (false, true) => "saxpy.wgsl",
            (false, false) => "saxpy.comp",
            (true, true) => "matmul.wgsl",
            (true, false) => "matmul.comp",
        }
    }

    /// The module with the kernel declared by `body` (a `wgsl`/`glsl`/`spirv` clause).
    fn module(self, body: &str) -> String {
        let n = self.size;
        if self.matmul {
            format!(
                "kernel @k(%a: buf<f32, read>, %b: buf<f32, read>, %c: buf<f32, read_write>, %m: u32, %n: u32, %kk: u32) {body}\n\n\
                 usm @a : f32[{nn}]\nusm @b : f32[{nn}]\nusm @c : f32[{nn}]\n\n\
                 graph @g properties(enable_profiling) {{\n  \
                 %mm = kernel @k nd_range(global({n}, {n}), local(16, 16)) args(@a, @b, @c, {n}, {n}, {n})\n}}\n",
                nn = n * n
            )
        } else {
            format!(
                "kernel @k(%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32, %n: u32) {body}\n\n\
                 usm @x : f32[{n}]\nusm @y : f32[{n}]\n\n\
                 graph @g properties(enable_profiling) {{\n  \
                 %s = kernel @k nd_range(global({n}), local(256)) args(@x, @y, 1.5, {n})\n}}\n"
            )
        }
    }

    /// Bytes moved (saxpy) or floating-point operations (matmul) per run.
    fn work(self) -> f64 {
        let n = self.size as f64;
        if self.matmul {
            2.0 * n * n * n
        } else {
            12.0 * n
        }
    }
}

fn configs(args: &Args) -> Vec<Config> {
    let mut out = Vec::new();
    for &size in &args.saxpy {
        for wgsl in [true, false] {
            out.push(Config { matmul: false, wgsl, size });
        }
    }
    for &size in &args.matmul {
        for wgsl in [true, false] {
            out.push(Config { matmul: true, wgsl, size });
        }
    }
    out
}

/// The shader compiled straight to SPIR-V: naga's SPIR-V back end for WGSL (as wgpu does,
/// without its loop-bounding and debug additions), glslang for GLSL.
fn direct_spirv(c: Config, dir: &Path) -> Result<Vec<u32>, String> {
    if c.wgsl {
        let module = naga::front::wgsl::parse_str(c.source()).map_err(|e| format!("{}: {e}", c.file()))?;
        let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
            .validate(&module)
            .map_err(|e| format!("{}: {e}", c.file()))?;
        let options = naga::back::spv::Options {
            lang_version: (1, 3),
            flags: naga::back::spv::WriterFlags::empty(),
            force_loop_bounding: false,
            ..Default::default()
        };
        let pipeline =
            naga::back::spv::PipelineOptions { shader_stage: naga::ShaderStage::Compute, entry_point: "main".into() };
        naga::back::spv::write_vec(&module, &info, &options, Some(&pipeline)).map_err(|e| format!("{}: {e}", c.file()))
    } else {
        let src = dir.join(c.file());
        let spv = dir.join("glsl.spv");
        write(&src, c.source())?;
        let out = std::process::Command::new("glslangValidator")
            .args(["-V", "--target-env", "vulkan1.3", "-o"])
            .arg(&spv)
            .arg(&src)
            .output()
            .map_err(|e| format!("glslangValidator: {e} (scripts/setup.sh installs glslang-tools)"))?;
        if !out.status.success() {
            return Err(format!("glslangValidator: {}", String::from_utf8_lossy(&out.stdout)));
        }
        let bytes = harness::read_bytes(&spv)?;
        external::reflect::words_of(&bytes).map_err(|e| e.0)
    }
}

/// Compiles the three bundles of `c` into `dir`.
fn prepare(c: Config, dir: &Path) -> Result<(), String> {
    let lang = if c.wgsl { "wgsl" } else { "glsl" };
    write(&dir.join(c.file()), c.source())?;
    let text = c.module(&format!("{lang} \"{}\" entry \"main\"", c.file()));
    let mut module = cmdgraph_ir::text::parse(&text).map_err(|d| format!("{}: {d:?}", c.name()))?;
    cmdgraph_shader::resolve(&mut module, &text, dir).map_err(|e| {
        let name = format!("{}.cgir", c.name());
        e.iter().map(|e| e.render(&name, &text)).collect::<Vec<_>>().join("\n")
    })?;
    let defaults: Vec<&str> = cmdgraph_passes::DEFAULT_PIPELINE.to_vec();
    for (suffix, passes) in [("translated", defaults), ("plain", Vec::new())] {
        let (bundle, _) = harness::compile_parsed(&module, &passes)?;
        harness::save(dir, &format!("{}-{suffix}", c.name()), &bundle)?;
    }
    let words = direct_spirv(c, dir)?;
    let spv = format!("{}.spv", c.name());
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    harness::write_bytes(&dir.join(&spv), &bytes)?;
    let text = c.module(&format!("spirv \"{spv}\" entry \"main\" bindings"));
    let module = cmdgraph_ir::text::parse(&text).map_err(|d| format!("{}: {d:?}", c.name()))?;
    let ext = external::load(&module, dir)
        .map_err(|d| cmdgraph_ir::diag::render_all(&d, &format!("{}-direct.cgir", c.name()), &text))?;
    let compiler = WithExternal { inner: &Llvm, external: &ext };
    let (bundle, _) = compile_module(&module, &[], &Options { opt_level: 2 }, &compiler).map_err(|e| e.to_string())?;
    harness::save(dir, &format!("{}-direct", c.name()), &bundle)
}

/// Inputs in [-1, 1), full precision (SplitMix64).
fn inputs(n: u64, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            (z >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

/// Binds the inputs of `c` (outputs start at zero for the matmul, random for saxpy's `y`).
fn bind(c: Config, ex: &mut Executor) -> Result<(), String> {
    let n = c.size;
    let names: &[(&str, u64)] = if c.matmul { &[("a", 1), ("b", 2)] } else { &[("x", 1), ("y", 2)] };
    for &(name, seed) in names {
        let len = if c.matmul { n * n } else { n };
        ex.bind_as::<f32>(name, &inputs(len, seed)).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Checks one run's output against the host: every element for saxpy, 4096 sampled ones for
/// the matmul, each within the f32 error bound of its sum.
fn check(c: Config, what: &str, ex: &Executor) -> Result<(), String> {
    let n = c.size as usize;
    let bound = |terms: f64, abs_sum: f64| terms * f64::from(f32::EPSILON) * abs_sum + f64::from(f32::MIN_POSITIVE);
    if c.matmul {
        let (a, b) = (inputs(c.size * c.size, 1), inputs(c.size * c.size, 2));
        let got: Vec<f32> = ex.read_as("c").map_err(|e| e.to_string())?;
        for s in 0..4096u64 {
            let idx = (s.wrapping_mul(2_654_435_761) % (c.size * c.size)) as usize;
            let (row, col) = (idx / n, idx % n);
            let (mut want, mut abs) = (0.0f64, 0.0f64);
            for t in 0..n {
                let p = f64::from(a[row * n + t]) * f64::from(b[t * n + col]);
                want += p;
                abs += p.abs();
            }
            if (f64::from(got[idx]) - want).abs() > bound(n as f64, abs) {
                return Err(format!("{} {what}: c[{row}, {col}] = {}, host {want}", c.name(), got[idx]));
            }
        }
    } else {
        let (x, y) = (inputs(c.size, 1), inputs(c.size, 2));
        let got: Vec<f32> = ex.read_as("y").map_err(|e| e.to_string())?;
        for i in 0..n {
            let want = 1.5 * f64::from(x[i]) + f64::from(y[i]);
            let abs = (1.5 * f64::from(x[i])).abs() + f64::from(y[i]).abs();
            if (f64::from(got[i]) - want).abs() > bound(2.0, abs) {
                return Err(format!("{} {what}: y[{i}] = {}, host {want}", c.name(), got[i]));
            }
        }
    }
    Ok(())
}

fn gpu_ms(ex: &mut Executor, id: ExecId) -> Result<f64, String> {
    ex.run(id).map_err(|e| e.to_string())?;
    let p = ex.profile(id).map_err(|e| e.to_string())?;
    Ok(p.end_ns.saturating_sub(p.start_ns) as f64 / 1e6)
}

/// One row of the table.
struct Row {
    config: Config,
    translated: f64,
    plain: f64,
    direct: f64,
}

fn run_one(c: Config, dir: &Path, common: &Common) -> Result<(Row, String), String> {
    let mut exs = Vec::new();
    for suffix in ["translated", "plain", "direct"] {
        let bytes = harness::bundle_bytes(dir, &format!("{}-{suffix}", c.name()))?;
        let mut ex = harness::executor(&bytes, common)?;
        bind(c, &mut ex)?;
        let id = ex.finalize("g").map_err(|e| e.to_string())?;
        ex.run(id).map_err(|e| e.to_string())?;
        ex.wait(id).map_err(|e| e.to_string())?;
        check(c, suffix, &ex)?;
        exs.push((ex, id));
    }
    let device = exs[0].0.context().device_name().to_string();
    // The checks above read hundreds of MiB back and compute on the host while the GPU idles:
    // half a second of back-to-back runs brings its clock up again before anything is timed
    // (without it, the first configuration after a large check ran at a third of the speed).
    let warm = std::time::Instant::now();
    while warm.elapsed() < std::time::Duration::from_millis(500) {
        for (ex, id) in exs.iter_mut() {
            gpu_ms(ex, *id)?;
        }
    }
    let mut times = [Vec::new(), Vec::new(), Vec::new()];
    for _ in 0..common.runs.max(1) {
        for ((ex, id), t) in exs.iter_mut().zip(times.iter_mut()) {
            t.push(gpu_ms(ex, *id)?);
        }
    }
    let [translated, plain, direct] = times.map(|t| median(&t));
    eprintln!(
        "shader-run: {}: translated {translated:.3} ms, no passes {plain:.3} ms, direct {direct:.3} ms",
        c.name()
    );
    Ok((Row { config: c, translated, plain, direct }, device))
}

/// Runs the suite.
pub fn run(args: &Args) -> Result<(), String> {
    let phase = Phase::of(&args.common, "shader-run")?;
    let dir = phase.dir().to_path_buf();
    let cs = configs(args);
    if phase.prepares() {
        let mut manifest = String::new();
        for &c in &cs {
            prepare(c, &dir)?;
            let _ = writeln!(manifest, "{} {} {}", u8::from(c.matmul), u8::from(c.wgsl), c.size);
            eprintln!("shader-run: compiled {}", c.name());
        }
        write(&dir.join("shader-run.manifest"), &manifest)?;
    }
    if !phase.runs() {
        return Ok(());
    }
    let mut rows = Vec::new();
    let mut device = String::new();
    for line in read(&dir.join("shader-run.manifest"))?.lines().filter(|l| !l.trim().is_empty()) {
        let v: Vec<u64> = line.split_whitespace().filter_map(|x| x.parse().ok()).collect();
        let [m, w, size] = v[..] else { return Err(format!("shader-run.manifest: bad line `{line}`")) };
        let (row, d) = run_one(Config { matmul: m == 1, wgsl: w == 1, size }, &dir, &args.common)?;
        device = d;
        rows.push(row);
    }
    phase.cleanup();
    let body = table(&rows, &device, &args.common);
    harness::finish(&args.common, "shader-run", &body)
}

fn table(rows: &[Row], device: &str, common: &Common) -> String {
    let how = "GPU time of one graph run from the executor's profiling timestamps (first command to last), \
               median of `--runs` after half a second of back-to-back runs (the output checks before them leave the GPU idle), the three peers interleaved run by run in one process";
    let mut out = harness::header("Translated shaders against the same shaders compiled directly", device, common, how);
    out.push_str(
        "Input (bench/src/runtime/shader_run.rs, bench/data/shaders/): saxpy (`y = a·x + y`, 256 invocations per \
         group) and a matmul written one output per invocation with its tail guarded (16 × 16), each in WGSL and in \
         GLSL. *translated*: the shader as a `wgsl`/`glsl` kernel, translated by cmdgraph-shader and compiled by \
         cmdgraph with the default passes (the matmul is tiled by `tile-contractions`); *no passes*: the same \
         translation compiled with none (the translation and codegen alone); *direct*: the same shader compiled to \
         SPIR-V by naga's SPIR-V back end (WGSL; SPIR-V 1.3, no loop bounding) or glslang (GLSL; `-V --target-env \
         vulkan1.3`) and run as an external kernel with ordinary bindings. Every output checked against the host \
         (f64) within the f32 summation bound before timing. Speed ratio = direct time / translated time (target \
         ≥ 0.9).\n\n",
    );
    out.push_str("| workload | language | size | translated ms | no passes ms | direct ms | rate (translated) | speed: translated / direct | no passes / direct |\n");
    out.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for r in rows {
        let c = r.config;
        let rate = if c.matmul {
            format!("{:.1} GFLOP/s", c.work() / (r.translated * 1e-3) / 1e9)
        } else {
            format!("{:.1} GB/s", c.work() / (r.translated * 1e-3) / 1e9)
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.3} | {:.3} | {:.3} | {rate} | {:.2}x | {:.2}x |",
            if c.matmul { "matmul" } else { "saxpy" },
            if c.wgsl { "WGSL" } else { "GLSL" },
            if c.matmul { format!("{0}×{0}×{0}", c.size) } else { c.size.to_string() },
            r.translated,
            r.plain,
            r.direct,
            r.direct / r.translated,
            r.direct / r.plain,
        );
    }
    let missed: Vec<String> = rows.iter().filter(|r| r.direct / r.translated < 0.9).map(|r| r.config.name()).collect();
    let _ = writeln!(
        out,
        "\nTarget (translated at least 0.9x the speed of the direct compile): {}.",
        if missed.is_empty() {
            "met in every row".to_string()
        } else {
            format!("**missed** for {}", missed.join(", "))
        }
    );
    out
}
