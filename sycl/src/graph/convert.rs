//! Converting a command group into an IR node kind: pointers, kernel arguments checked
//! against their parameters, accessor requirements, access lists, sub-graph slots.

use super::checks::{check_banned, event_node};
use super::module::Child;
use super::GraphInner;
use crate::args::KArg;
use crate::buffer::Accessor;
use crate::dynamic::DynamicParameter;
use crate::error::{ensure, Result, SyclError};
use crate::handler::{Command, CopyEnd, Handler, HostSink};
use crate::memory::{Ptr, PtrBase};
use cmdgraph_ir::{
    Arg, ArgValue, DynParam, Handle, HostTaskCommand, KernelCommand, MemAccess, MemRef, NodeKind, ParamType, Pointer,
    Type, UsmKind,
};
use std::cell::RefCell;
use std::rc::Rc;

/// How a command group reaches the graph.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Via {
    Explicit,
    /// A one-node graph that runs an executing-queue submission.
    Internal,
    Recording {
        transitive: bool,
    },
    Dcg,
}

impl Via {
    /// Picks the row for the explicit API, recording, or a dynamic command group.
    pub(crate) fn row(self, explicit: u32, recording: u32, dcg: u32) -> u32 {
        match self {
            Via::Explicit | Via::Internal => explicit,
            Via::Recording { .. } => recording,
            Via::Dcg => dcg,
        }
    }
}

/// Kernel argument slots registered with dynamic parameters: (argument index, parameter),
/// in registration order.
pub(crate) type Registrations = Vec<(usize, Handle<DynParam>)>;

/// What converting a command group produced.
pub(crate) struct Converted {
    pub(crate) kind: NodeKind,
    /// Accessor requirements (the handler's, accessor arguments, accessor parameters).
    pub(crate) reqs: Vec<Accessor>,
    /// The kernel argument slots registered with dynamic parameters; the caller records
    /// them once the node (or alternative) exists.
    pub(crate) regs: Registrations,
}

/// A pointer as the IR writes it; checks that it is this graph's and in bounds.
pub(crate) fn pointer(
    rc: &Rc<RefCell<GraphInner>>,
    inner: &GraphInner,
    p: &Ptr,
    bytes: u64,
    what: &str,
) -> Result<Pointer> {
    let base = match &p.base {
        PtrBase::Usm(u) => {
            ensure(u.mem.ctx.same(&inner.ctx), 0, || {
                format!("{what}: USM allocation `@{}` belongs to another context", u.name())
            })?;
            MemRef::Memory(u.handle())
        }
        PtrBase::Alloc { graph, node, .. } => {
            let own = std::ptr::eq(graph.as_ptr(), Rc::as_ptr(rc));
            let is_alloc = matches!(inner.ir.nodes.try_get(*node).map(|n| &n.kind), Some(NodeKind::AsyncMalloc { .. }));
            ensure(own && is_alloc, 73, || {
                format!("{what}: the pointer comes from an async_malloc of another graph; graph-owned memory is only valid inside its own graph")
            })?;
            MemRef::Alloc(*node)
        }
        PtrBase::Dangling => {
            return Err(SyclError::invalid(0, format!("{what}: the pointer comes from a failed async_malloc")))
        }
    };
    let end = p.offset.checked_add(bytes);
    ensure(end.is_some_and(|e| e <= p.allocation_bytes()), 0, || {
        format!(
            "{what}: {bytes} bytes at byte offset {} run past the end of the allocation ({} bytes)",
            p.offset,
            p.allocation_bytes()
        )
    })?;
    Ok(Pointer { base, offset: p.offset })
}

/// The element type of the memory a pointer points into.
fn pointer_elem(inner: &GraphInner, p: &Ptr) -> Option<cmdgraph_ir::Type> {
    match &p.base {
        PtrBase::Usm(u) => Some(u.elem()),
        PtrBase::Alloc { node, .. } => match inner.ir.nodes.try_get(*node).map(|n| &n.kind) {
            Some(NodeKind::AsyncMalloc { elem, .. }) => Some(*elem),
            _ => None,
        },
        PtrBase::Dangling => None,
    }
}

