//! Timing of the text front end, stage by stage, best of N runs.
//!
//! Each stage is timed on its own (parse, verify, print) and the three together, the way
//! `cmdgraph fmt`/`verify` use them. Two reference stages run in the same process on the
//! same text so that results can be read as ratios on a noisy machine: reading the file from
//! the page cache, and splitting the text on whitespace (a lower bound for any lexer).
//! The first run of each stage also checks its result (the text parses, verifies, and prints
//! back to itself), so a broken front end cannot produce a fast but meaningless number.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

/// Best-of-N timings of every stage for one input.
#[derive(Clone, Debug)]
pub struct Timings {
    /// Nodes in the graph.
    pub nodes: usize,
    /// Size of the text in bytes.
    pub bytes: usize,
    /// `fs::read_to_string` of the file (warm page cache).
    pub read: Duration,
    /// `split_ascii_whitespace().count()` over the text.
    pub scan: Duration,
    /// `text::parse`.
    pub parse: Duration,
    /// `verify::verify`.
    pub verify: Duration,
    /// `text::print`.
    pub print: Duration,
    /// parse + verify + print in sequence.
    pub total: Duration,
}

impl Timings {
    /// Nodes per second through parse + verify + print, when that was timed.
    pub fn nodes_per_sec(&self) -> Option<f64> {
        (!self.total.is_zero()).then(|| self.nodes as f64 / self.total.as_secs_f64())
    }
}

/// Which stages to time; the others are reported as zero. Handy to profile one stage.
#[derive(Clone, Copy, Debug)]
pub struct Stages {
    /// Time `text::parse`.
    pub parse: bool,
    /// Time `verify::verify`.
    pub verify: bool,
    /// Time `text::print`.
    pub print: bool,
    /// Time the three in sequence.
    pub total: bool,
}

/// How often to repeat a stage.
#[derive(Clone, Copy, Debug)]
pub struct Repeat {
    /// Runs per stage; the best one counts.
    pub runs: usize,
    /// A stage whose first run takes longer than this is not repeated.
    pub budget: Duration,
}

/// The best of `repeat.runs` runs of `f` (fewer when one run exceeds the budget), and the
/// result of the first run.
fn best<T>(repeat: Repeat, mut f: impl FnMut() -> T) -> (Duration, T) {
    let start = Instant::now();
    let first = f();
    let mut best = start.elapsed();
    if best <= repeat.budget {
        for _ in 1..repeat.runs.max(1) {
            let start = Instant::now();
            let out = f();
            best = best.min(start.elapsed());
            drop(black_box(out));
        }
    }
    (best, first)
}

/// Writes `text` to `file` and measures every selected stage on it.
pub fn measure(nodes: usize, text: &str, file: &Path, repeat: Repeat, stages: Stages) -> Result<Timings, String> {
    std::fs::write(file, text).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    let (read, _) = best(repeat, || std::fs::read_to_string(file).map(|s| s.len()).unwrap_or(0));
    let (scan, _) = best(repeat, || black_box(text).split_ascii_whitespace().count());

    // The module is needed by the later stages even when parsing is not timed.
    let (parse, parsed) = best(repeat, || cmdgraph_ir::text::parse(black_box(text)));
    let module = parsed.map_err(|d| {
        format!("generated text does not parse:\n{}", cmdgraph_ir::diag::render_all(&d, "gen.cgir", text))
    })?;
    let parse = if stages.parse { parse } else { Duration::ZERO };

    let mut verify = Duration::ZERO;
    if stages.verify {
        let (took, result) = best(repeat, || cmdgraph_ir::verify::verify(black_box(&module)));
        result.map_err(|d| {
            format!("generated text does not verify:\n{}", cmdgraph_ir::diag::render_all(&d, "gen.cgir", text))
        })?;
        verify = took;
    }
    let mut print = Duration::ZERO;
    if stages.print {
        let (took, printed) = best(repeat, || cmdgraph_ir::text::print(black_box(&module)));
        if printed != text {
            return Err("generated text is not canonical: print(parse(text)) != text".to_string());
        }
        print = took;
    }
    let mut total = Duration::ZERO;
    if stages.total {
        let (took, ok) = best(repeat, || {
            let Ok(m) = cmdgraph_ir::text::parse(black_box(text)) else {
                return false;
            };
            cmdgraph_ir::verify::verify(&m).is_ok() && cmdgraph_ir::text::print(&m).len() == text.len()
        });
        if !ok {
            return Err("parse + verify + print failed on the generated text".to_string());
        }
        total = took;
    }
    Ok(Timings { nodes, bytes: text.len(), read, scan, parse, verify, print, total })
}
