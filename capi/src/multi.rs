//! `cmdgraph_multi_executor`: a bundle on several Vulkan devices, one per device its
//! multi-device graphs name (docs/multi-device.md). Executables are numbered, not handles:
//! they live as long as the multi-executor. Profiles give each stage graph's times on its
//! own device's clock.

use crate::bundle::cmdgraph_bundle;
use crate::error::{c_string, cmdgraph_status, Error, LastError, Result};
use crate::exec::scalar;
use crate::executor::{context_options, copy_out};
use crate::host::{callback, cmdgraph_host_fn};
use crate::{bytes, destroy, last_error_of, name, put, with, Handle};
use ::cmdgraph_executor::{MultiExecId, MultiExecutor};
use cmdgraph_ir::graph::ArgValue;
use cmdgraph_ir::types::{LitValue, Literal, ScalarType};
use std::ffi::{c_char, c_void, CString};

/// A loaded bundle on several Vulkan devices (device N of the module on entry N of the
/// options given to `cmdgraph_multi_executor_create`), its memory, executables and host-task
/// callbacks. Opaque; not for use from two threads at once.
#[allow(non_camel_case_types)]
pub struct cmdgraph_multi_executor {
    inner: MultiExecutor,
    execs: Vec<MultiExecId>,
    messages: Vec<CString>,
    /// The stage graphs of the last profile: stage, device, name, start, end.
    profile: Vec<(u32, u32, CString, u64, u64)>,
    error: LastError,
}

impl Handle for cmdgraph_multi_executor {
    const WHAT: &'static str = "multi-device executor";
    fn last_error(&mut self) -> &mut LastError {
        &mut self.error
    }
}

impl cmdgraph_multi_executor {
    fn exec(&self, exec: u32) -> Result<MultiExecId> {
        self.execs.get(exec as usize).copied().ok_or_else(|| {
            Error::invalid(format!("no executable {exec}: this multi-device executor made {}", self.execs.len()))
        })
    }
}

/// Creates a multi-device executor for `bundle`: one Vulkan device per entry of `devices`
/// (`count` entries, each as for `cmdgraph_executor_create`; two entries naming one physical
/// device make two logical devices). The bundle is copied. On success `*out` is a new
/// executor to free with `cmdgraph_multi_executor_destroy`; on error NULL, and the message is
/// the bundle's and the thread's.
///
/// # Safety
/// `bundle` is NULL or a live bundle; `devices` NULL or `count` readable options; `out` NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_multi_executor_create(
    bundle: *mut cmdgraph_bundle,
    devices: *const crate::executor::cmdgraph_executor_options,
    count: usize,
    out: *mut *mut cmdgraph_multi_executor,
) -> cmdgraph_status {
    if !out.is_null() {
        // SAFETY: not NULL; the caller's contract makes it writable.
        unsafe { out.write(std::ptr::null_mut()) };
    }
    let body = |b: &mut cmdgraph_bundle| {
        if count == 0 || devices.is_null() {
            return Err(Error::invalid("a multi-device executor needs at least one device's options"));
        }
        if out.is_null() {
            return Err(Error::invalid("the executor out-pointer is NULL"));
        }
        // SAFETY: not NULL, and the caller's contract gives `count` readable options.
        let list = unsafe { std::slice::from_raw_parts(devices, count) };
        let opts = list.iter().map(context_options).collect::<Result<Vec<_>>>()?;
        let inner = MultiExecutor::from_loaded(b.loaded.clone(), &opts)?;
        let handle = cmdgraph_multi_executor {
            inner,
            execs: Vec::new(),
            messages: Vec::new(),
            profile: Vec::new(),
            error: LastError::default(),
        };
        // SAFETY: checked not NULL above; writable by the caller's contract.
        unsafe { put(out, Box::into_raw(Box::new(handle)), "executor") }
    };
    // SAFETY: the caller's contract for `bundle`.
    unsafe { with(bundle, body) }
}

/// Frees the executor after its runs finish (bounded by each device's timeout); NULL does
/// nothing.
///
/// # Safety
/// `mx` is NULL or a live multi-device executor, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_multi_executor_destroy(mx: *mut cmdgraph_multi_executor) {
    // SAFETY: the caller's contract.
    unsafe { destroy(mx) }
}

