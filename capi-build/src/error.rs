//! Status codes, the conversion of SYCL errors to them, and where the message of the last
//! call is kept: on the handle it was made on, and in a thread-local slot for every call.
//! The numbers shared with `libcmdgraph` (capi/) mean the same there.

use cmdgraph_sycl::{Errc, SyclError};

/// The result of every fallible function. `CMDGRAPH_SYCL_OK` is 0; every other value is an
/// error whose message `cmdgraph_sycl_last_error` (and the handle's `*_last_error`) returns.
/// Values 1-3 and 8-10 mean what the same numbers of `libcmdgraph`'s `cmdgraph_status` mean.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum cmdgraph_sycl_status {
    /// Success.
    CMDGRAPH_SYCL_OK = 0,
    /// An argument is invalid: a NULL pointer where one is required, a name that is not
    /// UTF-8, a value of the wrong kind, a type or flag value out of range.
    CMDGRAPH_SYCL_ERROR_INVALID_ARGUMENT = 1,
    /// The handle the function works on is NULL.
    CMDGRAPH_SYCL_ERROR_NULL_HANDLE = 2,
    /// A name (kernel) or pointer (not one of the context's allocations) is unknown.
    CMDGRAPH_SYCL_ERROR_NOT_FOUND = 3,
    /// A panic inside the library, caught at the C boundary; the message says where. The
    /// handle may be left in an unspecified (but memory-safe) state: destroy it.
    CMDGRAPH_SYCL_ERROR_PANIC = 8,
    /// The caller's buffer is smaller than the data; the size needed was reported.
    CMDGRAPH_SYCL_ERROR_BUFFER_TOO_SMALL = 9,
    /// A file could not be read or written.
    CMDGRAPH_SYCL_ERROR_IO = 10,
    /// SYCL's `errc::invalid`: the message starts with `invalid` and names the §22 row of
    /// the graph extension's error table where there is one.
    CMDGRAPH_SYCL_ERROR_INVALID = 20,
    /// SYCL's `errc::feature_not_supported`.
    CMDGRAPH_SYCL_ERROR_FEATURE_NOT_SUPPORTED = 21,
    /// SYCL's `errc::kernel_not_supported`.
    CMDGRAPH_SYCL_ERROR_KERNEL_NOT_SUPPORTED = 22,
    /// Kernel text, a WGSL/GLSL shader or a module does not parse, translate, verify or
    /// compile; the message holds the rendered diagnostics.
    CMDGRAPH_SYCL_ERROR_COMPILE = 23,
}

use cmdgraph_sycl_status::*;

/// An error on its way to C: a status and its message.
#[derive(Debug)]
pub(crate) struct Error {
    pub(crate) status: cmdgraph_sycl_status,
    pub(crate) message: String,
}

impl Error {
    pub(crate) fn new(status: cmdgraph_sycl_status, message: impl Into<String>) -> Error {
        Error { status, message: message.into() }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::new(CMDGRAPH_SYCL_ERROR_INVALID_ARGUMENT, message)
    }

    pub(crate) fn compile(message: impl Into<String>) -> Error {
        Error::new(CMDGRAPH_SYCL_ERROR_COMPILE, message)
    }
}

/// What the layer's functions return inside.
pub(crate) type Result<T> = std::result::Result<T, Error>;

impl From<SyclError> for Error {
    /// The errc decides the status; the message is the error's text, which starts with the
    /// errc's name (`invalid (§22 row 24): ...`).
    fn from(e: SyclError) -> Error {
        let status = match e.code {
            Errc::Invalid => CMDGRAPH_SYCL_ERROR_INVALID,
            Errc::FeatureNotSupported => CMDGRAPH_SYCL_ERROR_FEATURE_NOT_SUPPORTED,
            Errc::KernelNotSupported => CMDGRAPH_SYCL_ERROR_KERNEL_NOT_SUPPORTED,
        };
        Error::new(status, e.to_string())
    }
}

impl cmdgraph_capi_error::CError for Error {
    type Status = cmdgraph_sycl_status;
    const OK: cmdgraph_sycl_status = CMDGRAPH_SYCL_OK;
    const PANIC: cmdgraph_sycl_status = CMDGRAPH_SYCL_ERROR_PANIC;
    const NULL_HANDLE: cmdgraph_sycl_status = CMDGRAPH_SYCL_ERROR_NULL_HANDLE;
    fn new(status: cmdgraph_sycl_status, message: String) -> Error {
        Error { status, message }
    }
    fn status(&self) -> cmdgraph_sycl_status {
        self.status
    }
    fn message(&self) -> &str {
        &self.message
    }
}

