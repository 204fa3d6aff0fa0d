//! `sycl::queue` with the graph extension's recording state, and `sycl::event`.
//!
//! An executing queue runs each submission at once (through the reference interpreter);
//! a recording queue turns each submission into a node of the graph it records into and
//! returns an event linked to that node.

use crate::args::{KArg, NdRange, Range};
use crate::error::{Result, SyclError};
use crate::exec::ExecutableGraph;
use crate::global::DeviceGlobal;
use crate::graph::{GraphInner, GraphShared, ModifiableGraph};
use crate::handler::{Handler, Mode};
use crate::kernel::KernelRef;
use crate::memory::{from_bytes, Element, Ptr};
use crate::platform::{Context, Device};
use crate::props::{QueueProps, RecordingProps};
use cmdgraph_ir::{Handle, Node, Type, UsmKind};
use std::cell::RefCell;
use std::rc::{Rc, Weak};

/// `queue_state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueState {
    /// `queue_state::executing`: submissions run.
    Executing,
    /// `queue_state::recording`: submissions become graph nodes.
    Recording,
}

pub(crate) enum StateInner {
    Executing,
    Recording { graph: Weak<GraphShared>, props: RecordingProps },
}

pub(crate) struct QueueInner {
    pub(crate) ctx: Context,
    pub(crate) device: Device,
    pub(crate) name: String,
    pub(crate) props: QueueProps,
    pub(crate) state: RefCell<StateInner>,
}

/// A `sycl::queue`. Copies share one queue.
#[derive(Clone)]
pub struct Queue(pub(crate) Rc<QueueInner>);

impl Queue {
    /// A queue on `device` of `ctx`, named `qN` in recorded graphs.
    pub fn new(ctx: &Context, device: &Device, props: QueueProps) -> Result<Queue> {
        Queue::create(ctx, device, None, props)
    }

    /// A queue with the name its recorded nodes show (`on @name`).
    pub fn named(ctx: &Context, device: &Device, name: &str, props: QueueProps) -> Result<Queue> {
        Queue::create(ctx, device, Some(name), props)
    }

    fn create(ctx: &Context, device: &Device, name: Option<&str>, props: QueueProps) -> Result<Queue> {
        if !ctx.contains(device) {
            return Err(SyclError::invalid(
                0,
                format!(
                    "queue: device {} is not in context {}; pick one of the context's devices",
                    device.id(),
                    ctx.id()
                ),
            ));
        }
        let name = ctx.0.borrow_mut().claim_name(name, "q")?;
        Ok(Queue(Rc::new(QueueInner {
            ctx: ctx.clone(),
            device: device.clone(),
            name,
            props,
            state: RefCell::new(StateInner::Executing),
        })))
    }

    /// The queue's context.
    pub fn context(&self) -> Context {
        self.0.ctx.clone()
    }

    /// The queue's device.
    pub fn device(&self) -> Device {
        self.0.device.clone()
    }

    /// The name recorded nodes show.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// The queue's properties.
    pub fn props(&self) -> QueueProps {
        self.0.props
    }

