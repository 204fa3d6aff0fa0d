//! `cmdgraph run`: run a compiled bundle on a Vulkan device (docs/executor.md).
//!
//! The bundle is loaded and checked by the executor (version, hash, IR, layouts, SPIR-V);
//! inputs and outputs follow `cmdgraph interp` (raw or `.npy` files, by memory object name,
//! outputs written atomically); the graph is finalized once and run `--runs` times; host
//! tasks run as no-op callbacks (the CLI has no host code). `--profile` prints the last
//! run's per-node device times (the graph needs `enable_profiling`, spec §22 row 61).
//! Run steps (`steps.rs`): `--set`, `--activate` and `--update-from` change the executable
//! graph before a step's `--runs` runs, `--then` starts the next step; outputs are read
//! after the last step.
//! With `--validation` every message of the layer is printed, also when an error ends the run
//! first (the layer often explains the error). A graph that spans devices runs on several
//! devices (`multi.rs`).

use super::interp::data;
use super::interp::{
    is_npy, parse_binding, pick_graph, pick_rank_base, read_data, resolve_inputs, resolve_outputs, Binding, Output,
    Place,
};
use crate::exit::{Failure, Outcome};
use crate::io;
use cmdgraph_executor::vk::context::take_unreported_messages;
use cmdgraph_executor::{ContextOptions, DeviceChoice, ExecError, Executor, Profile};
use cmdgraph_ir::graph::{Alternative, NodeKind};
use cmdgraph_ir::Module;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

pub(crate) mod multi;
mod ranks;
mod source;
pub(crate) mod steps;
pub use steps::Steps;

const EXAMPLES: &str = "\
Examples:
  cmdgraph run app.cgb --input x=x.npy --output y=y.npy
  cmdgraph run app.cgb --graph main --runs 100 --profile
  cmdgraph run app.cgb --device llvmpipe --validation --output y=y.bin
  cmdgraph run --trust release.key.pub app.cgb   refuse a bundle not signed by that key
  cmdgraph run app.cgb --set alpha=0.5 --then --activate act=1 --runs 2 --output y=y.npy
                                 set %alpha, run; switch %act, run twice; then write y.npy
  cmdgraph run app.cgb --then --update-from v2.cgb
                                 run, update the graph from v2.cgb's, run again

Data files as for `cmdgraph interp`: `.npy` or, with any other extension, raw bytes.";

/// Arguments of `cmdgraph run`.
#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct RunArgs {
    /// The bundle (`cmdgraph compile -o`); `-` reads stdin. IR text (`.cgir`) is compiled
    /// first, as `cmdgraph compile` would, with a note.
    #[arg(value_name = "BUNDLE", required_unless_present = "list_devices")]
    pub bundle: Option<PathBuf>,
    /// List the Vulkan devices `--device` can pick (index, name, kind; the default marked)
    /// and exit.
    #[arg(long, exclusive = true)]
    pub list_devices: bool,
    /// The graph to run (`main` or `@main`); needed when the bundle has several.
    #[arg(long, value_name = "NAME")]
    pub graph: Option<String>,
    /// Bind memory object NAME (usm or buffer) from FILE (.npy or raw bytes); repeatable.
    #[arg(long = "input", value_name = "NAME=FILE", value_parser = parse_binding)]
    pub inputs: Vec<Binding>,
    /// Write memory object NAME to FILE (.npy or raw bytes) after the last step's runs;
    /// repeatable.
    #[arg(long = "output", value_name = "NAME=FILE", value_parser = parse_binding)]
    pub outputs: Vec<Binding>,
    /// The run steps: `--update-from`, `--set`, `--activate` and `--runs`, separated by
    /// `--then` (see `steps`).
    #[command(flatten)]
    pub steps: Steps,
    /// Print the last run's per-node device times (needs `properties(enable_profiling)`), how
    /// each conditional node and each copy ran.
    #[arg(long)]
    pub profile: bool,
    /// The Vulkan device: an index or a name substring (default: discrete, integrated,
    /// virtual, then CPU).
    #[arg(long, value_name = "D")]
    pub device: Option<String>,
    /// For a graph that spans devices: the Vulkan device of each of its devices, in order
    /// (indices or name substrings, comma-separated; default: the first GPUs, or logical
    /// devices of the default device where there are too few).
    #[arg(long, value_name = "D0,D1,...", value_delimiter = ',', conflicts_with = "device")]
    pub devices: Vec<String>,
    /// Enable the Khronos validation layer (with synchronization validation); any message
    /// fails the run.
    #[arg(long)]
    pub validation: bool,
    /// Give up on a wait for the device after this many seconds (exit 1 naming what was
    /// waited for) instead of waiting forever; 0: no deadline. Default 300.
    #[arg(long, value_name = "SECONDS", value_parser = parse_timeout)]
    pub timeout: Option<Duration>,
    /// Require the bundle to be signed by the key in PUBKEYFILE (`cmdgraph keygen` writes
    /// `KEY.pub`); repeatable, any one of them will do. Without it a signature is optional
    /// (one that is present must still verify).
    #[arg(long = "trust", value_name = "PUBKEYFILE")]
    pub trust: Vec<PathBuf>,
    /// Show progress on stderr: `auto` (a terminal, once the work passes a second),
    /// `always` (one line per phase) or `never`.
    #[arg(long, value_name = "WHEN", default_value = "auto")]
    pub progress: crate::progress::When,
    /// Run the module's rank graphs (`@g.r0`, `@g.r1`, ...; docs/mpi.md) as N ranks in this
    /// process, one thread and one device context each, their communication nodes meeting
    /// in a simulated communicator. `{rank}` in an --input/--output file or --device is the
    /// rank.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64), conflicts_with_all = ["devices", "mpi"])]
    pub ranks: Option<u32>,
    /// Run as one rank of an MPI job (`mpiexec -n N cmdgraph run --mpi ...`): the graph of
    /// this process's rank, its communication nodes over MPI (needs a build with the `mpi`
    /// feature). `{rank}` in an --input/--output file or --device is the rank.
    #[arg(long, conflicts_with = "devices")]
    pub mpi: bool,
}

