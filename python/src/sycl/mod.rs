//! `cmdgraph.sycl`: the SYCL-like graph API of `cmdgraph-sycl` from Python (docs/python.md,
//! "SYCL"). Every class wraps the crate's handle of the same name; SYCL's errors raise
//! `cmdgraph.SyclError` with the `errc` name as `.code` and the §22 row as `.row`.
//!
//! The crate's handles are `Rc`s, so every class here is `unsendable`: an object is used
//! from the thread that made it (another thread gets a `RuntimeError`). Calls that may run a
//! graph or wait for one release the GIL ([`detach`]) so that a host task written in Python
//! can take it on the device's worker thread. [`handler`] holds the command-group handler
//! and the host tasks, [`graph`] the queues, graphs and dynamic objects, [`memory`] USM,
//! buffers and pointers.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

pub mod graph;
pub mod handler;
pub mod memory;

use cmdgraph_sycl as s;

/// Moves a value that is not `Send` into [`Python::detach`], which runs its closure on the
/// calling thread: the value never reaches another thread.
#[allow(unsafe_code)]
mod confined {
    /// A value carried through `Python::detach` on the thread that owns it.
    pub struct Confined<T>(T);

    // SAFETY: `Confined` is built only by `super::detach`, which hands it to
    // `Python::detach`; that runs the closure on the current thread and returns before
    // `detach` does, so the wrapped value (the crate's `Rc` handles) is only ever touched by
    // the thread that owns it. While the GIL is released, no other Python thread can reach
    // the same handles: every class of this module is `unsendable`, so PyO3 refuses their
    // use from any thread but the one that created them.
    unsafe impl<T> Send for Confined<T> {}

    impl<T> Confined<T> {
        pub fn new(value: T) -> Confined<T> {
            Confined(value)
        }

        pub fn into_inner(self) -> T {
            self.0
        }
    }
}

use confined::Confined;

/// Runs `f` with the GIL released (the crate may wait for a device whose worker thread runs
/// a Python host task), on this thread.
pub fn detach<T>(py: Python<'_>, f: impl FnOnce() -> T) -> T {
    let f = Confined::new(f);
    py.detach(move || {
        let f = f.into_inner();
        Confined::new(f())
    })
    .into_inner()
}

/// The Ctrl-C (or other exception) that stopped the last in-process compile of a first
/// finalize, raised by `finalize` in place of the SYCL error the compile's end became.
static INTERRUPTED: std::sync::Mutex<Option<PyErr>> = std::sync::Mutex::new(None);

/// Compiles a graph's module at its first finalize, as `cmdgraph compile` does, stopping at
/// the next step when Ctrl-C comes (as `Module.compile` does; the finalize runs with the GIL
/// released, and each step takes it to look at pending signals).
fn compile_interruptibly(module: &cmdgraph_ir::Module) -> std::result::Result<Vec<u8>, String> {
    let passes = cmdgraph_passes::default_pipeline();
    let options = cmdgraph_codegen::Options::default();
    let stop: std::sync::Mutex<Option<PyErr>> = std::sync::Mutex::new(None);
    let compiler = crate::module::Interruptible { inner: &cmdgraph_codegen::bundle::Llvm, stop: &stop };
    let mut on_progress = |p: cmdgraph_codegen::bundle::Progress<'_>| crate::module::report(&stop, None, p);
    let compiled = cmdgraph_codegen::bundle::compile_module_configured(
        module,
        &passes,
        &cmdgraph_codegen::bundle::PipelineOptions::default(),
        &options,
        &compiler,
        &mut on_progress,
    );
    if let Some(e) = stop.into_inner().unwrap_or_else(|p| p.into_inner()) {
        if let Ok(mut slot) = INTERRUPTED.lock() {
            *slot = Some(e);
        }
        return Err("the compile was interrupted".into());
    }
    let (bundle, _) = compiled.map_err(|e| e.to_string())?;
    bundle.to_bytes().map_err(|e| e.to_string())
}

