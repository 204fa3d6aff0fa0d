//! `cmdgraph interp`: run a graph on the reference interpreter with data from files.
//!
//! The module is parsed and verified as `cmdgraph verify` does; each `--input` binds a
//! `usm` or `buffer` memory object from a raw or `.npy` file (the rest start zeroed); the
//! graph is finalized once and run `--runs` times; each `--output` is written atomically.
//! Host tasks and native commands run as no-op callbacks unless `--strict-host`. A summary
//! (nodes, work-items, a checksum per output, races) goes to stdout. docs/cli.md describes
//! the data formats and the summary.

mod compare;
pub(crate) mod data;
mod locate;
mod ranks;

use super::run::steps::{self, Resolved};
use super::run::Steps;
use crate::exit::{Failure, Outcome};
use crate::io;
use cmdgraph_interp::{
    Denormals, ExecId, FmaRounding, InterpError, Interpreter, Order, Race, RunOptions, SubgroupSize,
};
use cmdgraph_ir::graph::{Alternative, NodeKind};
use cmdgraph_ir::module::{MemoryKind, Module};
use data::Layout;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

const EXAMPLES: &str = "\
Examples:
  cmdgraph interp app.cgir --input x=x.npy --input y=y.bin --output z=z.npy
  cmdgraph interp app.cgir --graph main --races --seed 7 --runs 20
  cmdgraph interp app.cgir --output sum=sum.bin --strict-host
  cmdgraph interp app.cgir --output %tmp=tmp.npy    a graph allocation (async_malloc %tmp)
  cmdgraph interp app.cgir --input x=x.bin --compare y=vulkan-y.bin
                                 is vulkan-y.bin a result the IR allows? (names the rule)

Data files: `.npy` (NumPy, little-endian dtype of the element type, C order; vecN<T> has a
trailing dimension of N) or, with any other extension, the raw bytes of the memory object.";

/// `NAME=FILE` of `--input` / `--output`.
#[derive(Clone, Debug)]
pub struct Binding {
    /// The memory object, without `@`.
    pub name: String,
    /// The data file.
    pub path: PathBuf,
}

pub(crate) fn parse_binding(text: &str) -> Result<Binding, String> {
    let (name, path) = text.split_once('=').ok_or("expected NAME=FILE, e.g. x=x.npy")?;
    let name = name.strip_prefix('@').unwrap_or(name);
    if name.is_empty() {
        return Err("the memory object's name before `=` is empty".into());
    }
    if path.is_empty() {
        return Err("the file name after `=` is empty".into());
    }
    Ok(Binding { name: name.to_string(), path: PathBuf::from(path) })
}

