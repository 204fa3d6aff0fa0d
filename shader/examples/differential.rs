//! The differential check of translated shaders (issue 30, "a differential corpus from
//! outside the project"): `cargo run -p cmdgraph-shader --example differential -- CMDGRAPH DIR...`
//! with CMDGRAPH the `cmdgraph` binary (`target/release/cmdgraph`) and each DIR a folder of
//! `*.wgsl` and `*.comp` compute shaders (not recursive; naga's corpus is `naga/tests/in` and
//! `naga/tests/in/glsl`). The shaders are other projects'; they are not in this repository.
//!
//! Every compute entry point that translates (cmdgraph-shader) runs three ways on the same
//! inputs, through the CLI as a user would: the translated kernel on the reference
//! interpreter; the translated kernel compiled by cmdgraph and run on the default Vulkan
//! device with validation on; the same shader compiled straight to SPIR-V (WGSL by naga's
//! SPIR-V back end, GLSL by `glslangValidator -V --target-env vulkan1.3`) and run as an
//! external kernel with ordinary bindings (`spirv ... bindings`), validation on. Both Vulkan
//! results are compared with the interpreter's by `cmdgraph interp --compare` (docs/cli.md:
//! the same bytes, `fma` rounded twice, or a math function's documented tolerance).
//!
//! Inputs: every buffer 8192 elements of full-precision random floats in [-1, 1) or integers
//! in [0, 64) (so that values used as indices mostly stay in range), scalars 3 (integers),
//! 0.75 (floats) or true; four work-groups in x. A run the interpreter stops (an index out of
//! range with these inputs, E0401; a loop that does not end, E0407) is reported as such, not
//! as a mismatch. Exit 1 when any
//! Vulkan result matches no rule or a tool fails.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use cmdgraph_shader::{translate, Lang};

const ELEMENTS: usize = 8192;

/// Entry points whose result depends on timing by design, run but not compared: wgpu's
/// `hello_synchronization` example shows with `hasty_main` what a missing `workgroupBarrier()`
/// does (each group's first invocation reads a work-group counter while the others may not
/// have added to it yet). The interpreter runs a work-group in lockstep and reads 16.
const RACY_BY_DESIGN: &[&str] = &["hello_synchronization_shaders.wgsl:hasty_main"];
const GROUPS: u32 = 4;
/// Kernel op executions (per work-item, in all) an interpreter run may take.
const FUEL: &str = "500000000";

/// What happened to one entry point.
enum Outcome {
    /// Both Vulkan results match the interpreter.
    Match(String),
    /// Not translated (the refusal, located).
    Refused(String),
    /// The interpreter stopped the run (an out-of-range index with these inputs, or a subgroup
    /// read the language leaves undefined).
    Stopped(String),
    /// The direct compile failed (naga's back end or glslang).
    NoDirect(String),
    /// A result matches no rule, or a tool failed: a failure.
    Failed(String),
    /// Run, but its result is timing-dependent by design ([`RACY_BY_DESIGN`]).
    Racy(String),
}

fn shaders(dirs: &[PathBuf]) -> Vec<(PathBuf, Lang, String)> {
    let mut out = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            eprintln!("{}: cannot read", dir.display());
            continue;
        };
        let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        files.sort();
        for path in files {
            let lang = match path.extension().and_then(|e| e.to_str()) {
                Some("wgsl") => Lang::Wgsl,
                Some("comp") => Lang::Glsl,
                _ => continue,
            };
            if let Ok(src) = std::fs::read_to_string(&path) {
                out.push((path, lang, src));
            }
        }
    }
    out
}

fn naga_module(lang: Lang, src: &str) -> Result<naga::Module, String> {
    match lang {
        Lang::Wgsl => naga::front::wgsl::parse_str(src).map_err(|e| e.message().to_string()),
        Lang::Glsl => {
            let options = naga::front::glsl::Options::from(naga::ShaderStage::Compute);
            naga::front::glsl::Frontend::default().parse(&options, src).map_err(|e| e.to_string())
        }
    }
}

