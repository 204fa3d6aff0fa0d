//! `cmdgraph_sycl_exec` (`command_graph<graph_state::executable>`): update, and the two
//! offline paths: the module's IR text (for `cmdgraph compile`) and its bundle compiled in
//! process, the same bytes `cmdgraph compile` writes for that text.

use crate::context::Shared;
use crate::error::{cmdgraph_sycl_status, Error, LastError, Result};
use crate::graph::{cmdgraph_sycl_graph, cmdgraph_sycl_node};
use crate::{arg, copy_out, destroy, handles, last_error_of, name, with, Handle};
use cmdgraph_sycl::ExecutableGraph;
use std::ffi::c_char;
use std::rc::Rc;

/// An executable graph. Opaque.
#[allow(non_camel_case_types)]
pub struct cmdgraph_sycl_exec {
    _shared: Rc<Shared>,
    pub(crate) exec: ExecutableGraph,
    error: LastError,
}

impl Handle for cmdgraph_sycl_exec {
    const WHAT: &'static str = "executable graph";
    fn last_error(&mut self) -> &mut LastError {
        &mut self.error
    }
}

/// An executable graph handle.
pub(crate) fn exec_handle(shared: Rc<Shared>, exec: ExecutableGraph) -> cmdgraph_sycl_exec {
    cmdgraph_sycl_exec { _shared: shared, exec, error: LastError::default() }
}

/// The IR text of the executable graph's module: what `cmdgraph compile` takes.
pub(crate) fn ir_text(exec: &ExecutableGraph) -> String {
    cmdgraph_ir::text::print(&exec.module())
}

/// The bundle `cmdgraph compile` writes for `text` (the default pipeline, -O2): the text is
/// parsed back first, so the bytes are the CLI's.
pub(crate) fn compile_text(text: &str) -> Result<Vec<u8>> {
    use cmdgraph_codegen::bundle::{compile_module_configured, Llvm, PipelineOptions};
    let module = cmdgraph_ir::text::parse(text).map_err(|d| {
        Error::compile(format!(
            "the exported module does not parse:\n{}",
            cmdgraph_ir::diag::render_all(&d, "<graph>", text)
        ))
    })?;
    let passes = cmdgraph_passes::default_pipeline();
    let (bundle, _) = compile_module_configured(
        &module,
        &passes,
        &PipelineOptions::default(),
        &cmdgraph_codegen::Options::default(),
        &Llvm,
        &mut |_| {},
    )
    .map_err(|e| Error::compile(format!("compile: {e}")))?;
    bundle.to_bytes().map_err(|e| Error::compile(format!("compile: {e}")))
}

/// `executable.update(nodes)`: the `count` nodes take their commands and arguments from the
/// modifiable graph as it is now (dynamic parameters, active alternatives, ranges).
///
/// # Safety
/// `exec` is NULL or a live executable graph; `nodes` NULL or `count` live nodes.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_exec_update_nodes(
    exec: *mut cmdgraph_sycl_exec,
    nodes: *const *const cmdgraph_sycl_node,
    count: usize,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(exec, |e| {
            let nodes: Vec<_> = handles(nodes, count, "node")?.into_iter().map(|n| &n.node).collect();
            Ok(e.exec.update_nodes(&nodes)?)
        })
    }
}

/// `executable.update(graph)`: whole-graph update from a topologically identical graph.
///
/// # Safety
/// `exec` is NULL or a live executable graph; `graph` NULL or a live graph.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_exec_update_graph(
    exec: *mut cmdgraph_sycl_exec,
    graph: *const cmdgraph_sycl_graph,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe { with(exec, |e| Ok(e.exec.update_graph(&arg(graph, "graph")?.graph)?)) }
}

