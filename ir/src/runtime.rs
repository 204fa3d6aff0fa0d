//! One runtime interface, two implementations: what the SYCL API (and any application)
//! drives to run a module's graphs — memory, finalize, submit, wait, update, read — as the
//! reference interpreter (`cmdgraph-interp`) and the Vulkan executor (`cmdgraph-executor`)
//! both implement it.
//!
//! The trait lives in `cmdgraph-ir` because both implementations build on it and on nothing
//! else of the workspace (the executor never links the interpreter or LLVM). It is
//! object-safe: a caller holds a `Box<dyn Runtime>` and does not know which it drives.
//!
//! Semantics common to both (docs/semantics.md, "Running"): `submit` returns once the run is
//! queued — on the executor before the device has finished, on the interpreter after the
//! run (it has no device) — and runs of one executable happen in submission order, never
//! two at once; `wait` returns when every submitted run of that executable is complete and
//! reports the first failure; an update (`update_param`, `set_active`) applies to runs
//! submitted after it, never to one already submitted; `read` waits for every run that
//! writes the memory.

use crate::graph::ArgValue;
use crate::host::{HostError, HostFn, HostMemory};
use crate::module::Module;
use std::fmt;

/// An executable graph of a [`Runtime`], as the runtime numbered it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExecHandle(pub u32);

/// A runtime's failure: its own error, as text, with which runtime it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeError {
    /// [`Runtime::describe`] of the runtime that failed.
    pub runtime: String,
    /// The runtime's message (it names the graph, node and memory where it knows them).
    pub message: String,
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.runtime, self.message)
    }
}

impl std::error::Error for RuntimeError {}

/// What a runtime method returns.
pub type RuntimeResult<T> = Result<T, RuntimeError>;

/// A runtime that runs the graphs of one module (see the module documentation).
pub trait Runtime {
    /// Which runtime this is: `reference interpreter`, or the Vulkan device's name.
    fn describe(&self) -> String;
    /// The module whose graphs it runs.
    fn module(&self) -> &Module;
    /// Sets the bytes of user memory object `memory` (`usm` or `buffer`, without `@`).
    fn bind(&mut self, memory: &str, bytes: &[u8]) -> RuntimeResult<()>;
    /// The bytes of user memory object `memory`, after every run that writes it.
    fn read(&mut self, memory: &str) -> RuntimeResult<Vec<u8>>;
    /// The bytes of `device_global` `name` on device `device`.
    fn read_device_global(&mut self, name: &str, device: u32) -> RuntimeResult<Vec<u8>>;
    /// Sets the bytes of `device_global` `name` on device `device` (for later runs).
    fn write_device_global(&mut self, name: &str, device: u32, bytes: &[u8]) -> RuntimeResult<()>;
    /// Registers (or replaces) host-task callback `name`.
    fn register_host_task(&mut self, name: &str, callback: Box<HostFn>);
    /// Makes graph `graph` executable.
    fn finalize(&mut self, graph: &str) -> RuntimeResult<ExecHandle>;
    /// Queues one run of `exec` (see the module documentation for when it returns).
    fn submit(&mut self, exec: ExecHandle) -> RuntimeResult<()>;
    /// Waits for every submitted run of `exec`; the first failure among them.
    fn wait(&mut self, exec: ExecHandle) -> RuntimeResult<()>;
    /// Sets dynamic parameter `param` (without `%`) of `exec` for later runs.
    fn update_param(&mut self, exec: ExecHandle, param: &str, value: ArgValue) -> RuntimeResult<()>;
    /// Makes alternative `index` of dynamic command group `dcg` active for later runs.
    fn set_active(&mut self, exec: ExecHandle, dcg: &str, index: u32) -> RuntimeResult<()>;
    /// Releases `exec` (after its runs complete).
    fn drop_exec(&mut self, exec: ExecHandle) -> RuntimeResult<()>;

    /// How many runs of `exec` were submitted (successful [`Runtime::submit`] calls).
    fn submitted_runs(&mut self, exec: ExecHandle) -> RuntimeResult<u64>;
    /// How many of them are complete, without waiting: runs of one executable complete in
    /// submission order, so run `n` (1-based) is complete when this is at least `n`.
    fn completed_runs(&mut self, exec: ExecHandle) -> RuntimeResult<u64>;
    /// The duration of `exec`'s last run, from device timestamps, in nanoseconds (waits for
    /// it); `None` where the runtime has no device clock or the graph was finalized without
    /// `enable_profiling`.
    fn last_run_device_ns(&mut self, exec: ExecHandle) -> RuntimeResult<Option<u64>> {
        let _ = exec;
        Ok(None)
    }

    /// Messages a checking layer reported since the last call (the Vulkan validation layer
    /// on the executor when it is on); none by default. A caller that asked for checking
    /// treats any message as a failure.
    fn take_diagnostics(&mut self) -> Vec<String> {
        Vec::new()
    }
}

/// Adapts a typed callback to the boxed [`HostFn`] that [`Runtime::register_host_task`]
/// takes.
pub fn host_task<F>(callback: F) -> Box<HostFn>
where
    F: FnMut(&mut dyn HostMemory) -> Result<(), HostError> + Send + 'static,
{
    Box::new(callback)
}
