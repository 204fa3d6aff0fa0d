//! `cmdgraph_exec`: an executable graph — run, wait, update, profile.

use crate::bundle::cmdgraph_bundle;
use crate::error::{c_string, cmdgraph_status, Error, LastError, Result};
use crate::executor::{borrow, copy_out};
use crate::{bytes, destroy, last_error_of, name, put, with, Handle};
use cmdgraph_executor::{ExecId, Executor};
use cmdgraph_ir::data::half::f16;
use cmdgraph_ir::graph::ArgValue;
use cmdgraph_ir::types::{LitValue, Literal, ScalarType};
use std::ffi::{c_char, c_void, CString};
use std::sync::{Arc, Mutex};

/// How `cmdgraph_executor_finalize` records the executable. NULL options: all false.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct cmdgraph_finalize_options {
    /// Timestamps around every node of a graph with `properties(enable_profiling)` (they
    /// serialise the commands of a stage); without it a profile has the run's start and end
    /// only, and no nodes.
    pub node_profiling: bool,
}

/// The profile of an executable's last run (`cmdgraph_exec_profile`).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct cmdgraph_profile {
    /// Host time of the submission, in nanoseconds since the executor was created (not
    /// comparable with the device times).
    pub submit_host_ns: u64,
    /// Device time before the run's first command, in nanoseconds.
    pub start_ns: u64,
    /// Device time after its last command.
    pub end_ns: u64,
    /// How many nodes `cmdgraph_exec_profile_node` reports (0 without node profiling).
    pub node_count: usize,
}

/// One node's times in a profile.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cmdgraph_node_profile {
    /// The node's name in the optimized graph (without `%`), valid until the next
    /// `cmdgraph_exec_profile` on the executable or its destruction.
    pub name: *const c_char,
    /// Device time just before the node's commands, in nanoseconds.
    pub start_ns: u64,
    /// Device time after them (and the earlier commands of its stage).
    pub end_ns: u64,
}

/// An executable graph of an executor (`cmdgraph_executor_finalize`). It keeps its executor
/// alive; destroying it waits for its runs. Opaque.
#[allow(non_camel_case_types)]
pub struct cmdgraph_exec {
    ex: Arc<Mutex<Executor>>,
    id: ExecId,
    /// The nodes of the last `cmdgraph_exec_profile`: name, start, end.
    profile: Vec<(CString, u64, u64)>,
    error: LastError,
}

impl Handle for cmdgraph_exec {
    const WHAT: &'static str = "executable";
    fn last_error(&mut self) -> &mut LastError {
        &mut self.error
    }
}

impl cmdgraph_exec {
    pub(crate) fn new(ex: Arc<Mutex<Executor>>, id: ExecId) -> cmdgraph_exec {
        cmdgraph_exec { ex, id, profile: Vec::new(), error: LastError::default() }
    }
}

impl Drop for cmdgraph_exec {
    fn drop(&mut self) {
        // Errors (a run past the deadline) leave the executable to the executor's own drop.
        if let Ok(mut x) = borrow(&self.ex) {
            let _ = x.drop_exec(self.id);
        }
    }
}

/// Runs `f` with the executable's executor and id.
///
/// # Safety
/// `exec` is NULL or a live executable used by no other thread.
pub(crate) unsafe fn on(
    exec: *mut cmdgraph_exec,
    f: impl FnOnce(&mut Executor, ExecId) -> Result<()>,
) -> cmdgraph_status {
    // SAFETY: the caller's contract.
    unsafe { with(exec, |e| f(&mut *borrow(&e.ex)?, e.id)) }
}

/// Frees an executable after its runs finish; NULL does nothing.
///
/// # Safety
/// `exec` is NULL or a live executable, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_exec_destroy(exec: *mut cmdgraph_exec) {
    // SAFETY: the caller's contract.
    unsafe { destroy(exec) }
}

/// The message of the last call on `exec` ("" after a success), valid until the next call on
/// it; with NULL, `cmdgraph_last_error()`.
///
/// # Safety
/// `exec` is NULL or a live executable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_exec_last_error(exec: *mut cmdgraph_exec) -> *const c_char {
    // SAFETY: the caller's contract.
    unsafe { last_error_of(exec) }
}

/// Submits one run. Returns before the run (and its host tasks) finish; a failed host task of
/// an earlier run is reported here or by `cmdgraph_exec_wait`, once.
///
/// # Safety
/// `exec` is NULL or a live executable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_exec_run(exec: *mut cmdgraph_exec) -> cmdgraph_status {
    // SAFETY: the caller's contract.
    unsafe { on(exec, |x, id| Ok(x.run(id)?)) }
}

