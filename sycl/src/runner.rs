//! Runs of executable graphs through the runtime interface (`cmdgraph_ir::runtime::Runtime`,
//! docs/runtime.md), and where the context's memory lives while they are in flight
//! (docs/semantics.md, "Running asynchronously").
//!
//! The context keeps the contents of every USM allocation, buffer and `device_global` on the
//! host. A run makes the executable graph's runtime *resident*: its memory is bound from the
//! host copy (unless that runtime already holds the current contents), the run is submitted
//! and the call returns. On a Vulkan device that is before the device has finished; the
//! interpreter has no device, so its runs are complete when `submit` returns and are
//! settled at once. Anything that needs the host copy (a host read or write of memory, a run
//! of another executable, a wait) *settles* first: it waits for the resident runtime's runs,
//! copies its memory back and records each run's outcome in its event.
//!
//! The runtime is kept with the executable graph, so `zero_init` graph-owned allocations keep
//! their contents between executions (decision A9). An update of the executable graph that
//! only changes dynamic parameter values or active command-group alternatives reaches the
//! runtime through its update calls, for runs submitted after it (a run in flight keeps the
//! values it was submitted with); any other change builds a new runtime, after settling.

use crate::error::{Result, SyclError};
use crate::exec::ExecutableGraph;
use crate::platform::Context;
use cmdgraph_interp::Interpreter;
use cmdgraph_ir::host::{HostError, HostMemory};
use cmdgraph_ir::runtime::{host_task, ExecHandle, Runtime, RuntimeError};
use cmdgraph_ir::{Graph, Handle, LitValue, Literal, MemoryKind, Module, ScalarType, Type};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// The memory residency and unsettled runs of one context.
#[derive(Default)]
pub(crate) struct InFlight {
    /// The executable graph whose runtime holds the current contents of the context's
    /// memory (its runs may still be writing it); `None`: the host copy is current. Weak:
    /// an executable graph holds its context, so a strong reference here would keep both
    /// alive forever; one dropped while resident copies its memory back first ([`release`]).
    resident: Option<std::rc::Weak<crate::exec::ExecShared>>,
    /// Runs submitted to it and not settled yet, oldest first.
    runs: Vec<Rc<RunRecord>>,
}

/// One submission of an executable graph to a runtime.
pub(crate) struct RunRecord {
    exec: ExecutableGraph,
    /// The run's number in its runtime (1-based, [`Runtime::submitted_runs`] after it).
    run: u64,
    /// Host time of the submission (ns since the Unix epoch).
    pub(crate) submit_ns: u64,
    /// Set when the run is settled.
    outcome: RefCell<Option<RunOutcome>>,
    /// Device-measured duration, read before a later run of the same graph overwrote it.
    device_ns: Cell<Option<u64>>,
}

/// What a settled run did.
#[derive(Clone)]
pub(crate) struct RunOutcome {
    /// The failure reported for it (a failure of any run settled together with it).
    pub(crate) error: Option<String>,
    /// Host time at which the run was known complete.
    pub(crate) end_ns: u64,
    /// Its duration from device timestamps, where the runtime measured one.
    pub(crate) device_ns: Option<u64>,
}

impl RunRecord {
    /// The context the run's memory belongs to.
    pub(crate) fn context(&self) -> Context {
        self.exec.0.ctx.clone()
    }

    /// Whether the run is complete, without waiting.
    pub(crate) fn is_complete(&self) -> bool {
        if self.outcome.borrow().is_some() {
            return true;
        }
        let Ok(mut slot) = self.exec.0.runner.try_borrow_mut() else { return false };
        slot.as_mut().is_some_and(|r| r.runtime.completed_runs(r.id).is_ok_and(|n| n >= self.run))
    }

    /// Waits for the run (completing the context's runs, [`complete`]) and returns its
    /// outcome.
    pub(crate) fn wait(&self) -> RunOutcome {
        if self.outcome.borrow().is_none() {
            complete(&self.exec.0.ctx);
        }
        self.outcome.borrow().clone().unwrap_or_else(|| RunOutcome {
            error: Some("the run could not be waited for: its graph is running a host task that waits for it".into()),
            end_ns: now_ns(),
            device_ns: None,
        })
    }
}

/// Host time in nanoseconds since the Unix epoch.
pub(crate) fn now_ns() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

/// The runtime state of one executable graph.
pub(crate) struct Runner {
    runtime: Box<dyn Runtime>,
    id: ExecHandle,
    /// The executable graph's update version this runtime runs.
    version: u64,
    /// The snapshot module at that version.
    applied: Module,
    graph: Handle<Graph>,
    /// Runs are asynchronous (a device): settled when needed, not at once.
    asynchronous: bool,
    /// (memory index, name, is a device_global) of every module memory object.
    names: Vec<(usize, String, bool)>,
}

