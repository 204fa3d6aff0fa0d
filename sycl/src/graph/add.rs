//! Turning a command group into a node: the checks of `add` and of recorded submissions
//! (§22 rows 4-11, 37-43, 47, 48, 53, 54, 56-59), and the node's inline edges.
//!
//! Edge order of a new node (the creation order whole-graph update compares; decision
//! A5 drops an edge whose source is already listed):
//! 1. the in-order edge from the queue's previous node (`via in_order`);
//! 2. `property::node::depends_on` nodes, in the order given;
//! 3. `depends_on_all_leaves`: the graph's leaves in creation order (`via all_leaves`);
//! 4. `handler::depends_on` events in call order (`via event`, or `via transitive` for
//!    the submission that switched its queue to recording);
//! 5. accessor data dependencies, sources in creation order (`via accessor`);
//! 6. a barrier's wait list, or the leaves recorded from its queue (`via barrier`);
//! 7. the queue's last barrier, unless the edges above already order it (`via barrier`).

use super::edges::{accessor_deps, leaves, queue_leaves, Adjacency, Deps};
use super::module::Child;
use super::GraphInner;
use crate::args::KArg;
use crate::dynamic::{DynamicCommandGroup, DynamicParameter};
use crate::error::{ensure, Result, SyclError};
use crate::handler::{Command, Handler, Mode};
use crate::memory::{Accessor, Ptr, PtrBase};
use crate::props::NodeProps;
use crate::queue::{Event, EventKind};
use cmdgraph_ir::{
    Arg, ArgValue, EdgeKind, Handle, HostTaskCommand, KernelCommand, MemAccess, MemRef, Node, NodeKind, ParamType,
    Pointer, UsmKind,
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
    fn row(self, explicit: u32, recording: u32, dcg: u32) -> u32 {
        match self {
            Via::Explicit | Via::Internal => explicit,
            Via::Recording { .. } => recording,
            Via::Dcg => dcg,
        }
    }
}

/// What converting a command group produced.
pub(crate) struct Converted {
    pub(crate) kind: NodeKind,
    /// Accessor requirements (the handler's, accessor arguments, accessor parameters).
    pub(crate) reqs: Vec<Accessor>,
}

/// `add(props)`: an empty node.
pub(crate) fn add_empty(rc: &Rc<RefCell<GraphInner>>, props: &NodeProps) -> Result<Handle<Node>> {
    let mut inner = rc.borrow_mut();
    inner.check_not_recording(4, "add (empty node)")?;
    let mut deps = Deps::default();
    explicit_deps(rc, &inner, props, &mut deps)?;
    Ok(inner.push_node(NodeKind::Empty, None, &deps.list, Vec::new()))
}

/// Edges 2 and 3: `depends_on` and `depends_on_all_leaves`.
fn explicit_deps(rc: &Rc<RefCell<GraphInner>>, inner: &GraphInner, props: &NodeProps, deps: &mut Deps) -> Result<()> {
    for n in &props.depends_on {
        ensure(Rc::ptr_eq(&n.graph, rc), 0, || {
            format!("property::node::depends_on names a node of another graph than `@{}`", inner.ir.name)
        })?;
        deps.push(n.handle, EdgeKind::DependsOn);
    }
    if props.all_leaves {
        for leaf in leaves(&inner.ir) {
            deps.push(leaf, EdgeKind::AllLeaves);
        }
    }
    Ok(())
}

/// The node an event stands for, if it may make an edge in this graph (rows 47, 48).
pub(crate) fn event_node(rc: &Rc<RefCell<GraphInner>>, inner: &GraphInner, event: &Event) -> Result<Handle<Node>> {
    match &*event.0 {
        EventKind::Recorded { discard: true, .. } => Err(SyclError::invalid(
            48,
            "depends_on: the event comes from a queue with property::queue::discard_events; such events cannot form graph edges",
        )),
        EventKind::Recorded { graph, node, .. } if std::ptr::eq(graph.as_ptr(), Rc::as_ptr(rc)) => Ok(*node),
        EventKind::Recorded { .. } => Err(SyclError::invalid(
            47,
            format!("depends_on: the event was recorded into another graph than `@{}`; only events of submissions recorded to the same graph make edges", inner.ir.name),
        )),
        EventKind::Done { .. } => Err(SyclError::invalid(
            47,
            format!("depends_on: the event is not from a submission recorded to graph `@{}`; a graph node can only depend on nodes of its graph (decision A11)", inner.ir.name),
        )),
    }
}

