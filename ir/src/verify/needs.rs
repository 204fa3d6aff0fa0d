//! What each kernel needs from its launch, found once per kernel so that checking many
//! launches of one kernel (10^5 nodes) costs one lookup each.
//!
//! A `range` or `single_task` launch has no work-group the kernel can observe, so a kernel
//! with a `local<T>` parameter (E0219) or a work-group op (E0229: `group_barrier`, `local`,
//! `local_id`, `group_id`, `local_range`, `group_range`, subgroup ops; also through the
//! functions it calls) needs an `nd_range`. The
//! interpreter refuses such launches too (docs/interpreter.md, Kernels).

use crate::arena::Handle;
use crate::kernel::{Kernel, KernelBody, Op, OpKind, ParamType, Region};
use crate::module::Module;
use crate::span::Span;

/// What one kernel needs from its launch.
#[derive(Clone, Debug, Default)]
pub(super) struct KernelNeeds {
    /// Its first `local<T>` parameter: where it is declared.
    pub local_param: Option<Span>,
    /// Its first work-group op in source order (region tree preorder): keyword and span.
    pub group_op: Option<(&'static str, Span)>,
}

/// The needs of every kernel, indexed by handle.
pub(super) fn summarize(m: &Module) -> Vec<KernelNeeds> {
    let through_calls = super::function::group_ops(&m.functions);
    m.kernels.iter().map(|(h, k)| kernel_needs(m, h, k, &through_calls)).collect()
}

/// The needs of one kernel.
fn kernel_needs(m: &Module, kh: Handle<Kernel>, k: &Kernel, through_calls: &[Option<&'static str>]) -> KernelNeeds {
    let kspan = m.kernels.span(kh);
    let or_kernel = |s: Span| if s.is_defined() { s } else { kspan };
    let local_param = k
        .params
        .iter()
        .position(|p| matches!(p.ty, ParamType::Local { .. }))
        .map(|i| or_kernel(k.param_spans.get(&(i as u32))));
    let group_op = match &k.body {
        KernelBody::Ir(body) => first_group_op(&body.entry, &body.ops, through_calls).and_then(|op| {
            body.ops
                .try_get(op)
                .and_then(|op| group_keyword(&op.kind, through_calls))
                .map(|kw| (kw, or_kernel(body.ops.span(op))))
        }),
        // An external SPIR-V body cannot be inspected (an untranslated shader is E0333).
        KernelBody::Spirv { .. } | KernelBody::Shader { .. } => None,
    };
    KernelNeeds { local_param, group_op }
}

/// The first work-group op of the region tree under `entry`, in preorder (source order).
/// Iterative, and each op is visited once, so a malformed tree (an op listed inside its own
/// region, or nested deeper than the limit, both reported by kernel.rs) cannot loop or
/// exhaust the stack. Ops no region lists are dead and, as elsewhere, not looked at.
fn first_group_op(
    entry: &Region,
    ops: &crate::arena::Arena<Op>,
    through_calls: &[Option<&'static str>],
) -> Option<Handle<Op>> {
    let mut seen = vec![false; ops.len()];
    let mut stack: Vec<&[Handle<Op>]> = vec![&entry.ops];
    while let Some(list) = stack.pop() {
        let Some((&h, rest)) = list.split_first() else { continue };
        stack.push(rest);
        let Some(op) = ops.try_get(h) else { continue };
        if std::mem::replace(&mut seen[h.index()], true) {
            continue;
        }
        if group_keyword(&op.kind, through_calls).is_some() {
            return Some(h);
        }
        // Pushed in reverse so that the first region is walked first.
        match &op.kind {
            OpKind::For { body, .. } | OpKind::Loop { body, .. } => stack.push(&body.ops),
            OpKind::If { then_region, else_region, .. } => {
                if let Some(e) = else_region {
                    stack.push(&e.ops);
                }
                stack.push(&then_region.ops);
            }
            _ => {}
        }
    }
    None
}

/// The work-group op `kind` is or (for a call) reaches through the function it calls.
fn group_keyword(kind: &OpKind, through_calls: &[Option<&'static str>]) -> Option<&'static str> {
    match kind {
        OpKind::Call { func, .. } => through_calls.get(func.index()).copied().flatten(),
        other => other.work_group_keyword(),
    }
}
