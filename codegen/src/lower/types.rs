//! Kernel-language types as LLVM IR type text, and constants.

use cmdgraph_ir::{LitValue, ScalarType, Type};

/// The register type of a scalar (`bool` is `i1`).
pub(crate) fn scalar(s: ScalarType) -> &'static str {
    match s {
        ScalarType::Bool => "i1",
        ScalarType::I8 | ScalarType::U8 => "i8",
        ScalarType::I16 | ScalarType::U16 => "i16",
        ScalarType::I32 | ScalarType::U32 => "i32",
        ScalarType::I64 | ScalarType::U64 => "i64",
        ScalarType::F16 => "half",
        ScalarType::F32 => "float",
        ScalarType::F64 => "double",
    }
}

/// The in-memory type of a scalar (`bool` is one byte).
pub(crate) fn mem_scalar(s: ScalarType) -> &'static str {
    match s {
        ScalarType::Bool => "i8",
        _ => scalar(s),
    }
}

/// The register type of `t` when every value is widened to `width` work-items (`width`
/// is 1 except in the vectorized path, where values are scalars).
pub(crate) fn reg(t: Type, width: u8) -> String {
    let lanes = if width > 1 { width } else { t.lanes };
    vector(scalar(t.scalar), lanes)
}

/// The in-memory type of an element `t` (vec3 has vec4's stride through the data layout).
pub(crate) fn mem(t: Type) -> String {
    vector(mem_scalar(t.scalar), t.lanes)
}

/// The element type of a storage-buffer view of `t`: [`mem`], except that a `vec3` is read
/// and written as a `vec4` (LLVM 22's SPIR-V backend gives a runtime array of `<3 x T>` the
/// array stride 12, which Vulkan's storage-buffer layout rules reject; std430 and the data
/// layout put a `vec3` 16 bytes apart).
pub(crate) fn buffer_mem(t: Type) -> String {
    vector(mem_scalar(t.scalar), if t.lanes == 3 { 4 } else { t.lanes })
}

/// `<n x s>`, or `s` when `n` is 1.
pub(crate) fn vector(s: &str, n: u8) -> String {
    if n > 1 {
        format!("<{n} x {s}>")
    } else {
        s.to_string()
    }
}

/// The intrinsic-name mangling of a type (`f32`, `v4f32`, `i8`, `a0v4f32`).
pub(crate) fn mangle(ty: &str) -> String {
    if let Some(rest) = ty.strip_prefix('<').and_then(|r| r.strip_suffix('>')) {
        if let Some((n, elem)) = rest.split_once(" x ") {
            return format!("v{}{}", n.trim(), mangle(elem.trim()));
        }
    }
    if let Some(rest) = ty.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        if let Some((n, elem)) = rest.split_once(" x ") {
            return format!("a{}{}", n.trim(), mangle(elem.trim()));
        }
    }
    match ty {
        "float" => "f32".into(),
        "half" => "f16".into(),
        "double" => "f64".into(),
        other => other.into(),
    }
}

/// Whether `s` is a signed integer (comparisons, division, shifts, casts).
pub(crate) fn signed(s: ScalarType) -> bool {
    s.is_signed_integer()
}

/// Bit width of a scalar (`bool` is 1).
pub(crate) fn bits(s: ScalarType) -> u32 {
    s.bits()
}

/// LLVM constant text of an `f32` value.
pub(crate) fn f32_text(x: f32) -> String {
    f64_text(x as f64)
}

/// LLVM constant text of an `f64` value (LLVM writes `float` and `double` constants alike,
/// as the bits of the `f64`).
pub(crate) fn f64_text(x: f64) -> String {
    format!("0x{:016X}", x.to_bits())
}

/// The integer register type of the same width as float register type `ft` (`float`,
/// `double`, or vectors of them), and the text of its sign bit.
pub(crate) fn float_bits_ty(ft: &str) -> (String, &'static str) {
    if ft.contains("double") {
        (ft.replace("double", "i64"), "-9223372036854775808")
    } else {
        (ft.replace("float", "i32"), "-2147483648")
    }
}

/// LLVM constant text of a half from its bits.
pub(crate) fn f16_text(bits: u16) -> String {
    format!("0xH{bits:04X}")
}

