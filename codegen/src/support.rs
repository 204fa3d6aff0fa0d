//! What code generation cannot compile, found on the source module so the user gets a
//! diagnostic at the op (file:line:col) before any pass or LLVM runs.

use cmdgraph_ir::diag::Diagnostic;
use cmdgraph_ir::kernel::{KernelBody, OpKind, ValueType};
use cmdgraph_ir::types::ScalarType;
use cmdgraph_ir::Module;

/// The code of a kernel construct the Vulkan target cannot compile.
pub const E_UNSUPPORTED: &str = "E0505";

/// Diagnostics for every construct of `module`'s kernel bodies that codegen rejects.
///
/// Today that is 64-bit integer atomics: LLVM 22's SPIR-V backend lacks `Int64Atomics` in
/// its Vulkan environment and aborts ("Unable to meet SPIR-V requirements").
pub fn check(module: &Module) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (_, kernel) in module.kernels.iter() {
        let KernelBody::Ir(body) = &kernel.body else { continue };
        for (h, op) in body.ops.iter() {
            let OpKind::Atomic { op: aop, value, .. } = &op.kind else { continue };
            let Some(ValueType::Data(t)) = body.values.try_get(*value).map(|v| v.ty) else { continue };
            if matches!(t.scalar, ScalarType::I64 | ScalarType::U64) {
                out.push(
                    Diagnostic::error(
                        E_UNSUPPORTED,
                        format!("kernel @{}: `atomic {}` on {t} cannot be compiled for Vulkan", kernel.name, aop.keyword()),
                        body.ops.span(h),
                    )
                    .with_label("64-bit atomic")
                    .with_help(
                        "LLVM 22's SPIR-V backend cannot emit 64-bit atomics for Vulkan (no Int64Atomics in its Vulkan environment); use a 32-bit element or split the value into two 32-bit words",
                    ),
                );
            }
        }
    }
    out
}