    /// Whether two handles name the same queue.
    pub fn same(&self, other: &Queue) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }

    /// `queue::ext_oneapi_get_state()`.
    pub fn ext_oneapi_get_state(&self) -> QueueState {
        match &*self.0.state.borrow() {
            StateInner::Executing => QueueState::Executing,
            StateInner::Recording { .. } => QueueState::Recording,
        }
    }

    /// `queue::ext_oneapi_get_graph()`: the graph this queue records into (row 36).
    pub fn ext_oneapi_get_graph(&self) -> Result<ModifiableGraph> {
        self.recording_shared().map(ModifiableGraph).ok_or_else(|| {
            SyclError::invalid(
                36,
                format!("ext_oneapi_get_graph: queue `@{}` is not recording; call begin_recording first", self.name()),
            )
        })
    }

    /// The recording properties this queue records with (inherited ones included).
    pub fn recording_props(&self) -> Option<RecordingProps> {
        match &*self.0.state.borrow() {
            StateInner::Recording { props, .. } => Some(*props),
            StateInner::Executing => None,
        }
    }

    pub(crate) fn recording_shared(&self) -> Option<Rc<GraphShared>> {
        match &*self.0.state.borrow() {
            StateInner::Recording { graph, .. } => graph.upgrade(),
            StateInner::Executing => None,
        }
    }

    pub(crate) fn records_into(&self, inner: &Rc<RefCell<GraphInner>>) -> bool {
        self.recording_shared().is_some_and(|s| Rc::ptr_eq(&s.inner, inner))
    }

    /// Switches this executing queue to recording into `shared`, with the recording
    /// properties of the queue that produced `event` (000 §8.5.2).
    pub(crate) fn begin_transitive(&self, shared: &Rc<GraphShared>, event: &Event) -> Result<()> {
        let props = event.queue().and_then(|q| q.recording_props()).unwrap_or_default();
        shared.start_recording(self, props)
    }

    /// `queue::submit(cgf)`: records a node (recording) or runs the command group now.
    pub fn submit(&self, cgf: impl FnOnce(&mut Handler)) -> Result<Event> {
        let mut h = match self.recording_shared() {
            Some(shared) => {
                Handler::new(Mode::Recording { queue: self.clone(), transitive: false }, Some(shared.inner.clone()))
            }
            None => Handler::new(Mode::Eager { queue: self.clone() }, None),
        };
        cgf(&mut h);
        match (&h.mode, h.graph.clone()) {
            (Mode::Recording { .. }, Some(graph)) => {
                let node = GraphInner::add_command_group(&graph, h, &Default::default())?;
                let discard = self.0.props.discard_events;
                Ok(Event::recorded(&graph, node, self, discard))
            }
            _ => crate::run::run_eager(self, h),
        }
    }

    fn shortcut(&self, deps: &[&Event], f: impl FnOnce(&mut Handler)) -> Result<Event> {
        self.submit(|h| {
            h.depends_on_all(deps);
            f(h)
        })
    }

    /// `queue::single_task(depEvents, kernel)`.
    pub fn single_task(&self, kernel: &KernelRef, args: Vec<KArg>, deps: &[&Event]) -> Result<Event> {
        self.shortcut(deps, |h| h.single_task(kernel, args))
    }

    /// `queue::parallel_for(range, depEvents, kernel)`.
    pub fn parallel_for(
        &self,
        kernel: &KernelRef,
        range: impl Into<Range>,
        args: Vec<KArg>,
        deps: &[&Event],
    ) -> Result<Event> {
        let range = range.into();
        self.shortcut(deps, |h| h.parallel_for(kernel, range, args))
    }

    /// `queue::parallel_for(nd_range, depEvents, kernel)`.
    pub fn parallel_for_nd(
        &self,
        kernel: &KernelRef,
        range: NdRange,
        args: Vec<KArg>,
        deps: &[&Event],
    ) -> Result<Event> {
        self.shortcut(deps, |h| h.parallel_for_nd(kernel, range, args))
    }

    /// `queue::memcpy(dst, src, bytes, depEvents)`.
    pub fn memcpy(&self, dst: impl Into<Ptr>, src: impl Into<Ptr>, bytes: u64, deps: &[&Event]) -> Result<Event> {
        let (dst, src) = (dst.into(), src.into());
        self.shortcut(deps, |h| h.memcpy(dst, src, bytes))
    }

    /// `handler::copy(src, dst)` as a queue shortcut: between two buffer accessors' ranges.
    pub fn copy(&self, src: &crate::Accessor, dst: &crate::Accessor, deps: &[&Event]) -> Result<Event> {
        self.shortcut(deps, |h| h.copy(src, dst))
    }

    /// `handler::copy(src, dst)` from a buffer accessor's range to a USM pointer.
    pub fn copy_to_ptr(&self, src: &crate::Accessor, dst: impl Into<Ptr>, deps: &[&Event]) -> Result<Event> {
        let dst = dst.into();
        self.shortcut(deps, |h| h.copy_to_ptr(src, dst))
    }

    /// `handler::copy(src, dst)` from a USM pointer to a buffer accessor's range.
    pub fn copy_from_ptr(&self, src: impl Into<Ptr>, dst: &crate::Accessor, deps: &[&Event]) -> Result<Event> {
        let src = src.into();
        self.shortcut(deps, |h| h.copy_from_ptr(src, dst))
    }

    /// `queue::memset(dst, value, bytes, depEvents)`.
    pub fn memset(&self, dst: impl Into<Ptr>, value: u8, bytes: u64, deps: &[&Event]) -> Result<Event> {
        let dst = dst.into();
        self.shortcut(deps, |h| h.memset(dst, value, bytes))
    }

    /// `queue::fill(dst, pattern, count, depEvents)`.
    pub fn fill<T: Element + Into<KArg>>(
        &self,
        dst: impl Into<Ptr>,
        pattern: T,
        count: u64,
        deps: &[&Event],
    ) -> Result<Event> {
        let dst = dst.into();
        self.shortcut(deps, |h| h.fill(dst, pattern, count))
    }

    /// `queue::prefetch(ptr, bytes, depEvents)`.
    pub fn prefetch(&self, ptr: impl Into<Ptr>, bytes: u64, deps: &[&Event]) -> Result<Event> {
        let ptr = ptr.into();
        self.shortcut(deps, |h| h.prefetch(ptr, bytes))
    }

    /// `queue::mem_advise(ptr, bytes, advice, depEvents)`.
    pub fn mem_advise(&self, ptr: impl Into<Ptr>, bytes: u64, advice: i32, deps: &[&Event]) -> Result<Event> {
        let ptr = ptr.into();
        self.shortcut(deps, |h| h.mem_advise(ptr, bytes, advice))
    }

    /// `queue::ext_oneapi_submit_barrier()`.
    pub fn ext_oneapi_submit_barrier(&self) -> Result<Event> {
        self.submit(|h| h.ext_oneapi_barrier())
    }

    /// `queue::ext_oneapi_submit_barrier(waitList)`.
    pub fn ext_oneapi_submit_barrier_with(&self, wait: &[&Event]) -> Result<Event> {
        self.submit(|h| h.ext_oneapi_barrier_with(wait))
    }

    /// `queue::ext_oneapi_graph(graph[, depEvents])`: runs an executable graph, or
    /// records a sub-graph node when recording (row 37).
    pub fn ext_oneapi_graph(&self, exec: &ExecutableGraph, deps: &[&Event]) -> Result<Event> {
        self.shortcut(deps, |h| h.ext_oneapi_graph_shortcut(exec))
    }

    /// `async_malloc(queue, kind, size)` for `count` elements of `elem` (000 §8.4.3).
    pub fn async_malloc(&self, kind: UsmKind, elem: Type, count: u64) -> Result<Ptr> {
        let mut ptr = None;
        self.submit(|h| ptr = Some(h.async_malloc(kind, elem, count)))?;
        ptr.ok_or_else(|| SyclError::invalid(0, "async_malloc produced no pointer"))
    }

    /// `async_free(queue, ptr)`.
    pub fn async_free(&self, ptr: &Ptr) -> Result<()> {
        self.submit(|h| h.async_free(ptr)).map(|_| ())
    }

    /// `queue::copy(src, device_global, count, startIndex)` (003).
    pub fn copy_to_device_global<T: Element>(
        &self,
        global: &DeviceGlobal,
        data: &[T],
        start_index: u64,
    ) -> Result<Event> {
        self.submit(|h| h.copy_to_device_global(global, data, start_index))
    }

    /// `queue::copy(device_global, dest, count, startIndex)` (003), waited on: the
    /// elements `[start_index, start_index + count)`. Not allowed while recording (row 59).
    pub fn copy_from_device_global<T: Element>(
        &self,
        global: &DeviceGlobal,
        count: u64,
        start_index: u64,
    ) -> Result<Vec<T>> {
        if self.ext_oneapi_get_state() == QueueState::Recording {
            return Err(SyclError::invalid(
                59,
                format!("copy from device_global `@{}` cannot be recorded into a graph (000 §8.11.5)", global.name()),
            ));
        }
        crate::run::check_device_global_copy(global, false, start_index, count, T::TYPE)?;
        let bytes = global.read_raw();
        let size = T::TYPE.size();
        let start = usize::try_from(start_index * size).unwrap_or(usize::MAX);
        let end = usize::try_from((start_index + count) * size).unwrap_or(usize::MAX);
        Ok(from_bytes(bytes.get(start..end).unwrap_or(&[])))
    }

    /// `queue::wait()`: a host wait; invalid while recording (row 52).
    pub fn wait(&self) -> Result<()> {
        if self.ext_oneapi_get_state() == QueueState::Recording {
            return Err(SyclError::invalid(
                52,
                format!(
                    "queue::wait on `@{}`, which is recording: nothing runs while recording; end recording first",
                    self.name()
                ),
            ));
        }
        crate::runner::complete(&self.0.ctx);
        Ok(())
    }
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Queue(@{})", self.0.name)
    }
}

