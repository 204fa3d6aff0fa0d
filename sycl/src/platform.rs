//! Devices and contexts.
//!
//! A [`Context`] is also the module-level registry of everything graphs share: kernels,
//! USM allocations, buffers and `device_global`s (one namespace of `@` names, as in the
//! IR), the contents of that memory, and the host-task and native-command callbacks.
//! Every module the builder writes starts with the context's kernels and memory objects
//! in registration order, so their handles are the same in every graph of the context.

use crate::error::{Result, SyclError};
use crate::run::Callbacks;
use cmdgraph_ir::{Arena, Handle, Item, Kernel, MemoryObject};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

/// How far a device supports `sycl_ext_oneapi_graph` (000 §6 Table 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphSupport {
    /// `aspect::ext_oneapi_graph`: everything, executable graph update included.
    Full,
    /// `aspect::ext_oneapi_limited_graph` only: no executable graph update.
    Limited,
    /// Neither aspect: graphs cannot be built for this device.
    None,
}

/// What a device can do, as far as the builder checks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The graph aspects the device reports.
    pub graph_support: GraphSupport,
    /// `aspect::fp16`: kernels that use `f16` can run.
    pub fp16: bool,
    /// `aspect::fp64`: kernels that use `f64` can run (a Vulkan device with `shaderFloat64`).
    pub fp64: bool,
    /// Native commands can add work to the device's native graph (004).
    pub native_graph: bool,
}

impl Default for DeviceInfo {
    fn default() -> Self {
        DeviceInfo { graph_support: GraphSupport::Full, fp16: true, fp64: true, native_graph: true }
    }
}

/// Where a device's graphs run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The reference interpreter: no device, every run is complete when it is submitted.
    Interpreter,
    /// A Vulkan physical device: graphs run from precompiled bundles ([`BundleSource`],
    /// docs/bundle.md "Keys").
    Vulkan {
        /// Its index in `vkEnumeratePhysicalDevices`.
        index: usize,
        /// `deviceName`.
        name: String,
        /// Discrete or integrated GPU, CPU (llvmpipe), ...
        kind: cmdgraph_executor::DeviceKind,
    },
}

struct DeviceInner {
    id: u32,
    info: DeviceInfo,
    backend: Backend,
}

/// A `sycl::device`. Copies share one device; two devices are the same when their ids are.
#[derive(Clone)]
pub struct Device(Rc<DeviceInner>);

impl Device {
    /// A device with id `id` (written as `device(id)` on graphs) and capabilities `info`,
    /// whose graphs run on the reference interpreter.
    pub fn new(id: u32, info: DeviceInfo) -> Device {
        Device(Rc::new(DeviceInner { id, info, backend: Backend::Interpreter }))
    }

    /// Vulkan device `desc` as device `id`. Native commands have no Vulkan form through the
    /// API, so it reports no native graph (finalize refuses them with row 21).
    pub fn vulkan(id: u32, desc: &cmdgraph_executor::DeviceDescription) -> Device {
        let info = DeviceInfo { native_graph: false, ..DeviceInfo::default() };
        let backend = Backend::Vulkan { index: desc.index, name: desc.name.clone(), kind: desc.kind };
        Device(Rc::new(DeviceInner { id, info, backend }))
    }

    /// Every device: the Vulkan devices the executor can use (Vulkan 1.3 with a compute
    /// queue), numbered from 0 in enumeration order, then the reference interpreter. Without
    /// a Vulkan loader, only the interpreter.
    pub fn all() -> Vec<Device> {
        let vulkan = cmdgraph_executor::vulkan_devices().unwrap_or_default();
        let mut out: Vec<Device> = vulkan.iter().enumerate().map(|(i, d)| Device::vulkan(i as u32, d)).collect();
        out.push(Device::new(vulkan.len() as u32, DeviceInfo::default()));
        out
    }

    /// The default device: the best GPU of [`Device::all`] (discrete before integrated
    /// before virtual, then enumeration order), else the reference interpreter. A CPU
    /// Vulkan device (llvmpipe) is never the default: the interpreter is the reference.
    pub fn default_device() -> Device {
        let all = Device::all();
        let rank = |d: &Device| match &d.0.backend {
            Backend::Vulkan { kind, index, .. } if kind.is_gpu() => Some((*kind, *index)),
            _ => None,
        };
        let best = all.iter().filter_map(|d| rank(d).map(|r| (r, d))).min_by_key(|(r, _)| *r).map(|(_, d)| d.clone());
        best.unwrap_or_else(|| all[all.len() - 1].clone())
    }