/// The shader compiled straight to SPIR-V, written to `out`.
fn direct(lang: Lang, src: &str, entry: &str, work: &Path, out: &Path) -> Result<(), String> {
    match lang {
        Lang::Wgsl => {
            let module = naga_module(lang, src)?;
            let info =
                naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
                    .validate(&module)
                    .map_err(|e| format!("naga validation: {e}"))?;
            let options = naga::back::spv::Options {
                lang_version: (1, 3),
                flags: naga::back::spv::WriterFlags::empty(),
                force_loop_bounding: false,
                ..Default::default()
            };
            let pipeline = naga::back::spv::PipelineOptions {
                shader_stage: naga::ShaderStage::Compute,
                entry_point: entry.into(),
            };
            let words = naga::back::spv::write_vec(&module, &info, &options, Some(&pipeline))
                .map_err(|e| format!("naga's SPIR-V back end: {e}"))?;
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            std::fs::write(out, bytes).map_err(|e| e.to_string())
        }
        Lang::Glsl => {
            let file = work.join("shader.comp");
            std::fs::write(&file, src).map_err(|e| e.to_string())?;
            let run = Command::new("glslangValidator")
                .args(["-V", "--target-env", "vulkan1.3", "-o"])
                .arg(out)
                .arg(&file)
                .output()
                .map_err(|e| format!("glslangValidator: {e}"))?;
            if run.status.success() {
                Ok(())
            } else {
                Err(format!("glslang: {}", String::from_utf8_lossy(&run.stdout).lines().nth(1).unwrap_or("failed")))
            }
        }
    }
}

/// Deterministic bytes for `count` elements of `elem` (SplitMix64 from `seed`).
fn input(elem: &str, count: usize, seed: u64) -> Vec<u8> {
    let mut s = seed;
    let mut next = || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let lanes: usize = elem.strip_prefix("vec").and_then(|v| v[..1].parse().ok()).unwrap_or(1);
    let scalar = elem.split_once('<').map_or(elem, |(_, r)| r.trim_end_matches('>'));
    let mut out = Vec::new();
    for _ in 0..count * if lanes == 3 { 4 } else { lanes } {
        match scalar {
            "f32" => out.extend(((next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0).to_le_bytes()),
            "i32" | "u32" => out.extend(((next() % 64) as u32).to_le_bytes()),
            "i64" | "u64" => out.extend((next() % 64).to_le_bytes()),
            "bool" => out.push((next() & 1) as u8),
            _ => out.extend((next() as u32).to_le_bytes()),
        }
    }
    out
}

/// Whether the shader has matrix types (whose products a driver may contract).
fn uses_matrices(lang: Lang, src: &str) -> bool {
    naga_module(lang, src).is_ok_and(|m| m.types.iter().any(|(_, t)| matches!(t.inner, naga::TypeInner::Matrix { .. })))
}

/// Compares the direct run's buffers with the interpreter's: `f32` elements within
/// |a - b| <= 2^-12 · max(1, |b|) (the math tolerance of docs/ir.md), others exactly.
fn within_contraction(
    bin: &Path,
    work: &Path,
    inputs: &[String],
    buffers: &[String],
    elems: &[String],
) -> Result<String, String> {
    let outputs: Vec<String> =
        buffers.iter().flat_map(|b| ["--output".to_string(), format!("{b}=interp-{b}.out")]).collect();
    let args = [vec!["interp".to_string(), "translated.cgir".to_string()], inputs.to_vec(), outputs].concat();
    cmdgraph(bin, work, &args)?;
    let (mut differ, mut worst) = (0usize, 0f64);
    for (b, elem) in buffers.iter().zip(elems) {
        let read = |f: String| std::fs::read(work.join(f)).map_err(|e| e.to_string());
        let (got, want) = (read(format!("direct-{b}.out"))?, read(format!("interp-{b}.out"))?);
        if got.len() != want.len() {
            return Err(format!("{b}: {} bytes, the interpreter {}", got.len(), want.len()));
        }
        if !elem.ends_with("f32") && !elem.ends_with("f32>") {
            if got != want {
                return Err(format!("{b}: {elem} elements differ"));
            }
            continue;
        }
        for (g, w) in got.chunks_exact(4).zip(want.chunks_exact(4)) {
            let g = f64::from(f32::from_le_bytes([g[0], g[1], g[2], g[3]]));
            let w = f64::from(f32::from_le_bytes([w[0], w[1], w[2], w[3]]));
            if g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()) {
                continue;
            }
            let rel = (g - w).abs() / w.abs().max(1.0);
            if rel.is_nan() || rel > 1.0 / 4096.0 {
                return Err(format!("{b}: {g} against the interpreter's {w}, past the tolerance"));
            }
            differ += 1;
            worst = worst.max(rel);
        }
    }
    Ok(format!("{differ} scalar(s) differ, largest relative difference {worst:.3e}"))
}

fn cmdgraph(bin: &Path, work: &Path, args: &[String]) -> Result<String, String> {
    let out = Command::new(bin).current_dir(work).args(args).output().map_err(|e| format!("{}: {e}", bin.display()))?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if out.status.success() {
        Ok(text)
    } else {
        Err(text)
    }
}

