//! Queues, modifiable and executable graphs, dynamic parameters and dynamic command groups.

use super::handler::{command_group, karg, literal, pattern_literal, record, replay, to_events, Launch, Op};
use super::memory::{pointer, Ptr};
use super::{detach, elem_type, to_range, Context, Device, Event, Kernel, NdRange, Node, OrRaise};
use cmdgraph_sycl as s;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// A context and device from `Queue(...)`/`ModifiableGraph(...)` arguments: a Context (and
/// an optional device, else its first), a Device (a new context over it) or None (the
/// default device).
fn context_device(
    py: Python<'_>,
    first: Option<&Bound<'_, PyAny>>,
    device: Option<PyRef<'_, Device>>,
) -> PyResult<(s::Context, s::Device)> {
    let first = first.filter(|f| !f.is_none());
    if let Some(c) = first.and_then(|f| f.extract::<PyRef<'_, Context>>().ok()) {
        let dev = match device {
            Some(d) => d.0.clone(),
            None => {
                c.0.devices().into_iter().next().ok_or_else(|| PyValueError::new_err("the context has no device"))?
            }
        };
        return Ok((c.0.clone(), dev));
    }
    let dev = match first {
        Some(f) => f
            .extract::<PyRef<'_, Device>>()
            .map_err(|_| PyTypeError::new_err("expected a sycl.Context or sycl.Device"))?
            .0
            .clone(),
        None => match device {
            Some(d) => d.0.clone(),
            None => detach(py, s::Device::default_device),
        },
    };
    let ctx = super::new_context(std::slice::from_ref(&dev), None, None);
    Ok((ctx, dev))
}

/// A `sycl::queue`. `Queue(ctx)` (its first device), `Queue(ctx, dev)`, `Queue(dev)` (a new
/// context) or `Queue()` (the default device); properties as keywords: `in_order`,
/// `enable_profiling`, `discard_events`. While a graph records it, submissions become graph
/// nodes; otherwise they run (on a Vulkan device, asynchronously: `wait()` or an event's
/// `wait()` waits).
///
/// >>> q = sycl.Queue(ctx, in_order=True)
/// >>> q.parallel_for(k, 1024, x, y, 2.0).wait()
#[pyclass(unsendable, module = "cmdgraph.sycl", name = "Queue")]
#[derive(Clone)]
pub struct Queue(pub s::Queue);

impl Queue {
    /// Submits a command group made of `ops`.
    fn submit_ops(&self, py: Python<'_>, ops: Vec<Op>) -> PyResult<Event> {
        let q = self.0.clone();
        detach(py, move || q.submit(|h| replay(ops, h))).map(Event).or_raise()
    }
}