/// One kernel argument as an IR value, checked against its parameter.
fn arg_value(
    rc: &Rc<RefCell<GraphInner>>,
    inner: &GraphInner,
    kernel: &str,
    index: usize,
    param: ParamType,
    arg: &KArg,
    reqs: &mut Vec<Accessor>,
) -> Result<ArgValue> {
    let mismatch = |got: &str| {
        SyclError::invalid(
            0,
            format!("kernel `@{kernel}` argument {index}: the parameter is {param:?} but the argument is {got}"),
        )
    };
    match (arg, param) {
        (KArg::Scalar(lit), ParamType::Value(t)) if t.lanes == 1 && lit.ty == Some(t.scalar) => {
            Ok(ArgValue::Scalar(*lit))
        }
        (KArg::Bytes(b), ParamType::Value(t)) if b.len() as u64 == t.size() => Ok(ArgValue::Bytes(b.clone())),
        (KArg::Ptr(p), ParamType::Buffer { elem, .. }) => {
            if pointer_elem(inner, p) != Some(elem) {
                return Err(mismatch(&format!("a pointer to {:?} elements", pointer_elem(inner, p))));
            }
            if p.offset % elem.size().max(1) != 0 {
                return Err(mismatch(&format!(
                    "a pointer {} bytes into its memory, not on an element boundary",
                    p.offset
                )));
            }
            Ok(ArgValue::Pointer(pointer(rc, inner, p, 0, &format!("kernel `@{kernel}` argument {index}"))?))
        }
        (KArg::Acc(a), ParamType::Buffer { elem, access }) => {
            if a.buffer.elem() != elem || !a.mode.satisfies(access) {
                return Err(mismatch(&format!("an accessor on {} elements with mode {}", a.buffer.elem(), a.mode)));
            }
            ensure(a.buffer.0.mem.ctx.same(&inner.ctx), 0, || {
                format!("buffer `@{}` belongs to another context", a.buffer.name())
            })?;
            reqs.push(a.clone());
            Ok(ArgValue::Accessor(a.to_ir()))
        }
        (KArg::Local { elem, count }, ParamType::Local { elem: e }) if *elem == e => {
            Ok(ArgValue::Local { elem: *elem, count: *count })
        }
        (KArg::Dyn(_), _) => Err(SyclError::invalid(0, "a dynamic parameter cannot hold another dynamic parameter")),
        (other, _) => Err(mismatch(&format!("{other:?}"))),
    }
}

/// The value a dynamic parameter holds now, as the API holds it.
fn dyn_value(inner: &GraphInner, p: &DynamicParameter) -> Result<KArg> {
    inner.dyn_values.get(p.handle.index()).cloned().ok_or_else(|| SyclError::invalid(0, "unknown dynamic parameter"))
}

