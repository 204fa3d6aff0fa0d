//! `cmdgraph-bench`: the project's performance suites, each writing its table to
//! docs/performance.md together with the command that produced it.
//!
//! ```text
//! cargo run --release -p cmdgraph-bench -- parse [--sizes 10000,100000,1000000] [--runs 5]
//! ```

mod generate;
mod measure;
mod report;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "cmdgraph-bench", about = "cmdgraph performance suites")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Text front end: parse, verify and print generated graphs of 10^4, 10^5, 10^6 nodes.
    Parse {
        /// Graph sizes in nodes.
        #[arg(long, value_delimiter = ',', default_values_t = [10_000usize, 100_000, 1_000_000])]
        sizes: Vec<usize>,
        /// Runs per stage; the best one counts.
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Print the table only; leave docs/performance.md alone.
        #[arg(long)]
        no_write: bool,
    },
}

/// Where docs/performance.md is, from the crate's own location.
fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn run_parse(sizes: &[usize], runs: usize, write: bool) -> Result<(), String> {
    let dir = workspace_root().join("target").join("bench");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut rows = Vec::new();
    for &nodes in sizes {
        let text = generate::module_text(nodes);
        let nodes = nodes.div_ceil(generate::BLOCK).max(1) * generate::BLOCK;
        // Fewer runs for the largest inputs: each one takes seconds already.
        let runs = if nodes >= 1_000_000 { runs.min(3) } else { runs };
        eprintln!("parse: {nodes} nodes, {:.1} MB of text, best of {runs}", text.len() as f64 / 1e6);
        let timings = measure::measure(nodes, &text, &dir.join(format!("parse_{nodes}.cgir")), runs)?;
        rows.push(timings);
    }
    let table = report::table(&rows);
    println!("{table}");
    if !write {
        return Ok(());
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let body = format!(
        "## Text front end: parse, verify, print\n\n\
         Command: `cargo run --release -p cmdgraph-bench -- {}` (or `bash scripts/bench.sh`)  \n\
         Date: {}  \n\
         Machine: {}; one thread  \n\
         Input: generated graphs (bench/src/generate.rs): blocks of async_malloc, five kernels \
         with pointer and scalar arguments, memcpy, memset, async_free and an empty join, \
         with edges to the previous node, the previous block and a block four back.\n\n\
         Best of {} runs per stage (3 for 10^6). *read* = `fs::read_to_string` of the same text \
         from the page cache and *scan* = `split_ascii_whitespace().count()` over it: reference \
         stages timed in the same run, so the last two columns are ratios that hold on a noisy \
         machine. Target: more than 1M nodes/s for parse+verify+print at 10^5 nodes.\n\n{}",
        args.join(" "),
        report::today(),
        report::machine(),
        runs,
        table
    );
    let path = workspace_root().join("docs").join("performance.md");
    report::write_section(&path, "parse", &body)?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Parse { sizes, runs, no_write } => run_parse(&sizes, runs, !no_write),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cmdgraph-bench: {e}");
            ExitCode::FAILURE
        }
    }
}