    /// Where this device's graphs run.
    pub fn backend(&self) -> &Backend {
        &self.0.backend
    }

    /// `info::device::name`: the Vulkan device's name, or `reference interpreter`.
    pub fn name(&self) -> String {
        match &self.0.backend {
            Backend::Interpreter => "reference interpreter".into(),
            Backend::Vulkan { name, .. } => name.clone(),
        }
    }

    /// The device's id.
    pub fn id(&self) -> u32 {
        self.0.id
    }

    /// The device's capabilities.
    pub fn info(&self) -> DeviceInfo {
        self.0.info
    }
}

impl PartialEq for Device {
    fn eq(&self, other: &Device) -> bool {
        self.0.id == other.0.id
    }
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Device({})", self.0.id)
    }
}

/// The shared state of a context.
pub(crate) struct ContextInner {
    pub(crate) id: u32,
    pub(crate) devices: Vec<Device>,
    pub(crate) kernels: Arena<Kernel>,
    pub(crate) memories: Arena<MemoryObject>,
    /// Kernels and memory objects in registration order (the module's first items).
    pub(crate) items: Vec<Item>,
    /// Every `@` name in use: kernels, memory objects, graphs, queues.
    names: BTreeSet<String>,
    /// Contents of every memory object, by memory handle index.
    pub(crate) store: Vec<Vec<u8>>,
    /// Host-task and native-command callbacks, by name.
    pub(crate) callbacks: Callbacks,
    /// Where executable graphs find their precompiled bundles (`None`: the interpreter).
    pub(crate) bundles: Option<BundleSource>,
    /// What compiles a missing bundle at finalize ([`Context::compile_missing_bundles_with`]).
    pub(crate) compiler: Option<BundleCompiler>,
    /// Which runtime holds the memory now, and the runs not settled yet.
    pub(crate) in_flight: crate::runner::InFlight,
    /// This process's rank, for communication commands ([`Context::set_communicator`]).
    pub(crate) communicator: Option<cmdgraph_ir::comm::SharedCommunicator>,
}

/// Compiles a graph's module into bundle bytes (as `cmdgraph compile` does), or says why
/// not: set with [`Context::compile_missing_bundles_with`].
pub type BundleCompiler = Rc<dyn Fn(&cmdgraph_ir::Module) -> std::result::Result<Vec<u8>, String>>;

/// Runs executable graphs on the default Vulkan device from precompiled bundles
/// ([`Context::run_from_bundles`]; docs/bundle.md, "Keys").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BundleSource {
    /// The directory holding `KEY.cgb` files (`cmdgraph compile --bundle-dir`).
    pub dir: std::path::PathBuf,
    /// Enable the Khronos validation layer on the executor's device.
    pub validation: bool,
}

impl ContextInner {
    /// Claims `name` in the module namespace, or picks `<prefix><n>` when `name` is None.
    pub(crate) fn claim_name(&mut self, name: Option<&str>, prefix: &str) -> Result<String> {
        match name {
            Some(name) => {
                check_name(name)?;
                if !self.names.insert(name.to_string()) {
                    return Err(SyclError::invalid(
                        0,
                        format!("the name `@{name}` is already used by a kernel, memory object, graph or queue of this context; pick another name"),
                    ));
                }
                Ok(name.to_string())
            }
            None => {
                let mut n = 0usize;
                loop {
                    let candidate = format!("{prefix}{n}");
                    if self.names.insert(candidate.clone()) {
                        return Ok(candidate);
                    }
                    n += 1;
                }
            }
        }
    }

    /// Registers a memory object and zero-fills its contents.
    pub(crate) fn add_memory(&mut self, mem: MemoryObject) -> Handle<MemoryObject> {
        let bytes = usize::try_from(mem.size_bytes()).unwrap_or(0);
        let handle = self.memories.append(mem, cmdgraph_ir::Span::UNDEFINED);
        self.items.push(Item::Memory(handle));
        if self.store.len() <= handle.index() {
            self.store.resize(handle.index() + 1, Vec::new());
        }
        self.store[handle.index()] = vec![0; bytes];
        handle
    }
}

/// Checks that `name` can be written as an IR name (`[A-Za-z0-9_.$-]+`, at most 1024 bytes).
pub(crate) fn check_name(name: &str) -> Result<()> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$' | '-');
    if name.is_empty() || name.len() > 1024 || !name.chars().all(ok_char) {
        return Err(SyclError::invalid(
            0,
            format!("`{name}` is not a valid name: use 1 to 1024 characters from [A-Za-z0-9_.$-]"),
        ));
    }
    Ok(())
}

