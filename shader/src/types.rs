//! IR value types and their mapping from naga types.

use naga::{Scalar, ScalarKind, TypeInner, VectorSize};

/// An IR scalar type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum S {
    Bool,
    I32,
    U32,
    I64,
    U64,
    F32,
}

impl S {
    pub(crate) fn text(self) -> &'static str {
        match self {
            S::Bool => "bool",
            S::I32 => "i32",
            S::U32 => "u32",
            S::I64 => "i64",
            S::U64 => "u64",
            S::F32 => "f32",
        }
    }

    pub(crate) fn is_int(self) -> bool {
        matches!(self, S::I32 | S::U32 | S::I64 | S::U64)
    }

    /// The zero of this scalar as `const` text.
    pub(crate) fn zero(self) -> &'static str {
        match self {
            S::Bool => "false",
            S::F32 => "0.0",
            _ => "0",
        }
    }
}

/// An IR value type: a scalar or a vector of 2..4 lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Ty {
    pub(crate) s: S,
    pub(crate) lanes: u8,
}

impl Ty {
    pub(crate) const U32: Ty = Ty { s: S::U32, lanes: 1 };
    pub(crate) const BOOL: Ty = Ty { s: S::Bool, lanes: 1 };

    pub(crate) fn scalar(s: S) -> Ty {
        Ty { s, lanes: 1 }
    }

    pub(crate) fn text(self) -> String {
        if self.lanes == 1 {
            self.s.text().to_string()
        } else {
            format!("vec{}<{}>", self.lanes, self.s.text())
        }
    }

    /// The lane type of a vector (the type itself for a scalar).
    pub(crate) fn with_lanes1(self) -> Ty {
        Ty { s: self.s, lanes: 1 }
    }

    pub(crate) fn with_scalar(self, s: S) -> Ty {
        Ty { s, lanes: self.lanes }
    }
}

/// The IR scalar of a naga scalar, or a description of why there is none.
pub(crate) fn scalar(sc: Scalar) -> Result<S, String> {
    match (sc.kind, sc.width) {
        (ScalarKind::Bool, _) => Ok(S::Bool),
        (ScalarKind::Sint, 4) => Ok(S::I32),
        (ScalarKind::Uint, 4) => Ok(S::U32),
        (ScalarKind::Sint, 8) => Ok(S::I64),
        (ScalarKind::Uint, 8) => Ok(S::U64),
        (ScalarKind::Float, 4) => Ok(S::F32),
        (ScalarKind::Float, 8) => Err("f64".into()),
        (ScalarKind::Float, 2) => Err("f16".into()),
        (kind, width) => Err(format!("{kind:?} of {width} bytes")),
    }
}

pub(crate) fn lanes(size: VectorSize) -> u8 {
    size as u8
}

/// The IR type of a value of naga type `inner` (scalars and vectors only; an atomic counts as
/// its scalar, since the IR's memory is atomic per operation, not per type).
pub(crate) fn value_type(inner: &TypeInner) -> Result<Ty, String> {
    match *inner {
        TypeInner::Scalar(sc) | TypeInner::Atomic(sc) => Ok(Ty::scalar(scalar(sc)?)),
        TypeInner::Vector { size, scalar: sc } => Ok(Ty { s: scalar(sc)?, lanes: lanes(size) }),
        TypeInner::Matrix { .. } => Err("matrix".into()),
        TypeInner::Array { .. } => Err("array".into()),
        TypeInner::Struct { .. } => Err("struct".into()),
        TypeInner::Pointer { .. } | TypeInner::ValuePointer { .. } => Err("pointer".into()),
        TypeInner::Image { .. } => Err("texture".into()),
        TypeInner::Sampler { .. } => Err("sampler".into()),
        _ => Err("this type".into()),
    }
}