/// Arguments of `cmdgraph interp`.
#[derive(clap::Args, Clone)]
#[command(after_help = EXAMPLES)]
pub struct InterpArgs {
    /// The module to run; `-` reads stdin.
    #[arg(value_name = "FILE", default_value = "-")]
    pub input: PathBuf,
    /// The graph to run (`main` or `@main`); needed when the module has several.
    #[arg(long, value_name = "NAME")]
    pub graph: Option<String>,
    /// Bind memory object NAME (usm or buffer) from FILE (.npy or raw bytes); repeatable.
    #[arg(long = "input", value_name = "NAME=FILE", value_parser = parse_binding)]
    pub inputs: Vec<Binding>,
    /// Write memory object NAME to FILE (.npy or raw bytes) after the runs; `%NAME` is the
    /// graph allocation of node `async_malloc %NAME` (one the graph does not free); repeatable.
    #[arg(long = "output", value_name = "NAME=FILE", value_parser = parse_binding)]
    pub outputs: Vec<Binding>,
    /// After the runs, compare FILE (.npy or raw bytes, e.g. what `cmdgraph run` wrote) with
    /// memory object NAME (or allocation %NAME) under the float precision rules of docs/ir.md
    /// (exact; `fma` rounded twice; a tolerance for math functions) and name the rule that
    /// matched; exit 1 if any object matches none. Repeatable.
    #[arg(long = "compare", value_name = "NAME=FILE", value_parser = parse_binding)]
    pub compares: Vec<Binding>,
    /// Check for data races between unordered nodes; exit 1 if any is found.
    #[arg(long)]
    pub races: bool,
    /// Accept data races the verifier finds between unordered commands (E0280): report
    /// them as warnings and run the graph (with --races, to see them happen).
    #[arg(long)]
    pub allow_races: bool,
    /// Run nodes in a random valid order from this seed (run i uses seed + i).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// The run steps, as `cmdgraph run` takes them: `--set` and `--activate` change the
    /// executable graph, `--runs N` runs it N times (memory carries over), `--then` starts
    /// the next step. (`--update-from` needs a bundle: `cmdgraph run`.)
    #[command(flatten)]
    pub steps: Steps,
    /// Make host tasks and native commands an error instead of running them as no-ops.
    #[arg(long)]
    pub strict_host: bool,
    /// Stop a run after this many kernel op executions (counted per work-item).
    #[arg(long, value_name = "N")]
    pub fuel: Option<u64>,
    /// Fail a `while` node after this many rounds with its condition still set (default
    /// 1048576; docs/conditional.md).
    #[arg(long, value_name = "N")]
    pub loop_rounds: Option<u64>,
    /// How `fma` rounds: `once` (the kernel language's fma) or `twice` (the product rounded,
    /// then the sum, as a conforming Vulkan device may compute it, e.g. llvmpipe).
    #[arg(long, value_name = "RULE", default_value = "once")]
    pub fma: FmaArg,
    /// Run the module's rank graphs (`@g.r0`, `@g.r1`, ...; docs/mpi.md) as N ranks, each with
    /// its own memory, their communication nodes matched as MPI matches them. `{rank}` in an
    /// --input/--output file is the rank.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64), conflicts_with_all = ["compares", "seed"])]
    pub ranks: Option<u32>,
    /// Lanes per subgroup the interpreter models (subgroup ops depend on it; docs/ir.md,
    /// "Subgroups"): a power of two from 1 to 128, or `device` for the subgroup size of the
    /// Vulkan device `cmdgraph run` picks by default. 8 is llvmpipe's.
    #[arg(long, value_name = "N|device", default_value = "8")]
    pub subgroup_size: String,
}

/// `--subgroup-size`: a number, or the default Vulkan device's size.
fn subgroup_size(arg: &str) -> Result<SubgroupSize, Failure> {
    let size = if arg == "device" {
        let ctx = cmdgraph_executor::vk::context::Context::new(&cmdgraph_executor::ContextOptions::default())
            .map_err(|e| Failure::Rejected(format!("error: --subgroup-size device: no Vulkan device to ask: {e}")))?;
        SubgroupSize(ctx.subgroup_size())
    } else {
        let n = arg.parse::<u32>().map_err(|_| {
            Failure::Rejected(format!(
                "error: --subgroup-size `{arg}`: expected a power of two from 1 to 128, or `device`"
            ))
        })?;
        SubgroupSize(n)
    };
    size.checked().map_err(|e| Failure::Rejected(format!("error: --subgroup-size: {e}")))?;
    Ok(size)
}

/// `--fma`: the interpreter's `FmaRounding`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FmaArg {
    /// `a*b + c` rounded once.
    Once,
    /// `a*b` rounded, then the sum rounded.
    Twice,
}

impl FmaArg {
    fn rounding(self) -> FmaRounding {
        match self {
            FmaArg::Once => FmaRounding::Once,
            FmaArg::Twice => FmaRounding::Twice,
        }
    }
}

/// Runs `cmdgraph interp`.
pub fn run(args: &InterpArgs) -> Outcome {
    let input = io::read_input(&args.input)?;
    let module = super::parse(&input)?;
    super::print_warnings(&super::verify_with(&input, &module, args.allow_races)?);
    if let Some(n) = args.ranks {
        return ranks::run(args, &input, &module, n);
    }
    let graph = pick_graph(&module, args.graph.as_deref(), &input.name)?;
    run_on(args, &input, &module, &graph, None)?.finish()
}

/// What one run of the command did: its summary, the files to write, the races found and
/// the compared objects no rule matched.
pub(crate) struct Done {
    pub summary: String,
    pub files: Vec<(PathBuf, Vec<u8>)>,
    races: usize,
    differ: Vec<String>,
    compared: usize,
}

