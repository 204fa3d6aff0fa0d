//! Updates of one node's launch and individual-node updates of an executable (SYCL's
//! `node::update_range`/`update_nd_range` and `exec.update(nodes)`). Dynamic-parameter
//! values, active alternatives and whole-graph updates are in `exec`.

use crate::bundle::cmdgraph_bundle;
use crate::error::{cmdgraph_status, Error, Result};
use crate::exec::{cmdgraph_exec, on};
use crate::{name, names};
use cmdgraph_executor::{ExecId, Executor};
use cmdgraph_ir::graph::Launch;
use std::ffi::c_char;

/// `dims` (1 to 3) values at `sizes`.
///
/// # Safety
/// `sizes` is NULL or points to `dims` readable `uint64_t`s.
pub(crate) unsafe fn sizes<'a>(sizes: *const u64, dims: u32, what: &str) -> Result<&'a [u64]> {
    if !(1..=3).contains(&dims) {
        return Err(Error::invalid(format!("a launch has 1 to 3 dimensions, not {dims}")));
    }
    if sizes.is_null() {
        return Err(Error::invalid(format!("the {what} sizes are NULL")));
    }
    // SAFETY: not NULL, and the caller's contract gives `dims` readable values.
    Ok(unsafe { std::slice::from_raw_parts(sizes, dims as usize) })
}

/// Applies `launch()` to kernel node `node` of `exec`.
///
/// # Safety
/// `exec` is NULL or a live executable; `node` NULL or a string.
unsafe fn update_launch(
    exec: *mut cmdgraph_exec,
    node: *const c_char,
    launch: impl FnOnce() -> Result<Launch>,
) -> cmdgraph_status {
    let body = |x: &mut Executor, id: ExecId| {
        // SAFETY: the caller's contract for `node`.
        let n = unsafe { name(node, "node name") }?;
        Ok(x.update_launch(id, n, launch()?)?)
    };
    // SAFETY: the caller's contract.
    unsafe { on(exec, body) }
}

/// Gives kernel node `node` (`"k"` or `"%k"`) of `exec` the launch `range(global...)`:
/// `dims` values at `global`, as many dimensions as its launch has. Runs in flight keep the
/// old range. The node must be a kernel node the optimizer left as it was, and the graph
/// `properties(updatable)`.
///
/// # Safety
/// `exec` is NULL or a live executable; `node` NULL or a string; `global` NULL or `dims`
/// readable values.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_exec_update_range(
    exec: *mut cmdgraph_exec,
    node: *const c_char,
    dims: u32,
    global: *const u64,
) -> cmdgraph_status {
    // SAFETY: the caller's contract for `global`; the rest is `update_launch`'s.
    unsafe { update_launch(exec, node, || Ok(Launch::Range(sizes(global, dims, "global")?.to_vec()))) }
}

/// Gives kernel node `node` of `exec` the launch `nd_range(global(...), local(...))`, with
/// `dims` values at each of `global` and `local`; every global size must be a multiple of
/// its local size. A different work-group size needs a compiled variant of the kernel with
/// that size in the bundle (some launch of the kernel uses it), otherwise the call fails and
/// changes nothing.
///
/// # Safety
/// `exec` is NULL or a live executable; `node` NULL or a string; `global` and `local` NULL
/// or `dims` readable values each.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_exec_update_nd_range(
    exec: *mut cmdgraph_exec,
    node: *const c_char,
    dims: u32,
    global: *const u64,
    local: *const u64,
) -> cmdgraph_status {
    let launch = || {
        // SAFETY: the caller's contract for `global` and `local`.
        let (g, l) = unsafe { (sizes(global, dims, "global")?, sizes(local, dims, "local")?) };
        if let Some(d) = (0..g.len()).find(|&d| l[d] == 0 || g[d] % l[d] != 0) {
            return Err(Error::invalid(format!(
                "dimension {d}: the global size {} is not a multiple of the local size {}",
                g[d], l[d]
            )));
        }
        Ok(Launch::NdRange { global: g.to_vec(), local: l.to_vec(), offset: Vec::new() })
    };
    // SAFETY: the caller's contract.
    unsafe { update_launch(exec, node, launch) }
}

/// Individual-node update (`exec.update(nodes)`): each of the `count` nodes named at `nodes`
/// takes its command and dynamic-parameter values from graph `graph` of `source`'s source
/// module, the modifiable graph as the application has it now (compiled into a bundle).
/// Nodes not named keep what they ran. Every node is checked before anything changes.
///
/// # Safety
/// `exec` is NULL or a live executable; `source` NULL or a live bundle; `graph` NULL or a
/// string; `nodes` NULL or `count` readable pointers, each NULL or a string.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_exec_update_nodes(
    exec: *mut cmdgraph_exec,
    source: *mut cmdgraph_bundle,
    graph: *const c_char,
    nodes: *const *const c_char,
    count: usize,
) -> cmdgraph_status {
    let body = |x: &mut Executor, id: ExecId| {
        // SAFETY: the caller's contract for `source` and `graph`.
        let (b, g) = unsafe { (source.as_ref(), name(graph, "graph name")?) };
        let b =
            b.ok_or_else(|| Error::new(cmdgraph_status::CMDGRAPH_ERROR_NULL_HANDLE, "the source bundle is NULL"))?;
        // SAFETY: the caller's contract for `nodes`.
        let names = unsafe { names(nodes, count, "node name") }?;
        Ok(x.update_nodes(id, b.loaded.source()?, g, &names)?)
    };
    // SAFETY: the caller's contract.
    unsafe { on(exec, body) }
}
