//! Host tasks: the C callback type, the USM ranges a host task declares, and
//! `cmdgraph_sycl_host_memory`, what a callback reaches of them while it runs.

use crate::context::Shared;
use crate::error::{cmdgraph_sycl_status, Error, LastError, Result};
use crate::usm::{device_ptr, usm_at};
use crate::{last_error_of, name, with, Handle};
use cmdgraph_sycl::{Access, HostError, HostMemory, Ptr};
use std::ffi::{c_char, c_void};

/// Access modes of a host task's USM ranges.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum cmdgraph_sycl_access_mode {
    /// Read only.
    CMDGRAPH_SYCL_READ = 0,
    /// Write only (contents not written are kept).
    CMDGRAPH_SYCL_WRITE = 1,
    /// Read and write.
    CMDGRAPH_SYCL_READ_WRITE = 2,
}

/// One USM allocation a host task reaches (by any address inside it) and how.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cmdgraph_sycl_access {
    /// An address inside a USM allocation of the context; the task reaches all of it.
    pub pointer: *const c_void,
    /// A `cmdgraph_sycl_access_mode`.
    pub mode: i32,
}

/// What a callback sees while it runs: the USM it declared, by address. Valid during the
/// callback only. Opaque.
#[allow(non_camel_case_types)]
pub struct cmdgraph_sycl_host_memory<'a> {
    mem: &'a mut dyn HostMemory,
    table: &'a [Range],
    failure: Option<String>,
    error: LastError,
}

impl Handle for cmdgraph_sycl_host_memory<'_> {
    const WHAT: &'static str = "host memory";
    fn last_error(&mut self) -> &mut LastError {
        &mut self.error
    }
}

