//! Running commands: executing-queue submissions and executable graphs, on the memory
//! the context keeps. Commands run one at a time in a topological order of the graph
//! (creation order among ready nodes), which is one of the orders its edges allow.
//! Kernels run on the reference interpreter; host tasks and native commands are Rust
//! callbacks registered by name.

use crate::error::{Result, SyclError};
use crate::exec::ExecutableGraph;
use crate::handler::{Command, Handler};
use crate::memory::{from_bytes, put_literal, to_bytes, DeviceGlobal, Element, Ptr, PtrBase};
use crate::platform::Context;
use crate::queue::{Event, EventKind, ProfilingInfo, Queue};
use cmdgraph_ir::{Graph, Handle, HostAccess, KernelCommand, MemRef, Module, NodeKind, Pointer, Type};
use std::collections::BTreeMap;
use std::rc::Rc;

/// A host-task callback.
pub type HostTaskFn = Rc<dyn Fn(&mut HostTaskContext) -> Result<()>>;
/// A native-command callback.
pub type NativeFn = Rc<dyn Fn(&InteropHandle) -> Result<()>>;

/// Callbacks registered with a context, by name.
#[derive(Default)]
pub(crate) struct Callbacks {
    host: BTreeMap<String, HostTaskFn>,
    native: BTreeMap<String, NativeFn>,
}

/// `interop_handle` as host tasks and native commands see it (004).
pub struct InteropHandle {
    has_graph: bool,
}

/// The backend graph a native command adds work to (project-defined, 004 §Implementation
/// Notes); this runtime records nothing in it.
#[derive(Debug)]
pub struct NativeGraph {
    _private: (),
}

impl InteropHandle {
    /// `ext_codeplay_has_graph()`: true only for a native command called while its graph
    /// is finalized.
    pub fn ext_codeplay_has_graph(&self) -> bool {
        self.has_graph
    }

    /// `ext_codeplay_get_native_graph<B>()` (row 64).
    pub fn ext_codeplay_get_native_graph(&self) -> Result<NativeGraph> {
        if !self.has_graph {
            return Err(SyclError::invalid(
                64,
                "ext_codeplay_get_native_graph: this interop handle has no graph (ext_codeplay_has_graph() is false)",
            ));
        }
        Ok(NativeGraph { _private: () })
    }
}

/// What a host task can reach while it runs: its interop handle and device memory,
/// graph-owned allocations of the running graph included.
pub struct HostTaskContext {
    interop: InteropHandle,
    ctx: Context,
    exec: Option<ExecutableGraph>,
}

impl HostTaskContext {
    /// The interop handle (`ext_codeplay_has_graph()` is false in host tasks).
    pub fn interop(&self) -> &InteropHandle {
        &self.interop
    }

    fn with_bytes<R>(&self, ptr: &Ptr, f: impl FnOnce(&mut Vec<u8>) -> R) -> Result<R> {
        match &ptr.base {
            PtrBase::Usm(u) => {
                let mut inner = self.ctx.0.borrow_mut();
                inner.store.get_mut(u.handle().index()).map(f).ok_or_else(|| SyclError::invalid(0, "no such memory"))
            }
            PtrBase::Alloc { node, .. } => {
                let exec = self.exec.as_ref().ok_or_else(|| SyclError::invalid(0, "no graph allocation here"))?;
                let mut pool = exec.0.pool.borrow_mut();
                pool.get_mut(node.index()).map(f).ok_or_else(|| SyclError::invalid(0, "no such allocation"))
            }
            PtrBase::Dangling => Err(SyclError::invalid(0, "dangling pointer")),
        }
    }

    /// Reads `count` elements at `ptr`.
    pub fn read<T: Element>(&self, ptr: &Ptr, count: u64) -> Result<Vec<T>> {
        let start = usize::try_from(ptr.offset).unwrap_or(usize::MAX);
        let len = usize::try_from(count.saturating_mul(T::TYPE.size())).unwrap_or(usize::MAX);
        let bytes = self.with_bytes(ptr, |b| b.get(start..start.saturating_add(len)).map(<[u8]>::to_vec))?;
        Ok(from_bytes(&bytes.ok_or_else(|| SyclError::invalid(0, "host task read past the end of memory"))?))
    }