/// Waits until every submitted run of `exec` has finished (host tasks included).
///
/// # Safety
/// `exec` is NULL or a live executable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_exec_wait(exec: *mut cmdgraph_exec) -> cmdgraph_status {
    // SAFETY: the caller's contract.
    unsafe { on(exec, |x, id| Ok(x.wait(id)?)) }
}

/// Sets dynamic parameter `param` (`"p"` or `"%p"`) to `value`; waits for runs in flight
/// (they keep the old value).
///
/// # Safety
/// `exec` is NULL or a live executable; `param` NULL or a string.
unsafe fn update(
    exec: *mut cmdgraph_exec,
    param: *const c_char,
    value: impl FnOnce() -> Result<ArgValue>,
) -> cmdgraph_status {
    let body = |x: &mut Executor, id: ExecId| {
        // SAFETY: the caller's contract for `param`.
        let p = unsafe { name(param, "parameter name") }?;
        Ok(x.update_param(id, p, value()?)?)
    };
    // SAFETY: the caller's contract.
    unsafe { on(exec, body) }
}

/// A typed scalar parameter value.
pub(crate) fn scalar(value: LitValue, ty: ScalarType) -> Result<ArgValue> {
    Ok(ArgValue::Scalar(Literal { value, ty: Some(ty) }))
}

/// Sets scalar dynamic parameter `param` (`"p"` or `"%p"`) to an `f32` (exactly).
///
/// # Safety
/// `exec` is NULL or a live executable; `param` NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_exec_update_f32(
    exec: *mut cmdgraph_exec,
    param: *const c_char,
    value: f32,
) -> cmdgraph_status {
    // SAFETY: the caller's contract.
    unsafe { update(exec, param, || scalar(LitValue::Float(f64::from(value)), ScalarType::F32)) }
}

/// Sets scalar dynamic parameter `param` (`"p"` or `"%p"`) to an `f16`, given as its IEEE binary16 bits.
///
/// # Safety
/// `exec` is NULL or a live executable; `param` NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_exec_update_f16(
    exec: *mut cmdgraph_exec,
    param: *const c_char,
    value: u16,
) -> cmdgraph_status {
    // SAFETY: the caller's contract.
    unsafe { update(exec, param, || scalar(LitValue::Float(f16::from_bits(value).to_f64()), ScalarType::F16)) }
}

/// Sets scalar dynamic parameter `param` (`"p"` or `"%p"`) to an `i32`.
///
/// # Safety
/// `exec` is NULL or a live executable; `param` NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_exec_update_i32(
    exec: *mut cmdgraph_exec,
    param: *const c_char,
    value: i32,
) -> cmdgraph_status {
    // SAFETY: the caller's contract.
    unsafe { update(exec, param, || scalar(LitValue::Int(i128::from(value)), ScalarType::I32)) }
}

/// Sets scalar dynamic parameter `param` (`"p"` or `"%p"`) to a `u32`.
///
/// # Safety
/// `exec` is NULL or a live executable; `param` NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_exec_update_u32(
    exec: *mut cmdgraph_exec,
    param: *const c_char,
    value: u32,
) -> cmdgraph_status {
    // SAFETY: the caller's contract.
    unsafe { update(exec, param, || scalar(LitValue::Int(i128::from(value)), ScalarType::U32)) }
}

/// Sets scalar dynamic parameter `param` (`"p"` or `"%p"`) to an `i64`.
///
/// # Safety
/// `exec` is NULL or a live executable; `param` NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_exec_update_i64(
    exec: *mut cmdgraph_exec,
    param: *const c_char,
    value: i64,
) -> cmdgraph_status {
    // SAFETY: the caller's contract.
    unsafe { update(exec, param, || scalar(LitValue::Int(i128::from(value)), ScalarType::I64)) }
}

/// Sets scalar dynamic parameter `param` (`"p"` or `"%p"`) to a `u64`.
///
/// # Safety
/// `exec` is NULL or a live executable; `param` NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_exec_update_u64(
    exec: *mut cmdgraph_exec,
    param: *const c_char,
    value: u64,
) -> cmdgraph_status {
    // SAFETY: the caller's contract.
    unsafe { update(exec, param, || scalar(LitValue::Int(i128::from(value)), ScalarType::U64)) }
}

/// Sets scalar dynamic parameter `param` (`"p"` or `"%p"`) to an `f64`.
///
/// # Safety
/// `exec` is NULL or a live executable; `param` NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_exec_update_f64(
    exec: *mut cmdgraph_exec,
    param: *const c_char,
    value: f64,
) -> cmdgraph_status {
    // SAFETY: the caller's contract.
    unsafe { update(exec, param, || scalar(LitValue::Float(value), ScalarType::F64)) }
}

