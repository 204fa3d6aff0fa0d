//! USM allocations, pointers, buffers and accessors, with NumPy arrays in and out (checked
//! by `cmdgraph/_arrays.py` as for `Executable.run`: dtype, contiguity, element count).

use super::{access, detach, elem_type, usm_kind, Context, OrRaise};
use cmdgraph_sycl as s;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyByteArray;
use std::cell::RefCell;
use std::rc::Rc;

/// `(dtype, lanes)` of an element type, as `_arrays.py` takes them.
fn layout(elem: s::Type) -> (&'static str, u32) {
    (crate::arrays::dtype(elem.scalar), u32::from(elem.lanes))
}

/// Bytes of `array` for memory `name` of `count` elements of `elem` (TypeError/ValueError
/// naming the memory when it does not fit).
fn array_bytes(py: Python<'_>, name: &str, array: &Bound<'_, PyAny>, elem: s::Type, count: u64) -> PyResult<Vec<u8>> {
    let (dtype, lanes) = layout(elem);
    let describe = format!("{elem}[{count}]");
    let checked = crate::arrays::prepare_fn(py)?.call1((name, array, dtype, lanes, count, describe))?;
    Ok(crate::raw::bytes(&checked)?.to_vec())
}

/// A NumPy array over `bytes` (one element per row for vectors).
fn array_of(py: Python<'_>, bytes: &[u8], elem: s::Type, count: u64) -> PyResult<Py<PyAny>> {
    let (dtype, lanes) = layout(elem);
    let buf = PyByteArray::new(py, bytes);
    Ok(crate::arrays::from_bytes_fn(py)?.call1((buf, dtype, lanes, count))?.unbind())
}

/// A USM allocation (`malloc_device`, `malloc_shared`, `malloc_host`) of `count` elements of
/// one type: `@name : T[N]` in every graph of its context. `usm + i` is a pointer to element
/// `i`; `to_numpy()` and `copy_from(array)` read and write its contents on the host (after
/// any run in flight).
///
/// >>> x = sycl.malloc_device(1024, np.float32, q)
/// >>> x.copy_from(np.arange(1024, dtype=np.float32))
#[pyclass(unsendable, module = "cmdgraph.sycl", name = "Usm")]
#[derive(Clone)]
pub struct Usm(pub s::Usm);

#[pymethods]
impl Usm {
    /// The memory object's name (`@name` in the IR).
    #[getter]
    fn name(&self) -> String {
        self.0.name().to_string()
    }

    /// The element count.
    #[getter]
    fn count(&self) -> u64 {
        self.0.count()
    }

    /// The element type (`f32`, `vec4<f32>`).
    #[getter]
    fn elem(&self) -> String {
        self.0.elem().to_string()
    }

    /// The NumPy dtype string of the element's scalar type (`<f4`).
    #[getter]
    fn dtype(&self) -> &'static str {
        crate::arrays::dtype(self.0.elem().scalar)
    }

    /// Size in bytes.
    #[getter]
    fn nbytes(&self) -> u64 {
        self.0.count() * self.0.elem().size()
    }

    /// `"device"`, `"shared"` or `"host"`.
    #[getter]
    fn kind(&self) -> &'static str {
        match self.0.kind() {
            s::UsmKind::Device => "device",
            s::UsmKind::Shared => "shared",
            s::UsmKind::Host => "host",
        }
    }

    /// The contents as a new NumPy array (waits for runs in flight).
    fn to_numpy(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let u = self.0.clone();
        let bytes = detach(py, move || u.read_bytes()).or_raise()?;
        array_of(py, &bytes, self.0.elem(), self.0.count())
    }

    /// Writes `array` (its dtype and element count must match) into the allocation.
    fn copy_from(&self, py: Python<'_>, array: &Bound<'_, PyAny>) -> PyResult<()> {
        let bytes = array_bytes(py, self.0.name(), array, self.0.elem(), self.0.count())?;
        let u = self.0.clone();
        detach(py, move || u.write_bytes(0, &bytes)).or_raise()
    }

    /// A pointer to element `index`.
    #[pyo3(signature = (index = 0))]
    fn ptr(&self, index: u64) -> Ptr {
        Ptr::ready(self.0.at(index), self.0.elem())
    }

    fn __add__(&self, index: u64) -> Ptr {
        self.ptr(index)
    }

    fn __len__(&self) -> usize {
        usize::try_from(self.0.count()).unwrap_or(usize::MAX)
    }

    fn __repr__(&self) -> String {
        format!("Usm(@{}: {}[{}], {})", self.0.name(), self.0.elem(), self.0.count(), self.kind())
    }
}

/// A device pointer: into a USM allocation (`usm + i`) or a graph-owned allocation
/// (`async_malloc`). A pointer returned by `Handler.async_malloc` is set when its command
/// group function returns.
#[pyclass(unsendable, module = "cmdgraph.sycl", name = "Ptr")]
#[derive(Clone)]
pub struct Ptr {
    cell: Rc<RefCell<Option<s::Ptr>>>,
    /// Its element type (byte arithmetic is in elements of it).
    pub elem: s::Type,
}

