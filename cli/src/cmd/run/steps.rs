//! The run steps of `cmdgraph run`: `--update-from`, `--set` and `--activate` change the
//! executable graph between runs, `--runs` runs it, and `--then` starts the next step.
//!
//! clap's derive cannot group options by position, so [`Steps`] implements `Args` and
//! `FromArgMatches` by hand and orders the occurrences by their command-line indices. The
//! values are checked against the bundle's graph ([`resolve`]) before a device is touched,
//! so a misspelt parameter or a value of the wrong type costs no run.

use crate::exit::Failure;
use crate::io;
use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use cmdgraph_executor::load::LoadOptions;
use cmdgraph_executor::{ExecError, ExecId, Executor, Loaded};
use cmdgraph_ir::diff::update::check_update;
use cmdgraph_ir::graph::{Accessor, ArgValue, Graph, Pointer};
use cmdgraph_ir::suggest::closest as did_you_mean;
use cmdgraph_ir::types::{LitValue, Literal, ScalarType};
use cmdgraph_ir::{MemRef, MemoryKind, Module};
use std::fmt::Write as _;
use std::path::PathBuf;

/// One thing a step does before it runs, in the order written.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// `--set NAME=VALUE`: the value as written.
    Set { name: String, value: String },
    /// `--activate DCG=INDEX`.
    Activate { name: String, index: u32 },
}

/// One run step: an optional whole-graph update, then its actions, then `repeat` runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// `--update-from OTHER.cgb`, applied first.
    pub update_from: Option<PathBuf>,
    /// `--set` and `--activate`, in command-line order.
    pub actions: Vec<Action>,
    /// How many times the step runs the graph (`--runs`, default 1).
    pub repeat: u32,
}

impl Default for Step {
    fn default() -> Self {
        Step { update_from: None, actions: Vec::new(), repeat: 1 }
    }
}

/// The steps of one `cmdgraph run`, at least one.
#[derive(Clone, Debug, PartialEq)]
pub struct Steps(pub Vec<Step>);

impl Steps {
    /// Runs over all steps.
    pub fn total_runs(&self) -> u64 {
        self.0.iter().map(|s| u64::from(s.repeat)).sum()
    }
}

const SET: &str = "set";
const ACTIVATE: &str = "activate";
const UPDATE_FROM: &str = "update_from";
const REPEAT: &str = "repeat";
const THEN: &str = "then";

fn parse_set(text: &str) -> Result<(String, String), String> {
    let (name, value) = text.split_once('=').ok_or("expected NAME=VALUE, e.g. alpha=0.5 or src=@y")?;
    let name = name.trim().trim_start_matches('%');
    if name.is_empty() {
        return Err("the dynamic parameter's name before `=` is empty".into());
    }
    if value.trim().is_empty() {
        return Err("the value after `=` is empty".into());
    }
    Ok((name.to_string(), value.trim().to_string()))
}

fn parse_activate(text: &str) -> Result<(String, u32), String> {
    let (name, index) = text.split_once('=').ok_or("expected DCG=INDEX, e.g. act=1")?;
    let name = name.trim().trim_start_matches('%');
    if name.is_empty() {
        return Err("the dynamic command group's name before `=` is empty".into());
    }
    let index = index.trim().parse().map_err(|_| format!("`{index}` is not an alternative index (0, 1, ...)"))?;
    Ok((name.to_string(), index))
}

