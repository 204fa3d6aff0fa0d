//! Host tasks written in Python for modules run from IR or bundles (`Module.interpret` and
//! `Device.load` take `host_tasks={"callback": f}`): the callback takes the GIL, reads the
//! memory its node declares, calls `f` with a dict of NumPy arrays (copies, keyed by the
//! memory's name without its sigil; `read` ones read-only, write-only ones zeroed) and
//! writes the writable ones back. An exception fails the run, naming the node.

use crate::arrays::Layout;
use cmdgraph_ir::host::{HostError, HostMemory};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use std::collections::BTreeMap;

/// A host-task callback for a module whose memory objects are `layouts`.
pub fn callback(
    func: Py<PyAny>,
    layouts: &[Layout],
) -> impl FnMut(&mut dyn HostMemory) -> Result<(), HostError> + Send + 'static {
    let dtypes: BTreeMap<String, &'static str> = layouts.iter().map(|l| (l.name.clone(), l.dtype)).collect();
    move |mem: &mut dyn HostMemory| {
        let node = mem.node().to_string();
        let mut items = Vec::new();
        for name in mem.declared() {
            let mode = mem.mode(&name).unwrap_or(cmdgraph_ir::Access::Read);
            let bare = name.trim_start_matches(['@', '%']).to_string();
            // Graph-owned allocations (`%t`) are bytes: their element type is not a memory object's.
            let dtype = dtypes.get(&bare).copied().unwrap_or("|u1");
            let size = mem.size(&name)?;
            let bytes = if mode.reads() { Some(mem.read(&name)?) } else { None };
            items.push((name, bare, bytes, size, dtype, mode));
        }
        let outputs = guarded(&node, || {
            Python::attach(|py| -> PyResult<Vec<Option<Vec<u8>>>> {
                let list = PyList::empty(py);
                for (_, bare, bytes, size, dtype, mode) in &items {
                    let data = match bytes {
                        Some(b) => PyBytes::new(py, b).into_any(),
                        None => py.None().into_bound(py),
                    };
                    list.append((bare.as_str(), data, *size, *dtype, mode.keyword()))?;
                }
                let out = py.import("cmdgraph._host")?.getattr("call_named")?.call1((func.bind(py), list))?;
                out.try_iter()?
                    .map(|o| {
                        let o = o?;
                        if o.is_none() {
                            Ok(None)
                        } else {
                            Ok(Some(o.cast::<PyBytes>()?.as_bytes().to_vec()))
                        }
                    })
                    .collect()
            })
        })?
        .map_err(|e| HostError::failed(describe(&node, &e)))?;
        for ((name, ..), out) in items.iter().zip(outputs) {
            if let Some(bytes) = out {
                mem.write(name, 0, &bytes)?;
            }
        }
        Ok(())
    }
}

/// Runs `f` (the call into Python), turning a panic into the host task's failure: PyO3
/// resumes a Rust panic that reached Python (a `PanicException`, e.g. an object of
/// `cmdgraph.sycl` used from the worker thread) when it fetches the exception, and a panic
/// must not unwind into the runtime that runs the node.
pub fn guarded<T>(node: &str, f: impl FnOnce() -> T) -> Result<T, HostError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        let what = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic".into());
        HostError::failed(format!("host task `{node}` panicked: {what}"))
    })
}

/// `host task `node` raised Type: message`; the exception is kept (the last few) so that
/// the error the run's failure raises can name it as its `__cause__` ([`chain`]).
pub fn describe(node: &str, e: &PyErr) -> String {
    Python::attach(|py| {
        let ty = e.get_type(py).name().map(|n| n.to_string()).unwrap_or_else(|_| "Exception".into());
        let text = format!("host task `{node}` raised {ty}: {}", e.value(py));
        if let Ok(mut kept) = RAISED.lock() {
            if kept.len() >= 16 {
                kept.remove(0);
            }
            kept.push((text.clone(), e.clone_ref(py)));
        }
        text
    })
}

/// Exceptions raised by host tasks, with the text their failure carries.
static RAISED: std::sync::Mutex<Vec<(String, PyErr)>> = std::sync::Mutex::new(Vec::new());

/// Sets `error.__cause__` to the host task's exception whose text `message` contains.
pub fn chain(py: Python<'_>, error: &PyErr, message: &str) {
    let found = match RAISED.lock() {
        Ok(mut kept) => kept.iter().position(|(t, _)| message.contains(t.as_str())).map(|i| kept.remove(i).1),
        Err(_) => None,
    };
    if let Some(cause) = found {
        error.set_cause(py, Some(cause));
    }
}

/// `host_tasks=` as (callback name, callable), each name one of `known` (ValueError else).
pub fn given(
    host_tasks: Option<&Bound<'_, PyDict>>,
    known: &std::collections::BTreeSet<String>,
) -> PyResult<Vec<(String, Py<PyAny>)>> {
    let Some(d) = host_tasks else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for (k, v) in d.iter() {
        let name: String = k.extract()?;
        if !known.contains(&name) {
            let list: Vec<&str> = known.iter().map(String::as_str).collect();
            return Err(PyValueError::new_err(format!(
                "host_tasks: the module has no host-task callback {name:?} (it has {list:?})"
            )));
        }
        if !v.is_callable() {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!("host_tasks[{name:?}] is not callable")));
        }
        out.push((name, v.unbind()));
    }
    Ok(out)
}