fn one(bin: &Path, lang: Lang, src: &str, entry: &str, work: &Path) -> Outcome {
    let t = match translate(lang, src, entry, "k") {
        Ok(t) => t,
        Err(e) => return Outcome::Refused(e.message),
    };
    let header = t.text.lines().find(|l| l.starts_with("kernel @k(")).unwrap_or_default();
    let params = header.split_once('(').and_then(|(_, rest)| rest.rsplit_once(')')).map_or("", |p| p.0);
    let mut memories = String::new();
    let (mut args, mut inputs, mut buffers, mut elems) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, p) in params.split(", %").filter(|p| !p.is_empty()).enumerate() {
        let ty = p.split_once(": ").map_or("", |x| x.1);
        if let Some(inner) = ty.strip_prefix("buf<") {
            let elem = inner.rsplit_once(", ").map_or(inner, |x| x.0);
            let _ = writeln!(memories, "usm @m{i} : {elem}[{ELEMENTS}]");
            let file = format!("m{i}.in");
            if std::fs::write(work.join(&file), input(elem, ELEMENTS, i as u64 + 1)).is_err() {
                return Outcome::Failed("cannot write an input".into());
            }
            inputs.extend(["--input".to_string(), format!("m{i}={file}")]);
            args.push(format!("@m{i}"));
            buffers.push(format!("m{i}"));
            elems.push(elem.to_string());
        } else {
            args.push(match ty {
                "bool" => "true".to_string(),
                "f32" => "0.75".to_string(),
                // A vector (a uniform `vec4<f32>` member): raw bytes of random lanes.
                _ if ty.starts_with("vec") => {
                    let bytes = input(ty, 1, i as u64 + 101);
                    format!("x\"{}\"", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>())
                }
                _ => format!("3 : {ty}"),
            });
        }
    }
    let [x, y, z] = t.workgroup_size;
    let graph = format!(
        "\n{memories}\ngraph @g {{\n  %n = kernel @k nd_range(global({}, {y}, {z}), local({x}, {y}, {z})) args({})\n}}\n",
        x * GROUPS,
        args.join(", ")
    );
    let translated = format!("{}\n{graph}", t.text);
    let direct_module = format!("kernel @k({params}) spirv \"direct.spv\" entry \"{entry}\" bindings\n{graph}");
    let written = std::fs::write(work.join("translated.cgir"), &translated)
        .and_then(|()| std::fs::write(work.join("direct.cgir"), &direct_module));
    if let Err(e) = written {
        return Outcome::Failed(e.to_string());
    }
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    // The interpreter first: a run it stops is not a comparison.
    if let Err(e) = cmdgraph(bin, work, &[s(&["interp", "translated.cgir", "--fuel", FUEL]), inputs.clone()].concat()) {
        let line = e.lines().find(|l| l.contains("error")).unwrap_or("stopped").to_string();
        // E0401: an index out of range with these inputs; E0408: a subgroup read the shading
        // language leaves undefined (from a lane this launch does not have); E0407: a loop
        // that does not end with these inputs (Collatz from 0; llvmpipe would cut it short
        // after 65535 iterations, docs/executor.md, and a GPU would hang).
        return if e.contains("E0401") || e.contains("E0408") || e.contains("E0407") {
            Outcome::Stopped(line)
        } else {
            Outcome::Failed(format!("interp: {e}"))
        };
    }
    let direct_made = direct(lang, src, entry, work, &work.join("direct.spv"));
    let mut ways = vec![("translated", "translated.cgir")];
    if direct_made.is_ok() {
        ways.push(("direct", "direct.cgir"));
    }
    let mut report = Vec::new();
    for (way, file) in ways {
        let bundle = format!("{way}.cgb");
        if let Err(e) = cmdgraph(bin, work, &s(&["compile", file, "-o", &bundle])) {
            return Outcome::Failed(format!("{way}: compile: {e}"));
        }
        let outputs: Vec<String> =
            buffers.iter().flat_map(|b| ["--output".to_string(), format!("{b}={way}-{b}.out")]).collect();
        if let Err(e) = cmdgraph(bin, work, &[s(&["run", &bundle, "--validation"]), inputs.clone(), outputs].concat()) {
            return Outcome::Failed(format!("{way}: run: {e}"));
        }
        let compares: Vec<String> =
            buffers.iter().flat_map(|b| ["--compare".to_string(), format!("{b}={way}-{b}.out")]).collect();
        match cmdgraph(bin, work, &[s(&["interp", "translated.cgir"]), inputs.clone(), compares].concat()) {
            Ok(text) => {
                let rules: Vec<&str> = text.lines().filter(|l| l.starts_with("compare @")).collect();
                report.push(format!("{way}: {}", rules.len()));
                if rules.iter().any(|r| !r.contains("match: exact")) {
                    report.push(
                        rules.iter().filter(|r| !r.contains("match: exact")).cloned().collect::<Vec<_>>().join("; "),
                    );
                }
            }
            // SPIR-V without `NoContraction` lets the driver fuse the products and sums of a
            // matrix product (llvmpipe does for some), which the translation spells unfused:
            // a shader with matrices is compared within the math tolerance on its direct way.
            Err(e) if way == "direct" && uses_matrices(lang, src) => {
                match within_contraction(bin, work, &inputs, &buffers, &elems) {
                    Ok(text) => report.push(format!("direct: {} within contraction tolerance ({text})", buffers.len())),
                    Err(why) => return Outcome::Failed(format!("{way} against the interpreter: {e}; {why}")),
                }
            }
            Err(e) => return Outcome::Failed(format!("{way} against the interpreter: {e}")),
        }
    }
    match direct_made {
        Ok(()) => Outcome::Match(report.join(", ")),
        Err(e) => Outcome::NoDirect(format!("{} ({e})", report.join(", "))),
    }
}

