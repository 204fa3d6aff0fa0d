//! Submissions to executing queues: executable graphs, and every other command group run
//! as a one-node graph (both through `crate::runner`), plus the callbacks they call. Host
//! tasks are Rust callbacks registered by name; a native command's callback runs at every
//! finalize (decision A8) and its optional "work" callback when the node executes.

use crate::error::{Result, SyclError};
use crate::exec::ExecutableGraph;
use crate::global::DeviceGlobal;
use crate::handler::{Command, Handler, Mode};
use crate::platform::Context;
use crate::queue::{Event, EventKind, Queue, Submission};
use crate::runner::{now_ns, settle, submit_graph, unsettled, RunRecord};
use cmdgraph_ir::host::{HostError, HostFn, HostMemory};
use cmdgraph_ir::{HostAccess, Type};
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

impl Callbacks {
    /// Every callback a node may run: host tasks and native commands' work.
    pub(crate) fn all_host(&self) -> Vec<(String, HostTaskFn)> {
        self.host.iter().chain(&self.native_work).map(|(n, f)| (n.clone(), f.clone())).collect()
    }

    /// Native commands registered without work (their nodes do nothing when they run).
    pub(crate) fn native_without_work(&self) -> Vec<String> {
        self.native.keys().filter(|n| !self.native_work.contains_key(*n)).cloned().collect()
    }
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
        KernelBody::Spirv { .. } | KernelBody::Shader { .. } => false,
    });
    used
}

/// Why a command of `queue` cannot be profiled, if it cannot (rows 61, 0).
fn no_profile(queue: &Queue, graph: Option<&ExecutableGraph>) -> Option<(u32, String)> {
    if graph.is_some_and(|g| !g.props().enable_profiling) {
        return Some((
            61,
            "get_profiling_info: the executable graph was finalized without property::graph::enable_profiling".into(),
        ));
    }
    if !queue.props().enable_profiling {
        return Some((0, "get_profiling_info: the queue was created without property::queue::enable_profiling".into()));
    }
    None
}

/// Runs a command group submitted to an executing queue (rows 41, 43, 51). It returns once
/// the command is submitted: on a device, before it completes (its event tells).
pub(crate) fn run_eager(queue: &Queue, mut h: Handler) -> Result<Event> {
    if let Some(e) = h.error.take() {
        return Err(e);
    }
    let submit_ns = now_ns();
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
    // A context runs its submissions in submission order (crate::runner), so a dependency
    // on an event of the same context holds already; one of another context is waited for.
    for dep in &h.deps {
        if dep.context().is_some_and(|c| !c.same(&ctx)) {
            dep.wait()?;
        }
    }
    let mut refuse = no_profile(queue, None);
    let (run, after): (Option<Rc<RunRecord>>, Vec<Rc<RunRecord>>) = match h.command.take() {
        None => (None, Vec::new()),
        // Runs complete in submission order: the barrier completes with everything before it.
        Some(Command::Barrier { .. }) => (None, unsettled(&ctx)),
        Some(Command::Native { callback, .. }) => {
            settle(&ctx);
            call_native(&ctx, &callback, false)?;
            (None, Vec::new())
        }
        Some(Command::Subgraph { exec, .. }) => {
            refuse = no_profile(queue, Some(&exec));
            (Some(submit_graph(&exec)?), Vec::new())
        }
        Some(Command::DeviceGlobalCopy { global, offset, data }) => {
            let size = global.elem().size().max(1);
            check_device_global_copy(&global, true, offset / size, data.len() as u64 / size, global.elem())?;
            global.write_at(offset, &data)?;
            (None, Vec::new())
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
            (Some(run_one(queue, h)?), Vec::new())
        }
    };
    Ok(Event::submitted(Submission { run, after, submit_ns, done_ns: now_ns(), no_profile: refuse }))
}

/// An eager kernel, memory command or host task: a one-node graph, submitted once (with
/// device timestamps when the queue profiles).
fn run_one(queue: &Queue, mut h: Handler) -> Result<Rc<RunRecord>> {
    let g = crate::ModifiableGraph::eager(queue)?;
    h.deps.clear();
    h.mode = Mode::Internal;
    h.graph = Some(g.inner().clone());
    crate::graph::GraphInner::add_command_group(g.inner(), h, &Default::default())?;
    let props = crate::FinalizeProps { enable_profiling: queue.props().enable_profiling, ..Default::default() };
    let exec = g.finalize(props)?;
    submit_graph(&exec)
}
