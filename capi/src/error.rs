//! Status codes, the conversion of executor errors to them, and where the message of the last
//! call is kept: on the handle it was made on, and in a thread-local slot for every call.

use cmdgraph_executor::{ExecError, HostError};

/// The result of every fallible function. `CMDGRAPH_OK` is 0; every other value is an error
/// whose message `cmdgraph_last_error` (and the handle's `*_last_error`) returns.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum cmdgraph_status {
    /// Success.
    CMDGRAPH_OK = 0,
    /// An argument is invalid: a NULL pointer where one is required, a name that is not
    /// UTF-8, a value of the wrong kind or size, an index out of range.
    CMDGRAPH_ERROR_INVALID_ARGUMENT = 1,
    /// The handle the function works on is NULL.
    CMDGRAPH_ERROR_NULL_HANDLE = 2,
    /// A name (memory, graph, node, dynamic parameter, dynamic command group, callback)
    /// is not in the bundle.
    CMDGRAPH_ERROR_NOT_FOUND = 3,
    /// The bundle is malformed, of another format version, damaged (hash) or inconsistent.
    CMDGRAPH_ERROR_BUNDLE_INVALID = 4,
    /// No Vulkan loader, no suitable device, or a Vulkan call failed.
    CMDGRAPH_ERROR_VULKAN = 5,
    /// A wait for the device passed the executor's timeout; the work goes on and waiting
    /// again returns once it is done.
    CMDGRAPH_ERROR_TIMEOUT = 6,
    /// A host-task callback failed (it returned an error, or touched memory its node does not
    /// declare), or its callback is not registered.
    CMDGRAPH_ERROR_HOST_TASK_FAILED = 7,
    /// A panic inside the library, caught at the C boundary; the message says where. The
    /// handle may be left in an unspecified (but memory-safe) state: destroy it.
    CMDGRAPH_ERROR_PANIC = 8,
    /// The caller's buffer is smaller than the data; the size needed was reported.
    CMDGRAPH_ERROR_BUFFER_TOO_SMALL = 9,
    /// A file could not be read.
    CMDGRAPH_ERROR_IO = 10,
    /// A bundle's signature does not verify, or a bundle opened with trusted keys is unsigned
    /// or signed by another key.
    CMDGRAPH_ERROR_UNTRUSTED = 11,
}

use cmdgraph_status::*;

/// An error on its way to C: a status and its message.
#[derive(Debug)]
pub(crate) struct Error {
    pub(crate) status: cmdgraph_status,
    pub(crate) message: String,
}

impl Error {
    pub(crate) fn new(status: cmdgraph_status, message: impl Into<String>) -> Error {
        Error { status, message: message.into() }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::new(CMDGRAPH_ERROR_INVALID_ARGUMENT, message)
    }
}

/// What the layer's functions return inside.
pub(crate) type Result<T> = std::result::Result<T, Error>;

impl From<ExecError> for Error {
    fn from(e: ExecError) -> Error {
        let status = match &e {
            ExecError::Malformed(_)
            | ExecError::Version { .. }
            | ExecError::Hash(_)
            | ExecError::Ir(_)
            | ExecError::Spirv { .. }
            | ExecError::Bundle(_) => CMDGRAPH_ERROR_BUNDLE_INVALID,
            ExecError::Vulkan(_) => CMDGRAPH_ERROR_VULKAN,
            ExecError::Unknown(_) => CMDGRAPH_ERROR_NOT_FOUND,
            ExecError::Untrusted(_) => CMDGRAPH_ERROR_UNTRUSTED,
            // A pointer update naming an allocation where it is not live: the value is invalid.
            ExecError::Invalid(_) | ExecError::AllocNotLive { .. } => CMDGRAPH_ERROR_INVALID_ARGUMENT,
            ExecError::Host { .. } => CMDGRAPH_ERROR_HOST_TASK_FAILED,
            ExecError::Timeout { .. } => CMDGRAPH_ERROR_TIMEOUT,
        };
        Error::new(status, e.to_string())
    }
}

impl From<HostError> for Error {
    fn from(e: HostError) -> Error {
        let status = match &e {
            HostError::NotDeclared { .. } => CMDGRAPH_ERROR_NOT_FOUND,
            HostError::Failed(_) => CMDGRAPH_ERROR_HOST_TASK_FAILED,
            _ => CMDGRAPH_ERROR_INVALID_ARGUMENT,
        };
        Error::new(status, e.to_string())
    }
}

impl cmdgraph_capi_error::CError for Error {
    type Status = cmdgraph_status;
    const OK: cmdgraph_status = CMDGRAPH_OK;
    const PANIC: cmdgraph_status = CMDGRAPH_ERROR_PANIC;
    const NULL_HANDLE: cmdgraph_status = CMDGRAPH_ERROR_NULL_HANDLE;
    fn new(status: cmdgraph_status, message: String) -> Error {
        Error { status, message }
    }
    fn status(&self) -> cmdgraph_status {
        self.status
    }
    fn message(&self) -> &str {
        &self.message
    }
}