    /// Writes `data` at `ptr`.
    pub fn write<T: Element>(&self, ptr: &Ptr, data: &[T]) -> Result<()> {
        let start = usize::try_from(ptr.offset).unwrap_or(usize::MAX);
        let data = to_bytes(data);
        let ok = self.with_bytes(ptr, |b| match b.get_mut(start..start.saturating_add(data.len())) {
            Some(dst) => {
                dst.copy_from_slice(&data);
                true
            }
            None => false,
        })?;
        if ok {
            Ok(())
        } else {
            Err(SyclError::invalid(0, "host task write past the end of memory"))
        }
    }
}

impl Context {
    /// Registers the host-task callback `name` (replacing one of the same name).
    pub fn register_host_task(&self, name: &str, f: impl Fn(&mut HostTaskContext) -> Result<()> + 'static) {
        self.0.borrow_mut().callbacks.host.insert(name.to_string(), Rc::new(f));
    }

    /// Registers the native-command callback `name` (replacing one of the same name).
    pub fn register_native_command(&self, name: &str, f: impl Fn(&InteropHandle) -> Result<()> + 'static) {
        self.0.borrow_mut().callbacks.native.insert(name.to_string(), Rc::new(f));
    }
}

/// Calls native callback `name` with an interop handle that has a graph or not.
pub(crate) fn call_native(ctx: &Context, name: &str, has_graph: bool) -> Result<()> {
    let f = ctx.0.borrow().callbacks.native.get(name).cloned();
    let f =
        f.ok_or_else(|| SyclError::invalid(0, format!("no native command `{name}` is registered with the context")))?;
    f(&InteropHandle { has_graph })
}

fn call_host(ctx: &Context, name: &str, exec: Option<&ExecutableGraph>) -> Result<()> {
    let f = ctx.0.borrow().callbacks.host.get(name).cloned();
    let f = f.ok_or_else(|| SyclError::invalid(0, format!("no host task `{name}` is registered with the context")))?;
    let mut hc = HostTaskContext { interop: InteropHandle { has_graph: false }, ctx: ctx.clone(), exec: exec.cloned() };
    f(&mut hc)
}

/// Rows 65, 67, 68: a copy to or from a `device_global` on an executing queue.
pub(crate) fn check_device_global_copy(
    global: &DeviceGlobal,
    to_device: bool,
    start: u64,
    count: u64,
    ty: Type,
) -> Result<()> {
    if ty != global.elem() {
        return Err(SyclError::invalid(
            0,
            format!("device_global `@{}` holds {} elements, not {ty}", global.name(), global.elem()),
        ));
    }
    if start.checked_add(count).is_none_or(|end| end > global.count()) {
        return Err(SyclError::invalid(
            65,
            format!(
                "copy of {count} elements from index {start} runs past the end of device_global `@{}` ({} elements)",
                global.name(),
                global.count()
            ),
        ));
    }
    let access = global.props.host_access.unwrap_or(HostAccess::ReadWrite);
    let banned = if to_device {
        matches!(access, HostAccess::Read | HostAccess::None)
    } else {
        matches!(access, HostAccess::Write | HostAccess::None)
    };
    if banned {
        return Err(SyclError::invalid(
            68,
            format!("device_global `@{}` has host_access({access:?}), which does not allow this copy", global.name()),
        ));
    }
    if global.props.device_image_scope && !kernel_uses_global(&global.mem.ctx, global) {
        return Err(SyclError::kernel_not_supported(
            67,
            format!(
                "device_global `@{}` has device_image_scope but no kernel of its device image accesses it",
                global.name()
            ),
        ));
    }
    Ok(())
}

fn kernel_uses_global(ctx: &Context, global: &DeviceGlobal) -> bool {
    use cmdgraph_ir::kernel::MemBase;
    let inner = ctx.0.borrow();
    let used = inner.kernels.iter().any(|(_, k)| match &k.body {
        cmdgraph_ir::KernelBody::Ir(body) => body.ops.iter().any(|(_, op)| match &op.kind {
            cmdgraph_ir::OpKind::Load { mem, .. }
            | cmdgraph_ir::OpKind::Store { mem, .. }
            | cmdgraph_ir::OpKind::Atomic { mem, .. } => *mem == MemBase::Global(global.handle()),
            _ => false,
        }),
        cmdgraph_ir::KernelBody::Spirv { .. } => false,
    });
    used
}

fn now_ns() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