/// Kernel arguments: `args` with `set_arg` values applied, each checked; dynamic
/// parameters must belong to this graph (rows 42, 43). Also returns every registration
/// (argument index, parameter): the launch's dynamic arguments, then each `set_arg` of a
/// parameter in call order, those the slot no longer shows included (decision A6).
fn kernel_args(
    rc: &Rc<RefCell<GraphInner>>,
    inner: &GraphInner,
    kernel: &crate::kernel::KernelRef,
    launch: &cmdgraph_ir::Launch,
    mut args: Vec<KArg>,
    h: &Handler,
    reqs: &mut Vec<Accessor>,
) -> Result<(Vec<Arg>, Registrations)> {
    let mut regs: Vec<(usize, DynamicParameter)> = Vec::new();
    let launch_regs = args.iter().enumerate().filter_map(|(i, a)| match a {
        KArg::Dyn(p) => Some((i, p.clone())),
        _ => None,
    });
    for (i, p) in launch_regs.chain(h.dyn_set_args.iter().map(|(i, p)| (*i as usize, p.clone()))) {
        if !regs.iter().any(|(j, q)| *j == i && q.handle == p.handle) {
            regs.push((i, p));
        }
    }
    for (i, a) in &h.set_args {
        let i = *i as usize;
        match i.cmp(&args.len()) {
            std::cmp::Ordering::Less => args[i] = a.clone(),
            std::cmp::Ordering::Equal => args.push(a.clone()),
            std::cmp::Ordering::Greater => {
                return Err(SyclError::invalid(
                    0,
                    format!("set_arg({i}) leaves argument {} of `@{}` unset", args.len(), kernel.name),
                ))
            }
        }
    }
    ensure(args.len() == kernel.params.len(), 0, || {
        format!("kernel `@{}` takes {} arguments, {} given", kernel.name, kernel.params.len(), args.len())
    })?;
    let local = kernel.params.iter().any(|p| matches!(p, ParamType::Local { .. }));
    ensure(!local || matches!(launch, cmdgraph_ir::Launch::NdRange { .. }), 0, || {
        format!("kernel `@{}` takes work-group memory, so it needs an nd_range launch", kernel.name)
    })?;
    let mut out = Vec::with_capacity(args.len());
    for (i, (arg, param)) in args.iter().zip(&kernel.params).enumerate() {
        match arg {
            KArg::Dyn(p) => {
                check_param_graph(rc, inner, p, 42)?;
                arg_value(rc, inner, &kernel.name, i, *param, &dyn_value(inner, p)?, reqs)?;
                out.push(Arg::Dyn(p.handle));
            }
            other => out.push(Arg::Value(arg_value(rc, inner, &kernel.name, i, *param, other, reqs)?)),
        }
    }
    // A registration the slot does not show now shows once its parameter is updated, so
    // its value must fit the kernel parameter too, and its accessor is a requirement now:
    // an update changes no edges.
    for (i, p) in &regs {
        let shown = matches!(args.get(*i), Some(KArg::Dyn(q)) if q.handle == p.handle);
        if !shown {
            check_param_graph(rc, inner, p, 42)?;
            let param = kernel.params.get(*i).copied().ok_or_else(|| {
                SyclError::invalid(0, format!("set_arg({i}): kernel `@{}` has no argument {i}", kernel.name))
            })?;
            arg_value(rc, inner, &kernel.name, *i, param, &dyn_value(inner, p)?, reqs)?;
        }
    }
    Ok((out, regs.into_iter().map(|(i, p)| (i, p.handle)).collect()))
}

/// Row 42/43: the parameter must belong to this graph.
pub(crate) fn check_param_graph(
    rc: &Rc<RefCell<GraphInner>>,
    inner: &GraphInner,
    p: &DynamicParameter,
    row: u32,
) -> Result<()> {
    ensure(Rc::ptr_eq(&p.graph, rc), row, || {
        format!(
            "a dynamic parameter of another graph is used in graph `@{}`; create the parameter on this graph",
            inner.ir.name
        )
    })
}

/// The USM and buffer memory a host task or native command touches.
fn access_list(
    rc: &Rc<RefCell<GraphInner>>,
    inner: &GraphInner,
    usm: &[(Ptr, cmdgraph_ir::Access)],
    reqs: &[Accessor],
) -> Result<Vec<MemAccess>> {
    let mut out: Vec<MemAccess> =
        reqs.iter().map(|a| MemAccess { mem: MemRef::Memory(a.buffer.handle()), mode: a.mode }).collect();
    for (p, mode) in usm {
        let ptr = pointer(rc, inner, p, 0, "host task access list")?;
        out.push(MemAccess { mem: ptr.base, mode: *mode });
    }
    Ok(out)
}

/// Every accessor the handler requires must be one the command uses, so that the graph
/// records each access it was told about.
fn check_reqs_used(reqs: &[Accessor], used: &[Accessor], what: &str) -> Result<()> {
    match reqs.iter().find(|r| !used.iter().any(|u| u.to_ir() == r.to_ir())) {
        Some(a) => Err(SyclError::invalid(
            0,
            format!("an accessor on buffer `@{}` is required but not used by {what}; a copy requires only its own accessors", a.buffer.name()),
        )),
        None => Ok(()),
    }
}

