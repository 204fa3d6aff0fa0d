//! `cmdgraph_sycl_graph` (`command_graph<graph_state::modifiable>`) and `cmdgraph_sycl_node`:
//! explicit `add` with dependencies, `make_edge`, queue recording, and `finalize`.

use crate::cg::cmdgraph_sycl_cg;
use crate::context::{cmdgraph_sycl_context, Shared};
use crate::dynamic::cmdgraph_sycl_dcg;
use crate::error::cmdgraph_sycl_status;
use crate::error::{c_string, Error, LastError, Result};
use crate::exec::cmdgraph_sycl_exec;
use crate::queue::{cmdgraph_sycl_event, cmdgraph_sycl_queue};
use crate::{
    arg, clear_optional_out, clear_out, destroy, handles, last_error_of, put, put_handle, put_optional_handle, slice,
    with, Handle,
};
use cmdgraph_sycl::{
    ExecutableGraph, FinalizeProps, GraphProps, ModifiableGraph, NdRange, Node, NodeProps, NodeType, Range,
    RecordingProps,
};
use std::ffi::{c_char, CStr, CString};
use std::rc::Rc;

/// `property::graph::no_cycle_check` (a flag of `cmdgraph_sycl_graph_create`).
pub const CMDGRAPH_SYCL_GRAPH_NO_CYCLE_CHECK: u32 = 1;
/// `property::graph::assume_buffer_outlives_graph`.
pub const CMDGRAPH_SYCL_GRAPH_ASSUME_BUFFER_OUTLIVES_GRAPH: u32 = 2;
/// `property::node::depends_on_all_leaves` (a flag of `cmdgraph_sycl_graph_add`).
pub const CMDGRAPH_SYCL_NODE_DEPENDS_ON_ALL_LEAVES: u32 = 1;
/// `property::graph::updatable` (a flag of `cmdgraph_sycl_graph_finalize`).
pub const CMDGRAPH_SYCL_FINALIZE_UPDATABLE: u32 = 1;
/// `property::graph::enable_profiling`.
pub const CMDGRAPH_SYCL_FINALIZE_ENABLE_PROFILING: u32 = 2;

/// A modifiable command graph. Opaque.
#[allow(non_camel_case_types)]
pub struct cmdgraph_sycl_graph {
    pub(crate) shared: Rc<Shared>,
    pub(crate) graph: ModifiableGraph,
    error: LastError,
}

impl Handle for cmdgraph_sycl_graph {
    const WHAT: &'static str = "graph";
    fn last_error(&mut self) -> &mut LastError {
        &mut self.error
    }
}

/// A node of a modifiable graph. Opaque.
#[allow(non_camel_case_types)]
pub struct cmdgraph_sycl_node {
    pub(crate) node: Node,
    name: CString,
    error: LastError,
}

impl Handle for cmdgraph_sycl_node {
    const WHAT: &'static str = "node";
    fn last_error(&mut self) -> &mut LastError {
        &mut self.error
    }
}

/// A node handle for `node`.
pub(crate) fn node_handle(node: Node) -> cmdgraph_sycl_node {
    let name = c_string(&node.name());
    cmdgraph_sycl_node { node, name, error: LastError::default() }
}

fn check_flags(flags: u32, defined: u32, what: &str) -> Result<()> {
    if flags & !defined != 0 {
        return Err(Error::invalid(format!("{what} flags {flags:#x}: only bits {defined:#x} are defined")));
    }
    Ok(())
}

/// `command_graph(context, device, props)`: a new modifiable graph of `ctx` with `flags`
/// (`CMDGRAPH_SYCL_GRAPH_*`).
///
/// # Safety
/// `ctx` is NULL or a live context; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_graph_create(
    ctx: *mut cmdgraph_sycl_context,
    flags: u32,
    out: *mut *mut cmdgraph_sycl_graph,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(ctx, |c| {
            clear_out(out, "graph")?;
            check_flags(flags, 3, "graph")?;
            let props = GraphProps {
                no_cycle_check: flags & CMDGRAPH_SYCL_GRAPH_NO_CYCLE_CHECK != 0,
                assume_buffer_outlives_graph: flags & CMDGRAPH_SYCL_GRAPH_ASSUME_BUFFER_OUTLIVES_GRAPH != 0,
            };
            let graph = ModifiableGraph::new(&c.shared.ctx, &c.shared.device, props)?;
            put_handle(
                out,
                cmdgraph_sycl_graph { shared: c.shared.clone(), graph, error: LastError::default() },
                "graph",
            )
        })
    }
}