impl Args for Steps {
    fn augment_args(cmd: Command) -> Command {
        cmd.arg(
            Arg::new(SET)
                .long("set")
                .value_name("NAME=VALUE")
                .action(ArgAction::Append)
                .value_parser(parse_set)
                .help("Set dynamic parameter NAME before this step's runs: a scalar of its type, or `@mem` / `@mem + BYTES` for a pointer, `@buf` for an accessor; repeatable"),
        )
        .arg(
            Arg::new(ACTIVATE)
                .long("activate")
                .value_name("DCG=INDEX")
                .action(ArgAction::Append)
                .value_parser(parse_activate)
                .help("Make alternative INDEX of dynamic command group DCG active before this step's runs; repeatable"),
        )
        .arg(
            Arg::new(UPDATE_FROM)
                .long("update-from")
                .value_name("OTHER")
                .action(ArgAction::Append)
                .value_parser(clap::value_parser!(PathBuf))
                .help("Whole-graph update from the same-named graph of bundle OTHER before this step's --set/--activate; checked as `cmdgraph diff --update-check` does before the first run"),
        )
        .arg(
            Arg::new(REPEAT)
                .long("runs")
                // The spelling before `interp --runs` and `run` agreed on one (issue 20).
                .alias("repeat")
                .value_name("N")
                .action(ArgAction::Append)
                .value_parser(clap::value_parser!(u32).range(1..))
                .help("How many times this step runs the executable graph (default 1; memory carries over)"),
        )
        .arg(
            Arg::new(THEN)
                .long("then")
                .num_args(0)
                .default_missing_value("")
                .action(ArgAction::Append)
                .help("End this step and start the next: the options after it (--set, --activate, --update-from, --runs) belong to the next step"),
        )
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

/// One occurrence of a step option, for ordering by index.
enum Item {
    Set(String, String),
    Activate(String, u32),
    UpdateFrom(PathBuf),
    Repeat(u32),
    Then,
}

fn indexed<T: Clone + Send + Sync + 'static>(m: &ArgMatches, id: &str) -> Vec<(usize, T)> {
    match (m.indices_of(id), m.get_many::<T>(id)) {
        (Some(i), Some(v)) => i.zip(v.cloned()).collect(),
        _ => Vec::new(),
    }
}

fn usage(text: String) -> clap::Error {
    clap::Error::raw(clap::error::ErrorKind::ArgumentConflict, format!("{text}\n"))
}

impl FromArgMatches for Steps {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut items: Vec<(usize, Item)> = Vec::new();
        items.extend(indexed::<(String, String)>(m, SET).into_iter().map(|(i, (n, v))| (i, Item::Set(n, v))));
        items.extend(indexed::<(String, u32)>(m, ACTIVATE).into_iter().map(|(i, (n, x))| (i, Item::Activate(n, x))));
        items.extend(indexed::<PathBuf>(m, UPDATE_FROM).into_iter().map(|(i, p)| (i, Item::UpdateFrom(p))));
        items.extend(indexed::<u32>(m, REPEAT).into_iter().map(|(i, n)| (i, Item::Repeat(n))));
        items.extend(indexed::<String>(m, THEN).into_iter().map(|(i, _)| (i, Item::Then)));
        items.sort_by_key(|(i, _)| *i);
        let mut steps = vec![Step::default()];
        let mut repeat_seen = false;
        for (_, item) in items {
            let n = steps.len();
            let step = steps.last_mut().expect("there is always a step");
            match item {
                Item::Set(name, value) => step.actions.push(Action::Set { name, value }),
                Item::Activate(name, index) => step.actions.push(Action::Activate { name, index }),
                Item::UpdateFrom(p) => {
                    if step.update_from.is_some() {
                        return Err(usage(format!("step {n} has two --update-from; separate them with --then")));
                    }
                    step.update_from = Some(p);
                }
                Item::Repeat(r) => {
                    if repeat_seen {
                        return Err(usage(format!("step {n} has two --runs; separate steps with --then")));
                    }
                    repeat_seen = true;
                    step.repeat = r;
                }
                Item::Then => {
                    steps.push(Step::default());
                    repeat_seen = false;
                }
            }
        }
        Ok(Steps(steps))
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

/// A checked action: the value as the executor takes it.
#[derive(Clone, Debug, PartialEq)]
pub enum Resolved {
    /// `update_param(name, value)`.
    Param { name: String, value: ArgValue, text: String },
    /// `set_active(name, index)`.
    Active { name: String, index: u32 },
}

impl Resolved {
    /// What the action does, as a step's summary line says it: `set %k = 3 : u32`.
    pub fn describe(&self) -> String {
        match self {
            Resolved::Param { name, text, .. } => format!("set %{name} = {text}"),
            Resolved::Active { name, index } => format!("activate %{name} = {index}"),
        }
    }
}

/// The summary line of step `n` (from 1): what it did (`did`), then how many runs.
pub fn step_line(n: usize, did: &[String], repeat: u32) -> String {
    let done = if did.is_empty() { String::new() } else { format!("{}; ", did.join(", ")) };
    format!("step {n}: {done}{repeat} run(s)\n")
}

/// `unknown` with a suggestion and the list of what exists.
fn unknown(what: &str, name: &str, graph: &str, known: &[&str], option: &str) -> Failure {
    let mut text = format!("error: {option}: @{graph} has no {what} %{name}");
    if let Some(s) = did_you_mean(name, known.iter().copied()) {
        let _ = write!(text, "; did you mean %{s}?");
    }
    let list: Vec<String> = known.iter().map(|k| format!("%{k}")).collect();
    let list = if list.is_empty() { "none".to_string() } else { list.join(", ") };
    let _ = write!(text, " (its {what}s: {list})");
    Failure::Rejected(text)
}

/// Checks every action of `steps` against graph `graph` of `module` (the bundle's optimized
/// module, the one the executable runs) and parses `--set` values by the parameter's type.
pub fn resolve(module: &Module, graph: &str, steps: &Steps) -> Result<Vec<Vec<Resolved>>, Failure> {
    let g = module
        .graph_by_name(graph)
        .map(|h| &module.graphs[h])
        .ok_or_else(|| Failure::Rejected(format!("error: the bundle has no graph @{graph}")))?;
    let params: Vec<&str> = g.dyn_params.iter().map(|(_, p)| p.name.as_str()).collect();
    let dcgs: Vec<&str> = g.dcgs.iter().map(|(_, d)| d.name.as_str()).collect();
    let mut out = Vec::new();
    for step in &steps.0 {
        let mut resolved = Vec::new();
        for action in &step.actions {
            resolved.push(match action {
                Action::Set { name, value } => {
                    let option = format!("--set {name}={value}");
                    let Some((_, p)) = g.dyn_params.iter().find(|(_, p)| p.name == *name) else {
                        return Err(unknown("dynamic parameter", name, graph, &params, &option));
                    };
                    let parsed = parse_value(module, g, &p.value, value).map_err(|why| {
                        Failure::Rejected(format!("error: {option}: %{name} is {}; {why}", describe(module, &p.value)))
                    })?;
                    Resolved::Param { name: name.clone(), text: value_text(module, &parsed), value: parsed }
                }
                Action::Activate { name, index } => {
                    let option = format!("--activate {name}={index}");
                    let Some((_, d)) = g.dcgs.iter().find(|(_, d)| d.name == *name) else {
                        return Err(unknown("dynamic command group", name, graph, &dcgs, &option));
                    };
                    if *index as usize >= d.alternatives.len() {
                        return Err(Failure::Rejected(format!(
                            "error: {option}: %{name} has {} alternative(s), numbered 0 to {}",
                            d.alternatives.len(),
                            d.alternatives.len().saturating_sub(1)
                        )));
                    }
                    Resolved::Active { name: name.clone(), index: *index }
                }
            });
        }
        out.push(resolved);
    }
    Ok(out)
}

/// A step ready to run: the update's bundle loaded, the actions checked.
pub struct Planned {
    /// How many runs.
    pub repeat: u32,
    /// `--update-from`: the file's name and its bundle.
    pub update: Option<(String, Loaded)>,
    /// `--set` and `--activate`, in order.
    pub actions: Vec<Resolved>,
}

/// Checks every step before a device is touched: the actions against graph `graph` of the
/// bundle (`loaded`), and each `--update-from` bundle (loaded with the same `--trust` keys;
/// its source must have a graph `graph`, and the update must pass
/// [`check_update`], the check `cmdgraph diff --update-check` makes, so that the two always
/// give the same answer). The executor checks again when the step comes and alone sees a
/// node the optimizer transformed (docs/executor.md, "Updates").
pub fn plan(steps: &Steps, loaded: &Loaded, graph: &str, options: &LoadOptions) -> Result<Vec<Planned>, Failure> {
    let resolved = resolve(&loaded.module, graph, steps)?;
    let mut out = Vec::new();
    for (n, (step, actions)) in steps.0.iter().zip(resolved).enumerate() {
        let update = match &step.update_from {
            None => None,
            Some(path) => {
                let input = io::read_input_bytes(path)?;
                let name = input.name.clone();
                let reject = |e: ExecError| Failure::Rejected(format!("error: --update-from `{name}`: {e}"));
                let other = cmdgraph_executor::load::load_bytes_with(&input.bytes, options).map_err(reject)?;
                let source = other.source().map_err(reject)?;
                if source.graph_by_name(graph).is_none() {
                    let known: Vec<String> = source.graphs.iter().map(|(_, g)| format!("@{}", g.name)).collect();
                    return Err(Failure::Rejected(format!(
                        "error: --update-from `{name}`: it has no graph @{graph} to update @{graph} from (its graphs: {})",
                        if known.is_empty() { "none".to_string() } else { known.join(", ") }
                    )));
                }
                let own = loaded.source().map_err(|e| Failure::Rejected(format!("error: the bundle: {e}")))?;
                let (Some(eg), Some(sg)) = (own.graph_by_name(graph), source.graph_by_name(graph)) else {
                    return Err(Failure::Rejected(format!("error: the bundle's source has no graph @{graph}")));
                };
                let check = check_update(own, eg, source, sg);
                if check.verdict.is_err() {
                    let report = check.render((own, eg), (source, sg), None);
                    let report = report.strip_prefix("error: ").unwrap_or(&report);
                    return Err(Failure::Rejected(format!(
                        "error: step {}: --update-from `{name}` (checked before the first run): {}",
                        n + 1,
                        report.trim_end()
                    )));
                }
                Some((input.name, other))
            }
        };
        out.push(Planned { repeat: step.repeat, update, actions });
    }
    Ok(out)
}

/// Runs the planned steps on executable `exec`: each step's update, then its actions, then
/// its runs (an update waits for the runs before it, so it reaches only later runs).
/// Returns one summary line per step when there is more than the plain single run.
pub fn run_steps(ex: &mut Executor, exec: ExecId, graph: &str, plan: &[Planned]) -> Result<String, Failure> {
    let several = plan.len() > 1 || plan.iter().any(|p| p.update.is_some() || !p.actions.is_empty());
    let mut lines = String::new();
    for (i, step) in plan.iter().enumerate() {
        let n = i + 1;
        let at =
            |what: String| move |e: ExecError| Failure::Rejected(format!("error: @{graph}: step {n}: {what}: {e}"));
        let mut did = Vec::new();
        if let Some((name, other)) = &step.update {
            let what = format!("--update-from `{name}`");
            let source = other.source().map_err(at(what.clone()))?;
            ex.update_graph(exec, source, graph).map_err(at(what))?;
            did.push(format!("update from `{name}`"));
        }
        for action in &step.actions {
            match action {
                Resolved::Param { name, value, .. } => {
                    ex.update_param(exec, name, value.clone()).map_err(at(format!("--set {name}")))?
                }
                Resolved::Active { name, index } => {
                    ex.set_active(exec, name, *index).map_err(at(format!("--activate {name}={index}")))?
                }
            }
            did.push(action.describe());
        }
        for _ in 0..step.repeat {
            ex.run(exec).map_err(|e| Failure::Rejected(format!("error: @{graph}: step {n}: {e}")))?;
        }
        if several {
            lines.push_str(&step_line(n, &did, step.repeat));
        }
    }
    Ok(lines)
}

/// What kind of value a parameter takes, in words, with how to write one.
fn describe(module: &Module, value: &ArgValue) -> String {
    match value {
        ArgValue::Scalar(lit) => match lit.ty {
            Some(ty) => format!("a {ty} scalar"),
            None => "a scalar".into(),
        },
        ArgValue::Pointer(p) => {
            let mem = memory_name(module, p.base).map(|n| format!(", now @{n} + {}", p.offset)).unwrap_or_default();
            format!("a pointer (give usm memory: `@x` or `@x + BYTES`{mem})")
        }
        ArgValue::Accessor(_) => "an accessor (give a buffer: `@b`)".into(),
        ArgValue::Bytes(b) => format!("{} raw byte(s)", b.len()),
        ArgValue::Local { elem, count } => format!("work-group memory of {count} {elem}"),
    }
}

fn memory_name(module: &Module, m: MemRef) -> Option<&str> {
    match m {
        MemRef::Memory(h) => module.memories.try_get(h).map(|m| m.name.as_str()),
        MemRef::Alloc(_) => None,
    }
}

/// The value as IR text, for the step summary.
fn value_text(module: &Module, v: &ArgValue) -> String {
    match v {
        ArgValue::Scalar(lit) => match (lit.value, lit.ty) {
            (LitValue::Float(f), Some(ty)) => format!("{f:?} : {ty}"),
            (LitValue::Int(i), Some(ty)) => format!("{i} : {ty}"),
            (LitValue::Bool(b), _) => b.to_string(),
            (LitValue::Float(f), None) => format!("{f:?}"),
            (LitValue::Int(i), None) => i.to_string(),
        },
        ArgValue::Pointer(p) => format!("@{} + {}", memory_name(module, p.base).unwrap_or("?"), p.offset),
        ArgValue::Accessor(a) => format!("acc(@{}, {})", memory_name(module, a.buffer).unwrap_or("?"), a.mode),
        _ => "?".into(),
    }
}

fn parse_int(text: &str) -> Option<i128> {
    let (neg, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let v = match digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        Some(hex) => i128::from_str_radix(hex, 16).ok()?,
        None => digits.parse::<i128>().ok()?,
    };
    Some(if neg { -v } else { v })
}

/// Digits (decimal or 0x hex, with an optional `-`) too many for any integer type.
fn is_integer_text(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    match digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        Some(hex) => !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit()),
        None => !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()),
    }
}