/// An accessor a copy reads (`dst == false`) or writes: same context, a valid range, a
/// mode that allows it. Returns its elements `[lo, hi)`.
fn copy_accessor(inner: &GraphInner, a: &Accessor, dst: bool, what: &str) -> Result<(u64, u64)> {
    let name = a.buffer.name();
    ensure(a.buffer.0.mem.ctx.same(&inner.ctx), 0, || format!("{what}: buffer `@{name}` belongs to another context"))?;
    let range = a.elements(what)?;
    if dst && !a.mode.writes() {
        return Err(SyclError::invalid(
            0,
            format!("{what}: the destination accessor on buffer `@{name}` is read-only (mode {}); a copy writes it, so use write, read_write or no_init", a.mode),
        ));
    }
    if !dst && !a.mode.reads() {
        return Err(SyclError::invalid(
            0,
            format!("{what}: the source accessor on buffer `@{name}` has mode {}, which cannot be read; use read or read_write", a.mode),
        ));
    }
    Ok(range)
}

/// The IR pointer to the first element of an accessor's range.
fn accessor_pointer(a: &Accessor, lo: u64) -> Pointer {
    Pointer { base: MemRef::Memory(a.buffer.handle()), offset: lo.saturating_mul(a.buffer.elem().size()) }
}

/// A device pointer at one end of a buffer copy: it must point into memory of the
/// buffer's element type `elem`, with room for `bytes`.
fn copy_pointer(
    rc: &Rc<RefCell<GraphInner>>,
    inner: &GraphInner,
    p: &Ptr,
    elem: Type,
    bytes: u64,
    what: &str,
) -> Result<Pointer> {
    if let Some(e) = pointer_elem(inner, p) {
        ensure(e == elem, 0, || {
            format!("{what}: the pointer points into {e} memory but the buffer holds {elem} elements; both ends of a copy need one element type")
        })?;
    }
    pointer(rc, inner, p, bytes, what)
}

/// A `copy` with an accessor at one end or both: the IR `memcpy` and the accessors the
/// node requires (for accessor edges and the buffer rules).
fn copy_node(
    rc: &Rc<RefCell<GraphInner>>,
    inner: &GraphInner,
    dst: &CopyEnd,
    src: &CopyEnd,
    used: &mut Vec<Accessor>,
) -> Result<NodeKind> {
    let (d, s, bytes) = match (dst, src) {
        (CopyEnd::Acc(da), CopyEnd::Acc(sa)) => {
            let (dlo, dhi) = copy_accessor(inner, da, true, "copy destination")?;
            let (slo, shi) = copy_accessor(inner, sa, false, "copy source")?;
            let (de, se) = (da.buffer.elem(), sa.buffer.elem());
            ensure(de == se, 0, || {
                format!("copy: the source buffer `@{}` holds {se} elements but the destination buffer `@{}` holds {de}; both need one element type", sa.buffer.name(), da.buffer.name())
            })?;
            ensure(dhi - dlo >= shi - slo, 0, || {
                format!(
                    "copy: the destination accessor on buffer `@{}` has {} elements, fewer than the {} of the source accessor on `@{}`",
                    da.buffer.name(),
                    dhi - dlo,
                    shi - slo,
                    sa.buffer.name()
                )
            })?;
            used.extend([sa.clone(), da.clone()]);
            (accessor_pointer(da, dlo), accessor_pointer(sa, slo), (shi - slo).saturating_mul(se.size()))
        }
        (CopyEnd::Ptr(dp), CopyEnd::Acc(sa)) => {
            let (lo, hi) = copy_accessor(inner, sa, false, "copy source")?;
            let elem = sa.buffer.elem();
            let bytes = (hi - lo).saturating_mul(elem.size());
            used.push(sa.clone());
            (copy_pointer(rc, inner, dp, elem, bytes, "copy destination")?, accessor_pointer(sa, lo), bytes)
        }
        (CopyEnd::Acc(da), CopyEnd::Ptr(sp)) => {
            let (lo, hi) = copy_accessor(inner, da, true, "copy destination")?;
            let elem = da.buffer.elem();
            let bytes = (hi - lo).saturating_mul(elem.size());
            used.push(da.clone());
            (accessor_pointer(da, lo), copy_pointer(rc, inner, sp, elem, bytes, "copy source")?, bytes)
        }
        (CopyEnd::Ptr(dp), CopyEnd::Ptr(sp)) => {
            // Not built by the handler (that is `memcpy`), kept total.
            (pointer(rc, inner, dp, 0, "copy destination")?, pointer(rc, inner, sp, 0, "copy source")?, 0)
        }
    };
    let overlap =
        d.base == s.base && d.offset < s.offset.saturating_add(bytes) && s.offset < d.offset.saturating_add(bytes);
    ensure(!overlap, 0, || "copy: the source and destination ranges overlap".to_string())?;
    Ok(NodeKind::Memcpy { dst: d, src: s, bytes })
}

