//! The C API of cmdgraph's executor (docs/capi.md): load a compiled bundle, create an executor
//! on a Vulkan device, bind memory, finalize graphs into executables, run them, update them,
//! read memory back, profile them, and serve host tasks from C callbacks.
//!
//! A thin layer over [`cmdgraph_executor`]: every function converts its arguments, calls the
//! Rust API and converts the result; nothing here decides anything the executor does not.
//! The header `include/cmdgraph.h` is generated from this crate by cbindgen
//! (`tests/header.rs` checks the checked-in copy).
//!
//! Rules every function follows:
//! - it returns a [`cmdgraph_status`] (`CMDGRAPH_OK` = 0) unless it only returns a value;
//! - its message goes to the handle it works on (`cmdgraph_*_last_error`) and to the calling
//!   thread's slot (`cmdgraph_last_error`), each valid until the next call on that handle or
//!   thread;
//! - a panic is caught and becomes `CMDGRAPH_ERROR_PANIC`;
//! - a NULL handle, a NULL pointer where one is needed, or a name that is not UTF-8 is an
//!   error, never a crash; destroying NULL does nothing.
//!
//! `unsafe` is allowed in this crate only: C hands it raw pointers. Every block says why it
//! is sound, given the contract the header states for the pointer.
#![allow(unsafe_code)]

pub mod bundle;
pub mod comm;
pub mod device_global;
pub mod error;
pub mod exec;
pub mod executor;
pub mod host;
pub mod multi;
pub mod update;
pub mod vulkan;

use error::{Error, Result};
use std::ffi::{c_char, CStr};

pub use bundle::cmdgraph_bundle;
pub use error::cmdgraph_status;
pub use exec::{cmdgraph_exec, cmdgraph_finalize_options, cmdgraph_node_profile, cmdgraph_profile};
pub use executor::{cmdgraph_executor, cmdgraph_executor_options};
pub use host::{cmdgraph_host_fn, cmdgraph_host_memory};
pub use multi::{cmdgraph_multi_executor, cmdgraph_stage_profile};
pub use vulkan::{cmdgraph_get_instance_proc_addr, cmdgraph_semaphore_value, cmdgraph_vulkan_objects};

/// The message of the last call made on the calling thread: "" after a success. Calls that
/// fail before any handle exists (opening a bundle) and calls given a NULL handle report here
/// only; every other call reports on its handle too. The string stays valid until the thread's next call into
/// this library; never NULL.
#[no_mangle]
pub extern "C" fn cmdgraph_last_error() -> *const c_char {
    error::thread_error_ptr()
}

/// The name of a status as a static string (`"CMDGRAPH_ERROR_NOT_FOUND"`); never NULL.
#[no_mangle]
pub extern "C" fn cmdgraph_status_name(status: cmdgraph_status) -> *const c_char {
    error::status_name(status).as_ptr()
}

/// This library's version (`"0.1.0"`), a static string.
#[no_mangle]
pub extern "C" fn cmdgraph_version() -> *const c_char {
    const VERSION: &CStr = match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(v) => v,
        Err(_) => c"unknown",
    };
    VERSION.as_ptr()
}

/// A name from C: NULL and non-UTF-8 are errors naming `what`.
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

/// The `count` strings at `list` (a C array of `const char *`; NULL allowed when `count` is
/// 0), each checked as [`name`] does; `what` names one entry in messages ("node name").
///
/// # Safety
/// `list` is NULL or points to `count` readable pointers, each NULL or a NUL-terminated
/// string valid for `'a`.
pub(crate) unsafe fn names<'a>(list: *const *const c_char, count: usize, what: &str) -> Result<Vec<&'a str>> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if list.is_null() {
        return Err(Error::invalid(format!("the {what} list is NULL ({count} entries)")));
    }
    // SAFETY: not NULL, and the caller's contract gives `count` readable pointers.
    let pointers = unsafe { std::slice::from_raw_parts(list, count) };
    // SAFETY: the caller's contract makes each pointer NULL or a string.
    pointers.iter().map(|&p| unsafe { name(p, what) }).collect()
}

/// `len` bytes at `data` (NULL allowed when `len` is 0).
///
/// # Safety
/// `data` is NULL or points to `len` readable bytes that stay valid for `'a`.
pub(crate) unsafe fn bytes<'a>(data: *const u8, len: usize, what: &str) -> Result<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if data.is_null() {
        return Err(Error::invalid(format!("the {what} pointer is NULL ({len} bytes)")));
    }
    // SAFETY: not NULL, and the caller's contract gives `len` readable bytes.
    Ok(unsafe { std::slice::from_raw_parts(data, len) })
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

/// A handle type: where its last message is kept.
pub(crate) trait Handle {
    /// What the handle is called in messages.
    const WHAT: &'static str;
    /// The handle's message slot.
    fn last_error(&mut self) -> &mut error::LastError;
}

/// Runs `f` on the handle behind `h` at the C boundary: NULL is `CMDGRAPH_ERROR_NULL_HANDLE`,
/// a panic `CMDGRAPH_ERROR_PANIC`; the message goes to the handle and the thread.
///
/// # Safety
/// `h` is NULL or a live handle of type `H` made by this library, used by no other thread.
pub(crate) unsafe fn with<H: Handle>(h: *mut H, f: impl FnOnce(&mut H) -> Result<()>) -> cmdgraph_status {
    // SAFETY: the caller's contract: NULL or a live, unshared handle.
    let Some(handle) = (unsafe { h.as_mut() }) else { return error::null_handle(H::WHAT) };
    let outcome = error::catch(|| f(&mut *handle));
    error::finish(Some(handle.last_error()), outcome)
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