pub(crate) use cmdgraph_capi_error::{c_string, set_thread_error, thread_error, thread_error_ptr, LastError};

/// [`cmdgraph_capi_error::catch`] for this library's errors.
pub(crate) fn catch<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    cmdgraph_capi_error::catch(f)
}

/// [`cmdgraph_capi_error::finish`] for this library's errors.
pub(crate) fn finish(slot: Option<&mut LastError>, outcome: Result<()>) -> cmdgraph_status {
    cmdgraph_capi_error::finish(slot, outcome)
}

/// [`cmdgraph_capi_error::guard`] for this library's errors.
pub(crate) fn guard(slot: Option<&mut LastError>, f: impl FnOnce() -> Result<()>) -> cmdgraph_status {
    cmdgraph_capi_error::guard(slot, f)
}

/// [`cmdgraph_capi_error::null_handle`] for this library's errors.
pub(crate) fn null_handle(what: &str) -> cmdgraph_status {
    cmdgraph_capi_error::null_handle::<Error>(what)
}

/// The static name of a status (`"CMDGRAPH_OK"`, ...).
pub(crate) fn status_name(status: cmdgraph_status) -> &'static std::ffi::CStr {
    match status {
        CMDGRAPH_OK => c"CMDGRAPH_OK",
        CMDGRAPH_ERROR_INVALID_ARGUMENT => c"CMDGRAPH_ERROR_INVALID_ARGUMENT",
        CMDGRAPH_ERROR_NULL_HANDLE => c"CMDGRAPH_ERROR_NULL_HANDLE",
        CMDGRAPH_ERROR_NOT_FOUND => c"CMDGRAPH_ERROR_NOT_FOUND",
        CMDGRAPH_ERROR_BUNDLE_INVALID => c"CMDGRAPH_ERROR_BUNDLE_INVALID",
        CMDGRAPH_ERROR_VULKAN => c"CMDGRAPH_ERROR_VULKAN",
        CMDGRAPH_ERROR_TIMEOUT => c"CMDGRAPH_ERROR_TIMEOUT",
        CMDGRAPH_ERROR_HOST_TASK_FAILED => c"CMDGRAPH_ERROR_HOST_TASK_FAILED",
        CMDGRAPH_ERROR_PANIC => c"CMDGRAPH_ERROR_PANIC",
        CMDGRAPH_ERROR_BUFFER_TOO_SMALL => c"CMDGRAPH_ERROR_BUFFER_TOO_SMALL",
        CMDGRAPH_ERROR_IO => c"CMDGRAPH_ERROR_IO",
        CMDGRAPH_ERROR_UNTRUSTED => c"CMDGRAPH_ERROR_UNTRUSTED",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn thread_message() -> String {
        // SAFETY: the slot's pointer is a live NUL-terminated string.
        unsafe { CStr::from_ptr(thread_error_ptr()) }.to_string_lossy().into_owned()
    }

    #[test]
    fn a_panic_becomes_a_status_with_its_message_on_the_handle_and_the_thread() {
        let mut slot = LastError::default();
        let st = guard(Some(&mut slot), || panic!("boom at {}", 42));
        assert_eq!(st, CMDGRAPH_ERROR_PANIC);
        // SAFETY: as above.
        let on_handle = unsafe { CStr::from_ptr(slot.as_ptr()) }.to_string_lossy().into_owned();
        assert_eq!(on_handle, "internal error (panic): boom at 42");
        assert_eq!(thread_message(), on_handle);
        // The next success clears both.
        assert_eq!(guard(Some(&mut slot), || Ok(())), CMDGRAPH_OK);
        // SAFETY: as above.
        assert_eq!(unsafe { CStr::from_ptr(slot.as_ptr()) }.to_bytes(), b"");
        assert_eq!(thread_message(), "");
    }

    #[test]
    fn executor_errors_map_to_their_statuses_and_messages_keep_interior_nuls_visible() {
        let e = Error::from(ExecError::Unknown("memory @x".into()));
        assert_eq!((e.status, e.message.as_str()), (CMDGRAPH_ERROR_NOT_FOUND, "unknown memory @x"));
        assert_eq!(Error::from(ExecError::Hash("h".into())).status, CMDGRAPH_ERROR_BUNDLE_INVALID);
        assert_eq!(Error::from(ExecError::Vulkan("v".into())).status, CMDGRAPH_ERROR_VULKAN);
        let timeout = ExecError::Timeout { what: "run".into(), after: std::time::Duration::from_secs(1) };
        assert_eq!(Error::from(timeout).status, CMDGRAPH_ERROR_TIMEOUT);
        assert_eq!(Error::from(HostError::failed("f")).status, CMDGRAPH_ERROR_HOST_TASK_FAILED);
        assert_eq!(c_string("a\0b").as_bytes(), b"a\\0b");
        for s in 0..=10 {
            // SAFETY: every value 0..=10 is a variant (the enum is contiguous).
            let status: cmdgraph_status = unsafe { std::mem::transmute::<i32, cmdgraph_status>(s) };
            assert!(status_name(status).to_bytes().starts_with(b"CMDGRAPH_"));
        }
    }
}
