//! `cmdgraph_executor`: a bundle on one Vulkan device, with its user memory and callbacks.

use crate::bundle::cmdgraph_bundle;
use crate::error::{c_string, cmdgraph_status, Error, LastError, Result};
use crate::exec::{cmdgraph_exec, cmdgraph_finalize_options};
use crate::host::{callback, cmdgraph_host_fn};
use crate::{bytes, destroy, last_error_of, name, put, with, Handle};
use ::cmdgraph_executor::{ContextOptions, DeviceChoice, Executor, RecordOptions, DEFAULT_TIMEOUT};
use std::ffi::{c_char, c_void, CString};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// How `cmdgraph_executor_create` picks and sets up the device. Start from
/// `cmdgraph_executor_options_default()` and change fields.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cmdgraph_executor_options {
    /// Enable the Vulkan validation layer (synchronization validation included); its
    /// messages are collected (`cmdgraph_executor_take_messages`). The environment variable
    /// `CMDGRAPH_VK_VALIDATION=1` turns it on too.
    pub validation: bool,
    /// The device at this index of `vkEnumeratePhysicalDevices`; negative: not by index.
    pub device_index: i32,
    /// The first device whose name contains this (case-insensitive); NULL: not by name. Wins
    /// over `device_index`. With neither, a discrete GPU if any, else an integrated one, else
    /// a CPU device (llvmpipe). Only read during `cmdgraph_executor_create`.
    pub device_name: *const c_char,
    /// Deadline of every wait for the device, in milliseconds: 0 the default (5 minutes),
    /// negative none (wait forever). A wait past it fails with `CMDGRAPH_ERROR_TIMEOUT`.
    pub timeout_ms: i64,
}

/// The default options: no validation, the default device, the default timeout.
#[no_mangle]
pub extern "C" fn cmdgraph_executor_options_default() -> cmdgraph_executor_options {
    cmdgraph_executor_options { validation: false, device_index: -1, device_name: std::ptr::null(), timeout_ms: 0 }
}

/// A loaded bundle on one Vulkan device: its user memory (zeroed at creation), pipelines and
/// host-task callbacks. Executables (`cmdgraph_exec`) made from it keep it alive: it is
/// released when it and all of them are destroyed. Opaque.
#[allow(non_camel_case_types)]
pub struct cmdgraph_executor {
    pub(crate) inner: Arc<Mutex<Executor>>,
    device_name: CString,
    /// `Executor::warnings`, found at creation.
    warnings: Vec<CString>,
    /// Validation messages taken by the last `cmdgraph_executor_take_messages`.
    messages: Vec<CString>,
    error: LastError,
}

impl cmdgraph_executor {
    /// The handle of a new executor.
    pub(crate) fn from_executor(ex: Executor) -> cmdgraph_executor {
        let device_name = c_string(ex.context().device_name());
        let warnings = ex.warnings().iter().map(|w| c_string(w)).collect();
        cmdgraph_executor {
            inner: Arc::new(Mutex::new(ex)),
            device_name,
            warnings,
            messages: Vec::new(),
            error: LastError::default(),
        }
    }
}

impl Handle for cmdgraph_executor {
    const WHAT: &'static str = "executor";
    fn last_error(&mut self) -> &mut LastError {
        &mut self.error
    }
}

/// The executor behind a handle, for one call. Calls on an executor and its executables from
/// different threads take turns on its lock; a host-task callback calling into its own
/// executor is refused (the executor may be waiting for that very callback).
pub(crate) fn borrow(inner: &Mutex<Executor>) -> Result<MutexGuard<'_, Executor>> {
    if crate::host::in_callback() {
        return Err(Error::invalid(
            "a host-task callback cannot call its executor or its executables (the executor may be waiting for the \
             callback); do that work after cmdgraph_exec_wait",
        ));
    }
    inner.lock().map_err(|_| Error::invalid("the executor is unusable: an earlier call panicked while holding it"))
}

pub(crate) fn context_options(o: &cmdgraph_executor_options) -> Result<ContextOptions> {
    let device = if !o.device_name.is_null() {
        // SAFETY: not NULL; the header's contract makes it a NUL-terminated string.
        DeviceChoice::Name(unsafe { name(o.device_name, "device name") }?.to_string())
    } else if let Ok(i) = usize::try_from(o.device_index) {
        DeviceChoice::Index(i)
    } else {
        DeviceChoice::Default
    };
    let timeout = match o.timeout_ms {
        0 => Some(DEFAULT_TIMEOUT),
        t if t < 0 => None,
        t => Some(Duration::from_millis(t.unsigned_abs())),
    };
    Ok(ContextOptions { validation: o.validation, device, timeout })
}

