//! Updates before a run: dynamic parameters set from Python values and dynamic command
//! groups switched (`params=` and `active=` of `Executable.run` and `Module.interpret`), as
//! `cmdgraph run --set` and `--activate` do them (cli/src/cmd/run/steps.rs), checked against
//! the graph before anything is bound.

use crate::errors::{Error, Result};
use cmdgraph_ir::graph::{Accessor, ArgValue, MemRef, Pointer};
use cmdgraph_ir::types::{LitValue, Literal, ScalarType};
use cmdgraph_ir::{MemoryKind, Module};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyString, PyTuple};

/// One checked update, as the executor and the interpreter take it.
#[derive(Clone, Debug, PartialEq)]
pub enum Update {
    /// `update_param(name, value)`.
    Param {
        /// The dynamic parameter, without `%`.
        name: String,
        /// Its new value.
        value: ArgValue,
    },
    /// `set_active(name, index)`.
    Active {
        /// The dynamic command group, without `%`.
        name: String,
        /// The alternative to make active.
        index: u32,
    },
}

/// `params` and `active` checked against graph `graph` of `module` (the module that runs:
/// a bundle's optimized one on Vulkan, the source on the interpreter).
pub fn resolve(
    module: &Module,
    graph: &str,
    params: Option<&Bound<'_, PyDict>>,
    active: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<Update>> {
    let g = module
        .graph_by_name(graph)
        .map(|h| &module.graphs[h])
        .ok_or_else(|| Error::value(format!("no graph named `@{graph}`")))?;
    let mut out = Vec::new();
    for (key, value) in params.into_iter().flat_map(|d| d.iter()) {
        let name = sigil_free(&key, '%')?;
        let Some((_, p)) = g.dyn_params.iter().find(|(_, p)| p.name == name) else {
            let known: Vec<&str> = g.dyn_params.iter().map(|(_, p)| p.name.as_str()).collect();
            return Err(unknown("dynamic parameter", &name, graph, &known).into());
        };
        let value =
            convert(module, &p.value, &value).map_err(|e| Error { message: format!("%{name}: {}", e.message), ..e })?;
        out.push(Update::Param { name, value });
    }
    for (key, value) in active.into_iter().flat_map(|d| d.iter()) {
        let name = sigil_free(&key, '%')?;
        let Some((_, d)) = g.dcgs.iter().find(|(_, d)| d.name == name) else {
            let known: Vec<&str> = g.dcgs.iter().map(|(_, d)| d.name.as_str()).collect();
            return Err(unknown("dynamic command group", &name, graph, &known).into());
        };
        let index: u32 = value
            .extract()
            .map_err(|_| Error::type_error(format!("%{name}: the active alternative must be an int (0, 1, ...)")))?;
        if index as usize >= d.alternatives.len() {
            return Err(Error::value(format!(
                "%{name} has {} alternative(s), numbered 0 to {}",
                d.alternatives.len(),
                d.alternatives.len().saturating_sub(1)
            ))
            .into());
        }
        out.push(Update::Active { name, index });
    }
    Ok(out)
}

/// An unknown name, with the names there are.
fn unknown(what: &str, name: &str, graph: &str, known: &[&str]) -> Error {
    let list: Vec<String> = known.iter().map(|k| format!("%{k}")).collect();
    let list = if list.is_empty() { "none".to_string() } else { list.join(", ") };
    Error::value(format!("@{graph} has no {what} %{name} (its {what}s: {list})"))
}

/// A dict key as a name without its sigil.
fn sigil_free(key: &Bound<'_, PyAny>, sigil: char) -> Result<String> {
    let name: String = key.extract().map_err(|_| Error::type_error("parameter and group names must be str"))?;
    Ok(name.strip_prefix(sigil).unwrap_or(&name).to_string())
}

/// A Python value as a value of the kind `old` is: a scalar of the parameter's type, a usm
/// pointer (`"@x"` or `("@x", byte_offset)`) or a buffer (`"@b"`, the accessor's mode kept).
fn convert(module: &Module, old: &ArgValue, value: &Bound<'_, PyAny>) -> Result<ArgValue> {
    match old {
        ArgValue::Scalar(lit) => {
            // A parameter written without a type takes the kind of its literal.
            let ty = lit.ty.unwrap_or(match lit.value {
                LitValue::Bool(_) => ScalarType::Bool,
                LitValue::Int(_) => ScalarType::I32,
                LitValue::Float(_) => ScalarType::F32,
            });
            Ok(ArgValue::Scalar(Literal { value: scalar(value, ty)?, ty: Some(ty) }))
        }
        ArgValue::Pointer(_) => {
            let (name, offset) = match value.cast::<PyTuple>() {
                Ok(t) if t.len() == 2 => {
                    let offset = t
                        .get_item(1)
                        .and_then(|o| o.extract::<u64>())
                        .map_err(|_| Error::type_error("a pointer's byte offset must be an int of 0 or more"))?;
                    (t.get_item(0).map_err(|_| Error::type_error("a pointer is (\"@x\", offset)"))?, offset)
                }
                _ => (value.clone(), 0),
            };
            let h = memory(module, &name, |k| matches!(k, MemoryKind::Usm(_)), "usm memory")?;
            let size = module.memories[h].size_bytes();
            if offset > size {
                return Err(Error::value(format!(
                    "offset {offset} is past the end of @{} ({size} bytes)",
                    module.memories[h].name
                )));
            }
            Ok(ArgValue::Pointer(Pointer { base: MemRef::Memory(h), offset }))
        }
        ArgValue::Accessor(a) => {
            let h = memory(module, value, |k| matches!(k, MemoryKind::Buffer), "buffer")?;
            Ok(ArgValue::Accessor(Accessor { buffer: MemRef::Memory(h), mode: a.mode, range: None }))
        }
        ArgValue::Bytes(_) | ArgValue::Local { .. } => {
            Err(Error::value("only scalar, pointer and accessor parameters can be set from Python"))
        }
    }
}

/// A Python bool, int or float as a literal of `ty`: ints for integer types (in range),
/// ints or floats for float types (representable), bools for `bool`.
fn scalar(value: &Bound<'_, PyAny>, ty: ScalarType) -> Result<LitValue> {
    let is_bool = value.is_instance_of::<PyBool>();
    let wrong = || Error::type_error(format!("a {ty} parameter takes {}", kind_of(ty)));
    let lit = if ty == ScalarType::Bool {
        LitValue::Bool(if is_bool { value.extract().map_err(|_| wrong())? } else { return Err(wrong()) })
    } else if is_bool {
        return Err(wrong());
    } else if ty.is_float() {
        let v: f64 = value.extract().map_err(|_| wrong())?;
        representable(v, ty)?;
        LitValue::Float(v)
    } else {
        if value.is_instance_of::<PyFloat>() || value.is_instance_of::<PyString>() {
            return Err(wrong());
        }
        LitValue::Int(value.extract::<i128>().map_err(|_| wrong())?)
    };
    if !Literal::fits(lit, ty) {
        let range = ty.int_range().map_or(String::new(), |(lo, hi)| format!(" ({lo} to {hi})"));
        return Err(Error::value(format!("{value} does not fit in {ty}{range}")));
    }
    Ok(lit)
}

fn kind_of(ty: ScalarType) -> &'static str {
    if ty == ScalarType::Bool {
        "a bool"
    } else if ty.is_float() {
        "an int or a float"
    } else {
        "an int"
    }
}

