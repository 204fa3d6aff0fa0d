//! `cmdgraph_sycl_queue` and `cmdgraph_sycl_event`: submissions (run now, or recorded into
//! a graph while the queue records), host copies and waits.

use crate::cg::cmdgraph_sycl_cg;
use crate::context::{cmdgraph_sycl_context, Shared};
use crate::error::{cmdgraph_sycl_status, Error, LastError, Result};
use crate::exec::cmdgraph_sycl_exec;
use crate::usm::{host_copy, usm_at};
use crate::{arg, clear_out, destroy, handles, last_error_of, put, put_handle, with, Handle};
use cmdgraph_sycl::{
    Event, EventStatus, FinalizeProps, GraphProps, Handler, ModifiableGraph, NodeProps, Queue, QueueProps, QueueState,
};
use std::ffi::{c_char, c_void};
use std::rc::Rc;

/// `property::queue::in_order` (a flag of `cmdgraph_sycl_queue_create`).
pub const CMDGRAPH_SYCL_QUEUE_IN_ORDER: u32 = 1;
/// `property::queue::enable_profiling`.
pub const CMDGRAPH_SYCL_QUEUE_ENABLE_PROFILING: u32 = 2;
/// `ext::oneapi::property::queue::discard_events`.
pub const CMDGRAPH_SYCL_QUEUE_DISCARD_EVENTS: u32 = 4;

/// A queue of a context. Opaque.
#[allow(non_camel_case_types)]
pub struct cmdgraph_sycl_queue {
    pub(crate) shared: Rc<Shared>,
    pub(crate) queue: Queue,
    error: LastError,
}

impl Handle for cmdgraph_sycl_queue {
    const WHAT: &'static str = "queue";
    fn last_error(&mut self) -> &mut LastError {
        &mut self.error
    }
}

/// The event of a submission: of a run, of a recorded node (usable only as a dependency
/// within its graph), or of a host copy (complete). Opaque.
#[allow(non_camel_case_types)]
pub struct cmdgraph_sycl_event {
    pub(crate) event: Option<Event>,
    error: LastError,
}

impl Handle for cmdgraph_sycl_event {
    const WHAT: &'static str = "event";
    fn last_error(&mut self) -> &mut LastError {
        &mut self.error
    }
}

/// Stores an event in `*out` when `out` is not NULL.
///
/// # Safety
/// `out` is NULL or writable.
unsafe fn put_event(out: *mut *mut cmdgraph_sycl_event, event: Option<Event>) -> Result<()> {
    if out.is_null() {
        return Ok(());
    }
    // SAFETY: the caller's contract.
    unsafe { put_handle(out, cmdgraph_sycl_event { event, error: LastError::default() }, "event") }
}

/// Creates a queue of `ctx` with `flags` (`CMDGRAPH_SYCL_QUEUE_*`, or-ed) in `*out`.
///
/// # Safety
/// `ctx` is NULL or a live context; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_queue_create(
    ctx: *mut cmdgraph_sycl_context,
    flags: u32,
    out: *mut *mut cmdgraph_sycl_queue,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(ctx, |c| {
            clear_out(out, "queue")?;
            if flags & !7 != 0 {
                return Err(Error::invalid(format!(
                    "queue flags {flags:#x}: only CMDGRAPH_SYCL_QUEUE_* bits (0x7) are defined"
                )));
            }
            let props = QueueProps {
                in_order: flags & CMDGRAPH_SYCL_QUEUE_IN_ORDER != 0,
                enable_profiling: flags & CMDGRAPH_SYCL_QUEUE_ENABLE_PROFILING != 0,
                discard_events: flags & CMDGRAPH_SYCL_QUEUE_DISCARD_EVENTS != 0,
            };
            let queue = Queue::new(&c.shared.ctx, &c.shared.device, props)?;
            put_handle(
                out,
                cmdgraph_sycl_queue { shared: c.shared.clone(), queue, error: LastError::default() },
                "queue",
            )
        })
    }
}

/// `queue::submit(cgf)`: runs the command group now (returning before the device is done)
/// or, while the queue records, adds it to the graph. `*event` (when `event` is not NULL)
/// gets its event.
///
/// # Safety
/// `queue` is NULL or a live queue; `cg` NULL or a live command group; `event` NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_queue_submit(
    queue: *mut cmdgraph_sycl_queue,
    cg: *const cmdgraph_sycl_cg,
    event: *mut *mut cmdgraph_sycl_event,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(queue, |q| {
            if !event.is_null() {
                clear_out(event, "event")?;
            }
            let cg = arg(cg, "command group")?;
            if cg.runs_on_device() && needs_bundle(q) {
                let e = run_as_graph(q, cg.command_function(), cg.deps())?;
                return put_event(event, Some(e));
            }
            let e = q.queue.submit(cg.function())?;
            put_event(event, Some(e))
        })
    }
}

/// `queue::ext_oneapi_graph(exec, events)`: submits an executable graph (or records it as a
/// sub-graph node) after the `count` events.
///
/// # Safety
/// `queue` is NULL or a live queue; `exec` NULL or a live executable graph; `deps` NULL or
/// `count` live events; `event` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_queue_graph(
    queue: *mut cmdgraph_sycl_queue,
    exec: *const cmdgraph_sycl_exec,
    deps: *const *const cmdgraph_sycl_event,
    count: usize,
    event: *mut *mut cmdgraph_sycl_event,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(queue, |q| {
            if !event.is_null() {
                clear_out(event, "event")?;
            }
            let exec = &arg(exec, "executable graph")?.exec;
            let deps: Vec<Event> = handles(deps, count, "event")?.into_iter().filter_map(|e| e.event.clone()).collect();
            let e = q.queue.ext_oneapi_graph(exec, &deps.iter().collect::<Vec<_>>())?;
            put_event(event, Some(e))
        })
    }
}