/// Creates an executor for `bundle` on a device (`options` NULL: the defaults). The bundle is
/// copied, not consumed: it stays usable and may be destroyed at once. On success `*out` is
/// a new executor to free with `cmdgraph_executor_destroy`; on error `*out` is NULL and the
/// message is the bundle's and the thread's.
///
/// # Safety
/// `bundle` is NULL or a live bundle; `options` NULL or readable; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_executor_create(
    bundle: *mut cmdgraph_bundle,
    options: *const cmdgraph_executor_options,
    out: *mut *mut cmdgraph_executor,
) -> cmdgraph_status {
    // SAFETY: the caller's contract for `bundle`, `options` and `out`.
    unsafe { create_into(bundle, options, out, |loaded, opts| Ok(Executor::new(loaded, opts)?)) }
}

/// The body of every `cmdgraph_executor_create*`: `*out` is NULL until `make` succeeds on the
/// bundle's contents and the options (`options` NULL: the defaults); then it is the new
/// executor. Errors go to the bundle's message and the thread's.
///
/// # Safety
/// `bundle` is NULL or a live bundle; `options` NULL or readable; `out` NULL or writable.
pub(crate) unsafe fn create_into(
    bundle: *mut cmdgraph_bundle,
    options: *const cmdgraph_executor_options,
    out: *mut *mut cmdgraph_executor,
    make: impl FnOnce(::cmdgraph_executor::Loaded, &ContextOptions) -> Result<Executor>,
) -> cmdgraph_status {
    if !out.is_null() {
        // SAFETY: not NULL; the caller's contract makes it writable.
        unsafe { out.write(std::ptr::null_mut()) };
    }
    let body = |b: &mut cmdgraph_bundle| {
        // SAFETY: the caller's contract for `options`.
        let opts = context_options(&unsafe { options.as_ref() }.copied().unwrap_or_else(default_options))?;
        if out.is_null() {
            return Err(Error::invalid("the executor out-pointer is NULL"));
        }
        let handle = cmdgraph_executor::from_executor(make(b.loaded.clone(), &opts)?);
        // SAFETY: checked not NULL above; writable by the caller's contract.
        unsafe { put(out, Box::into_raw(Box::new(handle)), "executor") }
    };
    // SAFETY: the caller's contract for `bundle`.
    unsafe { with(bundle, body) }
}

fn default_options() -> cmdgraph_executor_options {
    cmdgraph_executor_options_default()
}

/// Releases the executor handle; NULL does nothing. The device and memory go when its last
/// executable is destroyed too (waiting for their runs, bounded by the timeout).
///
/// # Safety
/// `ex` is NULL or a live executor, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_executor_destroy(ex: *mut cmdgraph_executor) {
    // SAFETY: the caller's contract.
    unsafe { destroy(ex) }
}

/// The message of the last call on `ex` ("" after a success), valid until the next call on
/// it; with NULL, `cmdgraph_last_error()`.
///
/// # Safety
/// `ex` is NULL or a live executor.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_executor_last_error(ex: *mut cmdgraph_executor) -> *const c_char {
    // SAFETY: the caller's contract.
    unsafe { last_error_of(ex) }
}

/// The device's name (as Vulkan reports it), valid as long as the executor; NULL for NULL.
///
/// # Safety
/// `ex` is NULL or a live executor.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_executor_device_name(ex: *mut cmdgraph_executor) -> *const c_char {
    // SAFETY: the caller's contract.
    match unsafe { ex.as_ref() } {
        Some(e) => e.device_name.as_ptr(),
        None => std::ptr::null(),
    }
}

/// How many warnings the executor found at creation (0 for NULL): on llvmpipe, one per kernel
/// whose loops may take more than 65,535 iterations in one work-item, which llvmpipe stops
/// without an error (docs/executor.md). Worth showing the user: the results may be wrong.
///
/// # Safety
/// `ex` is NULL or a live executor.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_executor_warning_count(ex: *mut cmdgraph_executor) -> usize {
    // SAFETY: the caller's contract.
    unsafe { ex.as_ref() }.map_or(0, |e| e.warnings.len())
}

/// Warning `index` (one line, no `warning:` prefix), valid as long as the executor; NULL
/// past the end or for NULL.
///
/// # Safety
/// `ex` is NULL or a live executor.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_executor_warning(ex: *mut cmdgraph_executor, index: usize) -> *const c_char {
    // SAFETY: the caller's contract.
    match unsafe { ex.as_ref() } {
        Some(e) => e.warnings.get(index).map_or(std::ptr::null(), |w| w.as_ptr()),
        None => std::ptr::null(),
    }
}