/// The node properties of `deps` and `flags`.
///
/// # Safety
/// `deps` is NULL or `count` live nodes.
unsafe fn node_props(deps: *const *const cmdgraph_sycl_node, count: usize, flags: u32) -> Result<NodeProps> {
    check_flags(flags, 1, "node")?;
    // SAFETY: the caller's contract.
    let nodes: Vec<&Node> = unsafe { handles(deps, count, "dependency node") }?.into_iter().map(|n| &n.node).collect();
    let props = NodeProps::depends_on(&nodes);
    Ok(if flags & CMDGRAPH_SYCL_NODE_DEPENDS_ON_ALL_LEAVES != 0 { props.and_all_leaves() } else { props })
}

/// `command_graph::add(cgf, {depends_on(deps...)})`: a node running command group `cg`
/// (NULL: an empty node) after the `count` nodes `deps` (and every leaf with
/// `CMDGRAPH_SYCL_NODE_DEPENDS_ON_ALL_LEAVES`); `*out` (when not NULL) gets the node.
///
/// # Safety
/// `graph` is NULL or a live graph; `cg` NULL or a live command group; `deps` NULL or
/// `count` live nodes; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_graph_add(
    graph: *mut cmdgraph_sycl_graph,
    cg: *const cmdgraph_sycl_cg,
    deps: *const *const cmdgraph_sycl_node,
    count: usize,
    flags: u32,
    out: *mut *mut cmdgraph_sycl_node,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(graph, |g| {
            clear_optional_out(out, "node")?;
            let props = node_props(deps, count, flags)?;
            let node = match cg.as_ref() {
                Some(cg) => g.graph.add(cg.function(), props)?,
                None => g.graph.add_empty(props)?,
            };
            put_optional_handle(out, node_handle(node), "node")
        })
    }
}

/// `command_graph::add(dynamicCG, {depends_on(deps...)})`: a node of a dynamic command group.
///
/// # Safety
/// As `cmdgraph_sycl_graph_add`; `dcg` NULL or a live dynamic command group.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_graph_add_dynamic(
    graph: *mut cmdgraph_sycl_graph,
    dcg: *const cmdgraph_sycl_dcg,
    deps: *const *const cmdgraph_sycl_node,
    count: usize,
    flags: u32,
    out: *mut *mut cmdgraph_sycl_node,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(graph, |g| {
            clear_optional_out(out, "node")?;
            let dcg = &arg(dcg, "dynamic command group")?.dcg;
            let node = g.graph.add_dynamic(dcg, node_props(deps, count, flags)?)?;
            put_optional_handle(out, node_handle(node), "node")
        })
    }
}

/// `command_graph::make_edge(src, dest)`.
///
/// # Safety
/// `graph` is NULL or a live graph; `src` and `dest` NULL or live nodes.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_graph_make_edge(
    graph: *mut cmdgraph_sycl_graph,
    src: *const cmdgraph_sycl_node,
    dest: *const cmdgraph_sycl_node,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(graph, |g| Ok(g.graph.make_edge(&arg(src, "source node")?.node, &arg(dest, "destination node")?.node)?))
    }
}

/// `command_graph::begin_recording(queue)`: the queue's submissions become nodes.
///
/// # Safety
/// `graph` is NULL or a live graph; `queue` NULL or a live queue.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_graph_begin_recording(
    graph: *mut cmdgraph_sycl_graph,
    queue: *const cmdgraph_sycl_queue,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe { with(graph, |g| Ok(g.graph.begin_recording(&arg(queue, "queue")?.queue, RecordingProps::default())?)) }
}

