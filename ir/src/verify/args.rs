//! Kernel commands (kernel nodes and kernel alternatives of dynamic command groups): the
//! launch, the argument count, and each argument against its parameter.
//!
//! An argument is checked twice over: on its own (the memory it names exists and has the
//! right kind, its ranges fit; `check_value`) and against the parameter of its slot (kind,
//! element type, access, size; `check_slot`). A dynamic parameter is checked on its own once,
//! where it is defined (dyn.rs), and against every slot it is registered with here.

use super::ctx::{check_type, Gx, MemClass};
use super::error::VerifyError;
use super::memory::{check_accessor, check_pointer, literal_problem};
use crate::arena::Handle;
use crate::graph::{Arg, ArgValue, KernelCommand, Launch, Queue, MAX_LAUNCH_WORK_ITEMS};
use crate::kernel::{Kernel, ParamType};
use crate::span::Span;

/// Where the parts of one kernel command are written.
pub(super) struct CmdSpans<'s> {
    /// The whole command (node or alternative).
    pub cmd: Span,
    /// Its launch (a lookup: asked for only when reporting).
    pub launch: &'s dyn Fn() -> Span,
    /// Argument `i`.
    pub arg: &'s dyn Fn(u32) -> Span,
}

/// Checks one kernel command. `queue` is the queue the node was recorded from, if any.
///
/// The exact spans of the launch and of each argument are map lookups, and almost every
/// command is valid: the command is checked with its own span everywhere first, and only
/// when that finds something wrong is it checked again with the exact spans (the checks
/// are pure, so the second run finds the same errors).
pub(super) fn check_kernel_command(
    gx: &Gx<'_>,
    cmd: &KernelCommand,
    spans: &CmdSpans<'_>,
    queue: Option<Handle<Queue>>,
    errors: &mut Vec<VerifyError>,
) {
    let before = errors.len();
    let rough = CmdSpans { cmd: spans.cmd, launch: &|| spans.cmd, arg: &|_| spans.cmd };
    check_command(gx, cmd, &rough, queue, errors);
    if errors.len() > before {
        errors.truncate(before);
        check_command(gx, cmd, spans, queue, errors);
    }
}

/// [`check_kernel_command`] with the spans given.
fn check_command(
    gx: &Gx<'_>,
    cmd: &KernelCommand,
    spans: &CmdSpans<'_>,
    queue: Option<Handle<Queue>>,
    errors: &mut Vec<VerifyError>,
) {
    let launch = (spans.launch)();
    check_launch(&cmd.launch, launch, errors);
    let kernel = gx.m.kernels.try_get(cmd.kernel);
    if kernel.is_none() {
        errors.push(VerifyError::DanglingHandle { what: "kernel", index: cmd.kernel.index(), span: spans.cmd });
    }
    if let Some(k) = kernel {
        if k.params.len() != cmd.args.len() {
            errors.push(VerifyError::ArgCount {
                kernel: format!("@{}", k.name),
                expected: k.params.len(),
                found: cmd.args.len(),
                span: spans.cmd,
                // The `kernel` keyword only: the whole definition would drown the message.
                kernel_span: keyword_span(gx.m.kernels.span(cmd.kernel)),
            });
        }
        check_launch_kind(gx, cmd, k, launch, errors);
    }
    for (i, arg) in cmd.args.iter().enumerate() {
        let span = (spans.arg)(i as u32);
        let value = match arg {
            Arg::Value(v) => {
                if !check_value(gx, v, span, errors) {
                    continue;
                }
                v
            }
            Arg::Dyn(d) => {
                let Some(param) = gx.g.dyn_params.try_get(*d) else {
                    errors.push(VerifyError::DanglingHandle { what: "dynamic parameter", index: d.index(), span });
                    continue;
                };
                if let Some(q) = queue {
                    errors.push(VerifyError::DynOnRecordedNode {
                        param: format!("%{}", param.name),
                        queue: gx.queue_name(q),
                        span,
                        param_span: gx.g.dyn_params.span(*d),
                    });
                }
                &param.value
            }
        };
        if let Some(k) = kernel {
            check_slot(gx, cmd.kernel, k, i, value, span, errors);
        }
    }
}

