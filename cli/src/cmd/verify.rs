//! `cmdgraph verify`: parse and verify, then check external SPIR-V kernels as `compile`
//! does (the file read beside the module, spirv-val, its interface against the signature,
//! launch sizes: E0501–E0504); silent on success unless `-v`.

use crate::exit::Outcome;
use crate::io;
use std::path::PathBuf;

const EXAMPLES: &str = "\
Examples:
  cmdgraph verify app.cgir              diagnostics on stderr, exit 1 if rejected
  cmdgraph verify -v app.cgir           also a one-line summary on success
  cmdgraph verify --no-external x.cgir  the text alone, without reading external .spv files
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
    /// Do not read external SPIR-V kernel files: check the module text alone (the file
    /// checks, E0501–E0504, are then left to `compile`).
    #[arg(long)]
    pub no_external: bool,
}

/// Runs `cmdgraph verify`.
pub fn run(args: &VerifyArgs) -> Outcome {
    let input = io::read_input(&args.input)?;
    let module = super::parse(&input)?;
    super::print_warnings(&super::verify_with(&input, &module, args.allow_races)?);
    // A module whose `.spv` is missing or does not match its signature cannot compile:
    // verify says so now rather than `compile` later (issue 28).
    if !args.no_external {
        super::compile::externals(&args.input, &input, &module)?;
    }
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
