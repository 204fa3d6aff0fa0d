//! `_cmdgraph`, the native half of the `cmdgraph` Python package (docs/python.md).
//!
//! Everything here calls the same library functions as the `cmdgraph` command line, so that
//! a module parsed, verified, drawn or compiled from Python gives the CLI's bytes and its
//! diagnostic text: [`module`] (parse, print, verify, DOT, compile, the interpreter),
//! [`bundle`] (compiled bundles), [`device`] (Vulkan devices and executables, on one device or,
//! through [`multi`] and [`engine`], on several), [`sycl`] (the
//! SYCL-like graph API of `cmdgraph-sycl`, `cmdgraph.sycl`), [`host`] (host tasks written in
//! Python). `cmdgraph/_arrays.py` checks NumPy arrays against memory objects ([`arrays`] calls
//! it); their memory crosses by address ([`raw`], `unsafe`: the abi3 limited API of CPython 3.9
//! has no buffer protocol), straight into and out of the executor's staging buffers.
//! `cmdgraph/_errors.py` defines the exception classes ([`errors`] raises them). The crate's
//! other `unsafe` is `sycl`'s `Confined` (the GIL released around the SYCL crate's `Rc`
//! handles, on their own thread).

use pyo3::prelude::*;

pub mod arrays;
pub mod bundle;
pub mod comm;
pub mod device;
pub mod engine;
pub mod errors;
pub mod host;
pub mod module;
pub mod multi;
pub mod params;
pub mod raw;
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
    m.add_function(wrap_pyfunction!(multi::load_on_devices, m)?)?;
    sycl::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
