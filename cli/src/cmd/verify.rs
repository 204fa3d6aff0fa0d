//! `cmdgraph verify`: parse and verify; silent on success unless `-v`.

use crate::exit::Outcome;
use crate::io;
use std::path::PathBuf;

const EXAMPLES: &str = "\
Examples:
  cmdgraph verify app.cgir              diagnostics on stderr, exit 1 if rejected
  cmdgraph verify -v app.cgir           also a one-line summary on success
  generate-graph | cmdgraph verify -";

/// Arguments of `cmdgraph verify`.
#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct VerifyArgs {
    /// The module to verify; `-` reads stdin.
    #[arg(value_name = "FILE", default_value = "-")]
    pub input: PathBuf,
    /// On success, print a one-line summary to stdout.
    #[arg(short, long)]
    pub verbose: bool,
    /// Accept data races between unordered commands (E0280): report them as warnings.
    #[arg(long)]
    pub allow_races: bool,
}

/// Runs `cmdgraph verify`.
pub fn run(args: &VerifyArgs) -> Outcome {
    let input = io::read_input(&args.input)?;
    let module = super::parse(&input)?;
    super::print_warnings(&super::verify_with(&input, &module, args.allow_races)?);
    // Accepted, but likely not meant (W0290: `updatable` with graph-owned allocations).
    super::print_warnings(&cmdgraph_ir::diag::render_all(
        &cmdgraph_ir::verify::warnings(&module),
        &input.name,
        &input.text,
    ));
    if args.verbose {
        let graphs = module.graphs.len();
        let nodes: usize = module.graphs.iter().map(|(_, g)| g.nodes.len()).sum();
        let edges: usize = module.graphs.iter().map(|(_, g)| g.edges.len()).sum();
        let summary = format!(
            "{}: ok: {} kernel(s), {} memory object(s), {graphs} graph(s), {nodes} node(s), {edges} edge(s)\n",
            input.name,
            module.kernels.len(),
            module.memories.len(),
        );
        io::write_output(None, &summary)?;
    }
    Ok(())
}
