//! The command-group handler and host tasks written in Python.
//!
//! A command-group function is a Python callable taking a [`Handler`]. It runs first, with
//! the GIL, and the handler records what it asks for ([`Op`]); the crate's handler then
//! replays that list inside `submit`/`add` ([`replay`]), where no Python runs. A pointer from
//! `async_malloc` is set by the replay (a command group holds one command, so it is only
//! used by later command groups).
//!
//! `host_task(fn, uses)` registers `fn` with the context as a host-task callback. When the
//! executor runs the node (the interpreter on this thread, a Vulkan device on its worker
//! thread), the callback takes the GIL, reads the declared memory, calls `fn` with one NumPy
//! array per entry of `uses` (copies; `read` entries are read-only, `write`/`no_init`
//! entries start zeroed) and writes the writable ones back. An exception becomes the run's
//! error (`SyclError` from `Event.wait`), naming the node.

use super::graph::{DynamicParameter, ExecutableGraph};
use super::memory::{pointer, Accessor, Buffer, Ptr, Usm};
use super::{access, elem_type, to_range, Event, Kernel, NdRange};
use cmdgraph_ir::{LitValue, Literal, ParamType, ScalarType};
use cmdgraph_sycl as s;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyFloat, PyInt, PyList, PyTuple};
use std::cell::RefCell;
use std::rc::Rc;

/// How a kernel is launched.
#[derive(Clone)]
pub enum Launch {
    /// `single_task`.
    Single,
    /// `parallel_for(range)`.
    Range(s::Range),
    /// `parallel_for(nd_range)`.
    Nd(s::NdRange),
}

/// One call a command-group function made on its handler.
#[derive(Clone)]
pub enum Op {
    /// `depends_on(event)`.
    DependsOn(s::Event),
    /// A kernel launch.
    Kernel(s::KernelRef, Launch, Vec<s::KArg>),
    /// `set_arg(index, value)`.
    SetArg(u32, s::KArg),
    /// `require(accessor)` (also what `access` does).
    Require(s::Accessor),
    /// `require(dynamic_parameter)`.
    RequireDyn(s::DynamicParameter),
    /// `memcpy(dst, src, bytes)`.
    Memcpy(s::Ptr, s::Ptr, u64),
    /// `memset(dst, value, bytes)`.
    Memset(s::Ptr, u8, u64),
    /// `fill(dst, pattern, count)`.
    Fill(s::Ptr, Literal, u64),
    /// `copy(src accessor, dst accessor)`.
    Copy(s::Accessor, s::Accessor),
    /// `host_task`: the callback's name and its declared USM.
    HostTask(String, Vec<(s::Ptr, s::Access)>),
    /// `ext_oneapi_barrier(wait_list)`.
    Barrier(Vec<s::Event>),
    /// `async_malloc`, and the pointer object it sets.
    AsyncMalloc(s::Type, u64, s::MemoryPool, Rc<RefCell<Option<s::Ptr>>>),
    /// `async_free(ptr)`.
    AsyncFree(s::Ptr),
    /// `ext_oneapi_graph(exec)`.
    Graph(s::ExecutableGraph),
    /// cmdgraph's `ext_cmdgraph_if` / `_while` / `_switch`: the kind, the condition, the bodies.
    Conditional(cmdgraph_ir::CondKind, s::Ptr, Vec<s::ExecutableGraph>),
    /// cmdgraph's `ext_send` / `ext_recv` / `ext_allreduce`: the operation, the memory, the
    /// bytes.
    Comm(cmdgraph_ir::comm::CommOp, s::Ptr, u64),
}

