//! The real kernel compiler behind [`KernelCompiler`](super::KernelCompiler).
//!
//! INTERIM (until branch `cgen` is merged): `codegen::choose_variant` and
//! `codegen::compile_kernel` do not exist yet, so this refuses with an error that says so.
//! After the merge both methods call those functions.

use super::KernelCompiler;
use crate::{CompiledKernel, Handle, Kernel, Module, Options, Variant};
use cmdgraph_ir::{Arg, Launch};

/// Kernel code generation through LLVM to Vulkan SPIR-V (validated by `spirv-val`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Llvm;

const NOT_YET: &str = "LLVM code generation is not in this build yet (branch cgen)";

impl KernelCompiler for Llvm {
    fn choose_variant(&self, _: &Module, _: Handle<Kernel>, _: &Launch, _: &[Arg]) -> Result<Variant, String> {
        Err(NOT_YET.to_string())
    }

    fn compile_kernel(
        &self,
        _: &Module,
        _: Handle<Kernel>,
        _: &Variant,
        _: &Options,
    ) -> Result<CompiledKernel, String> {
        Err(NOT_YET.to_string())
    }
}
