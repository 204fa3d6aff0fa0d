//! `cmdgraph fmt`: print a module in canonical form, or check that it already is.

use crate::exit::{Failure, Outcome};
use crate::io;
use std::path::PathBuf;

const EXAMPLES: &str = "\
Examples:
  cmdgraph fmt app.cgir                 canonical text on stdout
  cmdgraph fmt app.cgir -o app.cgir     rewrite in place (atomically)
  cmdgraph fmt --check app.cgir         exit 1 and name the file if it is not canonical
  cmdgraph fmt - < app.cgir";

/// Arguments of `cmdgraph fmt`.
#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct FmtArgs {
    /// The module to format; `-` reads stdin.
    #[arg(value_name = "FILE", default_value = "-")]
    pub input: PathBuf,
    /// Write to OUT instead of stdout; OUT is replaced only once the output is complete.
    #[arg(short, long, value_name = "OUT", conflicts_with = "check")]
    pub output: Option<PathBuf>,
    /// Write nothing; exit 1 and name the file when it is not in canonical form.
    #[arg(long)]
    pub check: bool,
}

/// Runs `cmdgraph fmt`.
pub fn run(args: &FmtArgs) -> Outcome {
    let input = io::read_input(&args.input)?;
    let module = super::parse_as_written(&input)?;
    let canonical = cmdgraph_ir::text::print(&module);
    if !args.check {
        return io::write_output(args.output.as_deref(), &canonical);
    }
    if canonical == input.text {
        return Ok(());
    }
    let line = first_difference(&input.text, &canonical);
    let fix = if io::is_stdio(&args.input) {
        "`cmdgraph fmt` prints the canonical form".to_string()
    } else {
        let path = args.input.display();
        format!("run `cmdgraph fmt {path} -o {path}` to rewrite it")
    };
    Err(Failure::Rejected(format!("{}: not in canonical form (first difference on line {line}); {fix}", input.name)))
}

/// 1-based number of the first line where `a` and `b` differ.
fn first_difference(a: &str, b: &str) -> usize {
    let mut la = a.split_inclusive('\n');
    let mut lb = b.split_inclusive('\n');
    let mut line = 1;
    while let (Some(x), Some(y)) = (la.next(), lb.next()) {
        if x != y {
            return line;
        }
        line += 1;
    }
    line
}

#[cfg(test)]
mod tests {
    use super::first_difference;

    #[test]
    fn first_difference_counts_lines_from_one() {
        assert_eq!(first_difference("a\nb\n", "a\nc\n"), 2);
        assert_eq!(first_difference("a\n", "b\n"), 1);
        assert_eq!(first_difference("a\n", "a\nb\n"), 2);
        assert_eq!(first_difference("a", "a\n"), 1);
    }
}
