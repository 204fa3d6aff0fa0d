//! `cmdgraph compile --emit=...`: what code generation makes for every kernel variant the
//! optimized module's graphs launch (docs/codegen.md), instead of a bundle.
//!
//! `cmdgraph compile` (compile.rs) calls [`optimize`] with the pipeline it would compile
//! with, then [`emit`] on the result: what `--emit` shows is what the bundle ships, kernels
//! named as in the bundle (`@fused.k0.k1.k2` after `fuse-kernels`), not the source's.

use cmdgraph_codegen::bundle::CompileError;
use cmdgraph_codegen::{compile_kernel, module_variants, CodegenError, Emit, Options};
use cmdgraph_ir::Module;
use cmdgraph_passes::pipeline::{run_pipeline, RunOptions};
use cmdgraph_passes::{PassContext, PassInfo};

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

/// The module `compile` would package: `source` after `passes`, run as `compile` runs them
/// (`cmdgraph_codegen::bundle::compile_module_with`: a fresh pass context, the module
/// discarded on error, the output verified).
pub fn optimize(
    source: &Module,
    passes: &[&'static PassInfo],
    pipeline: &cmdgraph_codegen::bundle::PipelineOptions,
) -> Result<Module, CompileError> {
    let mut optimized = source.clone();
    let mut ctx = PassContext { memory_alignment: pipeline.memory_alignment, ..PassContext::default() };
    ctx.options.fuse_fp_reassoc = pipeline.fuse_fp_reassoc;
    ctx.options.devices = pipeline.devices;
    ctx.options.transfer_bytes_per_us = pipeline.transfer_bytes_per_us;
    let options = RunOptions { discard_on_error: true, verify_each: pipeline.verify_each, ..RunOptions::default() };
    run_pipeline(&mut optimized, passes, &options, &mut ctx, &mut |_| {}).map_err(CompileError::Pass)?;
    // Warnings do not stop a compile, errors do (as in `compile_module_with`).
    match cmdgraph_ir::verify::verify(&optimized) {
        Err(d) if d.iter().any(|d| d.severity == cmdgraph_ir::diag::Severity::Error) => {
            return Err(CompileError::InvalidOutput(d))
        }
        _ => {}
    }
    Ok(optimized)
}

/// Code generation output for the variants of `kernel` (every kernel when `None`).
///
/// `source` is the module before the pipeline: a name it defines but the optimized module
/// does not launch (fused, or dropped as unused) is said to be so.
pub fn emit(
    module: &Module,
    source: &Module,
    kernel: Option<&str>,
    opt_level: u8,
    what: EmitKind,
) -> Result<Emitted, EmitError> {
    let options = Options { opt_level };
    let all = module_variants(module).map_err(EmitError::Codegen)?;
    let name_of = |k| module.kernels.try_get(k).map_or("?", |x: &cmdgraph_ir::kernel::Kernel| x.name.as_str());
    if let Some(name) = kernel {
        let name = name.strip_prefix('@').unwrap_or(name);
        if !all.iter().any(|(k, _)| name_of(*k) == name) {
            let mut launched: Vec<&str> = all.iter().map(|(k, _)| name_of(*k)).collect();
            launched.dedup();
            return Err(EmitError::Usage(unknown_kernel(source, name, &launched)));
        }
    }
    let wanted = kernel.map(|n| n.strip_prefix('@').unwrap_or(n));
    let variants: Vec<_> = all.into_iter().filter(|(k, _)| wanted.is_none_or(|n| name_of(*k) == n)).collect();
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

/// The `--kernel` error: the optimized module launches no kernel of that name. Says why
/// when the source's kernel is no longer launched (a pass fused it away), suggests the
/// closest launched name and lists them all.
fn unknown_kernel(source: &Module, name: &str, launched: &[&str]) -> String {
    let mut text = if source.kernel_by_name(name).is_some() {
        format!("error: no kernel node launches @{name} after the pass pipeline")
    } else {
        format!("error: no kernel @{name} in the module")
    };
    if let Some(k) = cmdgraph_ir::suggest::closest(name, launched.iter().copied()) {
        text.push_str(&format!("; did you mean @{k}?"));
    }
    if launched.is_empty() {
        text.push_str("\nnote: no kernel is launched");
    } else {
        let list: Vec<String> = launched.iter().map(|k| format!("@{k}")).collect();
        text.push_str(&format!("\nnote: kernels launched: {}", list.join(", ")));
    }
    text
}
