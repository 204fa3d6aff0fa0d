//! `cmdgraph dot`: draw the graphs of a verified module as Graphviz DOT.

use crate::exit::{Failure, Outcome};
use crate::io;
use cmdgraph_ir::dot::{to_dot, DotOptions};
use std::path::PathBuf;

const EXAMPLES: &str = "\
Examples:
  cmdgraph dot app.cgir | dot -Tsvg > app.svg
  cmdgraph dot --verbose --graph main app.cgir -o main.dot
  cmdgraph dot - < app.cgir";

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
}

/// Runs `cmdgraph dot`.
pub fn run(args: &DotArgs) -> Outcome {
    let input = io::read_input(&args.input)?;
    let module = super::parse(&input)?;
    super::print_warnings(&super::verify(&input, &module)?);
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
    let opts = DotOptions { verbose: args.verbose, graph: args.graph.clone() };
    io::write_output(args.output.as_deref(), &to_dot(&module, &opts))
}