/// The message of the last call on `mx` ("" after a success); with NULL, the thread's.
///
/// # Safety
/// `mx` is NULL or a live multi-device executor.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_multi_executor_last_error(mx: *mut cmdgraph_multi_executor) -> *const c_char {
    // SAFETY: the caller's contract.
    unsafe { last_error_of(mx) }
}

/// Sets user memory `memory` on the device it lives on (every device for replicated memory)
/// to the `len` bytes at `data`, its exact size. Waits for runs in flight.
///
/// # Safety
/// `mx` is NULL or a live multi-device executor; `memory` NULL or a string; `data` NULL or
/// `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_multi_executor_bind(
    mx: *mut cmdgraph_multi_executor,
    memory: *const c_char,
    data: *const c_void,
    len: usize,
) -> cmdgraph_status {
    let body = |m: &mut cmdgraph_multi_executor| {
        // SAFETY: the caller's contract for `memory` and `data`.
        let (n, d) = unsafe { (name(memory, "memory name")?, bytes(data.cast(), len, "data")?) };
        Ok(m.inner.bind(n, d)?)
    };
    // SAFETY: the caller's contract for `mx`.
    unsafe { with(mx, body) }
}

/// Copies user memory `memory` as the device it lives on holds it, after the runs submitted
/// so far, to `dst` (`capacity` bytes), as `cmdgraph_executor_read` does (`*size` gets its
/// size; a short or NULL buffer is a size query, `CMDGRAPH_ERROR_BUFFER_TOO_SMALL`).
///
/// # Safety
/// `mx` is NULL or a live multi-device executor; `memory` NULL or a string; `dst` NULL or
/// `capacity` writable bytes; `size` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_multi_executor_read(
    mx: *mut cmdgraph_multi_executor,
    memory: *const c_char,
    dst: *mut c_void,
    capacity: usize,
    size: *mut usize,
) -> cmdgraph_status {
    let body = |m: &mut cmdgraph_multi_executor| {
        // SAFETY: the caller's contract for `memory`.
        let n = unsafe { name(memory, "memory name") }?;
        let data = m.inner.read(n)?;
        // SAFETY: the caller's contract for `dst` and `size`.
        unsafe { copy_out(n, &data, dst, capacity, size) }
    };
    // SAFETY: the caller's contract for `mx`.
    unsafe { with(mx, body) }
}

/// Registers `callback` for `host_task "name"` nodes on every device (a host task runs
/// beside the device whose memory it touches), as `cmdgraph_executor_register_callback`.
///
/// # Safety
/// `mx` is NULL or a live multi-device executor; `name` NULL or a string; `callback` NULL or
/// a function following the contract of `cmdgraph_host_fn`; `user` valid until `mx` is
/// destroyed.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_multi_executor_register_callback(
    mx: *mut cmdgraph_multi_executor,
    name: *const c_char,
    callback: cmdgraph_host_fn,
    user: *mut c_void,
) -> cmdgraph_status {
    let body = |m: &mut cmdgraph_multi_executor| {
        // SAFETY: the caller's contract for `name`.
        let n = unsafe { crate::name(name, "callback name") }?;
        let f = callback.ok_or_else(|| Error::invalid("the callback function is NULL"))?;
        m.inner.register_callback(n, callback::wrap(f, user));
        Ok(())
    };
    // SAFETY: the caller's contract for `mx`.
    unsafe { with(mx, body) }
}

/// Makes graph `graph` (`"g"` or `"@g"`, compiled with `split-devices`) runnable on the
/// devices; `*exec` gets its number for the calls below. A node on a device this executor
/// does not have is an error naming it.
///
/// # Safety
/// `mx` is NULL or a live multi-device executor; `graph` NULL or a string; `exec` NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_multi_executor_finalize(
    mx: *mut cmdgraph_multi_executor,
    graph: *const c_char,
    exec: *mut u32,
) -> cmdgraph_status {
    let body = |m: &mut cmdgraph_multi_executor| {
        // SAFETY: the caller's contract for `graph`.
        let g = unsafe { name(graph, "graph name") }?;
        if exec.is_null() {
            return Err(Error::invalid("the executable out-pointer is NULL"));
        }
        let number = u32::try_from(m.execs.len()).map_err(|_| Error::invalid("too many executables"))?;
        let id = m.inner.finalize(g)?;
        m.execs.push(id);
        // SAFETY: checked not NULL; writable by the caller's contract.
        unsafe { put(exec, number, "executable") }
    };
    // SAFETY: the caller's contract for `mx`.
    unsafe { with(mx, body) }
}

