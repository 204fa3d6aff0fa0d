//! `cmdgraph_bundle`: a compiled bundle (`cmdgraph compile`'s `.cgb`), loaded and checked.

use crate::error::{c_string, cmdgraph_status, Error, LastError, Result};
use crate::{bytes, destroy, error, last_error_of, name, names, put, with, Handle};
use cmdgraph_executor::load::{load_bytes_with, LoadOptions};
use cmdgraph_executor::{load_bytes, Loaded};
use cmdgraph_ir::bundle::signature::PublicKey;
use cmdgraph_ir::MemoryKind;
use std::ffi::{c_char, c_void, CString};

/// A loaded bundle: every part checked (format version, content hash, IR, kernels), nothing
/// on a device yet. Creating an executor copies what it needs, so a bundle may be destroyed
/// as soon as its executors exist, or kept to create more. Opaque.
#[allow(non_camel_case_types)]
pub struct cmdgraph_bundle {
    pub(crate) loaded: Loaded,
    /// The user memory objects (not device globals) in module order: name and byte size.
    memories: Vec<(CString, u64)>,
    error: LastError,
}

impl Handle for cmdgraph_bundle {
    const WHAT: &'static str = "bundle";
    fn last_error(&mut self) -> &mut LastError {
        &mut self.error
    }
}

impl cmdgraph_bundle {
    fn new(loaded: Loaded) -> cmdgraph_bundle {
        let memories = loaded
            .module
            .memories
            .iter()
            .filter(|(_, m)| !matches!(m.kind, MemoryKind::DeviceGlobal(_)))
            .map(|(_, m)| (c_string(&m.name), m.size_bytes()))
            .collect();
        cmdgraph_bundle { loaded, memories, error: LastError::default() }
    }
}

/// Stores a new bundle in `*out` (set to NULL first, so it is NULL on every error).
fn open(out: *mut *mut cmdgraph_bundle, load: impl FnOnce() -> Result<Loaded>) -> cmdgraph_status {
    error::guard(None, || {
        if out.is_null() {
            return Err(Error::invalid("the bundle out-pointer is NULL"));
        }
        // SAFETY: `out` is not NULL and the header's contract makes it writable.
        unsafe { out.write(std::ptr::null_mut()) };
        let bundle = Box::new(cmdgraph_bundle::new(load()?));
        // SAFETY: as above.
        unsafe { put(out, Box::into_raw(bundle), "bundle") }
    })
}

/// Opens the bundle file at `path` (as `cmdgraph compile -o` writes it) and checks it. On
/// success `*out` is a new bundle to free with `cmdgraph_bundle_destroy`; on error `*out` is
/// NULL and `cmdgraph_last_error()` says why (`CMDGRAPH_ERROR_IO`,
/// `CMDGRAPH_ERROR_BUNDLE_INVALID`, ...). A signature, if the bundle has one, must verify.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_bundle_open(path: *const c_char, out: *mut *mut cmdgraph_bundle) -> cmdgraph_status {
    // SAFETY: the caller's contract.
    unsafe { open(out, || read_file(path, &LoadOptions::default())) }
}

/// Loads a bundle from the `len` bytes at `data` (a bundle file's contents; the bytes are not
/// kept). Otherwise as `cmdgraph_bundle_open`.
///
/// # Safety
/// `data` is NULL or points to `len` readable bytes; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_bundle_from_memory(
    data: *const c_void,
    len: usize,
    out: *mut *mut cmdgraph_bundle,
) -> cmdgraph_status {
    open(out, || {
        // SAFETY: the caller's contract for `data`.
        let data = unsafe { bytes(data.cast(), len, "bundle data") }?;
        Ok(load_bytes(data)?)
    })
}

/// As `cmdgraph_bundle_open`, but the bundle must be signed (`cmdgraph compile --sign`) by one of the
/// `count` keys at `keys`, each the text of a public key file as `cmdgraph keygen` writes it
/// (`cmdgraph-ed25519-public:` and 64 hex digits). An unsigned bundle, or one signed by
/// another key, is `CMDGRAPH_ERROR_UNTRUSTED`, refused before its content is parsed; no keys
/// at all trusts no one. A key that is not one is `CMDGRAPH_ERROR_INVALID_ARGUMENT`.
///
/// # Safety
/// `path` is NULL or a string; `keys` NULL or `count` readable pointers, each NULL or a
/// string; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_bundle_open_trusted(
    path: *const c_char,
    keys: *const *const c_char,
    count: usize,
    out: *mut *mut cmdgraph_bundle,
) -> cmdgraph_status {
    // SAFETY: the caller's contract.
    unsafe { open(out, || read_file(path, &trusting(keys, count)?)) }
}

