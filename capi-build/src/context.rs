//! `cmdgraph_sycl_context`: a SYCL context and device, the registry of its kernels, memory
//! and host tasks, and where its graphs run (the reference interpreter, or the default
//! Vulkan device from bundles compiled in process at finalize).

use crate::error::{c_string, cmdgraph_sycl_status, Error, LastError, Result};
use crate::usm::Registry;
use crate::{clear_out, destroy, last_error_of, name, put_handle, with, Handle};
use cmdgraph_sycl::{BundleSource, Context, Device, DeviceInfo};
use std::cell::{Cell, RefCell};
use std::ffi::{c_char, CString};
use std::rc::Rc;

/// Where a context's graphs run.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum cmdgraph_sycl_backend {
    /// The default Vulkan device (a discrete GPU, else an integrated one, else a CPU device
    /// such as llvmpipe); each executable graph is compiled in process at its first finalize
    /// and the bundle kept in the bundle directory.
    CMDGRAPH_SYCL_BACKEND_VULKAN = 0,
    /// The reference interpreter: every run is complete when it is submitted.
    CMDGRAPH_SYCL_BACKEND_INTERPRETER = 1,
}

/// Options of `cmdgraph_sycl_context_create`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cmdgraph_sycl_context_options {
    /// A `cmdgraph_sycl_backend`.
    pub backend: i32,
    /// The Vulkan validation layer on (any message fails the run that caused it);
    /// `CMDGRAPH_VK_VALIDATION=1` in the environment turns it on too.
    pub validation: bool,
    /// The directory holding bundles by structural key (`cmdgraph compile --bundle-dir`):
    /// found there, a graph's bundle is used; missing, it is compiled and written there. NULL:
    /// a private temporary directory removed with the context.
    pub bundle_dir: *const c_char,
}

/// The default options: Vulkan, no validation, a private bundle directory.
#[no_mangle]
pub extern "C" fn cmdgraph_sycl_context_options_default() -> cmdgraph_sycl_context_options {
    cmdgraph_sycl_context_options {
        backend: cmdgraph_sycl_backend::CMDGRAPH_SYCL_BACKEND_VULKAN as i32,
        validation: false,
        bundle_dir: std::ptr::null(),
    }
}

/// What every handle of one context shares.
pub(crate) struct Shared {
    pub(crate) ctx: Context,
    pub(crate) device: Device,
    pub(crate) registry: RefCell<Registry>,
    /// The number of host-task callbacks registered so far (their names are `host_task_N`).
    pub(crate) host_tasks: Cell<u64>,
    /// The private bundle directory, removed with the last handle.
    _bundles: Option<tempfile::TempDir>,
}

/// A SYCL context with one device. Every other handle made from it keeps it alive; all of
/// them are used by one thread at a time. Opaque.
#[allow(non_camel_case_types)]
pub struct cmdgraph_sycl_context {
    pub(crate) shared: Rc<Shared>,
    device_name: CString,
    error: LastError,
}

impl Handle for cmdgraph_sycl_context {
    const WHAT: &'static str = "context";
    fn last_error(&mut self) -> &mut LastError {
        &mut self.error
    }
}

fn create(options: &cmdgraph_sycl_context_options) -> Result<cmdgraph_sycl_context> {
    let device = Device::new(0, DeviceInfo::default());
    let ctx = Context::new(0, std::slice::from_ref(&device));
    let env_validation = std::env::var_os("CMDGRAPH_VK_VALIDATION").is_some_and(|v| v == "1");
    let mut private = None;
    match options.backend {
        0 => {
            let dir = if options.bundle_dir.is_null() {
                let tmp = tempfile::Builder::new().prefix("cmdgraph-sycl-bundles-").tempdir().map_err(|e| {
                    Error::new(
                        cmdgraph_sycl_status::CMDGRAPH_SYCL_ERROR_IO,
                        format!("cannot create a bundle directory: {e}"),
                    )
                })?;
                let path = tmp.path().to_path_buf();
                private = Some(tmp);
                path
            } else {
                // SAFETY: the header's contract: NULL or a NUL-terminated string.
                std::path::PathBuf::from(unsafe { name(options.bundle_dir, "bundle directory") }?)
            };
            ctx.run_from_bundles(BundleSource { dir, validation: options.validation || env_validation });
        }
        1 => ctx.without_bundles(),
        v => return Err(Error::invalid(format!("{v} is not a cmdgraph_sycl_backend (0 or 1)"))),
    }
    let device_name = match options.backend {
        0 => default_vulkan_name(),
        _ => device.name(),
    };
    let shared =
        Rc::new(Shared { ctx, device, registry: RefCell::default(), host_tasks: Cell::new(0), _bundles: private });
    Ok(cmdgraph_sycl_context { shared, device_name: c_string(&device_name), error: LastError::default() })
}

/// The name of the default Vulkan device (as the executor picks it), or why there is none.
fn default_vulkan_name() -> String {
    let all = cmdgraph_sycl::Device::all();
    let vulkan: Vec<_> = all
        .iter()
        .filter_map(|d| match d.backend() {
            cmdgraph_sycl::Backend::Vulkan { kind, name, .. } => Some((*kind, name.clone())),
            _ => None,
        })
        .collect();
    vulkan.iter().min_by_key(|(k, _)| *k).map(|(_, n)| n.clone()).unwrap_or_else(|| "no Vulkan device".into())
}

