//! What every runtime suite shares: the `--prepare DIR` / `--from DIR` split (compile where
//! LLVM is, run where the device is), bundles on disk, executors on the chosen device, the
//! table header (command, device, driver, date, timing method), statistics, the PyTorch
//! peer's JSON and the docs/performance.md section.

use clap::Args;
use cmdgraph_codegen::bundle::{compile_module, CompileReport, Llvm};
use cmdgraph_codegen::Options;
use cmdgraph_executor::{ContextOptions, DeviceChoice, Executor};
use cmdgraph_ir::bundle::Bundle;
use std::path::{Path, PathBuf};

/// Options every runtime suite takes.
#[derive(Args, Clone, Debug, Default)]
pub struct Common {
    /// Generate and compile the graphs into DIR and stop (needs LLVM; runs nothing).
    #[arg(long, value_name = "DIR", conflicts_with = "from")]
    pub prepare: Option<PathBuf>,
    /// Run the bundles a `--prepare` wrote to DIR (needs no compiler).
    #[arg(long, value_name = "DIR")]
    pub from: Option<PathBuf>,
    /// Vulkan device: an index or a substring of its name (default: the first discrete GPU,
    /// else integrated, virtual, CPU).
    #[arg(long)]
    pub device: Option<String>,
    /// The driver, as the table header names it (e.g. `NVIDIA 580.159.04`, from nvidia-smi).
    #[arg(long)]
    pub driver: Option<String>,
    /// Results of the suite's PyTorch peer (`python3 scripts/torch_*.py --json FILE`).
    #[arg(long, value_name = "FILE")]
    pub torch_json: Option<PathBuf>,
    /// Results of the IREE peer (`python3 scripts/iree_peer.py run DIR --json FILE`; fusion-run, mlp).
    #[arg(long, value_name = "FILE")]
    pub iree_json: Option<PathBuf>,
    /// The Markdown file the section is written into (default docs/performance.md).
    #[arg(long, value_name = "FILE")]
    pub write_to: Option<PathBuf>,
    /// Print the table only; write no file.
    #[arg(long)]
    pub no_write: bool,
    /// Repetitions of each timed configuration (more for small graphs, where one run is short).
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
}

/// Where a suite is in the prepare/run split.
pub enum Phase {
    /// Compile into the directory only.
    Prepare(PathBuf),
    /// Run from the directory only.
    Run(PathBuf),
    /// Both, through a temporary directory removed at the end.
    Both(PathBuf),
}

impl Phase {
    /// The phase the options ask for; `Both` makes its temporary directory.
    pub fn of(common: &Common, suite: &str) -> Result<Phase, String> {
        let phase = match (&common.prepare, &common.from) {
            (Some(_), Some(_)) => return Err("--prepare and --from exclude each other".into()),
            (Some(d), None) => Phase::Prepare(d.join(suite)),
            (None, Some(d)) => Phase::Run(d.join(suite)),
            (None, None) => {
                Phase::Both(std::env::temp_dir().join(format!("cmdgraph-bench-{suite}-{}", std::process::id())))
            }
        };
        if let Phase::Prepare(d) | Phase::Both(d) = &phase {
            std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
        }
        Ok(phase)
    }

    /// The directory bundles go to or come from.
    pub fn dir(&self) -> &Path {
        match self {
            Phase::Prepare(d) | Phase::Run(d) | Phase::Both(d) => d,
        }
    }

    /// Whether graphs are compiled in this process.
    pub fn prepares(&self) -> bool {
        !matches!(self, Phase::Run(_))
    }

    /// Whether bundles are run in this process.
    pub fn runs(&self) -> bool {
        !matches!(self, Phase::Prepare(_))
    }