/// `info::event_command_status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventStatus {
    /// `submitted`: not known to have started (this runtime does not report it apart from
    /// `running`: an incomplete command is `Running`).
    Submitted,
    /// `running`: submitted and not complete.
    Running,
    /// `complete`
    Complete,
}

/// `info::event_profiling` timestamps in nanoseconds of the host clock (since the Unix
/// epoch). `end - start` of a graph run on a device is the duration its device timestamps
/// measured (docs/semantics.md, "Running asynchronously").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProfilingInfo {
    /// `command_submit`
    pub submit: u64,
    /// `command_start`
    pub start: u64,
    /// `command_end`
    pub end: u64,
}

/// A command submitted to an executing queue.
pub(crate) struct Submission {
    /// The command's own run (a graph, or an eager command's one-node graph), if it has one.
    pub(crate) run: Option<Rc<crate::runner::RunRecord>>,
    /// Runs it completes with besides (a barrier: those unsettled when it was submitted).
    pub(crate) after: Vec<Rc<crate::runner::RunRecord>>,
    /// Host time of the submission.
    pub(crate) submit_ns: u64,
    /// Host time the submission call returned (the end of a command without a run).
    pub(crate) done_ns: u64,
    /// Why it cannot be profiled, if it cannot (rows 61, 0).
    pub(crate) no_profile: Option<(u32, String)>,
}