pub(crate) use cmdgraph_capi_error::{c_string, thread_error, thread_error_ptr, LastError};

/// [`cmdgraph_capi_error::catch`] for this library's errors.
pub(crate) fn catch<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    cmdgraph_capi_error::catch(f)
}

/// [`cmdgraph_capi_error::finish`] for this library's errors.
pub(crate) fn finish(slot: Option<&mut LastError>, outcome: Result<()>) -> cmdgraph_sycl_status {
    cmdgraph_capi_error::finish(slot, outcome)
}

/// [`cmdgraph_capi_error::guard`] for this library's errors.
pub(crate) fn guard(slot: Option<&mut LastError>, f: impl FnOnce() -> Result<()>) -> cmdgraph_sycl_status {
    cmdgraph_capi_error::guard(slot, f)
}

/// [`cmdgraph_capi_error::null_handle`] for this library's errors.
pub(crate) fn null_handle(what: &str) -> cmdgraph_sycl_status {
    cmdgraph_capi_error::null_handle::<Error>(what)
}

/// The static name of a status (`"CMDGRAPH_SYCL_OK"`, ...).
pub(crate) fn status_name(status: cmdgraph_sycl_status) -> &'static std::ffi::CStr {
    match status {
        CMDGRAPH_SYCL_OK => c"CMDGRAPH_SYCL_OK",
        CMDGRAPH_SYCL_ERROR_INVALID_ARGUMENT => c"CMDGRAPH_SYCL_ERROR_INVALID_ARGUMENT",
        CMDGRAPH_SYCL_ERROR_NULL_HANDLE => c"CMDGRAPH_SYCL_ERROR_NULL_HANDLE",
        CMDGRAPH_SYCL_ERROR_NOT_FOUND => c"CMDGRAPH_SYCL_ERROR_NOT_FOUND",
        CMDGRAPH_SYCL_ERROR_PANIC => c"CMDGRAPH_SYCL_ERROR_PANIC",
        CMDGRAPH_SYCL_ERROR_BUFFER_TOO_SMALL => c"CMDGRAPH_SYCL_ERROR_BUFFER_TOO_SMALL",
        CMDGRAPH_SYCL_ERROR_IO => c"CMDGRAPH_SYCL_ERROR_IO",
        CMDGRAPH_SYCL_ERROR_INVALID => c"CMDGRAPH_SYCL_ERROR_INVALID",
        CMDGRAPH_SYCL_ERROR_FEATURE_NOT_SUPPORTED => c"CMDGRAPH_SYCL_ERROR_FEATURE_NOT_SUPPORTED",
        CMDGRAPH_SYCL_ERROR_KERNEL_NOT_SUPPORTED => c"CMDGRAPH_SYCL_ERROR_KERNEL_NOT_SUPPORTED",
        CMDGRAPH_SYCL_ERROR_COMPILE => c"CMDGRAPH_SYCL_ERROR_COMPILE",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn a_panic_becomes_a_status_with_its_message_on_the_handle_and_the_thread() {
        let mut slot = LastError::default();
        let st = guard(Some(&mut slot), || panic!("boom at {}", 42));
        assert_eq!(st, CMDGRAPH_SYCL_ERROR_PANIC);
        assert_eq!(slot.text(), "internal error (panic): boom at 42");
        assert_eq!(thread_error(), slot.text());
        assert_eq!(guard(Some(&mut slot), || Ok(())), CMDGRAPH_SYCL_OK);
        assert_eq!(slot.text(), "");
        // SAFETY: the slot's pointer is a live NUL-terminated string.
        assert_eq!(unsafe { CStr::from_ptr(thread_error_ptr()) }.to_bytes(), b"");
    }

    #[test]
    fn sycl_errors_map_by_errc_and_keep_the_errc_name_and_row() {
        let e = Error::from(SyclError::invalid(24, "update: not updatable"));
        assert_eq!(e.status, CMDGRAPH_SYCL_ERROR_INVALID);
        assert_eq!(e.message, "invalid (§22 row 24): update: not updatable");
        let e = Error::from(SyclError::unsupported(0, "no"));
        assert_eq!(
            (e.status, e.message.as_str()),
            (CMDGRAPH_SYCL_ERROR_FEATURE_NOT_SUPPORTED, "feature_not_supported: no")
        );
        let e = Error::from(SyclError::kernel_not_supported(0, "fp64"));
        assert_eq!(e.status, CMDGRAPH_SYCL_ERROR_KERNEL_NOT_SUPPORTED);
        assert_eq!(c_string("a\0b").as_bytes(), b"a\\0b");
    }
}