/// Runs executable `exec` once across the devices: every stage graph is submitted, ordered
/// by semaphores across devices, and the call returns (stage by stage, returning when done,
/// where the devices cannot import host memory).
///
/// # Safety
/// `mx` is NULL or a live multi-device executor.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_multi_executor_run(mx: *mut cmdgraph_multi_executor, exec: u32) -> cmdgraph_status {
    // SAFETY: the caller's contract.
    unsafe { with(mx, |m| Ok(m.inner.run(m.exec(exec)?)?)) }
}

/// Waits until the runs of `exec` are done on every device; the first error of any. A stage
/// graph past its device's timeout is `CMDGRAPH_ERROR_TIMEOUT` naming the device; waiting
/// again waits for the rest.
///
/// # Safety
/// `mx` is NULL or a live multi-device executor.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_multi_executor_wait(mx: *mut cmdgraph_multi_executor, exec: u32) -> cmdgraph_status {
    // SAFETY: the caller's contract.
    unsafe { with(mx, |m| Ok(m.inner.wait(m.exec(exec)?)?)) }
}

/// Sets dynamic parameter `param` of `exec` on every device that uses it.
///
/// # Safety
/// `mx` is NULL or a live multi-device executor; `param` NULL or a string.
unsafe fn update(
    mx: *mut cmdgraph_multi_executor,
    exec: u32,
    param: *const c_char,
    value: impl FnOnce(&MultiExecutor) -> Result<ArgValue>,
) -> cmdgraph_status {
    let body = |m: &mut cmdgraph_multi_executor| {
        // SAFETY: the caller's contract for `param`.
        let p = unsafe { name(param, "parameter name") }?;
        let id = m.exec(exec)?;
        let v = value(&m.inner)?;
        Ok(m.inner.update_param(id, p, v)?)
    };
    // SAFETY: the caller's contract for `mx`.
    unsafe { with(mx, body) }
}

/// Sets scalar dynamic parameter `param` (`"p"` or `"%p"`) of `exec` to an `f32`, on every
/// device that uses it.
///
/// # Safety
/// `mx` is NULL or a live multi-device executor; `param` NULL or a string.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_multi_executor_update_f32(
    mx: *mut cmdgraph_multi_executor,
    exec: u32,
    param: *const c_char,
    value: f32,
) -> cmdgraph_status {
    // SAFETY: the caller's contract.
    unsafe { update(mx, exec, param, |_| scalar(LitValue::Float(f64::from(value)), ScalarType::F32)) }
}

/// Sets integer dynamic parameter `param` to `value` in its own type (found in the module),
/// checked to fit.
///
/// # Safety
/// `mx` is NULL or a live multi-device executor; `param` NULL or a string.
unsafe fn update_integer(
    mx: *mut cmdgraph_multi_executor,
    exec: u32,
    param: *const c_char,
    value: i128,
) -> cmdgraph_status {
    // SAFETY: the caller's contract for `param`; read here only to find the type.
    let p = unsafe { name(param, "parameter name") }.ok().map(|p| p.trim_start_matches('%').to_string());
    let typed = move |mx: &MultiExecutor| {
        let p = p.ok_or_else(|| Error::invalid("the parameter name is NULL or not UTF-8"))?;
        let current = mx
            .module()
            .graphs
            .iter()
            .find_map(|(_, g)| g.dyn_params.iter().find(|(_, d)| d.name == p).map(|(_, d)| d.value.clone()))
            .ok_or_else(|| Error::invalid(format!("no dynamic parameter %{p}")))?;
        let ty = match current {
            ArgValue::Scalar(Literal { ty: Some(t), .. }) if t.is_integer() => t,
            _ => return Err(Error::invalid(format!("%{p} is not an integer parameter; use the update of its type"))),
        };
        if !Literal::fits(LitValue::Int(value), ty) {
            return Err(Error::invalid(format!("{value} does not fit %{p}'s type {ty}")));
        }
        scalar(LitValue::Int(value), ty)
    };
    // SAFETY: the caller's contract.
    unsafe { update(mx, exec, param, typed) }
}

