//! Communication nodes from Python (docs/mpi.md, docs/python.md "Ranks"):
//! `Executable.set_communicator(comm)` takes this process's rank as a Python object, typically
//! over mpi4py, and the executor's host-task thread calls it (with the GIL) for `send`,
//! `recv` and `allreduce` nodes. The package links no MPI.

use crate::host::guarded;
use cmdgraph_ir::comm::{check_peer, reduce_in_rank_order, CommError, Communicator, ReduceOp};
use cmdgraph_ir::types::ScalarType;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// A rank whose transport is a Python object: `rank` and `size` attributes, `send(to, tag,
/// data)`, `recv(source, tag, nbytes) -> bytes` and `allgather(data) -> list of bytes` (rank
/// order).
pub struct PyCommunicator {
    obj: Py<PyAny>,
    rank: u32,
    size: u32,
}

impl PyCommunicator {
    /// Reads `rank` and `size` from `obj` and checks its methods exist.
    pub fn new(obj: &Bound<'_, PyAny>) -> PyResult<PyCommunicator> {
        let rank: u32 = obj.getattr("rank")?.extract()?;
        let size: u32 = obj.getattr("size")?.extract()?;
        if rank >= size {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "communicator: rank {rank} is not below size {size}"
            )));
        }
        for m in ["send", "recv", "allgather"] {
            if !obj.getattr(m).is_ok_and(|f| f.is_callable()) {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "communicator: no `{m}` method (it needs rank, size, send, recv and allgather)"
                )));
            }
        }
        Ok(PyCommunicator { obj: obj.clone().unbind(), rank, size })
    }

    /// Calls `f` with the GIL; a Python exception or a panic is the transport's error.
    fn call<T>(
        &self,
        what: &str,
        f: impl FnOnce(Python<'_>, &Bound<'_, PyAny>) -> PyResult<T>,
    ) -> Result<T, CommError> {
        let r = guarded(what, || Python::attach(|py| f(py, self.obj.bind(py)).map_err(|e| e.to_string())));
        match r {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(CommError::Transport(format!("the communicator's {what} raised {e}"))),
            Err(e) => Err(CommError::Transport(e.to_string())),
        }
    }

    fn peer(&self, peer: u32) -> Result<(), CommError> {
        check_peer(peer, self.rank, self.size)
    }
}

impl Communicator for PyCommunicator {
    fn rank(&self) -> u32 {
        self.rank
    }

    fn size(&self) -> u32 {
        self.size
    }

    fn send(&mut self, _node: &str, to: u32, tag: u32, bytes: &[u8]) -> Result<(), CommError> {
        self.peer(to)?;
        self.call("send", |py, c| c.call_method1("send", (to, tag, PyBytes::new(py, bytes))).map(|_| ()))
    }

    fn recv(&mut self, _node: &str, from: u32, tag: u32, out: &mut [u8]) -> Result<(), CommError> {
        self.peer(from)?;
        let n = out.len();
        let got: Vec<u8> = self.call("recv", |_, c| c.call_method1("recv", (from, tag, n))?.extract())?;
        if got.len() != n {
            return Err(CommError::SizeMismatch {
                peer: from,
                tag,
                sender: None,
                sent: got.len() as u64,
                expected: n as u64,
            });
        }
        out.copy_from_slice(&got);
        Ok(())
    }

    fn allreduce(&mut self, _node: &str, op: ReduceOp, ty: ScalarType, data: &mut [u8]) -> Result<(), CommError> {
        let parts: Vec<Vec<u8>> =
            self.call("allgather", |py, c| c.call_method1("allgather", (PyBytes::new(py, data),))?.extract())?;
        if parts.len() != self.size as usize || parts.iter().any(|p| p.len() != data.len()) {
            return Err(CommError::ReduceMismatch {
                detail: format!(
                    "allgather returned {} parts of {:?} bytes; expected {} of {}",
                    parts.len(),
                    parts.iter().map(Vec::len).collect::<Vec<_>>(),
                    self.size,
                    data.len()
                ),
            });
        }
        reduce_in_rank_order(op, ty, parts.iter().map(Vec::as_slice), data);
        Ok(())
    }
}