impl Done {
    /// Writes the files (none when races were found) and the summary; the exit status.
    pub(crate) fn finish(self) -> Outcome {
        if self.races > 0 {
            io::write_output(None, &self.summary)?;
            let outputs = if self.files.is_empty() { "" } else { "; no output file was written" };
            return Err(Failure::Rejected(format!("error: {} data race(s) found{outputs}", self.races)));
        }
        for (path, file) in &self.files {
            io::write_atomic(path, file)
                .map_err(|e| Failure::Io(format!("error: cannot write `{}`: {e}", path.display())))?;
        }
        io::write_output(None, &self.summary)?;
        if self.differ.is_empty() {
            Ok(())
        } else {
            Err(Failure::Rejected(format!(
                "error: {} of {} compared object(s) match no rule of docs/ir.md \"Float precision\": {}",
                self.differ.len(),
                self.compared,
                self.differ.join(", ")
            )))
        }
    }
}

/// Runs `graph` of `module` as `args` say, its communication nodes through `comm` (one
/// rank of `--ranks`); nothing written yet.
pub(crate) fn run_on(
    args: &InterpArgs,
    input: &io::Input,
    module: &Module,
    graph: &str,
    comm: Option<&cmdgraph_ir::comm::SharedCommunicator>,
) -> Result<Done, Failure> {
    let graph = graph.to_string();
    if let Some(path) = args.steps.0.iter().find_map(|s| s.update_from.as_ref()) {
        return Err(Failure::Rejected(format!(
            "error: --update-from `{}`: a whole-graph update needs a compiled bundle and an executor; \
             use `cmdgraph run BUNDLE --update-from {}` (interp runs a module on the interpreter, \
             and takes --set, --activate, --runs and --then)",
            path.display(),
            path.display()
        )));
    }
    let plan = steps::resolve(module, &graph, &args.steps)?;
    let inputs = resolve_inputs(module, &args.inputs, &input.name)?;
    let outputs = resolve_outputs(module, &graph, &args.outputs, &input.name, false)?;
    let compares = resolve_outputs(module, &graph, &args.compares, &input.name, false)?;
    let fail = |e: InterpError| Failure::Rejected(locate::render(&e, module, &graph, input));

    let mut bound = Vec::new();
    for (b, layout) in &inputs {
        bound.push((b.name.as_str(), read_data(&b.path, &format!("@{}", b.name), *layout)?));
    }
    let mut expected = Vec::new();
    for c in &compares {
        expected.push(read_data(&c.binding.path, &c.shown(), c.layout)?);
    }
    let calls = Arc::new(Mutex::new(BTreeMap::new()));
    let subgroup = subgroup_size(&args.subgroup_size)?;
    let run = Execution { module, graph: &graph, args, plan: &plan, bound: &bound, subgroup, comm };
    let (mut interp, exec, ran) = run.execute(args.fma.rounding(), Some(&calls)).map_err(fail)?;
    note_no_ops(&calls.lock().unwrap_or_else(std::sync::PoisonError::into_inner));

    let device = module.graph_by_name(&graph).map_or(0, |h| module.graphs[h].device);
    let mut summary = summary_head(module, &graph, args, &ran, &inputs);
    let mut files = Vec::new();
    for out in &outputs {
        let bytes = read_output(&mut interp, exec, out, device).map_err(fail)?;
        summary.push_str(&format!(
            "output {} -> {}: {}, {}\n",
            out.shown(),
            out.binding.path.display(),
            out.layout.describe(),
            data::checksum(&bytes, out.layout)
        ));
        let file = if is_npy(&out.binding.path) { data::to_npy(&bytes, out.layout) } else { bytes };
        files.push((out.binding.path.clone(), file));
    }
    let differ = if compares.is_empty() {
        Vec::new()
    } else {
        compare_outputs(&run, (&mut interp, exec), &compares, &expected, &mut summary).map_err(fail)?
    };
    let races = ran.races.len();
    if !args.races {
        summary.push_str("races: not checked (use --races)\n");
    } else if ran.races.is_empty() {
        summary.push_str("races: none\n");
    } else {
        summary.push_str(&format!("races: {races} found\n"));
        for race in &ran.races {
            summary.push_str(&format!("  {race}\n"));
        }
    }
    Ok(Done { summary, files, races, differ, compared: compares.len() })
}