/// `command_graph::end_recording(queue)`, or `end_recording()` (every queue) for NULL.
///
/// # Safety
/// `graph` is NULL or a live graph; `queue` NULL or a live queue.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_graph_end_recording(
    graph: *mut cmdgraph_sycl_graph,
    queue: *const cmdgraph_sycl_queue,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(graph, |g| match queue.as_ref() {
            Some(q) => Ok(g.graph.end_recording_queue(&q.queue)?),
            None => {
                g.graph.end_recording();
                Ok(())
            }
        })
    }
}

/// The number of nodes of the graph in `*count`.
///
/// # Safety
/// `graph` is NULL or a live graph; `count` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_graph_node_count(
    graph: *mut cmdgraph_sycl_graph,
    count: *mut usize,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe { with(graph, |g| put(count, g.graph.get_nodes().len(), "count")) }
}

/// `command_graph::finalize(props)`: an executable graph of the graph as it is now, with
/// `flags` (`CMDGRAPH_SYCL_FINALIZE_*`). On the Vulkan backend its bundle is compiled here
/// unless the bundle directory has it.
///
/// # Safety
/// `graph` is NULL or a live graph; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_graph_finalize(
    graph: *mut cmdgraph_sycl_graph,
    flags: u32,
    out: *mut *mut cmdgraph_sycl_exec,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(graph, |g| {
            clear_out(out, "executable graph")?;
            check_flags(flags, 3, "finalize")?;
            let props = FinalizeProps {
                updatable: flags & CMDGRAPH_SYCL_FINALIZE_UPDATABLE != 0,
                enable_profiling: flags & CMDGRAPH_SYCL_FINALIZE_ENABLE_PROFILING != 0,
            };
            let exec = finalize(&g.shared, &g.graph, props)?;
            put_handle(out, crate::exec::exec_handle(g.shared.clone(), exec), "executable graph")
        })
    }
}

/// `finalize`; on the Vulkan backend, first the bundle: a context that runs from bundles
/// finds an executable graph's bundle in its directory at finalize, so when it is missing
/// the graph is finalized once on the interpreter, its module compiled in process (the bytes
/// `cmdgraph compile` writes) into `DIR/KEY.cgb`, and finalized again.
pub(crate) fn finalize(shared: &Shared, graph: &ModifiableGraph, props: FinalizeProps) -> Result<ExecutableGraph> {
    let Some(source) = shared.ctx.bundle_source() else { return Ok(graph.finalize(props)?) };
    shared.ctx.without_bundles();
    let first = graph.finalize(props);
    shared.ctx.run_from_bundles(source.clone());
    let first = first?;
    let path = source.dir.join(format!("{}.cgb", first.bundle_key()));
    if !path.is_file() {
        let bytes = crate::exec::compile_text(&crate::exec::ir_text(&first))?;
        crate::exec::write_atomically(&path, &bytes)?;
    }
    drop(first);
    Ok(graph.finalize(props)?)
}

/// The message of the last call on `graph`; the thread's for NULL.
///
/// # Safety
/// `graph` is NULL or a live graph.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_graph_last_error(graph: *mut cmdgraph_sycl_graph) -> *const c_char {
    // SAFETY: the caller's contract.
    unsafe { last_error_of(graph) }
}

/// Frees a graph handle; NULL does nothing. Executable graphs made from it stay usable.
///
/// # Safety
/// `graph` is NULL or a live graph, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_graph_destroy(graph: *mut cmdgraph_sycl_graph) {
    // SAFETY: the caller's contract.
    unsafe { destroy(graph) }
}

/// `node::get_node_from_event(event)`: the node a recorded submission made.
///
/// # Safety
/// `event` is NULL or a live event; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_node_from_event(
    event: *mut cmdgraph_sycl_event,
    out: *mut *mut cmdgraph_sycl_node,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(event, |e| {
            clear_out(out, "node")?;
            let ev =
                e.event.as_ref().ok_or_else(|| Error::invalid("the event is a host copy's, not a recorded one"))?;
            put_handle(out, node_handle(Node::get_node_from_event(ev)?), "node")
        })
    }
}

