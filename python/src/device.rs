//! `cmdgraph.Device` and `cmdgraph.Executable`: bundles run on Vulkan with NumPy arrays, as
//! `cmdgraph run` runs them (cli/src/cmd/run.rs), with the GIL released while the device
//! works.

use crate::arrays::{self, Layout};
use crate::bundle::Bundle;
use crate::engine::{Engine, Exec};
use crate::errors::{exec, Error, Kind, Result};
use crate::params::Update;
use cmdgraph_executor::{ContextOptions, DeviceChoice, DeviceDescription, Executor, RecordOptions};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// A Vulkan 1.3 device with a compute queue. `Device()` is the default one (a discrete GPU,
/// else integrated, virtual, then a CPU device such as llvmpipe); `Device("nvidia")` the
/// first whose name contains that, `Device(1)` the one at that index of `cmdgraph.devices()`.
/// `validation=True` (or `CMDGRAPH_VK_VALIDATION=1`) turns on the Khronos validation layer:
/// any message it reports makes a load or run raise DeviceError.
///
/// >>> dev = cmdgraph.Device()
/// >>> dev.name
/// 'llvmpipe (LLVM 19.1.7, 256 bits)'
#[pyclass(frozen, module = "cmdgraph._cmdgraph")]
pub struct Device {
    desc: DeviceDescription,
    validation: bool,
}

/// Every Vulkan device the executor can use, in enumeration order.
///
/// >>> [d.name for d in cmdgraph.devices()]
#[pyfunction]
pub fn devices() -> Result<Vec<Device>> {
    let all = cmdgraph_executor::vulkan_devices().map_err(|e| exec("Vulkan", &e))?;
    Ok(all.into_iter().map(|desc| Device { desc, validation: false }).collect())
}

/// `device=` as a choice: None, an index, or a name substring.
fn choice(device: Option<&Bound<'_, PyAny>>) -> PyResult<DeviceChoice> {
    let Some(d) = device.filter(|d| !d.is_none()) else { return Ok(DeviceChoice::Default) };
    if let Ok(i) = d.extract::<usize>() {
        return Ok(DeviceChoice::Index(i));
    }
    let name: String = d.extract().map_err(|_| Error::type_error("device must be None, an index or a name (str)"))?;
    Ok(DeviceChoice::parse(&name))
}

#[pymethods]
impl Device {
    #[new]
    #[pyo3(signature = (device = None, *, validation = false))]
    fn new(py: Python<'_>, device: Option<&Bound<'_, PyAny>>, validation: bool) -> PyResult<Device> {
        let choice = choice(device)?;
        let all = py.detach(cmdgraph_executor::vulkan_devices).map_err(|e| exec("Vulkan", &e))?;
        let found = match &choice {
            // What `DeviceChoice::Default` picks: the best kind, then the first.
            DeviceChoice::Default => all.iter().min_by_key(|d| (d.kind, d.index)),
            DeviceChoice::Index(i) => all.iter().find(|d| d.index == *i),
            DeviceChoice::Name(n) => all.iter().find(|d| d.name.to_lowercase().contains(&n.to_lowercase())),
        };
        let listed: Vec<String> = all.iter().map(|d| format!("{}: {}", d.index, d.name)).collect();
        let listed = if listed.is_empty() { "none".to_string() } else { listed.join(", ") };
        let desc = found.cloned().ok_or_else(|| {
            let message =
                format!("error: no Vulkan 1.3 device with a compute queue matches {choice} (devices: {listed})");
            Error::new(Kind::Device, message)
        })?;
        Ok(Device { desc, validation })
    }

    /// `deviceName`.
    #[getter]
    fn name(&self) -> &str {
        &self.desc.name
    }

    /// `discrete GPU`, `integrated GPU`, `CPU`, ...
    #[getter]
    fn kind(&self) -> String {
        self.desc.kind.to_string()
    }

    /// Its index in `cmdgraph.devices()`.
    #[getter]
    fn index(&self) -> usize {
        self.desc.index
    }