/// The interrupt that ended the last in-process compile, if one did (taken once).
pub fn take_interrupt() -> Option<PyErr> {
    INTERRUPTED.lock().ok().and_then(|mut slot| slot.take())
}

/// A `SyclError` as `cmdgraph.SyclError(message, code, row)`.
pub fn sycl_err(e: s::SyclError) -> PyErr {
    Python::attach(|py| {
        let made = py
            .import("cmdgraph._errors")
            .and_then(|m| m.getattr("SyclError"))
            .and_then(|c| c.call1((e.to_string(), e.code.name(), e.row)));
        let err = match made {
            Ok(instance) => PyErr::from_value(instance),
            Err(_) => pyo3::exceptions::PyRuntimeError::new_err(e.to_string()),
        };
        crate::host::chain(py, &err, &e.message);
        err
    })
}

/// `Result<T, SyclError>` into a `PyResult`.
pub trait OrRaise<T> {
    /// The value, or the error as `cmdgraph.SyclError`.
    fn or_raise(self) -> PyResult<T>;
}

impl<T> OrRaise<T> for s::Result<T> {
    fn or_raise(self) -> PyResult<T> {
        self.map_err(sycl_err)
    }
}

/// The element type of `dtype`: a NumPy dtype (or anything `numpy.dtype()` takes) or an IR
/// type name (`f32`, `vec4<f32>`).
pub fn elem_type(py: Python<'_>, dtype: &Bound<'_, PyAny>) -> PyResult<s::Type> {
    if let Ok(name) = dtype.extract::<String>() {
        if let Some(t) = ir_type(&name) {
            return Ok(t);
        }
    }
    let np = py.import("numpy")?;
    let d = np.call_method1("dtype", (dtype,)).map_err(|_| PyTypeError::new_err(format!("{dtype} is not a dtype")))?;
    let s: String = d.getattr("str")?.extract()?;
    scalar_of_dtype(&s)
        .map(s::Type::scalar)
        .ok_or_else(|| PyTypeError::new_err(format!("dtype {s:?} has no IR element type")))
}

/// An IR type name (`f32`, `vec4<u32>`).
fn ir_type(name: &str) -> Option<s::Type> {
    let scalar = |n: &str| s::ScalarType::ALL.into_iter().find(|t| t.to_string() == n);
    if let Some(t) = scalar(name) {
        return Some(s::Type::scalar(t));
    }
    let inner = name.strip_prefix("vec")?;
    let (lanes, rest) = inner.split_at(1);
    let elem = rest.strip_prefix('<')?.strip_suffix('>')?;
    let lanes: u8 = lanes.parse().ok()?;
    let t = s::Type { scalar: scalar(elem)?, lanes };
    matches!(lanes, 2..=4).then_some(t)
}

/// The scalar type of a NumPy dtype string (`<f4`).
pub fn scalar_of_dtype(d: &str) -> Option<s::ScalarType> {
    s::ScalarType::ALL
        .into_iter()
        .find(|t| crate::arrays::dtype(*t).trim_start_matches(['<', '|']) == d.trim_start_matches(['<', '|', '=']))
}

/// An access mode keyword (`read`, `write`, `read_write`, `no_init`).
pub fn access(word: &str) -> PyResult<s::Access> {
    s::Access::from_keyword(word)
        .ok_or_else(|| PyValueError::new_err(format!("access mode {word:?}: use read, write, read_write or no_init")))
}

/// A USM kind keyword (`device`, `shared`, `host`).
pub fn usm_kind(word: &str) -> PyResult<s::UsmKind> {
    match word {
        "device" => Ok(s::UsmKind::Device),
        "shared" => Ok(s::UsmKind::Shared),
        "host" => Ok(s::UsmKind::Host),
        _ => Err(PyValueError::new_err(format!("usm kind {word:?}: use device, shared or host"))),
    }
}

