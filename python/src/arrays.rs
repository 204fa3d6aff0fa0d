//! NumPy arrays in and out: the layouts of a module's memory objects, and the calls into
//! `cmdgraph/_arrays.py`, which checks an array against its memory object (dtype,
//! contiguity, shape). A checked array's memory is read by address (`raw.rs`: abi3 has no
//! buffer protocol), straight into the executor's staging buffer; a memory object is read
//! back straight into a new array (`_arrays.empty`), except `vec3` memory, whose padding
//! lane is dropped in one copy. The interpreter's inputs are copied once into `Vec`s.

use crate::errors::{Error, Result};
use cmdgraph_ir::types::ScalarType;
use cmdgraph_ir::{MemoryKind, Module};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyByteArray, PyDict};

/// The functions of `cmdgraph/_arrays.py`, looked up once: a run calls them for every array,
/// and the import and attribute lookups cost a measurable part of the 10 µs budget.
static PREPARE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static EMPTY: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static FROM_BYTES: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// `_arrays.prepare`.
pub fn prepare_fn(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    PREPARE.import(py, "cmdgraph._arrays", "prepare")
}

/// `_arrays.empty`.
fn empty_fn(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    EMPTY.import(py, "cmdgraph._arrays", "empty")
}

/// `_arrays.from_bytes`.
pub fn from_bytes_fn(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    FROM_BYTES.import(py, "cmdgraph._arrays", "from_bytes")
}

/// What an array bound to a memory object must look like.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The memory object's name, without `@`.
    pub name: String,
    /// The little-endian NumPy dtype string of its scalar type (`<f4`), as `.npy` files
    /// of `cmdgraph interp` have it.
    pub dtype: &'static str,
    /// Lanes per element (1 for a scalar type).
    pub lanes: u32,
    /// Element count.
    pub count: u64,
    /// `f32[1024]`, for messages.
    pub describe: String,
    /// A `device_global`: read and written by the device only, never bound.
    pub global: bool,
}

/// The dtype of a scalar type (the CLI's `.npy` mapping, cli/src/cmd/interp/data.rs).
pub fn dtype(scalar: ScalarType) -> &'static str {
    match scalar {
        ScalarType::Bool => "|b1",
        ScalarType::I8 => "|i1",
        ScalarType::U8 => "|u1",
        ScalarType::I16 => "<i2",
        ScalarType::U16 => "<u2",
        ScalarType::I32 => "<i4",
        ScalarType::U32 => "<u4",
        ScalarType::I64 => "<i8",
        ScalarType::U64 => "<u8",
        ScalarType::F16 => "<f2",
        ScalarType::F32 => "<f4",
        ScalarType::F64 => "<f8",
    }
}

/// The layouts of every memory object of `module`, in declaration order.
pub fn layouts(module: &Module) -> Vec<Layout> {
    module
        .memories
        .iter()
        .map(|(_, m)| Layout {
            name: m.name.clone(),
            dtype: dtype(m.elem.scalar),
            lanes: u32::from(m.elem.lanes),
            count: m.count,
            describe: format!("{}[{}]", m.elem, m.count),
            global: matches!(m.kind, MemoryKind::DeviceGlobal(_)),
        })
        .collect()
}

/// The layout of memory object `name` (`@` optional), or a `ValueError` listing them.
fn find<'l>(layouts: &'l [Layout], name: &str) -> Result<&'l Layout> {
    let bare = name.strip_prefix('@').unwrap_or(name);
    layouts.iter().find(|l| l.name == bare).ok_or_else(|| {
        let known: Vec<String> = layouts.iter().map(|l| format!("@{}", l.name)).collect();
        let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
        Error::value(format!("the module has no memory object named `@{bare}` (its memory objects: {known})"))
    })
}