/// Rows 59 and 60: commands graphs do not allow or do not implement.
pub(crate) fn check_banned(command: &Option<Command>, scratch: bool) -> Result<()> {
    if scratch {
        return Err(SyclError::invalid(
            59,
            "the work_group_scratch_size kernel property cannot be used in a graph node (000 §8.11.18)",
        ));
    }
    match command {
        Some(Command::Banned(b)) => {
            Err(SyclError { code: b.code, row: b.row, message: format!("{} cannot be used in a graph node", b.what) })
        }
        Some(Command::DeviceGlobalCopy { global, .. }) => Err(SyclError::invalid(
            59,
            format!(
                "copy to device_global `@{}` cannot be added to a graph (000 §8.11.5); only kernels may touch it",
                global.name()
            ),
        )),
        _ => Ok(()),
    }
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

/// Kernel arguments: `args` with `set_arg` values applied, each checked; dynamic
/// parameters must belong to this graph (rows 42, 43).
fn kernel_args(
    rc: &Rc<RefCell<GraphInner>>,
    inner: &GraphInner,
    kernel: &crate::kernel::KernelRef,
    launch: &cmdgraph_ir::Launch,
    mut args: Vec<KArg>,
    set_args: &std::collections::BTreeMap<u32, KArg>,
    reqs: &mut Vec<Accessor>,
) -> Result<Vec<Arg>> {
    for (i, a) in set_args {
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
                let value = inner.dyn_values.get(p.handle.index()).cloned();
                let value = value.ok_or_else(|| SyclError::invalid(0, "unknown dynamic parameter"))?;
                arg_value(rc, inner, &kernel.name, i, *param, &value, reqs)?;
                out.push(Arg::Dyn(p.handle));
            }
            other => out.push(Arg::Value(arg_value(rc, inner, &kernel.name, i, *param, other, reqs)?)),
        }
    }
    Ok(out)
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

/// Converts the handler's command into an IR node kind (None: an empty node).
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
    let visible = matches!(command, Some(Command::HostTask { .. } | Command::Native { .. } | Command::Kernel { .. }));
    if !visible && !reqs.is_empty() {
        let what = command.as_ref().map_or("no command", Command::what);
        return Err(SyclError::invalid(
            0,
            format!("the command group requires buffer accessors but holds {what}; accessors serve kernels and host tasks here (use USM pointers for memory commands)"),
        ));
    }
    let kind = match command {
        None => NodeKind::Empty,
        Some(Command::Kernel { kernel, launch, args }) => {
            ensure(kernel.ctx.same(&inner.ctx), 0, || {
                format!("kernel `@{}` is registered with another context", kernel.name)
            })?;
            let mut used = Vec::new();
            let args = kernel_args(rc, inner, &kernel, &launch, args, &h.set_args, &mut used)?;
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
            let (module, root, version, device, ctx, allocs) = exec.snapshot_for_subgraph();
            ensure(device == inner.device && ctx.same(&inner.ctx), 38, || {
                format!(
                    "ext_oneapi_graph: the executable graph's device {} / context {} differ from graph `@{}`'s",
                    device.id(),
                    ctx.id(),
                    inner.ir.name
                )
            })?;
            ensure(!allocs, if shortcut { 37 } else { via.row(57, 39, 39) }, || {
                "ext_oneapi_graph: a graph with graph-owned allocations (async_malloc) cannot be a sub-graph"
                    .to_string()
            })?;
            let weak = exec.downgrade();
            let slot = match inner.children.iter().position(|c| c.exec.ptr_eq(&weak) && c.version == version) {
                Some(slot) => slot,
                None => {
                    inner.children.push(Child { exec: weak, version, module, root });
                    inner.children.len() - 1
                }
            };
            let graph = Handle::from_usize(slot).ok_or_else(|| SyclError::invalid(0, "too many sub-graphs"))?;
            NodeKind::Subgraph { graph }
        }
        Some(other @ (Command::DeviceGlobalCopy { .. } | Command::Banned(_))) => {
            check_banned(&Some(other), false)?;
            NodeKind::Empty
        }
    };
    Ok(Converted { kind, reqs })
}

