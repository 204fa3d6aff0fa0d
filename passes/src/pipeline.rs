//! The pipeline runner: parses a `--passes` spec and runs passes in order on a module.
//!
//! It is a library so that `cmdgraph opt` and `cmdgraph compile` share it. The runner never
//! prints: what the caller may want to show (IR dumps, DOT of each step) is handed to a
//! callback as [`PipelineEvent`]s, and the per-pass wall time and statistics come back in
//! a [`PipelineReport`], with [`render_timings`] and [`render_stats`] for the tables.
//!
//! A pass runs on the module in place after a clone is kept; if the pass fails, or the
//! verifier rejects its output under `verify_each`, the clone is put back, so the module is
//! always the one the last successful pass left. Callers that discard the module on error
//! say so ([`RunOptions::discard_on_error`]) and skip the clones.

use crate::{PassContext, PassError, PassInfo};
use cmdgraph_ir::diag::{render_all, Severity};
use cmdgraph_ir::Module;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// Parses `"a,b,c"` into registry entries of `registry`, in order. Spaces around names are
/// ignored; an empty spec is the empty pipeline. A name that is not registered is
/// [`PassError::UnknownPass`] with the closest registered name, when one is close.
pub fn parse_pipeline(spec: &str, registry: &'static [PassInfo]) -> Result<Vec<&'static PassInfo>, PassError> {
    if spec.trim().is_empty() {
        return Ok(Vec::new());
    }
    spec.split(',').map(|name| lookup_in(name.trim(), registry)).collect()
}

/// Looks `name` up in `registry`, with a suggestion when it is not there.
pub fn lookup_in(name: &str, registry: &'static [PassInfo]) -> Result<&'static PassInfo, PassError> {
    registry
        .iter()
        .find(|p| p.name == name)
        .ok_or_else(|| PassError::UnknownPass { name: name.to_string(), suggestion: suggest(name, registry) })
}

/// The registered name closest to `name` (`cmdgraph_ir::suggest::closest`: one that
/// contains it, as `inline` → `inline-subgraphs`, else the nearest by edit distance).
pub fn suggest(name: &str, registry: &'static [PassInfo]) -> Option<&'static str> {
    cmdgraph_ir::suggest::closest(name, registry.iter().map(|p| p.name))
}

/// What the runner does besides running the passes.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Verify the module after every pass; a rejection is [`PassError::VerifyFailed`].
    pub verify_each: bool,
    /// Emit an [`PipelineEvent::IrDump`] after every pass.
    pub print_after_all: bool,
    /// Passes (by name) before which the IR is dumped.
    pub print_before: BTreeSet<String>,
    /// Passes (by name) after which the IR is dumped.
    pub print_after: BTreeSet<String>,
    /// Emit [`PipelineEvent::Dot`] for the input and after every pass.
    pub dump_dot: bool,
    /// The caller throws the module away on error (`compile`, `opt`), so no copy of the
    /// module is kept before each pass to undo a failing one. At 10^6 nodes the copies cost
    /// more than all passes together; on error the module is then left as the failing pass
    /// left it.
    pub discard_on_error: bool,
    /// Under `verify_each`, data races (E0280) are warnings (`cmdgraph opt --allow-races`):
    /// the input was accepted with its races, so passes keep them without failing.
    pub allow_races: bool,
}

/// Whether a dump shows the module before or after its pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DumpPosition {
    /// Before the pass ran.
    Before,
    /// After the pass ran (and was verified, under `verify_each`).
    After,
}

/// Something the caller may want to show, produced while the pipeline runs.
#[derive(Clone, Debug, PartialEq)]
pub enum PipelineEvent {
    /// Pass `index` (0-based) of `total` is about to run (for progress displays).
    PassStarted {
        /// Its position in the pipeline.
        index: usize,
        /// Passes in the pipeline.
        total: usize,
        /// The pass.
        pass: &'static str,
    },
    /// The printed module (`text::print`) before or after a pass.
    IrDump {
        /// Before or after.
        position: DumpPosition,
        /// The pass.
        pass: &'static str,
        /// How many graphs the module has.
        graphs: usize,
        /// The printed module.
        text: String,
    },
    /// The module as DOT: `step` 0 is the input (`name` "input"), step `i` is after the
    /// `i`-th pass (`name` its pass name).
    Dot {
        /// 0 for the input, 1.. for the passes in order.
        step: usize,
        /// "input" or the pass name.
        name: &'static str,
        /// The DOT text (`dot::to_dot`, default labels, every graph).
        text: String,
    },
}

/// What one pass did.
#[derive(Clone, Debug, PartialEq)]
pub struct PassRecord {
    /// The pass.
    pub pass: &'static str,
    /// Wall time of the pass itself (not the verifier, dumps or the safety clone).
    pub wall: Duration,
    /// Wall time of the verifier after it (zero without `verify_each`).
    pub verify: Duration,
    /// Its statistics (`PassContext::stats` as the pass left them).
    pub stats: BTreeMap<&'static str, u64>,
}

/// What the whole pipeline did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PipelineReport {
    /// One record per pass run, in order.
    pub passes: Vec<PassRecord>,
    /// Wall time of the whole run, dumps included.
    pub total: Duration,
}

