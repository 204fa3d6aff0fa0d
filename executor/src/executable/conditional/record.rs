//! Recording conditional nodes: an `if` or `switch` inside its device segment, and a body's
//! commands inline under its predicate (docs/conditional.md, "Executor").
#![allow(unsafe_code)]

use super::{CondKind, Executable};
use crate::error::{ExecError, Result};
use crate::exec::{ExecId, Executor, NativeFn};
use crate::schedule::Seg;
use crate::vk::predicate::{self, MODE_CASE, MODE_TRUTH, NO_PARENT};
use ash::vk;
use cmdgraph_ir::{Handle, Node};
use std::collections::BTreeMap;

impl Executor {
    /// Records conditional node `h` (an `if` or `switch`) of `exe` into `cb`, inside a device
    /// segment (whose barrier plan orders it, a native-like command, against everything
    /// around it): the predicate dispatch unless the bodies read the condition directly, then
    /// each body, under conditional rendering on its word where it needs it. Returns whether
    /// `h` is a conditional node.
    pub(crate) fn record_conditional(
        &self,
        exe: &Executable,
        h: Handle<Node>,
        cb: vk::CommandBuffer,
        native: &mut BTreeMap<String, NativeFn>,
    ) -> Result<bool> {
        let Some((state, c)) = exe.cond.as_ref().and_then(|s| Some((s, s.nodes.get(&h.index())?))) else {
            return Ok(false);
        };
        let d = &self.ctx.device;
        let parent = self.pred_stack.borrow().last().copied();
        let rendering = c.rendering.iter().any(|&r| r);
        if !c.direct {
            let kernel =
                self.predicate_kernel.as_ref().ok_or_else(|| ExecError::Invalid("no predicate kernel".into()))?;
            let mode = if c.kind == CondKind::Switch { MODE_CASE } else { MODE_TRUTH };
            // SAFETY: `cb` is recording; the set, the buffers and the words are this
            // executable's (sized at finalize for every node's words).
            unsafe {
                if let Some(p) = parent.filter(|p| p.2) {
                    // Conditional rendering does not nest: the enclosing body's is resumed below.
                    end_rendering(self.rendering_fns(p.2)?, cb);
                }
                if parent.is_some() {
                    // Inside a body the segment plan has no barrier before the node's first
                    // command; bodies hold compute work only.
                    compute_to_compute(d, cb);
                }
                // Words relative to the node's window (binding 2).
                let push = [c.cond.1, parent.map_or(NO_PARENT, |p| p.1), 0, c.words, mode, NO_PARENT];
                predicate::record(d, cb, kernel, c.set.1, push);
                predicate_barrier(d, cb, rendering);
            }
        }
        let mut result = Ok(());
        for (i, &body) in c.bodies.iter().enumerate() {
            let word = c.word + i as u32;
            let under = c.rendering.get(i).copied().unwrap_or(false);
            // SAFETY: as above.
            unsafe {
                if i > 0 {
                    // Only one body runs, but the validation layer cannot know that.
                    compute_to_compute(d, cb);
                }
                if under {
                    begin_rendering(self.rendering_fns(true)?, cb, state.preds.buffer, u64::from(word) * 4);
                }
            }
            self.pred_stack.borrow_mut().push((state.preds.buffer, word, under));
            let r = self.record_body(body, cb, native);
            self.pred_stack.borrow_mut().pop();
            if under {
                // SAFETY: as above: the rendering begun for this body.
                unsafe { end_rendering(self.rendering_fns(true)?, cb) };
            }
            if r.is_err() && result.is_ok() {
                result = r;
            }
        }
        // SAFETY: as above.
        unsafe {
            if parent.is_some() && !c.direct {
                compute_to_compute(d, cb);
            }
            if let Some((buffer, word, true)) = parent.filter(|_| !c.direct) {
                begin_rendering(self.rendering_fns(true)?, cb, buffer, u64::from(word) * 4);
            }
        }
        result.map(|()| true)
    }

    /// Records the device segments of body executable `id` into `cb`, with the barriers its
    /// segment plans place between commands, under whatever predicate is active. The plans'
    /// opening and closing barriers are left out: the node's own barriers before its
    /// predicate dispatch and after the body order the body against everything around it.
    fn record_body(&self, id: ExecId, cb: vk::CommandBuffer, native: &mut BTreeMap<String, NativeFn>) -> Result<()> {
        self.record_body_with(id, cb, native, None)
    }