/// Registrations with dynamic parameters a handler makes (rows 8, 40, 41, 43).
fn check_dynamic(h: &Handler, via: Via) -> Result<()> {
    let kernel_dyn = match &h.command {
        Some(Command::Kernel { args, .. }) => args.iter().any(|a| matches!(a, KArg::Dyn(_))),
        _ => false,
    };
    let set_dyn = h.set_args.values().any(|a| matches!(a, KArg::Dyn(_)));
    let uses = kernel_dyn || set_dyn || !h.dyn_requires.is_empty();
    if !uses {
        return Ok(());
    }
    let row = if kernel_dyn || set_dyn { 40 } else { 43 };
    if let Via::Recording { .. } = via {
        return Err(SyclError::invalid(
            row,
            "set_arg/require with a dynamic parameter in a command group submitted to a recording queue; dynamic parameters belong to the explicit API (graph.add)",
        ));
    }
    let non_kernel = !matches!(h.command, Some(Command::Kernel { .. }));
    if non_kernel && (set_dyn || !h.dyn_requires.is_empty()) && via == Via::Explicit {
        return Err(SyclError::invalid(
            8,
            "add: the command group registers a dynamic parameter but its command is not a kernel; only kernel arguments can be dynamic",
        ));
    }
    Ok(())
}

/// Buffer rules (rows 6, 12, 53, 54).
pub(crate) fn check_buffers(inner: &GraphInner, reqs: &[Accessor], via: Via) -> Result<()> {
    if let Some(a) = reqs.first() {
        ensure(inner.props.assume_buffer_outlives_graph, via.row(6, 53, 12), || {
            format!(
                "buffer `@{}` is used in graph `@{}`, which was not created with property::graph::assume_buffer_outlives_graph",
                a.buffer.name(),
                inner.ir.name
            )
        })?;
    }
    if matches!(via, Via::Explicit | Via::Recording { .. }) {
        if let Some(a) = reqs.iter().find(|a| a.mode.writes() && a.buffer.writes_back()) {
            return Err(SyclError::invalid(
                54,
                format!(
                    "buffer `@{}` would write back to host memory when destroyed, which a graph cannot do; call set_write_back(false) or set_final_data_none() first",
                    a.buffer.name()
                ),
            ));
        }
    }
    Ok(())
}

impl GraphInner {
    /// `add(cgf)` or a recorded submission: checks, converts, computes edges, appends.
    pub(crate) fn add_command_group(
        rc: &Rc<RefCell<GraphInner>>,
        mut h: Handler,
        props: &NodeProps,
    ) -> Result<Handle<Node>> {
        if let Some(e) = h.error.take() {
            return Err(e);
        }
        let (via, queue) = match &h.mode {
            Mode::Explicit => (Via::Explicit, None),
            Mode::Internal => (Via::Internal, None),
            Mode::Recording { queue, transitive } => (Via::Recording { transitive: *transitive }, Some(queue.clone())),
            Mode::Dcg | Mode::Eager { .. } => return Err(SyclError::invalid(0, "internal: not a graph submission")),
        };
        let mut inner = rc.borrow_mut();
        if via == Via::Explicit {
            inner.check_not_recording(5, "add")?;
        }
        check_banned(&h.command, h.scratch)?;
        check_dynamic(&h, via)?;
        let expected = match &h.command {
            Some(Command::AsyncMalloc { .. }) => Some(inner.ir.nodes.len()),
            _ => None,
        };
        let converted = convert(rc, &mut inner, &mut h, via)?;
        check_buffers(&inner, &converted.reqs, via)?;
        let event_kind = match via {
            Via::Recording { transitive: true } => EdgeKind::Transitive,
            _ => EdgeKind::Event,
        };
        let events = h.deps.iter().map(|e| event_node(rc, &inner, e)).collect::<Result<Vec<_>>>()?;

        let rec = queue.as_ref().map(|q| inner.queue_rec(q));
        let adj = Adjacency::new(&inner.ir);
        let mut deps = Deps::default();
        if let (Some(q), Some(r)) = (&queue, rec) {
            if let (true, Some(last)) = (q.props().in_order, inner.queues[r].last) {
                deps.push(last, EdgeKind::InOrder);
            }
        }
        explicit_deps(rc, &inner, props, &mut deps)?;
        for e in events {
            deps.push(e, event_kind);
        }
        let ir_reqs: Vec<_> = converted.reqs.iter().map(Accessor::to_ir).collect();
        for n in accessor_deps(&inner.ir, &inner.reqs, &ir_reqs, &adj) {
            deps.push(n, EdgeKind::Accessor);
        }
        if let NodeKind::Barrier { wait } = &converted.kind {
            let sources = match (wait.is_empty(), rec) {
                (true, Some(r)) => queue_leaves(&inner.ir, inner.queues[r].ir),
                _ => wait.clone(),
            };
            for n in sources {
                deps.push(n, EdgeKind::Barrier);
            }
        }
        if let Some(b) = rec.and_then(|r| inner.queues[r].barrier) {
            let implied = deps.sources().iter().any(|s| *s == b || adj.reaches(b, *s));
            if !implied {
                deps.push(b, EdgeKind::Barrier);
            }
        }

        if expected.is_some_and(|n| n != inner.ir.nodes.len()) {
            return Err(SyclError::invalid(0, "async_malloc: the graph changed while its command group ran"));
        }
        let is_barrier = matches!(converted.kind, NodeKind::Barrier { .. });
        let queue_ir = rec.map(|r| inner.queues[r].ir);
        let handle = inner.push_node(converted.kind, queue_ir, &deps.list, ir_reqs);
        if let Some(r) = rec {
            inner.queues[r].last = Some(handle);
            if is_barrier {
                inner.queues[r].barrier = Some(handle);
            }
            for a in &converted.reqs {
                let mut list = a.buffer.0.recorded_in.borrow_mut();
                if !list.iter().any(|w| std::ptr::eq(w.as_ptr(), Rc::as_ptr(rc))) {
                    list.push(Rc::downgrade(rc));
                }
            }
        }
        Ok(handle)
    }
}

