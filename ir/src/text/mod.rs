//! The text format of docs/ir.md: a hand-written lexer, a recursive-descent parser with
//! name resolution, and the canonical printer, its exact inverse.
//!
//! - [`parse`] turns source text into a [`Module`], with a span on every arena element and
//!   side tables of spans for kernel arguments, launches, list items and parameters. Every
//!   error is a located [`Diagnostic`] (codes `E00xx` for lexing and syntax, `E01xx` for
//!   names); no input makes it panic, overflow the stack or allocate without bound.
//! - [`print`] writes the canonical text: `print(parse(print(m))) == print(m)` byte for
//!   byte, and `parse(print(m)) == m` for every module `parse` can produce. Comments are
//!   kept.
//!
//! The parser computes the type of every kernel value from its definition (see
//! `parser/infer.rs` for the rules) but checks no types: that is the verifier's job.

mod error;
mod keyword;
mod lexer;
mod parser;
mod printer;

pub use error::ParseError;

use crate::diag::Diagnostic;
use crate::module::Module;

/// Deepest nesting of brackets (`(`, `[`, `{`), and so of `for`/`if` regions, accepted.
pub const MAX_NESTING: usize = 256;

/// Longest name (after `@` or `%`) accepted, in bytes.
pub const MAX_NAME_LEN: usize = 1024;

/// Largest source accepted, in bytes (1 GiB).
pub const MAX_FILE_SIZE: usize = 1 << 30;

/// Parses a module: lexing, parsing, name resolution and value typing.
///
/// Returns every error found, sorted by position: all undefined and duplicate names, and at
/// most one syntax error (parsing stops at the first).
pub fn parse(source: &str) -> Result<Module, Vec<Diagnostic>> {
    parse_with_errors(source).map_err(|errors| errors.iter().map(ParseError::to_diagnostic).collect())
}

/// Like [`parse`], returning the typed errors rather than diagnostics.
pub fn parse_with_errors(source: &str) -> Result<Module, Vec<ParseError>> {
    parser::parse_module(source)
}

/// Prints `module` in canonical form (two-space indentation, one statement per line,
/// default parts omitted, comments kept). Deterministic: the same module gives the same
/// bytes.
pub fn print(module: &Module) -> String {
    printer::print_module(module)
}