fn main() {
    let args: Vec<PathBuf> = std::env::args().skip(1).map(PathBuf::from).collect();
    let [bin, dirs @ ..] = &args[..] else {
        eprintln!("usage: differential CMDGRAPH DIR...");
        std::process::exit(2);
    };
    // The commands run in a scratch directory: the binary by its absolute path.
    let bin = &std::fs::canonicalize(bin).unwrap_or_else(|e| {
        eprintln!("{}: {e}", bin.display());
        std::process::exit(2)
    });
    let work = std::env::temp_dir().join(format!("cmdgraph-differential-{}", std::process::id()));
    let (mut matched, mut refused, mut stopped, mut no_direct, mut failed, mut racy) = (0, 0, 0, 0, 0, 0);
    for (path, lang, src) in shaders(dirs) {
        let name = path.display().to_string();
        let entries = match naga_module(lang, &src) {
            Ok(m) => m
                .entry_points
                .iter()
                .filter(|e| e.stage == naga::ShaderStage::Compute)
                .map(|e| e.name.clone())
                .collect::<Vec<_>>(),
            Err(why) => {
                println!("{name}: naga does not parse it: {}", why.lines().next().unwrap_or_default());
                continue;
            }
        };
        for entry in entries {
            let _ = std::fs::remove_dir_all(&work);
            if std::fs::create_dir_all(&work).is_err() {
                eprintln!("cannot create {}", work.display());
                std::process::exit(1);
            }
            let mut outcome = one(bin, lang, &src, &entry, &work);
            if RACY_BY_DESIGN
                .iter()
                .any(|r| name.ends_with(r.split(':').next().unwrap_or("?")) && r.ends_with(&format!(":{entry}")))
            {
                if let Outcome::Failed(t) | Outcome::Match(t) = &outcome {
                    outcome = Outcome::Racy(t.clone());
                }
            }
            let (tag, text) = match &outcome {
                Outcome::Match(t) => ("match", t),
                Outcome::Refused(t) => ("refused", t),
                Outcome::Stopped(t) => ("stopped by the interpreter", t),
                Outcome::NoDirect(t) => ("match (no direct compile)", t),
                Outcome::Failed(t) => ("FAILED", t),
                Outcome::Racy(t) => ("run, not compared (timing-dependent by design)", t),
            };
            match outcome {
                Outcome::Match(_) => matched += 1,
                Outcome::Refused(_) => refused += 1,
                Outcome::Stopped(_) => stopped += 1,
                Outcome::NoDirect(_) => no_direct += 1,
                Outcome::Failed(_) => failed += 1,
                Outcome::Racy(_) => racy += 1,
            }
            println!("{name}:{entry}: {tag}: {}", text.lines().next().unwrap_or_default());
        }
    }
    if std::env::var_os("DIFFERENTIAL_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&work);
    }
    println!(
        "differential: {matched} translated and matching both ways, {no_direct} matching the interpreter without a \
         direct compile, {stopped} stopped by the interpreter with these inputs, {racy} timing-dependent by design, \
         {refused} not translated, {failed} failed"
    );
    if failed > 0 {
        std::process::exit(1);
    }
}