    /// Removes the temporary directory of `Both`.
    pub fn cleanup(&self) {
        if let Phase::Both(d) = self {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// Compiles module text with the named passes (empty: the graph as written) at -O2.
pub fn compile(text: &str, passes: &[&str]) -> Result<(Bundle, CompileReport), String> {
    let module =
        cmdgraph_ir::text::parse(text).map_err(|d| format!("generated IR does not parse ({} errors)", d.len()))?;
    compile_parsed(&module, passes)
}

/// [`compile`] of a parsed module.
pub fn compile_parsed(module: &cmdgraph_ir::Module, passes: &[&str]) -> Result<(Bundle, CompileReport), String> {
    let infos = passes
        .iter()
        .map(|n| cmdgraph_passes::lookup(n).ok_or_else(|| format!("no pass {n}")))
        .collect::<Result<Vec<_>, _>>()?;
    compile_module(module, &infos, &Options { opt_level: 2 }, &Llvm).map_err(|e| e.to_string())
}

/// Writes a bundle as `DIR/NAME.cgb`.
pub fn save(dir: &Path, name: &str, bundle: &Bundle) -> Result<(), String> {
    let bytes = bundle.to_bytes().map_err(|e| format!("{name}: {e}"))?;
    write_bytes(&dir.join(format!("{name}.cgb")), &bytes)
}

/// Writes a binary file (a bundle).
pub fn write_bytes(path: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Reads a binary file (a bundle).
pub fn read_bytes(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// Writes a text file.
pub fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Reads a text file.
pub fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// The bundle file `DIR/NAME.cgb`.
pub fn bundle_bytes(dir: &Path, name: &str) -> Result<Vec<u8>, String> {
    read_bytes(&dir.join(format!("{name}.cgb")))
}

/// An executor for bundle text on the chosen device (validation off: it is timed).
pub fn executor(bundle: &[u8], common: &Common) -> Result<Executor, String> {
    let loaded = cmdgraph_executor::load_bytes(bundle).map_err(|e| e.to_string())?;
    let device = common.device.as_deref().map_or(DeviceChoice::Default, DeviceChoice::parse);
    Executor::new(loaded, &ContextOptions { validation: false, device, ..Default::default() })
        .map_err(|e| e.to_string())
}

/// The compiled kernel every launch of graph `graph` runs (the executor's choice, from the
/// bundle's launch table): what a hand-recorded peer dispatches, so both run the same SPIR-V.
/// An error when the graph launches nothing or more than one variant.
pub fn launch_kernel(bundle: &Bundle, graph: &str) -> Result<cmdgraph_ir::bundle::CompiledKernel, String> {
    let plan = bundle.graphs.iter().find(|p| p.name == graph).ok_or_else(|| format!("no plan of graph @{graph}"))?;
    let mut variants: Vec<u32> = plan.launches.iter().map(|l| l.kernel).collect();
    variants.sort_unstable();
    variants.dedup();
    match variants.as_slice() {
        [k] => bundle
            .kernels
            .get(*k as usize)
            .cloned()
            .ok_or_else(|| format!("@{graph}: launch of kernel {k}, not in the bundle")),
        [] => Err(format!("@{graph} launches no kernel")),
        _ => Err(format!("@{graph} launches {} kernel variants; the peer runs one", variants.len())),
    }
}

/// Median of samples (seconds); 0 for none.
pub fn median(samples: &[f64]) -> f64 {
    let mut s: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// The header lines of a section: the command, device, driver, date, machine and how
/// times were taken.
pub fn header(title: &str, device: &str, common: &Common, how: &str) -> String {
    let args: Vec<String> = std::env::args().skip(1).collect();
    format!(
        "## {title}\n\n\
         Command: `cmdgraph-bench {}` (without `--prepare`/`--from`: `cargo run --release -p cmdgraph-bench -- ...`, \
         both phases in one process)  \n\
         Device: {device}  \n\
         Driver: {}  \n\
         Date: {}  \n\
         Host: {}  \n\
         Build: {}  \n\
         Times: {how}\n\n",
        args.join(" "),
        common.driver.as_deref().unwrap_or("not given (`--driver`)"),
        crate::report::today(),
        crate::report::machine(),
        if cfg!(debug_assertions) { "debug (host-side times are pessimistic)" } else { "release" },
    )
}

/// Prints the section and writes it into the Markdown file unless `--no-write`.
pub fn finish(common: &Common, section: &str, body: &str) -> Result<(), String> {
    println!("{body}");
    if common.no_write {
        return Ok(());
    }
    let path = common.write_to.clone().unwrap_or_else(|| crate::workspace_root().join("docs").join("performance.md"));
    crate::report::write_section(&path, section, body)?;
    eprintln!("wrote section {section} of {}", path.display());
    Ok(())
}

/// The PyTorch peer's results: `None` without `--torch-json`; an error for a file that
/// does not parse.
pub fn torch(common: &Common) -> Result<Option<serde_json::Value>, String> {
    let Some(path) = &common.torch_json else { return Ok(None) };
    let v: serde_json::Value =
        serde_json::from_str(&read(path)?).map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
    Ok(Some(v))
}

/// Why the PyTorch columns are empty, or `None` when they have numbers.
pub fn torch_missing(t: &Option<serde_json::Value>) -> Option<String> {
    match t {
        None => Some("n/a (no CUDA)".into()),
        Some(v) if v.get("available").and_then(|a| a.as_bool()) != Some(true) => {
            let why = v.get("reason").and_then(|r| r.as_str()).unwrap_or("unavailable");
            Some(format!("n/a ({why})"))
        }
        Some(_) => None,
    }
}

/// Microseconds with two decimals.
pub fn us(secs: f64) -> String {
    format!("{:.2}", secs * 1e6)
}

/// Milliseconds with two decimals.
pub fn ms(secs: f64) -> String {
    format!("{:.2}", secs * 1e3)
}

/// Compares two f32 vectors bit for bit; the first difference as an error.
pub fn same(what: &str, got: &[f32], want: &[f32]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} values, expected {}", got.len(), want.len()));
    }
    match got.iter().zip(want).position(|(a, b)| a.to_bits() != b.to_bits()) {
        Some(i) => Err(format!("{what}: OUTPUT MISMATCH at element {i}: {} vs {}", got[i], want[i])),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_and_torch_fallbacks() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
        assert_eq!(torch_missing(&None).as_deref(), Some("n/a (no CUDA)"));
        let off = serde_json::json!({"available": false, "reason": "no CUDA"});
        assert_eq!(torch_missing(&Some(off)).as_deref(), Some("n/a (no CUDA)"));
        assert!(torch_missing(&Some(serde_json::json!({"available": true}))).is_none());
        assert!(same("x", &[1.0, 2.0], &[1.0, 2.0]).is_ok());
        assert!(same("x", &[1.0, 2.5], &[1.0, 2.0]).is_err_and(|e| e.contains("element 1")));
    }
}