/// Sets scalar dynamic parameter `param` (`"p"` or `"%p"`) to an `i8`.
///
/// # Safety
/// `exec` is NULL or a live executable; `param` NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_exec_update_i8(
    exec: *mut cmdgraph_exec,
    param: *const c_char,
    value: i8,
) -> cmdgraph_status {
    // SAFETY: the caller's contract.
    unsafe { update(exec, param, || scalar(LitValue::Int(i128::from(value)), ScalarType::I8)) }
}

/// Sets scalar dynamic parameter `param` (`"p"` or `"%p"`) to a `u8`.
///
/// # Safety
/// `exec` is NULL or a live executable; `param` NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_exec_update_u8(
    exec: *mut cmdgraph_exec,
    param: *const c_char,
    value: u8,
) -> cmdgraph_status {
    // SAFETY: the caller's contract.
    unsafe { update(exec, param, || scalar(LitValue::Int(i128::from(value)), ScalarType::U8)) }
}

/// Sets scalar dynamic parameter `param` (`"p"` or `"%p"`) to an `i16`.
///
/// # Safety
/// `exec` is NULL or a live executable; `param` NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_exec_update_i16(
    exec: *mut cmdgraph_exec,
    param: *const c_char,
    value: i16,
) -> cmdgraph_status {
    // SAFETY: the caller's contract.
    unsafe { update(exec, param, || scalar(LitValue::Int(i128::from(value)), ScalarType::I16)) }
}

/// Sets scalar dynamic parameter `param` (`"p"` or `"%p"`) to a `u16`.
///
/// # Safety
/// `exec` is NULL or a live executable; `param` NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_exec_update_u16(
    exec: *mut cmdgraph_exec,
    param: *const c_char,
    value: u16,
) -> cmdgraph_status {
    // SAFETY: the caller's contract.
    unsafe { update(exec, param, || scalar(LitValue::Int(i128::from(value)), ScalarType::U16)) }
}

/// Sets scalar dynamic parameter `param` (`"p"` or `"%p"`) to a `bool`.
///
/// # Safety
/// `exec` is NULL or a live executable; `param` NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_exec_update_bool(
    exec: *mut cmdgraph_exec,
    param: *const c_char,
    value: bool,
) -> cmdgraph_status {
    // SAFETY: the caller's contract.
    unsafe { update(exec, param, || scalar(LitValue::Bool(value), ScalarType::Bool)) }
}

/// Sets pointer dynamic parameter `param` to `memory` plus `offset` bytes: user memory
/// (`"x"` or `"@x"`) or a graph allocation of the executable's graph (`"%t"`, its
/// `async_malloc` node).
///
/// # Safety
/// `exec` is NULL or a live executable; `param` and `memory` NULL or strings.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_exec_update_pointer(
    exec: *mut cmdgraph_exec,
    param: *const c_char,
    memory: *const c_char,
    offset: u64,
) -> cmdgraph_status {
    let body = |x: &mut Executor, id: ExecId| {
        // SAFETY: the caller's contract for `param` and `memory`.
        let (p, m) = unsafe { (name(param, "parameter name")?, name(memory, "memory name")?) };
        let pointer = x.pointer_to(id, m, offset)?;
        Ok(x.update_param(id, p, ArgValue::Pointer(pointer))?)
    };
    // SAFETY: the caller's contract.
    unsafe { on(exec, body) }
}

/// Sets raw-bytes dynamic parameter `param` (`sycl_ext_oneapi_raw_kernel_arg`) to the `len`
/// bytes at `data`.
///
/// # Safety
/// `exec` is NULL or a live executable; `param` NULL or a string; `data` NULL or `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_exec_update_bytes(
    exec: *mut cmdgraph_exec,
    param: *const c_char,
    data: *const c_void,
    len: usize,
) -> cmdgraph_status {
    // SAFETY: the caller's contract for `data`; the rest is `update`'s.
    unsafe { update(exec, param, || Ok(ArgValue::Bytes(bytes(data.cast(), len, "data")?.to_vec()))) }
}

/// Makes alternative `index` (0-based) of dynamic command group `dcg` (`"d"` or `"%d"`)
/// the active one.
///
/// # Safety
/// `exec` is NULL or a live executable; `dcg` NULL or a string.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_exec_set_active(
    exec: *mut cmdgraph_exec,
    dcg: *const c_char,
    index: u32,
) -> cmdgraph_status {
    let body = |x: &mut Executor, id: ExecId| {
        // SAFETY: the caller's contract for `dcg`.
        let d = unsafe { name(dcg, "dynamic command group name") }?;
        Ok(x.set_active(id, d, index)?)
    };
    // SAFETY: the caller's contract.
    unsafe { on(exec, body) }
}

