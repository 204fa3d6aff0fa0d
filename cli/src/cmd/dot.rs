//! `cmdgraph dot`: draw the graphs of a verified module as Graphviz DOT.

use crate::exit::{Failure, Outcome};
use crate::io;
use cmdgraph_ir::diag::{render_all, Diagnostic, Severity};
use cmdgraph_ir::dot::{to_dot, DotOptions};
use cmdgraph_ir::Module;
use std::path::PathBuf;

const EXAMPLES: &str = "\
Examples:
  cmdgraph dot app.cgir | dot -Tsvg > app.svg
  cmdgraph dot --verbose --graph main app.cgir -o main.dot
  cmdgraph dot - < app.cgir
  cmdgraph dot --no-verify broken.cgir | dot -Tsvg > broken.svg   problems drawn in red";

/// Arguments of `cmdgraph dot`.
#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct DotArgs {
    /// The module to draw; `-` reads stdin.
    #[arg(value_name = "FILE", default_value = "-")]
    pub input: PathBuf,
    /// Label nodes with all their operands and edges with their provenance.
    #[arg(short, long)]
    pub verbose: bool,
    /// Draw only this graph (`main` or `@main`).
    #[arg(long, value_name = "NAME")]
    pub graph: Option<String>,
    /// Write to OUT instead of stdout; OUT is replaced only once the output is complete.
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Draw a module the verifier rejects: its diagnostics go to stderr and each problem is
    /// drawn in red on its node (or in a note at the top); exit 0 once drawn.
    #[arg(long)]
    pub no_verify: bool,
    /// Leave out the legend of node shapes and edge styles.
    #[arg(long)]
    pub no_legend: bool,
    /// Data races between unordered commands (E0280) are warnings, as for `verify`.
    #[arg(long)]
    pub allow_races: bool,
}

/// Runs `cmdgraph dot`.
pub fn run(args: &DotArgs) -> Outcome {
    let input = io::read_input(&args.input)?;
    let module = super::parse(&input)?;
    let mut opts =
        DotOptions { verbose: args.verbose, graph: args.graph.clone(), legend: !args.no_legend, ..Default::default() };
    if args.no_verify {
        if let Err(diagnostics) = cmdgraph_ir::verify::verify(&module) {
            eprint!("{}", render_all(&diagnostics, &input.name, &input.text));
            mark_problems(&module, &diagnostics, &input.text, &mut opts);
        }
    } else {
        super::print_warnings(&super::verify_with(&input, &module, args.allow_races)?);
    }
    if let Some(name) = &args.graph {
        let bare = name.strip_prefix('@').unwrap_or(name);
        if module.graph_by_name(bare).is_none() {
            let known: Vec<String> = module.graphs.iter().map(|(_, g)| format!("@{}", g.name)).collect();
            let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
            return Err(Failure::Rejected(format!(
                "error: `{}` has no graph named `@{bare}` (its graphs: {known})",
                input.name
            )));
        }
    }
    io::write_output(args.output.as_deref(), &to_dot(&module, &opts))
}

/// Puts each error on the node whose statement holds its location (by line and column in
/// the note, so a picture can be matched with the text), else in the notes.
fn mark_problems(module: &Module, diagnostics: &[Diagnostic], source: &str, opts: &mut DotOptions) {
    for d in diagnostics.iter().filter(|d| d.severity == Severity::Error) {
        let (line, col) = d.line_col(source);
        let text = format!("{} {line}:{col}: {}", d.code, d.message);
        let at = d.span.start;
        let node = module.graphs.iter().find_map(|(_, g)| {
            g.nodes.iter().find_map(|(h, n)| {
                let span = g.nodes.span(h);
                (span.is_defined() && span.start <= at && at < span.end.max(span.start + 1))
                    .then(|| (g.name.clone(), n.name.clone()))
            })
        });
        match node {
            Some(key) => opts.marks.entry(key).or_default().push(text),
            None => opts.notes.push(text),
        }
    }
}