/// A `sycl::context`: a set of devices, and the registry of kernels, memory and callbacks
/// that graphs of this context share. Copies share one context.
#[derive(Clone)]
pub struct Context(pub(crate) Rc<RefCell<ContextInner>>);

/// The environment variable that makes a new [`Context`] run from bundles in the directory
/// it names ([`Context::run_from_bundles`], validation off).
pub const BUNDLE_DIR_VAR: &str = "CMDGRAPH_BUNDLE_DIR";

/// With [`BUNDLE_DIR_VAR`]: `1` turns the Vulkan validation layer on for those runs (any
/// message fails the run).
pub const BUNDLE_VALIDATION_VAR: &str = "CMDGRAPH_BUNDLE_VALIDATION";

impl Context {
    /// A context with id `id` (written as `context(id)` on graphs) over `devices`.
    pub fn new(id: u32, devices: &[Device]) -> Context {
        Context(Rc::new(RefCell::new(ContextInner {
            id,
            devices: devices.to_vec(),
            kernels: Arena::new(),
            memories: Arena::new(),
            items: Vec::new(),
            names: BTreeSet::new(),
            store: Vec::new(),
            callbacks: Callbacks::default(),
            in_flight: Default::default(),
            communicator: None,
            compiler: None,
            bundles: std::env::var_os(BUNDLE_DIR_VAR).map(|dir| BundleSource {
                dir: dir.into(),
                validation: std::env::var_os(BUNDLE_VALIDATION_VAR).is_some_and(|v| v == "1"),
            }),
        })))
    }

    /// Runs this context's executable graphs on the default Vulkan device, each from the
    /// bundle `source.dir/KEY.cgb` that `cmdgraph compile --bundle-dir` made for it (KEY =
    /// `ExecutableGraph::bundle_key`); `finalize` fails, naming the graph, the key and the
    /// commands that make the bundle, when there is none. Without it (and without
    /// `CMDGRAPH_BUNDLE_DIR`), graphs run on the reference interpreter.
    pub fn run_from_bundles(&self, source: BundleSource) {
        self.0.borrow_mut().bundles = Some(source);
    }

    /// Compiles a graph's missing bundle at finalize with `compiler` (and writes it to the
    /// bundle directory for later runs), as the `jit` feature does with LLVM linked into
    /// this crate: a language binding that links the compiler anyway sets it at run time, so
    /// that no build of the workspace turns `jit` on for everyone (Cargo unifies features).
    pub fn compile_missing_bundles_with(&self, compiler: BundleCompiler) {
        self.0.borrow_mut().compiler = Some(compiler);
    }

    /// Runs the communication commands of this context's graphs (`handler.ext_send`,
    /// `ext_recv`, `ext_allreduce`; docs/mpi.md) through `comm`: this process's rank of an
    /// MPI job (`cmdgraph-mpi`), or one rank of `cmdgraph_ir::comm::local::ranks`, whichever
    /// runtime runs them (the interpreter, or the executor's host-task thread).
    pub fn set_communicator(&self, comm: cmdgraph_ir::comm::SharedCommunicator) {
        self.0.borrow_mut().communicator = Some(comm);
    }

    /// Undoes [`Context::run_from_bundles`] (and `CMDGRAPH_BUNDLE_DIR`) for graphs finalized
    /// later: an interpreter device's graphs run on the interpreter, and a Vulkan device's
    /// graphs cannot finalize (they run from bundles only).
    pub fn without_bundles(&self) {
        self.0.borrow_mut().bundles = None;
    }

    /// Where executable graphs find their bundles, if they run from bundles.
    pub fn bundle_source(&self) -> Option<BundleSource> {
        self.0.borrow().bundles.clone()
    }

    /// The context's id.
    pub fn id(&self) -> u32 {
        self.0.borrow().id
    }

    /// The context's devices.
    pub fn devices(&self) -> Vec<Device> {
        self.0.borrow().devices.clone()
    }

    /// Whether `device` belongs to this context.
    pub fn contains(&self, device: &Device) -> bool {
        self.0.borrow().devices.iter().any(|d| d == device)
    }

    /// Whether two handles name the same context.
    pub fn same(&self, other: &Context) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

impl PartialEq for Context {
    fn eq(&self, other: &Context) -> bool {
        self.same(other)
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Context({})", self.id())
    }
}
