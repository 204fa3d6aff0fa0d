//! Timing of the text front end, stage by stage, best of N runs.
//!
//! Each stage is timed on its own (parse, verify, print) and the three together, the way
//! `cmdgraph fmt`/`verify` use them. Two reference stages run in the same process on the
//! same text so that results can be read as ratios on a noisy machine: reading the file from
//! the page cache, and splitting the text on whitespace (a lower bound for any lexer).

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
    /// Nodes per second through parse + verify + print.
    pub fn nodes_per_sec(&self) -> f64 {
        self.nodes as f64 / self.total.as_secs_f64().max(1e-12)
    }
}

/// The best of `runs` runs of `f`.
fn best<T>(runs: usize, mut f: impl FnMut() -> T) -> Duration {
    let mut best = Duration::MAX;
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        let out = f();
        let took = start.elapsed();
        black_box(out);
        best = best.min(took);
    }
    best
}

/// Writes `text` to `file` and measures every stage on it.
pub fn measure(nodes: usize, text: &str, file: &Path, runs: usize) -> Result<Timings, String> {
    std::fs::write(file, text).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    let module = cmdgraph_ir::text::parse(text)
        .map_err(|d| format!("generated text does not parse:\n{}", cmdgraph_ir::diag::render_all(&d, "gen.cgir", text)))?;
    cmdgraph_ir::verify::verify(&module)
        .map_err(|d| format!("generated text does not verify:\n{}", cmdgraph_ir::diag::render_all(&d, "gen.cgir", text)))?;
    if cmdgraph_ir::text::print(&module) != text {
        return Err("generated text is not canonical: print(parse(text)) != text".to_string());
    }
    Ok(Timings {
        nodes,
        bytes: text.len(),
        read: best(runs, || std::fs::read_to_string(file).map(|s| s.len()).unwrap_or(0)),
        scan: best(runs, || black_box(text).split_ascii_whitespace().count()),
        parse: best(runs, || cmdgraph_ir::text::parse(black_box(text)).is_ok()),
        verify: best(runs, || cmdgraph_ir::verify::verify(black_box(&module)).is_ok()),
        print: best(runs, || cmdgraph_ir::text::print(black_box(&module)).len()),
        total: best(runs, || {
            let Ok(m) = cmdgraph_ir::text::parse(black_box(text)) else { return 0 };
            if cmdgraph_ir::verify::verify(&m).is_err() {
                return 0;
            }
            cmdgraph_ir::text::print(&m).len()
        }),
    })
}
