//! Precompiled bundles for executable graphs (docs/bundle.md, "Keys"): where a graph's
//! bundle is, the error when it is missing, compiling it under the `jit` feature, and the
//! executor made from it.

use crate::error::{Result, SyclError};
use crate::exec::ExecutableGraph;
use crate::platform::BundleSource;
use cmdgraph_ir::runtime::Runtime;

/// Where `exec` runs: from bundles of `BundleSource` on a Vulkan device, or (`None`) on the
/// interpreter. A Vulkan device runs from bundles only, so it needs a bundle source; with
/// one set (`Context::run_from_bundles`, `CMDGRAPH_BUNDLE_DIR`), an interpreter device's
/// graphs run on the default Vulkan device instead.
pub(crate) fn placement(exec: &ExecutableGraph) -> Result<Option<(BundleSource, cmdgraph_executor::DeviceChoice)>> {
    use crate::platform::Backend;
    use cmdgraph_executor::DeviceChoice;
    match (exec.0.device.backend(), exec.0.ctx.bundle_source()) {
        (Backend::Vulkan { index, .. }, Some(source)) => Ok(Some((source, DeviceChoice::Index(*index)))),
        (Backend::Vulkan { name, .. }, None) => Err(SyclError::invalid(
            0,
            format!(
                "finalize: device `{name}` runs graphs from precompiled bundles: call \
                 Context::run_from_bundles(BundleSource {{ dir, .. }}) or set {} to the directory \
                 `cmdgraph compile --bundle-dir` writes",
                crate::platform::BUNDLE_DIR_VAR
            ),
        )),
        (Backend::Interpreter, Some(source)) => Ok(Some((source, DeviceChoice::Default))),
        (Backend::Interpreter, None) => Ok(None),
    }
}

/// The bundle of `exec` in `source.dir`, `KEY.cgb`, which must exist (the error names the
/// graph, the key and the commands that make the bundle), and the key: computing it prints
/// and hashes the whole module, so it is done once.
pub(crate) fn bundle_path(exec: &ExecutableGraph, source: &BundleSource) -> Result<(std::path::PathBuf, String)> {
    let key = exec.bundle_key();
    let path = source.dir.join(format!("{key}.cgb"));
    if path.is_file() {
        return Ok((path, key));
    }
    let compiler = exec.0.ctx.0.borrow().compiler.clone();
    if let Some(compile) = compiler {
        let module = exec.0.state.borrow().module.clone();
        let bytes = compile(&module)
            .map_err(|e| SyclError::invalid(0, format!("finalize: compiling `{}`: {e}", path.display())))?;
        return write_bundle(&path, &bytes).map(|()| (path, key));
    }
    #[cfg(feature = "jit")]
    return compile_missing(exec, &path).map(|()| (path, key));
    #[cfg(not(feature = "jit"))]
    Err(missing_bundle(exec, source, &path, &key))
}

/// The error for a missing bundle: the graph, the key and the commands that make it.
#[cfg(not(feature = "jit"))]
fn missing_bundle(exec: &ExecutableGraph, source: &BundleSource, path: &std::path::Path, key: &str) -> SyclError {
    let name = {
        let st = exec.0.state.borrow();
        st.module.graphs[st.graph].name.clone()
    };
    SyclError::invalid(
        0,
        format!(
            "finalize: graph `@{name}` has no precompiled bundle `{}` (key {key}); make it with \
             `CMDGRAPH_EXPORT_DIR=DIR <the application>` (or `ExecutableGraph::export_module(DIR)`) \
             and then `cmdgraph compile DIR/{key}.cgir --bundle-dir {}`, or build cmdgraph-sycl \
             with the `jit` feature to compile it at finalize",
            path.display(),
            source.dir.display()
        ),
    )
}

/// `jit`: compiles `exec`'s module as `cmdgraph compile` would (the default pipeline, -O2)
/// and writes the bundle to `path` (through a temporary file renamed over it, so a reader
/// never sees half a bundle), for this and later runs of the application.
#[cfg(feature = "jit")]
fn compile_missing(exec: &ExecutableGraph, path: &std::path::Path) -> Result<()> {
    use cmdgraph_codegen::bundle::{compile_module, Llvm};
    let fail = |what: String| SyclError::invalid(0, format!("finalize: compiling `{}`: {what}", path.display()));
    let module = exec.0.state.borrow().module.clone();
    let spans = module.graphs.iter().any(|(_, g)| cmdgraph_ir::placement::spans_devices(&module, g));
    let passes = match spans {
        true => cmdgraph_passes::with_place_devices(cmdgraph_passes::default_pipeline()),
        false => cmdgraph_passes::default_pipeline(),
    };
    let (bundle, _) = compile_module(&module, &passes, &cmdgraph_codegen::Options::default(), &Llvm)
        .map_err(|e| fail(e.to_string()))?;
    let bytes = bundle.to_bytes().map_err(|e| fail(e.to_string()))?;
    write_bundle(path, &bytes)
}