/// LLVM constant text of an integer wrapped to `s` (printed signed, which LLVM accepts for
/// every width).
pub(crate) fn int_text(v: i128, s: ScalarType) -> String {
    match s {
        ScalarType::Bool => if v != 0 { "true" } else { "false" }.into(),
        ScalarType::I8 | ScalarType::U8 => (v as u8 as i8).to_string(),
        ScalarType::I16 | ScalarType::U16 => (v as u16 as i16).to_string(),
        ScalarType::I32 | ScalarType::U32 => (v as u32 as i32).to_string(),
        _ => (v as u64 as i64).to_string(),
    }
}

/// The scalar constant text of a literal as `s`, or `None` when it does not fit (the
/// verifier rejects such literals; the interpreter faults).
pub(crate) fn literal(value: LitValue, s: ScalarType) -> Option<String> {
    if !cmdgraph_ir::Literal::fits(value, s) {
        return None;
    }
    Some(match (value, s) {
        (LitValue::Bool(b), _) => if b { "true" } else { "false" }.into(),
        (LitValue::Int(v), ScalarType::F32) => f32_text(v as f64 as f32),
        (LitValue::Int(v), ScalarType::F16) => f16_text(cmdgraph_ir::data::f16_from_f64(v as f64).to_bits()),
        (LitValue::Int(v), ScalarType::F64) => f64_text(v as f64),
        (LitValue::Int(v), _) => int_text(v, s),
        (LitValue::Float(x), ScalarType::F32) => f32_text(x as f32),
        (LitValue::Float(x), ScalarType::F16) => f16_text(cmdgraph_ir::data::f16_from_f64(x).to_bits()),
        (LitValue::Float(x), ScalarType::F64) => f64_text(x),
        (LitValue::Float(_), _) => return None,
    })
}

/// A constant of register type `reg(t, width)` with every lane `scalar_text`.
pub(crate) fn splat_const(t: Type, width: u8, scalar_text: &str) -> String {
    let lanes = if width > 1 { width } else { t.lanes };
    if lanes == 1 {
        return scalar_text.to_string();
    }
    let s = scalar(t.scalar);
    let parts: Vec<String> = (0..lanes).map(|_| format!("{s} {scalar_text}")).collect();
    format!("<{}>", parts.join(", "))
}

/// A constant `v` of integer type `it` (`iN` or `<N x iN>`, splatted).
pub(crate) fn splat_of(it: &str, v: &str) -> String {
    match it.strip_prefix('<').and_then(|r| r.strip_suffix('>')).and_then(|r| r.split_once(" x ")) {
        Some((n, elem)) => {
            let n: usize = n.trim().parse().unwrap_or(1);
            format!("<{}>", vec![format!("{} {v}", elem.trim()); n].join(", "))
        }
        None => v.to_string(),
    }
}

/// An `i32` constant `v` of LLVM type `it` (`i32` or `<N x i32>`, splatted).
pub(crate) fn splat_int(it: &str, v: &str) -> String {
    match it.strip_prefix('<').and_then(|r| r.split(' ').next()).and_then(|n| n.parse::<usize>().ok()) {
        Some(n) => format!("<{}>", vec![format!("i32 {v}"); n].join(", ")),
        None => v.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mangling_matches_llvm() {
        assert_eq!(mangle("<4 x float>"), "v4f32");
        assert_eq!(mangle("[0 x <3 x half>]"), "a0v3f16");
        assert_eq!(mangle("[0 x i8]"), "a0i8");
    }

    #[test]
    fn constants_are_exact() {
        assert_eq!(f32_text(1.0), "0x3FF0000000000000");
        assert_eq!(literal(LitValue::Int(-1), ScalarType::U32), None);
        assert_eq!(literal(LitValue::Int(4294967295), ScalarType::U32).as_deref(), Some("-1"));
        assert_eq!(literal(LitValue::Float(1.0), ScalarType::F16).as_deref(), Some("0xH3C00"));
        assert_eq!(splat_const(Type::F32, 2, "0x0"), "<float 0x0, float 0x0>");
        assert_eq!(literal(LitValue::Int(255), ScalarType::U8).as_deref(), Some("-1"));
        assert_eq!(literal(LitValue::Int(256), ScalarType::U8), None);
        assert_eq!(literal(LitValue::Int(-32768), ScalarType::I16).as_deref(), Some("-32768"));
        assert_eq!(literal(LitValue::Float(0.1), ScalarType::F64).as_deref(), Some("0x3FB999999999999A"));
        // One rounding to f16 (half's own from_f64 would round through f32 to 0xH3C00).
        assert_eq!(literal(LitValue::Float(1.0004882812500002), ScalarType::F16).as_deref(), Some("0xH3C01"));
    }
}