/// The byte size of user memory object `memory` (`"x"` or `"@x"`) in `*size`.
///
/// # Safety
/// `ex` is NULL or a live executor; `memory` NULL or a string; `size` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_executor_memory_size(
    ex: *mut cmdgraph_executor,
    memory: *const c_char,
    size: *mut u64,
) -> cmdgraph_status {
    let body = |e: &mut cmdgraph_executor| {
        // SAFETY: the caller's contract for `memory`.
        let n = unsafe { name(memory, "memory name") }?;
        let bare = n.strip_prefix('@').unwrap_or(n);
        let x = borrow(&e.inner)?;
        let h = x.module().memory_by_name(bare).ok_or_else(|| Error::from(unknown_memory(bare)))?;
        // SAFETY: the caller's contract for `size`.
        unsafe { put(size, x.module().memories[h].size_bytes(), "size") }
    };
    // SAFETY: the caller's contract for `ex`.
    unsafe { with(ex, body) }
}

fn unknown_memory(name: &str) -> ::cmdgraph_executor::ExecError {
    ::cmdgraph_executor::ExecError::Unknown(format!("memory @{name}"))
}

/// Sets user memory `memory` to the `len` bytes at `data`, which must be its exact size
/// (little-endian elements). Waits for earlier work.
///
/// # Safety
/// `ex` is NULL or a live executor; `memory` NULL or a string; `data` NULL or `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_executor_bind(
    ex: *mut cmdgraph_executor,
    memory: *const c_char,
    data: *const c_void,
    len: usize,
) -> cmdgraph_status {
    let body = |e: &mut cmdgraph_executor| {
        // SAFETY: the caller's contract for `memory` and `data`.
        let (n, d) = unsafe { (name(memory, "memory name")?, bytes(data.cast(), len, "data")?) };
        Ok(borrow(&e.inner)?.bind(n, d)?)
    };
    // SAFETY: the caller's contract for `ex`.
    unsafe { with(ex, body) }
}

/// Copies user memory `memory`, after every run submitted so far, to `dst` (`capacity`
/// bytes). `*size` (if not NULL) gets its byte size; a `capacity` below it is
/// `CMDGRAPH_ERROR_BUFFER_TOO_SMALL` with nothing copied (`dst` may then be NULL: a query).
///
/// # Safety
/// `ex` is NULL or a live executor; `memory` NULL or a string; `dst` NULL or `capacity`
/// writable bytes; `size` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_executor_read(
    ex: *mut cmdgraph_executor,
    memory: *const c_char,
    dst: *mut c_void,
    capacity: usize,
    size: *mut usize,
) -> cmdgraph_status {
    let body = |e: &mut cmdgraph_executor| {
        // SAFETY: the caller's contract for `memory`.
        let n = unsafe { name(memory, "memory name") }?;
        let data = borrow(&e.inner)?.read(n)?;
        // SAFETY: the caller's contract for `dst` and `size`.
        unsafe { copy_out(n, &data, dst, capacity, size) }
    };
    // SAFETY: the caller's contract for `ex`.
    unsafe { with(ex, body) }
}

/// Copies `data` (read from `what`) to `dst`, after writing its length to `*size` (if not
/// NULL): the protocol of every read, where a short or NULL buffer is a size query.
///
/// # Safety
/// `dst` is NULL or `capacity` writable bytes; `size` NULL or writable.
pub(crate) unsafe fn copy_out(
    what: &str,
    data: &[u8],
    dst: *mut c_void,
    capacity: usize,
    size: *mut usize,
) -> Result<()> {
    if !size.is_null() {
        // SAFETY: not NULL; writable by the caller's contract.
        unsafe { size.write(data.len()) };
    }
    if capacity < data.len() {
        return Err(Error::new(
            cmdgraph_status::CMDGRAPH_ERROR_BUFFER_TOO_SMALL,
            format!("{what} has {} bytes, the buffer {capacity}", data.len()),
        ));
    }
    if !data.is_empty() {
        if dst.is_null() {
            return Err(Error::invalid("the destination pointer is NULL"));
        }
        // SAFETY: `dst` has `capacity` >= `data.len()` writable bytes (caller's contract)
        // and cannot overlap `data`, which the library owns.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst.cast::<u8>(), data.len()) };
    }
    Ok(())
}