/// `queue::memcpy(dst, src, bytes)`: between two device addresses, a command like
/// `cmdgraph_sycl_cg_memcpy`; with a host end, a blocking host copy (after the runs
/// submitted so far; refused while the queue records, since a graph cannot hold host
/// memory) whose event is complete.
///
/// # Safety
/// `queue` is NULL or a live queue; a host end is valid for `bytes` bytes; `event` NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_queue_memcpy(
    queue: *mut cmdgraph_sycl_queue,
    dst: *mut c_void,
    src: *const c_void,
    bytes: u64,
    event: *mut *mut cmdgraph_sycl_event,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(queue, |q| {
            if !event.is_null() {
                clear_out(event, "event")?;
            }
            let device = |p: *const c_void| usm_at(&q.shared, p).map(|u| u.is_some());
            if device(dst)? && device(src)? {
                let (d, s) = (
                    crate::usm::device_ptr(&q.shared, dst, "memcpy")?,
                    crate::usm::device_ptr(&q.shared, src, "memcpy")?,
                );
                let e = if needs_bundle(q) {
                    run_as_graph(q, move |h: &mut Handler| h.memcpy(d, s, bytes), &[])?
                } else {
                    q.queue.memcpy(d, s, bytes, &[])?
                };
                return put_event(event, Some(e));
            }
            if q.queue.ext_oneapi_get_state() == QueueState::Recording {
                return Err(Error::new(
                    cmdgraph_sycl_status::CMDGRAPH_SYCL_ERROR_INVALID,
                    "invalid: memcpy with a host end on a recording queue: a graph holds device memory only; copy before or after the graph runs",
                ));
            }
            host_copy(&q.shared, dst, src, bytes)?;
            put_event(event, None)
        })
    }
}

/// Whether a device command submitted to `q` now runs from a bundle: the Vulkan backend,
/// and the queue executing (not recording).
fn needs_bundle(q: &cmdgraph_sycl_queue) -> bool {
    q.shared.ctx.bundle_source().is_some() && q.queue.ext_oneapi_get_state() == QueueState::Executing
}

/// Runs one command on an executing queue of the Vulkan backend as `cmdgraph-sycl` runs it,
/// a one-node graph, but one whose bundle is compiled here (`crate::graph::finalize`), after
/// `deps`.
fn run_as_graph(q: &cmdgraph_sycl_queue, f: impl FnOnce(&mut Handler) + 'static, deps: &[Event]) -> Result<Event> {
    let graph = ModifiableGraph::new(&q.shared.ctx, &q.shared.device, GraphProps::none())?;
    graph.add(f, NodeProps::none())?;
    let exec = crate::graph::finalize(&q.shared, &graph, FinalizeProps::none())?;
    Ok(q.queue.ext_oneapi_graph(&exec, &deps.iter().collect::<Vec<_>>())?)
}

/// `queue::wait()`: waits for every run submitted so far (invalid while recording).
///
/// # Safety
/// `queue` is NULL or a live queue.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_queue_wait(queue: *mut cmdgraph_sycl_queue) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe { with(queue, |q| Ok(q.queue.wait()?)) }
}

/// Whether the queue is recording (1) or executing (0) in `*recording`.
///
/// # Safety
/// `queue` is NULL or a live queue; `recording` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_queue_is_recording(
    queue: *mut cmdgraph_sycl_queue,
    recording: *mut bool,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe { with(queue, |q| put(recording, q.queue.ext_oneapi_get_state() == QueueState::Recording, "recording")) }
}

/// The message of the last call on `queue`; the thread's for NULL.
///
/// # Safety
/// `queue` is NULL or a live queue.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_queue_last_error(queue: *mut cmdgraph_sycl_queue) -> *const c_char {
    // SAFETY: the caller's contract.
    unsafe { last_error_of(queue) }
}

/// Frees a queue handle; NULL does nothing. Runs in flight go on.
///
/// # Safety
/// `queue` is NULL or a live queue, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_queue_destroy(queue: *mut cmdgraph_sycl_queue) {
    // SAFETY: the caller's contract.
    unsafe { destroy(queue) }
}

/// `event::wait()`: waits for the run; its error if it failed (a failed host task, a
/// validation message). Invalid on a recorded event.
///
/// # Safety
/// `event` is NULL or a live event.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_event_wait(event: *mut cmdgraph_sycl_event) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(event, |e| match &e.event {
            Some(ev) => Ok(ev.wait()?),
            None => Ok(()),
        })
    }
}

/// Whether the event's command is complete, without waiting, in `*complete`.
///
/// # Safety
/// `event` is NULL or a live event; `complete` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_event_is_complete(
    event: *mut cmdgraph_sycl_event,
    complete: *mut bool,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(event, |e| {
            let done = match &e.event {
                Some(ev) => ev.get_status()? == EventStatus::Complete,
                None => true,
            };
            put(complete, done, "complete")
        })
    }
}

/// The message of the last call on `event`; the thread's for NULL.
///
/// # Safety
/// `event` is NULL or a live event.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_event_last_error(event: *mut cmdgraph_sycl_event) -> *const c_char {
    // SAFETY: the caller's contract.
    unsafe { last_error_of(event) }
}

/// Frees an event; NULL does nothing.
///
/// # Safety
/// `event` is NULL or a live event, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_event_destroy(event: *mut cmdgraph_sycl_event) {
    // SAFETY: the caller's contract.
    unsafe { destroy(event) }
}