fn profiling(
    queue: &Queue,
    submit: u64,
    start: u64,
    graph: Option<&ExecutableGraph>,
) -> std::result::Result<ProfilingInfo, (u32, String)> {
    if let Some(g) = graph {
        if !g.props().enable_profiling {
            return Err((
                61,
                "get_profiling_info: the executable graph was finalized without property::graph::enable_profiling"
                    .into(),
            ));
        }
    }
    if !queue.props().enable_profiling {
        return Err((0, "get_profiling_info: the queue was created without property::queue::enable_profiling".into()));
    }
    Ok(ProfilingInfo { submit, start, end: now_ns().max(start) })
}

/// Runs a command group submitted to an executing queue (rows 41, 43, 51).
pub(crate) fn run_eager(queue: &Queue, mut h: Handler) -> Result<Event> {
    if let Some(e) = h.error.take() {
        return Err(e);
    }
    let submit = now_ns();
    for e in &h.deps {
        if let EventKind::Recorded { .. } = &*e.0 {
            return Err(SyclError::invalid(
                51,
                "depends_on: the event was returned by a recording queue whose recording has ended; recorded events cannot be used outside their recording",
            ));
        }
    }
    let dyn_arg = h.set_args.values().any(|a| matches!(a, crate::KArg::Dyn(_)))
        || matches!(&h.command, Some(Command::Kernel { args, .. }) if args.iter().any(|a| matches!(a, crate::KArg::Dyn(_))));
    if dyn_arg || !h.dyn_requires.is_empty() {
        let row = if dyn_arg { 41 } else { 43 };
        return Err(SyclError::invalid(
            row,
            "set_arg/require with a dynamic parameter outside a graph; dynamic parameters only work in graph.add",
        ));
    }
    let ctx = queue.context();
    let start = now_ns();
    let mut graph = None;
    match h.command.take() {
        None | Some(Command::Barrier { .. }) | Some(Command::Prefetch { .. }) | Some(Command::Advise { .. }) => {}
        Some(Command::HostTask { callback, .. }) => call_host(&ctx, &callback, None)?,
        Some(Command::Native { callback, .. }) => call_native(&ctx, &callback, false)?,
        Some(Command::Subgraph { exec, .. }) => {
            run_graph(&exec)?;
            graph = Some(exec);
        }
        Some(Command::DeviceGlobalCopy { global, offset, data }) => {
            let size = global.elem().size().max(1);
            check_device_global_copy(&global, true, offset / size, data.len() as u64 / size, global.elem())?;
            global.write_at(offset, &data)?;
        }
        Some(Command::Banned(b)) => {
            return Err(SyclError::unsupported(0, format!("{} is not implemented by this runtime", b.what)));
        }
        Some(Command::AsyncMalloc { .. }) | Some(Command::AsyncFree { .. }) => {
            return Err(SyclError::unsupported(
                0,
                "async_malloc/async_free outside a graph are not implemented by this runtime",
            ));
        }
        Some(
            cmd @ (Command::Kernel { .. } | Command::Memcpy { .. } | Command::Memset { .. } | Command::Fill { .. }),
        ) => {
            run_one_eager(queue, &ctx, cmd, h)?;
        }
    }
    Ok(Event::done(profiling(queue, submit, start, graph.as_ref())))
}

/// An eager memory command or kernel: built as a one-node graph and run like any graph.
fn run_one_eager(queue: &Queue, _ctx: &Context, cmd: Command, mut h: Handler) -> Result<()> {
    let g = crate::ModifiableGraph::new(&queue.context(), &queue.device(), crate::GraphProps::buffers())?;
    h.command = Some(cmd);
    h.deps.clear();
    h.mode = crate::handler::Mode::Explicit;
    h.graph = Some(g.inner().clone());
    crate::graph::GraphInner::add_command_group(g.inner(), h, &Default::default())?;
    let exec = g.finalize(Default::default())?;
    run_graph(&exec)
}

/// Memory a running graph reaches: the context's memory and the graph's allocations.
struct Memory<'a> {
    store: &'a mut Vec<Vec<u8>>,
    pool: &'a mut Vec<Vec<u8>>,
}

impl Memory<'_> {
    fn bytes(&mut self, r: MemRef) -> Result<&mut Vec<u8>> {
        let slot = match r {
            MemRef::Memory(m) => self.store.get_mut(m.index()),
            MemRef::Alloc(n) => self.pool.get_mut(n.index()),
        };
        slot.ok_or_else(|| SyclError::invalid(0, "the graph names memory the runtime does not have"))
    }

    fn range(&mut self, p: Pointer, bytes: u64) -> Result<&mut [u8]> {
        let buf = self.bytes(p.base)?;
        let start = usize::try_from(p.offset).unwrap_or(usize::MAX);
        let end = start.saturating_add(usize::try_from(bytes).unwrap_or(usize::MAX));
        buf.get_mut(start..end).ok_or_else(|| SyclError::invalid(0, "a command runs past the end of its memory"))
    }
}