/// A range: an int or a sequence of 1 to 3 ints.
pub fn to_range(obj: &Bound<'_, PyAny>) -> PyResult<s::Range> {
    if let Ok(n) = obj.extract::<u64>() {
        return Ok(s::Range(vec![n]));
    }
    let dims: Vec<u64> =
        obj.extract().map_err(|_| PyTypeError::new_err("a range is an int or a tuple of 1 to 3 ints"))?;
    Ok(s::Range(dims))
}

/// `sycl::nd_range`: global and local sizes and an optional offset.
///
/// >>> r = sycl.NdRange((1024,), (64,))
#[pyclass(unsendable, module = "cmdgraph.sycl", name = "NdRange")]
#[derive(Clone)]
pub struct NdRange(pub s::NdRange);

#[pymethods]
impl NdRange {
    #[new]
    #[pyo3(signature = (global_range, local_range, offset = None))]
    fn new(
        global_range: &Bound<'_, PyAny>,
        local_range: &Bound<'_, PyAny>,
        offset: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<NdRange> {
        let offset = match offset {
            Some(o) => to_range(o)?.0,
            None => Vec::new(),
        };
        Ok(NdRange(s::NdRange { global: to_range(global_range)?.0, local: to_range(local_range)?.0, offset }))
    }

    /// The global range.
    fn get_global_range(&self) -> Vec<u64> {
        self.0.global.clone()
    }

    /// The work-group (local) range.
    fn get_local_range(&self) -> Vec<u64> {
        self.0.local.clone()
    }

    fn __repr__(&self) -> String {
        format!("NdRange({:?}, {:?})", self.0.global, self.0.local)
    }
}

/// A `sycl::device`: a Vulkan device (graphs run from bundles compiled in process at their
/// first run) or the reference interpreter. `Device()` is SYCL's default device (the best
/// GPU, else the interpreter); `Device("llvmpipe")` the first whose name contains that.
///
/// >>> [d.name for d in sycl.Device.get_devices()]
/// ['llvmpipe (LLVM 19.1.7, 256 bits)', 'reference interpreter']
#[pyclass(unsendable, module = "cmdgraph.sycl", name = "Device")]
#[derive(Clone)]
pub struct Device(pub s::Device);

#[pymethods]
impl Device {
    #[new]
    #[pyo3(signature = (selector = None))]
    fn new(py: Python<'_>, selector: Option<&str>) -> PyResult<Device> {
        let all = detach(py, s::Device::all);
        match selector {
            None => Ok(Device(detach(py, s::Device::default_device))),
            Some(want) => {
                let want = want.to_lowercase();
                all.into_iter().find(|d| d.name().to_lowercase().contains(&want)).map(Device).ok_or_else(|| {
                    PyValueError::new_err(format!("no device whose name contains {want:?} (see Device.get_devices())"))
                })
            }
        }
    }

    /// Every device: the Vulkan devices, then the reference interpreter.
    #[staticmethod]
    fn get_devices(py: Python<'_>) -> Vec<Device> {
        detach(py, s::Device::all).into_iter().map(Device).collect()
    }

    /// `info::device::name`.
    #[getter]
    fn name(&self) -> String {
        self.0.name()
    }

    /// `"vulkan"` or `"interpreter"`.
    #[getter]
    fn backend(&self) -> &'static str {
        match self.0.backend() {
            s::Backend::Interpreter => "interpreter",
            s::Backend::Vulkan { .. } => "vulkan",
        }
    }

    /// The device's id (`device(id)` on graphs).
    #[getter]
    fn id(&self) -> u32 {
        self.0.id()
    }

    /// `has(aspect)`: `"ext_oneapi_graph"`, `"ext_oneapi_limited_graph"`, `"fp16"`, `"fp64"`.
    fn has(&self, aspect: &str) -> PyResult<bool> {
        let info = self.0.info();
        Ok(match aspect {
            "ext_oneapi_graph" => info.graph_support == s::GraphSupport::Full,
            "ext_oneapi_limited_graph" => info.graph_support != s::GraphSupport::None,
            "fp16" => info.fp16,
            "fp64" => info.fp64,
            _ => return Err(PyValueError::new_err(format!("unknown aspect {aspect:?}"))),
        })
    }

