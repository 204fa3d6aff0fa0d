//! Memory uses of graph nodes: which memory each command touches and how. Feeds the
//! buffer-lifetime rule, graph-allocation lifetimes, accessor-edge provenance and the
//! accessor requirements of dynamic command group alternatives.

use super::ctx::{Gx, MemClass};
use super::error::VerifyError;
use crate::arena::Handle;
use crate::graph::{Alternative, Arg, ArgValue, DynCommandGroup, KernelCommand, MemRef, Node, NodeKind, Site};
use crate::kernel::ParamType;
use crate::span::Span;
use crate::types::Access;

/// One memory use.
#[derive(Clone, Copy, Debug)]
pub(super) struct Use {
    /// The memory.
    pub mem: MemRef,
    /// How it is touched (prefetch and memadvise count as reads).
    pub mode: Access,
    /// Where it is written.
    pub span: Span,
    /// Whether it comes through a dynamic parameter (reported at the parameter).
    pub via_dyn: bool,
}

/// The uses of a kernel command's arguments. A pointer takes the access of its parameter
/// (`read_write` when unknown).
pub(super) fn command_uses(gx: &Gx<'_>, cmd: &KernelCommand, arg_span: &dyn Fn(u32) -> Span) -> Vec<Use> {
    let kernel = gx.m.kernels.try_get(cmd.kernel);
    let mut out = Vec::new();
    for (i, arg) in cmd.args.iter().enumerate() {
        let (value, via_dyn) = match arg {
            Arg::Value(v) => (v, false),
            Arg::Dyn(d) => match gx.g.dyn_params.try_get(*d) {
                Some(p) => (&p.value, true),
                None => continue,
            },
        };
        let span = arg_span(i as u32);
        match value {
            ArgValue::Pointer(p) => {
                let mode = match kernel.and_then(|k| k.params.get(i)).map(|p| p.ty) {
                    Some(ParamType::Buffer { access, .. }) => access,
                    _ => Access::ReadWrite,
                };
                out.push(Use { mem: p.base, mode, span, via_dyn });
            }
            ArgValue::Accessor(a) => out.push(Use { mem: a.buffer, mode: a.mode, span, via_dyn }),
            _ => {}
        }
    }
    out
}

/// The uses of one alternative of a dynamic command group.
pub(super) fn alternative_uses(gx: &Gx<'_>, d: Handle<DynCommandGroup>, index: u32, alt: &Alternative) -> Vec<Use> {
    let alt_span = gx.site(Site::Alt(d, index), gx.g.dcgs.span(d));
    match alt {
        Alternative::Kernel(cmd) => command_uses(gx, cmd, &|i| gx.site(Site::AltArg(d, index, i), alt_span)),
        Alternative::HostTask(task) => {
            task.access.iter().map(|a| Use { mem: a.mem, mode: a.mode, span: alt_span, via_dyn: false }).collect()
        }
        Alternative::Other(_) => Vec::new(),
    }
}

/// Every memory use of a node. A `dynamic` node uses what any of its alternatives uses
/// (any of them may become active), located at the node.
pub(super) fn node_uses(gx: &Gx<'_>, n: Handle<Node>, node: &Node) -> Vec<Use> {
    let span = gx.node_span(n);
    let one = |mem: MemRef, mode: Access| vec![Use { mem, mode, span, via_dyn: false }];
    match &node.kind {
        NodeKind::Kernel(cmd) => command_uses(gx, cmd, &|i| gx.site(Site::NodeArg(n, i), span)),
        NodeKind::Memcpy { dst, src, .. } => {
            let mut v = one(dst.base, Access::Write);
            v.extend(one(src.base, Access::Read));
            v
        }
        NodeKind::Memset { dst, .. } | NodeKind::Memfill { dst, .. } => one(dst.base, Access::Write),
        NodeKind::Prefetch { ptr, .. } | NodeKind::Memadvise { ptr, .. } => one(ptr.base, Access::Read),
        NodeKind::HostTask(task) | NodeKind::Native(task) => task
            .access
            .iter()
            .enumerate()
            .map(|(i, a)| Use {
                mem: a.mem,
                mode: a.mode,
                span: gx.site(Site::NodeListItem(n, i as u32), span),
                via_dyn: false,
            })
            .collect(),
        NodeKind::Dynamic { dcg } => match gx.g.dcgs.try_get(*dcg) {
            Some(group) => group
                .alternatives
                .iter()
                .enumerate()
                .flat_map(|(i, alt)| alternative_uses(gx, *dcg, i as u32, alt))
                .map(|u| Use { span, ..u })
                .collect(),
            None => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// Whether a use names a module `buffer`.
pub(super) fn is_buffer(gx: &Gx<'_>, u: &Use) -> bool {
    gx.resolve(u.mem).is_ok_and(|info| info.class == MemClass::Buffer)
}

/// Buffers need `assume_buffer_outlives_graph` (§22 #6, #12, #53): reported once per node,
/// dynamic parameter and dynamic command group, at its first buffer use.
pub(super) fn check_buffer_lifetime(gx: &Gx<'_>, errors: &mut Vec<VerifyError>) {
    let g = gx.g;
    if g.properties.assume_buffer_outlives_graph {
        return;
    }
    let report = |u: &Use, errors: &mut Vec<VerifyError>| {
        errors.push(VerifyError::BufferWithoutAssume {
            buffer: gx.mem_name(u.mem),
            graph: gx.graph_name(),
            span: u.span,
        })
    };
    for (h, p) in g.dyn_params.iter() {
        let mem = match &p.value {
            ArgValue::Accessor(a) => a.buffer,
            ArgValue::Pointer(ptr) => ptr.base,
            _ => continue,
        };
        let u = Use { mem, mode: Access::Read, span: g.dyn_params.span(h), via_dyn: false };
        if is_buffer(gx, &u) {
            report(&u, errors);
        }
    }
    for (d, group) in g.dcgs.iter() {
        let first = group
            .alternatives
            .iter()
            .enumerate()
            .flat_map(|(i, alt)| alternative_uses(gx, d, i as u32, alt))
            .find(|u| !u.via_dyn && is_buffer(gx, u));
        if let Some(u) = first {
            report(&u, errors);
        }
    }
    for (n, node) in g.nodes.iter() {
        if matches!(node.kind, NodeKind::Dynamic { .. }) {
            continue;
        }
        if let Some(u) = node_uses(gx, n, node).iter().find(|u| !u.via_dyn && is_buffer(gx, u)) {
            report(u, errors);
        }
    }
}