/// Writes a compiled bundle to `path` through a temporary file renamed over it, so that a
/// reader never sees half a bundle.
fn write_bundle(path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    let fail = |what: String| SyclError::invalid(0, format!("finalize: writing `{}`: {what}", path.display()));
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| fail(e.to_string()))?;
    let tmp = path.with_extension(format!("cgb.tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(|e| fail(e.to_string()))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail(e.to_string())
    })
}

/// The bytes of `exec`'s bundle, checked to have been made from exactly this module, and
/// its path (for messages).
fn checked_bundle(
    exec: &ExecutableGraph,
    source: &BundleSource,
) -> Result<(Vec<u8>, cmdgraph_executor::Loaded, std::path::PathBuf)> {
    let (path, key) = bundle_path(exec, source)?;
    let fail = |what: String| SyclError::invalid(0, format!("bundle `{}`: {what}", path.display()));
    let bytes = std::fs::read(&path).map_err(|e| fail(e.to_string()))?;
    let loaded = cmdgraph_executor::load::load_bytes(&bytes).map_err(|e| fail(e.to_string()))?;
    let made_from = cmdgraph_ir::bundle::key::graph_key(loaded.source().map_err(|e| fail(e.to_string()))?);
    if made_from != key {
        return Err(fail(format!("it was made from another module (key {made_from}, the graph's is {key})")));
    }
    Ok((bytes, loaded, path))
}

/// A multi-device executor for `exec`'s bundle, whose graph has nodes on several devices of
/// its context (docs/multi-device.md, "The SYCL-like API"): IR device N is the context's
/// device with id N, on its Vulkan device (the default one for an interpreter device); the
/// ids must run from 0 with the graph's device 0, as `MultiExecutor` numbers devices.
pub(crate) fn from_bundle_on_devices(exec: &ExecutableGraph, source: &BundleSource) -> Result<Box<dyn Runtime>> {
    use crate::platform::Backend;
    use cmdgraph_executor::DeviceChoice;
    let (bytes, loaded, path) = checked_bundle(exec, source)?;
    let fail = |what: String| SyclError::invalid(0, format!("bundle `{}`: {what}", path.display()));
    let named = cmdgraph_ir::placement::devices_named(&loaded.module);
    let devices = exec.0.ctx.devices();
    let mut options = Vec::with_capacity(named as usize);
    for n in 0..named {
        let dev = devices.iter().find(|d| d.id() == n).ok_or_else(|| {
            SyclError::invalid(
                0,
                format!(
                    "finalize: the graph runs on device {n}, and context {} has no device with id {n}; a multi-device graph's devices are numbered from 0",
                    exec.0.ctx.id()
                ),
            )
        })?;
        let device = match dev.backend() {
            Backend::Vulkan { index, .. } => DeviceChoice::Index(*index),
            Backend::Interpreter => DeviceChoice::Default,
        };
        options.push(cmdgraph_executor::ContextOptions { validation: source.validation, device, ..Default::default() });
    }
    let multi = cmdgraph_executor::MultiExecutor::new(&bytes, &options).map_err(|e| fail(e.to_string()))?;
    Ok(Box::new(multi))
}

/// An executor on the default Vulkan device for `exec`'s bundle. The bundle must have been
/// made from exactly this module: its source's key is checked against the graph's.
pub(crate) fn from_bundle(
    exec: &ExecutableGraph,
    source: &BundleSource,
    device: cmdgraph_executor::DeviceChoice,
) -> Result<Box<dyn Runtime>> {
    let (_, loaded, path) = checked_bundle(exec, source)?;
    let fail = |what: String| SyclError::invalid(0, format!("bundle `{}`: {what}", path.display()));
    let options = cmdgraph_executor::ContextOptions { validation: source.validation, device, ..Default::default() };
    let executor = cmdgraph_executor::Executor::new(loaded, &options).map_err(|e| fail(e.to_string()))?;
    Ok(Box::new(executor))
}