/// A `--timeout` value: seconds (fractions allowed), 0 for none.
fn parse_timeout(s: &str) -> Result<Duration, String> {
    let secs: f64 = s.parse().map_err(|_| format!("`{s}` is not a number of seconds"))?;
    Duration::try_from_secs_f64(secs).map_err(|_| format!("`{s}`: seconds must be 0 or more (0: no deadline)"))
}

/// Runs `cmdgraph run`.
pub fn run(args: &RunArgs) -> Outcome {
    let Some(path) = args.bundle.as_deref() else { return source::list_devices() };
    let me = ranks::start_mpi(args)?;
    let rank_path = me.as_ref().map(|m| m.bundle(path));
    let path = rank_path.as_deref().unwrap_or(path);
    let mut shown = crate::progress::Progress::new(args.progress);
    shown.update("reading the bundle", None);
    let mut input = io::read_input_bytes(path)?;
    let file = input.name.clone();
    if !input.bytes.starts_with(&cmdgraph_ir::bundle::MAGIC) {
        // Not a bundle: IR text given where a bundle goes is compiled (unless it must be
        // signed, which a bundle made here cannot be); anything else is the loader's error.
        if let Some(bytes) = source::compile_ir(path, &input, !args.trust.is_empty())? {
            input.bytes = bytes;
        }
    }
    let trusted_keys = if args.trust.is_empty() {
        None
    } else {
        Some(args.trust.iter().map(|p| super::keygen::read_public_key(p)).collect::<Result<Vec<_>, _>>()?)
    };
    let options = cmdgraph_executor::load::LoadOptions { trusted_keys };
    shown.update("checking the bundle", None);
    let loaded = cmdgraph_executor::load::load_bytes_with(&input.bytes, &options)
        .map_err(|e| super::inspect::load_error(&file, &input.bytes, &e))?;
    let module = loaded.module.clone();
    if args.ranks.is_some() || args.mpi {
        let job = ranks::Job { args, loaded: &loaded, module: &module, file: &file, options: &options };
        let done = match (args.ranks, me) {
            (Some(n), _) => ranks::in_process(&job, n),
            (None, Some(me)) => ranks::mpi(&job, me),
            (None, None) => Err(Failure::Rejected("error: --mpi: MPI did not start".into())),
        };
        return finish(done, &mut shown);
    }
    let graph = pick_graph(&module, args.graph.as_deref(), &file)?;
    let plan = steps::plan(&args.steps, &loaded, &graph, &options)?;
    let inputs = resolve_inputs(&module, &args.inputs, &file)?;
    let outputs = resolve_outputs(&module, &graph, &args.outputs, &file, true)?;
    let mut bound = Vec::new();
    for (b, layout) in &inputs {
        bound.push((b.name.clone(), read_data(&b.path, &format!("@{}", b.name), *layout)?));
    }
    let spans =
        module.graph_by_name(&graph).is_some_and(|h| cmdgraph_ir::placement::spans_devices(&module, &module.graphs[h]));
    let done = if spans {
        multi::check(&graph, &plan, &outputs)?;
        shown.update("creating the devices and pipelines", None);
        multi::on_devices(
            args,
            &input.bytes,
            &module,
            &graph,
            (&bound, &outputs),
            &plan,
            &context_options(args, DeviceChoice::Default),
        )
    } else {
        let device = args.device.as_deref().map_or(DeviceChoice::Default, DeviceChoice::parse);
        on_device(args, loaded, &module, &graph, (&bound, &outputs), &plan, &mut shown, device, None)
    };
    finish(done, &mut shown)
}