/// Creates a context (`options` may be NULL: the defaults) and stores it in `*out` (NULL on
/// error). No device work happens before the first finalize of a graph.
///
/// # Safety
/// `options` is NULL or readable; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_context_create(
    options: *const cmdgraph_sycl_context_options,
    out: *mut *mut cmdgraph_sycl_context,
) -> cmdgraph_sycl_status {
    crate::error::guard(None, || {
        // SAFETY: the caller's contract.
        unsafe { clear_out(out, "context") }?;
        // SAFETY: the caller's contract: NULL or readable.
        let options = unsafe { options.as_ref() }.copied().unwrap_or_else(|| cmdgraph_sycl_context_options_default());
        let ctx = create(&options)?;
        // SAFETY: the caller's contract.
        unsafe { put_handle(out, ctx, "context") }
    })
}

/// The name of the device the context's graphs run on (`"reference interpreter"` or the
/// Vulkan device's), valid as long as the context; NULL for NULL.
///
/// # Safety
/// `ctx` is NULL or a live context.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_context_device_name(ctx: *const cmdgraph_sycl_context) -> *const c_char {
    // SAFETY: the caller's contract.
    match unsafe { ctx.as_ref() } {
        Some(c) => c.device_name.as_ptr(),
        None => std::ptr::null(),
    }
}

/// Registers every kernel of kernel-language text (`kernel @name(...) { ... }`, the
/// syntax of docs/ir.md; other items are ignored) with the context; command groups launch
/// them by name. Text that does not parse is `CMDGRAPH_SYCL_ERROR_COMPILE` with the rendered
/// diagnostics; a name already used is `CMDGRAPH_SYCL_ERROR_INVALID`.
///
/// # Safety
/// `ctx` is NULL or a live context; `text` NULL or a string.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_context_register_kernels(
    ctx: *mut cmdgraph_sycl_context,
    text: *const c_char,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(ctx, |c| {
            let text = name(text, "kernel text")?;
            register_text(&c.shared, text)
        })
    }
}

/// Registers kernel text; a parse error is a compile error.
fn register_text(shared: &Shared, text: &str) -> Result<()> {
    shared.ctx.register_kernels_from_text(text).map(|_| ()).map_err(|e| {
        if e.message.starts_with("kernel text does not parse") {
            Error::compile(e.to_string())
        } else {
            Error::from(e)
        }
    })
}

/// Shader languages of `cmdgraph_sycl_context_register_shader`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum cmdgraph_sycl_shader_lang {
    /// WGSL.
    CMDGRAPH_SYCL_WGSL = 0,
    /// GLSL (a `#version 450` compute shader; its entry point is `main`).
    CMDGRAPH_SYCL_GLSL = 1,
}

/// Registers the compute entry point `entry` of a WGSL or GLSL shader (`lang`, a
/// `cmdgraph_sycl_shader_lang`) as kernel `kernel_name`, translated into the kernel language
/// as `cmdgraph`'s shader front end does (docs/kernels.md: storage buffers by (group,
/// binding), then uniform members, then push constants, are the kernel's parameters). A
/// shader that does not translate is `CMDGRAPH_SYCL_ERROR_COMPILE` with its diagnostic.
///
/// # Safety
/// `ctx` is NULL or a live context; the strings NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_context_register_shader(
    ctx: *mut cmdgraph_sycl_context,
    lang: i32,
    source: *const c_char,
    entry: *const c_char,
    kernel_name: *const c_char,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(ctx, |c| {
            let lang = match lang {
                0 => cmdgraph_shader::Lang::Wgsl,
                1 => cmdgraph_shader::Lang::Glsl,
                v => return Err(Error::invalid(format!("{v} is not a cmdgraph_sycl_shader_lang (0 or 1)"))),
            };
            let (source, entry, kernel) =
                (name(source, "shader source")?, name(entry, "entry point")?, name(kernel_name, "kernel name")?);
            let kernel = kernel.strip_prefix('@').unwrap_or(kernel);
            let translated = cmdgraph_shader::translate(lang, source, entry, kernel).map_err(|e| {
                let line = source.get(..e.span.start).map_or(1, |s| s.lines().count().max(1));
                Error::compile(format!(
                    "shader `{entry}` (line {line}): {}{}",
                    e.message,
                    if e.help.is_empty() { String::new() } else { format!("; help: {}", e.help) }
                ))
            })?;
            register_text(&c.shared, &translated.text)
        })
    }
}

/// The message of the last call on `ctx` ("" after a success); the thread's for NULL.
///
/// # Safety
/// `ctx` is NULL or a live context.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_context_last_error(ctx: *mut cmdgraph_sycl_context) -> *const c_char {
    // SAFETY: the caller's contract.
    unsafe { last_error_of(ctx) }
}

/// Frees the context handle; NULL does nothing. Queues, graphs and other handles made from
/// it keep the context alive until they are destroyed too.
///
/// # Safety
/// `ctx` is NULL or a live context, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_context_destroy(ctx: *mut cmdgraph_sycl_context) {
    // SAFETY: the caller's contract.
    unsafe { destroy(ctx) }
}
