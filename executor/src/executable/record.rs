//! Recording device segments (docs/executor.md, "Recording" and "Barriers"): the segment's
//! commands in schedule order with the barriers `barriers::plan` places between them, into
//! each of the segment's command buffers.

use super::{fill_word, Executable};
use crate::barriers::{self, Effect, SegmentIndex, SegmentPlan};
use crate::error::{ExecError, Result};
use crate::exec::{Executor, NativeContext};
use crate::schedule::Seg;
use crate::vk::buffer::full_barrier;
use ash::vk;
use cmdgraph_ir::{Graph, Handle, Node, NodeKind};
use std::borrow::Cow;
use std::collections::BTreeMap;

impl Executor {
    /// The commands of device segment `si` in recording order and where its barriers go.
    pub(crate) fn segment_plan(&self, exe: &Executable, si: usize) -> Result<(Vec<Handle<Node>>, SegmentPlan)> {
        self.segment_effects(exe, si).map(|(order, _, plan)| (order, plan))
    }

    /// [`segment_plan`](Self::segment_plan) with each recorded command's effect.
    #[allow(clippy::type_complexity)]
    fn segment_effects<'e>(
        &self,
        exe: &'e Executable,
        si: usize,
    ) -> Result<(Vec<Handle<Node>>, Vec<Cow<'e, Effect>>, SegmentPlan)> {
        let Some(Seg::Device(stages)) = exe.sched.get(si) else {
            return Err(ExecError::Invalid(format!("segment {si} is not a device segment")));
        };
        let graph = &self.loaded.module.graphs[exe.graph];
        let (mut order, mut effects, mut starts) = (Vec::new(), Vec::new(), Vec::new());
        for stage in stages {
            let mut first = true;
            for &h in stage {
                if let Some(e) = self.node_effect(exe, graph, h)? {
                    order.push(h);
                    effects.push(e);
                    starts.push(std::mem::take(&mut first));
                }
            }
        }
        let plan = barriers::plan(&effects, &starts, exe.options.barriers);
        Ok((order, effects, plan))
    }

    /// Records device segment `si` into each of its command buffers (allocating them the
    /// first time). The executable is idle: none of them is pending.
    pub(crate) fn record(&mut self, exe: &mut Executable, si: usize) -> Result<()> {
        let mut native = std::mem::take(&mut self.native);
        let result = self.record_with(exe, si, &mut native);
        self.native = native;
        result
    }

    /// [`record`](Self::record) with the native callbacks taken out of the executor (so the
    /// caller may hold borrows of it).
    pub(crate) fn record_with(
        &self,
        exe: &mut Executable,
        si: usize,
        native: &mut BTreeMap<String, crate::exec::NativeFn>,
    ) -> Result<()> {
        if let Some(&Seg::Loop(h)) = exe.sched.get(si) {
            return self.record_loop(exe, si, h, native);
        }
        if !matches!(exe.sched.get(si), Some(Seg::Device(_))) {
            return Ok(());
        }
        let (order, effects, plan) = self.segment_effects(exe, si)?;
        // Borrowed, not cloned: a clone of the graph per segment made recording a graph of
        // many host tasks quadratic.
        let graph = &self.loaded.module.graphs[exe.graph];
        // The index serves updates only (`stale_conflict`); without one an update re-plans
        // the segment, so a graph that cannot be updated does not build it.
        let index = graph.properties.updatable.then(|| SegmentIndex::new(&effects, &plan));
        drop(effects);
        let mut result = Ok(());
        for copy in 0..exe.live_copies.min(exe.cmds.len()) {
            result = self.record_copy(exe, graph, si, copy, &order, &plan, native);
            if result.is_err() {
                break;
            }
        }
        result?;
        exe.must_record.remove(&si);
        for (i, h) in order.iter().enumerate() {
            if let Some(p) = exe.positions.get_mut(h.index()) {
                *p = i as u32;
            }
        }
        if let Some(o) = exe.orders.get_mut(si) {
            *o = order;
        }
        if let Some(i) = exe.indexes.get_mut(si) {
            *i = index;
        }
        if let Some(p) = exe.plans.get_mut(si) {
            *p = Some(plan);
        }
        exe.recorded += 1;
        Ok(())
    }

    /// Records every device segment into the second copy of the command buffers, as the
    /// first copy holds them (same order, same barriers), and adds the copy's run plan.
    /// The executable may be running the first copy: nothing the first copy uses changes.
    pub(crate) fn record_second_copy(&mut self, exe: &mut Executable) -> Result<()> {
        if exe.live_copies >= exe.cmds.len() {
            return Ok(());
        }
        let mut native = std::mem::take(&mut self.native);
        let graph = &self.loaded.module.graphs[exe.graph];
        let mut result = Ok(());
        for si in 0..exe.sched.len() {
            if let Some(&Seg::Loop(h)) = exe.sched.get(si) {
                result = self.record_loop(exe, si, h, &mut native);
                if result.is_err() {
                    break;
                }
                continue;
            }
            if !matches!(exe.sched.get(si), Some(Seg::Device(_))) {
                continue;
            }
            let (order, plan) = match (exe.orders.get(si), exe.plans.get(si)) {
                (Some(o), Some(Some(p))) => (o.clone(), p.clone()),
                _ => {
                    result = Err(ExecError::Invalid(format!("segment {si} was not recorded")));
                    break;
                }
            };
            result = self.record_copy(exe, graph, si, 1, &order, &plan, &mut native);
            if result.is_err() {
                break;
            }
        }
        self.native = native;
        result?;
        exe.live_copies = 2;
        self.build_copy_steps(exe, 1);
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn record_copy(
        &self,
        exe: &mut Executable,
        graph: &Graph,
        si: usize,
        copy: usize,
        order: &[Handle<Node>],
        plan: &SegmentPlan,
        native: &mut BTreeMap<String, crate::exec::NativeFn>,
    ) -> Result<()> {
        let d = self.ctx.device.clone();
        // SAFETY: the command pool belongs to this executable and this thread; the command
        // buffer is not pending (the executable is idle whenever it is re-recorded).
        unsafe {
            if exe.cmds[copy][si] == vk::CommandBuffer::null() {
                let info = vk::CommandBufferAllocateInfo::default().command_pool(exe.cmd_pool).command_buffer_count(1);
                exe.cmds[copy][si] = d.allocate_command_buffers(&info)?.first().copied().unwrap_or_default();
            } else {
                d.reset_command_buffer(exe.cmds[copy][si], vk::CommandBufferResetFlags::empty())?;
            }
            let cb = exe.cmds[copy][si];
            // Two ordinary copies used in turn need no flag; one copy that a later run may
            // submit while it is pending must be simultaneous-use (its opening barrier, after
            // all earlier work on the queue, keeps the two runs from overlapping).
            let flags = if exe.options.simultaneous_use {
                vk::CommandBufferUsageFlags::SIMULTANEOUS_USE
            } else {
                vk::CommandBufferUsageFlags::empty()
            };
            d.begin_command_buffer(cb, &vk::CommandBufferBeginInfo::default().flags(flags))?;
            plan.opening.record(&d, cb);
            if let Some(q) = &exe.queries {
                q.begin_segment(&d, cb, si);
            }
            let mut result = Ok(());
            let mut bound = vk::Pipeline::null();
            for (i, &h) in order.iter().enumerate() {
                if let Some(Some(m)) = plan.before.get(i) {
                    m.record(&d, cb);
                }
                if let Some(q) = &exe.queries {
                    q.node(&d, cb, h.index(), false);
                }
                if let Err(e) = self.record_node(exe, graph, h, cb, native, &mut bound) {
                    result = Err(e);
                }
                if let Some(q) = &exe.queries {
                    q.node(&d, cb, h.index(), true);
                }
            }
            if let Some(q) = &exe.queries {
                q.end_segment(&d, cb, si);
            }
            plan.closing.record(&d, cb);
            d.end_command_buffer(cb)?;
            result
        }
    }

    /// What `id` records, for checking it independently: per segment in submission order,
    /// the node names of each stretch between two barriers, in recording order (a host task
    /// is a segment of one stretch). Everything in one stretch may run at once; every stretch
    /// happens before the next. Nodes that record nothing are not listed.
    pub fn barrier_groups(&self, id: crate::exec::ExecId) -> Result<Vec<Vec<Vec<String>>>> {
        let exe = self.exec_ref(id)?;
        let graph = &self.loaded.module.graphs[exe.graph];
        let mut out = Vec::with_capacity(exe.sched.len());
        for (si, seg) in exe.sched.iter().enumerate() {
            match seg {
                Seg::Host(h) | Seg::Loop(h) => out.push(vec![vec![graph.nodes[*h].name.clone()]]),
                Seg::Device(_) => {
                    // What the command buffers hold, not a fresh plan.
                    let (Some(order), Some(Some(plan))) = (exe.orders.get(si), exe.plans.get(si)) else {
                        return Err(ExecError::Invalid(format!("segment {si} was not recorded")));
                    };
                    let mut groups: Vec<Vec<String>> = Vec::new();
                    for (i, h) in order.iter().enumerate() {
                        if groups.is_empty() || plan.before.get(i).is_some_and(|b| b.is_some()) {
                            groups.push(Vec::new());
                        }
                        if let Some(g) = groups.last_mut() {
                            g.push(graph.nodes[*h].name.clone());
                        }
                    }
                    out.push(groups);
                }
            }
        }
        Ok(out)
    }

    /// Brings recorded segments up to date after an update: re-records those whose direct
    /// dispatches changed group counts, and re-plans the barriers of those whose commands'
    /// memory effects changed (a pointer moved, a launch changed), re-recording the ones whose
    /// barriers moved: an update never leaves a barrier out where memory now conflicts.
    pub(crate) fn refresh_recording(&mut self, exe: &mut Executable) -> Result<()> {
        // Direct dispatches whose group counts changed are re-recorded in any case.
        for si in std::mem::take(&mut exe.must_record) {
            self.record(exe, si)?;
        }
        let stale = std::mem::take(&mut exe.stale_nodes);
        // A kernel that now touches other memory may conflict with a host task that did not
        // wait for its segment: the run plan's waits are worked out again.
        if exe.has_host && !stale.is_empty() {
            self.build_steps(exe);
        }
        let mut by_segment: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (si, node) in stale {
            by_segment.entry(si).or_default().push(node);
        }
        for (si, nodes) in by_segment {
            if self.stale_conflict(exe, si, &nodes)? {
                let (_, plan) = self.segment_plan(exe, si)?;
                if exe.plans.get(si).and_then(|p| p.as_ref()) != Some(&plan) {
                    self.record(exe, si)?;
                }
            }
        }
        Ok(())
    }

    /// Whether a node of `nodes` (of segment `si`, whose effects grew) now conflicts with
    /// another command of its stretch (the commands between the barriers around it, as
    /// recorded): only then can the recorded barriers be wrong. Against the commands that did
    /// not change, through the segment's index (O(log n) per access); among the changed ones,
    /// pairwise (many changed nodes: a re-plan is as cheap).
    fn stale_conflict(&self, exe: &Executable, si: usize, nodes: &[usize]) -> Result<bool> {
        const PAIRWISE: usize = 64;
        let (Some(Some(index)), Some(order)) = (exe.indexes.get(si), exe.orders.get(si)) else { return Ok(true) };
        if nodes.len() > PAIRWISE {
            return Ok(true);
        }
        let graph = &self.loaded.module.graphs[exe.graph];
        let mut changed = Vec::with_capacity(nodes.len());
        for &node in nodes {
            let Some(&at) = exe.positions.get(node) else { return Ok(true) };
            let at = at as usize;
            if order.get(at).map(|h| h.index()) != Some(node) {
                return Ok(true);
            }
            let Some(mine) = self.node_effect(exe, graph, order[at])? else { continue };
            if index.conflicts(at, &mine) {
                return Ok(true);
            }
            changed.push((index.stretch(at), mine));
        }
        for (i, (s, a)) in changed.iter().enumerate() {
            if changed[i + 1..].iter().any(|(t, b)| t == s && a.conflicts_with(b)) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Records one node; returns whether it recorded a command. `bound` is the compute
    /// pipeline bound in `cb` so far (null: none or unknown), so consecutive dispatches of one
    /// kernel variant bind it once.
    pub(crate) fn record_node(
        &self,
        exe: &Executable,
        graph: &Graph,
        h: Handle<Node>,
        cb: vk::CommandBuffer,
        native: &mut BTreeMap<String, crate::exec::NativeFn>,
        bound: &mut vk::Pipeline,
    ) -> Result<bool> {
        let d = &self.ctx.device;
        let n = &graph.nodes[h];
        if self.record_conditional(exe, h, cb, native)? {
            *bound = vk::Pipeline::null();
            return Ok(true);
        }
        if let Some(k) = exe.kernels.get(&h.index()) {
            // A `dynamic` node's other kernel alternatives follow in the same stage (same
            // dependencies); their indirect commands hold (0, 0, 0) until `set_active`.
            let spares = exe.spare.range((h.index(), 0)..=(h.index(), u32::MAX)).map(|(_, k)| k);
            for k in std::iter::once(k).chain(spares) {
                let p = self.pipelines.get(k.variant).ok_or_else(|| ExecError::Bundle("bad variant".into()))?;
                // SAFETY: `cb` is recording; pipeline, set and indirect buffer are live.
                unsafe {
                    if *bound != p.pipeline {
                        d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, p.pipeline);
                        *bound = p.pipeline;
                    }
                    d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::COMPUTE, p.layout, 0, &[k.set], &[]);
                    if k.direct {
                        d.cmd_dispatch(cb, k.groups[0], k.groups[1], k.groups[2]);
                    } else {
                        d.cmd_dispatch_indirect(cb, exe.indirect.buffer, k.ind_off);
                    }
                }
            }
            return Ok(true);
        }
        if let Some(parts) = self.kernel_copy(exe, graph, h)? {
            let kernels = self.copy_kernels.as_ref().ok_or_else(|| ExecError::Invalid("no copy kernels".into()))?;
            // Parts of one copy write disjoint ranges: no barrier between them.
            for c in parts {
                let set = exe.copy_sets.borrow_mut().get(&self.ctx, kernels.set_layout(), c.src, c.dst)?;
                // SAFETY: `cb` is recording; the set's windows hold the copy's elements
                // (planned against the buffers' sizes and the device's descriptor limits).
                unsafe { crate::vk::copy::record(d, cb, kernels, c.elem, set, c.push, c.groups) };
                *bound = kernels.pipeline(c.elem);
            }
            return Ok(true);
        }
        match &n.kind {
            NodeKind::Memcpy { dst, src, bytes } => {
                if *bytes == 0 {
                    return Ok(false);
                }
                let (dp, sp) = (exe.place(self, dst.base, dst.offset)?, exe.place(self, src.base, src.offset)?);
                if dp.avail < *bytes || sp.avail < *bytes {
                    return Err(ExecError::Invalid(format!("%{}: memcpy of {bytes} bytes out of bounds", n.name)));
                }
                let (db, sb) = (exe.buffer_of(self, &dp.target)?, exe.buffer_of(self, &sp.target)?);
                if dp.target == sp.target && dp.offset < sp.offset + bytes && sp.offset < dp.offset + bytes {
                    // memmove, as the interpreter: through scratch memory, a barrier between.
                    let (Some(scratch), Some(&off)) = (&exe.scratch, exe.scratch_offs.get(&h.index())) else {
                        return Err(ExecError::Invalid(format!("%{}: overlapping memcpy without scratch", n.name)));
                    };
                    let into = [vk::BufferCopy { src_offset: sp.offset, dst_offset: off, size: *bytes }];
                    let out = [vk::BufferCopy { src_offset: off, dst_offset: dp.offset, size: *bytes }];
                    // SAFETY: `cb` is recording; the regions are inside the buffers (the scratch
                    // range was sized for this node at finalize).
                    unsafe {
                        d.cmd_copy_buffer(cb, sb.buffer, scratch.buffer, &into);
                        full_barrier(d, cb, vk::PipelineStageFlags2::TRANSFER, vk::PipelineStageFlags2::TRANSFER);
                        d.cmd_copy_buffer(cb, scratch.buffer, db.buffer, &out);
                    }
                    return Ok(true);
                }
                let region = [vk::BufferCopy { src_offset: sp.offset, dst_offset: dp.offset, size: *bytes }];
                // SAFETY: `cb` is recording; the regions are inside both buffers.
                unsafe { d.cmd_copy_buffer(cb, sb.buffer, db.buffer, &region) };
                Ok(true)
            }
            NodeKind::Memset { dst, .. } | NodeKind::Memfill { dst, .. } => {
                let (pattern, total) = super::copies::fill_pattern(n);
                if total == 0 {
                    return Ok(false);
                }
                let dp = exe.place(self, dst.base, dst.offset)?;
                if dp.avail < total {
                    return Err(ExecError::Invalid(format!("%{}: fill of {total} bytes out of bounds", n.name)));
                }
                let db = exe.buffer_of(self, &dp.target)?;
                match (fill_word(&pattern, dp.offset, total), exe.const_offs.get(&h.index()), &exe.consts) {
                    // SAFETY: `cb` is recording; the range is inside the buffer and 4-aligned.
                    (Some(word), _, _) => unsafe { d.cmd_fill_buffer(cb, db.buffer, dp.offset, total, word) },
                    (None, Some(&off), Some(c)) => {
                        let region = [vk::BufferCopy { src_offset: off, dst_offset: dp.offset, size: total }];
                        // SAFETY: `cb` is recording; the pattern was laid out at finalize.
                        unsafe { d.cmd_copy_buffer(cb, c.buffer, db.buffer, &region) }
                    }
                    _ => return Err(ExecError::Invalid(format!("%{}: fill pattern missing", n.name))),
                }
                Ok(true)
            }
            NodeKind::Native(cmd) => {
                let f = native.get_mut(&cmd.callback).ok_or_else(|| {
                    ExecError::Unknown(format!("native callback \"{}\" (node %{})", cmd.callback, n.name))
                })?;
                f(&NativeContext { device: d, command_buffer: cb, node: &n.name });
                // The application may have bound anything.
                *bound = vk::Pipeline::null();
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}
