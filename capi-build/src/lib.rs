//! `libcmdgraph_build`: building SYCL command graphs from C and C++ (docs/capi.md, "Building
//! graphs from C and C++"), a C API over `cmdgraph-sycl`.
//!
//! Contexts, queues (in-order and out-of-order, recording into graphs), USM allocations,
//! kernels registered from kernel-language text or WGSL/GLSL source, command groups (kernel,
//! memcpy, memset, fill, host task, barrier, sub-graph, graph-owned allocation), modifiable
//! graphs with explicit dependencies and edges, dynamic parameters and command groups,
//! executable graphs run on a queue and updated, and two offline paths: the module's IR text
//! (for `cmdgraph compile`) and the bundle compiled in process (LLVM). It links LLVM, so it
//! is a library of its own: applications that only load bundles use `libcmdgraph` (capi/).
//!
//! Rules every function follows (those of capi/):
//! - it returns a [`cmdgraph_sycl_status`] (`CMDGRAPH_SYCL_OK` = 0) unless it only returns
//!   a value;
//! - its message goes to the handle it works on (`cmdgraph_sycl_*_last_error`) and to the
//!   calling thread's slot (`cmdgraph_sycl_last_error`), each valid until the next call on
//!   that handle or thread;
//! - a panic is caught and becomes `CMDGRAPH_SYCL_ERROR_PANIC`;
//! - a NULL handle, a NULL pointer where one is needed, or a name that is not UTF-8 is an
//!   error, never a crash; destroying NULL does nothing.
//!
//! `unsafe` is allowed in this crate: C hands it raw pointers. Every block says why it is
//! sound, given the contract the header states for the pointer.
#![allow(unsafe_code)]

pub mod cg;
pub mod comm;
pub mod context;
pub mod dynamic;
pub mod error;
pub mod exec;
pub mod graph;
pub mod host;
pub mod queue;
pub mod usm;

use error::{Error, Result};
use std::ffi::{c_char, CStr};

pub use cg::{cmdgraph_sycl_arg, cmdgraph_sycl_arg_kind, cmdgraph_sycl_cg};
pub use context::{
    cmdgraph_sycl_backend, cmdgraph_sycl_context, cmdgraph_sycl_context_options, cmdgraph_sycl_shader_lang,
};
pub use dynamic::{cmdgraph_sycl_dcg, cmdgraph_sycl_dynparam};
pub use error::cmdgraph_sycl_status;
pub use exec::cmdgraph_sycl_exec;
pub use graph::{cmdgraph_sycl_graph, cmdgraph_sycl_node};
pub use host::{cmdgraph_sycl_access, cmdgraph_sycl_access_mode, cmdgraph_sycl_host_fn, cmdgraph_sycl_host_memory};
pub use queue::{cmdgraph_sycl_event, cmdgraph_sycl_queue};
pub use usm::{cmdgraph_sycl_type, cmdgraph_sycl_usm_kind};

/// The message of the last call made on the calling thread: "" after a success. Calls that
/// fail before any handle exists and calls given a NULL handle report here only; every other
/// call reports on its handle too. Valid until the thread's next call into this library;
/// never NULL.
#[no_mangle]
pub extern "C" fn cmdgraph_sycl_last_error() -> *const c_char {
    error::thread_error_ptr()
}

/// The name of a status as a static string (`"CMDGRAPH_SYCL_ERROR_INVALID"`); never NULL.
#[no_mangle]
pub extern "C" fn cmdgraph_sycl_status_name(status: cmdgraph_sycl_status) -> *const c_char {
    error::status_name(status).as_ptr()
}

/// This library's version (`"0.1.0"`), a static string.
#[no_mangle]
pub extern "C" fn cmdgraph_sycl_version() -> *const c_char {
    const VERSION: &CStr = match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(v) => v,
        Err(_) => c"unknown",
    };
    VERSION.as_ptr()
}

