//! Kernel arguments and execution ranges.

use crate::buffer::Accessor;
use crate::dynamic::DynamicParameter;
use crate::error::{Result, SyclError};
use crate::memory::{Ptr, Usm};
use cmdgraph_ir::data::half::f16;
use cmdgraph_ir::{Launch, LitValue, Literal, ScalarType, Type};

/// One kernel argument, as `set_arg` / a kernel lambda capture would give it.
#[derive(Clone, Debug)]
pub enum KArg {
    /// A scalar by value (the type is kept: `2.0f32` is an `f32`).
    Scalar(Literal),
    /// A USM or graph-owned pointer.
    Ptr(Ptr),
    /// A buffer accessor.
    Acc(Accessor),
    /// Raw bytes (`sycl_ext_oneapi_raw_kernel_arg`).
    Bytes(Vec<u8>),
    /// Work-group memory (`work_group_memory` / local accessor) of `count` elements.
    Local {
        /// Element type.
        elem: Type,
        /// Elements per work-group.
        count: u64,
    },
    /// A dynamic parameter: registers this argument slot with it.
    Dyn(DynamicParameter),
}

impl KArg {
    /// Work-group memory of `count` elements of `elem`.
    pub fn local(elem: Type, count: u64) -> KArg {
        KArg::Local { elem, count }
    }

    /// Raw bytes.
    pub fn raw(bytes: &[u8]) -> KArg {
        KArg::Bytes(bytes.to_vec())
    }
}

macro_rules! scalar_arg {
    ($t:ty, $scalar:expr, $conv:expr) => {
        impl From<$t> for KArg {
            fn from(v: $t) -> KArg {
                KArg::Scalar(Literal { value: $conv(v), ty: Some($scalar) })
            }
        }
    };
}
scalar_arg!(f32, ScalarType::F32, |v: f32| LitValue::Float(v as f64));
scalar_arg!(f64, ScalarType::F64, LitValue::Float);
scalar_arg!(i8, ScalarType::I8, |v: i8| LitValue::Int(v as i128));
scalar_arg!(u8, ScalarType::U8, |v: u8| LitValue::Int(v as i128));
scalar_arg!(i16, ScalarType::I16, |v: i16| LitValue::Int(v as i128));
scalar_arg!(u16, ScalarType::U16, |v: u16| LitValue::Int(v as i128));
scalar_arg!(i32, ScalarType::I32, |v: i32| LitValue::Int(v as i128));
scalar_arg!(u32, ScalarType::U32, |v: u32| LitValue::Int(v as i128));
scalar_arg!(i64, ScalarType::I64, |v: i64| LitValue::Int(v as i128));
scalar_arg!(u64, ScalarType::U64, |v: u64| LitValue::Int(v as i128));
scalar_arg!(bool, ScalarType::Bool, LitValue::Bool);
scalar_arg!(f16, ScalarType::F16, |v: f16| LitValue::Float(v.to_f64()));

impl From<&Usm> for KArg {
    fn from(u: &Usm) -> KArg {
        KArg::Ptr(u.ptr())
    }
}
impl From<Ptr> for KArg {
    fn from(p: Ptr) -> KArg {
        KArg::Ptr(p)
    }
}
impl From<&Ptr> for KArg {
    fn from(p: &Ptr) -> KArg {
        KArg::Ptr(p.clone())
    }
}
impl From<Accessor> for KArg {
    fn from(a: Accessor) -> KArg {
        KArg::Acc(a)
    }
}
impl From<&Accessor> for KArg {
    fn from(a: &Accessor) -> KArg {
        KArg::Acc(a.clone())
    }
}
impl From<&DynamicParameter> for KArg {
    fn from(p: &DynamicParameter) -> KArg {
        KArg::Dyn(p.clone())
    }
}

/// Builds a `Vec<KArg>` from values convertible into [`KArg`]: `args![&x, &y, 2.0f32]`.
#[macro_export]
macro_rules! args {
    ($($e:expr),* $(,)?) => { vec![$($crate::KArg::from($e)),*] };
}

/// A `range<D>` (D = 1, 2 or 3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Range(pub Vec<u64>);

impl From<u64> for Range {
    fn from(x: u64) -> Range {
        Range(vec![x])
    }
}
impl<const N: usize> From<[u64; N]> for Range {
    fn from(r: [u64; N]) -> Range {
        Range(r.to_vec())
    }
}

/// An `nd_range<D>`: global and local sizes, and an optional global offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NdRange {
    /// Global size per dimension.
    pub global: Vec<u64>,
    /// Work-group size per dimension.
    pub local: Vec<u64>,
    /// Global offset per dimension (empty: none).
    pub offset: Vec<u64>,
}

impl NdRange {
    /// `nd_range{global, local}`.
    pub fn new(global: impl Into<Range>, local: impl Into<Range>) -> NdRange {
        NdRange { global: global.into().0, local: local.into().0, offset: Vec::new() }
    }

    /// `nd_range{global, local, offset}`.
    pub fn with_offset(global: impl Into<Range>, local: impl Into<Range>, offset: impl Into<Range>) -> NdRange {
        NdRange { global: global.into().0, local: local.into().0, offset: offset.into().0 }
    }
}

fn check_dims(what: &str, dims: &[u64]) -> Result<()> {
    if !(1..=3).contains(&dims.len()) {
        return Err(SyclError::invalid(0, format!("a {what} has 1 to 3 dimensions, not {}", dims.len())));
    }
    if dims.contains(&0) {
        return Err(SyclError::invalid(
            0,
            format!("a {what} of size {dims:?} launches nothing; every size must be at least 1"),
        ));
    }
    Ok(())
}

/// The IR launch of a range.
pub(crate) fn range_launch(range: &Range) -> Result<Launch> {
    check_dims("range", &range.0)?;
    Ok(Launch::Range(range.0.clone()))
}

/// The IR launch of an nd-range; the work-group size must divide the global size.
pub(crate) fn nd_range_launch(nd: &NdRange) -> Result<Launch> {
    check_dims("nd_range", &nd.global)?;
    if nd.local.len() != nd.global.len() || (!nd.offset.is_empty() && nd.offset.len() != nd.global.len()) {
        return Err(SyclError::invalid(
            0,
            "the global, local and offset parts of an nd_range need the same dimensions",
        ));
    }
    for (g, l) in nd.global.iter().zip(&nd.local) {
        if *l == 0 || g % l != 0 {
            return Err(SyclError::invalid(
                0,
                format!(
                    "nd_range: work-group size {l} does not divide global size {g}; pick a local size that divides it"
                ),
            ));
        }
    }
    Ok(Launch::NdRange { global: nd.global.clone(), local: nd.local.clone(), offset: nd.offset.clone() })
}