/// Writes the output files of a run that succeeded and prints its summary.
fn finish(done: Result<(String, Files), Failure>, shown: &mut crate::progress::Progress) -> Outcome {
    shown.finish();
    // `on_device` has dropped the executor and with it the Vulkan context, which keeps the
    // layer messages nobody took: on an error path they explain the error (the layer's "ID
    // has not been defined" behind a driver's ERROR_UNKNOWN), so they are printed with it.
    let (summary, files) = done.map_err(|f| with_layer_messages(f, take_unreported_messages()))?;
    for (path, bytes) in files {
        io::write_atomic(&path, &bytes)
            .map_err(|e| Failure::Io(format!("error: cannot write `{}`: {e}", path.display())))?;
    }
    io::write_output(None, &summary)
}

/// The output files to write, each with its bytes.
type Files = Vec<(PathBuf, Vec<u8>)>;

/// Everything that touches Vulkan: create the executor on `device`, bind, finalize, run,
/// read the outputs back. Communication nodes run through `comm`. Returns the summary for
/// stdout and the output files; fails when any step fails or the validation layer said
/// anything.
#[allow(clippy::too_many_arguments)]
fn on_device(
    args: &RunArgs,
    loaded: cmdgraph_executor::Loaded,
    module: &Module,
    graph: &str,
    (bound, outputs): (&[(String, Vec<u8>)], &[Output]),
    plan: &[steps::Planned],
    shown: &mut crate::progress::Progress,
    device: DeviceChoice,
    comm: Option<&cmdgraph_ir::comm::SharedCommunicator>,
) -> Result<(String, Files), Failure> {
    let opts = context_options(args, device);
    let fail = |e: ExecError| Failure::Rejected(format!("error: @{graph}: {e}"));
    shown.update("creating the device and pipelines", None);
    let mut ex = Executor::new(loaded, &opts).map_err(fail)?;
    if !ex.warnings().is_empty() {
        // The results may be wrong with exit 0 (llvmpipe's loop budget): said before running.
        shown.finish();
        for w in ex.warnings() {
            eprintln!("warning: {w}");
        }
    }
    shown.update("binding inputs", None);
    for (name, bytes) in bound {
        ex.bind(name, bytes).map_err(fail)?;
    }
    if let Some(comm) = comm {
        ex.set_communicator(comm);
    }
    let callbacks = host_callbacks(module);
    for name in &callbacks {
        ex.register_callback(name, |_| Ok(()));
    }
    if args.profile {
        // Per-node timestamps are recorded only when asked: they serialise a stage's commands.
        let options = cmdgraph_executor::RecordOptions { node_profiling: true, ..ex.record_options() };
        ex.set_record_options(options);
    }
    shown.update(&format!("finalize @{graph}"), None);
    let exec = ex.finalize(graph).map_err(fail)?;
    shown.update(&format!("{} run(s)", args.steps.total_runs()), None);
    let step_lines = steps::run_steps(&mut ex, exec, graph, plan)?;
    shown.update("waiting for the device", None);
    ex.wait(exec).map_err(fail)?;
    shown.update("reading outputs", None);
    if !callbacks.is_empty() {
        let list: Vec<String> = callbacks.iter().map(|c| format!("\"{c}\"")).collect();
        eprintln!("note: host tasks ran as no-ops: {}; cmdgraph run runs no host code", list.join(", "));
    }
    let profile = if args.profile { Some(ex.profile(exec).map_err(fail)?) } else { None };

    let mut summary = format!("graph @{graph}: {} run(s) on {}\n", args.steps.total_runs(), ex.context().device_name());
    summary.push_str(&step_lines);
    let mut files = Vec::new();
    for out in outputs {
        let b = &out.binding;
        let dev = module.graph_by_name(graph).map_or(0, |h| module.graphs[h].device);
        let bytes = match out.place {
            Place::Memory => ex.read(&b.name),
            Place::DeviceGlobal => ex.read_device_global(&b.name, dev),
            Place::Alloc => ex.read_alloc(exec, &b.name),
        }
        .map_err(fail)?;
        files.push(output_file(&mut summary, out, bytes));
    }
    if let Some(p) = &profile {
        summary.push_str(&profile_table(p));
        // How each conditional node ran on this device (docs/conditional.md, "Executor").
        for (node, path) in ex.conditional_paths(exec).map_err(fail)? {
            let _ = writeln!(summary, "conditional %{node}: {path}");
        }
        for (node, rounds) in ex.loop_rounds(exec).map_err(fail)? {
            let _ = writeln!(summary, "while %{node}: {rounds} round(s) in the last run");
        }
        // How each copy ran: the copy kernel or the copy command (docs/executor.md, "Copies").
        for (node, path) in ex.copy_paths(exec).map_err(fail)? {
            let _ = writeln!(summary, "copy %{node}: {path}");
        }
    }
    layer_rejection(ex.context().take_messages())?;
    Ok((summary, files))
}