/// A copy between host memory and an accessor (`to_host` receives the range's bytes;
/// `from_host` is the element count and bytes to write; `elem` the host element type):
/// done now on an executing queue (an eager submission runs synchronously, after all
/// earlier work), refused in a graph, whose IR has no host-memory operand.
fn host_copy(
    inner: &GraphInner,
    via: Via,
    acc: &Accessor,
    to_host: Option<&HostSink>,
    from_host: Option<(u64, &[u8])>,
    elem: Type,
) -> Result<()> {
    let what = if to_host.is_some() { "copy to host memory" } else { "copy from host memory" };
    if via != Via::Internal {
        return Err(SyclError::unsupported(
            0,
            format!(
                "{what} (accessor on buffer `@{}`) cannot be in graph `@{}`: the IR's memcpy copies between device memory (USM, buffers, graph allocations) only; {}",
                acc.buffer.name(),
                inner.ir.name,
                if to_host.is_some() {
                    "read the buffer after the run, or copy it to a USM allocation (copy_to_ptr)"
                } else {
                    "write the buffer before the run, or copy from a USM allocation (copy_from_ptr)"
                }
            ),
        ));
    }
    let (lo, hi) = copy_accessor(inner, acc, from_host.is_some(), what)?;
    let name = acc.buffer.name();
    let held = acc.buffer.elem();
    ensure(elem == held, 0, || {
        format!("{what}: buffer `@{name}` holds {held} elements, not {elem}; use the element type it was created with")
    })?;
    let size = elem.size();
    let mem = &acc.buffer.0.mem;
    match (to_host, from_host) {
        (Some(sink), _) => {
            let bytes = mem.read_bytes(what, lo.saturating_mul(size), (hi - lo).saturating_mul(size))?;
            sink(&bytes);
        }
        (None, Some((count, data))) => {
            ensure(count == hi - lo, 0, || {
                format!("{what}: the host data has {count} elements but the accessor on buffer `@{name}` covers {}; give exactly as many", hi - lo)
            })?;
            mem.write_bytes(what, lo.saturating_mul(size), data)?;
        }
        (None, None) => {}
    }
    Ok(())
}

/// Converts the handler's command into an IR node kind (None: an empty node).
/// The child slot of executable graph `exec` in `inner` (a sub-graph, or a conditional
/// node's body), added if new: it must have the graph's device and context (row 38; `whose`
/// names it in the message) and no graph-owned allocations (row `alloc_row`,
/// `allocs_message` the message).
fn child(
    inner: &mut GraphInner,
    exec: &crate::ExecutableGraph,
    whose: &str,
    alloc_row: u32,
    allocs_message: &str,
) -> Result<Handle<cmdgraph_ir::Graph>> {
    let (module, root, version, device, ctx, allocs) = exec.snapshot_for_subgraph();
    ensure(device == inner.device && ctx.same(&inner.ctx), 38, || {
        format!("{whose}'s device {} / context {} differ from graph `@{}`'s", device.id(), ctx.id(), inner.ir.name)
    })?;
    ensure(!allocs, alloc_row, || allocs_message.to_string())?;
    let weak = exec.downgrade();
    let slot = match inner.children.iter().position(|c| c.exec.ptr_eq(&weak) && c.version == version) {
        Some(slot) => slot,
        None => {
            inner.children.push(Child { exec: weak, version, module, root });
            inner.children.len() - 1
        }
    };
    Handle::from_usize(slot).ok_or_else(|| SyclError::invalid(0, "too many sub-graphs"))
}

