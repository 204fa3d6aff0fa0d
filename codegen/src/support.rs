//! What code generation cannot compile, found on the source module so the user gets a
//! diagnostic at the op (file:line:col) before any pass or LLVM runs.

use cmdgraph_ir::diag::Diagnostic;
use cmdgraph_ir::kernel::{BinaryOp, KernelBody, OpKind, UnaryOp, ValueType};
use cmdgraph_ir::types::ScalarType;
use cmdgraph_ir::Module;

/// The code of a kernel construct the Vulkan target cannot compile.
pub const E_UNSUPPORTED: &str = "E0505";

/// Diagnostics for every construct of `module`'s kernel bodies that codegen rejects.
///
/// Today that is 64-bit integer atomics: LLVM 22's SPIR-V backend lacks `Int64Atomics` in
/// its Vulkan environment and aborts ("Unable to meet SPIR-V requirements"); and the `f64`
/// math functions `exp log sin cos tanh pow`, which GLSL.std.450 (the only math Vulkan has)
/// defines for 16- and 32-bit floats only (`sqrt rsqrt floor ceil abs min max fma` are
/// defined for `f64` and compile).
pub fn check(module: &Module) -> Vec<Diagnostic> {
    let mut out = conditional_nodes(module);
    for (_, kernel) in module.kernels.iter() {
        let KernelBody::Ir(body) = &kernel.body else { continue };
        let data_ty = |v| match body.values.try_get(v).map(|v| v.ty) {
            Some(ValueType::Data(t)) => Some(t),
            _ => None,
        };
        for (h, op) in body.ops.iter() {
            match &op.kind {
                OpKind::Atomic { op: aop, value, .. } => {
                    let Some(t) = data_ty(*value) else { continue };
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
                OpKind::Unary(u, a)
                    if f64_math_unary(*u) && data_ty(*a).is_some_and(|t| t.scalar == ScalarType::F64) =>
                {
                    out.push(f64_math(&kernel.name, u.keyword(), body.ops.span(h)));
                }
                OpKind::Binary(BinaryOp::Pow, a, _) if data_ty(*a).is_some_and(|t| t.scalar == ScalarType::F64) => {
                    out.push(f64_math(&kernel.name, "pow", body.ops.span(h)));
                }
                _ => {}
            }
        }
    }
    out
}

/// The code of a graph construct the executor cannot run yet.
pub const E_NOT_ON_VULKAN: &str = "E0506";

/// The nodes of conditional bodies the executor cannot run predicated
/// ([`cmdgraph_ir::conditional::not_in_bodies`]): compiling one would give an executable
/// that runs it whatever the condition says.
fn conditional_nodes(module: &Module) -> Vec<Diagnostic> {
    cmdgraph_ir::conditional::not_in_bodies(module)
        .into_iter()
        .filter_map(|x| {
            let graph = module.graphs.try_get(x.graph)?;
            let node = graph.nodes.try_get(x.node)?;
            Some(
                Diagnostic::error(
                    E_NOT_ON_VULKAN,
                    format!("@{} %{}: {}", graph.name, node.name, x.reason),
                    graph.nodes.span(x.node),
                )
                .with_label("in a conditional body")
                .with_help(x.help),
            )
        })
        .collect()
}

/// Whether `u` is a math function Vulkan has no `f64` form of.
fn f64_math_unary(u: UnaryOp) -> bool {
    matches!(u, UnaryOp::Exp | UnaryOp::Log | UnaryOp::Sin | UnaryOp::Cos | UnaryOp::Tanh)
}

fn f64_math(kernel: &str, op: &str, span: cmdgraph_ir::Span) -> Diagnostic {
    Diagnostic::error(E_UNSUPPORTED, format!("kernel @{kernel}: `{op}` on f64 cannot be compiled for Vulkan"), span)
        .with_label("f64 math function")
        .with_help(
            "Vulkan's math functions (GLSL.std.450) take 16- and 32-bit floats only; cast to f32 and back where that precision is enough",
        )
}