/// Replays `ops` on the crate's handler.
pub fn replay(ops: Vec<Op>, h: &mut s::Handler) {
    for op in ops {
        match op {
            Op::DependsOn(e) => h.depends_on(&e),
            Op::Kernel(k, Launch::Single, args) => h.single_task(&k, args),
            Op::Kernel(k, Launch::Range(r), args) => h.parallel_for(&k, r, args),
            Op::Kernel(k, Launch::Nd(r), args) => h.parallel_for_nd(&k, r, args),
            Op::SetArg(i, a) => h.set_arg(i, a),
            Op::Require(a) => h.require(&a),
            Op::RequireDyn(p) => h.require_dyn(&p),
            Op::Memcpy(d, src, n) => h.memcpy(d, src, n),
            Op::Memset(d, v, n) => h.memset(d, v, n),
            Op::Fill(d, lit, n) => fill(h, d, lit, n),
            Op::Copy(a, b) => h.copy(&a, &b),
            Op::HostTask(name, usm) => h.host_task_with_access(&name, &usm),
            Op::Barrier(w) if w.is_empty() => h.ext_oneapi_barrier(),
            Op::Barrier(w) => h.ext_oneapi_barrier_with(&w.iter().collect::<Vec<_>>()),
            Op::AsyncMalloc(elem, count, pool, cell) => {
                *cell.borrow_mut() = Some(h.async_malloc_from_pool(elem, count, &pool));
            }
            Op::AsyncFree(p) => h.async_free(&p),
            Op::Graph(g) => h.ext_oneapi_graph(&g),
            Op::Conditional(cmdgraph_ir::CondKind::If, c, b) => h.ext_cmdgraph_if(&c, &b[0], b.get(1)),
            Op::Conditional(cmdgraph_ir::CondKind::While, c, b) => h.ext_cmdgraph_while(&c, &b[0]),
            Op::Conditional(cmdgraph_ir::CondKind::Switch, c, b) => {
                h.ext_cmdgraph_switch(&c, &b.iter().collect::<Vec<_>>())
            }
            Op::Comm(cmdgraph_ir::comm::CommOp::Send { peer, tag }, p, n) => h.ext_send(p, n, peer, tag),
            Op::Comm(cmdgraph_ir::comm::CommOp::Recv { peer, tag }, p, n) => h.ext_recv(p, n, peer, tag),
            Op::Comm(cmdgraph_ir::comm::CommOp::AllReduce(op), p, n) => h.ext_allreduce(op, p, n),
        }
    }
}

/// `fill` with the pattern's own type.
fn fill(h: &mut s::Handler, dst: s::Ptr, lit: Literal, count: u64) {
    let (i, f, b) = match lit.value {
        LitValue::Int(i) => (i, i as f64, i != 0),
        LitValue::Float(f) => (f as i128, f, f != 0.0),
        LitValue::Bool(b) => (i128::from(b), f64::from(u8::from(b)), b),
    };
    match lit.ty.unwrap_or(ScalarType::F32) {
        ScalarType::Bool => h.fill(dst, b, count),
        ScalarType::I8 => h.fill(dst, i as i8, count),
        ScalarType::U8 => h.fill(dst, i as u8, count),
        ScalarType::I16 => h.fill(dst, i as i16, count),
        ScalarType::U16 => h.fill(dst, i as u16, count),
        ScalarType::I32 => h.fill(dst, i as i32, count),
        ScalarType::U32 => h.fill(dst, i as u32, count),
        ScalarType::I64 => h.fill(dst, i as i64, count),
        ScalarType::U64 => h.fill(dst, i as u64, count),
        ScalarType::F16 => h.fill(dst, s::f16::from_f64(f), count),
        ScalarType::F32 => h.fill(dst, f as f32, count),
        ScalarType::F64 => h.fill(dst, f, count),
    }
}