/// A `range` or `single_task` launch has no work-group, so its kernel may have no
/// `local<T>` parameter (E0219) and no work-group op (E0229). One diagnostic per launch: the
/// fix (an `nd_range`) is the same, so E0219 hides E0229.
fn check_launch_kind(gx: &Gx<'_>, cmd: &KernelCommand, k: &Kernel, span: Span, errors: &mut Vec<VerifyError>) {
    let launch = match cmd.launch {
        Launch::NdRange { .. } => return,
        Launch::Range(_) => "range",
        Launch::SingleTask => "single_task",
    };
    let Some(needs) = gx.needs.get(cmd.kernel.index()) else { return };
    let kernel = || format!("@{}", k.name);
    if let Some(param_span) = needs.local_param {
        errors.push(VerifyError::LocalNeedsNdRange { kernel: kernel(), span, param_span });
    } else if let Some((op, op_span)) = needs.group_op {
        errors.push(VerifyError::GroupOpNeedsNdRange { kernel: kernel(), launch, op, span, op_span });
    }
}

/// Launch shape: 1 to 3 dimensions, no zero size, and for an `nd_range` a local size (and
/// offset, if written) of the same dimensionality with each local size dividing the global.
fn check_launch(launch: &Launch, span: Span, errors: &mut Vec<VerifyError>) {
    let zero = |what: &'static str, sizes: &[u64], errors: &mut Vec<VerifyError>| {
        if let Some(dim) = sizes.iter().position(|&s| s == 0) {
            errors.push(VerifyError::LaunchZero { what, dim, span });
        }
    };
    match launch {
        Launch::SingleTask => {}
        Launch::Range(r) => {
            if !(1..=3).contains(&r.len()) {
                errors.push(VerifyError::LaunchDims { dims: r.len(), span });
            }
            zero("range", r, errors);
            check_size(r, &[], span, errors);
        }
        Launch::NdRange { global, local, offset } => {
            if !(1..=3).contains(&global.len()) {
                errors.push(VerifyError::LaunchDims { dims: global.len(), span });
            }
            if local.len() != global.len() {
                errors.push(VerifyError::NdRangeDims { what: "local", global: global.len(), found: local.len(), span });
            }
            if !offset.is_empty() && offset.len() != global.len() {
                errors.push(VerifyError::NdRangeDims {
                    what: "offset",
                    global: global.len(),
                    found: offset.len(),
                    span,
                });
            }
            zero("global", global, errors);
            zero("local", local, errors);
            check_size(global, offset, span, errors);
            for (dim, (&g, &l)) in global.iter().zip(local).enumerate() {
                if g != 0 && l != 0 && g % l != 0 {
                    errors.push(VerifyError::NdRangeIndivisible { dim, global: g, local: l, span });
                }
            }
        }
    }
}

/// The builtins return `u32`: each size must fit (`global_range`), and so must the last id
/// of each dimension, offset included (`global_id`) (E0224); and the work-items must be at
/// most [`MAX_LAUNCH_WORK_ITEMS`], which a linear id in `u32` can index (E0209). The
/// interpreter refuses the same launches. Zero sizes are E0226's.
fn check_size(global: &[u64], offset: &[u64], span: Span, errors: &mut Vec<VerifyError>) {
    const IDS: u64 = 1 << 32;
    for (dim, &size) in global.iter().enumerate() {
        let off = offset.get(dim).copied().unwrap_or(0);
        let problem = if size >= IDS {
            format!("size {size} of dimension {dim} does not fit u32")
        } else if off.checked_add(size).is_none_or(|end| end > IDS) {
            format!("offset {off} + size {size} of dimension {dim} passes 2^32, so the last global_id does not fit u32")
        } else {
            continue;
        };
        errors.push(VerifyError::LaunchTooLarge { problem, span });
        return;
    }
    let items = global.iter().try_fold(1u64, |n, &s| n.checked_mul(s));
    if items.is_none_or(|n| n > MAX_LAUNCH_WORK_ITEMS) {
        let sizes: Vec<String> = global.iter().map(u64::to_string).collect();
        errors.push(VerifyError::LaunchWork { sizes: sizes.join(" x "), items, span });
    }
}

/// Checks an argument value on its own; returns whether it is usable for slot checks.
/// Scalars have no check of their own here: a written type is checked against the slot.
pub(super) fn check_value(gx: &Gx<'_>, value: &ArgValue, span: Span, errors: &mut Vec<VerifyError>) -> bool {
    match value {
        ArgValue::Scalar(_) | ArgValue::Bytes(_) => true,
        ArgValue::Pointer(p) => check_pointer(gx, p, "a kernel pointer argument", false, span, errors).is_some(),
        ArgValue::Accessor(a) => check_accessor(gx, a, span, errors).is_some(),
        ArgValue::Local { elem, count } => {
            if !check_type(*elem, span, errors) {
                return false;
            }
            if *count == 0 || elem.size().checked_mul(*count).is_none() {
                errors.push(VerifyError::BadSize { what: "work-group memory".to_string(), count: *count, span });
                return false;
            }
            true
        }
    }
}