    fn __eq__(&self, other: PyRef<'_, Device>) -> bool {
        self.0 == other.0
    }

    fn __repr__(&self) -> String {
        format!("Device({:?})", self.0.name())
    }
}

/// A `sycl::context` over devices, and the registry of kernels, memory and host tasks that
/// its graphs share. A Vulkan device's graphs are compiled at their first run into
/// `bundle_dir` (a cache keyed by the graph's content; default: `cmdgraph-sycl-bundles-PID`
/// in the temporary directory, removed when the process exits); `validation=True` (or `CMDGRAPH_VK_VALIDATION=1`) turns the Khronos
/// validation layer on for those runs (any message fails the run).
///
/// >>> ctx = sycl.Context(sycl.Device("llvmpipe"))
#[pyclass(unsendable, module = "cmdgraph.sycl", name = "Context")]
#[derive(Clone)]
pub struct Context(pub s::Context);

static NEXT_CONTEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// A context over `devices`: a Vulkan device's graphs compile into `bundle_dir` (else the
/// temporary directory's `cmdgraph-sycl-bundles-PID`, which `cmdgraph/sycl.py` removes at
/// exit), with validation from `CMDGRAPH_VK_VALIDATION`
/// unless given.
pub fn new_context(
    devices: &[s::Device],
    bundle_dir: Option<std::path::PathBuf>,
    validation: Option<bool>,
) -> s::Context {
    let id = NEXT_CONTEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let ctx = s::Context::new(id, devices);
    // A graph without a bundle is compiled at its first finalize, in process, as `cmdgraph
    // compile` compiles it (set at run time, not through cmdgraph-sycl's `jit` feature, which
    // Cargo would turn on for every crate of a workspace build).
    ctx.compile_missing_bundles_with(std::rc::Rc::new(compile_interruptibly));
    let vulkan = devices.iter().any(|d| matches!(d.backend(), s::Backend::Vulkan { .. }));
    let validation = validation.unwrap_or_else(|| std::env::var_os("CMDGRAPH_VK_VALIDATION").is_some_and(|v| v == "1"));
    if let Some(dir) = bundle_dir {
        ctx.run_from_bundles(s::BundleSource { dir, validation });
    } else if vulkan {
        let dir = ctx
            .bundle_source()
            .map(|b| b.dir)
            .unwrap_or_else(|| std::env::temp_dir().join(format!("cmdgraph-sycl-bundles-{}", std::process::id())));
        ctx.run_from_bundles(s::BundleSource { dir, validation });
    }
    ctx
}

