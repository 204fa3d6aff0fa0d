//! Types shared by kernels, memory objects and literals.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A scalar type of the kernel language and of memory elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ScalarType {
    /// `bool` (one byte in memory, 0 or 1).
    Bool,
    /// `i8`
    I8,
    /// `u8`
    U8,
    /// `i16`
    I16,
    /// `u16`
    U16,
    /// `i32`
    I32,
    /// `u32`
    U32,
    /// `i64`
    I64,
    /// `u64`
    U64,
    /// `f16` (IEEE binary16)
    F16,
    /// `f32`
    F32,
    /// `f64` (IEEE binary64; on Vulkan it needs `shaderFloat64`)
    F64,
}

impl ScalarType {
    /// Every scalar type, in keyword order.
    pub const ALL: [ScalarType; 12] = [
        ScalarType::Bool,
        ScalarType::I8,
        ScalarType::U8,
        ScalarType::I16,
        ScalarType::U16,
        ScalarType::I32,
        ScalarType::U32,
        ScalarType::I64,
        ScalarType::U64,
        ScalarType::F16,
        ScalarType::F32,
        ScalarType::F64,
    ];

    /// Size in bytes when stored in memory.
    pub fn size(self) -> u64 {
        match self {
            ScalarType::Bool | ScalarType::I8 | ScalarType::U8 => 1,
            ScalarType::I16 | ScalarType::U16 | ScalarType::F16 => 2,
            ScalarType::I32 | ScalarType::U32 | ScalarType::F32 => 4,
            ScalarType::I64 | ScalarType::U64 | ScalarType::F64 => 8,
        }
    }

    /// The keyword spelling this type.
    pub fn keyword(self) -> &'static str {
        match self {
            ScalarType::Bool => "bool",
            ScalarType::I8 => "i8",
            ScalarType::U8 => "u8",
            ScalarType::I16 => "i16",
            ScalarType::U16 => "u16",
            ScalarType::I32 => "i32",
            ScalarType::U32 => "u32",
            ScalarType::I64 => "i64",
            ScalarType::U64 => "u64",
            ScalarType::F16 => "f16",
            ScalarType::F32 => "f32",
            ScalarType::F64 => "f64",
        }
    }

    /// Parses a keyword.
    pub fn from_keyword(word: &str) -> Option<ScalarType> {
        ScalarType::ALL.into_iter().find(|t| t.keyword() == word)
    }

    /// Whether this is `f16`, `f32` or `f64`.
    pub fn is_float(self) -> bool {
        matches!(self, ScalarType::F16 | ScalarType::F32 | ScalarType::F64)
    }

    /// Whether this is a signed or unsigned integer type (not `bool`).
    pub fn is_integer(self) -> bool {
        self.int_range().is_some()
    }

    /// Whether this is a signed integer type.
    pub fn is_signed_integer(self) -> bool {
        matches!(self, ScalarType::I8 | ScalarType::I16 | ScalarType::I32 | ScalarType::I64)
    }

    /// The smallest and largest value of an integer type (`None` for `bool` and floats).
    pub fn int_range(self) -> Option<(i128, i128)> {
        Some(match self {
            ScalarType::I8 => (i8::MIN.into(), i8::MAX.into()),
            ScalarType::U8 => (0, u8::MAX.into()),
            ScalarType::I16 => (i16::MIN.into(), i16::MAX.into()),
            ScalarType::U16 => (0, u16::MAX.into()),
            ScalarType::I32 => (i32::MIN.into(), i32::MAX.into()),
            ScalarType::U32 => (0, u32::MAX.into()),
            ScalarType::I64 => (i64::MIN.into(), i64::MAX.into()),
            ScalarType::U64 => (0, u64::MAX.into()),
            ScalarType::Bool | ScalarType::F16 | ScalarType::F32 | ScalarType::F64 => return None,
        })
    }

    /// Bits of the type: 1 for `bool`, else eight times its size.
    pub fn bits(self) -> u32 {
        if self == ScalarType::Bool {
            1
        } else {
            self.size() as u32 * 8
        }
    }
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.keyword())
    }
}

/// A value type: a scalar or a short vector (`vec2<f32>`, `vec3<i32>`, `vec4<f32>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Type {
    /// The element (or only) scalar.
    pub scalar: ScalarType,
    /// 1 for a scalar, 2..=4 for a vector.
    pub lanes: u8,
}

impl Type {
    /// A scalar type.
    pub const fn scalar(scalar: ScalarType) -> Type {
        Type { scalar, lanes: 1 }
    }