impl Runner {
    fn build(exec: &ExecutableGraph) -> Result<Runner> {
        let (mut module, graph, version): (Module, Handle<Graph>, u64) = {
            let st = exec.0.state.borrow();
            (st.module.clone(), st.graph, st.version)
        };
        let applied = module.clone();
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
        let placement = crate::bundles::placement(exec)?;
        let asynchronous = placement.is_some();
        let spans = cmdgraph_ir::placement::spans_devices(&module, &module.graphs[graph]);
        let mut runtime: Box<dyn Runtime> = match placement {
            Some((source, _)) if spans => crate::bundles::from_bundle_on_devices(exec, &source)?,
            Some((source, device)) => crate::bundles::from_bundle(exec, &source, device)?,
            None => Box::new(Interpreter::new(&module).map_err(run_error)?),
        };
        // A bundle is found by a key that leaves the graph's name out (two graphs built the
        // same way share it), so its executable graph is its module's last, whatever its
        // name, before the stage graphs `split-devices` appends.
        let m = runtime.module();
        let last = m.graphs.iter().rev().find(|(_, g)| !cmdgraph_ir::placement::is_stage_graph(m, &g.name));
        let name = match last {
            Some((_, g)) if asynchronous => g.name.clone(),
            _ => module.graphs[graph].name.clone(),
        };
        let id = runtime.finalize(&name).map_err(run_error)?;
        let names = module
            .memories
            .iter()
            .map(|(h, m)| (h.index(), m.name.clone(), matches!(m.kind, MemoryKind::DeviceGlobal(_))))
            .collect();
        Ok(Runner { runtime, id, version, applied, graph, asynchronous, names })
    }

    /// [`Runtime::describe`] of the runtime this state runs on.
    pub(crate) fn describe(&self) -> String {
        self.runtime.describe()
    }

    /// Brings the runtime to the executable graph's current version through its update
    /// calls, when only dynamic parameter values and active alternatives changed; false when
    /// the change needs a new runtime.
    fn update_in_place(&mut self, exec: &ExecutableGraph) -> bool {
        let st = exec.0.state.borrow();
        if st.version == self.version {
            return true;
        }
        let (old, new) = (&self.applied.graphs[self.graph], &st.module.graphs[st.graph]);
        // The same module once parameter values and active indices are taken from the old one.
        let mut neutral = st.module.clone();
        {
            let g = &mut neutral.graphs[st.graph];
            for (h, p) in g.dyn_params.iter_mut() {
                if let Some(o) = old.dyn_params.try_get(h) {
                    p.value = o.value.clone();
                }
            }
            for (h, d) in g.dcgs.iter_mut() {
                if let Some(o) = old.dcgs.try_get(h) {
                    d.active = o.active;
                }
            }
        }
        if neutral != self.applied {
            return false;
        }
        for (h, p) in new.dyn_params.iter() {
            if old.dyn_params.try_get(h).is_some_and(|o| o.value != p.value)
                && self.runtime.update_param(self.id, &p.name, p.value.clone()).is_err()
            {
                return false;
            }
        }
        for (h, d) in new.dcgs.iter() {
            if old.dcgs.try_get(h).is_some_and(|o| o.active != d.active)
                && self.runtime.set_active(self.id, &d.name, d.active).is_err()
            {
                return false;
            }
        }
        self.applied = st.module.clone();
        self.version = st.version;
        true
    }

    /// Waits for every submitted run; the first failure, the validation layer's messages
    /// included when it is on.
    fn finish(&mut self) -> std::result::Result<(), RuntimeError> {
        let mut result = self.runtime.wait(self.id);
        let messages = self.runtime.take_diagnostics();
        if result.is_ok() && !messages.is_empty() {
            result = Err(RuntimeError {
                runtime: self.runtime.describe(),
                message: format!(
                    "the validation layer reported {} message(s):\n{}",
                    messages.len(),
                    messages.join("\n")
                ),
            });
        }
        result
    }

    /// Copies the runtime's memory into the context's host copy. Memory holds what the nodes
    /// that ran wrote, even when a node failed.
    fn copy_back(&mut self, ctx: &Context) {
        let mut inner = ctx.0.borrow_mut();
        let device = self.applied.graphs[self.graph].device;
        for (i, name, dg) in &self.names {
            let bytes =
                if *dg { self.runtime.read_device_global(name, device).ok() } else { self.runtime.read(name).ok() };
            if let (Some(bytes), Some(slot)) = (bytes, inner.store.get_mut(*i)) {
                if bytes.len() == slot.len() {
                    *slot = bytes;
                }
            }
        }
    }