/// Why integer `text` cannot be a `ty`: its range.
fn out_of_range(text: &str, ty: ScalarType) -> String {
    let range = match ty.int_range() {
        Some((lo, hi)) => format!("{lo} to {hi}"),
        // Integers written for a float parameter must be exact in f64.
        None => format!("integers up to 2^53 in magnitude; write larger {ty} values with an exponent"),
    };
    format!("`{text}` does not fit in {ty} ({range})")
}

/// Refuses a float `text` (parsed as `v`) that `ty` cannot hold: a finite value past the
/// type's largest (it would become infinity) or a nonzero one below its smallest (it would
/// become zero). `inf` and `nan` written as such are taken as meant.
fn representable_float(text: &str, v: f64, ty: ScalarType) -> Result<(), String> {
    let (rounded, max, min) = match ty {
        ScalarType::F16 => {
            let h = cmdgraph_ir::data::f16_from_f64(v).to_f64();
            (h, "65504", "6e-8")
        }
        ScalarType::F64 => (v, "1.7976931348623157e308", "5e-324"),
        _ => (f64::from(v as f32), "3.4028235e38", "1e-45"),
    };
    let written_infinite = text.trim_start_matches(['-', '+']).to_ascii_lowercase().starts_with("inf");
    if rounded.is_infinite() && !written_infinite {
        return Err(format!(
            "`{text}` is out of range for {ty}: it would become infinity (the largest finite {ty} is {max}); \
             write `inf` if infinity is meant"
        ));
    }
    if v != 0.0 && rounded == 0.0 {
        return Err(format!(
            "`{text}` is too small for {ty}: it would become 0 (the smallest nonzero {ty} is about {min})"
        ));
    }
    Ok(())
}