/// A Python number as a literal of `scalar` (ValueError when it does not fit).
pub fn literal(obj: &Bound<'_, PyAny>, scalar: ScalarType) -> PyResult<Literal> {
    let value = match scalar {
        ScalarType::Bool => LitValue::Bool(obj.is_truthy()?),
        ScalarType::F16 | ScalarType::F32 | ScalarType::F64 => LitValue::Float(obj.extract::<f64>()?),
        _ => {
            let v: i128 = obj.extract().map_err(|_| {
                PyTypeError::new_err(format!(
                    "{} is not an integer for a {scalar} argument",
                    obj.repr().map(|r| r.to_string()).unwrap_or_default()
                ))
            })?;
            let (lo, hi): (i128, i128) = match scalar {
                ScalarType::I8 => (i8::MIN.into(), i8::MAX.into()),
                ScalarType::U8 => (0, u8::MAX.into()),
                ScalarType::I16 => (i16::MIN.into(), i16::MAX.into()),
                ScalarType::U16 => (0, u16::MAX.into()),
                ScalarType::I32 => (i32::MIN.into(), i32::MAX.into()),
                ScalarType::U32 => (0, u32::MAX.into()),
                ScalarType::I64 => (i64::MIN.into(), i64::MAX.into()),
                _ => (0, u64::MAX.into()),
            };
            if v < lo || v > hi {
                return Err(PyValueError::new_err(format!("{v} does not fit a {scalar} argument")));
            }
            LitValue::Int(v)
        }
    };
    Ok(Literal { value, ty: Some(scalar) })
}

/// The scalar type of a NumPy scalar (`np.float32(2)`), if `obj` is one.
fn numpy_scalar(obj: &Bound<'_, PyAny>) -> Option<ScalarType> {
    let generic = obj.py().import("numpy").ok()?.getattr("generic").ok()?;
    if !obj.is_instance(&generic).ok()? {
        return None;
    }
    let d: String = obj.getattr("dtype").ok()?.getattr("str").ok()?.extract().ok()?;
    super::scalar_of_dtype(&d)
}

/// A kernel argument from Python: a `Usm`/`Ptr` (a pointer), an `Accessor`, a
/// `DynamicParameter`, a `LocalAccessor`, `bytes` (raw), a NumPy scalar (its type) or a
/// Python number (the type of parameter `param`; else `float32`, `int32` or `bool`).
pub fn karg(obj: &Bound<'_, PyAny>, param: Option<&ParamType>) -> PyResult<s::KArg> {
    if obj.extract::<PyRef<'_, Usm>>().is_ok() || obj.extract::<PyRef<'_, Ptr>>().is_ok() {
        return Ok(s::KArg::Ptr(pointer(obj)?.0));
    }
    if let Ok(a) = obj.extract::<PyRef<'_, Accessor>>() {
        return Ok(s::KArg::Acc(a.0.clone()));
    }
    if let Ok(p) = obj.extract::<PyRef<'_, DynamicParameter>>() {
        return Ok(s::KArg::Dyn(p.0.clone()));
    }
    if let Ok(l) = obj.extract::<PyRef<'_, LocalAccessor>>() {
        return Ok(s::KArg::local(l.elem, l.count));
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(s::KArg::raw(b.as_bytes()));
    }
    if let Some(scalar) = numpy_scalar(obj) {
        return Ok(s::KArg::Scalar(literal(&obj.call_method0("item")?, scalar)?));
    }
    let scalar = match param {
        Some(ParamType::Value(t)) if t.lanes == 1 => t.scalar,
        _ if obj.is_instance_of::<PyBool>() => ScalarType::Bool,
        _ if obj.is_instance_of::<PyInt>() => ScalarType::I32,
        _ if obj.is_instance_of::<PyFloat>() => ScalarType::F32,
        _ => {
            return Err(PyTypeError::new_err(format!(
                "cannot pass {} as a kernel argument (a USM allocation, pointer, accessor, dynamic parameter, local accessor, bytes or number)",
                obj.get_type().name()?
            )))
        }
    };
    Ok(s::KArg::Scalar(literal(obj, scalar)?))
}

/// Kernel arguments converted against `kernel`'s parameters.
pub fn kargs(kernel: &s::KernelRef, args: &Bound<'_, PyTuple>) -> PyResult<Vec<s::KArg>> {
    args.iter().enumerate().map(|(i, a)| karg(&a, kernel.params().get(i))).collect()
}

/// `sycl::local_accessor<T>(count)`: work-group memory of `count` elements per work-group,
/// passed as a kernel argument.
#[pyclass(unsendable, module = "cmdgraph.sycl", name = "LocalAccessor")]
#[derive(Clone)]
pub struct LocalAccessor {
    elem: s::Type,
    count: u64,
}

