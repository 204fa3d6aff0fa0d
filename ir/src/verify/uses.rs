//! Memory uses of graph nodes: which memory each command touches and how. Feeds the
//! buffer-lifetime rule, graph-allocation lifetimes, accessor-edge provenance and the
//! accessor requirements of dynamic command group alternatives.

use super::ctx::{Gx, MemClass};
use super::error::VerifyError;
use crate::arena::Handle;
use crate::graph::{Alternative, Arg, ArgValue, DynCommandGroup, KernelCommand, MemRef, Node, NodeKind, Site};
use crate::kernel::ParamType;
use crate::module::MemoryKind;
use crate::span::Span;
use crate::types::Access;

/// One memory use.
#[derive(Clone, Copy, Debug)]
pub(super) struct Use {
    /// The memory.
    pub mem: MemRef,
    /// How it is touched (prefetch and memadvise count as reads).
    pub mode: Access,
    /// Where it is written: the span recorded for `site`, else `fallback`. Looked up only
    /// for a diagnostic ([`Use::span`]): the span table is a map, and valid graphs of
    /// 10^5 nodes would pay a lookup per operand for nothing.
    site: Option<Site>,
    fallback: Span,
    /// Whether it comes through a dynamic parameter (reported at the parameter).
    pub via_dyn: bool,
}

impl Use {
    /// Where the use is written.
    pub(super) fn span(&self, gx: &Gx<'_>) -> Span {
        match self.site {
            Some(site) => gx.site(site, self.fallback),
            None => self.fallback,
        }
    }
}

/// Where the arguments of a kernel command are written.
#[derive(Clone, Copy)]
enum ArgSites {
    /// A kernel node's arguments.
    Node(Handle<Node>),
    /// Alternative `.1` of a dynamic command group.
    Alt(Handle<DynCommandGroup>, u32),
}

/// The uses of a kernel command's arguments, argument `i` written at its site in `sites`
/// (else at `fallback`). A pointer takes the access of its parameter (`read_write` when
/// unknown).
fn command_uses(gx: &Gx<'_>, cmd: &KernelCommand, sites: ArgSites, fallback: Span, f: &mut impl FnMut(Use)) {
    let kernel = gx.m.kernels.try_get(cmd.kernel);
    for (i, arg) in cmd.args.iter().enumerate() {
        let (value, via_dyn) = match arg {
            Arg::Value(v) => (v, false),
            Arg::Dyn(d) => match gx.g.dyn_params.try_get(*d) {
                Some(p) => (&p.value, true),
                None => continue,
            },
        };
        let site = Some(match sites {
            ArgSites::Node(n) => Site::NodeArg(n, i as u32),
            ArgSites::Alt(d, alt) => Site::AltArg(d, alt, i as u32),
        });
        match value {
            ArgValue::Pointer(p) => {
                let mode = match kernel.and_then(|k| k.params.get(i)).map(|p| p.ty) {
                    Some(ParamType::Buffer { access, .. }) => access,
                    _ => Access::ReadWrite,
                };
                f(Use { mem: p.base, mode, site, fallback, via_dyn });
            }
            ArgValue::Accessor(a) => f(Use { mem: a.buffer, mode: a.mode, site, fallback, via_dyn }),
            _ => {}
        }
    }
}

/// Calls `f` with each use of one alternative of a dynamic command group.
fn for_each_alternative_use(
    gx: &Gx<'_>,
    d: Handle<DynCommandGroup>,
    index: u32,
    alt: &Alternative,
    f: &mut impl FnMut(Use),
) {
    let alt_span = gx.site(Site::Alt(d, index), gx.g.dcgs.span(d));
    match alt {
        Alternative::Kernel(cmd) => command_uses(gx, cmd, ArgSites::Alt(d, index), alt_span, f),
        Alternative::HostTask(task) => {
            for a in &task.access {
                f(Use { mem: a.mem, mode: a.mode, site: None, fallback: alt_span, via_dyn: false });
            }
        }
        Alternative::Other(_) => {}
    }
}