    fn __repr__(&self) -> String {
        format!("<cmdgraph.Device {}: {} ({})>", self.desc.index, self.desc.name, self.desc.kind)
    }

    /// Creates the pipelines of `bundle` on this device (memory starts zeroed) and returns
    /// the Executable. `profile=True` records per-node timestamps (for graphs with
    /// `enable_profiling`; `Executable.profile()` reads them). Host tasks run as no-ops unless
    /// `host_tasks` maps their callback names to Python callables, each called (on the
    /// device's worker thread, with the GIL) with a dict of the node's declared memory as
    /// NumPy arrays (docs/python.md, "Host tasks"). The GIL is released meanwhile.
    ///
    /// >>> exe = cmdgraph.Device().load(module.compile())
    #[pyo3(signature = (bundle, *, profile = false, host_tasks = None))]
    fn load(
        &self,
        py: Python<'_>,
        bundle: &Bundle,
        profile: bool,
        host_tasks: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Executable> {
        let host = bundle_host_tasks(bundle, host_tasks)?;
        let opts = self.options();
        let loaded = bundle.loaded.clone();
        let ex = py.detach(move || -> Result<Executor> {
            let mut ex = Executor::new(loaded, &opts).map_err(|e| exec("load", &e))?;
            // Host tasks run as no-ops, as in `cmdgraph run`, unless `host_tasks` gives them.
            for name in crate::module::host_callbacks(ex.module()) {
                ex.register_callback(&name, |_| Ok(()));
            }
            for (name, f) in host {
                ex.register_callback(&name, f);
            }
            if profile {
                let options = RecordOptions { node_profiling: true, ..ex.record_options() };
                ex.set_record_options(options);
            }
            layer_messages(ex.context().take_messages())?;
            Ok(ex)
        })?;
        let warnings = ex.warnings().to_vec();
        let validation = ex.context().validation();
        Ok(Executable::new(Engine::One(Box::new(ex)), warnings, validation, self.desc.name.clone()))
    }
}

impl Device {
    /// The executor options of this device.
    pub(crate) fn options(&self) -> ContextOptions {
        ContextOptions {
            validation: self.validation,
            device: DeviceChoice::Index(self.desc.index),
            ..ContextOptions::default()
        }
    }