#[pymethods]
impl LocalAccessor {
    #[new]
    fn new(py: Python<'_>, dtype: &Bound<'_, PyAny>, count: u64) -> PyResult<LocalAccessor> {
        Ok(LocalAccessor { elem: elem_type(py, dtype)?, count })
    }
}

/// Events given as one `Event` or a list of them.
pub fn to_events(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<s::Event>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else { return Ok(Vec::new()) };
    if let Ok(e) = obj.extract::<PyRef<'_, Event>>() {
        return Ok(vec![e.0.clone()]);
    }
    let list: Vec<PyRef<'_, Event>> =
        obj.extract().map_err(|_| PyTypeError::new_err("expected a sycl.Event or a list of them"))?;
    Ok(list.iter().map(|e| e.0.clone()).collect())
}

static NEXT_HOST_TASK: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// `sycl::handler`: what a command-group function receives. It holds one command (a kernel,
/// copy, fill, memset, host task, barrier, allocation or sub-graph) and its dependencies.
/// It is valid only while the function runs.
///
/// >>> q.submit(lambda h: h.parallel_for(k, 1024, x, y, 2.0))
#[pyclass(unsendable, module = "cmdgraph.sycl", name = "Handler")]
pub struct Handler {
    ctx: s::Context,
    ops: Option<Vec<Op>>,
}

impl Handler {
    fn push(&mut self, op: Op) -> PyResult<()> {
        match &mut self.ops {
            Some(ops) => {
                ops.push(op);
                Ok(())
            }
            None => Err(PyRuntimeError::new_err(
                "this handler belongs to a command group function that has returned; use the handler passed to the current one",
            )),
        }
    }
}

/// Runs command-group function `cgf` on a fresh handler of `ctx`; the calls it made.
pub fn record(py: Python<'_>, ctx: &s::Context, cgf: &Bound<'_, PyAny>) -> PyResult<Vec<Op>> {
    let h = Bound::new(py, Handler { ctx: ctx.clone(), ops: Some(Vec::new()) })?;
    cgf.call1((h.clone(),))?;
    let ops = h.borrow_mut().ops.take().unwrap_or_default();
    Ok(ops)
}

#[pymethods]
impl Handler {
    /// `depends_on(event)` or `depends_on([events])`.
    fn depends_on(&mut self, events: &Bound<'_, PyAny>) -> PyResult<()> {
        for e in to_events(Some(events))? {
            self.push(Op::DependsOn(e))?;
        }
        Ok(())
    }