pub(crate) fn convert(
    rc: &Rc<RefCell<GraphInner>>,
    inner: &mut GraphInner,
    h: &mut Handler,
    via: Via,
) -> Result<Converted> {
    let mut reqs = std::mem::take(&mut h.reqs);
    for p in std::mem::take(&mut h.dyn_requires) {
        check_param_graph(rc, inner, &p, 43)?;
        match inner.dyn_values.get(p.handle.index()) {
            Some(KArg::Acc(a)) => reqs.push(a.clone()),
            _ => return Err(SyclError::invalid(43, "handler::require needs a dynamic parameter holding an accessor")),
        }
    }
    let command = h.command.take();
    let visible = matches!(
        command,
        Some(
            Command::HostTask { .. }
                | Command::Native { .. }
                | Command::Kernel { .. }
                | Command::Copy { .. }
                | Command::HostToAcc { .. }
                | Command::AccToHost { .. }
        )
    );
    if !visible && !reqs.is_empty() {
        let what = command.as_ref().map_or("no command", Command::what);
        return Err(SyclError::invalid(
            0,
            format!("the command group requires buffer accessors but holds {what}; accessors serve kernels and host tasks here (use USM pointers for memory commands)"),
        ));
    }
    let mut regs = Vec::new();
    let kind = match command {
        None => NodeKind::Empty,
        Some(Command::Kernel { kernel, launch, args }) => {
            ensure(kernel.ctx.same(&inner.ctx), 0, || {
                format!("kernel `@{}` is registered with another context", kernel.name)
            })?;
            let mut used = Vec::new();
            let (args, kernel_regs) = kernel_args(rc, inner, &kernel, &launch, args, h, &mut used)?;
            regs = kernel_regs;
            if let Some(a) = reqs.iter().find(|r| !used.iter().any(|u| u.to_ir() == r.to_ir())) {
                return Err(SyclError::invalid(
                    0,
                    format!("an accessor on buffer `@{}` is required but not passed to kernel `@{}`; pass it as an argument so the graph records the access", a.buffer.name(), kernel.name),
                ));
            }
            reqs = used;
            NodeKind::Kernel(KernelCommand { kernel: kernel.handle, launch, args })
        }
        Some(Command::Memcpy { dst, src, bytes }) => {
            let d = pointer(rc, inner, &dst, bytes, "memcpy destination")?;
            let s = pointer(rc, inner, &src, bytes, "memcpy source")?;
            let overlap = d.base == s.base
                && d.offset < s.offset.saturating_add(bytes)
                && s.offset < d.offset.saturating_add(bytes);
            ensure(!overlap, 0, || "memcpy: the source and destination ranges overlap".to_string())?;
            NodeKind::Memcpy { dst: d, src: s, bytes }
        }
        Some(Command::Copy { dst, src }) => {
            let mut used = Vec::new();
            let kind = copy_node(rc, inner, &dst, &src, &mut used)?;
            check_reqs_used(&reqs, &used, "the copy")?;
            reqs = used;
            kind
        }
        Some(Command::HostToAcc { dst, elem, count, data }) => {
            check_reqs_used(&reqs, std::slice::from_ref(&dst), "the copy")?;
            host_copy(inner, via, &dst, None, Some((count, &data)), elem)?;
            reqs = Vec::new();
            NodeKind::Empty
        }
        Some(Command::AccToHost { src, elem, sink }) => {
            check_reqs_used(&reqs, std::slice::from_ref(&src), "the copy")?;
            host_copy(inner, via, &src, Some(&sink), None, elem)?;
            reqs = Vec::new();
            NodeKind::Empty
        }
        Some(Command::Memset { dst, value, bytes }) => {
            NodeKind::Memset { dst: pointer(rc, inner, &dst, bytes, "memset")?, value, bytes }
        }
        Some(Command::Fill { dst, pattern, elem, count }) => {
            let bytes = elem.size().saturating_mul(count);
            NodeKind::Memfill { dst: pointer(rc, inner, &dst, bytes, "fill")?, pattern, count }
        }
        Some(Command::Prefetch { ptr, bytes }) => {
            NodeKind::Prefetch { ptr: pointer(rc, inner, &ptr, bytes, "prefetch")?, bytes }
        }
        Some(Command::Comm { op, ptr, bytes }) => {
            let ptr = pointer(rc, inner, &ptr, bytes, op.keyword())?;
            NodeKind::Comm(cmdgraph_ir::comm::CommCommand { op, ptr, bytes })
        }
        Some(Command::Advise { ptr, bytes, advice }) => {
            NodeKind::Memadvise { ptr: pointer(rc, inner, &ptr, bytes, "mem_advise")?, bytes, advice }
        }
        Some(Command::HostTask { callback, usm }) => {
            let access = access_list(rc, inner, &usm, &reqs)?;
            NodeKind::HostTask(HostTaskCommand { callback, access })
        }
        Some(Command::Native { callback, usm }) => {
            let access = access_list(rc, inner, &usm, &reqs)?;
            NodeKind::Native(HostTaskCommand { callback, access })
        }
        Some(Command::Barrier { wait }) => {
            ensure(via != Via::Explicit, 58, || {
                "add: a barrier cannot be added through the explicit API; add an empty node with depends_on_all_leaves instead".to_string()
            })?;
            let wait = wait.iter().map(|e| event_node(rc, inner, e)).collect::<Result<Vec<_>>>()?;
            NodeKind::Barrier { wait }
        }
        Some(Command::AsyncMalloc { elem, count, pool }) => {
            ensure(pool.kind == UsmKind::Device, via.row(7, 56, 13), || {
                format!("async_malloc: a graph allocation must be usm::alloc::device, not {}", pool.kind.keyword())
            })?;
            NodeKind::AsyncMalloc { elem, count, kind: pool.kind, zero_init: pool.zero_init }
        }
        Some(Command::AsyncFree { ptr }) => {
            pointer(rc, inner, &ptr, 0, "async_free")?;
            match ptr.base {
                PtrBase::Alloc { node, .. } if ptr.offset == 0 => NodeKind::AsyncFree { alloc: node },
                _ => {
                    return Err(SyclError::invalid(
                        73,
                        "async_free: the pointer is not the start of an allocation made by async_malloc in this graph",
                    ))
                }
            }
        }
        Some(Command::Subgraph { exec, shortcut }) => {
            let graph = child(
                inner,
                &exec,
                "ext_oneapi_graph: the executable graph",
                if shortcut { 37 } else { via.row(57, 39, 39) },
                "ext_oneapi_graph: a graph with graph-owned allocations (async_malloc) cannot be a sub-graph",
            )?;
            NodeKind::Subgraph { graph }
        }
        Some(Command::Conditional { kind, cond, bodies }) => {
            let what = match kind {
                cmdgraph_ir::CondKind::If => "ext_cmdgraph_if",
                cmdgraph_ir::CondKind::While => "ext_cmdgraph_while",
                cmdgraph_ir::CondKind::Switch => "ext_cmdgraph_switch",
            };
            ensure(
                matches!(cond.base, PtrBase::Usm(_)) && pointer_elem(inner, &cond) == Some(cmdgraph_ir::Type::U32),
                0,
                || format!("{what}: the condition must point at a u32 of a USM allocation (docs/conditional.md)"),
            )?;
            let cond = pointer(rc, inner, &cond, 4, what)?;
            let whose = format!("{what}: a body");
            let allocs =
                format!("{what}: a body with graph-owned allocations (async_malloc) cannot run in a conditional node");
            let slots =
                bodies.iter().map(|exec| child(inner, exec, &whose, 39, &allocs)).collect::<Result<Vec<_>>>()?;
            NodeKind::Conditional { kind, cond, bodies: slots }
        }
        Some(other @ (Command::DeviceGlobalCopy { .. } | Command::Banned(_))) => {
            check_banned(&Some(other), false)?;
            NodeKind::Empty
        }
    };
    Ok(Converted { kind, reqs, regs })
}
