//! The real kernel compiler behind [`KernelCompiler`](super::KernelCompiler): the crate's
//! [`choose_variant`](crate::choose_variant) and [`compile_kernel`](crate::compile_kernel)
//! (LLVM to Vulkan SPIR-V, validated by `spirv-val`).

use super::KernelCompiler;
use crate::{CodegenError, CompiledKernel, Handle, Kernel, Module, Options, Variant};
use cmdgraph_ir::{Arg, Launch};

/// Kernel code generation through LLVM to Vulkan SPIR-V (validated by `spirv-val`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Llvm;

impl KernelCompiler for Llvm {
    fn choose_variant(
        &self,
        module: &Module,
        kernel: Handle<Kernel>,
        launch: &Launch,
        args: &[Arg],
    ) -> Result<Variant, CodegenError> {
        crate::choose_variant(module, kernel, launch, args)
    }

    fn compile_kernel(
        &self,
        module: &Module,
        kernel: Handle<Kernel>,
        variant: &Variant,
        options: &Options,
    ) -> Result<CompiledKernel, CodegenError> {
        crate::compile_kernel(module, kernel, variant, options)
    }
}
