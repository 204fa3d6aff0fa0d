//! Differential coverage over naga's own test shaders: `cargo run -p cmdgraph-shader
//! --example corpus -- DIR`, with DIR the `naga/tests/in` folder of a wgpu checkout at commit
//! 64a61ee5c69569bbb3db03563997e88a229eba17 (2024-10-23; docs/kernels.md, "The naga
//! corpus"). The shaders are not in this repository (they are wgpu's); their outcomes are.
//!
//! Every compute entry point of every `*.wgsl` in DIR and `*.comp` in DIR/glsl (found by
//! parsing with naga itself) is translated. A translation must parse and verify as IR and run
//! on the interpreter; a refusal must be a located `ShaderError` (a non-empty span inside the
//! source), never a caught panic or an internal error. Each outcome is checked against
//! [`EXPECTED`], so a change (a newly translated shader, a new refusal) fails until the table
//! is updated; the counts are printed, and with `CORPUS_TABLE=1` the table of what happens
//! now. Exit status 1 on any failure.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use cmdgraph_interp::Interpreter;
use cmdgraph_shader::{translate, Lang, ShaderError, Translated};

/// What happens to one compute entry point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    /// Translated into a kernel that parses, verifies and runs.
    Translated,
    /// Refused, and uses something outside the scope (textures, samplers, ray
    /// queries, f16/f64, subgroup operations, pipeline overrides, ...).
    OutOfScope(&'static str),
    /// Refused although it uses only storage / uniform buffers, work-group memory and push
    /// constants: a gap in the translator, or something the kernel language cannot express.
    InScopeRefused(&'static str),
}

use Outcome::{InScopeRefused as InScope, OutOfScope as Out, Translated as Ok_};

/// `file:entry` -> the expected outcome, for every compute entry point of the corpus.
const EXPECTED: &[(&str, Outcome)] = &[
    ("246-collatz.comp:main", Ok_),
    ("access.wgsl:assign_through_ptr", Ok_),
    ("access.wgsl:assign_to_ptr_components", Ok_),
    ("array-in-ctor.wgsl:cs_main", Ok_),
    ("atomicCompareExchange-int64.wgsl:test_atomic_compare_exchange_i64", Ok_),
    ("atomicCompareExchange-int64.wgsl:test_atomic_compare_exchange_u64", Ok_),
    ("atomicCompareExchange.wgsl:test_atomic_compare_exchange_i32", Ok_),
    ("atomicCompareExchange.wgsl:test_atomic_compare_exchange_u32", Ok_),
    (
        "atomicOps-int64-min-max.wgsl:cs_main",
        InScope("a storage struct of u64 atomics (flat buffers take 32-bit scalars)"),
    ),
    ("atomicOps-int64.wgsl:cs_main", InScope("a storage struct of u64 and i64 atomics")),
    ("atomicOps.wgsl:cs_main", InScope("a storage struct of u32 and i32 atomics")),
    ("bitcast.wgsl:main", Ok_),
    ("bits.wgsl:main", InScope("pack/unpack and bit-field functions")),
    ("boids.wgsl:main", Ok_),
    ("break-if.wgsl:main", Ok_),
    ("collatz.wgsl:main", Ok_),
    ("const-exprs.wgsl:main", Ok_),
    ("constructors.wgsl:main", Ok_),
    ("control-flow.wgsl:main", Ok_),
    ("cross.wgsl:main", Ok_),
    ("debug-symbol-terrain.wgsl:gen_terrain_compute", Ok_),
    ("empty.wgsl:main", Ok_),
    ("f64.wgsl:main", Out("f64")),
    ("functions.wgsl:main", Ok_),
    ("globals.wgsl:main", InScope("uniform arrays of matrices, a computed index into a vector in a storage struct")),
    ("image.wgsl:main", Out("textures")),
    ("image.wgsl:depth_load", Out("textures")),
    ("int64.wgsl:main", InScope("storage and uniform structs mixing i64/u64/i32/u32 scalar and vector members")),
    ("interface.wgsl:compute", Ok_),
    ("local-var-init-in-loop.comp:main", Ok_),
    ("operators.wgsl:main", Ok_),
    ("overrides-atomicCompareExchangeWeak.wgsl:f", Out("pipeline overrides")),
    (
        "overrides-ray-query.wgsl:main",
        Out("ray queries and pipeline overrides (naga 28 also wants `enable wgpu_ray_query`)"),
    ),
    ("overrides.wgsl:main", Out("pipeline overrides")),
    ("phony_assignment.wgsl:main", Ok_),
    ("ray-query.wgsl:main", Out("ray queries (naga 28 also wants `enable wgpu_ray_query`)")),
    ("separate-entry-points.wgsl:compute", Ok_),
    ("struct-layout.wgsl:no_padding_comp", Ok_),
    ("struct-layout.wgsl:needs_padding_comp", Ok_),
    ("subgroup-operations.wgsl:main", Ok_),
    ("workgroup-uniform-load.wgsl:test_workgroupUniformLoad", Ok_),
    ("workgroup-var-init.wgsl:main", Ok_),
];

/// The skipped file: a 1.5 MB debug-info stress test with no construct the others lack.
const SKIPPED: &[&str] = &["debug-symbol-large-source.wgsl"];

/// The shaders of the corpus, sorted by name, with their language.
fn shaders(dir: &Path) -> Vec<(String, Lang, String)> {
    let mut out = Vec::new();
    for folder in [dir.to_path_buf(), dir.join("glsl")] {
        let Ok(entries) = std::fs::read_dir(&folder) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
            let lang = match path.extension().and_then(|e| e.to_str()) {
                Some("wgsl") => Lang::Wgsl,
                Some("comp") => Lang::Glsl,
                _ => continue,
            };
            if SKIPPED.contains(&name.as_str()) {
                continue;
            }
            match std::fs::read_to_string(&path) {
                Ok(src) => out.push((name, lang, src)),
                Err(e) => println!("{name}: cannot read: {e}"),
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The compute entry points of a shader, by naga's own parse; the parse error if naga 28
/// does not parse it (the corpus is from an older naga, whose WGSL differed a little).
fn compute_entries(lang: Lang, src: &str) -> Result<Vec<String>, String> {
    let module = match lang {
        Lang::Wgsl => naga::front::wgsl::parse_str(src).map_err(|e| e.message().to_string())?,
        Lang::Glsl => {
            let options = naga::front::glsl::Options::from(naga::ShaderStage::Compute);
            naga::front::glsl::Frontend::default().parse(&options, src).map_err(|e| e.to_string())?
        }
    };
    Ok(module
        .entry_points
        .iter()
        .filter(|ep| ep.stage == naga::ShaderStage::Compute)
        .map(|ep| ep.name.clone())
        .collect())
}

/// The names of the functions marked `@compute` in WGSL text (for a shader naga cannot parse).
fn compute_entries_by_text(src: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in src.match_indices("@compute") {
        let rest = &src[at..];
        if let Some(f) = rest.find("fn ") {
            let name: String =
                rest[f + 3..].trim_start().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            out.push(name);
        }
    }
    out
}

/// Checks a refusal is located and not a bug; returns what is wrong otherwise.
fn check_error(src: &str, e: &ShaderError) -> Option<String> {
    if e.message.contains("panicked") {
        return Some(format!("a caught panic: {e}"));
    }
    if e.message.starts_with("internal") {
        return Some(format!("an internal error: {e}"));
    }
    if e.span.is_empty() || e.span.end > src.len() || src.get(e.span.clone()).is_none() {
        return Some(format!("span {:?} is empty or outside the source ({} bytes): {e}", e.span, src.len()));
    }
    None
}

/// Kernel op executions (per work-item) a corpus run may take.
const FUEL: u64 = 20_000_000;

/// Parses, verifies and runs a translated kernel once on one work-group, every buffer 1024
/// zero elements and every scalar zero.
fn check_translated(t: &Translated) -> std::result::Result<(), String> {
    let header = t.text.lines().next().unwrap_or_default();
    let params = header.split_once('(').and_then(|(_, rest)| rest.rsplit_once(')')).map_or("", |p| p.0);
    let mut text = t.text.clone();
    text.push('\n');
    let mut args = Vec::new();
    for (i, p) in params.split(", %").filter(|p| !p.is_empty()).enumerate() {
        let ty = p.split_once(": ").map_or("", |x| x.1);
        if let Some(inner) = ty.strip_prefix("buf<") {
            let elem = inner.rsplit_once(", ").map_or(inner, |x| x.0);
            let _ = writeln!(text, "usm @m{i} : {elem}[1024]");
            args.push(format!("@m{i}"));
        } else {
            let zero = match ty {
                "bool" => "false",
                "f32" => "0.0",
                _ => "0",
            };
            // A vector (a uniform `vec3<f32>` member): zero bytes, 3-vectors as four lanes.
            let lanes: usize = ty.strip_prefix("vec").and_then(|v| v[..1].parse().ok()).unwrap_or(0);
            let width = if ty.contains("64") { 8 } else { 4 };
            args.push(if lanes > 0 {
                format!("x\"{}\"", "00".repeat(lanes.max(if lanes == 3 { 4 } else { lanes }) * width))
            } else {
                format!("{zero} : {ty}")
            });
        }
    }
    let [x, y, z] = t.workgroup_size;
    let _ = writeln!(
        text,
        "\ngraph @g {{\n  %n = kernel @k nd_range(global({x}, {y}, {z}), local({x}, {y}, {z})) args({})\n}}",
        args.join(", ")
    );
    let module = cmdgraph_ir::text::parse(&text).map_err(|e| format!("parse: {e:?}\n{text}"))?;
    cmdgraph_ir::verify::verify(&module).map_err(|e| format!("verify: {e:?}\n{text}"))?;
    let mut interp = Interpreter::new(&module).map_err(|e| format!("interpreter: {e}"))?;
    let exec = interp.finalize("g").map_err(|e| format!("finalize: {e}"))?;
    // A loop may never end on zero inputs (Collatz from 0): fuel ends it, as it would hang a
    // device.
    let opts = cmdgraph_interp::RunOptions { fuel: Some(FUEL), ..Default::default() };
    interp.run_with(exec, &opts).map_err(|e| format!("run: {e}\n{text}"))?;
    Ok(())
}

fn kind(o: &Outcome) -> &'static str {
    match o {
        Outcome::Translated => "Translated",
        Outcome::OutOfScope(_) => "OutOfScope",
        Outcome::InScopeRefused(_) => "InScopeRefused",
    }
}

fn main() {
    let Some(dir) = std::env::args().nth(1).map(PathBuf::from) else {
        eprintln!("usage: corpus DIR   (DIR: naga/tests/in of a wgpu checkout at 64a61ee5)");
        std::process::exit(2);
    };
    let mut failures = Vec::new();
    let mut seen = Vec::new();
    let mut unparsed = Vec::new();
    let mut table = String::new();
    let (mut translated, mut in_scope, mut out_of_scope) = (0, 0, 0);
    for (name, lang, src) in shaders(&dir) {
        let entries = match compute_entries(lang, &src) {
            Ok(e) => e,
            Err(why) => {
                let by_text = compute_entries_by_text(&src);
                println!("{name}: naga 28 does not parse it ({why}); compute entry points by text: {by_text:?}");
                unparsed.push(name.clone());
                by_text
            }
        };
        for entry in entries {
            let key = format!("{name}:{entry}");
            let expected = EXPECTED.iter().find(|(k, _)| *k == key).map(|(_, o)| *o);
            let got = translate(lang, &src, &entry, "k");
            let shown = match &got {
                Ok(_) => "translated".to_string(),
                Err(e) => format!("{e}"),
            };
            match &got {
                Ok(t) => {
                    match check_translated(t) {
                        // The run is undefined by the shading language's own rules (a subgroup
                        // read from a lane the launch does not have): the interpreter says so.
                        Err(why) if why.contains("E0408") || why.contains("would be undefined") => {
                            println!(
                                "{key}: translated; its run on one work-group is undefined: {}",
                                why.lines().next().unwrap_or("")
                            );
                        }
                        // Zero inputs are not every shader's domain: a loop that never ends
                        // on them (Collatz from 0) is what the shader says, not a bug.
                        Err(why) if why.contains("out of fuel") => {
                            println!("{key}: translated; its run on zero inputs does not end (out of fuel)");
                        }
                        // The check's buffers hold 1024 elements; a shader whose data set is
                        // larger (boids' 1500 particles of 4 floats) reads past them.
                        Err(why) if why.contains("out of bounds of @m") => {
                            println!(
                                "{key}: translated; its run reads past the check's 1024-element buffers: {}",
                                why.lines().next().unwrap_or("")
                            );
                        }
                        Err(why) => failures.push(format!("{key}: translated, but {why}")),
                        Ok(()) => {}
                    }
                    let _ = writeln!(table, "    (\"{key}\", Ok_),");
                }
                Err(e) => {
                    if let Some(why) = check_error(&src, e) {
                        failures.push(format!("{key}: {why}"));
                    }
                    let _ = writeln!(table, "    (\"{key}\", InScope(\"{}\")),", e.message.replace('"', "'"));
                }
            }
            match expected {
                None => failures.push(format!("{key}: not in EXPECTED ({shown})")),
                Some(o) => {
                    let same = matches!((&got, o), (Ok(_), Outcome::Translated) | (Err(_), Outcome::OutOfScope(_)))
                        || matches!((&got, o), (Err(_), Outcome::InScopeRefused(_)));
                    if !same {
                        failures.push(format!("{key}: expected {}, got {shown}", kind(&o)));
                    }
                    match o {
                        Outcome::Translated => translated += 1,
                        Outcome::InScopeRefused(_) => in_scope += 1,
                        Outcome::OutOfScope(_) => out_of_scope += 1,
                    }
                }
            }
            println!("{key}: {shown}");
            seen.push(key);
        }
    }
    for (k, _) in EXPECTED {
        if !seen.iter().any(|s| s == k) {
            failures.push(format!("{k}: in EXPECTED but not a compute entry point of the corpus"));
        }
    }
    if std::env::var_os("CORPUS_TABLE").is_some() {
        println!("{table}");
    }
    println!(
        "naga corpus: {} compute entry points: {translated} translated, {in_scope} in-scope refused, \
         {out_of_scope} out of scope; naga 28 does not parse {} file(s): {}",
        seen.len(),
        unparsed.len(),
        unparsed.join(", ")
    );
    if !failures.is_empty() {
        eprintln!("{} failures:\n{}", failures.len(), failures.join("\n"));
        std::process::exit(1);
    }
}