/// Runs `passes` in order on `module`. `ctx.stats` is cleared before each pass and its
/// contents collected into the report; `ctx.origins` accumulates over the run.
///
/// On error the module is as the last successful pass left it (a failing pass, or one whose
/// output the verifier rejects, is undone), unless `options.discard_on_error`.
pub fn run_pipeline(
    module: &mut Module,
    passes: &[&PassInfo],
    options: &RunOptions,
    ctx: &mut PassContext,
    on_event: &mut dyn FnMut(PipelineEvent),
) -> Result<PipelineReport, PassError> {
    let start = Instant::now();
    let mut report = PipelineReport::default();
    if options.dump_dot {
        on_event(PipelineEvent::Dot { step: 0, name: "input", text: dot(module) });
    }
    for (i, pass) in passes.iter().enumerate() {
        on_event(PipelineEvent::PassStarted { index: i, total: passes.len(), pass: pass.name });
        if options.print_before.contains(pass.name) {
            on_event(dump(DumpPosition::Before, pass.name, module));
        }
        let mut saved = (!options.discard_on_error).then(|| (module.clone(), ctx.origins.clone()));
        let mut undo = |module: &mut Module, ctx: &mut PassContext| {
            if let Some((m, origins)) = saved.take() {
                *module = m;
                ctx.origins = origins;
            }
        };
        ctx.stats.clear();
        let t = Instant::now();
        let outcome = (pass.run)(module, ctx);
        let wall = t.elapsed();
        if let Err(e) = outcome {
            undo(module, ctx);
            return Err(e);
        }
        let t = Instant::now();
        if options.verify_each {
            if let Some(diagnostics) = verify_errors_with(module, options.allow_races) {
                undo(module, ctx);
                return Err(PassError::VerifyFailed { pass: pass.name, diagnostics });
            }
        }
        let verify = if options.verify_each { t.elapsed() } else { Duration::ZERO };
        report.passes.push(PassRecord { pass: pass.name, wall, verify, stats: std::mem::take(&mut ctx.stats) });
        if options.print_after_all || options.print_after.contains(pass.name) {
            on_event(dump(DumpPosition::After, pass.name, module));
        }
        if options.dump_dot {
            on_event(PipelineEvent::Dot { step: i + 1, name: pass.name, text: dot(module) });
        }
    }
    report.total = start.elapsed();
    Ok(report)
}

fn dump(position: DumpPosition, pass: &'static str, module: &Module) -> PipelineEvent {
    PipelineEvent::IrDump { position, pass, graphs: module.graphs.len(), text: cmdgraph_ir::text::print(module) }
}

fn dot(module: &Module) -> String {
    cmdgraph_ir::dot::to_dot(module, &cmdgraph_ir::dot::DotOptions::default())
}

/// The verifier's errors on `module`, rendered against its printed text (the spans a pass
/// leaves point into the original input, so the printed module is parsed again and that is
/// verified). Warnings do not count. `None` if there is no error.
pub fn verify_errors(module: &Module) -> Option<String> {
    verify_errors_with(module, false)
}

/// [`verify_errors`], with data races (E0280) as warnings when `allow_races`.
pub fn verify_errors_with(module: &Module, allow_races: bool) -> Option<String> {
    let options = cmdgraph_ir::verify::VerifyOptions { allow_races };
    let verify = |m: &Module| cmdgraph_ir::verify::verify_with(m, &options);
    let errors = |d: Vec<cmdgraph_ir::diag::Diagnostic>| -> Vec<_> {
        d.into_iter().filter(|d| d.severity == Severity::Error).collect()
    };
    let first = errors(verify(module).err()?);
    if first.is_empty() {
        return None;
    }
    const NAME: &str = "<printed module>";
    let text = cmdgraph_ir::text::print(module);
    match cmdgraph_ir::text::parse(&text) {
        Err(parse) => Some(render_all(&parse, NAME, &text)),
        Ok(reparsed) => match verify(&reparsed).map_err(errors) {
            Err(again) if !again.is_empty() => Some(render_all(&again, NAME, &text)),
            // The printed form hides what the verifier saw: say so, unlocated.
            _ => Some(first.iter().fold(String::new(), |mut s, d| {
                let _ = writeln!(s, "error[{}]: {} (not visible in the printed module)", d.code, d.message);
                s
            })),
        },
    }
}

/// The `--time-passes` table: one line per pass run (wall time of the pass, of the
/// verifier after it, and its share of the total), then the total. Columns are fixed-width.
pub fn render_timings(report: &PipelineReport) -> String {
    let mut out = String::from("===-------------------------------------------------------------------------===\n");
    out.push_str("                          ... Pass execution timing report ...\n");
    out.push_str("===-------------------------------------------------------------------------===\n");
    let total = report.total.as_secs_f64();
    let _ = writeln!(out, "  Total Execution Time: {total:.6} seconds\n");
    let _ = writeln!(out, "  {:>12}  {:>12}  {:>7}  Name", "--Pass--", "--Verify--", "--%--");
    for r in &report.passes {
        let share = if total > 0.0 { 100.0 * r.wall.as_secs_f64() / total } else { 0.0 };
        let _ = writeln!(
            out,
            "  {:>12.6}  {:>12.6}  {:>6.1}%  {}",
            r.wall.as_secs_f64(),
            r.verify.as_secs_f64(),
            share,
            r.pass
        );
    }
    let _ = writeln!(out, "  {total:>12.6}  {:>12}  {:>6.1}%  Total", "", 100.0);
    out
}

/// The `--stats` table: `value pass - statistic` lines in pipeline order, statistics by name
/// (LLVM's `-stats` layout). A pass that reported nothing gets no line.
pub fn render_stats(report: &PipelineReport) -> String {
    let mut out = String::from("===-------------------------------------------------------------------------===\n");
    out.push_str("                          ... Statistics Collected ...\n");
    out.push_str("===-------------------------------------------------------------------------===\n");
    let width = report.passes.iter().flat_map(|r| r.stats.values()).map(|v| v.to_string().len()).max().unwrap_or(1);
    for r in &report.passes {
        for (name, value) in &r.stats {
            let _ = writeln!(out, "{value:>width$} {} - {name}", r.pass);
        }
    }
    out
}