/// One way of running the graph: everything but the `fma` rounding, so that `--compare`
/// can run it again with `fma` rounded twice.
struct Execution<'a> {
    module: &'a Module,
    graph: &'a str,
    args: &'a InterpArgs,
    plan: &'a [Vec<Resolved>],
    bound: &'a [(&'a str, Vec<u8>)],
    /// `--subgroup-size`.
    subgroup: SubgroupSize,
    /// The communicator of this rank (`--ranks`).
    comm: Option<&'a cmdgraph_ir::comm::SharedCommunicator>,
}

/// Calls of each no-op host callback, for the note.
type Calls = Arc<Mutex<BTreeMap<String, u64>>>;

impl<'a> Execution<'a> {
    /// A fresh interpreter with the inputs bound (and, unless `--strict-host`, no-op host
    /// callbacks counting into `calls`), the graph finalized and its steps run.
    fn execute(&self, fma: FmaRounding, calls: Option<&Calls>) -> Result<(Interpreter, ExecId, Ran), InterpError> {
        self.execute_with(fma, Denormals::Preserve, calls)
    }

    /// [`Execution::execute`] with subnormals kept or flushed (`--compare`'s subnormal rule).
    fn execute_with(
        &self,
        fma: FmaRounding,
        denormals: Denormals,
        calls: Option<&Calls>,
    ) -> Result<(Interpreter, ExecId, Ran), InterpError> {
        let mut interp = Interpreter::new(self.module)?;
        for (name, bytes) in self.bound {
            interp.bind(name, bytes)?;
        }
        if !self.args.strict_host {
            let fresh = Arc::new(Mutex::new(BTreeMap::new()));
            register_no_ops(&mut interp, self.module, calls.unwrap_or(&fresh));
        }
        if let Some(comm) = self.comm {
            interp.set_communicator(comm);
        }
        let (exec, ran) = run_graph(&mut interp, self.graph, self.args, self.plan, (fma, denormals, self.subgroup))?;
        Ok((interp, exec, ran))
    }
}

/// `--compare`: each file against the interpreter's memory under the rules of
/// [`compare`], one summary line per object; returns the objects no rule matched. A module
/// with `fma` (run with `fma` once) is run a second time, with `fma` rounded twice.
fn compare_outputs(
    run: &Execution,
    (interp, exec): (&mut Interpreter, ExecId),
    compares: &[Output],
    expected: &[Vec<u8>],
    summary: &mut String,
) -> Result<Vec<String>, InterpError> {
    let rules = compare::Rules::of(run.module);
    let device = run.module.graph_by_name(run.graph).map_or(0, |h| run.module.graphs[h].device);
    let mut twice: Option<(Interpreter, ExecId)> = None;
    let mut flush: Option<(Interpreter, ExecId)> = None;
    let mut differ = Vec::new();
    for (c, got) in compares.iter().zip(expected) {
        let once = read_output(interp, exec, c, device)?;
        // Also when the file is exact: the line then says whether only a once-rounded `fma`
        // gives these bytes.
        let alt = if rules.fma && run.args.fma == FmaArg::Once {
            if twice.is_none() {
                let (t, e, _) = run.execute(FmaRounding::Twice, None)?;
                twice = Some((t, e));
            }
            match &mut twice {
                Some((t, e)) => Some(read_output(t, *e, c, device)?),
                None => None,
            }
        } else {
            None
        };
        // Subnormals flushed (fma as the first run): offered only where it changes the bytes.
        let flushed = if rules.f32_float {
            if flush.is_none() {
                let (t, e, _) = run.execute_with(run.args.fma.rounding(), Denormals::Flush, None)?;
                flush = Some((t, e));
            }
            match &mut flush {
                Some((t, e)) => Some(read_output(t, *e, c, device)?).filter(|f| *f != once),
                None => None,
            }
        } else {
            None
        };
        let shown = format!("compare {} with {}", c.shown(), c.binding.path.display());
        match compare::check_all(&rules, c.layout, got, &once, alt.as_deref(), flushed.as_deref()) {
            Ok(m) => summary.push_str(&format!("{shown}: match: {}\n", compare::describe(&rules, &m))),
            Err(why) => {
                summary.push_str(&format!("{shown}: MISMATCH: {why}\n"));
                differ.push(c.shown());
            }
        }
    }
    Ok(differ)
}