/// Refuses a finite value that would become infinity in `ty`, or a nonzero one that would
/// become zero (as `cmdgraph run --set` does).
fn representable(v: f64, ty: ScalarType) -> Result<()> {
    let rounded = match ty {
        ScalarType::F16 => cmdgraph_ir::data::f16_from_f64(v).to_f64(),
        ScalarType::F64 => v,
        _ => f64::from(v as f32),
    };
    if rounded.is_infinite() && v.is_finite() {
        return Err(Error::value(format!("{v} is out of range for {ty}: it would become infinity")));
    }
    if v != 0.0 && rounded == 0.0 {
        return Err(Error::value(format!("{v} is too small for {ty}: it would become 0")));
    }
    Ok(())
}

/// Memory object named by `value` (`"@x"` or `"x"`) of the kind `ok` accepts.
fn memory(
    module: &Module,
    value: &Bound<'_, PyAny>,
    ok: impl Fn(&MemoryKind) -> bool,
    what: &str,
) -> Result<cmdgraph_ir::Handle<cmdgraph_ir::MemoryObject>> {
    let name: String =
        value.extract().map_err(|_| Error::type_error(format!("expected the name of {what} (\"@x\")")))?;
    let bare = name.strip_prefix('@').unwrap_or(&name);
    let found = module.memories.iter().find(|(_, m)| m.name == bare && ok(&m.kind)).map(|(h, _)| h);
    found.ok_or_else(|| {
        let known: Vec<String> =
            module.memories.iter().filter(|(_, m)| ok(&m.kind)).map(|(_, m)| format!("@{}", m.name)).collect();
        let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
        Error::value(format!("`@{bare}` is not {what} of the module (its {what}: {known})"))
    })
}
