//! Running commands through the runtime interface (`cmdgraph_ir::runtime::Runtime`, docs/
//! runtime.md), today on the reference interpreter (`cmdgraph_interp`): executable graphs
//! submitted to an executing queue, and submissions to executing queues (each run as a
//! one-node graph).
//!
//! The context keeps the contents of every USM allocation, buffer and `device_global`.
//! A run uses a runtime for the executable graph's snapshot module, binds that memory,
//! submits the graph, waits for it and copies the memory back. The runtime is kept with the
//! executable graph, so `zero_init` graph-owned allocations keep their contents between
//! executions (decision A9: zeroed at finalize only; the others are poisoned every run). Host tasks are Rust callbacks
//! registered by name; a native command's callback runs at every finalize (decision A8)
//! and its optional "work" callback when the node executes.

use crate::error::{Result, SyclError};
use crate::exec::ExecutableGraph;
use crate::global::DeviceGlobal;
use crate::handler::{Command, Handler, Mode};
use crate::platform::{BundleSource, Context};
use crate::queue::{Event, EventKind, ProfilingInfo, Queue};
use cmdgraph_interp::Interpreter;
use cmdgraph_ir::host::{HostError, HostFn, HostMemory};
use cmdgraph_ir::runtime::{host_task, ExecHandle, Runtime};
use cmdgraph_ir::{Graph, Handle, HostAccess, LitValue, Literal, MemoryKind, Module, ScalarType, Type};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

/// A host-task callback (also a native command's run-time work).
/// The callback type every runtime takes (`cmdgraph_ir::host::HostFn`), shared so that a
/// graph's host tasks can run on the interpreter or a device's worker thread.
pub type HostTaskFn = Arc<Mutex<HostFn>>;
/// A native-command callback, called with the interop handle.
pub type NativeFn = Rc<dyn Fn(&InteropHandle) -> Result<()>>;

/// Callbacks registered with a context, by name.
#[derive(Default)]
pub(crate) struct Callbacks {
    host: BTreeMap<String, HostTaskFn>,
    native: BTreeMap<String, NativeFn>,
    native_work: BTreeMap<String, HostTaskFn>,
}

/// `interop_handle` as native commands see it (004).
pub struct InteropHandle {
    has_graph: bool,
}

/// The backend graph a native command adds work to (project-defined, 004 §Implementation
/// Notes); the reference runtime records nothing in it.
#[derive(Debug)]
pub struct NativeGraph {
    _private: (),
}

impl InteropHandle {
    /// `ext_codeplay_has_graph()`: true only while the native command's graph is finalized.
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

impl Context {
    /// Registers host-task callback `name` (replacing one of the same name). It reaches the
    /// memory its node declares (`access(...)`: the command group's accessors and USM list).
    pub fn register_host_task(
        &self,
        name: &str,
        f: impl FnMut(&mut dyn HostMemory) -> std::result::Result<(), HostError> + Send + 'static,
    ) {
        self.0.borrow_mut().callbacks.host.insert(name.to_string(), Arc::new(Mutex::new(Box::new(f))));
    }

    /// Registers native-command callback `name`: called at every finalize of a graph
    /// holding the command (with a graph) and on an executing queue (without one).
    pub fn register_native_command(&self, name: &str, f: impl Fn(&InteropHandle) -> Result<()> + 'static) {
        self.0.borrow_mut().callbacks.native.insert(name.to_string(), Rc::new(f));
    }