/// Executes an executable graph once, on the context's memory.
pub(crate) fn run_graph(exec: &ExecutableGraph) -> Result<()> {
    let (module, graph) = {
        let st = exec.0.state.borrow();
        (st.module.clone(), st.graph)
    };
    run_graph_in(exec, &module, graph, 0)
}

/// A topological order of `g`'s nodes, ready nodes taken in creation order.
fn topo_order(g: &Graph) -> Vec<Handle<cmdgraph_ir::Node>> {
    let n = g.nodes.len();
    let mut indeg = vec![0usize; n];
    let mut succ = vec![Vec::new(); n];
    for (_, e) in g.edges.iter() {
        if e.from.index() < n && e.to.index() < n {
            indeg[e.to.index()] += 1;
            succ[e.from.index()].push(e.to.index());
        }
    }
    let mut ready: std::collections::BTreeSet<usize> = (0..n).filter(|i| indeg[*i] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(i) = ready.pop_first() {
        order.extend(Handle::from_usize(i));
        for &s in &succ[i] {
            indeg[s] -= 1;
            if indeg[s] == 0 {
                ready.insert(s);
            }
        }
    }
    order
}

fn run_graph_in(exec: &ExecutableGraph, module: &Module, graph: Handle<Graph>, depth: usize) -> Result<()> {
    if depth > 256 {
        return Err(SyclError::invalid(0, "sub-graphs nest more than 256 deep"));
    }
    let g = module.graphs.try_get(graph).ok_or_else(|| SyclError::invalid(0, "missing graph"))?;
    let ctx = exec.0.ctx.clone();
    for h in topo_order(g) {
        let node = &g.nodes[h];
        match &node.kind {
            NodeKind::HostTask(cmd) => call_host(&ctx, &cmd.callback, Some(exec))?,
            NodeKind::Native(_) => {}
            NodeKind::Subgraph { graph: child } => run_graph_in(exec, module, *child, depth + 1)?,
            NodeKind::Dynamic { dcg } => match g.dcgs.try_get(*dcg).and_then(|d| d.alternatives.get(d.active as usize))
            {
                Some(cmdgraph_ir::Alternative::Kernel(cmd)) => run_kernel(exec, module, g, cmd)?,
                Some(cmdgraph_ir::Alternative::HostTask(cmd)) => call_host(&ctx, &cmd.callback, Some(exec))?,
                _ => return Err(SyclError::invalid(0, "a dynamic node without a runnable alternative")),
            },
            NodeKind::Kernel(cmd) => run_kernel(exec, module, g, cmd)?,
            other => {
                let mut inner = ctx.0.borrow_mut();
                let mut pool = exec.0.pool.borrow_mut();
                let mut mem = Memory { store: &mut inner.store, pool: &mut pool };
                run_memory_command(&mut mem, other)?;
            }
        }
    }
    Ok(())
}

fn run_memory_command(mem: &mut Memory<'_>, kind: &NodeKind) -> Result<()> {
    match kind {
        NodeKind::Memcpy { dst, src, bytes } => {
            let data = mem.range(*src, *bytes)?.to_vec();
            mem.range(*dst, *bytes)?.copy_from_slice(&data);
        }
        NodeKind::Memset { dst, value, bytes } => mem.range(*dst, *bytes)?.fill(*value),
        NodeKind::Memfill { dst, pattern, count } => {
            let ty = pattern.ty.unwrap_or(cmdgraph_ir::ScalarType::F32);
            let mut one = Vec::new();
            put_literal(pattern.value, ty, &mut one);
            let total = (one.len() as u64).saturating_mul(*count);
            let out = mem.range(*dst, total)?;
            for chunk in out.chunks_mut(one.len().max(1)) {
                chunk.copy_from_slice(&one[..chunk.len()]);
            }
        }
        _ => {}
    }
    Ok(())
}

fn run_kernel(exec: &ExecutableGraph, module: &Module, g: &Graph, cmd: &KernelCommand) -> Result<()> {
    let _ = (exec, module, g, cmd);
    Err(SyclError::unsupported(
        0,
        "kernel execution needs the reference interpreter, which this build does not have yet",
    ))
}