/// Sets integer dynamic parameter `param` (`i8` to `i64`, `u8` to `u64`) of `exec` to
/// `value`, checked to fit the parameter's type, on every device that uses it.
///
/// # Safety
/// `mx` is NULL or a live multi-device executor; `param` NULL or a string.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_multi_executor_update_int(
    mx: *mut cmdgraph_multi_executor,
    exec: u32,
    param: *const c_char,
    value: i64,
) -> cmdgraph_status {
    // SAFETY: the caller's contract.
    unsafe { update_integer(mx, exec, param, i128::from(value)) }
}

/// `cmdgraph_multi_executor_update_int` for values past `INT64_MAX` of a `u64` parameter.
///
/// # Safety
/// `mx` is NULL or a live multi-device executor; `param` NULL or a string.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_multi_executor_update_uint(
    mx: *mut cmdgraph_multi_executor,
    exec: u32,
    param: *const c_char,
    value: u64,
) -> cmdgraph_status {
    // SAFETY: the caller's contract.
    unsafe { update_integer(mx, exec, param, i128::from(value)) }
}

/// Makes alternative `index` of dynamic command group `dcg` of `exec` active on every device
/// that holds it.
///
/// # Safety
/// `mx` is NULL or a live multi-device executor; `dcg` NULL or a string.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_multi_executor_set_active(
    mx: *mut cmdgraph_multi_executor,
    exec: u32,
    dcg: *const c_char,
    index: u32,
) -> cmdgraph_status {
    let body = |m: &mut cmdgraph_multi_executor| {
        // SAFETY: the caller's contract for `dcg`.
        let d = unsafe { name(dcg, "dynamic command group name") }?;
        Ok(m.inner.set_active(m.exec(exec)?, d, index)?)
    };
    // SAFETY: the caller's contract for `mx`.
    unsafe { with(mx, body) }
}

/// Takes the validation messages of every device since the last call ("device N: ..."):
/// `*count` gets how many, `cmdgraph_multi_executor_message` returns each.
///
/// # Safety
/// `mx` is NULL or a live multi-device executor; `count` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_multi_executor_take_messages(
    mx: *mut cmdgraph_multi_executor,
    count: *mut usize,
) -> cmdgraph_status {
    let body = |m: &mut cmdgraph_multi_executor| {
        let taken = cmdgraph_ir::runtime::Runtime::take_diagnostics(&mut m.inner);
        m.messages = taken.iter().map(|s| c_string(s)).collect();
        // SAFETY: the caller's contract for `count`.
        unsafe { put(count, m.messages.len(), "count") }
    };
    // SAFETY: the caller's contract for `mx`.
    unsafe { with(mx, body) }
}

/// Message `index` of the last `cmdgraph_multi_executor_take_messages`, or NULL past the end
/// (or for NULL `mx`).
///
/// # Safety
/// `mx` is NULL or a live multi-device executor.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_multi_executor_message(
    mx: *mut cmdgraph_multi_executor,
    index: usize,
) -> *const c_char {
    // SAFETY: the caller's contract.
    match unsafe { mx.as_ref() } {
        Some(m) => m.messages.get(index).map_or(std::ptr::null(), |s| s.as_ptr()),
        None => std::ptr::null(),
    }
}

/// Sets pointer dynamic parameter `param` of `exec` to user memory `memory` (`"x"` or
/// `"@x"`) plus `offset` bytes, on every device that uses it. The memory must live where
/// each node using the parameter runs (its device, or replicated memory it only reads);
/// otherwise the update is refused naming the node, and nothing changes.
///
/// # Safety
/// `mx` is NULL or a live multi-device executor; `param` and `memory` NULL or strings.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_multi_executor_update_pointer(
    mx: *mut cmdgraph_multi_executor,
    exec: u32,
    param: *const c_char,
    memory: *const c_char,
    offset: u64,
) -> cmdgraph_status {
    // SAFETY: the caller's contract for `memory`; read here only to find the object.
    let target = unsafe { name(memory, "memory name") }.map(|m| m.trim_start_matches('@').to_string());
    let pointer = move |mx: &MultiExecutor| {
        let target = target?;
        let h = mx
            .module()
            .memory_by_name(&target)
            .ok_or_else(|| Error::from(::cmdgraph_executor::ExecError::Unknown(format!("memory @{target}"))))?;
        let base = cmdgraph_ir::graph::MemRef::Memory(h);
        Ok(ArgValue::Pointer(cmdgraph_ir::graph::Pointer { base, offset }))
    };
    // SAFETY: the caller's contract.
    unsafe { update(mx, exec, param, pointer) }
}

