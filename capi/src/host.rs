//! Host tasks: the C callback type and `cmdgraph_host_memory`, what a callback sees of its
//! node's memory (exactly the node's `access(...)` list, as on the interpreter).

use crate::error::{c_string, cmdgraph_status, Error, LastError};
use crate::{bytes, last_error_of, name, put, with, Handle};
use cmdgraph_executor::{HostError, HostMemory};
use std::ffi::{c_char, c_void, CString};

/// The memory of one host-task call: valid only during the callback it is passed to. Its
/// functions reach exactly the memory the node declares (`access(@x read, ...)`) in the
/// declared modes; a violation fails the run even if the callback ignores the error. Opaque.
#[allow(non_camel_case_types)]
pub struct cmdgraph_host_memory<'a> {
    mem: &'a mut dyn HostMemory,
    node: CString,
    /// A failure message the callback set (`cmdgraph_host_memory_set_error`).
    failure: Option<String>,
    error: LastError,
}

impl Handle for cmdgraph_host_memory<'_> {
    const WHAT: &'static str = "host memory";
    fn last_error(&mut self) -> &mut LastError {
        &mut self.error
    }
}

/// A host-task callback: called on the executor's host-task thread with the node's memory
/// (valid during the call only) and the `user` pointer given at registration. Returns
/// `CMDGRAPH_OK`, or an error that fails the run (`cmdgraph_exec_wait` then reports
/// `CMDGRAPH_ERROR_HOST_TASK_FAILED` with the message set by `cmdgraph_host_memory_set_error`,
/// or the last failed memory access's). It must not unwind (C++ exceptions) out of the call.
#[allow(non_camel_case_types)]
pub type cmdgraph_host_fn =
    Option<unsafe extern "C" fn(memory: *mut cmdgraph_host_memory<'_>, user: *mut c_void) -> cmdgraph_status>;

thread_local! {
    /// Set while a C host-task callback runs on this thread.
    static IN_CALLBACK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the calling thread is inside a host-task callback.
pub(crate) fn in_callback() -> bool {
    IN_CALLBACK.with(|c| c.get())
}

pub(crate) mod callback {
    use super::*;

    /// The registration's user pointer, carried to the host-task thread.
    struct User(*mut c_void);

    // SAFETY: the header makes the caller promise the pointer may be used from the
    // executor's host-task thread while the executor lives; this crate never dereferences it.
    unsafe impl Send for User {}

    impl User {
        fn get(&self) -> *mut c_void {
            self.0
        }
    }

    /// The executor's callback for C function `f` with `user`.
    pub(crate) fn wrap(
        f: unsafe extern "C" fn(*mut cmdgraph_host_memory<'_>, *mut c_void) -> cmdgraph_status,
        user: *mut c_void,
    ) -> impl FnMut(&mut dyn HostMemory) -> Result<(), HostError> + Send + 'static {
        let user = User(user);
        move |mem: &mut dyn HostMemory| {
            let node = c_string(mem.node());
            let mut h = cmdgraph_host_memory { mem, node, failure: None, error: LastError::default() };
            // The thread's slot starts empty, so a library call the callback made and that
            // failed can explain the callback's error below.
            crate::error::set_thread_error(None);
            IN_CALLBACK.with(|c| c.set(true));
            // SAFETY: `h` lives for the whole call and is not touched meanwhile; `f` and `user`
            // follow the contract they were registered under.
            let status = unsafe { f(&mut h, user.get()) };
            IN_CALLBACK.with(|c| c.set(false));
            if status == cmdgraph_status::CMDGRAPH_OK {
                return Ok(());
            }
            let name = crate::error::status_name(status).to_string_lossy();
            let why = h
                .failure
                .take()
                .or_else(|| {
                    // SAFETY: the slot's pointer is a live NUL-terminated string owned by `h`.
                    let last = unsafe { std::ffi::CStr::from_ptr(h.error.as_ptr()) };
                    (!last.is_empty()).then(|| last.to_string_lossy().into_owned())
                })
                .or_else(|| Some(crate::error::thread_error()).filter(|m| !m.is_empty()));
            Err(HostError::failed(match why {
                Some(w) => format!("the callback returned {name}: {w}"),
                None => format!("the callback returned {name}"),
            }))
        }
    }
}

/// The host-task node's name (without `%`), valid during the callback; NULL for NULL.
///
/// # Safety
/// `memory` is NULL or the callback's live host memory.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_host_memory_node(memory: *mut cmdgraph_host_memory<'_>) -> *const c_char {
    // SAFETY: the caller's contract.
    match unsafe { memory.as_ref() } {
        Some(m) => m.node.as_ptr(),
        None => std::ptr::null(),
    }
}

/// The byte size of declared memory `name` (`"@x"`, `"x"`, or `"%t"` for a graph
/// allocation) in `*size`.
///
/// # Safety
/// `memory` is NULL or the callback's live host memory; `name` NULL or a string; `size`
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_host_memory_size(
    memory: *mut cmdgraph_host_memory<'_>,
    name: *const c_char,
    size: *mut u64,
) -> cmdgraph_status {
    let body = |m: &mut cmdgraph_host_memory<'_>| {
        // SAFETY: the caller's contract for `name`.
        let n = unsafe { crate::name(name, "memory name") }?;
        let s = m.mem.size(n)?;
        // SAFETY: the caller's contract for `size`.
        unsafe { put(size, s, "size") }
    };
    // SAFETY: the caller's contract for `memory`.
    unsafe { with(memory, body) }
}