/// As `cmdgraph_bundle_from_memory`, with the trust rule of `cmdgraph_bundle_open_trusted`.
///
/// # Safety
/// `data` is NULL or `len` readable bytes; `keys` NULL or `count` readable pointers, each
/// NULL or a string; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_bundle_from_memory_trusted(
    data: *const c_void,
    len: usize,
    keys: *const *const c_char,
    count: usize,
    out: *mut *mut cmdgraph_bundle,
) -> cmdgraph_status {
    open(out, || {
        // SAFETY: the caller's contract for `keys` and `data`.
        let options = unsafe { trusting(keys, count) }?;
        // SAFETY: as above.
        let data = unsafe { bytes(data.cast(), len, "bundle data") }?;
        Ok(load_bytes_with(data, &options)?)
    })
}

/// Reads and loads the bundle file at `path`; errors name the path.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string.
unsafe fn read_file(path: *const c_char, options: &LoadOptions) -> Result<Loaded> {
    // SAFETY: the caller's contract for `path`.
    let path = unsafe { name(path, "bundle path") }?;
    let data =
        std::fs::read(path).map_err(|e| Error::new(cmdgraph_status::CMDGRAPH_ERROR_IO, format!("{path}: {e}")))?;
    load_bytes_with(&data, options).map_err(|e| {
        let e = Error::from(e);
        Error::new(e.status, format!("{path}: {}", e.message))
    })
}

/// Load options trusting the `count` public key texts at `keys`.
///
/// # Safety
/// `keys` is NULL or `count` readable pointers, each NULL or a NUL-terminated string.
unsafe fn trusting(keys: *const *const c_char, count: usize) -> Result<LoadOptions> {
    // SAFETY: the caller's contract for `keys`.
    let texts = unsafe { names(keys, count, "public key") }?;
    let trusted = texts
        .iter()
        .enumerate()
        .map(|(i, text)| PublicKey::from_file_text(text).map_err(|m| Error::invalid(format!("key {i}: {m}"))))
        .collect::<Result<Vec<_>>>()?;
    Ok(LoadOptions { trusted_keys: Some(trusted) })
}

/// Frees a bundle; NULL does nothing. Executors created from it are not affected.
///
/// # Safety
/// `bundle` is NULL or a live bundle, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_bundle_destroy(bundle: *mut cmdgraph_bundle) {
    // SAFETY: the caller's contract.
    unsafe { destroy(bundle) }
}

/// The message of the last call on `bundle` ("" after a success), valid until the next call
/// on it; with NULL, `cmdgraph_last_error()`.
///
/// # Safety
/// `bundle` is NULL or a live bundle.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_bundle_last_error(bundle: *mut cmdgraph_bundle) -> *const c_char {
    // SAFETY: the caller's contract.
    unsafe { last_error_of(bundle) }
}

/// The number of user memory objects (`usm` and `buffer`; device globals are not listed) of
/// the bundle's module, in `*count`.
///
/// # Safety
/// `bundle` is NULL or a live bundle; `count` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_bundle_memory_count(
    bundle: *mut cmdgraph_bundle,
    count: *mut usize,
) -> cmdgraph_status {
    let body = |b: &mut cmdgraph_bundle| {
        // SAFETY: the caller's contract for `count`.
        unsafe { put(count, b.memories.len(), "count") }
    };
    // SAFETY: the caller's contract for `bundle`.
    unsafe { with(bundle, body) }
}

/// The name (without `@`) and byte size of user memory object `index` (module order): the
/// name stays valid as long as the bundle. `name` or `size` may be NULL when not wanted.
///
/// # Safety
/// `bundle` is NULL or a live bundle; `name` and `size` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_bundle_memory(
    bundle: *mut cmdgraph_bundle,
    index: usize,
    name: *mut *const c_char,
    size: *mut u64,
) -> cmdgraph_status {
    let body = |b: &mut cmdgraph_bundle| {
        let (n, s) = b.memories.get(index).ok_or_else(|| {
            Error::invalid(format!("memory index {index}: the bundle has {} user memory objects", b.memories.len()))
        })?;
        if !name.is_null() {
            // SAFETY: not NULL; the caller's contract makes it writable.
            unsafe { name.write(n.as_ptr()) };
        }
        if !size.is_null() {
            // SAFETY: as above.
            unsafe { size.write(*s) };
        }
        Ok(())
    };
    // SAFETY: the caller's contract for `bundle`.
    unsafe { with(bundle, body) }
}