    /// `parallel_for(range, kernel)` with the kernel's arguments: `range` is an int, a tuple
    /// of 1 to 3 ints or an `NdRange`.
    #[pyo3(signature = (kernel, range, *args))]
    fn parallel_for(
        &mut self,
        kernel: PyRef<'_, Kernel>,
        range: &Bound<'_, PyAny>,
        args: &Bound<'_, PyTuple>,
    ) -> PyResult<()> {
        let launch = match range.extract::<PyRef<'_, NdRange>>() {
            Ok(nd) => Launch::Nd(nd.0.clone()),
            Err(_) => Launch::Range(to_range(range)?),
        };
        let args = kargs(&kernel.0, args)?;
        self.push(Op::Kernel(kernel.0.clone(), launch, args))
    }

    /// `single_task(kernel)` with the kernel's arguments.
    #[pyo3(signature = (kernel, *args))]
    fn single_task(&mut self, kernel: PyRef<'_, Kernel>, args: &Bound<'_, PyTuple>) -> PyResult<()> {
        let args = kargs(&kernel.0, args)?;
        self.push(Op::Kernel(kernel.0.clone(), Launch::Single, args))
    }

    /// `set_arg(index, value)` (a launch with no arguments takes these).
    fn set_arg(&mut self, index: u32, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let a = karg(value, None)?;
        self.push(Op::SetArg(index, a))
    }

    /// `memcpy(dst, src, num_bytes)` between USM allocations or pointers.
    fn memcpy(&mut self, dst: &Bound<'_, PyAny>, src: &Bound<'_, PyAny>, num_bytes: u64) -> PyResult<()> {
        let (d, _) = pointer(dst)?;
        let (s_, _) = pointer(src)?;
        self.push(Op::Memcpy(d, s_, num_bytes))
    }

    /// `memset(dst, value, num_bytes)`.
    fn memset(&mut self, dst: &Bound<'_, PyAny>, value: u8, num_bytes: u64) -> PyResult<()> {
        let (d, _) = pointer(dst)?;
        self.push(Op::Memset(d, value, num_bytes))
    }

    /// `fill(dst, pattern, count)`: the pattern has the pointer's element type (or a NumPy
    /// scalar's own).
    fn fill(&mut self, dst: &Bound<'_, PyAny>, pattern: &Bound<'_, PyAny>, count: u64) -> PyResult<()> {
        let (d, elem) = pointer(dst)?;
        let lit = pattern_literal(pattern, elem)?;
        self.push(Op::Fill(d, lit, count))
    }

    /// `copy(src, dst)` between two buffer accessors.
    fn copy(&mut self, src: PyRef<'_, Accessor>, dst: PyRef<'_, Accessor>) -> PyResult<()> {
        self.push(Op::Copy(src.0.clone(), dst.0.clone()))
    }

    /// `accessor{buffer, cgh, mode}`: requires the buffer in this command group.
    #[pyo3(signature = (buffer, mode = "read_write"))]
    fn access(&mut self, buffer: PyRef<'_, Buffer>, mode: &str) -> PyResult<Accessor> {
        let acc = buffer.0.placeholder(access(mode)?);
        self.push(Op::Require(acc.clone()))?;
        Ok(Accessor(acc))
    }

    /// `require(accessor)` or `require(dynamic_parameter)`.
    fn require(&mut self, what: &Bound<'_, PyAny>) -> PyResult<()> {
        if let Ok(p) = what.extract::<PyRef<'_, DynamicParameter>>() {
            return self.push(Op::RequireDyn(p.0.clone()));
        }
        let a: PyRef<'_, Accessor> = what.extract()?;
        self.push(Op::Require(a.0.clone()))
    }

    /// `host_task(callable)`: `fn` runs on the host when the node executes, called with one
    /// NumPy array per entry of `uses` (a `Usm`/`Ptr`, read-write, or `(usm, mode)` with
    /// mode `read`, `write`, `read_write` or `no_init`). The arrays are copies of the
    /// memory: `read` ones are read-only, `write`/`no_init` ones start zeroed, and the
    /// writable ones are written back, whole, when `fn` returns. An exception from `fn`
    /// fails the run (`Event.wait()` raises SyclError naming the node).
    ///
    /// >>> h.host_task(lambda a: np.multiply(a, 2, out=a), [x])
    #[pyo3(signature = (callable, uses = None))]
    fn host_task(&mut self, py: Python<'_>, callable: Py<PyAny>, uses: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        if !callable.bind(py).is_callable() {
            return Err(PyTypeError::new_err("host_task takes a callable"));
        }
        let mut declared = Vec::new();
        let mut specs = Vec::new();
        if let Some(uses) = uses.filter(|u| !u.is_none()) {
            for item in uses.try_iter()? {
                let item = item?;
                let (obj, mode) = match item.cast::<PyTuple>() {
                    Ok(t) if t.len() == 2 => (t.get_item(0)?, access(&t.get_item(1)?.extract::<String>()?)?),
                    _ => (item.clone(), s::Access::ReadWrite),
                };
                let (ptr, elem) = pointer(&obj)?;
                declared.push((ptr, mode));
                specs.push((crate::arrays::dtype(elem.scalar), mode));
            }
        }
        let name = format!("py_host_task_{}", NEXT_HOST_TASK.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        self.ctx.register_host_task(&name, move |mem| run_host_task(&callable, &specs, mem));
        self.push(Op::HostTask(name, declared))
    }

    /// `ext_oneapi_barrier()` or `ext_oneapi_barrier(wait_list)`.
    #[pyo3(signature = (wait_list = None))]
    fn ext_oneapi_barrier(&mut self, wait_list: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let w = to_events(wait_list)?;
        self.push(Op::Barrier(w))
    }

    /// `async_malloc(cgh, kind, count)`: a graph-owned allocation of `count` elements of
    /// `dtype`; the pointer is set when the command group function returns.
    #[pyo3(signature = (kind, count, dtype, *, zero_init = false))]
    fn async_malloc(
        &mut self,
        py: Python<'_>,
        kind: &str,
        count: u64,
        dtype: &Bound<'_, PyAny>,
        zero_init: bool,
    ) -> PyResult<Ptr> {
        let elem = elem_type(py, dtype)?;
        let pool = s::MemoryPool { kind: super::usm_kind(kind)?, zero_init };
        let (ptr, cell) = Ptr::pending(elem);
        self.push(Op::AsyncMalloc(elem, count, pool, cell))?;
        Ok(ptr)
    }

    /// `async_free(cgh, ptr)`.
    fn async_free(&mut self, ptr: &Bound<'_, PyAny>) -> PyResult<()> {
        let (p, _) = pointer(ptr)?;
        self.push(Op::AsyncFree(p))
    }

    /// `ext_oneapi_graph(exec_graph)`: runs an executable graph (a sub-graph node when added
    /// or recorded).
    fn ext_oneapi_graph(&mut self, graph: PyRef<'_, ExecutableGraph>) -> PyResult<()> {
        self.push(Op::Graph(graph.0.clone()))
    }

    /// `ext_cmdgraph_if(cond, then, otherwise=None)` (cmdgraph's extension,
    /// docs/conditional.md): runs `then` when the `u32` at USM pointer `cond` is non-zero,
    /// else `otherwise`. Runs on the interpreter for now.
    #[pyo3(signature = (cond, then, otherwise=None))]
    fn ext_cmdgraph_if(
        &mut self,
        cond: &Bound<'_, PyAny>,
        then: PyRef<'_, ExecutableGraph>,
        otherwise: Option<PyRef<'_, ExecutableGraph>>,
    ) -> PyResult<()> {
        let (c, _) = pointer(cond)?;
        let bodies = std::iter::once(then.0.clone()).chain(otherwise.map(|o| o.0.clone())).collect();
        self.push(Op::Conditional(cmdgraph_ir::CondKind::If, c, bodies))
    }

    /// cmdgraph's `ext_send(ptr, num_bytes, to, tag)`: sends `num_bytes` bytes at `ptr` to
    /// rank `to` with `tag`, through the context's communicator
    /// (`Context.set_communicator`; docs/mpi.md).
    fn ext_send(&mut self, ptr: &Bound<'_, PyAny>, num_bytes: u64, to: u32, tag: u32) -> PyResult<()> {
        let (p, _) = pointer(ptr)?;
        self.push(Op::Comm(cmdgraph_ir::comm::CommOp::Send { peer: to, tag }, p, num_bytes))
    }

    /// cmdgraph's `ext_recv(ptr, num_bytes, source, tag)`: receives `num_bytes` bytes into
    /// `ptr` from rank `source` with `tag` (messages between two ranks with one tag arrive in
    /// the order sent).
    fn ext_recv(&mut self, ptr: &Bound<'_, PyAny>, num_bytes: u64, source: u32, tag: u32) -> PyResult<()> {
        let (p, _) = pointer(ptr)?;
        self.push(Op::Comm(cmdgraph_ir::comm::CommOp::Recv { peer: source, tag }, p, num_bytes))
    }

    /// cmdgraph's `ext_allreduce(op, ptr, num_bytes)`: replaces the bytes at `ptr` with `op`
    /// (`"sum"`, `"min"` or `"max"`) over every rank's, element-wise over the memory's
    /// element type, combined in rank order.
    fn ext_allreduce(&mut self, op: &str, ptr: &Bound<'_, PyAny>, num_bytes: u64) -> PyResult<()> {
        let reduce = cmdgraph_ir::comm::ReduceOp::from_keyword(op)
            .ok_or_else(|| PyValueError::new_err(format!("ext_allreduce: `{op}` is not sum, min or max")))?;
        let (p, _) = pointer(ptr)?;
        self.push(Op::Comm(cmdgraph_ir::comm::CommOp::AllReduce(reduce), p, num_bytes))
    }

    /// `ext_cmdgraph_while(cond, body)`: runs `body` while the `u32` at `cond` is non-zero.
    fn ext_cmdgraph_while(&mut self, cond: &Bound<'_, PyAny>, body: PyRef<'_, ExecutableGraph>) -> PyResult<()> {
        let (c, _) = pointer(cond)?;
        self.push(Op::Conditional(cmdgraph_ir::CondKind::While, c, vec![body.0.clone()]))
    }

    /// `ext_cmdgraph_switch(cond, cases)`: runs the case the `u32` at `cond` names.
    fn ext_cmdgraph_switch(&mut self, cond: &Bound<'_, PyAny>, cases: Vec<PyRef<'_, ExecutableGraph>>) -> PyResult<()> {
        let (c, _) = pointer(cond)?;
        let bodies = cases.iter().map(|g| g.0.clone()).collect();
        self.push(Op::Conditional(cmdgraph_ir::CondKind::Switch, c, bodies))
    }
}