#[pymethods]
impl Context {
    #[new]
    #[pyo3(signature = (devices = None, *, bundle_dir = None, validation = None))]
    fn new(
        py: Python<'_>,
        devices: Option<&Bound<'_, PyAny>>,
        bundle_dir: Option<std::path::PathBuf>,
        validation: Option<bool>,
    ) -> PyResult<Context> {
        let devices: Vec<s::Device> = match devices {
            None => vec![detach(py, s::Device::default_device)],
            Some(d) => match d.extract::<PyRef<'_, Device>>() {
                Ok(one) => vec![one.0.clone()],
                Err(_) => {
                    let list: Vec<PyRef<'_, Device>> = d.extract()?;
                    list.iter().map(|d| d.0.clone()).collect()
                }
            },
        };
        if devices.is_empty() {
            return Err(PyValueError::new_err("a context needs at least one device"));
        }
        let ctx = new_context(&devices, bundle_dir, validation);
        Ok(Context(ctx))
    }

    /// The context's devices.
    fn get_devices(&self) -> Vec<Device> {
        self.0.devices().into_iter().map(Device).collect()
    }

    /// Registers every kernel of kernel-language text (`kernel @name(...) { ... }`), kernels
    /// written in WGSL or GLSL included (`kernel @k(...) wgsl entry "main" """..."""`, or a
    /// file relative to `base_dir`); returns them in order.
    ///
    /// >>> [k] = ctx.register_kernels('kernel @inc(%x: buf<f32, read_write>) { ... }')
    #[pyo3(signature = (text, base_dir = None))]
    fn register_kernels(
        &self,
        py: Python<'_>,
        text: &str,
        base_dir: Option<std::path::PathBuf>,
    ) -> PyResult<Vec<Kernel>> {
        let mut module = cmdgraph_ir::text::parse(text).map_err(|d| {
            sycl_err(s::SyclError::invalid(
                0,
                format!("kernel text does not parse:\n{}", cmdgraph_ir::diag::render_all(&d, "<kernels>", text)),
            ))
        })?;
        let shader = module.kernels.iter().any(|(_, k)| matches!(k.body, cmdgraph_ir::KernelBody::Shader { .. }));
        let resolved = if shader {
            let dir = base_dir.unwrap_or_else(|| std::path::PathBuf::from("."));
            cmdgraph_shader::resolve(&mut module, text, &dir).map_err(|errors| {
                let msg: String = errors.iter().map(|e| e.render("<kernels>", text)).collect();
                sycl_err(s::SyclError::invalid(0, format!("shader kernel does not translate:\n{msg}")))
            })?;
            cmdgraph_ir::text::print(&module)
        } else {
            text.to_string()
        };
        // A device_global the text declares is written, which waits for runs in flight.
        let ctx = self.0.clone();
        let kernels = detach(py, move || ctx.register_kernels_from_text(&resolved)).or_raise()?;
        Ok(kernels.into_iter().map(Kernel).collect())
    }

    /// This process's rank for the communication nodes of the context's graphs
    /// (`Handler.ext_send`, `ext_recv`, `ext_allreduce`): an object with `rank` and `size`
    /// and `send(to, tag, data)`, `recv(source, tag, nbytes) -> bytes` and
    /// `allgather(data) -> list of bytes`, e.g. over mpi4py (docs/python.md, "Ranks"). It is
    /// called with the GIL, on the host-task thread of a Vulkan device.
    fn set_communicator(&self, comm: &Bound<'_, PyAny>) -> PyResult<()> {
        let c = crate::comm::PyCommunicator::new(comm)?;
        self.0.set_communicator(std::sync::Arc::new(std::sync::Mutex::new(c)));
        Ok(())
    }

    /// The `device_global` `name` of this context (declared by kernel text), or None.
    fn device_global(&self, name: &str) -> Option<graph::DeviceGlobal> {
        self.0.device_global(name.trim_start_matches('@')).map(graph::DeviceGlobal)
    }

    /// The registered kernel `name`, or None.
    fn kernel(&self, name: &str) -> Option<Kernel> {
        self.0.kernel(name.trim_start_matches('@')).map(Kernel)
    }

    fn __repr__(&self) -> String {
        format!("Context({})", self.0.id())
    }
}

/// A kernel registered with a context (`Context.register_kernels`): what `parallel_for` and
/// `single_task` launch. Scalar arguments are converted to its parameters' types.
#[pyclass(unsendable, module = "cmdgraph.sycl", name = "Kernel")]
#[derive(Clone)]
pub struct Kernel(pub s::KernelRef);

#[pymethods]
impl Kernel {
    /// The kernel's name.
    #[getter]
    fn name(&self) -> String {
        self.0.name().to_string()
    }

    /// The parameter types as written (`buf<f32, read>`, `f32`).
    #[getter]
    fn params(&self) -> Vec<String> {
        self.0
            .params()
            .iter()
            .map(|p| match p {
                cmdgraph_ir::ParamType::Value(t) => t.to_string(),
                cmdgraph_ir::ParamType::Buffer { elem, access } => format!("buf<{elem}, {}>", access.keyword()),
                cmdgraph_ir::ParamType::Local { elem } => format!("local<{elem}>"),
            })
            .collect()
    }

    fn __repr__(&self) -> String {
        format!("Kernel(@{})", self.0.name())
    }
}

