//! The executor as a [`Runtime`] (`cmdgraph_ir::runtime`): the interface the interpreter
//! implements too, so a caller drives either without knowing which.

use crate::error::ExecError;
use crate::exec::{ExecId, Executor};
use cmdgraph_ir::graph::ArgValue;
use cmdgraph_ir::host::HostFn;
use cmdgraph_ir::module::Module;
use cmdgraph_ir::runtime::{ExecHandle, Runtime, RuntimeError, RuntimeResult};

impl Executor {
    fn runtime_error(&self, e: ExecError) -> RuntimeError {
        RuntimeError { runtime: Runtime::describe(self), message: e.to_string() }
    }
}

fn id(exec: ExecHandle) -> ExecId {
    ExecId(exec.0 as usize)
}

impl Runtime for Executor {
    fn describe(&self) -> String {
        format!("{} (Vulkan)", self.context().device_name())
    }

    fn module(&self) -> &Module {
        Executor::module(self)
    }

    fn bind(&mut self, memory: &str, bytes: &[u8]) -> RuntimeResult<()> {
        Executor::bind(self, memory, bytes).map_err(|e| self.runtime_error(e))
    }

    fn read(&mut self, memory: &str) -> RuntimeResult<Vec<u8>> {
        Executor::read(self, memory).map_err(|e| self.runtime_error(e))
    }

    fn read_device_global(&mut self, name: &str, device: u32) -> RuntimeResult<Vec<u8>> {
        Executor::read_device_global(self, name, device).map_err(|e| self.runtime_error(e))
    }

    fn write_device_global(&mut self, name: &str, device: u32, bytes: &[u8]) -> RuntimeResult<()> {
        Executor::write_device_global(self, name, device, bytes).map_err(|e| self.runtime_error(e))
    }

    fn register_host_task(&mut self, name: &str, mut callback: Box<HostFn>) {
        self.register_callback(name, move |ctx| callback(ctx));
    }

    fn finalize(&mut self, graph: &str) -> RuntimeResult<ExecHandle> {
        let e = Executor::finalize(self, graph).map_err(|e| self.runtime_error(e))?;
        let index =
            u32::try_from(e.0).map_err(|_| self.runtime_error(ExecError::Invalid("too many executables".into())))?;
        Ok(ExecHandle(index))
    }

    fn submit(&mut self, exec: ExecHandle) -> RuntimeResult<()> {
        self.run(id(exec)).map_err(|e| self.runtime_error(e))
    }

    fn wait(&mut self, exec: ExecHandle) -> RuntimeResult<()> {
        Executor::wait(self, id(exec)).map_err(|e| self.runtime_error(e))
    }

    fn submitted_runs(&mut self, exec: ExecHandle) -> RuntimeResult<u64> {
        Executor::submitted_runs(self, id(exec)).map_err(|e| self.runtime_error(e))
    }

    fn completed_runs(&mut self, exec: ExecHandle) -> RuntimeResult<u64> {
        Executor::completed_runs(self, id(exec)).map_err(|e| self.runtime_error(e))
    }

    fn last_run_device_ns(&mut self, exec: ExecHandle) -> RuntimeResult<Option<u64>> {
        if !self.profiled(id(exec)).map_err(|e| self.runtime_error(e))? {
            return Ok(None);
        }
        let p = self.profile(id(exec)).map_err(|e| self.runtime_error(e))?;
        Ok(Some(p.end_ns.saturating_sub(p.start_ns)))
    }

    fn update_param(&mut self, exec: ExecHandle, param: &str, value: ArgValue) -> RuntimeResult<()> {
        Executor::update_param(self, id(exec), param, value).map_err(|e| self.runtime_error(e))
    }

    fn set_active(&mut self, exec: ExecHandle, dcg: &str, index: u32) -> RuntimeResult<()> {
        Executor::set_active(self, id(exec), dcg, index).map_err(|e| self.runtime_error(e))
    }

    fn drop_exec(&mut self, exec: ExecHandle) -> RuntimeResult<()> {
        Executor::drop_exec(self, id(exec)).map_err(|e| self.runtime_error(e))
    }

    fn take_diagnostics(&mut self) -> Vec<String> {
        self.context().take_messages()
    }
}