/// Registers `callback` for `host_task "name"` nodes (replacing an earlier one). It is called
/// on the executor's host-task thread, not the caller's, with the node's memory and `user`;
/// `user` must stay valid (and usable from that thread) until the executor and its
/// executables are destroyed. A callback must not call functions on this executor or its
/// executables.
///
/// # Safety
/// `ex` is NULL or a live executor; `name` NULL or a string; `callback` NULL or a function
/// that follows the contract of `cmdgraph_host_fn`.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_executor_register_callback(
    ex: *mut cmdgraph_executor,
    name: *const c_char,
    callback: cmdgraph_host_fn,
    user: *mut c_void,
) -> cmdgraph_status {
    let body = |e: &mut cmdgraph_executor| {
        // SAFETY: the caller's contract for `name`.
        let n = unsafe { crate::name(name, "callback name") }?;
        let f = callback.ok_or_else(|| Error::invalid("the callback function is NULL"))?;
        borrow(&e.inner)?.register_callback(n, callback::wrap(f, user));
        Ok(())
    };
    // SAFETY: the caller's contract for `ex`.
    unsafe { with(ex, body) }
}

/// Makes an executable of graph `graph` (`"g"` or `"@g"`); `options` NULL: the defaults. On
/// success `*out` is a new executable to free with `cmdgraph_exec_destroy`; on error NULL.
///
/// # Safety
/// `ex` is NULL or a live executor; `graph` NULL or a string; `options` NULL or readable;
/// `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_executor_finalize(
    ex: *mut cmdgraph_executor,
    graph: *const c_char,
    options: *const cmdgraph_finalize_options,
    out: *mut *mut cmdgraph_exec,
) -> cmdgraph_status {
    if !out.is_null() {
        // SAFETY: not NULL; the caller's contract makes it writable.
        unsafe { out.write(std::ptr::null_mut()) };
    }
    let body = |e: &mut cmdgraph_executor| {
        // SAFETY: the caller's contract for `graph` and `options`.
        let (g, opts) = unsafe { (name(graph, "graph name")?, options.as_ref().copied()) };
        if out.is_null() {
            return Err(Error::invalid("the executable out-pointer is NULL"));
        }
        let opts = opts.unwrap_or_default();
        let mut x = borrow(&e.inner)?;
        let before = x.record_options();
        x.set_record_options(RecordOptions { node_profiling: opts.node_profiling, ..before });
        let id = x.finalize(g);
        x.set_record_options(before);
        let handle = cmdgraph_exec::new(e.inner.clone(), id?);
        // SAFETY: checked not NULL above; writable by the caller's contract.
        unsafe { put(out, Box::into_raw(Box::new(handle)), "executable") }
    };
    // SAFETY: the caller's contract for `ex`.
    unsafe { with(ex, body) }
}

/// Waits until every submitted run of every executable of `ex` has finished.
///
/// # Safety
/// `ex` is NULL or a live executor.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_executor_wait_idle(ex: *mut cmdgraph_executor) -> cmdgraph_status {
    // SAFETY: the caller's contract.
    unsafe { with(ex, |e| Ok(borrow(&e.inner)?.wait_idle()?)) }
}

/// Takes the validation layer's messages collected since the last call (none without
/// validation): `*count` gets how many, `cmdgraph_executor_message` returns each until the
/// next call of this function. A program checking its Vulkan usage fails when `*count > 0`.
///
/// # Safety
/// `ex` is NULL or a live executor; `count` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_executor_take_messages(
    ex: *mut cmdgraph_executor,
    count: *mut usize,
) -> cmdgraph_status {
    let body = |e: &mut cmdgraph_executor| {
        let taken = borrow(&e.inner)?.context().take_messages();
        e.messages = taken.iter().map(|m| c_string(m)).collect();
        // SAFETY: the caller's contract for `count`.
        unsafe { put(count, e.messages.len(), "count") }
    };
    // SAFETY: the caller's contract for `ex`.
    unsafe { with(ex, body) }
}

/// Message `index` of the last `cmdgraph_executor_take_messages`, or NULL past the end (or
/// for a NULL executor). Valid until the next `cmdgraph_executor_take_messages`.
///
/// # Safety
/// `ex` is NULL or a live executor.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_executor_message(ex: *mut cmdgraph_executor, index: usize) -> *const c_char {
    // SAFETY: the caller's contract.
    match unsafe { ex.as_ref() } {
        Some(e) => e.messages.get(index).map_or(std::ptr::null(), |m| m.as_ptr()),
        None => std::ptr::null(),
    }
}
