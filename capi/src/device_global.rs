//! Device globals from the host: a `device_global`'s instance on a device, read and written
//! within its `host_access` property, as the SYCL API's `copy_{to,from}_device_global` are
//! (row 68). The executor's own methods do not check `host_access`, because runtimes use
//! them to settle memory; the C API is the application's boundary, so it checks here.

use crate::error::{cmdgraph_status, Error, Result};
use crate::executor::{borrow, cmdgraph_executor, copy_out};
use crate::{bytes, name, with};
use ::cmdgraph_executor::Executor;
use cmdgraph_ir::{HostAccess, MemoryKind};
use std::ffi::{c_char, c_void};

/// Checks that the host may `write` (else read) device global `global` on `device` of `ex`'s
/// module: it is a `device_global`, its `host_access` allows it, and `device` is 0 or a
/// device some graph of the module runs on. Returns the name without `@`.
fn allowed<'n>(ex: &Executor, global: &'n str, device: u32, write: bool) -> Result<&'n str> {
    let bare = global.strip_prefix('@').unwrap_or(global);
    let module = ex.module();
    let h = module.memory_by_name(bare).ok_or_else(|| {
        Error::new(cmdgraph_status::CMDGRAPH_ERROR_NOT_FOUND, format!("no device_global @{bare} in the bundle"))
    })?;
    let MemoryKind::DeviceGlobal(dg) = &module.memories[h].kind else {
        return Err(Error::invalid(format!(
            "@{bare} is not a device_global: use cmdgraph_executor_bind or cmdgraph_executor_read"
        )));
    };
    let (spelling, banned) = match dg.host_access.unwrap_or(HostAccess::ReadWrite) {
        HostAccess::ReadWrite => ("read_write", false),
        HostAccess::Read => ("read", write),
        HostAccess::Write => ("write", !write),
        HostAccess::None => ("none", true),
    };
    if banned {
        let verb = if write { "write" } else { "read" };
        return Err(Error::invalid(format!(
            "device_global @{bare} has host_access({spelling}), so the host may not {verb} it (row 68)"
        )));
    }
    if device != 0 && !module.graphs.iter().any(|(_, g)| g.device == device) {
        return Err(Error::invalid(format!("no graph of the bundle runs on device {device}")));
    }
    Ok(bare)
}

/// Copies the instance of device global `global` (`"g"` or `"@g"`) on IR device `device` (0
/// unless the module's graphs name others), after every run submitted so far, to `dst`
/// (`capacity` bytes), as `cmdgraph_executor_read` does (a short or NULL buffer is a size
/// query). Its initial image if nothing wrote it. Refused for `host_access(write)` and
/// `host_access(none)`.
///
/// # Safety
/// `ex` is NULL or a live executor; `global` NULL or a string; `dst` NULL or `capacity`
/// writable bytes; `size` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_executor_read_device_global(
    ex: *mut cmdgraph_executor,
    global: *const c_char,
    device: u32,
    dst: *mut c_void,
    capacity: usize,
    size: *mut usize,
) -> cmdgraph_status {
    let body = |e: &mut cmdgraph_executor| {
        // SAFETY: the caller's contract for `global`.
        let g = unsafe { name(global, "device_global name") }?;
        let mut x = borrow(&e.inner)?;
        let bare = allowed(&x, g, device, false)?;
        let data = x.read_device_global(bare, device)?;
        // SAFETY: the caller's contract for `dst` and `size`.
        unsafe { copy_out(g, &data, dst, capacity, size) }
    };
    // SAFETY: the caller's contract for `ex`.
    unsafe { with(ex, body) }
}

/// Sets the instance of device global `global` on IR device `device` to the `len` bytes at
/// `data` (exactly its size), after the runs submitted so far; runs submitted later see it.
/// Refused for `host_access(read)` and `host_access(none)`.
///
/// # Safety
/// `ex` is NULL or a live executor; `global` NULL or a string; `data` NULL or `len` readable
/// bytes.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_executor_write_device_global(
    ex: *mut cmdgraph_executor,
    global: *const c_char,
    device: u32,
    data: *const c_void,
    len: usize,
) -> cmdgraph_status {
    let body = |e: &mut cmdgraph_executor| {
        // SAFETY: the caller's contract for `global` and `data`.
        let (g, d) = unsafe { (name(global, "device_global name")?, bytes(data.cast(), len, "data")?) };
        let mut x = borrow(&e.inner)?;
        let bare = allowed(&x, g, device, true)?;
        Ok(x.write_device_global(bare, device, d)?)
    };
    // SAFETY: the caller's contract for `ex`.
    unsafe { with(ex, body) }
}