/// `text` as a value of the kind `old` is, or why not.
fn parse_value(module: &Module, g: &Graph, old: &ArgValue, text: &str) -> Result<ArgValue, String> {
    let _ = g;
    match old {
        ArgValue::Scalar(lit) => {
            // A parameter written without a type takes the kind of its literal.
            let ty = lit.ty.unwrap_or(match lit.value {
                LitValue::Bool(_) => ScalarType::Bool,
                LitValue::Int(_) => ScalarType::I32,
                LitValue::Float(_) => ScalarType::F32,
            });
            let value = match ty {
                ScalarType::Bool => match text {
                    "true" => LitValue::Bool(true),
                    "false" => LitValue::Bool(false),
                    _ => return Err(format!("`{text}` is not `true` or `false`")),
                },
                t if t.is_float() => match parse_int(text) {
                    Some(i) => LitValue::Float(i as f64),
                    None => LitValue::Float(
                        text.parse::<f64>()
                            .map_err(|_| format!("`{text}` is not a {t} number (e.g. 0.5, -2, 1e-3)"))?,
                    ),
                },
                t => match parse_int(text) {
                    Some(i) => LitValue::Int(i),
                    None if is_integer_text(text) => return Err(out_of_range(text, t)),
                    None => return Err(format!("`{text}` is not an integer (decimal or 0x hex) for {t}")),
                },
            };
            if let LitValue::Float(v) = value {
                representable_float(text, v, ty)?;
            }
            if !Literal::fits(value, ty) {
                return Err(out_of_range(text, ty));
            }
            Ok(ArgValue::Scalar(Literal { value, ty: Some(ty) }))
        }
        ArgValue::Pointer(_) => {
            let (name, offset) = match text.split_once('+') {
                Some((n, o)) => {
                    let o = o.trim();
                    let offset = parse_int(o)
                        .and_then(|v| u64::try_from(v).ok())
                        .ok_or_else(|| format!("`{o}` is not a byte offset (0 or more)"))?;
                    (n.trim(), offset)
                }
                None => (text.trim(), 0),
            };
            let h = memory(module, name, |k| matches!(k, MemoryKind::Usm(_)), "usm memory")?;
            let size = module.memories[h].size_bytes();
            if offset > size {
                return Err(format!("offset {offset} is past the end of @{} ({size} bytes)", module.memories[h].name));
            }
            Ok(ArgValue::Pointer(Pointer { base: MemRef::Memory(h), offset }))
        }
        ArgValue::Accessor(a) => {
            let h = memory(module, text.trim(), |k| matches!(k, MemoryKind::Buffer), "buffer")?;
            Ok(ArgValue::Accessor(Accessor { buffer: MemRef::Memory(h), mode: a.mode, range: None }))
        }
        ArgValue::Bytes(_) | ArgValue::Local { .. } => {
            Err("only scalar, pointer and accessor parameters can be set from the command line".into())
        }
    }
}