/// A string from C: NULL and non-UTF-8 are errors naming `what`.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that stays valid and unchanged for `'a`.
pub(crate) unsafe fn name<'a>(p: *const c_char, what: &str) -> Result<&'a str> {
    if p.is_null() {
        return Err(Error::invalid(format!("the {what} is NULL")));
    }
    // SAFETY: not NULL, and the caller's contract makes it a live NUL-terminated string.
    let c = unsafe { CStr::from_ptr(p) };
    c.to_str().map_err(|_| Error::invalid(format!("the {what} is not UTF-8: {}", c.to_string_lossy())))
}

/// The `count` elements at `list` (NULL allowed when `count` is 0).
///
/// # Safety
/// `list` is NULL or points to `count` readable `T`s that stay valid for `'a`.
pub(crate) unsafe fn slice<'a, T>(list: *const T, count: usize, what: &str) -> Result<&'a [T]> {
    if count == 0 {
        return Ok(&[]);
    }
    if list.is_null() {
        return Err(Error::invalid(format!("the {what} list is NULL ({count} entries)")));
    }
    // SAFETY: not NULL, and the caller's contract gives `count` readable elements.
    Ok(unsafe { std::slice::from_raw_parts(list, count) })
}

/// Writes `value` through an out-pointer that must not be NULL.
///
/// # Safety
/// `out` is NULL or valid for a write of `T`.
pub(crate) unsafe fn put<T>(out: *mut T, value: T, what: &str) -> Result<()> {
    if out.is_null() {
        return Err(Error::invalid(format!("the {what} out-pointer is NULL")));
    }
    // SAFETY: not NULL, and the caller's contract makes it writable; `write` drops nothing,
    // as the target may be uninitialised.
    unsafe { out.write(value) };
    Ok(())
}

/// Sets an out-pointer of a new handle to NULL first (so it is NULL on every error) and
/// fails when it is NULL itself.
///
/// # Safety
/// `out` is NULL or valid for a write of a pointer.
pub(crate) unsafe fn clear_out<T>(out: *mut *mut T, what: &str) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { put(out, std::ptr::null_mut(), what) }
}

/// Stores a new handle in `*out`.
///
/// # Safety
/// `out` is NULL or valid for a write of a pointer.
pub(crate) unsafe fn put_handle<T>(out: *mut *mut T, value: T, what: &str) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { put(out, Box::into_raw(Box::new(value)), what) }
}

/// [`clear_out`] for an out-pointer the caller may leave NULL (it does not want the handle).
///
/// # Safety
/// `out` is NULL or valid for a write of a pointer.
pub(crate) unsafe fn clear_optional_out<T>(out: *mut *mut T, what: &str) -> Result<()> {
    if out.is_null() {
        return Ok(());
    }
    // SAFETY: the caller's contract.
    unsafe { clear_out(out, what) }
}

/// [`put_handle`] for an out-pointer the caller may leave NULL: the handle is then dropped.
///
/// # Safety
/// `out` is NULL or valid for a write of a pointer.
pub(crate) unsafe fn put_optional_handle<T>(out: *mut *mut T, value: T, what: &str) -> Result<()> {
    if out.is_null() {
        return Ok(());
    }
    // SAFETY: the caller's contract.
    unsafe { put_handle(out, value, what) }
}

/// A handle type: where its last message is kept.
pub(crate) trait Handle {
    /// What the handle is called in messages.
    const WHAT: &'static str;
    /// The handle's message slot.
    fn last_error(&mut self) -> &mut error::LastError;
}

/// Runs `f` on the handle behind `h` at the C boundary: NULL is
/// `CMDGRAPH_SYCL_ERROR_NULL_HANDLE`, a panic `CMDGRAPH_SYCL_ERROR_PANIC`; the message goes
/// to the handle and the thread.
///
/// # Safety
/// `h` is NULL or a live handle of type `H` made by this library, used by no other thread.
pub(crate) unsafe fn with<H: Handle>(h: *mut H, f: impl FnOnce(&mut H) -> Result<()>) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract: NULL or a live, unshared handle.
    let Some(handle) = (unsafe { h.as_mut() }) else { return error::null_handle(H::WHAT) };
    let outcome = error::catch(|| f(&mut *handle));
    error::finish(Some(handle.last_error()), outcome)
}