    /// [`record_body`](Self::record_body), calling `hook` just before command `at` of the
    /// first segment (after the barrier in front of it).
    pub(super) fn record_body_with(
        &self,
        id: ExecId,
        cb: vk::CommandBuffer,
        native: &mut BTreeMap<String, NativeFn>,
        hook: Option<(usize, &dyn Fn(vk::CommandBuffer))>,
    ) -> Result<()> {
        let body = self.exec_ref(id)?;
        let graph = &self.loaded.module.graphs[body.graph];
        let d = &self.ctx.device;
        for (si, seg) in body.sched.iter().enumerate() {
            if !matches!(seg, Seg::Device(_)) {
                return Err(ExecError::Invalid(format!("@{}: a body runs device work only", graph.name)));
            }
            let (order, plan) = self.segment_plan(body, si)?;
            let mut bound = vk::Pipeline::null();
            if si > 0 {
                // SAFETY: `cb` is recording (the caller's contract).
                unsafe { compute_to_compute(d, cb) };
            }
            for (i, &h) in order.iter().enumerate() {
                if let Some(Some(m)) = plan.before.get(i) {
                    // SAFETY: as above.
                    unsafe { m.record(d, cb) };
                }
                if let Some((at, f)) = hook.filter(|(at, _)| si == 0 && *at == i) {
                    let _ = at;
                    f(cb);
                    bound = vk::Pipeline::null();
                }
                self.record_node(body, graph, h, cb, native, &mut bound)?;
            }
        }
        Ok(())
    }

    /// `VK_EXT_conditional_rendering`'s commands (`want`: a body needs them).
    pub(super) fn rendering_fns(&self, want: bool) -> Result<&ash::ext::conditional_rendering::Device> {
        match (want, self.ctx.conditional_rendering.as_ref()) {
            (true, Some(cr)) => Ok(cr),
            _ => Err(ExecError::Invalid("conditional rendering is not enabled on this device".into())),
        }
    }
}

/// Compute writes visible to later compute work (the predicate dispatch, the next body).
///
/// # Safety
/// `cb` is recording.
pub(super) unsafe fn compute_to_compute(d: &ash::Device, cb: vk::CommandBuffer) {
    let barrier = [vk::MemoryBarrier2::default()
        .src_stage_mask(vk::PipelineStageFlags2::COMPUTE_SHADER)
        .src_access_mask(vk::AccessFlags2::SHADER_WRITE)
        .dst_stage_mask(vk::PipelineStageFlags2::COMPUTE_SHADER)
        .dst_access_mask(vk::AccessFlags2::SHADER_READ | vk::AccessFlags2::SHADER_WRITE)];
    // SAFETY: the caller's contract.
    unsafe { d.cmd_pipeline_barrier2(cb, &vk::DependencyInfo::default().memory_barriers(&barrier)) };
}

/// The predicate kernel's writes visible to the bodies' kernels (which test them) and, where a
/// body runs under conditional rendering, to the command processor that reads them.
///
/// # Safety
/// `cb` is recording.
pub(super) unsafe fn predicate_barrier(d: &ash::Device, cb: vk::CommandBuffer, rendering: bool) {
    let src = (vk::PipelineStageFlags2::COMPUTE_SHADER, vk::AccessFlags2::SHADER_WRITE);
    // SAFETY: the caller's contract.
    unsafe { into_compute(d, cb, src, vk::AccessFlags2::SHADER_READ, rendering) };
}

/// The writes of `src` (stages, accesses) visible to compute work's `access` and, where a body
/// runs under conditional rendering, to the command processor that reads its predicate.
///
/// # Safety
/// `cb` is recording.
pub(super) unsafe fn into_compute(
    d: &ash::Device,
    cb: vk::CommandBuffer,
    src: (vk::PipelineStageFlags2, vk::AccessFlags2),
    mut access: vk::AccessFlags2,
    rendering: bool,
) {
    let mut stages = vk::PipelineStageFlags2::COMPUTE_SHADER;
    if rendering {
        stages |= vk::PipelineStageFlags2::CONDITIONAL_RENDERING_EXT;
        access |= vk::AccessFlags2::CONDITIONAL_RENDERING_READ_EXT;
    }
    let barrier = [vk::MemoryBarrier2::default()
        .src_stage_mask(src.0)
        .src_access_mask(src.1)
        .dst_stage_mask(stages)
        .dst_access_mask(access)];
    // SAFETY: the caller's contract.
    unsafe { d.cmd_pipeline_barrier2(cb, &vk::DependencyInfo::default().memory_barriers(&barrier)) };
}

/// Ends conditional rendering.
///
/// # Safety
/// `cb` is recording inside conditional rendering.
pub(super) unsafe fn end_rendering(cr: &ash::ext::conditional_rendering::Device, cb: vk::CommandBuffer) {
    // SAFETY: the caller's contract.
    unsafe { (cr.fp().cmd_end_conditional_rendering_ext)(cb) };
}

/// Begins conditional rendering on the word at byte `offset` of `buffer`.
///
/// # Safety
/// `cb` is recording outside conditional rendering; `buffer` was made with the
/// conditional-rendering usage and holds the word.
pub(super) unsafe fn begin_rendering(
    cr: &ash::ext::conditional_rendering::Device,
    cb: vk::CommandBuffer,
    buffer: vk::Buffer,
    offset: u64,
) {
    let info = vk::ConditionalRenderingBeginInfoEXT::default().buffer(buffer).offset(offset);
    // SAFETY: the caller's contract.
    unsafe { (cr.fp().cmd_begin_conditional_rendering_ext)(cb, &info) };
}
