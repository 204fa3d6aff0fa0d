//! `cmdgraph.Bundle`: a compiled bundle (docs/bundle.md), checked as the executor loads it.

use crate::errors::{Error, Kind, Result};
use cmdgraph_executor::{ExecError, Loaded};
use cmdgraph_ir::bundle::Bundle as IrBundle;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes};
use std::path::PathBuf;

/// A compiled bundle: what `Module.compile()` makes and `cmdgraph compile` writes, checked
/// (framing, version, hash, IR, SPIR-V) by the executor's loader. `bytes(bundle)` is the
/// file's content.
///
/// >>> bundle = cmdgraph.load_bundle("app.cgb")
/// >>> bundle.graphs
/// ['main']
#[pyclass(frozen, module = "cmdgraph._cmdgraph")]
pub struct Bundle {
    /// The file's bytes.
    pub(crate) bytes: Vec<u8>,
    /// What the loader made of them (cloned for each `Device.load`).
    pub(crate) loaded: Loaded,
}

impl Bundle {
    /// Checks `bytes` as the executor's loader does; `name` is what the message calls them.
    pub fn from_bytes(bytes: Vec<u8>, name: &str) -> Result<Bundle> {
        let loaded = cmdgraph_executor::load::load_bytes(&bytes).map_err(|e| load_error(name, &bytes, &e))?;
        Ok(Bundle { bytes, loaded })
    }
}

/// A loader error as `cmdgraph inspect` words it (cli/src/cmd/inspect.rs, `load_error`): the
/// framing's own reason where the framing is what failed.
fn load_error(name: &str, bytes: &[u8], e: &ExecError) -> Error {
    let read = match e {
        ExecError::Malformed(_) | ExecError::Version { .. } | ExecError::Hash(_) => {
            IrBundle::read_framing(bytes).and_then(|f| f.decode()).err()
        }
        _ => None,
    };
    let message = match read {
        Some(read) => format!("error: `{name}`: {read}"),
        None => format!("error: `{name}`: {e}"),
    };
    Error::new(Kind::Bundle, message)
}

/// Loads a bundle from a path (str or os.PathLike) or from its bytes (bytes, bytearray or a
/// Bundle). Raises BundleError when it is not a well-formed bundle, OSError when the file
/// cannot be read.
///
/// >>> bundle = cmdgraph.load_bundle("app.cgb")
/// >>> same = cmdgraph.load_bundle(bytes(bundle))
#[pyfunction]
pub fn load_bundle(source: &Bound<'_, PyAny>) -> PyResult<Bundle> {
    if let Ok(b) = source.cast::<Bundle>() {
        let b = b.get();
        return Ok(Bundle { bytes: b.bytes.clone(), loaded: b.loaded.clone() });
    }
    if let Ok(b) = source.cast::<PyBytes>() {
        return Ok(Bundle::from_bytes(b.as_bytes().to_vec(), "<bytes>")?);
    }
    if let Ok(b) = source.cast::<PyByteArray>() {
        return Ok(Bundle::from_bytes(b.to_vec(), "<bytes>")?);
    }
    let path: PathBuf = source.extract().map_err(|_| {
        Error::type_error("load_bundle takes a path (str or os.PathLike), bytes, bytearray or a Bundle")
    })?;
    let bytes = std::fs::read(&path)
        .map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("cannot read `{}`: {e}", path.display())))?;
    Ok(Bundle::from_bytes(bytes, &path.display().to_string())?)
}

#[pymethods]
impl Bundle {
    fn __bytes__<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.bytes)
    }

    fn __len__(&self) -> usize {
        self.bytes.len()
    }

    fn __repr__(&self) -> String {
        format!("<cmdgraph.Bundle: {} bytes, graphs {:?}>", self.bytes.len(), self.graphs())
    }

    /// Writes the bundle to `path` (the bytes `cmdgraph compile` would write).
    fn save(&self, path: PathBuf) -> PyResult<()> {
        std::fs::write(&path, &self.bytes)
            .map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("cannot write `{}`: {e}", path.display())))
    }

    /// The graphs it can run (names without `@`).
    #[getter]
    fn graphs(&self) -> Vec<String> {
        self.loaded.module.graphs.iter().map(|(_, g)| g.name.clone()).collect()
    }

    /// The content hash (docs/bundle.md).
    #[getter]
    fn content_hash(&self) -> String {
        self.loaded.bundle.content_hash.clone()
    }

    /// The canonical text of the module as compiled.
    #[getter]
    fn source(&self) -> String {
        self.loaded.bundle.source.clone()
    }

    /// The canonical text of the module after the passes (what the executor runs).
    #[getter]
    fn optimized(&self) -> String {
        self.loaded.bundle.optimized.clone()
    }
}