    /// Registers what native command `name` does when its node executes (the native work
    /// the callback enqueued). Without one, the node does nothing when it runs.
    pub fn register_native_work(
        &self,
        name: &str,
        f: impl FnMut(&mut dyn HostMemory) -> std::result::Result<(), HostError> + Send + 'static,
    ) {
        self.0.borrow_mut().callbacks.native_work.insert(name.to_string(), Arc::new(Mutex::new(Box::new(f))));
    }
}

/// Calls native callback `name` with an interop handle that has a graph or not.
pub(crate) fn call_native(ctx: &Context, name: &str, has_graph: bool) -> Result<()> {
    let f = ctx.0.borrow().callbacks.native.get(name).cloned();
    let f =
        f.ok_or_else(|| SyclError::invalid(0, format!("no native command `{name}` is registered with the context")))?;
    f(&InteropHandle { has_graph })
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
    use cmdgraph_ir::{KernelBody, OpKind};
    let inner = ctx.0.borrow();
    let used = inner.kernels.iter().any(|(_, k)| match &k.body {
        KernelBody::Ir(body) => body.ops.iter().any(|(_, op)| match &op.kind {
            OpKind::Load { mem, .. } | OpKind::Store { mem, .. } | OpKind::Atomic { mem, .. } => {
                *mem == MemBase::Global(global.handle())
            }
            _ => false,
        }),
        KernelBody::Spirv { .. } => false,
    });
    used
}

fn now_ns() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

/// Profiling information of a command that ran, or why it has none (rows 61, 0).
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
    if h.deps.iter().any(|e| matches!(&*e.0, EventKind::Recorded { .. })) {
        return Err(SyclError::invalid(
            51,
            "depends_on: the event was returned by a queue whose recording has ended; recorded events cannot be used outside their recording",
        ));
    }
    let dyn_arg = h.registers_dyn_arg();
    if dyn_arg || !h.dyn_requires.is_empty() {
        return Err(SyclError::invalid(
            if dyn_arg { 41 } else { 43 },
            "set_arg/require with a dynamic parameter in a normal (non-graph) submission; dynamic parameters only work in graph.add",
        ));
    }
    let ctx = queue.context();
    let start = now_ns();
    let mut graph = None;
    match h.command.take() {
        None | Some(Command::Barrier { .. }) => {}
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
        Some(cmd) => {
            h.command = Some(cmd);
            run_one(queue, h)?;
        }
    }
    Ok(Event::done(profiling(queue, submit, start, graph.as_ref())))
}

/// An eager kernel, memory command or host task: a one-node graph, run once.
fn run_one(queue: &Queue, mut h: Handler) -> Result<()> {
    let g = crate::ModifiableGraph::eager(queue)?;
    h.deps.clear();
    h.mode = Mode::Internal;
    h.graph = Some(g.inner().clone());
    crate::graph::GraphInner::add_command_group(g.inner(), h, &Default::default())?;
    let exec = g.finalize(Default::default())?;
    run_graph(&exec)
}

/// The literals that make a `device_global`'s initialiser equal to `bytes` (scalar
/// element types; a vector `device_global` keeps its declared initialiser).
fn literals(elem: Type, bytes: &[u8]) -> Option<Vec<Literal>> {
    if elem.lanes != 1 {
        return None;
    }
    let size = elem.size() as usize;
    let lit = |chunk: &[u8]| {
        let mut raw = [0u8; 8];
        raw[..chunk.len().min(8)].copy_from_slice(&chunk[..chunk.len().min(8)]);
        let bits = u64::from_le_bytes(raw);
        let value = match elem.scalar {
            ScalarType::Bool => LitValue::Bool(bits != 0),
            ScalarType::I32 => LitValue::Int(bits as u32 as i32 as i128),
            ScalarType::U32 => LitValue::Int(bits as u32 as i128),
            ScalarType::I64 => LitValue::Int(bits as i64 as i128),
            ScalarType::U64 => LitValue::Int(bits as i128),
            ScalarType::F16 => LitValue::Float(cmdgraph_ir::data::half::f16::from_bits(bits as u16).to_f64()),
            ScalarType::F32 => LitValue::Float(f32::from_bits(bits as u32) as f64),
        };
        Literal { value, ty: Some(elem.scalar) }
    };
    Some(bytes.chunks_exact(size).map(lit).collect())
}

fn interp_error(e: impl std::fmt::Display) -> SyclError {
    SyclError::invalid(0, format!("execution failed: {e}"))
}

/// The interpreter state of one executable graph: kept between runs so `zero_init`
/// allocations keep their contents (decision A9), rebuilt when the graph was updated or
/// when a `device_global` changed outside it.
pub(crate) struct Runner {
    runtime: Box<dyn Runtime>,
    id: ExecHandle,
    version: u64,
    device: u32,
    /// (memory index, name, is a device_global) of every module memory object.
    names: Vec<(usize, String, bool)>,
}

