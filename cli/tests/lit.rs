//! The lit suite (`lit-tests/`) under `cargo test`, one trial per `.cgir` file.
//!
//! LLVM's `lit` runs once, on every selected file, against the `cmdgraph` binary cargo just
//! built; its `-v` output (`PASS: cmdgraph :: dot/x.cgir (1 of 9)` and the failure blocks)
//! is mapped back to the trials, so a failing file shows its RUN lines and output. Filters
//! work as for any cargo test (`cargo test -p cmdgraph-cli --test lit -- dot/`); `LIT_OPTS`
//! passes extra options to lit. Without lit every trial fails, pointing at scripts/setup.sh.

use libtest_mimic::{Arguments, Failed, Trial};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

/// What lit said about one test file.
enum Verdict {
    /// PASS or XFAIL: the expectation held.
    Ok,
    /// Anything else, with lit's report for the file.
    Bad(String),
}

/// Runs lit at most once and hands each trial its verdict.
struct Suite {
    root: PathBuf,
    selected: Vec<String>,
    verdicts: OnceLock<Result<BTreeMap<String, Verdict>, String>>,
}

impl Suite {
    fn check(&self, name: &str) -> Result<(), Failed> {
        let verdicts = self.verdicts.get_or_init(|| run_lit(&self.root, &self.selected));
        match verdicts {
            Err(message) => Err(message.as_str().into()),
            Ok(map) => match map.get(name) {
                Some(Verdict::Ok) => Ok(()),
                Some(Verdict::Bad(report)) => Err(report.as_str().into()),
                // Not in the batch (a filter this file did not predict): run it alone.
                None => match run_lit(&self.root, &[name.to_string()])?.remove(name) {
                    Some(Verdict::Ok) => Ok(()),
                    Some(Verdict::Bad(report)) => Err(report.into()),
                    None => Err(format!("lit reported nothing for {name}").into()),
                },
            },
        }
    }
}

fn main() {
    let args = Arguments::from_args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../lit-tests");
    let mut files = Vec::new();
    if let Err(e) = collect(&root, &root, &mut files) {
        eprintln!("cannot list {}: {e}", root.display());
        std::process::exit(101);
    }
    files.sort();
    let selected = files.iter().filter(|f| selected(&args, f)).cloned().collect();
    let suite = Arc::new(Suite { root, selected, verdicts: OnceLock::new() });
    let trials = files
        .into_iter()
        .map(|name| {
            let suite = Arc::clone(&suite);
            Trial::test(name.clone(), move || suite.check(&name))
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}

/// `.cgir` files under `dir`, as `/`-separated paths relative to `root` (lit's test names).
/// `Inputs` folders hold files that tests read, not tests (lit.cfg.py excludes them too).
fn collect(root: &Path, dir: &Path, out: &mut Vec<String>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "Inputs") {
                collect(root, &path, out)?;
            }
        } else if path.extension().is_some_and(|e| e == "cgir") {
            let rel = path.strip_prefix(root).unwrap_or(&path);
            let parts: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
            out.push(parts.join("/"));
        }
    }
    Ok(())
}

/// libtest's selection rule: the filter is a substring (or the whole name with `--exact`),
/// and `--skip` patterns remove names the same way.
fn selected(args: &Arguments, name: &str) -> bool {
    let matches = |pattern: &str| if args.exact { name == pattern } else { name.contains(pattern) };
    args.filter.as_deref().is_none_or(matches) && !args.skip.iter().any(|s| matches(s))
}

/// lit itself: `$LIT`, LLVM 22's, or the first on PATH.
fn find_lit() -> Option<PathBuf> {
    if let Some(lit) = std::env::var_os("LIT") {
        return Some(PathBuf::from(lit));
    }
    let llvm = PathBuf::from("/usr/lib/llvm-22/bin/lit");
    if llvm.is_file() {
        return Some(llvm);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("lit")).find(|p| p.is_file())
}

fn run_lit(root: &Path, names: &[String]) -> Result<BTreeMap<String, Verdict>, String> {
    if names.is_empty() {
        return Ok(BTreeMap::new());
    }
    let lit = find_lit()
        .ok_or("LLVM `lit` not found (looked at $LIT, /usr/lib/llvm-22/bin/lit and PATH): run scripts/setup.sh")?;
    let bin = env!("CARGO_BIN_EXE_cmdgraph");
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lit");
    let output = Command::new(&lit)
        .arg("-v")
        .arg("--param")
        .arg(format!("cmdgraph={bin}"))
        .args(names.iter().map(|n| root.join(n)))
        .env("CMDGRAPH_BIN", bin)
        .env("CMDGRAPH_LIT_OUT", &out_dir)
        .output()
        .map_err(|e| format!("cannot run {}: {e}; run scripts/setup.sh", lit.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let verdicts = parse_report(&stdout);
    if verdicts.is_empty() {
        return Err(format!("lit ran no test ({}):\n{stdout}{stderr}", output.status));
    }
    Ok(verdicts)
}

/// Reads `lit -v` output: a result line per test, and for failures a block
/// `******************** TEST 'cmdgraph :: NAME' FAILED ****...` up to a line of stars.
fn parse_report(stdout: &str) -> BTreeMap<String, Verdict> {
    let mut details: BTreeMap<String, String> = BTreeMap::new();
    let mut results = Vec::new();
    let mut lines = stdout.lines();
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix("******************** TEST 'cmdgraph :: ") {
            let name = rest.split('\'').next().unwrap_or_default().to_string();
            let block: Vec<&str> = lines.by_ref().take_while(|l| *l != "********************").collect();
            details.insert(name, block.join("\n"));
        } else if let Some((code, rest)) = line.split_once(": cmdgraph :: ") {
            // `NAME (3 of 9)`
            let name = rest.rsplit_once(" (").map_or(rest, |(n, _)| n).to_string();
            results.push((code.to_string(), name));
        }
    }
    results
        .into_iter()
        .map(|(code, name)| {
            let verdict = match code.as_str() {
                "PASS" | "XFAIL" => Verdict::Ok,
                _ => {
                    let detail = details.get(&name).map(String::as_str).unwrap_or("");
                    Verdict::Bad(format!("lit: {code}: {name}\n{detail}"))
                }
            };
            (name, verdict)
        })
        .collect()
}