    /// A vector type; `lanes` must be 2, 3 or 4 (checked by the verifier and parser).
    pub const fn vector(scalar: ScalarType, lanes: u8) -> Type {
        Type { scalar, lanes }
    }

    /// `bool`
    pub const BOOL: Type = Type::scalar(ScalarType::Bool);
    /// `u32`
    pub const U32: Type = Type::scalar(ScalarType::U32);
    /// `f32`
    pub const F32: Type = Type::scalar(ScalarType::F32);

    /// Whether this is a vector.
    pub fn is_vector(self) -> bool {
        self.lanes > 1
    }

    /// Size in bytes in memory (vec3 is padded to 4 lanes as in SYCL/Vulkan std430).
    pub fn size(self) -> u64 {
        let lanes = if self.lanes == 3 { 4 } else { self.lanes as u64 };
        self.scalar.size() * lanes
    }

    /// The same shape with a different scalar (used by comparisons: `vec4<f32>` -> `vec4<bool>`).
    pub fn with_scalar(self, scalar: ScalarType) -> Type {
        Type { scalar, lanes: self.lanes }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.lanes == 1 {
            write!(f, "{}", self.scalar)
        } else {
            write!(f, "vec{}<{}>", self.lanes, self.scalar)
        }
    }
}

/// How a kernel parameter or accessor may touch memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Access {
    /// `read`: only loads.
    Read,
    /// `write`: only stores; prior contents are kept where not written.
    Write,
    /// `read_write`: loads, stores and atomics.
    ReadWrite,
    /// `no_init`: stores only, prior contents are discarded (SYCL `property::no_init`).
    NoInit,
}

impl Access {
    /// Every access mode, in keyword order.
    pub const ALL: [Access; 4] = [Access::Read, Access::Write, Access::ReadWrite, Access::NoInit];

    /// The keyword spelling this mode.
    pub fn keyword(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
            Access::ReadWrite => "read_write",
            Access::NoInit => "no_init",
        }
    }

    /// Parses a keyword.
    pub fn from_keyword(word: &str) -> Option<Access> {
        Access::ALL.into_iter().find(|a| a.keyword() == word)
    }

    /// Whether the mode allows loads.
    pub fn reads(self) -> bool {
        matches!(self, Access::Read | Access::ReadWrite)
    }

    /// Whether the mode allows stores.
    pub fn writes(self) -> bool {
        !matches!(self, Access::Read)
    }

    /// Whether an argument of mode `self` may be passed to a parameter declared `param`.
    pub fn satisfies(self, param: Access) -> bool {
        match param {
            Access::Read => self.reads(),
            Access::Write | Access::NoInit => self.writes(),
            Access::ReadWrite => self == Access::ReadWrite,
        }
    }
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.keyword())
    }
}

/// The value of a literal, before or after it is given a type.
///
/// Equality is structural on the written value: floats compare by bit pattern (so `0.0` and
/// `-0.0` differ, as their texts do) and every NaN equals every other NaN (all print as
/// `nan`), which makes `parse(print(m)) == m` hold for modules holding `nan`.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub enum LitValue {
    /// `true` / `false`
    Bool(bool),
    /// An integer literal (decimal, `0x` hex, optionally negative).
    Int(i128),
    /// A floating-point literal (`1.5`, `1e-3`, `inf`, `-inf`, `nan`).
    Float(f64),
}

impl PartialEq for LitValue {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (LitValue::Bool(a), LitValue::Bool(b)) => a == b,
            (LitValue::Int(a), LitValue::Int(b)) => a == b,
            (LitValue::Float(a), LitValue::Float(b)) => (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits(),
            _ => false,
        }
    }
}

/// A scalar literal. In kernel arguments the type may be left to the parameter
/// (`3.0`); elsewhere it is written (`3.0 : f32`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Literal {
    /// The value as written.
    pub value: LitValue,
    /// The explicit type, if one was written.
    pub ty: Option<ScalarType>,
}

impl Literal {
    /// Whether `value` is representable in `ty` (integers in range, floats only for float
    /// types, booleans only for `bool`).
    pub fn fits(value: LitValue, ty: ScalarType) -> bool {
        match (value, ty) {
            (LitValue::Bool(_), ScalarType::Bool) => true,
            (LitValue::Int(v), t) if t.is_integer() => t.int_range().is_some_and(|(lo, hi)| (lo..=hi).contains(&v)),
            (LitValue::Int(v), t) if t.is_float() => v.unsigned_abs() <= (1u128 << 53),
            (LitValue::Float(_), t) => t.is_float(),
            _ => false,
        }
    }
}