/// A shared reference to the handle behind `h` for an argument of another handle's call:
/// NULL is an error naming `what`.
///
/// # Safety
/// `h` is NULL or a live handle of type `H` made by this library, not written during `'a`.
pub(crate) unsafe fn arg<'a, H>(h: *const H, what: &str) -> Result<&'a H> {
    // SAFETY: the caller's contract.
    unsafe { h.as_ref() }.ok_or_else(|| {
        Error::new(cmdgraph_sycl_status::CMDGRAPH_SYCL_ERROR_NULL_HANDLE, format!("the {what} handle is NULL"))
    })
}

/// The handles at `list` (`count` of them; NULL allowed when `count` is 0), each not NULL.
///
/// # Safety
/// `list` is NULL or points to `count` pointers, each NULL or a live handle of type `H`.
pub(crate) unsafe fn handles<'a, H>(list: *const *const H, count: usize, what: &str) -> Result<Vec<&'a H>> {
    // SAFETY: the caller's contract.
    let pointers = unsafe { slice(list, count, what) }?;
    // SAFETY: the caller's contract makes each pointer NULL or a live handle.
    pointers.iter().map(|&p| unsafe { arg(p, what) }).collect()
}

/// The last message of the handle behind `h`, or the thread's when `h` is NULL.
///
/// # Safety
/// As [`with`].
pub(crate) unsafe fn last_error_of<H: Handle>(h: *mut H) -> *const c_char {
    // SAFETY: the caller's contract: NULL or a live, unshared handle.
    match unsafe { h.as_mut() } {
        Some(handle) => handle.last_error().as_ptr(),
        None => error::thread_error_ptr(),
    }
}

/// Frees a handle made by `Box::into_raw`; NULL does nothing. A panic in a destructor is
/// caught and reported to the thread only.
///
/// # Safety
/// `h` is NULL or a live handle of type `H` made by this library, not used afterwards.
pub(crate) unsafe fn destroy<H>(h: *mut H) {
    if h.is_null() {
        return;
    }
    // SAFETY: the caller's contract: a live handle from `Box::into_raw`, given up here.
    let boxed = unsafe { Box::from_raw(h) };
    error::guard(None, move || {
        drop(boxed);
        Ok(())
    });
}

/// Copies `data` out with the read protocol: `*size` = its length; `dst` NULL with
/// `capacity` 0 asks for the size (a success); a short `capacity` is
/// `CMDGRAPH_SYCL_ERROR_BUFFER_TOO_SMALL` with nothing copied.
///
/// # Safety
/// `dst` is NULL or writable for `capacity` bytes; `size` NULL or writable.
pub(crate) unsafe fn copy_out(data: &[u8], dst: *mut u8, capacity: usize, size: *mut usize) -> Result<()> {
    if !size.is_null() {
        // SAFETY: not NULL, writable by the caller's contract.
        unsafe { size.write(data.len()) };
    }
    if dst.is_null() && capacity == 0 {
        return Ok(());
    }
    if capacity < data.len() {
        return Err(Error::new(
            cmdgraph_sycl_status::CMDGRAPH_SYCL_ERROR_BUFFER_TOO_SMALL,
            format!("the buffer holds {capacity} bytes, {} are needed", data.len()),
        ));
    }
    if data.is_empty() {
        return Ok(());
    }
    if dst.is_null() {
        return Err(Error::invalid("the destination pointer is NULL"));
    }
    // SAFETY: `dst` is writable for `capacity >= data.len()` bytes and cannot overlap our Vec.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
    Ok(())
}