impl Runner {
    fn build(exec: &ExecutableGraph) -> Result<Runner> {
        let (mut module, graph, version): (Module, Handle<Graph>, u64) = {
            let st = exec.0.state.borrow();
            (st.module.clone(), st.graph, st.version)
        };
        {
            let inner = exec.0.ctx.0.borrow();
            for (h, m) in module.memories.iter_mut() {
                if let MemoryKind::DeviceGlobal(d) = &mut m.kind {
                    if let Some(lits) = inner.store.get(h.index()).and_then(|b| literals(m.elem, b)) {
                        d.init = lits;
                    }
                }
            }
        }
        let source = exec.0.ctx.bundle_source();
        let source_is_bundle = source.is_some();
        let mut runtime: Box<dyn Runtime> = match source {
            Some(source) => from_bundle(exec, &source)?,
            None => Box::new(Interpreter::new(&module).map_err(interp_error)?),
        };
        // A bundle is found by a key that leaves the graph's name out (two graphs built the
        // same way share it), so its executable graph is its module's last, whatever its name.
        let name = match runtime.module().graphs.iter().last() {
            Some((_, g)) if source_is_bundle => g.name.clone(),
            _ => module.graphs[graph].name.clone(),
        };
        let id = runtime.finalize(&name).map_err(interp_error)?;
        let names = module
            .memories
            .iter()
            .map(|(h, m)| (h.index(), m.name.clone(), matches!(m.kind, MemoryKind::DeviceGlobal(_))))
            .collect();
        Ok(Runner { runtime, id, version, device: module.graphs[graph].device, names })
    }

    /// [`Runtime::describe`] of the runtime this state runs on.
    pub(crate) fn describe(&self) -> String {
        self.runtime.describe()
    }

    /// Whether this state still matches the graph and the context's device globals.
    fn fresh(&mut self, exec: &ExecutableGraph) -> bool {
        if self.version != exec.0.state.borrow().version {
            return false;
        }
        let inner = exec.0.ctx.0.borrow();
        let (runtime, device) = (&mut self.runtime, self.device);
        self.names.iter().filter(|(_, _, dg)| *dg).all(|(i, name, _)| {
            runtime.read_device_global(name, device).ok().as_deref() == inner.store.get(*i).map(Vec::as_slice)
        })
    }
}

/// The bundle of `exec` in `source.dir`, `KEY.cgb`, which must exist (the error names the
/// graph, the key and the commands that make the bundle), and the key: computing it prints
/// and hashes the whole module, so it is done once.
pub(crate) fn bundle_path(exec: &ExecutableGraph, source: &BundleSource) -> Result<(std::path::PathBuf, String)> {
    let key = exec.bundle_key();
    let path = source.dir.join(format!("{key}.cgb"));
    if path.is_file() {
        return Ok((path, key));
    }
    #[cfg(feature = "jit")]
    return compile_missing(exec, &path).map(|()| (path, key));
    #[cfg(not(feature = "jit"))]
    Err(missing_bundle(exec, source, &path, &key))
}

/// The error for a missing bundle: the graph, the key and the commands that make it.
#[cfg(not(feature = "jit"))]
fn missing_bundle(exec: &ExecutableGraph, source: &BundleSource, path: &std::path::Path, key: &str) -> SyclError {
    let name = {
        let st = exec.0.state.borrow();
        st.module.graphs[st.graph].name.clone()
    };
    SyclError::invalid(
        0,
        format!(
            "finalize: graph `@{name}` has no precompiled bundle `{}` (key {key}); make it with \
             `CMDGRAPH_EXPORT_DIR=DIR <the application>` (or `ExecutableGraph::export_module(DIR)`) \
             and then `cmdgraph compile DIR/{key}.cgir --bundle-dir {}`, or build cmdgraph-sycl \
             with the `jit` feature to compile it at finalize",
            path.display(),
            source.dir.display()
        ),
    )
}

/// `jit`: compiles `exec`'s module as `cmdgraph compile` would (the default pipeline, -O2)
/// and writes the bundle to `path` (through a temporary file renamed over it, so a reader
/// never sees half a bundle), for this and later runs of the application.
#[cfg(feature = "jit")]
fn compile_missing(exec: &ExecutableGraph, path: &std::path::Path) -> Result<()> {
    use cmdgraph_codegen::bundle::{compile_module, Llvm};
    let fail = |what: String| SyclError::invalid(0, format!("finalize: compiling `{}`: {what}", path.display()));
    let module = exec.0.state.borrow().module.clone();
    let passes: Vec<_> = cmdgraph_passes::DEFAULT_PIPELINE.iter().filter_map(|n| cmdgraph_passes::lookup(n)).collect();
    let (bundle, _) = compile_module(&module, &passes, &cmdgraph_codegen::Options::default(), &Llvm)
        .map_err(|e| fail(e.to_string()))?;
    let bytes = bundle.to_bytes().map_err(|e| fail(e.to_string()))?;
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| fail(e.to_string()))?;
    let tmp = path.with_extension(format!("cgb.tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(|e| fail(e.to_string()))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail(e.to_string())
    })
}

