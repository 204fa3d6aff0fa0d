//! `_cmdgraph`, the native half of the `cmdgraph` Python package (docs/python.md).
//!
//! Everything here calls the same library functions as the `cmdgraph` command line, so that
//! a module parsed, verified, drawn or compiled from Python gives the CLI's bytes and its
//! diagnostic text: [`module`] (parse, print, verify, DOT, compile, the interpreter),
//! [`bundle`] (compiled bundles), [`device`] (Vulkan devices and executables), [`sycl`] (the
//! SYCL-like graph API of `cmdgraph-sycl`, `cmdgraph.sycl`). Arrays cross
//! the boundary as bytes; `cmdgraph/_arrays.py` checks and converts NumPy arrays
//! ([`arrays`] calls it), and `cmdgraph/_errors.py` defines the exception classes
//! ([`errors`] raises them). The crate's one `unsafe` is `sycl`'s `Confined` (the GIL released
//! around the SYCL crate's `Rc` handles, on their own thread).

use pyo3::prelude::*;

pub mod arrays;
pub mod bundle;
pub mod device;
pub mod errors;
pub mod host;
pub mod module;
pub mod params;
pub mod sycl;

/// The extension module: its classes and functions, re-exported by `cmdgraph/__init__.py`.
#[pymodule]
fn _cmdgraph(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<module::Module>()?;
    m.add_class::<bundle::Bundle>()?;
    m.add_class::<device::Device>()?;
    m.add_class::<device::Executable>()?;
    m.add_function(wrap_pyfunction!(module::parse, m)?)?;
    m.add_function(wrap_pyfunction!(module::parse_file, m)?)?;
    m.add_function(wrap_pyfunction!(bundle::load_bundle, m)?)?;
    m.add_function(wrap_pyfunction!(device::devices, m)?)?;
    sycl::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