impl Ptr {
    /// A pointer that is set.
    pub fn ready(p: s::Ptr, elem: s::Type) -> Ptr {
        Ptr { cell: Rc::new(RefCell::new(Some(p))), elem }
    }

    /// A pointer set later (by `async_malloc`'s replay), and the cell that sets it.
    pub fn pending(elem: s::Type) -> (Ptr, Rc<RefCell<Option<s::Ptr>>>) {
        let cell = Rc::new(RefCell::new(None));
        (Ptr { cell: cell.clone(), elem }, cell)
    }

    /// The crate's pointer, or an error when it is not set yet.
    pub fn get(&self) -> PyResult<s::Ptr> {
        self.cell.borrow().clone().ok_or_else(|| {
            PyValueError::new_err(
                "this async_malloc pointer is set when its command group function returns: use it in a later command group",
            )
        })
    }
}

#[pymethods]
impl Ptr {
    /// The byte offset into its allocation.
    #[getter]
    fn offset(&self) -> PyResult<u64> {
        Ok(self.get()?.offset())
    }

    /// The size in bytes of the allocation it points into.
    #[getter]
    fn allocation_bytes(&self) -> PyResult<u64> {
        Ok(self.get()?.allocation_bytes())
    }

    /// The element type (`f32`).
    #[getter]
    fn elem(&self) -> String {
        self.elem.to_string()
    }

    fn __add__(&self, index: u64) -> PyResult<Ptr> {
        Ok(Ptr::ready(self.get()?.byte_add(index * self.elem.size()), self.elem))
    }

    fn __repr__(&self) -> String {
        match &*self.cell.borrow() {
            Some(p) => format!("Ptr({p:?})"),
            None => "Ptr(<set when its command group function returns>)".into(),
        }
    }
}

/// What a pointer argument may be: a `Usm` (its start) or a `Ptr`; with its element type.
pub fn pointer(obj: &Bound<'_, PyAny>) -> PyResult<(s::Ptr, s::Type)> {
    if let Ok(u) = obj.extract::<PyRef<'_, Usm>>() {
        return Ok((u.0.ptr(), u.0.elem()));
    }
    if let Ok(p) = obj.extract::<PyRef<'_, Ptr>>() {
        return Ok((p.get()?, p.elem));
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "expected a USM allocation or pointer (sycl.Usm, sycl.Ptr), got {}",
        obj.get_type().name()?
    )))
}

/// The context of `ctx_or_queue` (a Context or a Queue).
pub fn context_of(obj: &Bound<'_, PyAny>) -> PyResult<s::Context> {
    if let Ok(c) = obj.extract::<PyRef<'_, Context>>() {
        return Ok(c.0.clone());
    }
    if let Ok(q) = obj.extract::<PyRef<'_, super::graph::Queue>>() {
        return Ok(q.0.context());
    }
    Err(pyo3::exceptions::PyTypeError::new_err("expected a sycl.Context or sycl.Queue"))
}

fn alloc(
    py: Python<'_>,
    count: u64,
    dtype: &Bound<'_, PyAny>,
    ctx: &Bound<'_, PyAny>,
    kind: s::UsmKind,
    name: Option<&str>,
) -> PyResult<Usm> {
    let elem = elem_type(py, dtype)?;
    s::Usm::new(&context_of(ctx)?, name, elem, count, kind).map(Usm).or_raise()
}

/// `sycl::malloc_device<T>(count, queue_or_context)`: `dtype` is a NumPy dtype or an IR
/// type name (`"f32"`, `"vec4<f32>"`); `name` the memory object's name (else `usmN`).
#[pyfunction]
#[pyo3(signature = (count, dtype, queue, *, name = None))]
pub fn malloc_device(
    py: Python<'_>,
    count: u64,
    dtype: &Bound<'_, PyAny>,
    queue: &Bound<'_, PyAny>,
    name: Option<&str>,
) -> PyResult<Usm> {
    alloc(py, count, dtype, queue, s::UsmKind::Device, name)
}

/// `sycl::malloc_shared<T>(count, queue_or_context)`.
#[pyfunction]
#[pyo3(signature = (count, dtype, queue, *, name = None))]
pub fn malloc_shared(
    py: Python<'_>,
    count: u64,
    dtype: &Bound<'_, PyAny>,
    queue: &Bound<'_, PyAny>,
    name: Option<&str>,
) -> PyResult<Usm> {
    alloc(py, count, dtype, queue, s::UsmKind::Shared, name)
}

