//! `cmdgraph opt`: run a pass pipeline on a verified module and print the result.

use crate::exit::{Failure, Outcome};
use crate::io;
use cmdgraph_passes::pipeline::{self, DumpPosition, PipelineEvent, RunOptions};
use cmdgraph_passes::{PassContext, PassInfo, DEFAULT_PIPELINE, REGISTRY};
use std::path::{Path, PathBuf};

const EXAMPLES: &str = "\
Examples:
  cmdgraph opt app.cgir -o app.opt.cgir              the default pipeline
  cmdgraph opt --passes=inline-subgraphs,dead-node-elimination app.cgir
  cmdgraph opt --verify-each --print-after-all app.cgir 2> dumps.cgir
  cmdgraph opt --dump-dot-dir steps app.cgir > /dev/null && dot -Tsvg -O steps/*.dot
  cmdgraph opt --time-passes --stats app.cgir > /dev/null
  cmdgraph opt --passes=plan-memory --memory-report --memory-svg-dir plans app.cgir > /dev/null
  cmdgraph opt --passes=fuse-kernels --explain app.cgir
  cmdgraph opt --list-passes";

/// Arguments of `cmdgraph opt`.
#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct OptArgs {
    /// The module to optimize; `-` reads stdin.
    #[arg(value_name = "FILE", default_value = "-")]
    pub input: PathBuf,
    /// Comma-separated passes to run in order (default: the default pipeline, see
    /// --list-passes).
    #[arg(long, value_name = "a,b,c", value_parser = parse_passes)]
    pub passes: Option<PassList>,
    /// Write to OUT instead of stdout; OUT is replaced only once the output is complete.
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Dump the module to stderr after every pass.
    #[arg(long)]
    pub print_after_all: bool,
    /// Dump the module to stderr before pass P (repeatable, or comma-separated).
    #[arg(long, value_name = "P", value_delimiter = ',', value_parser = parse_pass)]
    pub print_before: Vec<&'static PassInfo>,
    /// Dump the module to stderr after pass P (repeatable, or comma-separated).
    #[arg(long, value_name = "P", value_delimiter = ',', value_parser = parse_pass)]
    pub print_after: Vec<&'static PassInfo>,
    /// Run the verifier after every pass; a pass whose output it rejects stops the run.
    #[arg(long)]
    pub verify_each: bool,
    /// Print the wall time of every pass to stderr.
    #[arg(long)]
    pub time_passes: bool,
    /// Show the pass and its position on stderr: `auto` when stderr is a terminal and the
    /// run passes about a second, `always` (one line per pass, from the start) or `never`.
    #[arg(long, value_name = "WHEN", default_value = "auto")]
    pub progress: crate::progress::When,
    /// Print the statistics of every pass to stderr.
    #[arg(long)]
    pub stats: bool,
    /// Write the module as DOT to DIR/00-input.dot and DIR/NN-<pass>.dot after each pass.
    #[arg(long, value_name = "DIR")]
    pub dump_dot_dir: Option<PathBuf>,
    /// Print the memory plan of every graph with allocations to stderr (needs plan-memory
    /// in the pipeline): offsets, sizes, lifetimes, pool, lower bound, naive sum, DPC++.
    #[arg(long)]
    pub memory_report: bool,
    /// Write each memory plan as a picture (offset x lifetime) to DIR/<graph>.svg.
    #[arg(long, value_name = "DIR")]
    pub memory_svg_dir: Option<PathBuf>,
    /// Pool offset alignment in bytes for plan-memory (default 256, see docs/memory.md).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..=1 << 30))]
    pub memory_alignment: Option<u64>,
    /// Print to stderr what each pass explains about its changes (`fuse-kernels`: each
    /// fusion with its nodes, rules, bytes and launches saved; each pair or group it refused
    /// and each kernel node that cannot fuse at all, with the reason).
    #[arg(long)]
    pub explain: bool,
    /// Let `fuse-kernels` reassociate and contract floating-point arithmetic (results may
    /// change in the last bits; off by default, so fused results stay bit-identical).
    #[arg(long)]
    pub fuse_fp_reassoc: bool,
    /// Place the nodes of each graph on N devices (`place-devices`, added to the pipeline
    /// before `plan-memory` when the pipeline does not name it; docs/multi-device.md).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub devices: Option<u32>,
    /// The bandwidth between devices `place-devices` prices transfers at, in GB/s (default
    /// 10), or `measure`: a transfer timed on this machine's devices.
    #[arg(long, value_name = "GBPS|measure", value_parser = crate::cmd::bandwidth::parse)]
    pub transfer_bandwidth: Option<crate::cmd::bandwidth::TransferBandwidth>,
    /// List the registered passes and the default pipeline, then exit.
    #[arg(long)]
    pub list_passes: bool,
    /// Accept data races between unordered commands (E0280): report them as warnings.
    #[arg(long)]
    pub allow_races: bool,
}

/// A parsed `--passes` value (a newtype so that clap takes it as one value, not a list).
#[derive(Clone, Debug)]
pub struct PassList(pub Vec<&'static PassInfo>);

fn parse_passes(spec: &str) -> Result<PassList, String> {
    pipeline::parse_pipeline(spec, REGISTRY).map(PassList).map_err(|e| e.to_string())
}

fn parse_pass(name: &str) -> Result<&'static PassInfo, String> {
    pipeline::lookup_in(name.trim(), REGISTRY).map_err(|e| e.to_string())
}

/// Runs `cmdgraph opt`.
pub fn run(args: &OptArgs) -> Outcome {
    if args.list_passes {
        return io::write_output(None, &list_passes());
    }
    let input = io::read_input(&args.input)?;
    let mut module = super::parse(&input)?;
    super::print_warnings(&super::verify_with(&input, &module, args.allow_races)?);
    let mut passes: Vec<&'static PassInfo> = match &args.passes {
        Some(p) => p.0.clone(),
        None => cmdgraph_passes::default_pipeline(),
    };
    if args.devices.is_some_and(|d| d > 1) {
        passes = cmdgraph_passes::with_place_devices(passes);
    }
    if let Some(dir) = &args.dump_dot_dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| Failure::Io(format!("error: cannot create `{}`: {e}", dir.display())))?;
    }
    let options = RunOptions {
        verify_each: args.verify_each,
        print_after_all: args.print_after_all,
        print_before: args.print_before.iter().map(|p| p.name.to_string()).collect(),
        print_after: args.print_after.iter().map(|p| p.name.to_string()).collect(),
        dump_dot: args.dump_dot_dir.is_some(),
        // On error nothing is written, so the module needs no undo copies.
        discard_on_error: true,
        allow_races: args.allow_races,
    };
    let mut io_error: Option<Failure> = None;
    let mut shown = crate::progress::Progress::new(args.progress);
    let mut on_event = |event: PipelineEvent| match event {
        PipelineEvent::PassStarted { index, total, pass } => shown.update(pass, Some((index, total))),
        PipelineEvent::IrDump { position, pass, graphs, text } => {
            let when = match position {
                DumpPosition::Before => "Before",
                DumpPosition::After => "After",
            };
            let plural = if graphs == 1 { "" } else { "s" };
            eprint!("// *** IR Dump {when} {pass} ({graphs} graph{plural}) ***\n{text}");
        }
        PipelineEvent::Dot { step, name, text } => {
            if let (Some(dir), None) = (&args.dump_dot_dir, &io_error) {
                io_error = write_dot(dir, step, name, &text).err();
            }
        }
    };
    let mut ctx = PassContext { memory_alignment: args.memory_alignment, ..PassContext::default() };
    ctx.options.fuse_fp_reassoc = args.fuse_fp_reassoc;
    ctx.options.devices = args.devices;
    // Measured only where place-devices runs.
    let bandwidth = args.transfer_bandwidth.filter(|_| args.devices.is_some_and(|d| d > 1));
    ctx.options.transfer_bytes_per_us = bandwidth.map(|b| b.bytes_per_us()).transpose()?;
    let report = pipeline::run_pipeline(&mut module, &passes, &options, &mut ctx, &mut on_event)
        .map_err(|e| Failure::Rejected(format!("error: {e}")));
    // End the progress line (clearing it) before anything else goes to stderr.
    shown.finish();
    let report = report?;
    if let Some(e) = io_error {
        return Err(e);
    }
    if args.explain {
        if ctx.remarks.is_empty() {
            // Said, so that silence is never mistaken for an explanation.
            eprintln!("explain: no remarks (no graph has a kernel node, or fuse-kernels was not in the pipeline)");
        }
        eprint!("{}", ctx.remarks.concat());
    }
    if args.time_passes {
        eprint!("{}", pipeline::render_timings(&report));
    }
    if args.stats {
        eprint!("{}", pipeline::render_stats(&report));
    }
    memory_outputs(args, &passes, &ctx)?;
    io::write_output(args.output.as_deref(), &cmdgraph_ir::text::print(&module))
}

/// `--memory-report` and `--memory-svg-dir`.
fn memory_outputs(args: &OptArgs, passes: &[&'static PassInfo], ctx: &PassContext) -> Result<(), Failure> {
    if !args.memory_report && args.memory_svg_dir.is_none() {
        return Ok(());
    }
    if !passes.iter().any(|p| p.name == cmdgraph_passes::memory::INFO.name) {
        eprintln!("warning: plan-memory is not in the pipeline; there is no memory plan to report");
        return Ok(());
    }
    if args.memory_report {
        if ctx.memory_plans.is_empty() {
            eprintln!("no graph has graph-owned allocations; no memory plan");
        }
        for plan in ctx.memory_plans.values() {
            eprint!("{}", cmdgraph_passes::memory::report_text(plan));
        }
    }
    if let Some(dir) = &args.memory_svg_dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| Failure::Io(format!("error: cannot create `{}`: {e}", dir.display())))?;
        for plan in ctx.memory_plans.values() {
            let path = dir.join(format!("{}.svg", plan.graph));
            io::write_atomic(&path, cmdgraph_passes::memory::report_svg(plan).as_bytes())
                .map_err(|e| Failure::Io(format!("error: cannot write `{}`: {e}", path.display())))?;
        }
    }
    Ok(())
}

fn write_dot(dir: &Path, step: usize, name: &str, text: &str) -> Result<(), Failure> {
    let path = dir.join(format!("{step:02}-{name}.dot"));
    io::write_atomic(&path, text.as_bytes())
        .map_err(|e| Failure::Io(format!("error: cannot write `{}`: {e}", path.display())))
}

/// `--list-passes`: every registered pass with its summary, statistics and what it
/// preserves, then the default pipeline.
fn list_passes() -> String {
    let mut out = String::from("Passes:\n");
    let width = REGISTRY.iter().map(|p| p.name.len()).max().unwrap_or(0);
    for p in REGISTRY {
        out.push_str(&format!("  {:width$}  {}\n", p.name, p.summary));
        for (stat, meaning) in p.statistics {
            out.push_str(&format!("  {:width$}    stat {stat}: {meaning}\n", ""));
        }
        out.push_str(&format!("  {:width$}    preserves: {}\n", "", p.preserves));
    }
    out.push_str(&format!("Default pipeline: {}\n", DEFAULT_PIPELINE.join(",")));
    out
}