/// The bytes of one `--output`/`--compare` object after the runs.
fn read_output(interp: &mut Interpreter, exec: ExecId, out: &Output, device: u32) -> Result<Vec<u8>, InterpError> {
    let name = &out.binding.name;
    match out.place {
        Place::Memory => interp.read(name).map(<[u8]>::to_vec),
        Place::DeviceGlobal => interp.read_device_global(name, device),
        Place::Alloc => interp.read_alloc(exec, name),
    }
}

/// What the runs did: nodes and work-items of the last run, races of all runs (each once),
/// and a line per step when there are several (or a step changes the graph).
struct Ran {
    nodes: usize,
    work_items: u64,
    races: Vec<Race>,
    steps: String,
}

/// Finalizes `graph` and runs its steps (`plan`, the resolved `--set`/`--activate` of each
/// step, applied before the step's runs) with the order, race and fuel options; run `i`
/// over all steps uses seed + i.
fn run_graph(
    interp: &mut Interpreter,
    graph: &str,
    args: &InterpArgs,
    plan: &[Vec<Resolved>],
    (fma, denormals, subgroup_size): (FmaRounding, Denormals, SubgroupSize),
) -> Result<(ExecId, Ran), InterpError> {
    let exec = interp.finalize(graph)?;
    let mut ran = Ran { nodes: 0, work_items: 0, races: Vec::new(), steps: String::new() };
    let several = plan.len() > 1 || plan.iter().any(|a| !a.is_empty());
    let mut i = 0u64;
    for (n, (step, actions)) in args.steps.0.iter().zip(plan).enumerate() {
        for action in actions {
            match action {
                Resolved::Param { name, value, .. } => interp.update_param(exec, name, value.clone())?,
                Resolved::Active { name, index } => interp.set_active(exec, name, *index)?,
            }
        }
        for _ in 0..step.repeat {
            let order = args.seed.map_or(Order::Creation, |s| Order::Random(s.wrapping_add(i)));
            let opts = RunOptions {
                order,
                check_races: args.races,
                fuel: args.fuel,
                fma,
                denormals,
                subgroup_size,
                loop_rounds: args.loop_rounds,
            };
            let stats = interp.run_with(exec, &opts)?;
            (ran.nodes, ran.work_items) = (stats.order.len(), stats.work_items);
            for race in stats.races {
                if !ran.races.contains(&race) {
                    ran.races.push(race);
                }
            }
            i += 1;
        }
        if several {
            let did: Vec<String> = actions.iter().map(Resolved::describe).collect();
            ran.steps.push_str(&steps::step_line(n + 1, &did, step.repeat));
        }
    }
    Ok((exec, ran))
}

/// The summary's first lines: the graph, runs and order, and the memory that started zeroed.
fn summary_head(module: &Module, graph: &str, args: &InterpArgs, ran: &Ran, inputs: &[(Binding, Layout)]) -> String {
    let runs = args.steps.total_runs();
    let mut text = format!(
        "graph @{graph}: {runs} run(s) in {}; per run: {} node(s) run, {} work-item(s)\n",
        order_text(args.seed, runs),
        ran.nodes,
        ran.work_items
    );
    text.push_str(&ran.steps);
    let zeroed: Vec<String> = module
        .memories
        .iter()
        .filter(|(_, m)| !matches!(m.kind, MemoryKind::DeviceGlobal(_)))
        .filter(|(_, m)| !inputs.iter().any(|(b, _)| b.name == m.name))
        .map(|(_, m)| format!("@{}", m.name))
        .collect();
    if !zeroed.is_empty() {
        text.push_str(&format!("zeroed (no --input): {}\n", zeroed.join(", ")));
    }
    if args.fma == FmaArg::Twice {
        text.push_str("fma: rounded twice (the product, then the sum)\n");
    }
    text
}

/// The graph to run: `--graph`, or the module's only graph.
/// The graph ranks run (docs/mpi.md): `--graph g` runs `@g.rR` on rank R, or `@g` on every
/// rank when the module has no rank graphs of it; without `--graph`, the module's one group
/// of rank graphs, or its one graph.
pub(crate) fn pick_rank_base(module: &Module, wanted: Option<&str>, file: &str) -> Result<String, Failure> {
    let bases: BTreeSet<&str> =
        module.graphs.iter().filter_map(|(_, g)| cmdgraph_ir::comm::rank_of(&g.name).map(|(b, _)| b)).collect();
    match wanted {
        Some(name) => {
            let bare = name.strip_prefix('@').unwrap_or(name);
            if bases.contains(bare) {
                Ok(bare.to_string())
            } else {
                pick_graph(module, Some(bare), file)
            }
        }
        None if bases.len() == 1 => Ok(bases.into_iter().next().unwrap_or_default().to_string()),
        None if bases.is_empty() => pick_graph(module, None, file),
        None => Err(Failure::Rejected(format!(
            "error: `{file}` has rank graphs of {} graphs; choose one with --graph ({})",
            bases.len(),
            bases.iter().map(|b| format!("@{b}")).collect::<Vec<_>>().join(", ")
        ))),
    }
}

