//! How a subcommand ends: the documented exit codes and the message printed on failure.

use std::io::Write;
use std::process::ExitCode;

/// The input was rejected: parse or verify diagnostics, or `fmt --check` found a difference.
pub const REJECTED: u8 = 1;
/// Unreadable input or unwritable output.
pub const IO_ERROR: u8 = 3;
/// An internal compiler error: code generation made something LLVM or `spirv-val` rejects,
/// or a pass made a module that does not verify (a bug in cmdgraph, not in the input).
pub const INTERNAL: u8 = 4;

/// Why a subcommand failed. The payload is the complete text for stderr.
#[derive(Debug)]
pub enum Failure {
    /// Exit 1: rendered diagnostics or a `--check` report.
    Rejected(String),
    /// Exit 3: an `error: cannot read/write ...` line.
    Io(String),
    /// Exit 4: an internal compiler error, located at the kernel when possible.
    Internal(String),
    /// Exit 1 with nothing on stderr: the report on stdout already says why (`diff` found
    /// differences, `diff --update-check` refused the update), as diff(1) does.
    Differ,
}

/// Result of a subcommand.
pub type Outcome = Result<(), Failure>;

/// Prints the failure message, if any, and maps the outcome to its exit code.
pub fn finish(outcome: Outcome) -> ExitCode {
    let (text, code) = match outcome {
        Ok(()) => return ExitCode::SUCCESS,
        Err(Failure::Rejected(text)) => (text, REJECTED),
        Err(Failure::Io(text)) => (text, IO_ERROR),
        Err(Failure::Internal(text)) => (text, INTERNAL),
        Err(Failure::Differ) => return ExitCode::from(REJECTED),
    };
    let mut stderr = std::io::stderr().lock();
    // Nothing useful is left to do when stderr itself is gone; the exit code still tells.
    let _ = stderr.write_all(text.as_bytes());
    if !text.ends_with('\n') {
        let _ = stderr.write_all(b"\n");
    }
    ExitCode::from(code)
}