/// The uses of one alternative of a dynamic command group.
pub(super) fn alternative_uses(gx: &Gx<'_>, d: Handle<DynCommandGroup>, index: u32, alt: &Alternative) -> Vec<Use> {
    let mut out = Vec::new();
    for_each_alternative_use(gx, d, index, alt, &mut |u| out.push(u));
    out
}

/// Calls `f` with every memory use of a node, without allocating. A `dynamic` node uses
/// what any of its alternatives uses (any of them may become active), located at the node.
pub(super) fn for_each_node_use(gx: &Gx<'_>, n: Handle<Node>, node: &Node, f: &mut impl FnMut(Use)) {
    let span = gx.node_span(n);
    let at_node = |mem: MemRef, mode: Access| Use { mem, mode, site: None, fallback: span, via_dyn: false };
    match &node.kind {
        NodeKind::Kernel(cmd) => command_uses(gx, cmd, ArgSites::Node(n), span, f),
        NodeKind::Memcpy { dst, src, .. } => {
            f(at_node(dst.base, Access::Write));
            f(at_node(src.base, Access::Read));
        }
        NodeKind::Memset { dst, .. } | NodeKind::Memfill { dst, .. } => f(at_node(dst.base, Access::Write)),
        NodeKind::Prefetch { ptr, .. } | NodeKind::Memadvise { ptr, .. } => f(at_node(ptr.base, Access::Read)),
        NodeKind::Comm(c) => f(at_node(c.ptr.base, c.op.access())),
        NodeKind::HostTask(task) | NodeKind::Native(task) => {
            for (i, a) in task.access.iter().enumerate() {
                let site = Some(Site::NodeListItem(n, i as u32));
                f(Use { mem: a.mem, mode: a.mode, site, fallback: span, via_dyn: false });
            }
        }
        NodeKind::Dynamic { dcg } => {
            if let Some(group) = gx.g.dcgs.try_get(*dcg) {
                for (i, alt) in group.alternatives.iter().enumerate() {
                    for_each_alternative_use(gx, *dcg, i as u32, alt, &mut |u| {
                        f(Use { site: None, fallback: span, ..u })
                    });
                }
            }
        }
        _ => {}
    }
}

/// Every memory use of a node (see [`for_each_node_use`]).
pub(super) fn node_uses(gx: &Gx<'_>, n: Handle<Node>, node: &Node) -> Vec<Use> {
    let mut out = Vec::new();
    for_each_node_use(gx, n, node, &mut |u| out.push(u));
    out
}

/// Whether a use names a module `buffer`.
pub(super) fn is_buffer(gx: &Gx<'_>, u: &Use) -> bool {
    gx.resolve(u.mem).is_ok_and(|info| info.class == MemClass::Buffer)
}

/// Buffers need `assume_buffer_outlives_graph` (§22 #6, #12, #53): reported once per node,
/// dynamic parameter and dynamic command group, at its first buffer use.
pub(super) fn check_buffer_lifetime(gx: &Gx<'_>, errors: &mut Vec<VerifyError>) {
    let g = gx.g;
    // Without any buffer in the module no use can name one: skip the walk.
    let buffers = gx.m.memories.iter().any(|(_, mem)| matches!(mem.kind, MemoryKind::Buffer));
    if g.properties.assume_buffer_outlives_graph || !buffers {
        return;
    }
    let report = |u: &Use, errors: &mut Vec<VerifyError>| {
        errors.push(VerifyError::BufferWithoutAssume {
            buffer: gx.mem_name(u.mem),
            graph: gx.graph_name(),
            span: u.span(gx),
        })
    };
    for (h, p) in g.dyn_params.iter() {
        let mem = match &p.value {
            ArgValue::Accessor(a) => a.buffer,
            ArgValue::Pointer(ptr) => ptr.base,
            _ => continue,
        };
        let u = Use { mem, mode: Access::Read, site: None, fallback: g.dyn_params.span(h), via_dyn: false };
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
        let mut first = None;
        for_each_node_use(gx, n, node, &mut |u| {
            if first.is_none() && !u.via_dyn && is_buffer(gx, &u) {
                first = Some(u);
            }
        });
        if let Some(u) = first {
            report(&u, errors);
        }
    }
}