/// Gives kernel node `node` of `exec` the launch `range(global...)` (`dims` values at
/// `global`), on the device it runs on, as `cmdgraph_exec_update_range`.
///
/// # Safety
/// `mx` is NULL or a live multi-device executor; `node` NULL or a string; `global` NULL or
/// `dims` readable values.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_multi_executor_update_range(
    mx: *mut cmdgraph_multi_executor,
    exec: u32,
    node: *const c_char,
    global: *const u64,
    dims: u32,
) -> cmdgraph_status {
    let body = |m: &mut cmdgraph_multi_executor| {
        // SAFETY: the caller's contract for `node` and `global`.
        let (n, g) = unsafe { (name(node, "node name")?, crate::update::sizes(global, dims, "global")?) };
        let id = m.exec(exec)?;
        Ok(m.inner.update_launch(id, n, cmdgraph_ir::graph::Launch::Range(g.to_vec()))?)
    };
    // SAFETY: the caller's contract for `mx`.
    unsafe { with(mx, body) }
}

/// One stage graph's part of a multi-device run's profile (`cmdgraph_multi_executor_profile`).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cmdgraph_stage_profile {
    /// The stage (`@g.sS.dD`'s S).
    pub stage: u32,
    /// The device that ran it (its index in the options given at creation).
    pub device: u32,
    /// The stage graph's name (without `@`), valid until the next
    /// `cmdgraph_multi_executor_profile` or the executor's destruction.
    pub graph: *const c_char,
    /// That device's time before its first command, in nanoseconds (each device has its own
    /// clock: compare only within one device).
    pub start_ns: u64,
    /// That device's time after its last command.
    pub end_ns: u64,
}

/// The profile of `exec`'s last run (waits for it): `*count` gets how many stage graphs it
/// ran, and `cmdgraph_multi_executor_stage_profile` reads each. The graph needs
/// `properties(enable_profiling)` (`CMDGRAPH_ERROR_INVALID_ARGUMENT` otherwise, naming the
/// device and stage graph).
///
/// # Safety
/// `mx` is NULL or a live multi-device executor; `count` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_multi_executor_profile(
    mx: *mut cmdgraph_multi_executor,
    exec: u32,
    count: *mut usize,
) -> cmdgraph_status {
    let body = |m: &mut cmdgraph_multi_executor| {
        let stages = m.inner.profile(m.exec(exec)?)?;
        m.profile = stages
            .iter()
            .map(|s| (s.stage, s.device as u32, c_string(&s.graph), s.profile.start_ns, s.profile.end_ns))
            .collect();
        // SAFETY: the caller's contract for `count`.
        unsafe { put(count, m.profile.len(), "count") }
    };
    // SAFETY: the caller's contract for `mx`.
    unsafe { with(mx, body) }
}

/// Stage graph `index` (stage order) of the last `cmdgraph_multi_executor_profile`, in `*out`.
///
/// # Safety
/// `mx` is NULL or a live multi-device executor; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_multi_executor_stage_profile(
    mx: *mut cmdgraph_multi_executor,
    index: usize,
    out: *mut cmdgraph_stage_profile,
) -> cmdgraph_status {
    let body = |m: &mut cmdgraph_multi_executor| {
        let (stage, device, graph, start_ns, end_ns) = m.profile.get(index).ok_or_else(|| {
            Error::invalid(format!("stage profile {index}: the last profile has {} stage graphs", m.profile.len()))
        })?;
        let p = cmdgraph_stage_profile {
            stage: *stage,
            device: *device,
            graph: graph.as_ptr(),
            start_ns: *start_ns,
            end_ns: *end_ns,
        };
        // SAFETY: the caller's contract for `out`.
        unsafe { put(out, p, "stage profile") }
    };
    // SAFETY: the caller's contract for `mx`.
    unsafe { with(mx, body) }
}
