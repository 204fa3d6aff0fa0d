//! The C boundary's error machinery, one copy for both C libraries: `libcmdgraph` (capi/,
//! runtime only) and `libcmdgraph_build` (capi-build/, graph building). Each library keeps its
//! own status enum (its numbers are its header's) and its own `Error` type (so that `From`
//! conversions of its Rust errors stay local); both implement [`CError`], and everything
//! else is here: the message of the last call kept on a handle ([`LastError`]) and in a
//! thread-local slot, panics caught at the boundary, and the status a call returns.
//!
//! This crate exports no C symbols. Linked into each library's `cdylib`, each gets its own
//! thread-local slot; a Rust program linking both rlibs shares one (it holds the last call's
//! message of either library).

use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A library's error on its way to C: a status and its message.
pub trait CError: Sized {
    /// The library's `#[repr(C)]` status enum.
    type Status: Copy;
    /// Success.
    const OK: Self::Status;
    /// A panic caught at the boundary.
    const PANIC: Self::Status;
    /// The handle a function works on is NULL.
    const NULL_HANDLE: Self::Status;
    /// An error of `status` with `message`.
    fn new(status: Self::Status, message: String) -> Self;
    /// Its status.
    fn status(&self) -> Self::Status;
    /// Its message.
    fn message(&self) -> &str;
}

/// The message of the last call on one handle (or on one thread): a NUL-terminated copy
/// that stays put until the next call replaces it.
#[derive(Debug, Default)]
pub struct LastError(Option<CString>);

impl LastError {
    /// Keeps `message`.
    pub fn set(&mut self, message: &str) {
        self.0 = Some(c_string(message));
    }

    /// Forgets the message (after a success).
    pub fn clear(&mut self) {
        self.0 = None;
    }

    /// The message, or "" after a call that succeeded.
    pub fn as_ptr(&self) -> *const c_char {
        match &self.0 {
            Some(s) => s.as_ptr(),
            None => c"".as_ptr(),
        }
    }

    /// The message as a string ("" after a success).
    pub fn text(&self) -> String {
        self.0.as_ref().map(|c| c.to_string_lossy().into_owned()).unwrap_or_default()
    }
}

/// `s` as a C string; interior NULs (which a message may quote from a name) become `\0`.
pub fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', "\\0")).unwrap_or_default()
}

thread_local! {
    static THREAD_ERROR: RefCell<LastError> = RefCell::new(LastError::default());
}

/// The calling thread's last message (what `*_last_error()` returns).
pub fn thread_error_ptr() -> *const c_char {
    THREAD_ERROR.with(|e| e.borrow().as_ptr())
}

/// The calling thread's last message as a string ("" after a success).
pub fn thread_error() -> String {
    THREAD_ERROR.with(|e| e.try_borrow().map(|e| e.text()).unwrap_or_default())
}

/// Sets (or, with `None`, clears) the calling thread's last message.
pub fn set_thread_error(message: Option<&str>) {
    THREAD_ERROR.with(|e| {
        if let Ok(mut e) = e.try_borrow_mut() {
            match message {
                Some(m) => e.set(m),
                None => e.clear(),
            }
        }
    });
}

/// The message of a caught panic.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string());
    format!("internal error (panic): {what}")
}

/// Runs `f` at the C boundary: a panic becomes `E::PANIC` with its message.
pub fn catch<T, E: CError>(f: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => Err(E::new(E::PANIC, panic_message(payload.as_ref()))),
    }
}

/// The status of `outcome`; its message goes to `slot` (the handle's, when there is one) and
/// to the thread-local slot (both cleared on success).
pub fn finish<E: CError>(slot: Option<&mut LastError>, outcome: Result<(), E>) -> E::Status {
    match outcome {
        Ok(()) => {
            if let Some(s) = slot {
                s.clear();
            }
            set_thread_error(None);
            E::OK
        }
        Err(e) => {
            if let Some(s) = slot {
                s.set(e.message());
            }
            set_thread_error(Some(e.message()));
            e.status()
        }
    }
}

/// [`catch`] then [`finish`].
pub fn guard<E: CError>(slot: Option<&mut LastError>, f: impl FnOnce() -> Result<(), E>) -> E::Status {
    let outcome = catch(f);
    finish(slot, outcome)
}

/// [`guard`] for a function whose handle is NULL: the error is the thread's only.
pub fn null_handle<E: CError>(what: &str) -> E::Status {
    guard::<E>(None, || Err(E::new(E::NULL_HANDLE, format!("the {what} handle is NULL"))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Err(u8, String);

    impl CError for Err {
        type Status = u8;
        const OK: u8 = 0;
        const PANIC: u8 = 8;
        const NULL_HANDLE: u8 = 2;
        fn new(status: u8, message: String) -> Err {
            Err(status, message)
        }
        fn status(&self) -> u8 {
            self.0
        }
        fn message(&self) -> &str {
            &self.1
        }
    }

    #[test]
    fn a_panic_becomes_a_status_with_its_message_on_the_handle_and_the_thread() {
        let mut slot = LastError::default();
        let st = guard::<Err>(Some(&mut slot), || panic!("boom at {}", 42));
        assert_eq!(st, 8);
        assert_eq!(slot.text(), "internal error (panic): boom at 42");
        assert_eq!(thread_error(), slot.text());
        assert_eq!(guard::<Err>(Some(&mut slot), || Ok(())), 0);
        assert_eq!(slot.text(), "");
        assert_eq!(thread_error(), "");
        assert!(!thread_error_ptr().is_null());
        assert_eq!(null_handle::<Err>("graph"), 2);
        assert_eq!(thread_error(), "the graph handle is NULL");
        assert_eq!(c_string("a\0b").as_bytes(), b"a\\0b");
    }
}