/// `fill`'s pattern as a literal of the destination's element type (or its own NumPy type).
pub fn pattern_literal(pattern: &Bound<'_, PyAny>, elem: s::Type) -> PyResult<Literal> {
    match numpy_scalar(pattern) {
        Some(t) => literal(&pattern.call_method0("item")?, t),
        None => literal(pattern, elem.scalar),
    }
}

/// The host-task callback: declared memory in, `fn(*arrays)`, writable memory out.
fn run_host_task(
    func: &Py<PyAny>,
    specs: &[(&'static str, s::Access)],
    mem: &mut dyn s::HostMemory,
) -> Result<(), s::HostError> {
    let node = mem.node().to_string();
    let names = mem.declared();
    if names.len() != specs.len() {
        return Err(s::HostError::failed(format!(
            "host task `{node}`: {} memory objects declared, {} expected",
            names.len(),
            specs.len()
        )));
    }
    let mut inputs = Vec::with_capacity(names.len());
    for (name, (_, mode)) in names.iter().zip(specs) {
        let size = mem.size(name)?;
        let bytes = if mode.reads() { Some(mem.read(name)?) } else { None };
        inputs.push((bytes, size));
    }
    let outputs = crate::host::guarded(&node, || {
        Python::attach(|py| -> PyResult<Vec<Option<Vec<u8>>>> {
            let items = PyList::empty(py);
            for ((bytes, size), (dtype, mode)) in inputs.iter().zip(specs) {
                let data =
                    bytes.as_ref().map(|b| PyBytes::new(py, b).into_any()).unwrap_or_else(|| py.None().into_bound(py));
                items.append((data, *size, *dtype, mode.keyword()))?;
            }
            let out = py.import("cmdgraph._host")?.getattr("call_arrays")?.call1((func.bind(py), items))?;
            out.try_iter()?
                .map(|o| {
                    let o = o?;
                    if o.is_none() {
                        Ok(None)
                    } else {
                        Ok(Some(o.cast::<PyBytes>()?.as_bytes().to_vec()))
                    }
                })
                .collect()
        })
    })?;
    let outputs = outputs.map_err(|e| s::HostError::failed(crate::host::describe(&node, &e)))?;
    for (name, out) in names.iter().zip(outputs) {
        if let Some(bytes) = out {
            mem.write(name, 0, &bytes)?;
        }
    }
    Ok(())
}

/// Registers the handler's classes.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Handler>()?;
    m.add_class::<LocalAccessor>()?;
    Ok(())
}

/// A command group as the crate takes it: `cgf`'s calls, replayed.
pub fn command_group(ops: Vec<Op>) -> s::CommandGroup {
    s::CommandGroup::new(move |h| replay(ops, h))
}