/// Output `out` read as `bytes`: its summary line added to `summary`, and the file to write
/// (`.npy` or raw).
fn output_file(summary: &mut String, out: &Output, bytes: Vec<u8>) -> (PathBuf, Vec<u8>) {
    let (b, layout) = (&out.binding, out.layout);
    let _ = writeln!(
        summary,
        "output {} -> {}: {}, {}",
        out.shown(),
        b.path.display(),
        layout.describe(),
        data::checksum(&bytes, layout)
    );
    let bytes = if is_npy(&b.path) { data::to_npy(&bytes, layout) } else { bytes };
    (b.path.clone(), bytes)
}

/// A run the validation layer said anything about fails, writing no output file.
fn layer_rejection(messages: Vec<String>) -> Result<(), Failure> {
    if messages.is_empty() {
        return Ok(());
    }
    Err(Failure::Rejected(format!(
        "error: the validation layer reported {} message(s); no output file was written:\n{}",
        messages.len(),
        messages.join("\n")
    )))
}

/// The context options `--validation` and `--timeout` ask for, on `device`.
fn context_options(args: &RunArgs, device: DeviceChoice) -> ContextOptions {
    let timeout = match args.timeout {
        Some(t) if t.is_zero() => None,
        Some(t) => Some(t),
        None => ContextOptions::default().timeout,
    };
    ContextOptions { validation: args.validation, device, timeout }
}

/// `failure` with the validation layer's `messages` after it, so that an error that ends a
/// run never hides what the layer said (issue 18). Only exit-1 failures come from the device.
fn with_layer_messages(failure: Failure, messages: Vec<String>) -> Failure {
    match failure {
        Failure::Rejected(text) if !messages.is_empty() => Failure::Rejected(format!(
            "{text}\nthe validation layer reported {} message(s) before the run ended:\n{}",
            messages.len(),
            messages.join("\n")
        )),
        other => other,
    }
}

/// Every host-task callback name of the module (node commands and group alternatives).
fn host_callbacks(module: &Module) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (_, g) in module.graphs.iter() {
        for (_, n) in g.nodes.iter() {
            if let NodeKind::HostTask(c) = &n.kind {
                names.insert(c.callback.clone());
            }
        }
        for (_, d) in g.dcgs.iter() {
            for alt in &d.alternatives {
                if let Alternative::HostTask(c) = alt {
                    names.insert(c.callback.clone());
                }
            }
        }
    }
    names
}

/// The profile as a table: one row per node in schedule order, then the run; times in
/// microseconds relative to the run's device start, fixed column widths.
pub fn profile_table(p: &Profile) -> String {
    let mut t = String::from("profile of the last run (device time, microseconds from the run's start):\n");
    t.push_str(&profile_rows(p));
    t
}

/// The rows of [`profile_table`] under its heading, the last one `run` (a stage graph's, on
/// several devices).
pub fn profile_rows(p: &Profile) -> String {
    let us = |ns: u64| format!("{:.3}", ns as f64 / 1000.0);
    let width = p.nodes.iter().map(|n| n.node.len() + 1).chain([4]).max().unwrap_or(4);
    let mut t = String::new();
    let _ = writeln!(t, "  {:<width$}  {:>12}  {:>12}  {:>12}", "node", "start", "end", "duration");
    for n in &p.nodes {
        let _ = writeln!(
            t,
            "  {:<width$}  {:>12}  {:>12}  {:>12}",
            format!("%{}", n.node),
            us(n.start_ns.saturating_sub(p.start_ns)),
            us(n.end_ns.saturating_sub(p.start_ns)),
            us(n.duration_ns())
        );
    }
    let total = p.end_ns.saturating_sub(p.start_ns);
    let _ = writeln!(t, "  {:<width$}  {:>12}  {:>12}  {:>12}", "run", us(0), us(total), us(total));
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_keeps_the_layer_messages_after_it() {
        let messages = vec!["ERROR: the first".to_string(), "WARNING: the second".to_string()];
        let Failure::Rejected(text) =
            with_layer_messages(Failure::Rejected("error: @g: vulkan: ERROR_UNKNOWN".into()), messages)
        else {
            panic!("not a rejection");
        };
        assert_eq!(
            text,
            "error: @g: vulkan: ERROR_UNKNOWN\nthe validation layer reported 2 message(s) before the run ended:\n\
             ERROR: the first\nWARNING: the second"
        );
        let Failure::Rejected(text) = with_layer_messages(Failure::Rejected("error: x".into()), Vec::new()) else {
            panic!("not a rejection");
        };
        assert_eq!(text, "error: x");
    }
}