/// `depends_on=` as ops.
fn dep_ops(depends_on: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<Op>> {
    Ok(to_events(depends_on)?.into_iter().map(Op::DependsOn).collect())
}

#[pymethods]
impl Queue {
    #[new]
    #[pyo3(signature = (context = None, device = None, *, in_order = false, enable_profiling = false, discard_events = false, name = None))]
    fn new(
        py: Python<'_>,
        context: Option<&Bound<'_, PyAny>>,
        device: Option<PyRef<'_, Device>>,
        in_order: bool,
        enable_profiling: bool,
        discard_events: bool,
        name: Option<&str>,
    ) -> PyResult<Queue> {
        let (ctx, dev) = context_device(py, context, device)?;
        let props = s::QueueProps { in_order, enable_profiling, discard_events };
        let q = match name {
            Some(n) => s::Queue::named(&ctx, &dev, n, props),
            None => s::Queue::new(&ctx, &dev, props),
        };
        q.map(Queue).or_raise()
    }

    /// `submit(cgf)`: calls `cgf(handler)` now, then records its command (a recording queue)
    /// or runs it.
    fn submit(&self, py: Python<'_>, cgf: &Bound<'_, PyAny>) -> PyResult<Event> {
        let ops = record(py, &self.0.context(), cgf)?;
        self.submit_ops(py, ops)
    }

    /// `parallel_for(range, kernel)` shortcut.
    #[pyo3(signature = (kernel, range, *args, depends_on = None))]
    fn parallel_for(
        &self,
        py: Python<'_>,
        kernel: PyRef<'_, Kernel>,
        range: &Bound<'_, PyAny>,
        args: &Bound<'_, PyTuple>,
        depends_on: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Event> {
        let launch = match range.extract::<PyRef<'_, NdRange>>() {
            Ok(nd) => Launch::Nd(nd.0.clone()),
            Err(_) => Launch::Range(to_range(range)?),
        };
        let mut ops = dep_ops(depends_on)?;
        ops.push(Op::Kernel(kernel.0.clone(), launch, super::handler::kargs(&kernel.0, args)?));
        self.submit_ops(py, ops)
    }

    /// `single_task(kernel)` shortcut.
    #[pyo3(signature = (kernel, *args, depends_on = None))]
    fn single_task(
        &self,
        py: Python<'_>,
        kernel: PyRef<'_, Kernel>,
        args: &Bound<'_, PyTuple>,
        depends_on: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Event> {
        let mut ops = dep_ops(depends_on)?;
        ops.push(Op::Kernel(kernel.0.clone(), Launch::Single, super::handler::kargs(&kernel.0, args)?));
        self.submit_ops(py, ops)
    }

    /// `memcpy(dst, src, num_bytes)`.
    #[pyo3(signature = (dst, src, num_bytes, depends_on = None))]
    fn memcpy(
        &self,
        py: Python<'_>,
        dst: &Bound<'_, PyAny>,
        src: &Bound<'_, PyAny>,
        num_bytes: u64,
        depends_on: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Event> {
        let mut ops = dep_ops(depends_on)?;
        ops.push(Op::Memcpy(pointer(dst)?.0, pointer(src)?.0, num_bytes));
        self.submit_ops(py, ops)
    }

    /// `memset(dst, value, num_bytes)`.
    #[pyo3(signature = (dst, value, num_bytes, depends_on = None))]
    fn memset(
        &self,
        py: Python<'_>,
        dst: &Bound<'_, PyAny>,
        value: u8,
        num_bytes: u64,
        depends_on: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Event> {
        let mut ops = dep_ops(depends_on)?;
        ops.push(Op::Memset(pointer(dst)?.0, value, num_bytes));
        self.submit_ops(py, ops)
    }

    /// `fill(dst, pattern, count)`: the pattern has the destination's element type.
    #[pyo3(signature = (dst, pattern, count, depends_on = None))]
    fn fill(
        &self,
        py: Python<'_>,
        dst: &Bound<'_, PyAny>,
        pattern: &Bound<'_, PyAny>,
        count: u64,
        depends_on: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Event> {
        let (d, elem) = pointer(dst)?;
        let mut ops = dep_ops(depends_on)?;
        ops.push(Op::Fill(d, pattern_literal(pattern, elem)?, count));
        self.submit_ops(py, ops)
    }

    /// `ext_oneapi_graph(exec_graph)`: runs an executable graph (a sub-graph node while
    /// recording).
    #[pyo3(signature = (graph, depends_on = None))]
    fn ext_oneapi_graph(
        &self,
        py: Python<'_>,
        graph: PyRef<'_, ExecutableGraph>,
        depends_on: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Event> {
        let deps = to_events(depends_on)?;
        let (q, g) = (self.0.clone(), graph.0.clone());
        detach(py, move || q.ext_oneapi_graph(&g, &deps.iter().collect::<Vec<_>>())).map(Event).or_raise()
    }

    /// `ext_oneapi_submit_barrier()` / `ext_oneapi_submit_barrier(wait_list)`.
    #[pyo3(signature = (wait_list = None))]
    fn ext_oneapi_submit_barrier(&self, py: Python<'_>, wait_list: Option<&Bound<'_, PyAny>>) -> PyResult<Event> {
        let w = to_events(wait_list)?;
        self.submit_ops(py, vec![Op::Barrier(w)])
    }

    /// `async_malloc(queue, kind, count)` of `count` elements of `dtype` (recording only).
    #[pyo3(signature = (kind, count, dtype))]
    fn async_malloc(&self, py: Python<'_>, kind: &str, count: u64, dtype: &Bound<'_, PyAny>) -> PyResult<Ptr> {
        let elem = elem_type(py, dtype)?;
        let kind = super::usm_kind(kind)?;
        let q = self.0.clone();
        let p = detach(py, move || q.async_malloc(kind, elem, count)).or_raise()?;
        Ok(Ptr::ready(p, elem))
    }

    /// `async_free(queue, ptr)`.
    fn async_free(&self, py: Python<'_>, ptr: &Bound<'_, PyAny>) -> PyResult<()> {
        let (p, _) = pointer(ptr)?;
        let q = self.0.clone();
        detach(py, move || q.async_free(&p)).or_raise()
    }

    /// `copy(values, device_global, count, start_index)` (003): `values` (a sequence or
    /// array of numbers) into elements from `start_index` of a `device_global`.
    #[pyo3(signature = (global_var, values, start_index = 0))]
    fn copy_to_device_global(
        &self,
        py: Python<'_>,
        global_var: PyRef<'_, DeviceGlobal>,
        values: &Bound<'_, PyAny>,
        start_index: u64,
    ) -> PyResult<Event> {
        let values = match values.hasattr("tolist")? {
            true => values.call_method0("tolist")?,
            false => values.clone(),
        };
        let (q, g) = (self.0.clone(), global_var.0.clone());
        macro_rules! typed {
            ($($v:ident => $t:ty),*) => {
                match g.elem().scalar {
                    $(s::ScalarType::$v => {
                        let v: Vec<$t> = values.extract()?;
                        detach(py, move || q.copy_to_device_global(&g, &v, start_index))
                    })*
                    other => return Err(PyTypeError::new_err(format!("device_global of {other} elements"))),
                }
            };
        }
        let e = typed!(I8 => i8, U8 => u8, I16 => i16, U16 => u16, I32 => i32, U32 => u32, I64 => i64, U64 => u64, F32 => f32, F64 => f64);
        e.map(Event).or_raise()
    }

    /// `copy(device_global, dest, count, start_index)` (003), waited on: a list of `count`
    /// elements from `start_index` (row 59 while recording).
    #[pyo3(signature = (global_var, count, start_index = 0))]
    fn copy_from_device_global(
        &self,
        py: Python<'_>,
        global_var: PyRef<'_, DeviceGlobal>,
        count: u64,
        start_index: u64,
    ) -> PyResult<Py<PyAny>> {
        let (q, g) = (self.0.clone(), global_var.0.clone());
        macro_rules! typed {
            ($($v:ident => $t:ty),*) => {
                match g.elem().scalar {
                    $(s::ScalarType::$v => {
                        let v = detach(py, move || q.copy_from_device_global::<$t>(&g, count, start_index)).or_raise()?;
                        v.into_pyobject(py)?.into_any().unbind()
                    })*
                    other => return Err(PyTypeError::new_err(format!("device_global of {other} elements"))),
                }
            };
        }
        Ok(
            typed!(I8 => i8, U8 => u8, I16 => i16, U16 => u16, I32 => i32, U32 => u32, I64 => i64, U64 => u64, F32 => f32, F64 => f64),
        )
    }

    /// `wait()`: waits for everything submitted (row 52 while recording).
    fn wait(&self, py: Python<'_>) -> PyResult<()> {
        let q = self.0.clone();
        detach(py, move || q.wait()).or_raise()
    }

    /// `ext_oneapi_get_state()`: `"executing"` or `"recording"`.
    fn ext_oneapi_get_state(&self) -> &'static str {
        match self.0.ext_oneapi_get_state() {
            s::QueueState::Executing => "executing",
            s::QueueState::Recording => "recording",
        }
    }

    /// `ext_oneapi_get_graph()`: the graph recording this queue (row 53 when none).
    fn ext_oneapi_get_graph(&self) -> PyResult<ModifiableGraph> {
        self.0.ext_oneapi_get_graph().map(ModifiableGraph).or_raise()
    }

    /// `get_context()`.
    fn get_context(&self) -> Context {
        Context(self.0.context())
    }

    /// `get_device()`.
    fn get_device(&self) -> Device {
        Device(self.0.device())
    }

    /// The queue's name in the IR.
    #[getter]
    fn name(&self) -> String {
        self.0.name().to_string()
    }

    fn __repr__(&self) -> String {
        format!("Queue(@{})", self.0.name())
    }
}

/// Nodes given as one `Node` or a list of them.
fn nodes(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<s::Node>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else { return Ok(Vec::new()) };
    if let Ok(n) = obj.extract::<PyRef<'_, Node>>() {
        return Ok(vec![n.0.clone()]);
    }
    let list: Vec<PyRef<'_, Node>> =
        obj.extract().map_err(|_| PyTypeError::new_err("expected a sycl.Node or a list of them"))?;
    Ok(list.iter().map(|n| n.0.clone()).collect())
}

/// Queues given as one `Queue` or a list of them.
fn queues(obj: &Bound<'_, PyAny>) -> PyResult<Vec<s::Queue>> {
    if let Ok(q) = obj.extract::<PyRef<'_, Queue>>() {
        return Ok(vec![q.0.clone()]);
    }
    let list: Vec<PyRef<'_, Queue>> =
        obj.extract().map_err(|_| PyTypeError::new_err("expected a sycl.Queue or a list of them"))?;
    Ok(list.iter().map(|q| q.0.clone()).collect())
}

/// `command_graph<graph_state::modifiable>`: `ModifiableGraph(ctx, dev)`, `(ctx)`, `(queue)`
/// (its context and device); properties `no_cycle_check`, `assume_buffer_outlives_graph`.
///
/// >>> g = sycl.ModifiableGraph(q)
/// >>> a = g.add(lambda h: h.parallel_for(k, 1024, x))
/// >>> b = g.add(lambda h: h.parallel_for(k, 1024, x), depends_on=[a])
/// >>> q.ext_oneapi_graph(g.finalize()).wait()
#[pyclass(unsendable, module = "cmdgraph.sycl", name = "ModifiableGraph")]
#[derive(Clone)]
pub struct ModifiableGraph(pub s::ModifiableGraph);

#[pymethods]
impl ModifiableGraph {
    #[new]
    #[pyo3(signature = (context = None, device = None, *, no_cycle_check = false, assume_buffer_outlives_graph = false, name = None))]
    fn new(
        py: Python<'_>,
        context: Option<&Bound<'_, PyAny>>,
        device: Option<PyRef<'_, Device>>,
        no_cycle_check: bool,
        assume_buffer_outlives_graph: bool,
        name: Option<&str>,
    ) -> PyResult<ModifiableGraph> {
        let props = s::GraphProps { no_cycle_check, assume_buffer_outlives_graph };
        if let Some(q) = context.and_then(|c| c.extract::<PyRef<'_, Queue>>().ok()) {
            return s::ModifiableGraph::from_queue(&q.0, props).map(ModifiableGraph).or_raise();
        }
        let (ctx, dev) = context_device(py, context, device)?;
        let g = match name {
            Some(n) => s::ModifiableGraph::new_named(&ctx, &dev, n, props),
            None => s::ModifiableGraph::new(&ctx, &dev, props),
        };
        g.map(ModifiableGraph).or_raise()
    }

    /// `add(cgf, {depends_on(...)})`: a node whose command `cgf(handler)` gives (called
    /// now); `cgf` may be a `DynamicCommandGroup`, or None for an empty node.
    /// `depends_on` takes nodes; `depends_on_all_leaves=True` adds edges from every leaf.
    #[pyo3(signature = (cgf = None, *, depends_on = None, depends_on_all_leaves = false))]
    fn add(
        &self,
        py: Python<'_>,
        cgf: Option<&Bound<'_, PyAny>>,
        depends_on: Option<&Bound<'_, PyAny>>,
        depends_on_all_leaves: bool,
    ) -> PyResult<Node> {
        let deps = nodes(depends_on)?;
        let mut props = s::NodeProps::depends_on(&deps.iter().collect::<Vec<_>>());
        if depends_on_all_leaves {
            props = props.and_all_leaves();
        }
        let g = self.0.clone();
        let node = match cgf.filter(|c| !c.is_none()) {
            None => g.add_empty(props),
            Some(c) => match c.extract::<PyRef<'_, DynamicCommandGroup>>() {
                Ok(dcg) => g.add_dynamic(&dcg.0, props),
                Err(_) => {
                    let ops = record(py, &self.0.context(), c)?;
                    detach(py, move || g.add(|h| replay(ops, h), props))
                }
            },
        };
        node.map(Node).or_raise()
    }

    /// An empty node (`add({depends_on(...)})`).
    #[pyo3(signature = (*, depends_on = None, depends_on_all_leaves = false))]
    fn add_empty(
        &self,
        py: Python<'_>,
        depends_on: Option<&Bound<'_, PyAny>>,
        depends_on_all_leaves: bool,
    ) -> PyResult<Node> {
        self.add(py, None, depends_on, depends_on_all_leaves)
    }

    /// `make_edge(src, dest)` (rows 8-11: a cycle, another graph's node, ...).
    fn make_edge(&self, src: PyRef<'_, Node>, dest: PyRef<'_, Node>) -> PyResult<()> {
        self.0.make_edge(&src.0, &dest.0).or_raise()
    }

    /// `begin_recording(queue)` or `begin_recording([queues])`.
    #[pyo3(signature = (queue, *, assume_data_outlives_buffer = false))]
    fn begin_recording(&self, queue: &Bound<'_, PyAny>, assume_data_outlives_buffer: bool) -> PyResult<()> {
        let qs = queues(queue)?;
        let props = s::RecordingProps { assume_data_outlives_buffer };
        self.0.begin_recording_queues(&qs.iter().collect::<Vec<_>>(), props).or_raise()
    }

    /// `end_recording()` (every queue), `end_recording(queue)` or `end_recording([queues])`.
    #[pyo3(signature = (queue = None))]
    fn end_recording(&self, queue: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        match queue.filter(|q| !q.is_none()) {
            None => {
                self.0.end_recording();
                Ok(())
            }
            Some(q) => {
                let qs = queues(q)?;
                self.0.end_recording_queues(&qs.iter().collect::<Vec<_>>()).or_raise()
            }
        }
    }

    /// `finalize({updatable, enable_profiling})`.
    #[pyo3(signature = (*, updatable = false, enable_profiling = false))]
    fn finalize(&self, py: Python<'_>, updatable: bool, enable_profiling: bool) -> PyResult<ExecutableGraph> {
        let g = self.0.clone();
        let props = s::FinalizeProps { updatable, enable_profiling };
        let done = detach(py, move || g.finalize(props));
        // Ctrl-C during the first finalize's compile: KeyboardInterrupt, not the SYCL error
        // the compile's end became.
        if let Some(interrupt) = super::take_interrupt() {
            return Err(interrupt);
        }
        done.map(ExecutableGraph).or_raise()
    }

    /// `get_nodes()`, in creation order.
    fn get_nodes(&self) -> Vec<Node> {
        self.0.get_nodes().into_iter().map(Node).collect()
    }

    /// `get_root_nodes()`.
    fn get_root_nodes(&self) -> Vec<Node> {
        self.0.get_root_nodes().into_iter().map(Node).collect()
    }

    /// `print_graph(path, verbose)`: DOT, or the IR for a path ending in `.cgir`.
    #[pyo3(signature = (path, verbose = false))]
    fn print_graph(&self, path: &str, verbose: bool) -> PyResult<()> {
        self.0.print_graph(path, verbose).or_raise()
    }

    /// The module this graph writes, as IR text (what `cmdgraph.parse` reads).
    fn to_ir(&self) -> String {
        cmdgraph_ir::text::print(&self.0.to_module().0)
    }

    /// Whether a queue records into it.
    #[getter]
    fn is_recording(&self) -> bool {
        self.0.is_recording()
    }

    /// The graph's name in the IR.
    #[getter]
    fn name(&self) -> String {
        self.0.name()
    }

    fn __repr__(&self) -> String {
        format!("ModifiableGraph(@{})", self.0.name())
    }
}

/// `command_graph<graph_state::executable>`: run with `Queue.ext_oneapi_graph(g)`, updated
/// with `update(...)`.
#[pyclass(unsendable, module = "cmdgraph.sycl", name = "ExecutableGraph")]
#[derive(Clone)]
pub struct ExecutableGraph(pub s::ExecutableGraph);

#[pymethods]
impl ExecutableGraph {
    /// `update(node)`, `update([nodes])` (dynamic parameters, command groups and ranges of
    /// those nodes) or `update(modifiable_graph)` (whole-graph update).
    fn update(&self, py: Python<'_>, what: &Bound<'_, PyAny>) -> PyResult<()> {
        let g = self.0.clone();
        if let Ok(src) = what.extract::<PyRef<'_, ModifiableGraph>>() {
            let src = src.0.clone();
            return detach(py, move || g.update_graph(&src)).or_raise();
        }
        let ns = nodes(Some(what))?;
        detach(py, move || g.update_nodes(&ns.iter().collect::<Vec<_>>())).or_raise()
    }

    /// `get_required_mem_size()`: bytes of graph-owned allocations.
    fn get_required_mem_size(&self) -> u64 {
        self.0.get_required_mem_size()
    }

    /// Where it runs once it has run: `"interpreter"` or the Vulkan device, else None.
    #[getter]
    fn runtime(&self) -> Option<String> {
        self.0.runtime()
    }

    /// The key of its bundle (`KEY.cgb` in the context's bundle directory).
    #[getter]
    fn bundle_key(&self) -> String {
        self.0.bundle_key()
    }

    /// Its module (at its current update), as IR text.
    fn to_ir(&self) -> String {
        cmdgraph_ir::text::print(&self.0.module())
    }

    fn __repr__(&self) -> String {
        format!("ExecutableGraph({})", self.0.bundle_key())
    }
}

/// The value a dynamic parameter gets from Python: typed by `dtype`, or by `like` (its
/// current value), or as a kernel argument.
fn dyn_value(
    py: Python<'_>,
    value: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    like: Option<&s::KArg>,
) -> PyResult<s::KArg> {
    if let Some(d) = dtype.filter(|d| !d.is_none()) {
        return Ok(s::KArg::Scalar(literal(value, elem_type(py, d)?.scalar)?));
    }
    let as_number = value.extract::<f64>().is_ok() && value.extract::<PyRef<'_, super::memory::Usm>>().is_err();
    if let (Some(s::KArg::Scalar(lit)), true) = (like, as_number) {
        if let Some(t) = lit.ty {
            if value.py().import("numpy")?.getattr("generic").and_then(|g| value.is_instance(&g)).unwrap_or(false) {
                return karg(value, None);
            }
            return Ok(s::KArg::Scalar(literal(value, t)?));
        }
    }
    karg(value, None)
}

/// `dynamic_parameter(graph, value)`: a kernel argument that executable-graph updates can
/// change. `value` is a USM allocation/pointer, an accessor or a number (`dtype` types it;
/// else a Python float is `float32`, an int `int32`, a NumPy scalar its own type). Pass it
/// to `parallel_for` like the value; `update(v)` then `ExecutableGraph.update(node)`.
#[pyclass(unsendable, module = "cmdgraph.sycl", name = "DynamicParameter")]
#[derive(Clone)]
pub struct DynamicParameter(pub s::DynamicParameter);

#[pymethods]
impl DynamicParameter {
    #[new]
    #[pyo3(signature = (graph, value, dtype = None))]
    fn new(
        py: Python<'_>,
        graph: PyRef<'_, ModifiableGraph>,
        value: &Bound<'_, PyAny>,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<DynamicParameter> {
        let v = dyn_value(py, value, dtype, None)?;
        s::DynamicParameter::new(&graph.0, v).map(DynamicParameter).or_raise()
    }

    /// `update(value)`: a number keeps the parameter's type.
    fn update(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let current = self.0.value().ok();
        let v = dyn_value(py, value, None, current.as_ref())?;
        self.0.update(v).or_raise()
    }

    /// The parameter's name in the IR.
    #[getter]
    fn name(&self) -> String {
        self.0.name()
    }
}

/// `dynamic_command_group(graph, [cgf, ...])`: alternatives of one node (`add(dcg)`); each
/// function is called now. `set_active_index(i)` then `ExecutableGraph.update(node)`.
#[pyclass(unsendable, module = "cmdgraph.sycl", name = "DynamicCommandGroup")]
#[derive(Clone)]
pub struct DynamicCommandGroup(pub s::DynamicCommandGroup);

#[pymethods]
impl DynamicCommandGroup {
    #[new]
    fn new(py: Python<'_>, graph: PyRef<'_, ModifiableGraph>, cgfs: Vec<Bound<'_, PyAny>>) -> PyResult<Self> {
        let ctx = graph.0.context();
        let mut groups = Vec::with_capacity(cgfs.len());
        for c in &cgfs {
            groups.push(command_group(record(py, &ctx, c)?));
        }
        let g = graph.0.clone();
        detach(py, move || s::DynamicCommandGroup::new(&g, groups)).map(DynamicCommandGroup).or_raise()
    }

    /// `get_active_index()`.
    fn get_active_index(&self) -> usize {
        self.0.get_active_index()
    }

    /// `set_active_index(index)`.
    fn set_active_index(&self, index: usize) -> PyResult<()> {
        self.0.set_active_index(index).or_raise()
    }
}

/// A `device_global` declared by kernel text (`device_global @g : u32[4] ...`):
/// `Context.device_global(name)`; copied with `Queue.copy_to_device_global` and
/// `Queue.copy_from_device_global`.
#[pyclass(unsendable, module = "cmdgraph.sycl", name = "DeviceGlobal")]
#[derive(Clone)]
pub struct DeviceGlobal(pub s::DeviceGlobal);

#[pymethods]
impl DeviceGlobal {
    /// Its name.
    #[getter]
    fn name(&self) -> String {
        self.0.name().to_string()
    }

    /// Its element count.
    #[getter]
    fn count(&self) -> u64 {
        self.0.count()
    }
}

/// Registers the classes of this module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<DeviceGlobal>()?;
    m.add_class::<Queue>()?;
    m.add_class::<ModifiableGraph>()?;
    m.add_class::<ExecutableGraph>()?;
    m.add_class::<DynamicParameter>()?;
    m.add_class::<DynamicCommandGroup>()?;
    Ok(())
}