    /// `deviceName`.
    pub(crate) fn device_name(&self) -> &str {
        &self.desc.name
    }
}

/// The callbacks `host_tasks=` gives for `bundle`'s host tasks (checked against the
/// callback names its module uses), each seeing its node's memory as NumPy arrays.
pub(crate) fn bundle_host_tasks(
    bundle: &Bundle,
    host_tasks: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<(String, crate::module::HostCallback)>> {
    let source = bundle.loaded.source().map_err(|e| exec("load", &e))?;
    let layouts = arrays::layouts(source);
    Ok(crate::host::given(host_tasks, &crate::module::host_callbacks(source))?
        .into_iter()
        .map(|(name, f)| (name, Box::new(crate::host::callback(f, &layouts)) as crate::module::HostCallback))
        .collect())
}

/// Fails when the validation layer said anything (every message is a failure, as for
/// `cmdgraph run --validation`).
pub(crate) fn layer_messages(messages: Vec<String>) -> Result<()> {
    if messages.is_empty() {
        return Ok(());
    }
    Err(Error::new(
        Kind::Device,
        format!("error: the validation layer reported {} message(s):\n{}", messages.len(), messages.join("\n")),
    ))
}

/// The executor and the graphs finalized so far.
struct Inner {
    ex: Engine,
    execs: BTreeMap<String, Exec>,
}

impl Inner {
    /// The executable graph of `graph`, finalized on first use.
    fn exec(&mut self, graph: &str) -> Result<Exec> {
        if let Some(id) = self.execs.get(graph) {
            return Ok(*id);
        }
        let id = self.ex.finalize(graph).map_err(|e| exec(&format!("@{graph}"), &e))?;
        self.execs.insert(graph.to_string(), id);
        Ok(id)
    }
}

/// A bundle loaded on a device: its memory objects keep their contents between runs
/// (zero at load), and each graph is finalized on its first run.
///
/// >>> exe = cmdgraph.Device().load(bundle)
/// >>> out = exe.run({"x": x, "y": y})
/// >>> out["y"]
#[pyclass(frozen, module = "cmdgraph._cmdgraph")]
pub struct Executable {
    inner: Mutex<Inner>,
    /// The module it runs (the bundle's optimized IR), for checking names and values.
    module: cmdgraph_ir::Module,
    layouts: Vec<Layout>,
    graphs: Vec<String>,
    warnings: Vec<String>,
    validation: bool,
    device: String,
}

impl Executable {
    /// An executable of `engine`; its graphs are those of the module that run alone (not the
    /// stage graphs `split-devices` made, which run as part of theirs).
    pub(crate) fn new(engine: Engine, warnings: Vec<String>, validation: bool, device: String) -> Executable {
        let module = engine.module().clone();
        let layouts = arrays::layouts(&module);
        let graphs = module
            .graphs
            .iter()
            .map(|(_, g)| g.name.clone())
            .filter(|n| !cmdgraph_ir::placement::is_stage_graph(&module, n))
            .collect();
        Executable {
            inner: Mutex::new(Inner { ex: engine, execs: BTreeMap::new() }),
            module,
            layouts,
            graphs,
            warnings,
            validation,
            device,
        }
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Inner>> {
        self.inner.lock().map_err(|_| Error::new(Kind::Device, "error: an earlier run panicked; load the bundle again"))
    }

    fn graph(&self, wanted: Option<&str>) -> Result<String> {
        match wanted {
            Some(g) => {
                let bare = g.strip_prefix('@').unwrap_or(g);
                if self.graphs.iter().any(|n| n == bare) {
                    Ok(bare.to_string())
                } else {
                    Err(Error::value(format!(
                        "the bundle has no graph named `@{bare}` (its graphs: @{})",
                        self.graphs.join(", @")
                    )))
                }
            }
            None if self.graphs.len() == 1 => Ok(self.graphs[0].clone()),
            None => Err(Error::value(format!(
                "the bundle has {} graphs; choose one with graph= (its graphs: @{})",
                self.graphs.len(),
                self.graphs.join(", @")
            ))),
        }
    }
}

#[pymethods]
impl Executable {
    /// Binds `inputs` (memory object name to NumPy array; every array is checked before any
    /// is bound: a wrong dtype or a non-array raises TypeError, a non-contiguous array or a
    /// wrong size ValueError, each naming the memory object), runs `graph` (needed when the
    /// bundle has several) `runs` times, and returns every `usm` and `buffer` memory object
    /// (or those named in `outputs`) as new arrays. Memory not given keeps its contents from
    /// the previous run. `params` maps dynamic parameters to new values (a bool, int or
    /// float of the parameter's type; `"@x"` or `("@x", byte_offset)` for a pointer; `"@b"`
    /// for an accessor) and `active` dynamic command groups to the alternative to run, both
    /// applied before the runs and kept for later ones. The GIL is released while the
    /// device works.
    ///
    /// >>> out = exe.run({"x": np.arange(1024, dtype=np.float32)}, outputs=["y"])
    /// >>> out = exe.run(params={"alpha": 0.5}, active={"act": 1})
    #[allow(clippy::too_many_arguments)] // the keyword arguments of one Python method
    #[pyo3(signature = (inputs = None, *, graph = None, runs = 1, outputs = None, params = None, active = None))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        inputs: Option<&Bound<'py, PyDict>>,
        graph: Option<&str>,
        runs: u32,
        outputs: Option<Vec<String>>,
        params: Option<&Bound<'py, PyDict>>,
        active: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let graph = self.graph(graph)?;
        let updates = crate::params::resolve(&self.module, &graph, params, active)?;
        let bound = arrays::inputs(py, &self.layouts, inputs)?;
        let wanted = arrays::outputs(&self.layouts, outputs)?;
        let at = format!("@{graph}");
        {
            // The arrays go straight into the staging buffers, with the GIL held so that no
            // Python code changes or frees them meanwhile (raw.rs).
            let mut inner = self.lock()?;
            for (name, array) in &bound {
                inner.ex.bind(name, crate::raw::bytes(array)?).map_err(|e| exec(&at, &e))?;
            }
        }
        let arrays = arrays::empties(py, &wanted)?;
        let mut targets = arrays
            .iter()
            .map(|a| a.as_ref().map(crate::raw::fresh_bytes_mut).transpose())
            .collect::<PyResult<Vec<_>>>()?;
        let vec3 = py.detach(|| -> Result<Vec<Vec<u8>>> {
            let mut inner = self.lock()?;
            let id = inner.exec(&graph)?;
            for update in &updates {
                match update {
                    Update::Param { name, value } => inner.ex.update_param(id, name, value.clone()),
                    Update::Active { name, index } => inner.ex.set_active(id, name, *index),
                }
                .map_err(|e| exec(&at, &e))?;
            }
            for _ in 0..runs {
                inner.ex.run(id).map_err(|e| exec(&at, &e))?;
            }
            inner.ex.wait(id).map_err(|e| exec(&at, &e))?;
            // Each new array gets the staging buffer's bytes directly; `vec3` memory is read
            // as bytes (its padding lane is dropped in Python).
            let mut vec3 = Vec::new();
            for (l, target) in wanted.iter().zip(targets.iter_mut()) {
                match target {
                    Some(raw) => inner.ex.read_into(&l.name, raw.slice()).map_err(|e| exec(&at, &e))?,
                    None => vec3.push(inner.ex.read(&l.name).map_err(|e| exec(&at, &e))?),
                }
            }
            layer_messages(inner.ex.take_messages())?;
            Ok(vec3)
        })?;
        drop(targets);
        arrays::filled_dict(py, &wanted, arrays, vec3)
    }

    /// For the overhead benchmark (bench/python/overhead.py): the host seconds that `runs`
    /// iterations of what one `run(inputs, outputs=...)` does (bind each input, run, wait,
    /// read each output) take through the Rust API alone, in this process, with the GIL
    /// released: the floor a Python `run` is measured against. The inputs are checked and
    /// converted once, before the clock starts.
    #[pyo3(signature = (runs, inputs = None, *, graph = None, outputs = None))]
    fn _native_seconds<'py>(
        &self,
        py: Python<'py>,
        runs: u32,
        inputs: Option<&Bound<'py, PyDict>>,
        graph: Option<&str>,
        outputs: Option<Vec<String>>,
    ) -> PyResult<f64> {
        let graph = self.graph(graph)?;
        let bound = arrays::inputs(py, &self.layouts, inputs)?;
        let wanted = arrays::outputs(&self.layouts, outputs)?;
        // The Rust API's caller has its data in Rust memory: copied there before the clock.
        let owned = arrays::owned(&bound)?;
        let slices: Vec<(&str, &[u8])> = owned.iter().map(|(n, b)| (n.as_str(), b.as_slice())).collect();
        let seconds = py.detach(|| -> Result<f64> {
            let mut inner = self.lock()?;
            let at = format!("@{graph}");
            let id = inner.exec(&graph)?;
            let start = std::time::Instant::now();
            for _ in 0..runs {
                for (name, bytes) in &slices {
                    inner.ex.bind(name, bytes).map_err(|e| exec(&at, &e))?;
                }
                inner.ex.run(id).map_err(|e| exec(&at, &e))?;
                inner.ex.wait(id).map_err(|e| exec(&at, &e))?;
                for l in &wanted {
                    std::hint::black_box(inner.ex.read(&l.name).map_err(|e| exec(&at, &e))?);
                }
            }
            let seconds = start.elapsed().as_secs_f64();
            layer_messages(inner.ex.take_messages())?;
            Ok(seconds)
        })?;
        Ok(seconds)
    }

    /// Runs the bundle's communication nodes (`send`, `recv`, `allreduce`; docs/mpi.md)
    /// through `comm`, this process's rank: an object with `rank` and `size`, `send(to, tag,
    /// data)` (which must not wait for the peer's receive), `recv(source, tag, nbytes) ->
    /// bytes` and `allgather(data) -> [bytes, ...]` in rank order, e.g. over mpi4py
    /// (docs/python.md, "Ranks"). They are called on the device's host-task thread with the
    /// GIL; all-reduces are combined in rank order. Each process then runs the graph of its
    /// rank (`graph="g.r1"`).
    fn set_communicator(&self, comm: &Bound<'_, PyAny>) -> PyResult<()> {
        let c = crate::comm::PyCommunicator::new(comm)?;
        let shared: cmdgraph_ir::comm::SharedCommunicator = std::sync::Arc::new(std::sync::Mutex::new(c));
        let mut inner = self.lock()?;
        match &mut inner.ex {
            crate::engine::Engine::One(e) => {
                e.set_communicator(&shared);
                Ok(())
            }
            crate::engine::Engine::Many(_) => {
                Err(Error::value("set_communicator: a bundle loaded on several devices runs no communication nodes")
                    .into())
            }
        }
    }

    /// The last run of `graph` per node, in device nanoseconds: `{"start_ns", "end_ns",
    /// "submit_host_ns", "nodes": {name: {"start_ns", "end_ns", "duration_ns"}}}` (nodes in
    /// schedule order). Needs `Device.load(..., profile=True)` and a graph with
    /// `enable_profiling`; raises DeviceError otherwise.
    #[pyo3(signature = (graph = None))]
    fn profile<'py>(&self, py: Python<'py>, graph: Option<&str>) -> PyResult<Bound<'py, PyDict>> {
        let graph = self.graph(graph)?;
        let p = py.detach(|| -> Result<cmdgraph_executor::Profile> {
            let inner = self.lock()?;
            let id = inner.execs.get(&graph).copied().ok_or_else(|| {
                Error::new(Kind::Device, format!("error: @{graph} has not run: profile() reads the last run"))
            })?;
            match (&inner.ex, id) {
                (Engine::One(ex), Exec::One(id)) => ex.profile(id).map_err(|e| exec(&format!("@{graph}"), &e)),
                _ => Err(Error::new(
                    Kind::Device,
                    format!(
                        "error: @{graph} runs on several devices, which share no clock: profile() gives one device's \
                         run; `cmdgraph run --profile` prints each stage graph's"
                    ),
                )),
            }
        })?;
        let out = PyDict::new(py);
        out.set_item("submit_host_ns", p.submit_host_ns)?;
        out.set_item("start_ns", p.start_ns)?;
        out.set_item("end_ns", p.end_ns)?;
        let nodes = PyDict::new(py);
        for n in &p.nodes {
            let node = PyDict::new(py);
            node.set_item("start_ns", n.start_ns)?;
            node.set_item("end_ns", n.end_ns)?;
            node.set_item("duration_ns", n.duration_ns())?;
            nodes.set_item(&n.node, node)?;
        }
        out.set_item("nodes", nodes)?;
        Ok(out)
    }

    /// The graphs it can run (names without `@`).
    #[getter]
    fn graphs(&self) -> Vec<String> {
        self.graphs.clone()
    }

    /// The device's name.
    #[getter]
    fn device_name(&self) -> &str {
        &self.device
    }

    /// What to know about running this bundle on this device (llvmpipe's loop budget), one
    /// line each.
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    /// Whether the validation layer is on (`validation=True` or `CMDGRAPH_VK_VALIDATION=1`).
    #[getter]
    fn validation(&self) -> bool {
        self.validation
    }

    fn __repr__(&self) -> String {
        format!("<cmdgraph.Executable on {}: graphs @{}>", self.device, self.graphs.join(", @"))
    }
}