pub(crate) enum EventKind {
    /// Returned by a submission to a recording queue.
    Recorded { graph: Weak<RefCell<GraphInner>>, node: Handle<Node>, queue: Weak<QueueInner>, discard: bool },
    /// A command submitted to an executing queue.
    Submitted(Submission),
}

/// A `sycl::event`. Copies share one event.
#[derive(Clone)]
pub struct Event(pub(crate) Rc<EventKind>);

impl Event {
    pub(crate) fn recorded(graph: &Rc<RefCell<GraphInner>>, node: Handle<Node>, queue: &Queue, discard: bool) -> Event {
        Event(Rc::new(EventKind::Recorded {
            graph: Rc::downgrade(graph),
            node,
            queue: Rc::downgrade(&queue.0),
            discard,
        }))
    }

    pub(crate) fn submitted(submission: Submission) -> Event {
        Event(Rc::new(EventKind::Submitted(submission)))
    }

    /// The context whose run this event is, if it is one.
    pub(crate) fn context(&self) -> Option<Context> {
        match &*self.0 {
            EventKind::Submitted(s) => s.run.as_ref().map(|r| r.context()),
            EventKind::Recorded { .. } => None,
        }
    }

    /// Whether the event came from a submission to a recording queue.
    pub fn is_recorded(&self) -> bool {
        matches!(&*self.0, EventKind::Recorded { .. })
    }

