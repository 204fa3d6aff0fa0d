//! `cmdgraph-bench codegen`: per-kernel code generation time of every example's variants.

use cmdgraph_codegen::{compile_kernel, module_variants, Options};
use std::path::Path;
use std::time::Instant;

/// One measured kernel variant.
pub struct Row {
    /// `file:@kernel`.
    pub name: String,
    /// Work-group size.
    pub workgroup: [u32; 3],
    /// Items per invocation (4 when vectorized).
    pub items: u32,
    /// SPIR-V words.
    pub words: usize,
    /// Best wall time per level -O0..-O3, seconds (LLVM and spirv-val included).
    pub secs: [f64; 4],
}

/// Compiles every variant of every example at -O0..-O3, `runs` times each.
pub fn measure(examples: &Path, runs: usize) -> Result<Vec<Row>, String> {
    let mut files: Vec<_> = std::fs::read_dir(examples)
        .map_err(|e| format!("{}: {e}", examples.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cgir"))
        .collect();
    files.sort();
    let mut rows = Vec::new();
    for file in files {
        let src = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let module = cmdgraph_ir::text::parse(&src).map_err(|_| format!("{}: parse error", file.display()))?;
        let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        for (k, v) in module_variants(&module).map_err(|e| e.to_string())? {
            let kname = module.kernels.try_get(k).map(|x| x.name.clone()).unwrap_or_default();
            let mut secs = [f64::INFINITY; 4];
            let (mut words, mut items) = (0, 1);
            for (opt, best) in secs.iter_mut().enumerate() {
                for _ in 0..runs.max(1) {
                    let start = Instant::now();
                    let c = compile_kernel(&module, k, &v, &Options { opt_level: opt as u8 })
                        .map_err(|e| format!("{stem}: {e}"))?;
                    *best = best.min(start.elapsed().as_secs_f64());
                    words = c.spirv.len();
                    items = c.items_per_invocation;
                }
            }
            rows.push(Row { name: format!("{stem}:@{kname}"), workgroup: v.workgroup_size, items, words, secs });
        }
    }
    Ok(rows)
}

/// The Markdown table.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| kernel | work-group | items/inv. | SPIR-V words | -O0 ms | -O1 ms | -O2 ms | -O3 ms |\n\
         |---|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        let [x, y, z] = r.workgroup;
        out.push_str(&format!(
            "| {} | {x}x{y}x{z} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} |\n",
            r.name,
            r.items,
            r.words,
            r.secs[0] * 1e3,
            r.secs[1] * 1e3,
            r.secs[2] * 1e3,
            r.secs[3] * 1e3
        ));
    }
    out
}
