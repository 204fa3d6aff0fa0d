//! The interpreter as a [`Runtime`]: `submit` runs the graph at once (there is no device to
//! queue it on) and keeps a failure for `wait`, so a caller sees the same order of events
//! as on the executor: submission errors from `submit`, run errors from `wait`.

use super::{ExecId, InterpError, Interpreter};
use cmdgraph_ir::graph::ArgValue;
use cmdgraph_ir::host::HostFn;
use cmdgraph_ir::module::Module;
use cmdgraph_ir::runtime::{ExecHandle, Runtime, RuntimeError, RuntimeResult};

const NAME: &str = "reference interpreter";

fn err(e: InterpError) -> RuntimeError {
    RuntimeError { runtime: NAME.to_string(), message: e.to_string() }
}

impl Runtime for Interpreter {
    fn describe(&self) -> String {
        NAME.to_string()
    }

    fn module(&self) -> &Module {
        Interpreter::module(self)
    }

    fn bind(&mut self, memory: &str, bytes: &[u8]) -> RuntimeResult<()> {
        Interpreter::bind(self, memory, bytes).map_err(err)
    }

    fn read(&mut self, memory: &str) -> RuntimeResult<Vec<u8>> {
        Interpreter::read(self, memory).map(<[u8]>::to_vec).map_err(err)
    }

    fn read_device_global(&mut self, name: &str, device: u32) -> RuntimeResult<Vec<u8>> {
        Interpreter::read_device_global(self, name, device).map_err(err)
    }

    fn write_device_global(&mut self, name: &str, device: u32, bytes: &[u8]) -> RuntimeResult<()> {
        Interpreter::write_device_global(self, name, device, bytes).map_err(err)
    }

    fn register_host_task(&mut self, name: &str, mut callback: Box<HostFn>) {
        self.register_callback(name, move |ctx| callback(ctx));
    }

    fn finalize(&mut self, graph: &str) -> RuntimeResult<ExecHandle> {
        Interpreter::finalize(self, graph).map(|e| ExecHandle(e.0)).map_err(err)
    }

    fn submit(&mut self, exec: ExecHandle) -> RuntimeResult<()> {
        let id = ExecId(exec.0);
        if !self.execs.contains_key(&id) {
            return Err(err(InterpError::api(format!("no executable graph {}", exec.0))));
        }
        *self.runs.entry(id).or_insert(0) += 1;
        if let Err(e) = self.run(id) {
            // The first failure since the last `wait`, as a device reports it.
            self.failed.entry(id).or_insert(e);
        }
        Ok(())
    }

    fn submitted_runs(&mut self, exec: ExecHandle) -> RuntimeResult<u64> {
        Ok(self.runs.get(&ExecId(exec.0)).copied().unwrap_or(0))
    }

    fn completed_runs(&mut self, exec: ExecHandle) -> RuntimeResult<u64> {
        // Every run is complete when `submit` returns.
        self.submitted_runs(exec)
    }

    fn wait(&mut self, exec: ExecHandle) -> RuntimeResult<()> {
        self.failed.remove(&ExecId(exec.0)).map_or(Ok(()), |e| Err(err(e)))
    }

    fn update_param(&mut self, exec: ExecHandle, param: &str, value: ArgValue) -> RuntimeResult<()> {
        Interpreter::update_param(self, ExecId(exec.0), param, value).map_err(err)
    }

    fn set_active(&mut self, exec: ExecHandle, dcg: &str, index: u32) -> RuntimeResult<()> {
        Interpreter::set_active(self, ExecId(exec.0), dcg, index).map_err(err)
    }

    fn drop_exec(&mut self, exec: ExecHandle) -> RuntimeResult<()> {
        self.failed.remove(&ExecId(exec.0));
        self.runs.remove(&ExecId(exec.0));
        Interpreter::drop_exec(self, ExecId(exec.0)).map_err(err)
    }
}
