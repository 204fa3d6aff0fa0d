//! `cmdgraph diff`: what changed between two modules, as text or a picture; or, with
//! `--update-check`, whether one graph can whole-graph-update the other's executable graph.

use crate::exit::{Failure, Outcome};
use crate::io::{self, Input};
use cmdgraph_ir::diff::update::{check_update, Sources};
use cmdgraph_ir::diff::{diff_modules, to_dot, DiffOptions};
use cmdgraph_ir::{Graph, Handle, Module};
use std::path::{Path, PathBuf};

const EXAMPLES: &str = "\
Examples:
  cmdgraph diff before.cgir after.cgir              what changed, exit 1 if anything did
  cmdgraph diff a.cgir b.cgir --graph main --dot d.dot && dot -Tsvg d.dot > d.svg
  cmdgraph diff --update-check exec.cgir source.cgir
                                                   can source.cgir whole-graph-update exec.cgir?
  cmdgraph diff app.cgb app.cgir                    a bundle on either side: the IR it carries
                                                   (its source; --bundle-ir optimized for the other)

Exit codes: 0 equal (or updatable), 1 different (or not updatable) or input rejected,
2 usage error, 3 I/O error.";

/// Arguments of `cmdgraph diff`.
#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct DiffArgs {
    /// The module before (with --update-check: the executable graph's): IR text or a bundle;
    /// `-` reads stdin.
    #[arg(value_name = "A")]
    pub before: PathBuf,
    /// The module after (with --update-check: the source graph's): IR text or a bundle; `-`
    /// reads stdin.
    #[arg(value_name = "B")]
    pub after: PathBuf,
    /// Compare only this graph (`main` or `@main`); with --update-check, the graph of each
    /// module to use (needed when a module has several).
    #[arg(long, value_name = "NAME")]
    pub graph: Option<String>,
    /// Also write a DOT picture of the diff to OUT (atomically); `-` writes it to stdout
    /// instead of the text report.
    #[arg(long, value_name = "OUT", conflicts_with = "update_check")]
    pub dot: Option<PathBuf>,
    /// Check whether B's graph can whole-graph-update the executable graph built from A's.
    #[arg(long)]
    pub update_check: bool,
    /// Data races between unordered commands (E0280) are warnings, as for `verify`.
    #[arg(long)]
    pub allow_races: bool,
    /// Which module a bundle given as A or B stands for: `source` (the module it was compiled
    /// from, what whole-graph update compares against) or `optimized` (after its passes).
    #[arg(long, value_name = "WHICH", default_value = "source")]
    pub bundle_ir: io::BundleIr,
}

/// Runs `cmdgraph diff`.
pub fn run(args: &DiffArgs) -> Outcome {
    if io::is_stdio(&args.before) && io::is_stdio(&args.after) {
        clap::Error::raw(clap::error::ErrorKind::ArgumentConflict, "A and B cannot both be `-` (stdin)\n").exit();
    }
    let (a, ma) = load(&args.before, args.allow_races, args.bundle_ir)?;
    let (b, mb) = load(&args.after, args.allow_races, args.bundle_ir)?;
    if args.update_check {
        return update_check(args, (&a, &ma), (&b, &mb));
    }
    if let Some(name) = &args.graph {
        graph_named(&a, &ma, name)?;
        graph_named(&b, &mb, name)?;
    }
    let diff = diff_modules(&ma, &mb, &DiffOptions { graph: args.graph.clone() });
    let dot_to_stdout = args.dot.as_deref().is_some_and(io::is_stdio);
    if let Some(out) = &args.dot {
        io::write_output(Some(out), &to_dot(&ma, &mb, &diff))?;
    }
    if !dot_to_stdout {
        io::write_output(None, &format!("--- {}\n+++ {}\n{diff}", a.name, b.name))?;
    }
    if diff.is_empty() {
        Ok(())
    } else {
        Err(Failure::Differ)
    }
}

/// Reads, parses and verifies one input (warnings are printed, errors reject it). A bundle
/// stands for the module `which` it carries, named `FILE (source IR)` in the report.
fn load(path: &Path, allow_races: bool, which: io::BundleIr) -> Result<(Input, Module), Failure> {
    let input = match io::read_text_or_bundle(path)? {
        io::Source::Text(input) => input,
        io::Source::Bundle(bytes) => {
            // The reader checks the format version and content hash; the IR inside is then
            // parsed and verified like any other input.
            let bundle = cmdgraph_ir::bundle::Bundle::from_bytes(&bytes.bytes)
                .map_err(|e| Failure::Rejected(format!("error: `{}`: {e}", bytes.name)))?;
            Input { name: format!("{} ({})", bytes.name, which.describe()), text: which.text(&bundle).to_string() }
        }
    };
    let module = super::parse(&input)?;
    super::print_warnings(&super::verify_with(&input, &module, allow_races)?);
    Ok((input, module))
}

fn graph_list(module: &Module) -> String {
    let known: Vec<String> = module.graphs.iter().map(|(_, g)| format!("@{}", g.name)).collect();
    if known.is_empty() {
        "none".to_string()
    } else {
        known.join(", ")
    }
}

/// The graph `name` of a module, or exit 1 listing its graphs.
fn graph_named(input: &Input, module: &Module, name: &str) -> Result<Handle<Graph>, Failure> {
    let bare = name.strip_prefix('@').unwrap_or(name);
    module.graph_by_name(bare).ok_or_else(|| {
        Failure::Rejected(format!(
            "error: `{}` has no graph named `@{bare}` (its graphs: {})",
            input.name,
            graph_list(module)
        ))
    })
}

/// `--graph NAME`, or the module's only graph.
fn pick_graph(input: &Input, module: &Module, name: Option<&str>) -> Result<Handle<Graph>, Failure> {
    if let Some(name) = name {
        return graph_named(input, module, name);
    }
    let mut graphs = module.graphs.handles();
    match (graphs.next(), graphs.next()) {
        (Some(only), None) => Ok(only),
        (None, _) => Err(Failure::Rejected(format!("error: `{}` has no graph", input.name))),
        _ => Err(Failure::Rejected(format!(
            "error: `{}` has {} graphs; choose one with --graph (its graphs: {})",
            input.name,
            module.graphs.len(),
            graph_list(module)
        ))),
    }
}

fn update_check(args: &DiffArgs, (a, ma): (&Input, &Module), (b, mb): (&Input, &Module)) -> Outcome {
    let ga = pick_graph(a, ma, args.graph.as_deref())?;
    let gb = pick_graph(b, mb, args.graph.as_deref())?;
    let check = check_update(ma, ga, mb, gb);
    let files = Sources { exec: (&a.name, &a.text), source: (&b.name, &b.text) };
    io::write_output(None, &check.render((ma, ga), (mb, gb), Some(&files)))?;
    match check.verdict {
        Ok(()) => Ok(()),
        Err(_) => Err(Failure::Differ),
    }
}
