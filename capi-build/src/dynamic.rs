//! `cmdgraph_sycl_dynparam` (`dynamic_parameter`) and `cmdgraph_sycl_dcg`
//! (`dynamic_command_group`).

use crate::cg::{cmdgraph_sycl_arg, cmdgraph_sycl_cg, karg};
use crate::context::Shared;
use crate::error::{cmdgraph_sycl_status, Error, LastError};
use crate::graph::cmdgraph_sycl_graph;
use crate::{clear_out, destroy, handles, last_error_of, put, put_handle, with, Handle};
use cmdgraph_sycl::{CommandGroup, DynamicCommandGroup, DynamicParameter};
use std::ffi::c_char;
use std::rc::Rc;

/// A dynamic parameter of a graph: a kernel argument whose value executable graphs take
/// from it at `cmdgraph_sycl_exec_update_nodes`. Opaque.
#[allow(non_camel_case_types)]
pub struct cmdgraph_sycl_dynparam {
    shared: Rc<Shared>,
    pub(crate) param: DynamicParameter,
    error: LastError,
}

impl Handle for cmdgraph_sycl_dynparam {
    const WHAT: &'static str = "dynamic parameter";
    fn last_error(&mut self) -> &mut LastError {
        &mut self.error
    }
}

/// A dynamic command group: alternative command groups of one node, one active. Opaque.
#[allow(non_camel_case_types)]
pub struct cmdgraph_sycl_dcg {
    pub(crate) dcg: DynamicCommandGroup,
    error: LastError,
}

impl Handle for cmdgraph_sycl_dcg {
    const WHAT: &'static str = "dynamic command group";
    fn last_error(&mut self) -> &mut LastError {
        &mut self.error
    }
}

/// `dynamic_parameter(graph, initial)`: a parameter of `graph` holding `*initial` (a
/// scalar, a pointer or work-group memory; not another dynamic parameter).
///
/// # Safety
/// `graph` is NULL or a live graph; `initial` NULL or readable; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_dynparam_create(
    graph: *mut cmdgraph_sycl_graph,
    initial: *const cmdgraph_sycl_arg,
    out: *mut *mut cmdgraph_sycl_dynparam,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(graph, |g| {
            clear_out(out, "dynamic parameter")?;
            let initial = initial.as_ref().ok_or_else(|| Error::invalid("the initial value is NULL"))?;
            let value = karg(&g.shared, initial, "dynamic parameter value")?;
            let param = DynamicParameter::new(&g.graph, value)?;
            put_handle(
                out,
                cmdgraph_sycl_dynparam { shared: g.shared.clone(), param, error: LastError::default() },
                "dynamic parameter",
            )
        })
    }
}

/// `dynamic_parameter::update(value)`: a value of the same kind (the same scalar type, or a
/// pointer for a pointer); the modifiable graph sees it at once, executable graphs after
/// `cmdgraph_sycl_exec_update_nodes`.
///
/// # Safety
/// `param` is NULL or a live dynamic parameter; `value` NULL or readable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_dynparam_update(
    param: *mut cmdgraph_sycl_dynparam,
    value: *const cmdgraph_sycl_arg,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(param, |p| {
            let value = value.as_ref().ok_or_else(|| Error::invalid("the value is NULL"))?;
            let value = karg(&p.shared, value, "dynamic parameter value")?;
            Ok(p.param.update(value)?)
        })
    }
}

/// The message of the last call on `param`; the thread's for NULL.
///
/// # Safety
/// `param` is NULL or a live dynamic parameter.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_dynparam_last_error(param: *mut cmdgraph_sycl_dynparam) -> *const c_char {
    // SAFETY: the caller's contract.
    unsafe { last_error_of(param) }
}

/// Frees a dynamic parameter handle; NULL does nothing. Nodes keep their registrations.
///
/// # Safety
/// `param` is NULL or a live dynamic parameter, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_dynparam_destroy(param: *mut cmdgraph_sycl_dynparam) {
    // SAFETY: the caller's contract.
    unsafe { destroy(param) }
}

/// `dynamic_command_group(graph, {cgf...})`: the `count` command groups (kernels, or host
/// tasks, all of one kind) as alternatives; index 0 is active.
///
/// # Safety
/// `graph` is NULL or a live graph; `cgs` NULL or `count` live command groups; `out` NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_dcg_create(
    graph: *mut cmdgraph_sycl_graph,
    cgs: *const *const cmdgraph_sycl_cg,
    count: usize,
    out: *mut *mut cmdgraph_sycl_dcg,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(graph, |g| {
            clear_out(out, "dynamic command group")?;
            let cgs: Vec<CommandGroup> =
                handles(cgs, count, "command group")?.into_iter().map(|cg| CommandGroup::new(cg.function())).collect();
            let dcg = DynamicCommandGroup::new(&g.graph, cgs)?;
            put_handle(out, cmdgraph_sycl_dcg { dcg, error: LastError::default() }, "dynamic command group")
        })
    }
}

/// `dynamic_command_group::set_active_index(index)`.
///
/// # Safety
/// `dcg` is NULL or a live dynamic command group.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_dcg_set_active(
    dcg: *mut cmdgraph_sycl_dcg,
    index: usize,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe { with(dcg, |d| Ok(d.dcg.set_active_index(index)?)) }
}

/// `dynamic_command_group::get_active_index()` in `*index`.
///
/// # Safety
/// `dcg` is NULL or a live dynamic command group; `index` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_dcg_get_active(
    dcg: *mut cmdgraph_sycl_dcg,
    index: *mut usize,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe { with(dcg, |d| put(index, d.dcg.get_active_index(), "index")) }
}

/// The message of the last call on `dcg`; the thread's for NULL.
///
/// # Safety
/// `dcg` is NULL or a live dynamic command group.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_dcg_last_error(dcg: *mut cmdgraph_sycl_dcg) -> *const c_char {
    // SAFETY: the caller's contract.
    unsafe { last_error_of(dcg) }
}

/// Frees a dynamic command group handle; NULL does nothing.
///
/// # Safety
/// `dcg` is NULL or a live dynamic command group, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_dcg_destroy(dcg: *mut cmdgraph_sycl_dcg) {
    // SAFETY: the caller's contract.
    unsafe { destroy(dcg) }
}
