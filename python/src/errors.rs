//! The one error type of the crate and its Python exceptions.
//!
//! The exception classes live in `cmdgraph/_errors.py` (so that they carry `.code` and
//! `.message` and docstrings as ordinary Python classes); [`Error`] becomes an instance of
//! the class its [`Kind`] names. A bad argument becomes `TypeError` or `ValueError`.

use cmdgraph_ir::diag::{Diagnostic, Severity};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

/// Which Python exception an [`Error`] raises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `cmdgraph.ParseError`: the text does not parse (or a shader kernel does not translate).
    Parse,
    /// `cmdgraph.VerifyError`: the module parses but the verifier rejects it.
    Verify,
    /// `cmdgraph.CompileError`: passes or code generation failed.
    Compile,
    /// `cmdgraph.BundleError`: a bundle that is malformed, corrupt or inconsistent.
    Bundle,
    /// `cmdgraph.DeviceError`: Vulkan, the executor or the interpreter failed at run time.
    Device,
    /// `TypeError`: an argument of the wrong type.
    Type,
    /// `ValueError`: an argument of the right type with a wrong value.
    Value,
}

impl Kind {
    /// The class name in `cmdgraph._errors`.
    fn class(self) -> &'static str {
        match self {
            Kind::Parse => "ParseError",
            Kind::Verify => "VerifyError",
            Kind::Compile => "CompileError",
            Kind::Bundle => "BundleError",
            Kind::Device => "DeviceError",
            Kind::Type | Kind::Value => "",
        }
    }
}

/// A failure: its kind, the diagnostic code when there is one, and the full message (the
/// CLI's rendered diagnostics, file:line:col included).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// Which exception it raises.
    pub kind: Kind,
    /// `E0123`, when a diagnostic says it.
    pub code: Option<String>,
    /// The text of the exception.
    pub message: String,
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error without a diagnostic code.
    pub fn new(kind: Kind, message: impl Into<String>) -> Error {
        Error { kind, code: None, message: message.into() }
    }

    /// A `ValueError`.
    pub fn value(message: impl Into<String>) -> Error {
        Error::new(Kind::Value, message)
    }

    /// A `TypeError`.
    pub fn type_error(message: impl Into<String>) -> Error {
        Error::new(Kind::Type, message)
    }

    /// Diagnostics rendered against `file`/`source` as the CLI prints them; the code is the
    /// first error's (else the first diagnostic's).
    pub fn diagnostics(kind: Kind, diagnostics: &[Diagnostic], file: &str, source: &str) -> Error {
        if diagnostics.is_empty() {
            // An error without a diagnostic is a bug in the library; still say which input.
            return Error::new(kind, format!("error: `{file}` was rejected without a diagnostic"));
        }
        let code = diagnostics.iter().find(|d| d.severity == Severity::Error).or(diagnostics.first()).map(|d| d.code);
        Error {
            kind,
            code: code.map(str::to_string),
            message: cmdgraph_ir::diag::render_all(diagnostics, file, source),
        }
    }
}

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        match e.kind {
            Kind::Type => PyTypeError::new_err(e.message),
            Kind::Value => PyValueError::new_err(e.message),
            kind => Python::attach(|py| {
                let message = e.message.clone();
                let err = raise(py, kind.class(), e.code, e.message);
                crate::host::chain(py, &err, &message);
                err
            }),
        }
    }
}

/// An instance of `cmdgraph._errors.<class>(message, code)` as a `PyErr`; if the package
/// cannot be imported (the extension loaded on its own), a `RuntimeError` with the message.
fn raise(py: Python<'_>, class: &str, code: Option<String>, message: String) -> PyErr {
    let made = py
        .import("cmdgraph._errors")
        .and_then(|m| m.getattr(class))
        .and_then(|c| c.call1((message.clone(), code.clone())));
    match made {
        Ok(instance) => PyErr::from_value(instance),
        Err(_) => pyo3::exceptions::PyRuntimeError::new_err(format!("{class}: {message}")),
    }
}

/// An executor error as a Python exception: a bundle that does not load is a
/// `BundleError`, anything else a `DeviceError`; `what` says where (`@main`, a file name).
pub fn exec(what: &str, e: &cmdgraph_executor::ExecError) -> Error {
    use cmdgraph_executor::ExecError as E;
    let kind = match e {
        E::Malformed(_)
        | E::Version { .. }
        | E::Hash(_)
        | E::Ir(_)
        | E::Spirv { .. }
        | E::Bundle(_)
        | E::Untrusted(_) => Kind::Bundle,
        E::Unknown(_) => Kind::Value,
        _ => Kind::Device,
    };
    Error::new(kind, format!("error: {what}: {e}"))
}
