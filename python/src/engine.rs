//! What an `Executable` runs on: one executor (one device) or a multi-device executor (a
//! graph across devices, docs/multi-device.md), behind the few calls `Executable` makes.

use cmdgraph_executor::{ExecError, ExecId, Executor, MultiExecId, MultiExecutor};
use cmdgraph_ir::graph::ArgValue;

/// One device or several.
pub enum Engine {
    /// `Device.load`.
    One(Box<Executor>),
    /// `cmdgraph.load_on_devices`.
    Many(Box<MultiExecutor>),
}

/// An executable graph of either engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exec {
    /// Of [`Engine::One`].
    One(ExecId),
    /// Of [`Engine::Many`].
    Many(MultiExecId),
}

type R<T> = std::result::Result<T, ExecError>;

fn mismatch() -> ExecError {
    ExecError::Invalid("an executable of another engine".into())
}

impl Engine {
    /// The module it runs.
    pub fn module(&self) -> &cmdgraph_ir::Module {
        match self {
            Engine::One(e) => e.module(),
            Engine::Many(m) => m.module(),
        }
    }

    /// Sets memory `name` where it lives (every device for replicated memory).
    pub fn bind(&mut self, name: &str, bytes: &[u8]) -> R<()> {
        match self {
            Engine::One(e) => e.bind(name, bytes),
            Engine::Many(m) => m.bind(name, bytes),
        }
    }

    /// Memory `name` as the device it lives on holds it.
    pub fn read(&self, name: &str) -> R<Vec<u8>> {
        match self {
            Engine::One(e) => e.read(name),
            Engine::Many(m) => m.read(name),
        }
    }

    /// Reads memory `name` into `out`, its exact size (straight from the staging buffer on
    /// one device).
    pub fn read_into(&self, name: &str, out: &mut [u8]) -> R<()> {
        match self {
            Engine::One(e) => e.read_into(name, out),
            Engine::Many(m) => {
                let bytes = m.read(name)?;
                if bytes.len() != out.len() {
                    return Err(ExecError::Invalid(format!("@{name} has {} bytes, not {}", bytes.len(), out.len())));
                }
                out.copy_from_slice(&bytes);
                Ok(())
            }
        }
    }

    /// Makes graph `graph` runnable.
    pub fn finalize(&mut self, graph: &str) -> R<Exec> {
        match self {
            Engine::One(e) => e.finalize(graph).map(Exec::One),
            Engine::Many(m) => m.finalize(graph).map(Exec::Many),
        }
    }

    /// Sets dynamic parameter `name` (on every device that uses it).
    pub fn update_param(&mut self, id: Exec, name: &str, value: ArgValue) -> R<()> {
        match (self, id) {
            (Engine::One(e), Exec::One(i)) => e.update_param(i, name, value),
            (Engine::Many(m), Exec::Many(i)) => m.update_param(i, name, value),
            _ => Err(mismatch()),
        }
    }

    /// Makes alternative `index` of dynamic command group `name` active.
    pub fn set_active(&mut self, id: Exec, name: &str, index: u32) -> R<()> {
        match (self, id) {
            (Engine::One(e), Exec::One(i)) => e.set_active(i, name, index),
            (Engine::Many(m), Exec::Many(i)) => m.set_active(i, name, index),
            _ => Err(mismatch()),
        }
    }

    /// Runs `id` once (returns once submitted).
    pub fn run(&mut self, id: Exec) -> R<()> {
        match (self, id) {
            (Engine::One(e), Exec::One(i)) => e.run(i),
            (Engine::Many(m), Exec::Many(i)) => m.run(i),
            _ => Err(mismatch()),
        }
    }

    /// Waits for the runs of `id` (on every device).
    pub fn wait(&mut self, id: Exec) -> R<()> {
        match (self, id) {
            (Engine::One(e), Exec::One(i)) => e.wait(i),
            (Engine::Many(m), Exec::Many(i)) => m.wait(i),
            _ => Err(mismatch()),
        }
    }

    /// The validation layer's messages of every device since the last call ("device N: ..."
    /// on several).
    pub fn take_messages(&mut self) -> Vec<String> {
        match self {
            Engine::One(e) => e.context().take_messages(),
            Engine::Many(m) => cmdgraph_ir::runtime::Runtime::take_diagnostics(&mut **m),
        }
    }
}