/// The module's IR text (`cmdgraph compile` input) with the read protocol: `*size` gets its
/// byte length (no NUL); `dst` NULL with `capacity` 0 asks for the size (a success); a short
/// `capacity` is `CMDGRAPH_SYCL_ERROR_BUFFER_TOO_SMALL` with nothing copied.
///
/// # Safety
/// `exec` is NULL or a live executable graph; `dst` NULL or writable for `capacity` bytes;
/// `size` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_exec_ir(
    exec: *mut cmdgraph_sycl_exec,
    dst: *mut c_char,
    capacity: usize,
    size: *mut usize,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe { with(exec, |e| copy_out(ir_text(&e.exec).as_bytes(), dst.cast(), capacity, size)) }
}

/// Writes the module's IR text to `path` (replacing it).
///
/// # Safety
/// `exec` is NULL or a live executable graph; `path` NULL or a string.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_exec_export_ir(
    exec: *mut cmdgraph_sycl_exec,
    path: *const c_char,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(exec, |e| {
            let path = name(path, "path")?;
            write_file(path, ir_text(&e.exec).as_bytes())
        })
    }
}

/// Writes `data` to `path` through a temporary file renamed over it, so a reader never sees
/// half a bundle.
pub(crate) fn write_atomically(path: &std::path::Path, data: &[u8]) -> Result<()> {
    let io = |e: std::io::Error| {
        Error::new(cmdgraph_sycl_status::CMDGRAPH_SYCL_ERROR_IO, format!("cannot write `{}`: {e}", path.display()))
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let tmp = path.with_extension(format!("cgb.tmp{}", std::process::id()));
    std::fs::write(&tmp, data).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io(e)
    })
}

fn write_file(path: &str, data: &[u8]) -> Result<()> {
    std::fs::write(path, data)
        .map_err(|e| Error::new(cmdgraph_sycl_status::CMDGRAPH_SYCL_ERROR_IO, format!("cannot write `{path}`: {e}")))
}

/// Compiles the module in process into bundle bytes, the bytes `cmdgraph compile` writes for
/// `cmdgraph_sycl_exec_ir`'s text, with the read protocol of `cmdgraph_sycl_exec_ir` (ask for
/// the size first: each call compiles). A module that does not compile is
/// `CMDGRAPH_SYCL_ERROR_COMPILE`.
///
/// # Safety
/// As `cmdgraph_sycl_exec_ir`.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_exec_compile(
    exec: *mut cmdgraph_sycl_exec,
    dst: *mut u8,
    capacity: usize,
    size: *mut usize,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe { with(exec, |e| copy_out(&compile_text(&ir_text(&e.exec))?, dst, capacity, size)) }
}

/// Compiles the module in process and writes the bundle to `path`: a file `libcmdgraph`'s
/// `cmdgraph_bundle_open` loads.
///
/// # Safety
/// `exec` is NULL or a live executable graph; `path` NULL or a string.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_exec_compile_to_file(
    exec: *mut cmdgraph_sycl_exec,
    path: *const c_char,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(exec, |e| {
            let path = name(path, "path")?;
            write_file(path, &compile_text(&ir_text(&e.exec))?)
        })
    }
}

/// Which runtime ran the graph (`"reference interpreter"` or the Vulkan device's
/// description; "" before its first run), with the read protocol of `cmdgraph_sycl_exec_ir`.
///
/// # Safety
/// As `cmdgraph_sycl_exec_ir`.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_exec_runtime(
    exec: *mut cmdgraph_sycl_exec,
    dst: *mut c_char,
    capacity: usize,
    size: *mut usize,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe { with(exec, |e| copy_out(e.exec.runtime().unwrap_or_default().as_bytes(), dst.cast(), capacity, size)) }
}

/// The message of the last call on `exec`; the thread's for NULL.
///
/// # Safety
/// `exec` is NULL or a live executable graph.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_exec_last_error(exec: *mut cmdgraph_sycl_exec) -> *const c_char {
    // SAFETY: the caller's contract.
    unsafe { last_error_of(exec) }
}

/// Frees an executable graph handle; NULL does nothing. Runs in flight go on.
///
/// # Safety
/// `exec` is NULL or a live executable graph, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_exec_destroy(exec: *mut cmdgraph_sycl_exec) {
    // SAFETY: the caller's contract.
    unsafe { destroy(exec) }
}
