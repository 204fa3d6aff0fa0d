//! Dynamic parameters and dynamic command groups.
//!
//! A dynamic parameter's value is checked on its own here and against every kernel
//! argument slot it is registered with in args.rs. The data model can only register a
//! parameter with a kernel argument (`Arg::Dyn`), so §22 #8 (a non-kernel command
//! registering a parameter) cannot be expressed; the parser rejects a dynamic parameter
//! named where a memcpy or host task operand is expected.

use super::args::{check_kernel_command, check_value, CmdSpans};
use super::ctx::{Gx, MemClass};
use super::error::VerifyError;
use super::memory::literal_problem;
use super::uses::alternative_uses;
use crate::graph::{Alternative, ArgValue, Site};
use crate::span::Span;
use std::collections::BTreeSet;

/// Checks every dynamic parameter's value on its own.
pub(super) fn check_dyn_params(gx: &Gx<'_>, errors: &mut Vec<VerifyError>) {
    for (h, p) in gx.g.dyn_params.iter() {
        let span = gx.g.dyn_params.span(h);
        match &p.value {
            ArgValue::Scalar(lit) => match lit.ty {
                None => errors.push(VerifyError::DynScalarUntyped { name: format!("%{}", p.name), span }),
                Some(ty) => {
                    if let Some(problem) = literal_problem(lit, ty) {
                        errors.push(VerifyError::ScalarArg { problem, span, param_span: Span::UNDEFINED });
                    }
                }
            },
            value => {
                check_value(gx, value, span, errors);
            }
        }
    }
}

/// The command type of an alternative, for messages; `None` for a rejected one.
fn alt_type(alt: &Alternative) -> Option<&'static str> {
    match alt {
        Alternative::Kernel(_) => Some("kernel"),
        Alternative::HostTask(_) => Some("host_task"),
        Alternative::Other(_) => None,
    }
}

/// Checks every dynamic command group: non-empty, active index in range, alternatives all
/// kernels or all host tasks, each alternative valid, identical accessor requirements.
pub(super) fn check_dcgs(gx: &Gx<'_>, errors: &mut Vec<VerifyError>) {
    for (d, group) in gx.g.dcgs.iter() {
        let span = gx.g.dcgs.span(d);
        let name = format!("%{}", group.name);
        if group.alternatives.is_empty() {
            errors.push(VerifyError::DcgEmpty { name: name.clone(), span });
            continue;
        }
        if group.active as usize >= group.alternatives.len() {
            errors.push(VerifyError::DcgActiveOutOfRange {
                name: name.clone(),
                active: group.active,
                len: group.alternatives.len(),
                span,
            });
        }
        let first_type = group.alternatives.iter().find_map(alt_type);
        let mut first_reqs: Option<BTreeSet<(String, &'static str)>> = None;
        for (i, alt) in group.alternatives.iter().enumerate() {
            let i = i as u32;
            let alt_span = gx.site(Site::Alt(d, i), span);
            match alt {
                Alternative::Kernel(cmd) => {
                    let arg = |j: u32| gx.site(Site::AltArg(d, i, j), alt_span);
                    let spans = CmdSpans { cmd: alt_span, launch: &|| alt_span, arg: &arg };
                    check_kernel_command(gx, cmd, &spans, None, errors);
                }
                Alternative::HostTask(task) => {
                    for a in &task.access {
                        if let Some(info) = gx.resolve_reported(a.mem, alt_span, errors) {
                            if info.class == MemClass::DeviceGlobal {
                                errors.push(VerifyError::DeviceGlobalOperand {
                                    name: info.name(),
                                    context: "a host_task access entry",
                                    span: alt_span,
                                });
                            }
                        }
                    }
                }
                Alternative::Other(kind) => {
                    errors.push(VerifyError::DcgBadAlternative {
                        name: name.clone(),
                        alt: i,
                        command: kind.node_type().name(),
                        span: alt_span,
                    });
                    continue;
                }
            }
            if let (Some(expected), Some(found)) = (first_type, alt_type(alt)) {
                if expected != found {
                    errors.push(VerifyError::DcgMixedTypes {
                        name: name.clone(),
                        alt: i,
                        expected,
                        found,
                        span: alt_span,
                    });
                    continue;
                }
            }
            let reqs: BTreeSet<(String, &'static str)> = alternative_uses(gx, d, i, alt)
                .iter()
                .filter(|u| gx.resolve(u.mem).is_ok_and(|m| m.class == MemClass::Buffer))
                .map(|u| (gx.mem_name(u.mem), u.mode.keyword()))
                .collect();
            match &first_reqs {
                None => first_reqs = Some(reqs),
                Some(expected) if *expected != reqs => errors.push(VerifyError::DcgAccessorMismatch {
                    name: name.clone(),
                    alt: i,
                    expected: show_reqs(expected),
                    found: show_reqs(&reqs),
                    span: alt_span,
                }),
                Some(_) => {}
            }
        }
    }
}

/// Accessor requirements as `@b read, @c write`, or `none`.
fn show_reqs(reqs: &BTreeSet<(String, &'static str)>) -> String {
    if reqs.is_empty() {
        return "none".to_string();
    }
    reqs.iter().map(|(b, m)| format!("{b} {m}")).collect::<Vec<_>>().join(", ")
}