/// Copies `len` bytes of declared memory `name` from byte `offset` to `dst` (the node must
/// declare it `read` or `read_write`).
///
/// # Safety
/// `memory` is NULL or the callback's live host memory; `name` NULL or a string; `dst` NULL
/// or `len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_host_memory_read(
    memory: *mut cmdgraph_host_memory<'_>,
    name: *const c_char,
    offset: u64,
    dst: *mut c_void,
    len: usize,
) -> cmdgraph_status {
    let body = |m: &mut cmdgraph_host_memory<'_>| {
        // SAFETY: the caller's contract for `name`.
        let n = unsafe { crate::name(name, "memory name") }?;
        if len > 0 && dst.is_null() {
            return Err(Error::invalid("the destination pointer is NULL"));
        }
        let data = m.mem.read_bytes(n, offset, len as u64)?;
        if data.len() != len {
            return Err(Error::invalid(format!("{n}: {} bytes read, {len} asked for", data.len())));
        }
        if len > 0 {
            // SAFETY: `dst` has `len` writable bytes (caller's contract), distinct from
            // the fresh `data`.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst.cast::<u8>(), len) };
        }
        Ok(())
    };
    // SAFETY: the caller's contract for `memory`.
    unsafe { with(memory, body) }
}

/// Writes the `len` bytes at `src` to declared memory `name` at byte `offset` (the node must
/// declare it `write` or `read_write`).
///
/// # Safety
/// `memory` is NULL or the callback's live host memory; `name` NULL or a string; `src` NULL
/// or `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_host_memory_write(
    memory: *mut cmdgraph_host_memory<'_>,
    name: *const c_char,
    offset: u64,
    src: *const c_void,
    len: usize,
) -> cmdgraph_status {
    let body = |m: &mut cmdgraph_host_memory<'_>| {
        // SAFETY: the caller's contract for `name` and `src`.
        let (n, data) = unsafe { (crate::name(name, "memory name")?, bytes(src.cast(), len, "source")?) };
        Ok(m.mem.write(n, offset, data)?)
    };
    // SAFETY: the caller's contract for `memory`.
    unsafe { with(memory, body) }
}

/// Sets the message of the callback's failure (used when it returns an error status).
///
/// # Safety
/// `memory` is NULL or the callback's live host memory; `message` NULL or a string.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_host_memory_set_error(
    memory: *mut cmdgraph_host_memory<'_>,
    message: *const c_char,
) -> cmdgraph_status {
    let body = |m: &mut cmdgraph_host_memory<'_>| {
        // SAFETY: the caller's contract for `message`.
        let text = unsafe { name(message, "message") }?;
        m.failure = Some(text.to_string());
        Ok(())
    };
    // SAFETY: the caller's contract for `memory`.
    unsafe { with(memory, body) }
}

/// The message of the last call on `memory` ("" after a success), valid until the next call
/// on it; with NULL, `cmdgraph_last_error()`.
///
/// # Safety
/// `memory` is NULL or the callback's live host memory.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_host_memory_last_error(memory: *mut cmdgraph_host_memory<'_>) -> *const c_char {
    // SAFETY: the caller's contract.
    unsafe { last_error_of(memory) }
}
