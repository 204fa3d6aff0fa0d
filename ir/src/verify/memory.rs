//! Module memory objects and the memory operands of graph commands: legal types and
//! sizes, `device_global` initialisers, pointers and accessors resolving to memory of the
//! right kind, and every byte or element range inside its memory object.

use super::ctx::{check_type, plural, Gx, MemClass, MemInfo};
use super::error::VerifyError;
use crate::graph::{Accessor, Pointer};
use crate::module::{MemoryKind, Module};
use crate::span::Span;
use crate::types::Literal;

/// Checks every module memory object.
pub(super) fn check_memories(m: &Module, errors: &mut Vec<VerifyError>) {
    for (h, mem) in m.memories.iter() {
        let span = m.memories.span(h);
        let typed = check_type(mem.elem, span, errors);
        if typed && (mem.count == 0 || mem.elem.size().checked_mul(mem.count).is_none()) {
            errors.push(VerifyError::BadSize { what: format!("memory object @{}", mem.name), count: mem.count, span });
        }
        if let MemoryKind::DeviceGlobal(dg) = &mem.kind {
            let name = format!("@{}", mem.name);
            if dg.init.len() as u64 > mem.count {
                errors.push(VerifyError::DeviceGlobalInit {
                    name: name.clone(),
                    problem: format!(
                        "{} for {}",
                        plural(dg.init.len() as u64, "initial value"),
                        plural(mem.count, "element")
                    ),
                    span,
                });
            }
            for (i, lit) in dg.init.iter().enumerate() {
                if let Some(problem) = literal_problem(lit, mem.elem.scalar) {
                    errors.push(VerifyError::DeviceGlobalInit {
                        name: name.clone(),
                        problem: format!("initial value {i}: {problem}"),
                        span,
                    });
                }
            }
        }
    }
}

/// Why `lit` cannot be a value of `ty`, if it cannot.
pub(super) fn literal_problem(lit: &Literal, ty: crate::types::ScalarType) -> Option<String> {
    if let Some(written) = lit.ty {
        if written != ty {
            return Some(format!("the literal is written as {written} but {ty} is needed"));
        }
    }
    if Literal::fits(lit.value, ty) {
        None
    } else {
        Some(format!("{} does not fit {ty}", show_literal(lit)))
    }
}

/// A literal as the text format writes it.
pub(super) fn show_literal(lit: &Literal) -> String {
    match lit.value {
        crate::types::LitValue::Bool(b) => b.to_string(),
        crate::types::LitValue::Int(i) => i.to_string(),
        crate::types::LitValue::Float(f) => format!("{f:?}"),
    }
}

/// Checks a pointer operand of a graph command or kernel argument: it resolves, is not a
/// `device_global`, is USM (or a graph allocation) unless `allow_buffer`, and its offset lies
/// inside the memory. Returns the memory when the pointer is usable.
pub(super) fn check_pointer<'a>(
    gx: &Gx<'a>,
    ptr: &Pointer,
    context: &'static str,
    allow_buffer: bool,
    span: Span,
    errors: &mut Vec<VerifyError>,
) -> Option<MemInfo<'a>> {
    let info = gx.resolve_reported(ptr.base, span, errors)?;
    match info.class {
        MemClass::DeviceGlobal => {
            errors.push(VerifyError::DeviceGlobalOperand { name: info.name(), context, span });
            return None;
        }
        MemClass::Buffer if !allow_buffer => {
            errors.push(VerifyError::PointerToBuffer { context, name: info.name(), span });
            return None;
        }
        _ => {}
    }
    if ptr.offset > info.size {
        errors.push(VerifyError::PointerOutOfBounds { name: info.name(), offset: ptr.offset, size: info.size, span });
        return None;
    }
    Some(info)
}

/// Checks that `[ptr.offset, ptr.offset + bytes)` lies inside the pointer's memory (whose
/// resolution `info` the caller already has).
pub(super) fn check_byte_range(
    what: &'static str,
    info: &MemInfo<'_>,
    ptr: &Pointer,
    bytes: Option<u64>,
    span: Span,
    errors: &mut Vec<VerifyError>,
) -> bool {
    let end = bytes.and_then(|b| ptr.offset.checked_add(b));
    if end.is_some_and(|e| e <= info.size) {
        return true;
    }
    errors.push(VerifyError::RangeOutOfBounds {
        what,
        name: info.name(),
        start: ptr.offset,
        end,
        size: info.size,
        unit: "bytes",
        span,
    });
    false
}

/// Checks an accessor: it resolves to a `buffer` and its element range is non-empty and
/// inside the buffer. Returns the buffer when the accessor is usable.
pub(super) fn check_accessor<'a>(
    gx: &Gx<'a>,
    acc: &Accessor,
    span: Span,
    errors: &mut Vec<VerifyError>,
) -> Option<MemInfo<'a>> {
    let info = gx.resolve_reported(acc.buffer, span, errors)?;
    match info.class {
        MemClass::Buffer => {}
        MemClass::DeviceGlobal => {
            errors.push(VerifyError::DeviceGlobalOperand {
                name: info.name(),
                context: "the buffer of an accessor",
                span,
            });
            return None;
        }
        MemClass::Usm => {
            errors.push(VerifyError::AccessorNotBuffer { name: info.name(), kind: "usm memory", span });
            return None;
        }
        MemClass::Alloc => {
            errors.push(VerifyError::AccessorNotBuffer { name: info.name(), kind: "a graph allocation", span });
            return None;
        }
    }
    if let Some((lo, hi)) = acc.range {
        if lo >= hi {
            errors.push(VerifyError::AccessorRange { lo, hi, span });
            return None;
        }
        if hi > info.count {
            errors.push(VerifyError::RangeOutOfBounds {
                what: "accessor range",
                name: info.name(),
                start: lo,
                end: Some(hi),
                size: info.count,
                unit: "elements",
                span,
            });
            return None;
        }
    }
    Some(info)
}
