//! `cmdgraph compile --emit=...`: what code generation makes for every kernel variant the
//! module's graphs launch (docs/codegen.md), instead of a bundle.
//!
//! [`emit`] is the reusable part (the bundle's `compile` subcommand calls it for `--emit`);
//! [`run`] is the stand-alone subcommand of this branch.

use crate::exit::{Failure, Outcome};
use crate::io;
use cmdgraph_codegen::{compile_kernel, module_variants, Emit, Options};
use cmdgraph_ir::Module;
use std::path::PathBuf;

/// What `--emit` produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EmitKind {
    /// Textual LLVM IR after optimization, per variant.
    LlvmIr,
    /// Disassembled SPIR-V (`spirv-dis` syntax), per variant.
    SpirvAsm,
    /// The SPIR-V binary of the one selected variant (needs `-o` or a single variant).
    Spirv,
}

/// What [`emit`] made: text to print, or one binary.
pub enum Emitted {
    /// Text of every variant, each after a `; kernel @k workgroup(x, y, z)` header.
    Text(String),
    /// A SPIR-V binary.
    Binary(Vec<u8>),
}

/// Code generation output for the variants of `kernel` (every kernel when `None`).
pub fn emit(module: &Module, kernel: Option<&str>, opt_level: u8, what: EmitKind) -> Result<Emitted, String> {
    if let Some(name) = kernel {
        if module.kernel_by_name(name).is_none() {
            return Err(format!("error: no kernel @{name} in the module"));
        }
    }
    let options = Options { opt_level };
    let variants: Vec<_> = module_variants(module)
        .map_err(|e| format!("error: {e}"))?
        .into_iter()
        .filter(|(k, _)| kernel.is_none_or(|n| module.kernels.try_get(*k).is_some_and(|x| x.name == n)))
        .collect();
    if what == EmitKind::Spirv {
        let [(k, v)] = variants.as_slice() else {
            return Err(format!(
                "error: --emit=spirv writes one variant but {} are selected; use --kernel",
                variants.len()
            ));
        };
        let c = compile_kernel(module, *k, v, &options).map_err(|e| format!("error: {e}"))?;
        return Ok(Emitted::Binary(cmdgraph_codegen::spirv_bytes(&c.spirv)));
    }
    let mode = if what == EmitKind::LlvmIr { Emit::LlvmIr } else { Emit::SpirvAsm };
    let mut out = String::new();
    for (k, v) in &variants {
        let name = module.kernels.try_get(*k).map_or("?", |x| x.name.as_str());
        let text = cmdgraph_codegen::emit(module, *k, v, &options, mode).map_err(|e| format!("error: {e}"))?;
        let [x, y, z] = v.workgroup_size;
        out.push_str(&format!("; kernel @{name} workgroup({x}, {y}, {z})\n{text}\n"));
    }
    Ok(Emitted::Text(out))
}

/// Arguments of the stand-alone `compile` subcommand of this branch.
#[derive(clap::Args)]
pub struct CompileEmitArgs {
    /// The module; `-` reads stdin.
    #[arg(value_name = "FILE", default_value = "-")]
    pub input: PathBuf,
    /// What to print: `llvm-ir`, `spirv-asm`, or `spirv` (binary; one variant).
    #[arg(long, value_name = "WHAT")]
    pub emit: EmitKind,
    /// Only this kernel's variants (name without `@`).
    #[arg(long, value_name = "NAME")]
    pub kernel: Option<String>,
    /// LLVM optimization level (-O0 to -O3).
    #[arg(short = 'O', value_name = "LEVEL", default_value_t = 2, value_parser = clap::value_parser!(u8).range(0..=3))]
    pub opt_level: u8,
    /// Where to write (atomically); default stdout.
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
}

/// Runs the subcommand.
pub fn run(args: &CompileEmitArgs) -> Outcome {
    let input = io::read_input(&args.input)?;
    let module = super::parse(&input)?;
    super::print_warnings(&super::verify(&input, &module)?);
    match emit(&module, args.kernel.as_deref(), args.opt_level, args.emit).map_err(|e| Failure::Rejected(e + "\n"))? {
        Emitted::Text(text) => io::write_output(args.output.as_deref(), &text),
        Emitted::Binary(bytes) => match args.output.as_deref() {
            Some(path) if !io::is_stdio(path) => io::write_atomic(path, &bytes)
                .map_err(|e| Failure::Io(format!("error: cannot write `{}`: {e}", path.display()))),
            _ => Err(Failure::Rejected("error: --emit=spirv is binary; give -o FILE\n".to_string())),
        },
    }
}