/// Whole-graph update: gives `exec` the nodes' arguments of graph `graph` of `source`'s
/// source module, which must be topologically identical to the executable's graph.
///
/// # Safety
/// `exec` is NULL or a live executable; `source` NULL or a live bundle; `graph` NULL or a
/// string.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_exec_update_graph(
    exec: *mut cmdgraph_exec,
    source: *mut cmdgraph_bundle,
    graph: *const c_char,
) -> cmdgraph_status {
    let body = |x: &mut Executor, id: ExecId| {
        // SAFETY: the caller's contract for `source` and `graph`.
        let (b, g) = unsafe { (source.as_ref(), name(graph, "graph name")?) };
        let b =
            b.ok_or_else(|| Error::new(cmdgraph_status::CMDGRAPH_ERROR_NULL_HANDLE, "the source bundle is NULL"))?;
        let module = b.loaded.source()?;
        Ok(x.update_graph(id, module, g)?)
    };
    // SAFETY: the caller's contract.
    unsafe { on(exec, body) }
}

/// Copies graph allocation `node` (`"t"` or `"%t"`, an `async_malloc` node of the
/// executable's graph) as its runs submitted so far left it, to `dst` (`capacity` bytes), as
/// `cmdgraph_executor_read` does (a short or NULL buffer is a size query). Graph memory
/// belongs to the executable: another executable's allocation of the same name is another.
///
/// # Safety
/// `exec` is NULL or a live executable; `node` NULL or a string; `dst` NULL or `capacity`
/// writable bytes; `size` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_exec_read_alloc(
    exec: *mut cmdgraph_exec,
    node: *const c_char,
    dst: *mut c_void,
    capacity: usize,
    size: *mut usize,
) -> cmdgraph_status {
    let body = |x: &mut Executor, id: ExecId| {
        // SAFETY: the caller's contract for `node`.
        let n = unsafe { name(node, "allocation node name") }?;
        let data = x.read_alloc(id, n)?;
        // SAFETY: the caller's contract for `dst` and `size`.
        unsafe { copy_out(n, &data, dst, capacity, size) }
    };
    // SAFETY: the caller's contract.
    unsafe { on(exec, body) }
}

/// The profile of `exec`'s last run (waits for it) in `*out`; its nodes are then read with
/// `cmdgraph_exec_profile_node`. The graph needs `properties(enable_profiling)`
/// (`CMDGRAPH_ERROR_INVALID_ARGUMENT` otherwise, or before any run).
///
/// # Safety
/// `exec` is NULL or a live executable; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_exec_profile(
    exec: *mut cmdgraph_exec,
    out: *mut cmdgraph_profile,
) -> cmdgraph_status {
    let body = |e: &mut cmdgraph_exec| {
        if out.is_null() {
            return Err(Error::invalid("the profile out-pointer is NULL"));
        }
        let p = borrow(&e.ex)?.profile(e.id)?;
        e.profile = p.nodes.iter().map(|n| (c_string(&n.node), n.start_ns, n.end_ns)).collect();
        let summary = cmdgraph_profile {
            submit_host_ns: p.submit_host_ns,
            start_ns: p.start_ns,
            end_ns: p.end_ns,
            node_count: e.profile.len(),
        };
        // SAFETY: not NULL; writable by the caller's contract.
        unsafe { put(out, summary, "profile") }
    };
    // SAFETY: the caller's contract.
    unsafe { with(exec, body) }
}

/// Node `index` (schedule order) of the last `cmdgraph_exec_profile`, in `*out`.
///
/// # Safety
/// `exec` is NULL or a live executable; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_exec_profile_node(
    exec: *mut cmdgraph_exec,
    index: usize,
    out: *mut cmdgraph_node_profile,
) -> cmdgraph_status {
    let body = |e: &mut cmdgraph_exec| {
        let (n, start_ns, end_ns) = e.profile.get(index).ok_or_else(|| {
            Error::invalid(format!("profile node {index}: the last profile has {} nodes", e.profile.len()))
        })?;
        let node = cmdgraph_node_profile { name: n.as_ptr(), start_ns: *start_ns, end_ns: *end_ns };
        // SAFETY: the caller's contract for `out`.
        unsafe { put(out, node, "node profile") }
    };
    // SAFETY: the caller's contract.
    unsafe { with(exec, body) }
}