pub(crate) fn pick_graph(module: &Module, wanted: Option<&str>, file: &str) -> Result<String, Failure> {
    let names: Vec<String> = module.graphs.iter().map(|(_, g)| format!("@{}", g.name)).collect();
    let listed = if names.is_empty() { "none".to_string() } else { names.join(", ") };
    match wanted {
        Some(name) => {
            let bare = name.strip_prefix('@').unwrap_or(name);
            match module.graph_by_name(bare) {
                Some(_) => Ok(bare.to_string()),
                None => Err(Failure::Rejected(format!(
                    "error: `{file}` has no graph named `@{bare}` (its graphs: {listed})"
                ))),
            }
        }
        // Stage graphs (`@g.s0.d1`, made by `split-devices`) run as part of their graph.
        None => {
            let runnable: Vec<&str> = module
                .graphs
                .iter()
                .map(|(_, g)| g.name.as_str())
                .filter(|n| !cmdgraph_ir::placement::is_stage_graph(module, n))
                .collect();
            match runnable.as_slice() {
                [only] => Ok(only.to_string()),
                [] if names.is_empty() => Err(Failure::Rejected(format!("error: `{file}` has no graph to run"))),
                _ => Err(Failure::Rejected(format!(
                    "error: `{file}` has {} graphs; choose one with --graph (its graphs: {listed})",
                    runnable.len().max(names.len())
                ))),
            }
        }
    }
}

/// Finds memory object `name` for `--input`/`--output`, or says which names exist.
fn memory<'m>(module: &'m Module, name: &str, file: &str) -> Result<&'m cmdgraph_ir::MemoryObject, Failure> {
    match module.memory_by_name(name) {
        Some(h) => Ok(&module.memories[h]),
        None => {
            let names: Vec<String> = module.memories.iter().map(|(_, m)| format!("@{}", m.name)).collect();
            let listed = if names.is_empty() { "none".to_string() } else { names.join(", ") };
            Err(Failure::Rejected(format!(
                "error: `{file}` has no memory object named `@{name}` (its memory objects: {listed})"
            )))
        }
    }
}

pub(crate) fn resolve_inputs(
    module: &Module,
    inputs: &[Binding],
    file: &str,
) -> Result<Vec<(Binding, Layout)>, Failure> {
    let mut out: Vec<(Binding, Layout)> = Vec::new();
    for b in inputs {
        if b.name.starts_with('%') {
            return Err(Failure::Rejected(format!(
                "error: --input {}: a graph allocation cannot be bound (finalize makes it, zeroed or not; \
                 --output reads it after the runs); bind a usm or buffer memory object",
                b.name
            )));
        }
        let m = memory(module, &b.name, file)?;
        if matches!(m.kind, MemoryKind::DeviceGlobal(_)) {
            return Err(Failure::Rejected(format!(
                "error: --input @{}: a device_global starts from its initialiser and cannot be bound \
                 (only usm and buffer memory can)",
                b.name
            )));
        }
        if out.iter().any(|(seen, _)| seen.name == b.name) {
            return Err(Failure::Rejected(format!("error: --input names @{} twice", b.name)));
        }
        out.push((b.clone(), Layout { elem: m.elem, count: m.count }));
    }
    Ok(out)
}

/// Where an `--output` (or `--compare`) object lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// A `usm` or `buffer` memory object.
    Memory,
    /// A `device_global` (its instance on the graph's device).
    DeviceGlobal,
    /// A graph allocation: the memory of an `async_malloc` node of the graph run.
    Alloc,
}

/// An `--output` (or `--compare`) resolved against the module.
#[derive(Clone, Debug)]
pub(crate) struct Output {
    /// As given.
    pub binding: Binding,
    /// The object's element type and count.
    pub layout: Layout,
    /// Where it lives.
    pub place: Place,
}

