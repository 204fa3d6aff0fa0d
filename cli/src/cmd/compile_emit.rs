//! `cmdgraph compile --emit=...`: what code generation makes for every kernel variant the
//! module's graphs launch (docs/codegen.md), instead of a bundle.
//!
//! `cmdgraph compile` (compile.rs) calls [`emit`] for `--emit`.

use cmdgraph_codegen::{compile_kernel, module_variants, CodegenError, Emit, Options};
use cmdgraph_ir::Module;

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

/// Why [`emit`] failed.
pub enum EmitError {
    /// The request does not fit the module (`error: ...` text).
    Usage(String),
    /// Choosing or compiling a variant failed.
    Codegen(CodegenError),
}

/// Code generation output for the variants of `kernel` (every kernel when `None`).
pub fn emit(module: &Module, kernel: Option<&str>, opt_level: u8, what: EmitKind) -> Result<Emitted, EmitError> {
    if let Some(name) = kernel {
        if module.kernel_by_name(name).is_none() {
            return Err(EmitError::Usage(format!("error: no kernel @{name} in the module")));
        }
    }
    let options = Options { opt_level };
    let variants: Vec<_> = module_variants(module)
        .map_err(EmitError::Codegen)?
        .into_iter()
        .filter(|(k, _)| kernel.is_none_or(|n| module.kernels.try_get(*k).is_some_and(|x| x.name == n)))
        .collect();
    if what == EmitKind::Spirv {
        let [(k, v)] = variants.as_slice() else {
            return Err(EmitError::Usage(format!(
                "error: --emit=spirv writes one variant but {} are selected; use --kernel",
                variants.len()
            )));
        };
        let c = compile_kernel(module, *k, v, &options).map_err(EmitError::Codegen)?;
        return Ok(Emitted::Binary(cmdgraph_codegen::spirv_bytes(&c.spirv)));
    }
    let mode = if what == EmitKind::LlvmIr { Emit::LlvmIr } else { Emit::SpirvAsm };
    let mut out = String::new();
    for (k, v) in &variants {
        let name = module.kernels.try_get(*k).map_or("?", |x| x.name.as_str());
        let text = cmdgraph_codegen::emit(module, *k, v, &options, mode).map_err(EmitError::Codegen)?;
        let [x, y, z] = v.workgroup_size;
        out.push_str(&format!("; kernel @{name} workgroup({x}, {y}, {z})\n{text}\n"));
    }
    Ok(Emitted::Text(out))
}
