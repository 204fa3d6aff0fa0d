//! Compile time: every example through `codegen::bundle::compile_module` with the real
//! kernel compiler, the best of several runs, split into passes, packaging (schedule,
//! memory plan, launch tables) and code generation per kernel variant.

use cmdgraph_codegen::bundle::{compile_module, CompileReport, Llvm};
use cmdgraph_codegen::external::{self, WithExternal};
use cmdgraph_codegen::Options;
use cmdgraph_passes::{lookup, PassInfo, DEFAULT_PIPELINE};
use std::fmt::Write as _;
use std::path::Path;

/// One example's best run.
pub struct Row {
    /// File name.
    pub example: String,
    /// The report of the fastest run (by total).
    pub report: CompileReport,
    /// Bundle size in bytes (the binary container, format 2).
    pub bytes: usize,
    /// The content hash.
    pub hash: String,
}

/// Compiles every `.cgir` in `dir`, `runs` times each; the fastest run counts.
pub fn rows(dir: &Path, runs: usize, opt_level: u8) -> Result<Vec<Row>, String> {
    let passes: Vec<&'static PassInfo> = DEFAULT_PIPELINE.iter().filter_map(|n| lookup(n)).collect();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot list {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "cgir"))
        .collect();
    files.sort();
    let mut rows = Vec::new();
    for path in files {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{name}: {e}"))?;
        let module = cmdgraph_ir::text::parse(&text).map_err(|_| format!("{name}: does not parse"))?;
        let mut best: Option<Row> = None;
        for _ in 0..runs.max(1) {
            // External SPIR-V kernels, as `cmdgraph compile` loads them (relative to the file).
            let external = external::load(&module, dir)
                .map_err(|d| format!("{name}: {}", d.first().map_or(String::new(), |d| d.message.clone())))?;
            let compiler = WithExternal { inner: &Llvm, external: &external };
            let (bundle, report) = compile_module(&module, &passes, &Options { opt_level }, &compiler)
                .map_err(|e| format!("{name}: {e}"))?;
            let ron = bundle.to_bytes().map_err(|e| format!("{name}: {e}"))?;
            if best.as_ref().is_none_or(|b| report.total < b.report.total) {
                best = Some(Row { example: name.clone(), report, bytes: ron.len(), hash: bundle.content_hash });
            }
        }
        if let Some(row) = best {
            eprintln!("compile: {name}: {:.1} ms", row.report.total.as_secs_f64() * 1e3);
            rows.push(row);
        }
    }
    Ok(rows)
}

fn ms(d: std::time::Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

/// The per-example table, then the per-kernel table.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| example | variants | passes ms | packaging ms | codegen ms | total ms | bundle bytes | hash |\n\
         |---|---:|---:|---:|---:|---:|---:|---|\n",
    );
    for r in rows {
        let codegen: std::time::Duration = r.report.kernels.iter().map(|k| k.2).sum();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | `{}` |",
            r.example,
            r.report.kernels.len(),
            ms(r.report.passes.total),
            ms(r.report.packaging),
            ms(codegen),
            ms(r.report.total),
            r.bytes,
            r.hash.get(..12).unwrap_or(&r.hash)
        );
    }
    out.push_str("\n| example | kernel | work-group | codegen ms |\n|---|---|---|---:|\n");
    for r in rows {
        for (kernel, [x, y, z], t) in &r.report.kernels {
            let _ = writeln!(out, "| {} | @{kernel} | {x}x{y}x{z} | {} |", r.example, ms(*t));
        }
    }
    out
}