/// `add(dynamicCG, props)` (rows 9, 10, 11).
pub(crate) fn add_dynamic(
    rc: &Rc<RefCell<GraphInner>>,
    dcg: &DynamicCommandGroup,
    props: &NodeProps,
) -> Result<Handle<Node>> {
    let mut inner = rc.borrow_mut();
    inner.check_not_recording(9, "add (dynamic command group)")?;
    ensure(Rc::ptr_eq(&dcg.graph, rc), 10, || {
        format!("add: the dynamic command group was created for another graph than `@{}`", inner.ir.name)
    })?;
    let side = inner
        .dcg_deps
        .get(dcg.handle.index())
        .cloned()
        .ok_or_else(|| SyclError::invalid(0, "unknown dynamic command group"))?;
    let adj = Adjacency::new(&inner.ir);
    let mut per_alt: Vec<Vec<(Handle<Node>, EdgeKind)>> = Vec::new();
    for (events, reqs) in side.events.iter().zip(&side.reqs) {
        let mut d = Deps::default();
        for e in events {
            d.push(event_node(rc, &inner, e)?, EdgeKind::Event);
        }
        for n in accessor_deps(&inner.ir, &inner.reqs, reqs, &adj) {
            d.push(n, EdgeKind::Accessor);
        }
        per_alt.push(d.list);
    }
    if let Some(i) = per_alt.iter().position(|d| *d != per_alt[0]) {
        return Err(SyclError::invalid(
            11,
            format!(
                "add: alternatives 0 and {i} of the dynamic command group have different event or accessor dependencies, so switching would change the graph's topology; give every alternative the same dependencies"
            ),
        ));
    }
    let shape = |reqs: &Vec<cmdgraph_ir::Accessor>| {
        let mut set: Vec<_> = reqs.iter().map(|a| (a.buffer, a.mode)).collect();
        set.sort_by_key(|(b, m)| (format!("{b:?}"), *m));
        set.dedup();
        set
    };
    if let Some(i) = side.reqs.iter().position(|r| shape(r) != shape(&side.reqs[0])) {
        return Err(SyclError::invalid(
            11,
            format!("add: alternatives 0 and {i} of the dynamic command group require different buffer accesses, so switching could change the graph's edges; give every alternative the same accessors"),
        ));
    }
    let mut deps = Deps::default();
    explicit_deps(rc, &inner, props, &mut deps)?;
    for (n, k) in per_alt.into_iter().next().unwrap_or_default() {
        deps.push(n, k);
    }
    let reqs = side.reqs.iter().flatten().copied().collect();
    Ok(inner.push_node(NodeKind::Dynamic { dcg: dcg.handle }, None, &deps.list, reqs))
}