/// Memory object `text` (`@x` or `x`) of the kind `ok` accepts.
fn memory(
    module: &Module,
    text: &str,
    ok: impl Fn(&MemoryKind) -> bool,
    what: &str,
) -> Result<cmdgraph_ir::Handle<cmdgraph_ir::MemoryObject>, String> {
    let known: Vec<&str> = module.memories.iter().filter(|(_, m)| ok(&m.kind)).map(|(_, m)| m.name.as_str()).collect();
    let list = || {
        let l: Vec<String> = known.iter().map(|k| format!("@{k}")).collect();
        if l.is_empty() {
            "none".to_string()
        } else {
            l.join(", ")
        }
    };
    let Some(name) = text.strip_prefix('@') else {
        return Err(format!("`{text}` is not a memory name; write `@name` ({what}: {})", list()));
    };
    match module.memory_by_name(name) {
        Some(h) if ok(&module.memories[h].kind) => Ok(h),
        Some(_) => Err(format!("@{name} is not {what} ({what}: {})", list())),
        None => {
            let hint =
                did_you_mean(name, known.iter().copied()).map(|s| format!("; did you mean @{s}?")).unwrap_or_default();
            Err(format!("the bundle has no memory @{name}{hint} ({what}: {})", list()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(args: &[&str]) -> Result<Steps, clap::Error> {
        let cmd = Steps::augment_args(Command::new("run"));
        let m = cmd.try_get_matches_from(std::iter::once("run").chain(args.iter().copied()))?;
        Steps::from_arg_matches(&m)
    }

    #[test]
    fn then_separates_steps_in_command_line_order() {
        let s =
            steps(&["--runs", "3", "--set", "a=1", "--then", "--activate", "d=1", "--set", "a=2", "--then"]).unwrap();
        assert_eq!(s.0.len(), 3);
        assert_eq!(s.0[0].repeat, 3);
        assert_eq!(s.0[0].actions, vec![Action::Set { name: "a".into(), value: "1".into() }]);
        assert_eq!(
            s.0[1].actions,
            vec![Action::Activate { name: "d".into(), index: 1 }, Action::Set { name: "a".into(), value: "2".into() }]
        );
        assert_eq!((s.0[1].repeat, s.0[2].repeat), (1, 1));
        assert_eq!(s.total_runs(), 5);
        assert_eq!(steps(&[]).unwrap().0, vec![Step::default()]);
    }

    #[test]
    fn two_repeats_in_one_step_are_a_usage_error() {
        assert!(steps(&["--runs", "2", "--runs", "3"]).is_err());
        assert!(steps(&["--runs", "2", "--then", "--runs", "3"]).is_ok());
        assert!(steps(&["--set", "novalue"]).is_err());
    }

    #[test]
    fn suggestions_find_near_names() {
        assert_eq!(did_you_mean("alpah", ["alpha", "src"]), Some("alpha"));
        assert_eq!(did_you_mean("zzzzzz", ["alpha", "src"]), None);
    }
}
