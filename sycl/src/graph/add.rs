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
//! 6. a barrier's wait list, or its queue's leaves: nodes recorded from the queue with no
//!    successor at all (`via barrier`; decision A4);
//! 7. out-of-order queue: the queue's last barrier (`via barrier`), even when the edges
//!    above already order the node after it: construction keeps every edge the API makes,
//!    as DPC++ does, and passes may drop redundant ones later. Only a barrier already
//!    listed as a source (A5) gets no second edge. An in-order queue gets no such edge:
//!    its barrier is one link of the chain (edge 1 orders the next submission after it),
//!    so each barrier there has one successor, as in DPC++, whose in-order recording
//!    never consults the queue's last barrier (decision A4).

use super::checks::{check_banned, check_buffers, check_dynamic, event_node};
use super::convert::{convert, Via};
use super::edges::{accessor_deps, leaves, Deps};
use super::GraphInner;
use crate::buffer::Accessor;
use crate::dynamic::{DynamicCommandGroup, SlotOwner};
use crate::error::{ensure, Result, SyclError};
use crate::handler::{Command, Handler, Mode};
use crate::props::NodeProps;
use cmdgraph_ir::{EdgeKind, Handle, Node, NodeKind};
use std::cell::RefCell;
use std::rc::Rc;

/// `add(props)`: an empty node.
pub(crate) fn add_empty(rc: &Rc<RefCell<GraphInner>>, props: &NodeProps) -> Result<Handle<Node>> {
    let mut inner = rc.borrow_mut();
    inner.check_not_recording(4, "add (empty node)")?;
    ensure(props.device.is_none(), 0, || {
        format!(
            "add: an empty node runs on no device; property::node::device is for commands (graph `@{}`)",
            inner.ir.name
        )
    })?;
    let mut deps = Deps::default();
    explicit_deps(rc, &inner, props, &mut deps)?;
    Ok(inner.push_node(NodeKind::Empty, None, &deps.list, Vec::new()))
}

/// The IR device of a node with `props` (the multi-device extension): `None` on the graph's
/// own device; a device outside the graph's context is an error.
fn node_device(inner: &GraphInner, props: &NodeProps) -> Result<Option<u32>> {
    let Some(dev) = &props.device else { return Ok(None) };
    ensure(inner.ctx.contains(dev), 0, || {
        format!(
            "property::node::device: device {} is not in graph `@{}`'s context {}; pick one of its devices",
            dev.id(),
            inner.ir.name,
            inner.ctx.id()
        )
    })?;
    Ok((dev.id() != inner.device.id()).then_some(dev.id()))
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
        let device = node_device(&inner, props)?;
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
        let inner = &mut *inner;
        inner.index.update(&inner.ir);
        let barrier_sources = match (&converted.kind, rec) {
            (NodeKind::Barrier { wait }, Some(r)) if wait.is_empty() => {
                Some(inner.index.queue_leaves(inner.queues[r].ir))
            }
            (NodeKind::Barrier { wait }, _) => Some(wait.clone()),
            _ => None,
        };
        let adj = inner.index.adjacency();
        let mut deps = Deps::default();
        let in_order = queue.as_ref().is_some_and(|q| q.props().in_order);
        if let (true, Some(r)) = (in_order, rec) {
            if let Some(last) = inner.queues[r].last {
                deps.push(last, EdgeKind::InOrder);
            }
        }
        explicit_deps(rc, inner, props, &mut deps)?;
        for e in events {
            deps.push(e, event_kind);
        }
        let ir_reqs: Vec<_> = converted.reqs.iter().map(Accessor::to_ir).collect();
        for n in accessor_deps(&inner.ir, &inner.reqs, &ir_reqs, adj) {
            deps.push(n, EdgeKind::Accessor);
        }
        for n in barrier_sources.into_iter().flatten() {
            deps.push(n, EdgeKind::Barrier);
        }
        // Edge 7, out-of-order queues only (an in-order queue's barrier is never stored).
        if let Some(b) = rec.and_then(|r| inner.queues[r].barrier) {
            deps.push(b, EdgeKind::Barrier);
        }

        if expected.is_some_and(|n| n != inner.ir.nodes.len()) {
            return Err(SyclError::invalid(0, "async_malloc: the graph changed while its command group ran"));
        }
        let is_barrier = matches!(converted.kind, NodeKind::Barrier { .. });
        let queue_ir = rec.map(|r| inner.queues[r].ir);
        let handle = inner.push_node(converted.kind, queue_ir, &deps.list, ir_reqs);
        inner.ir.nodes[handle].device = device;
        inner.register_slots(SlotOwner::Node(handle), &converted.regs);
        if let Some(r) = rec {
            inner.queues[r].last = Some(handle);
            if is_barrier && !in_order {
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
    let inner = &mut *inner;
    inner.index.update(&inner.ir);
    let adj = inner.index.adjacency();
    let mut per_alt: Vec<Vec<(Handle<Node>, EdgeKind)>> = Vec::new();
    for (events, reqs) in side.events.iter().zip(&side.reqs) {
        let mut d = Deps::default();
        for e in events {
            d.push(event_node(rc, inner, e)?, EdgeKind::Event);
        }
        for n in accessor_deps(&inner.ir, &inner.reqs, reqs, adj) {
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
    explicit_deps(rc, inner, props, &mut deps)?;
    for (n, k) in per_alt.into_iter().next().unwrap_or_default() {
        deps.push(n, k);
    }
    let reqs = side.reqs.iter().flatten().copied().collect();
    let device = node_device(inner, props)?;
    let handle = inner.push_node(NodeKind::Dynamic { dcg: dcg.handle }, None, &deps.list, reqs);
    inner.ir.nodes[handle].device = device;
    Ok(handle)
}