/// A host-task callback: called with the task's memory (valid during the call) and the
/// `user` pointer given with it. Returns `CMDGRAPH_SYCL_OK`, or an error that fails the run
/// (the event's or queue's wait then reports it with the message set by
/// `cmdgraph_sycl_host_memory_set_error`). It runs on the runtime's host-task thread, must
/// not call other functions of this library than `cmdgraph_sycl_host_memory_*`, and must not
/// unwind (C++ exceptions) out of the call.
#[allow(non_camel_case_types)]
pub type cmdgraph_sycl_host_fn =
    Option<unsafe extern "C" fn(memory: *mut cmdgraph_sycl_host_memory<'_>, user: *mut c_void) -> cmdgraph_sycl_status>;

/// A declared allocation: its address range on the C side and its memory object's name.
#[derive(Clone, Debug)]
struct Range {
    start: usize,
    bytes: u64,
    memory: String,
}

/// The user pointer, carried to the host-task thread.
struct User(*mut c_void);

// SAFETY: the header makes the caller promise the pointer may be used from the runtime's
// host-task thread while graphs using it live; this crate never dereferences it.
unsafe impl Send for User {}

impl User {
    fn get(&self) -> *mut c_void {
        self.0
    }
}

/// Registers C callback `f` with `user` as a new host task of the context and returns its
/// name and USM list.
pub(crate) fn register(
    shared: &Shared,
    f: unsafe extern "C" fn(*mut cmdgraph_sycl_host_memory<'_>, *mut c_void) -> cmdgraph_sycl_status,
    user: *mut c_void,
    access: &[cmdgraph_sycl_access],
) -> Result<(String, Vec<(Ptr, Access)>)> {
    let mut usm = Vec::new();
    let mut table = Vec::new();
    for (i, a) in access.iter().enumerate() {
        let mode = match a.mode {
            0 => Access::Read,
            1 => Access::Write,
            2 => Access::ReadWrite,
            m => return Err(Error::invalid(format!("access {i}: {m} is not a cmdgraph_sycl_access_mode (0 to 2)"))),
        };
        let what = format!("host-task access {i}");
        device_ptr(shared, a.pointer, &what)?;
        let Some((u, offset, _)) = usm_at(shared, a.pointer)? else {
            return Err(Error::invalid(format!("{what}: {:p} is host memory", a.pointer)));
        };
        let bytes = u.count().saturating_mul(u.elem().size());
        table.push(Range { start: a.pointer as usize - offset as usize, bytes, memory: u.name().to_string() });
        usm.push((u.ptr(), mode));
    }
    let n = shared.host_tasks.get();
    shared.host_tasks.set(n + 1);
    let callback = format!("host_task_{n}");
    let user = User(user);
    shared.ctx.register_host_task(&callback, move |mem: &mut dyn HostMemory| {
        let mut h = cmdgraph_sycl_host_memory { mem, table: &table, failure: None, error: LastError::default() };
        // SAFETY: `h` lives for the whole call and is not touched meanwhile; `f` and `user`
        // follow the contract they were given under.
        let status = unsafe { f(&mut h, user.get()) };
        if status == cmdgraph_sycl_status::CMDGRAPH_SYCL_OK {
            return Ok(());
        }
        let name = crate::error::status_name(status).to_string_lossy();
        let why = h
            .failure
            .take()
            .or_else(|| Some(h.error.text()).filter(|m| !m.is_empty()))
            .or_else(|| Some(crate::error::thread_error()).filter(|m| !m.is_empty()));
        Err(HostError::failed(match why {
            Some(w) => format!("the callback returned {name}: {w}"),
            None => format!("the callback returned {name}"),
        }))
    });
    Ok((callback, usm))
}

impl cmdgraph_sycl_host_memory<'_> {
    /// The memory object and offset of `len` bytes at `addr`.
    fn locate(&self, addr: *const c_void, len: usize) -> Result<(String, u64)> {
        let a = addr as usize;
        let r =
            self.table.iter().find(|r| a >= r.start && ((a - r.start) as u64) < r.bytes.max(1)).ok_or_else(|| {
                Error::new(
                    cmdgraph_sycl_status::CMDGRAPH_SYCL_ERROR_NOT_FOUND,
                    format!("{addr:p} is not in the USM this host task declared"),
                )
            })?;
        let offset = (a - r.start) as u64;
        if offset + len as u64 > r.bytes {
            return Err(Error::invalid(format!(
                "{len} bytes at {addr:p} run past the end of its allocation ({} bytes)",
                r.bytes
            )));
        }
        Ok((r.memory.clone(), offset))
    }
}

fn host_error(e: HostError) -> Error {
    Error::new(cmdgraph_sycl_status::CMDGRAPH_SYCL_ERROR_INVALID, format!("invalid: {e}"))
}

/// Copies `bytes` bytes of declared, readable USM at `src` to host memory `dst`.
///
/// # Safety
/// `memory` is NULL or the callback's live host memory; `dst` writable for `bytes` bytes.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_host_memory_read(
    memory: *mut cmdgraph_sycl_host_memory<'_>,
    src: *const c_void,
    dst: *mut c_void,
    bytes: usize,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(memory, |m| {
            let (name, offset) = m.locate(src, bytes)?;
            let data = m.mem.read_bytes(&name, offset, bytes as u64).map_err(host_error)?;
            crate::copy_out(&data, dst.cast(), bytes, std::ptr::null_mut())
        })
    }
}

/// Copies `bytes` bytes of host memory `src` into declared, writable USM at `dst`.
///
/// # Safety
/// `memory` is NULL or the callback's live host memory; `src` readable for `bytes` bytes.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_host_memory_write(
    memory: *mut cmdgraph_sycl_host_memory<'_>,
    dst: *mut c_void,
    src: *const c_void,
    bytes: usize,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(memory, |m| {
            let (name, offset) = m.locate(dst, bytes)?;
            let data = crate::slice(src.cast::<u8>(), bytes, "source")?;
            m.mem.write(&name, offset, data).map_err(host_error)
        })
    }
}

/// Sets the message the run fails with when the callback returns an error.
///
/// # Safety
/// `memory` is NULL or the callback's live host memory; `message` NULL or a string.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_host_memory_set_error(
    memory: *mut cmdgraph_sycl_host_memory<'_>,
    message: *const c_char,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(memory, |m| {
            m.failure = Some(name(message, "message")?.to_string());
            Ok(())
        })
    }
}

/// The message of the last call on `memory`; the thread's for NULL.
///
/// # Safety
/// `memory` is NULL or the callback's live host memory.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_host_memory_last_error(
    memory: *mut cmdgraph_sycl_host_memory<'_>,
) -> *const c_char {
    // SAFETY: the caller's contract.
    unsafe { last_error_of(memory) }
}