impl Output {
    /// `@y`, or `%t` for an allocation.
    pub fn shown(&self) -> String {
        match self.place {
            Place::Alloc => self.binding.name.clone(),
            _ => format!("@{}", self.binding.name),
        }
    }
}

/// Resolves `--output`s (and `--compare`s) of graph `graph`: memory objects by name, and
/// `%NAME`, the allocation of node `async_malloc %NAME`. `bundle`: the module is a bundle's
/// optimized IR, whose allocations the passes may have renamed or removed.
pub(crate) fn resolve_outputs(
    module: &Module,
    graph: &str,
    outputs: &[Binding],
    file: &str,
    bundle: bool,
) -> Result<Vec<Output>, Failure> {
    let mut out = Vec::new();
    for b in outputs {
        if io::is_stdio(&b.path) {
            let shown = if b.name.starts_with('%') { b.name.clone() } else { format!("@{}", b.name) };
            return Err(Failure::Rejected(format!(
                "error: --output {shown}=-: outputs are binary and go to files, not stdout"
            )));
        }
        if let Some(node) = b.name.strip_prefix('%') {
            let layout = allocation(module, graph, node, file).map_err(|f| match f {
                Failure::Rejected(text) if bundle && !text.contains("async_free") => Failure::Rejected(format!(
                    "{text}\n  = note: a bundle runs its optimized IR (`cmdgraph inspect --ir optimized {file}` \
                     lists its nodes), where passes may have fused, renamed or removed the allocation; \
                     compile with --passes '' to keep the graph as written"
                )),
                other => other,
            })?;
            out.push(Output { binding: b.clone(), layout, place: Place::Alloc });
            continue;
        }
        let m = memory(module, &b.name, file)?;
        let place = if matches!(m.kind, MemoryKind::DeviceGlobal(_)) { Place::DeviceGlobal } else { Place::Memory };
        out.push(Output { binding: b.clone(), layout: Layout { elem: m.elem, count: m.count }, place });
    }
    Ok(out)
}

/// The layout of the allocation of node `async_malloc %node` of graph `graph`, or why it
/// cannot be read after a run: no such node, not an `async_malloc`, or freed in the graph
/// (an `async_free` ends its lifetime within every run, so nothing of it is live after).
fn allocation(module: &Module, graph: &str, node: &str, file: &str) -> Result<Layout, Failure> {
    let g = module
        .graph_by_name(graph)
        .and_then(|h| module.graphs.try_get(h))
        .ok_or_else(|| Failure::Rejected(format!("error: `{file}` has no graph named `@{graph}`")))?;
    let allocs: Vec<String> = g
        .nodes
        .iter()
        .filter(|(_, n)| matches!(n.kind, NodeKind::AsyncMalloc { .. }))
        .map(|(_, n)| format!("%{}", n.name))
        .collect();
    let listed = if allocs.is_empty() { "none".to_string() } else { allocs.join(", ") };
    let Some(h) = g.node_by_name(node) else {
        return Err(Failure::Rejected(format!(
            "error: --output %{node}: graph @{graph} of `{file}` has no node named %{node} \
             (its graph allocations: {listed})"
        )));
    };
    let NodeKind::AsyncMalloc { elem, count, .. } = g.nodes[h].kind else {
        return Err(Failure::Rejected(format!(
            "error: --output %{node}: node %{node} of @{graph} is a {} node, not an async_malloc; \
             `%NAME` names a graph allocation (its graph allocations: {listed})",
            g.node_type(h).name()
        )));
    };
    let free = g.nodes.iter().find(|(_, n)| matches!(n.kind, NodeKind::AsyncFree { alloc } if alloc == h));
    if let Some((_, f)) = free {
        return Err(Failure::Rejected(format!(
            "error: --output %{node}: the allocation %{node} is freed by node %{} (async_free) of @{graph}, \
             so it is not live when the run ends and its bytes may already hold other data; \
             remove the async_free, or copy %{node} into a usm object before it (memcpy) and output that",
            f.name
        )));
    }
    Ok(Layout { elem, count })
}

pub(crate) fn is_npy(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("npy"))
}

