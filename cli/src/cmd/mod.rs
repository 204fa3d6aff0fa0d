//! One module per subcommand, plus the parse and verify steps they share.

pub mod abi;
pub mod bandwidth;
pub mod compile;
pub mod compile_emit;
pub mod diff;
pub mod dot;
pub mod fmt;
pub mod inspect;
pub mod interp;
pub mod keygen;
pub mod opt;
pub mod run;
pub mod verify;

use crate::exit::Failure;
use crate::io::Input;
use cmdgraph_ir::diag::{render_all, Diagnostic, Severity};
use cmdgraph_ir::Module;

/// Parses the input and translates its `wgsl`/`glsl` kernels (docs/kernels.md); parse and
/// translation diagnostics reject it.
pub fn parse(input: &Input) -> Result<Module, Failure> {
    let mut module = parse_as_written(input)?;
    // Shader paths are relative to the module's file (the working directory for stdin).
    let dir = match std::path::Path::new(&input.name).parent() {
        Some(d) if input.name != crate::io::STDIN_NAME => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    cmdgraph_shader::resolve(&mut module, &input.text, &dir)
        .map_err(|errors| Failure::Rejected(errors.iter().map(|e| e.render(&input.name, &input.text)).collect()))?;
    Ok(module)
}

/// Parses the input as written: shader kernels stay shader kernels (`fmt`).
pub fn parse_as_written(input: &Input) -> Result<Module, Failure> {
    cmdgraph_ir::text::parse(&input.text).map_err(|diagnostics| reject(input, &diagnostics))
}

/// Verifies a parsed module. Errors reject it; when every diagnostic is a warning the
/// rendered warnings are returned for the caller to print.
pub fn verify(input: &Input, module: &Module) -> Result<String, Failure> {
    verify_with(input, module, false)
}

/// [`verify`], with data races (E0280) as warnings when `allow_races` (`--allow-races`).
pub fn verify_with(input: &Input, module: &Module, allow_races: bool) -> Result<String, Failure> {
    let options = cmdgraph_ir::verify::VerifyOptions { allow_races };
    match cmdgraph_ir::verify::verify_with(module, &options) {
        Ok(()) => Ok(String::new()),
        Err(diagnostics) if diagnostics.iter().all(|d| d.severity == Severity::Warning) => {
            Ok(render_all(&diagnostics, &input.name, &input.text))
        }
        Err(diagnostics) => Err(reject(input, &diagnostics)),
    }
}

/// Renders error diagnostics against the input as a rejection (exit 1).
pub fn reject(input: &Input, diagnostics: &[Diagnostic]) -> Failure {
    if diagnostics.is_empty() {
        // An error without a diagnostic is a bug in the library; still say which input.
        return Failure::Rejected(format!("error: `{}` was rejected without a diagnostic", input.name));
    }
    Failure::Rejected(render_all(diagnostics, &input.name, &input.text))
}

/// Prints warnings (already rendered) to stderr.
pub fn print_warnings(text: &str) {
    if !text.is_empty() {
        eprint!("{text}");
    }
}