/// The node's IR name (without `%`), valid as long as the node handle; NULL for NULL.
///
/// # Safety
/// `node` is NULL or a live node.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_node_name(node: *const cmdgraph_sycl_node) -> *const c_char {
    // SAFETY: the caller's contract.
    unsafe { node.as_ref() }.map_or(std::ptr::null(), |n| n.name.as_ptr())
}

/// `node::get_type()` as the spec spells it (`"kernel"`, `"memcpy"`, `"host_task"`,
/// `"subgraph"`, `"empty"`, ...), a static string; NULL for NULL.
///
/// # Safety
/// `node` is NULL or a live node.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_node_type(node: *const cmdgraph_sycl_node) -> *const c_char {
    // SAFETY: the caller's contract.
    let Some(n) = (unsafe { node.as_ref() }) else { return std::ptr::null() };
    match crate::error::catch(|| Ok(type_name(n.node.get_type()))) {
        Ok(name) => name.as_ptr(),
        Err(_) => std::ptr::null(),
    }
}

/// `NodeType::name` as a static C string.
fn type_name(t: NodeType) -> &'static CStr {
    match t {
        NodeType::Empty => c"empty",
        NodeType::Subgraph => c"subgraph",
        NodeType::Kernel => c"kernel",
        NodeType::Memcpy => c"memcpy",
        NodeType::Memset => c"memset",
        NodeType::Memfill => c"memfill",
        NodeType::Prefetch => c"prefetch",
        NodeType::Memadvise => c"memadvise",
        NodeType::Barrier => c"ext_oneapi_barrier",
        NodeType::HostTask => c"host_task",
        NodeType::AsyncMalloc => c"async_malloc",
        NodeType::AsyncFree => c"async_free",
        NodeType::NativeCommand => c"native_command",
        NodeType::Conditional => c"conditional",
        NodeType::Communication => c"communication",
    }
}

/// The node's predecessors (`get_predecessors().size()`) and successors in `*preds` and
/// `*succs` (either may be NULL).
///
/// # Safety
/// `node` is NULL or a live node; `preds` and `succs` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_node_degree(
    node: *mut cmdgraph_sycl_node,
    preds: *mut usize,
    succs: *mut usize,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(node, |n| {
            if !preds.is_null() {
                put(preds, n.node.get_predecessors().len(), "predecessors")?;
            }
            if !succs.is_null() {
                put(succs, n.node.get_successors().len(), "successors")?;
            }
            Ok(())
        })
    }
}

/// `node::update_range(range)` (or `update_nd_range` when `local` is not NULL): a kernel
/// node's launch; executable graphs see it after `cmdgraph_sycl_exec_update_nodes`.
///
/// # Safety
/// `node` is NULL or a live node; `global` NULL or `dims` readable sizes; `local` NULL or
/// `dims` readable sizes.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_node_update_range(
    node: *mut cmdgraph_sycl_node,
    dims: usize,
    global: *const u64,
    local: *const u64,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(node, |n| {
            let global = slice(global, dims, "global range")?.to_vec();
            if local.is_null() {
                Ok(n.node.update_range(Range(global))?)
            } else {
                let local = slice(local, dims, "local range")?.to_vec();
                Ok(n.node.update_nd_range(NdRange::new(Range(global), Range(local)))?)
            }
        })
    }
}

/// The message of the last call on `node`; the thread's for NULL.
///
/// # Safety
/// `node` is NULL or a live node.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_node_last_error(node: *mut cmdgraph_sycl_node) -> *const c_char {
    // SAFETY: the caller's contract.
    unsafe { last_error_of(node) }
}

/// Frees a node handle (not the node); NULL does nothing.
///
/// # Safety
/// `node` is NULL or a live node, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_node_destroy(node: *mut cmdgraph_sycl_node) {
    // SAFETY: the caller's contract.
    unsafe { destroy(node) }
}