/// Checks every input array before anything is bound: a wrong name, a `device_global`, or
/// an array that does not fit its memory object raises here. Returns each memory object's
/// name and its array (C-contiguous, exactly the object's bytes: `raw::bytes` reads it).
pub fn inputs<'py>(
    py: Python<'py>,
    layouts: &[Layout],
    given: Option<&Bound<'py, PyDict>>,
) -> PyResult<Vec<(String, Bound<'py, PyAny>)>> {
    let Some(given) = given else { return Ok(Vec::new()) };
    let prepare = prepare_fn(py)?;
    let mut out = Vec::with_capacity(given.len());
    for (key, value) in given.iter() {
        let name: String = key.extract().map_err(|_| Error::type_error("input names must be str"))?;
        let layout = find(layouts, &name)?;
        if layout.global {
            return Err(Error::value(format!(
                "@{}: a device_global starts from its initialiser and cannot be bound (only usm and buffer memory can)",
                layout.name
            ))
            .into());
        }
        let args = (layout.name.as_str(), value, layout.dtype, layout.lanes, layout.count, layout.describe.as_str());
        let array = prepare.call1(args)?;
        out.push((layout.name.clone(), array));
    }
    Ok(out)
}

/// The input arrays' bytes, copied (for the interpreter, which runs with the GIL released).
pub fn owned(inputs: &[(String, Bound<'_, PyAny>)]) -> PyResult<Vec<(String, Vec<u8>)>> {
    inputs.iter().map(|(n, a)| Ok((n.clone(), crate::raw::bytes(a)?.to_vec()))).collect()
}

/// A new array for each memory object to read back (`None` for `vec3` memory, read as bytes).
pub fn empties<'py>(py: Python<'py>, wanted: &[Layout]) -> PyResult<Vec<Option<Bound<'py, PyAny>>>> {
    let empty = empty_fn(py)?;
    wanted
        .iter()
        .map(|l| match l.lanes {
            3 => Ok(None),
            _ => empty.call1((l.dtype, l.lanes, l.count)).map(Some),
        })
        .collect()
}

/// The arrays read back (`empties`, filled), with `vec3` memory's bytes made arrays, as a
/// dict of name to array.
pub fn filled_dict<'py>(
    py: Python<'py>,
    wanted: &[Layout],
    arrays: Vec<Option<Bound<'py, PyAny>>>,
    vec3_bytes: Vec<Vec<u8>>,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    let mut bytes = vec3_bytes.into_iter();
    for (layout, array) in wanted.iter().zip(arrays) {
        let array = match array {
            Some(a) => a,
            None => {
                let b = bytes.next().unwrap_or_default();
                let buffer = PyByteArray::new(py, &b);
                from_bytes_fn(py)?.call1((buffer, layout.dtype, layout.lanes, layout.count))?
            }
        };
        dict.set_item(&layout.name, array)?;
    }
    Ok(dict)
}

/// The memory objects to read back: `wanted`, or every `usm` and `buffer` object.
pub fn outputs(layouts: &[Layout], wanted: Option<Vec<String>>) -> Result<Vec<Layout>> {
    match wanted {
        None => Ok(layouts.iter().filter(|l| !l.global).cloned().collect()),
        Some(names) => names.iter().map(|n| find(layouts, n).cloned()).collect(),
    }
}

/// The bytes read back, as a dict of name to array (shape `(count,)`, or `(count, lanes)`
/// for a vector type).
pub fn to_dict<'py>(py: Python<'py>, read: Vec<(Layout, Vec<u8>)>) -> PyResult<Bound<'py, PyDict>> {
    let from_bytes = from_bytes_fn(py)?;
    let dict = PyDict::new(py);
    for (layout, bytes) in read {
        let buffer = PyByteArray::new(py, &bytes);
        let array = from_bytes.call1((buffer, layout.dtype, layout.lanes, layout.count))?;
        dict.set_item(&layout.name, array)?;
    }
    Ok(dict)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_follow_the_npy_mapping() {
        let m = cmdgraph_ir::text::parse("usm @x : vec3<f32>[4]\nbuffer @y : u8[3]\n").expect("parses");
        let l = layouts(&m);
        assert_eq!(l.len(), 2);
        assert_eq!((l[0].dtype, l[0].lanes, l[0].count, l[0].describe.as_str()), ("<f4", 3, 4, "vec3<f32>[4]"));
        assert_eq!((l[1].dtype, l[1].lanes, l[1].count), ("|u1", 1, 3));
        assert!(find(&l, "@y").is_ok());
        assert!(find(&l, "z").unwrap_err().message.contains("@x, @y"));
    }
}