/// Reads a data file into the bytes of memory object `name` (`@x`, or `%t`). Unreadable files are I/O
/// errors (exit 3); files that do not fit the memory object reject the input (exit 1).
pub(crate) fn read_data(path: &Path, name: &str, layout: Layout) -> Result<Vec<u8>, Failure> {
    let io_err = |e: std::io::Error| Failure::Io(format!("error: cannot read `{}`: {e}", path.display()));
    let reject = |why: String| {
        Failure::Rejected(format!("error: cannot bind `{}` to {name} ({}): {why}", path.display(), layout.describe()))
    };
    let npy = is_npy(path);
    // An .npy header is at most 1 MiB plus its 12-byte preamble (npy::MAX_HEADER).
    let limit = layout.bytes().saturating_add(if npy { (1 << 20) + 12 } else { 0 });
    let file = File::open(path).map_err(io_err)?;
    let meta = file.metadata().map_err(io_err)?;
    if meta.is_dir() {
        return Err(io_err(std::io::Error::new(std::io::ErrorKind::IsADirectory, "it is a directory")));
    }
    let mut bytes = Vec::new();
    if meta.is_file() && meta.len() > limit {
        // Too large to fit: read only the head, for the .npy hint.
        let mut head = file.take(crate::npy::MAGIC.len() as u64);
        head.read_to_end(&mut bytes).map_err(io_err)?;
        if npy {
            let why = format!("it has {} bytes, more than an .npy file of {} can have", meta.len(), layout.describe());
            return Err(reject(why));
        }
        return Err(reject(raw_mismatch(meta.len(), &bytes, layout)));
    }
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes).map_err(io_err)?;
    if npy {
        return data::from_npy(&bytes, layout).map_err(reject);
    }
    if bytes.len() as u64 != layout.bytes() {
        return Err(reject(raw_mismatch(bytes.len() as u64, &bytes, layout)));
    }
    Ok(bytes)
}

/// Why a raw file of `len` bytes starting with `head` does not fit.
fn raw_mismatch(len: u64, head: &[u8], layout: Layout) -> String {
    let mut why = data::check_raw_len(len, layout).err().unwrap_or_default();
    if crate::npy::has_magic(head) {
        why.push_str("; it looks like an .npy file: give it the .npy extension");
    }
    why
}

/// Registers a callback for every host task and native command name of the module. The
/// CLI has no host code, so each one reads the memory it declared readable (and writes
/// `read_write` memory back unchanged) so that the race detector sees those accesses, and
/// counts its calls for the note.
fn register_no_ops(interp: &mut Interpreter, module: &Module, calls: &Arc<Mutex<BTreeMap<String, u64>>>) {
    let mut names = std::collections::BTreeSet::new();
    for (_, g) in module.graphs.iter() {
        for (_, n) in g.nodes.iter() {
            if let NodeKind::HostTask(c) | NodeKind::Native(c) = &n.kind {
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
    for name in names {
        let calls = Arc::clone(calls);
        let key = name.clone();
        interp.register_callback(&name, move |ctx| {
            if let Ok(mut calls) = calls.lock() {
                *calls.entry(key.clone()).or_insert(0) += 1;
            }
            for memory in ctx.declared() {
                match ctx.mode(&memory) {
                    Some(mode) if mode.reads() && mode.writes() => {
                        let bytes = ctx.read(&memory)?;
                        ctx.write(&memory, 0, &bytes)?;
                    }
                    Some(mode) if mode.reads() => {
                        ctx.read(&memory)?;
                    }
                    _ => {}
                }
            }
            Ok(())
        });
    }
}

/// Says on stderr which host callbacks ran as no-ops.
fn note_no_ops(calls: &BTreeMap<String, u64>) {
    if calls.is_empty() {
        return;
    }
    let list: Vec<String> = calls.iter().map(|(name, n)| format!("\"{name}\" ({n} call(s))")).collect();
    eprintln!(
        "note: host tasks and native commands ran as no-ops: {}; cmdgraph interp runs no host code \
         (--strict-host makes them an error)",
        list.join(", ")
    );
}

fn order_text(seed: Option<u64>, runs: u64) -> String {
    match seed {
        None => "creation order".to_string(),
        Some(s) if runs == 1 => format!("random order (seed {s})"),
        Some(s) => format!("random order (seeds {s} to {})", s.wrapping_add(runs - 1)),
    }
}