/// What an argument is, for messages.
fn describe(value: &ArgValue) -> &'static str {
    match value {
        ArgValue::Scalar(_) => "a scalar literal",
        ArgValue::Pointer(_) => "a pointer",
        ArgValue::Accessor(_) => "an accessor",
        ArgValue::Bytes(_) => "raw bytes",
        ArgValue::Local { .. } => "work-group memory",
    }
}

/// A parameter type as the text format writes it.
pub(super) fn param_type_text(ty: ParamType) -> String {
    match ty {
        ParamType::Value(t) => t.to_string(),
        ParamType::Buffer { elem, access } => format!("buf<{elem}, {access}>"),
        ParamType::Local { elem } => format!("local<{elem}>"),
    }
}

/// Checks a (usable) argument value against parameter `index` of `kernel`.
fn check_slot(
    gx: &Gx<'_>,
    kh: Handle<Kernel>,
    kernel: &Kernel,
    index: usize,
    value: &ArgValue,
    span: Span,
    errors: &mut Vec<VerifyError>,
) {
    let Some(param) = kernel.params.get(index) else { return };
    // Both only for a diagnostic: a map lookup and an allocation per argument otherwise.
    let param_span = || {
        let s = kernel.param_spans.get(&(index as u32));
        if s.is_defined() {
            s
        } else {
            gx.m.kernels.span(kh)
        }
    };
    let pname = || format!("%{}", param.name);
    let kind_mismatch = |errors: &mut Vec<VerifyError>| {
        errors.push(VerifyError::ArgKind {
            param: pname(),
            expected: param_type_text(param.ty),
            found: describe(value),
            span,
            param_span: param_span(),
        })
    };
    let elem_mismatch = |expected: crate::types::Type, found: crate::types::Type, errors: &mut Vec<VerifyError>| {
        errors.push(VerifyError::ArgElemType {
            param: pname(),
            expected: expected.to_string(),
            found: found.to_string(),
            span,
            param_span: param_span(),
        })
    };
    match (param.ty, value) {
        (ParamType::Value(t), ArgValue::Scalar(lit)) => {
            if t.lanes != 1 {
                errors.push(VerifyError::ScalarArg {
                    problem: format!("parameter {} has vector type {t} but a literal is one scalar", pname()),
                    span,
                    param_span: param_span(),
                });
            } else if let Some(problem) = literal_problem(lit, t.scalar) {
                errors.push(VerifyError::ScalarArg {
                    problem: format!("for parameter {}: {problem}", pname()),
                    span,
                    param_span: param_span(),
                });
            }
        }
        (ParamType::Value(t), ArgValue::Bytes(bytes)) => {
            if bytes.len() as u64 != t.size() {
                errors.push(VerifyError::RawBytesSize {
                    expected: t.size(),
                    found: bytes.len(),
                    span,
                    param_span: param_span(),
                });
            }
        }
        (ParamType::Buffer { elem, .. }, ArgValue::Pointer(p)) => {
            let Ok(info) = gx.resolve(p.base) else { return };
            if !matches!(info.class, MemClass::Usm | MemClass::Alloc) {
                return;
            }
            if info.elem != elem {
                elem_mismatch(elem, info.elem, errors);
            } else if elem.size() != 0 && p.offset % elem.size() != 0 {
                errors.push(VerifyError::PointerMisaligned { offset: p.offset, align: elem.size(), span });
            }
        }
        (ParamType::Buffer { elem, access }, ArgValue::Accessor(a)) => {
            let Ok(info) = gx.resolve(a.buffer) else { return };
            if info.class != MemClass::Buffer {
                return;
            }
            if info.elem != elem {
                elem_mismatch(elem, info.elem, errors);
            }
            if !a.mode.satisfies(access) {
                errors.push(VerifyError::ArgAccess {
                    param: pname(),
                    expected: access.keyword(),
                    found: a.mode.keyword(),
                    span,
                    param_span: param_span(),
                });
            }
        }
        (ParamType::Local { elem }, ArgValue::Local { elem: found, .. }) => {
            if *found != elem {
                elem_mismatch(elem, *found, errors);
            }
        }
        _ => kind_mismatch(errors),
    }
}

/// The `kernel` keyword at the start of a kernel definition's span.
fn keyword_span(span: Span) -> Span {
    if span.is_defined() {
        Span { start: span.start, end: span.start.saturating_add(6).min(span.end) }
    } else {
        span
    }
}