/// An executor on the default Vulkan device for `exec`'s bundle. The bundle must have been
/// made from exactly this module: its source's key is checked against the graph's.
fn from_bundle(exec: &ExecutableGraph, source: &BundleSource) -> Result<Box<dyn Runtime>> {
    let (path, key) = bundle_path(exec, source)?;
    let fail = |what: String| SyclError::invalid(0, format!("bundle `{}`: {what}", path.display()));
    let bytes = std::fs::read(&path).map_err(|e| fail(e.to_string()))?;
    let loaded = cmdgraph_executor::load::load_bytes(&bytes).map_err(|e| fail(e.to_string()))?;
    let made_from = cmdgraph_ir::bundle::key::graph_key(loaded.source().map_err(|e| fail(e.to_string()))?);
    if made_from != key {
        return Err(fail(format!("it was made from another module (key {made_from}, the graph's is {key})")));
    }
    let options = cmdgraph_executor::ContextOptions { validation: source.validation, ..Default::default() };
    let executor = cmdgraph_executor::Executor::new(loaded, &options).map_err(|e| fail(e.to_string()))?;
    Ok(Box::new(executor))
}

/// Executes an executable graph once on the context's memory.
pub(crate) fn run_graph(exec: &ExecutableGraph) -> Result<()> {
    let ctx = exec.0.ctx.clone();
    let mut slot = exec.0.runner.try_borrow_mut().map_err(|_| {
        SyclError::invalid(0, "the executable graph is already running (a host task submitted it again)")
    })?;
    if !slot.as_mut().is_some_and(|r| r.fresh(exec)) {
        *slot = Some(Runner::build(exec)?);
    }
    let runner = slot.as_mut().ok_or_else(|| SyclError::invalid(0, "no runner"))?;
    {
        let inner = ctx.0.borrow();
        for (i, name, dg) in &runner.names {
            match (dg, inner.store.get(*i)) {
                (false, Some(bytes)) => runner.runtime.bind(name, bytes).map_err(interp_error)?,
                // The context's value is the instance every graph and copy shares; a runtime
                // made from a bundle starts from the bundle's declaration otherwise.
                (true, Some(bytes)) if !bytes.is_empty() => {
                    runner.runtime.write_device_global(name, runner.device, bytes).map_err(interp_error)?;
                }
                _ => {}
            }
        }
        for (name, f) in inner.callbacks.host.iter().chain(&inner.callbacks.native_work) {
            let f = f.clone();
            // `try_lock`: a host task that runs itself again (through a graph it submits) gets
            // an error instead of a deadlock.
            runner.runtime.register_host_task(
                name,
                host_task(move |hc: &mut dyn HostMemory| match f.try_lock() {
                    Ok(mut f) => f(hc),
                    Err(std::sync::TryLockError::WouldBlock) => {
                        Err(HostError::failed("the host task is already running (it ran itself again)"))
                    }
                    Err(std::sync::TryLockError::Poisoned(_)) => {
                        Err(HostError::failed("the host task panicked in an earlier run"))
                    }
                }),
            );
        }
        for name in inner.callbacks.native.keys() {
            if !inner.callbacks.native_work.contains_key(name) {
                runner.runtime.register_host_task(name, host_task(|_| Ok(())));
            }
        }
    }
    let mut result = runner.runtime.submit(runner.id).and_then(|()| runner.runtime.wait(runner.id));
    // A run from bundles with validation on fails on any message of the layer.
    let messages = runner.runtime.take_diagnostics();
    if result.is_ok() && !messages.is_empty() {
        result = Err(cmdgraph_ir::runtime::RuntimeError {
            runtime: runner.runtime.describe(),
            message: format!("the validation layer reported {} message(s):\n{}", messages.len(), messages.join("\n")),
        });
    }
    // Memory holds what the nodes that ran wrote, even when a node failed.
    let mut inner = ctx.0.borrow_mut();
    for (i, name, dg) in &runner.names {
        let bytes = if *dg {
            runner.runtime.read_device_global(name, runner.device).ok()
        } else {
            runner.runtime.read(name).ok()
        };
        if let (Some(bytes), Some(slot)) = (bytes, inner.store.get_mut(*i)) {
            if bytes.len() == slot.len() {
                *slot = bytes;
            }
        }
    }
    result.map_err(interp_error)
}