    /// Binds the context's host copy of every memory object and registers its callbacks.
    fn bind_all(&mut self, ctx: &Context) -> Result<()> {
        let inner = ctx.0.borrow();
        let device = self.applied.graphs[self.graph].device;
        for (i, name, dg) in &self.names {
            match (dg, inner.store.get(*i)) {
                (false, Some(bytes)) => self.runtime.bind(name, bytes).map_err(run_error)?,
                // The context's value is the instance every graph and copy shares; a runtime
                // made from a bundle starts from the bundle's declaration otherwise.
                (true, Some(bytes)) if !bytes.is_empty() => {
                    self.runtime.write_device_global(name, device, bytes).map_err(run_error)?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Registers the context's host-task and native-work callbacks (they may have been
    /// registered or replaced since the last run).
    fn register_callbacks(&mut self, ctx: &Context) {
        let inner = ctx.0.borrow();
        let callbacks = inner.callbacks.all_host();
        for (name, f) in callbacks {
            // `try_lock`: a host task that runs itself again (through a graph it submits) gets
            // an error instead of a deadlock.
            self.runtime.register_host_task(
                &name,
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
        for name in inner.callbacks.native_without_work() {
            self.runtime.register_host_task(&name, host_task(|_| Ok(())));
        }
        if let Some(comm) = &inner.communicator {
            for (name, f) in cmdgraph_ir::comm::callbacks(self.runtime.module(), comm) {
                self.runtime.register_host_task(&name, f);
            }
        }
    }
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
            ScalarType::I8 => LitValue::Int(bits as u8 as i8 as i128),
            ScalarType::U8 => LitValue::Int(bits as u8 as i128),
            ScalarType::I16 => LitValue::Int(bits as u16 as i16 as i128),
            ScalarType::U16 => LitValue::Int(bits as u16 as i128),
            ScalarType::I32 => LitValue::Int(bits as u32 as i32 as i128),
            ScalarType::U32 => LitValue::Int(bits as u32 as i128),
            ScalarType::I64 => LitValue::Int(bits as i64 as i128),
            ScalarType::U64 => LitValue::Int(bits as i128),
            ScalarType::F16 => LitValue::Float(cmdgraph_ir::data::half::f16::from_bits(bits as u16).to_f64()),
            ScalarType::F32 => LitValue::Float(f32::from_bits(bits as u32) as f64),
            ScalarType::F64 => LitValue::Float(f64::from_bits(bits)),
        };
        Literal { value, ty: Some(elem.scalar) }
    };
    Some(bytes.chunks_exact(size).map(lit).collect())
}

pub(crate) fn run_error(e: impl std::fmt::Display) -> SyclError {
    SyclError::invalid(0, format!("execution failed: {e}"))
}

/// Waits for the resident runtime's runs, copies its memory to the host and records each
/// run's outcome. Called before anything that needs the host copy. A settle from inside a
/// run of the resident graph (a host task on the interpreter) cannot wait for that run and
/// leaves it resident.
pub(crate) fn settle(ctx: &Context) {
    finish_runs(ctx, true);
}

/// Waits for the resident runtime's runs and records each run's outcome, leaving the memory
/// where it is: an event's or a queue's wait. The host copy is brought back only when the
/// host reads or writes memory, or another graph runs ([`settle`]); a wait followed by the
/// next run of the same graph copies nothing (issue 32: the wait of a run at the executor's
/// cost).
pub(crate) fn complete(ctx: &Context) {
    finish_runs(ctx, false);
}

fn finish_runs(ctx: &Context, copy_back: bool) {
    let Some(exec) = resident(ctx) else { return };
    let Ok(mut slot) = exec.0.runner.try_borrow_mut() else { return };
    let runs = {
        let mut inner = ctx.0.borrow_mut();
        if copy_back {
            inner.in_flight.resident = None;
        }
        std::mem::take(&mut inner.in_flight.runs)
    };
    let Some(runner) = slot.as_mut() else { return };
    if runs.is_empty() && !copy_back {
        return;
    }
    let result = runner.finish();
    let last_ns =
        if exec.props().enable_profiling { runner.runtime.last_run_device_ns(runner.id).ok().flatten() } else { None };
    if copy_back {
        runner.copy_back(ctx);
    }
    let end_ns = now_ns();
    let error = result.err().map(|e| e.to_string());
    let count = runs.len();
    for (i, run) in runs.iter().enumerate() {
        let device_ns = if i + 1 == count { last_ns.or(run.device_ns.get()) } else { run.device_ns.get() };
        *run.outcome.borrow_mut() = Some(RunOutcome { error: error.clone(), end_ns, device_ns });
    }
}

/// The resident executable graph, if it is still alive.
fn resident(ctx: &Context) -> Option<ExecutableGraph> {
    ctx.0.borrow().in_flight.resident.as_ref().and_then(|w| w.upgrade()).map(ExecutableGraph)
}

/// An executable graph being dropped while its runtime holds the context's memory: waits for
/// its runs and copies the memory back, so the host copy is current again. (Its unsettled
/// runs hold it, so there are none when it drops.) A context borrowed at that moment keeps
/// its host copy as it was.
pub(crate) fn release(exec: &mut crate::exec::ExecShared) {
    let ctx = exec.ctx.clone();
    let this: *const crate::exec::ExecShared = exec;
    {
        let Ok(mut inner) = ctx.0.try_borrow_mut() else { return };
        if !inner.in_flight.resident.as_ref().is_some_and(|w| std::ptr::eq(w.as_ptr(), this)) {
            return;
        }
        inner.in_flight.resident = None;
    }
    if let Some(runner) = exec.runner.get_mut().as_mut() {
        let _ = runner.finish();
        if ctx.0.try_borrow_mut().is_ok() {
            runner.copy_back(&ctx);
        }
    }
}

/// Submits one run of an executable graph on the context's memory; returns its record.
/// On the interpreter the run is settled before this returns, and its failure is this
/// call's error; on a device the run's failure is reported by its event's wait.
pub(crate) fn submit_graph(exec: &ExecutableGraph) -> Result<Rc<RunRecord>> {
    let ctx = exec.0.ctx.clone();
    let resident_here = {
        let inner = ctx.0.borrow();
        inner.in_flight.resident.as_ref().map(|r| std::ptr::eq(r.as_ptr(), Rc::as_ptr(&exec.0)))
    };
    // Memory held by another graph's runtime comes back to the host first.
    if resident_here == Some(false) {
        settle(&ctx);
    }
    let mut slot = exec.0.runner.try_borrow_mut().map_err(|_| {
        SyclError::invalid(0, "the executable graph is already running (a host task submitted it again)")
    })?;
    let fresh = slot.as_mut().is_some_and(|r| r.update_in_place(exec));
    if !fresh {
        if slot.is_some() && resident_here == Some(true) {
            drop(slot);
            settle(&ctx);
            slot =
                exec.0.runner.try_borrow_mut().map_err(|_| SyclError::invalid(0, "the executable graph is running"))?;
        }
        *slot = Some(Runner::build(exec)?);
    }
    let runner = slot.as_mut().ok_or_else(|| SyclError::invalid(0, "no runner"))?;
    let resident =
        ctx.0.borrow().in_flight.resident.as_ref().is_some_and(|r| std::ptr::eq(r.as_ptr(), Rc::as_ptr(&exec.0)));
    if !resident {
        runner.bind_all(&ctx)?;
    }
    runner.register_callbacks(&ctx);
    // A profiled graph's timestamps belong to its last run: keep the previous run's duration
    // before this run overwrites them.
    if exec.props().enable_profiling && runner.asynchronous {
        let previous = ctx.0.borrow().in_flight.runs.last().cloned();
        if let Some(prev) = previous.filter(|p| Rc::ptr_eq(&p.exec.0, &exec.0)) {
            prev.device_ns.set(runner.runtime.last_run_device_ns(runner.id).ok().flatten());
        }
    }
    let submit_ns = now_ns();
    runner.runtime.submit(runner.id).map_err(run_error)?;
    let run = runner.runtime.submitted_runs(runner.id).map_err(run_error)?;
    let asynchronous = runner.asynchronous;
    drop(slot);
    let record = Rc::new(RunRecord {
        exec: exec.clone(),
        run,
        submit_ns,
        outcome: RefCell::new(None),
        device_ns: Cell::new(None),
    });
    {
        let mut inner = ctx.0.borrow_mut();
        inner.in_flight.resident = Some(Rc::downgrade(&exec.0));
        inner.in_flight.runs.push(record.clone());
    }
    if !asynchronous {
        settle(&ctx);
        if let Some(RunOutcome { error: Some(e), .. }) = record.outcome.borrow().clone() {
            return Err(SyclError::invalid(0, format!("execution failed: {e}")));
        }
    }
    Ok(record)
}

/// The unsettled runs of the context (what a barrier submitted now waits for).
pub(crate) fn unsettled(ctx: &Context) -> Vec<Rc<RunRecord>> {
    ctx.0.borrow().in_flight.runs.clone()
}