/// A `sycl::event`: returned by submissions; `wait()` raises the run's failure.
#[pyclass(unsendable, module = "cmdgraph.sycl", name = "Event")]
#[derive(Clone)]
pub struct Event(pub s::Event);

#[pymethods]
impl Event {
    /// `event::wait()`: waits for the command; raises SyclError if its run failed (a host
    /// task that raised, a device error), or for an event of a recording queue (row 50).
    fn wait(&self, py: Python<'_>) -> PyResult<()> {
        let e = self.0.clone();
        detach(py, move || e.wait()).or_raise()
    }

    /// `info::event::command_execution_status`: `"complete"` or `"running"`.
    fn get_status(&self, py: Python<'_>) -> PyResult<&'static str> {
        let e = self.0.clone();
        let st = detach(py, move || e.get_status()).or_raise()?;
        Ok(match st {
            s::EventStatus::Submitted => "submitted",
            s::EventStatus::Running => "running",
            s::EventStatus::Complete => "complete",
        })
    }

    /// `get_profiling_info`: `{"command_submit", "command_start", "command_end"}` in ns.
    fn get_profiling_info(&self, py: Python<'_>) -> PyResult<std::collections::BTreeMap<&'static str, u64>> {
        let e = self.0.clone();
        let p = detach(py, move || e.get_profiling_info()).or_raise()?;
        Ok([("command_submit", p.submit), ("command_start", p.start), ("command_end", p.end)].into_iter().collect())
    }

    /// Whether a recording queue returned it (it names a node, and never runs).
    #[getter]
    fn is_recorded(&self) -> bool {
        self.0.is_recorded()
    }
}

/// A node of a modifiable graph.
#[pyclass(unsendable, module = "cmdgraph.sycl", name = "Node")]
#[derive(Clone)]
pub struct Node(pub s::Node);

#[pymethods]
impl Node {
    /// The node's name in the IR (`%n0`'s `n0`).
    #[getter]
    fn name(&self) -> String {
        self.0.name()
    }

    /// `get_type()`: `"kernel"`, `"memcpy"`, `"host_task"`, `"empty"`, ...
    fn get_type(&self) -> &'static str {
        self.0.get_type().name()
    }

    /// `get_predecessors()`.
    fn get_predecessors(&self) -> Vec<Node> {
        self.0.get_predecessors().into_iter().map(Node).collect()
    }

    /// `get_successors()`.
    fn get_successors(&self) -> Vec<Node> {
        self.0.get_successors().into_iter().map(Node).collect()
    }

    /// `node::get_node_from_event(event)`: the node a recorded submission made.
    #[staticmethod]
    fn get_node_from_event(event: PyRef<'_, Event>) -> PyResult<Node> {
        s::Node::get_node_from_event(&event.0).map(Node).or_raise()
    }

    /// `update_range(range)` of a kernel node (then `ExecutableGraph.update(node)`).
    fn update_range(&self, range: &Bound<'_, PyAny>) -> PyResult<()> {
        self.0.update_range(to_range(range)?).or_raise()
    }

    /// `update_nd_range(nd_range)`.
    fn update_nd_range(&self, nd_range: PyRef<'_, NdRange>) -> PyResult<()> {
        self.0.update_nd_range(nd_range.0.clone()).or_raise()
    }

    fn __eq__(&self, other: PyRef<'_, Node>) -> bool {
        self.0 == other.0
    }

    fn __repr__(&self) -> String {
        format!("Node(%{}, {})", self.0.name(), self.0.get_type().name())
    }
}

/// Adds the `cmdgraph._cmdgraph.sycl` submodule (re-exported as `cmdgraph.sycl`).
pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(parent.py(), "sycl")?;
    m.add_class::<Device>()?;
    m.add_class::<Context>()?;
    m.add_class::<Kernel>()?;
    m.add_class::<Event>()?;
    m.add_class::<Node>()?;
    m.add_class::<NdRange>()?;
    memory::register(&m)?;
    handler::register(&m)?;
    graph::register(&m)?;
    parent.add_submodule(&m)?;
    Ok(())
}