    pub(crate) fn queue(&self) -> Option<Queue> {
        match &*self.0 {
            EventKind::Recorded { queue, .. } => queue.upgrade().map(Queue),
            EventKind::Submitted(_) => None,
        }
    }

    /// The graph of a recorded event whose queue is still recording into it.
    pub(crate) fn recording_graph(&self) -> Option<Rc<GraphShared>> {
        let EventKind::Recorded { graph, .. } = &*self.0 else { return None };
        let graph = graph.upgrade()?;
        let shared = self.queue()?.recording_shared()?;
        Rc::ptr_eq(&shared.inner, &graph).then_some(shared)
    }

    fn recorded_error(&self, row: u32, what: &str) -> Result<()> {
        if self.is_recorded() {
            return Err(SyclError::invalid(
                row,
                format!("{what} on an event returned by a recording queue: recorded commands do not run; submit the finalized graph and use its event"),
            ));
        }
        Ok(())
    }

    /// `event::wait()`: waits until the command is complete; the error of its run if it
    /// failed. Invalid on a recorded event (row 50).
    pub fn wait(&self) -> Result<()> {
        self.recorded_error(50, "event::wait")?;
        let EventKind::Submitted(s) = &*self.0 else { return Ok(()) };
        for run in &s.after {
            run.wait();
        }
        match s.run.as_ref().map(|r| r.wait()) {
            Some(crate::runner::RunOutcome { error: Some(e), .. }) => {
                Err(SyclError::invalid(0, format!("execution failed: {e}")))
            }
            _ => Ok(()),
        }
    }

    /// `get_info<command_execution_status>()`, without waiting: `Complete` once the command
    /// and everything it completes with are done, `Running` before. Invalid on a recorded
    /// event (row 49).
    pub fn get_status(&self) -> Result<EventStatus> {
        self.recorded_error(49, "get_info<command_execution_status>")?;
        let EventKind::Submitted(s) = &*self.0 else { return Ok(EventStatus::Complete) };
        let done = s.run.iter().chain(&s.after).all(|r| r.is_complete());
        Ok(if done { EventStatus::Complete } else { EventStatus::Running })
    }

    /// `get_profiling_info()`: waits for the command, then its submit, start and end times.
    /// Invalid on a recorded event (row 49), on an event of a graph finalized without
    /// `enable_profiling` (row 61) and on a queue without `enable_profiling`.
    pub fn get_profiling_info(&self) -> Result<ProfilingInfo> {
        self.recorded_error(49, "get_profiling_info")?;
        let EventKind::Submitted(s) = &*self.0 else { return Err(SyclError::invalid(49, "recorded event")) };
        if let Some((row, msg)) = &s.no_profile {
            return Err(SyclError::invalid(*row, msg.clone()));
        }
        let Some(run) = &s.run else {
            return Ok(ProfilingInfo { submit: s.submit_ns, start: s.submit_ns, end: s.done_ns });
        };
        let outcome = run.wait();
        let start = run.submit_ns;
        let end = match outcome.device_ns {
            Some(ns) => start.saturating_add(ns),
            None => outcome.end_ns.max(start),
        };
        Ok(ProfilingInfo { submit: s.submit_ns, start, end })
    }
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &*self.0 {
            EventKind::Recorded { node, .. } => write!(f, "Event(recorded {node:?})"),
            EventKind::Submitted(_) => write!(f, "Event(submitted)"),
        }
    }
}
