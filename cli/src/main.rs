//! The `cmdgraph` command-line tool: format, verify, draw, interpret, optimize, diff and compile command-graph IR (`.cgir`).
//!
//! Exit codes (docs/cli.md): 0 success, 1 input rejected (diagnostics, `fmt --check`
//! mismatch, `diff` found differences), 2 usage error (from clap), 3 I/O error, 4 internal
//! compiler error.

mod cmd;
mod exit;
mod io;
mod npy;
mod progress;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

const EXAMPLES: &str = "\
Examples:
  cmdgraph verify app.cgir                 check a module, diagnostics on stderr
  cmdgraph fmt app.cgir -o app.cgir        rewrite a file in canonical form
  cmdgraph fmt --check app.cgir            exit 1 if app.cgir is not canonical
  cmdgraph dot app.cgir | dot -Tsvg > app.svg
  cat app.cgir | cmdgraph dot --verbose --graph main -
  cmdgraph interp app.cgir --input x=x.npy --output y=y.npy --races
  cmdgraph opt --passes=inline-subgraphs,dead-node-elimination app.cgir
  cmdgraph diff before.cgir after.cgir --dot diff.dot
  cmdgraph diff --update-check exec.cgir source.cgir
  cmdgraph compile app.cgir -o app.cgb && cmdgraph inspect app.cgb
  cmdgraph compile --emit=spirv-asm --kernel saxpy app.cgir
  cmdgraph run app.cgb --input x=x.npy --output y=y.npy --profile
  cmdgraph keygen release.key && cmdgraph compile --sign release.key app.cgir
  cmdgraph run --trust release.key.pub app.cgb

Exit codes: 0 ok, 1 input rejected, 2 usage error, 3 I/O error, 4 internal compiler error (a cmdgraph bug: please report it with the input).";

/// Format, verify, draw and run SYCL command graphs written in the cmdgraph IR (`.cgir`).
#[derive(Parser)]
#[command(name = "cmdgraph", version, after_help = EXAMPLES, arg_required_else_help = true)]
struct Cli {
    /// Colour diagnostics: `auto` when stderr is a terminal and `NO_COLOR` is unset.
    #[arg(long, global = true, value_enum, default_value_t = ColorWhen::Auto, value_name = "WHEN")]
    color: ColorWhen,
    #[command(subcommand)]
    command: Command,
}

/// `--color`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum ColorWhen {
    /// Colour when stderr is a terminal and `NO_COLOR` is not set.
    Auto,
    /// Always colour (ANSI escapes), e.g. for a pager that shows them.
    Always,
    /// Never colour.
    Never,
}

#[derive(Subcommand)]
enum Command {
    /// Print a module in canonical form (parses; does not verify).
    Fmt(cmd::fmt::FmtArgs),
    /// Parse and verify a module; diagnostics go to stderr.
    Verify(cmd::verify::VerifyArgs),
    /// Draw the graphs of a verified module as Graphviz DOT.
    Dot(cmd::dot::DotArgs),
    /// Run a graph on the reference interpreter with data from .npy or raw files.
    Interp(cmd::interp::InterpArgs),
    /// Run a pass pipeline on a verified module and print the optimized module.
    Opt(cmd::opt::OptArgs),
    /// Show what changed between two modules (exit 1 when they differ), or check a
    /// whole-graph update with --update-check.
    Diff(cmd::diff::DiffArgs),
    /// Compile a module to a bundle (.cgb): passes, SPIR-V for every kernel, schedule,
    /// memory plan.
    Compile(cmd::compile::CompileArgs),
    /// Summarize a compiled bundle; a malformed or tampered bundle is an error.
    Inspect(cmd::inspect::InspectArgs),
    /// Run a compiled bundle on a Vulkan device with data from .npy or raw files.
    Run(cmd::run::RunArgs),
    /// Make an ed25519 signing key (seed file and OUT.pub) for `compile --sign` and
    /// `run --trust`.
    Keygen(cmd::keygen::KeygenArgs),
    /// Print the GLSL declarations matching a kernel's signature (argument block, buffers),
    /// for writing it as an external SPIR-V kernel.
    Abi(cmd::abi::AbiArgs),
}

fn main() -> ExitCode {
    // clap exits by itself: 2 on a usage error, 0 after --help / --version.
    let cli = Cli::parse();
    let color = match cli.color {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => {
            use std::io::IsTerminal;
            std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    };
    cmdgraph_ir::diag::set_color(color);
    let outcome = match cli.command {
        Command::Fmt(args) => cmd::fmt::run(&args),
        Command::Verify(args) => cmd::verify::run(&args),
        Command::Dot(args) => cmd::dot::run(&args),
        Command::Interp(args) => cmd::interp::run(&args),
        Command::Opt(args) => cmd::opt::run(&args),
        Command::Diff(args) => cmd::diff::run(&args),
        Command::Compile(args) => cmd::compile::run(&args),
        Command::Inspect(args) => cmd::inspect::run(&args),
        Command::Run(args) => cmd::run::run(&args),
        Command::Keygen(args) => cmd::keygen::run(&args),
        Command::Abi(args) => cmd::abi::run(&args),
    };
    exit::finish(outcome)
}
