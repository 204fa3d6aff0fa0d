//! The multi-device executor as a [`Runtime`] (`cmdgraph_ir::runtime`), so that a caller
//! driving the interpreter or one executor (the SYCL-like API's runner) drives several
//! devices the same way.

use super::{MultiExecId, MultiExecutor};
use crate::error::ExecError;
use cmdgraph_ir::graph::ArgValue;
use cmdgraph_ir::host::HostFn;
use cmdgraph_ir::module::Module;
use cmdgraph_ir::runtime::{ExecHandle, Runtime, RuntimeError, RuntimeResult};

impl MultiExecutor {
    fn runtime_error(&self, e: ExecError) -> RuntimeError {
        RuntimeError { runtime: Runtime::describe(self), message: e.to_string() }
    }
}

fn id(exec: ExecHandle) -> MultiExecId {
    MultiExecId(exec.0 as usize)
}

impl Runtime for MultiExecutor {
    fn describe(&self) -> String {
        let names: Vec<&str> = self.devices.iter().map(|d| d.context().device_name()).collect();
        format!("{} devices (Vulkan: {})", self.devices.len(), names.join(", "))
    }

    fn module(&self) -> &Module {
        MultiExecutor::module(self)
    }

    fn bind(&mut self, memory: &str, bytes: &[u8]) -> RuntimeResult<()> {
        MultiExecutor::bind(self, memory, bytes).map_err(|e| self.runtime_error(e))
    }

    fn read(&mut self, memory: &str) -> RuntimeResult<Vec<u8>> {
        MultiExecutor::read(self, memory).map_err(|e| self.runtime_error(e))
    }

    fn read_device_global(&mut self, name: &str, device: u32) -> RuntimeResult<Vec<u8>> {
        MultiExecutor::read_device_global(self, name, device).map_err(|e| self.runtime_error(e))
    }

    fn write_device_global(&mut self, name: &str, device: u32, bytes: &[u8]) -> RuntimeResult<()> {
        MultiExecutor::write_device_global(self, name, device, bytes).map_err(|e| self.runtime_error(e))
    }

    fn register_host_task(&mut self, name: &str, mut callback: Box<HostFn>) {
        self.register_callback(name, move |ctx| callback(ctx));
    }

    fn finalize(&mut self, graph: &str) -> RuntimeResult<ExecHandle> {
        let e = MultiExecutor::finalize(self, graph).map_err(|e| self.runtime_error(e))?;
        let index =
            u32::try_from(e.0).map_err(|_| self.runtime_error(ExecError::Invalid("too many executables".into())))?;
        Ok(ExecHandle(index))
    }

    fn submit(&mut self, exec: ExecHandle) -> RuntimeResult<()> {
        self.run(id(exec)).map_err(|e| self.runtime_error(e))
    }

    fn wait(&mut self, exec: ExecHandle) -> RuntimeResult<()> {
        MultiExecutor::wait(self, id(exec)).map_err(|e| self.runtime_error(e))
    }

    fn update_param(&mut self, exec: ExecHandle, param: &str, value: ArgValue) -> RuntimeResult<()> {
        MultiExecutor::update_param(self, id(exec), param, value).map_err(|e| self.runtime_error(e))
    }

    fn set_active(&mut self, exec: ExecHandle, dcg: &str, index: u32) -> RuntimeResult<()> {
        MultiExecutor::set_active(self, id(exec), dcg, index).map_err(|e| self.runtime_error(e))
    }

    fn drop_exec(&mut self, exec: ExecHandle) -> RuntimeResult<()> {
        MultiExecutor::drop_exec(self, id(exec)).map_err(|e| self.runtime_error(e))
    }

    fn submitted_runs(&mut self, exec: ExecHandle) -> RuntimeResult<u64> {
        MultiExecutor::submitted_runs(self, id(exec)).map_err(|e| self.runtime_error(e))
    }

    fn completed_runs(&mut self, exec: ExecHandle) -> RuntimeResult<u64> {
        MultiExecutor::completed_runs(self, id(exec)).map_err(|e| self.runtime_error(e))
    }

    /// `None`: the devices have no common clock, so a run across them has no device duration
    /// (`MultiExecutor::profile` gives each stage graph's).
    fn last_run_device_ns(&mut self, exec: ExecHandle) -> RuntimeResult<Option<u64>> {
        self.exec(id(exec)).map_err(|e| self.runtime_error(e))?;
        Ok(None)
    }

    fn take_diagnostics(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        for (d, ex) in self.devices.iter().enumerate() {
            out.extend(ex.context().take_messages().into_iter().map(|m| format!("device {d}: {m}")));
        }
        out
    }
}