/// `sycl::malloc_host<T>(count, queue_or_context)`.
#[pyfunction]
#[pyo3(signature = (count, dtype, queue, *, name = None))]
pub fn malloc_host(
    py: Python<'_>,
    count: u64,
    dtype: &Bound<'_, PyAny>,
    queue: &Bound<'_, PyAny>,
    name: Option<&str>,
) -> PyResult<Usm> {
    alloc(py, count, dtype, queue, s::UsmKind::Host, name)
}

/// `sycl::malloc(count, queue_or_context, kind)` with `kind` `"device"`, `"shared"`, `"host"`.
#[pyfunction]
#[pyo3(signature = (count, dtype, queue, kind, *, name = None))]
pub fn malloc(
    py: Python<'_>,
    count: u64,
    dtype: &Bound<'_, PyAny>,
    queue: &Bound<'_, PyAny>,
    kind: &str,
    name: Option<&str>,
) -> PyResult<Usm> {
    alloc(py, count, dtype, queue, usm_kind(kind)?, name)
}

/// A `sycl::buffer` of `count` elements: `Buffer(ctx, array)` takes its contents (and
/// element type) from a NumPy array, `Buffer(ctx, count=N, dtype=...)` starts zeroed.
/// Commands reach it through accessors (`Handler.access`, `Buffer.placeholder`), which
/// give the graph its edges; `host_access()` reads it. Graphs using buffers need
/// `assume_buffer_outlives_graph=True`.
#[pyclass(unsendable, module = "cmdgraph.sycl", name = "Buffer")]
#[derive(Clone)]
pub struct Buffer(pub s::Buffer);

#[pymethods]
impl Buffer {
    #[new]
    #[pyo3(signature = (context, data = None, *, count = None, dtype = None, name = None))]
    fn new(
        py: Python<'_>,
        context: &Bound<'_, PyAny>,
        data: Option<&Bound<'_, PyAny>>,
        count: Option<u64>,
        dtype: Option<&Bound<'_, PyAny>>,
        name: Option<&str>,
    ) -> PyResult<Buffer> {
        let ctx = context_of(context)?;
        match data {
            Some(array) => {
                let dt = array.getattr("dtype")?;
                let elem = elem_type(py, &dt)?;
                let n: u64 = array.getattr("size")?.extract()?;
                let buf = s::Buffer::new(&ctx, name, elem, n).or_raise()?;
                let bytes = array_bytes(py, buf.name(), array, elem, n)?;
                // Writing waits for runs in flight, whose host tasks may need the GIL.
                let b = buf.clone();
                detach(py, move || b.write_bytes(0, &bytes)).or_raise()?;
                Ok(Buffer(buf))
            }
            None => {
                let (Some(count), Some(dtype)) = (count, dtype) else {
                    return Err(PyValueError::new_err("Buffer(ctx, array) or Buffer(ctx, count=N, dtype=...)"));
                };
                let elem = elem_type(py, dtype)?;
                s::Buffer::new(&ctx, name, elem, count).map(Buffer).or_raise()
            }
        }
    }

    /// The memory object's name.
    #[getter]
    fn name(&self) -> String {
        self.0.name().to_string()
    }

    /// The element count.
    #[getter]
    fn count(&self) -> u64 {
        self.0.count()
    }

    /// A host accessor: the contents as a new NumPy array (row 55 while a graph recording
    /// commands that use the buffer is still recording).
    fn host_access(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let b = self.0.clone();
        let bytes = detach(py, move || b.read_bytes()).or_raise()?;
        array_of(py, &bytes, self.0.elem(), self.0.count())
    }

    /// A placeholder accessor (`handler.require(acc)` binds it to a command group).
    #[pyo3(signature = (mode = "read_write"))]
    fn placeholder(&self, mode: &str) -> PyResult<Accessor> {
        Ok(Accessor(self.0.placeholder(access(mode)?)))
    }

    fn __repr__(&self) -> String {
        format!("Buffer(@{}: {}[{}])", self.0.name(), self.0.elem(), self.0.count())
    }
}

/// A buffer accessor (`Handler.access(buffer, mode)`), passed to kernels like a pointer.
#[pyclass(unsendable, module = "cmdgraph.sycl", name = "Accessor")]
#[derive(Clone)]
pub struct Accessor(pub s::Accessor);

#[pymethods]
impl Accessor {
    /// The access mode.
    #[getter]
    fn mode(&self) -> &'static str {
        self.0.mode().keyword()
    }

    /// The buffer.
    #[getter]
    fn buffer(&self) -> Buffer {
        Buffer(self.0.buffer().clone())
    }
}

/// Registers the memory classes and the `malloc_*` functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Usm>()?;
    m.add_class::<Ptr>()?;
    m.add_class::<Buffer>()?;
    m.add_class::<Accessor>()?;
    m.add_function(wrap_pyfunction!(malloc_device, m)?)?;
    m.add_function(wrap_pyfunction!(malloc_shared, m)?)?;
    m.add_function(wrap_pyfunction!(malloc_host, m)?)?;
    m.add_function(wrap_pyfunction!(malloc, m)?)?;
    Ok(())
}
