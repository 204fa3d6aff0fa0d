//! Values as the interpreter holds them: every scalar component is a `u64` of raw bits.
//!
//! One uniform representation keeps the SIMT executor simple: a [`Lanes`] value holds one
//! component per vector lane per work-item, and the op tables in `scalar` decode the bits by
//! type. Canonical bits per scalar type: `bool` 0 or 1; `i8`/`u8`, `i16`/`u16` and
//! `i32`/`u32` their 8, 16 or 32 bits zero-extended; `i64`/`u64` the 64 bits; `f16` the
//! binary16 bits zero-extended; `f32` the binary32 bits zero-extended; `f64` the binary64
//! bits. Every op produces canonical bits.

use cmdgraph_ir::types::{LitValue, Literal, ScalarType, Type};
use half::f16;

/// A data value for a whole work-group: component `c` of work-item `w` is
/// `data[w * ty.lanes + c]`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Lanes {
    /// The value's type.
    pub ty: Type,
    /// Raw canonical bits.
    pub data: Vec<u64>,
}

impl Lanes {
    /// `n` work-items, every component zero.
    pub fn zeros(ty: Type, n: usize) -> Lanes {
        Lanes { ty, data: vec![0; n * ty.lanes as usize] }
    }

    /// `n` work-items all holding `value` (one entry per vector lane).
    pub fn splat(ty: Type, value: &[u64], n: usize) -> Lanes {
        let mut data = Vec::with_capacity(n * value.len());
        for _ in 0..n {
            data.extend_from_slice(value);
        }
        Lanes { ty, data }
    }

    /// Number of vector lanes per work-item.
    pub fn width(&self) -> usize {
        self.ty.lanes as usize
    }
}

/// Decodes `f32` bits.
pub(crate) fn f32_of(bits: u64) -> f32 {
    f32::from_bits(bits as u32)
}

/// Encodes an `f32`.
pub(crate) fn f32_bits(x: f32) -> u64 {
    x.to_bits() as u64
}

/// Decodes `f16` bits.
pub(crate) fn f16_of(bits: u64) -> f16 {
    f16::from_bits(bits as u16)
}

/// Encodes an `f16`.
pub(crate) fn f16_bits(x: f16) -> u64 {
    x.to_bits() as u64
}

/// Decodes `f64` bits.
pub(crate) fn f64_of(bits: u64) -> f64 {
    f64::from_bits(bits)
}

/// The mathematical value of integer or bool bits (`None` for floats).
pub(crate) fn int_of(bits: u64, ty: ScalarType) -> Option<i128> {
    Some(match ty {
        ScalarType::Bool => (bits & 1) as i128,
        ScalarType::I8 => bits as u8 as i8 as i128,
        ScalarType::U8 => bits as u8 as i128,
        ScalarType::I16 => bits as u16 as i16 as i128,
        ScalarType::U16 => bits as u16 as i128,
        ScalarType::I32 => bits as u32 as i32 as i128,
        ScalarType::U32 => bits as u32 as i128,
        ScalarType::I64 => bits as i64 as i128,
        ScalarType::U64 => bits as i128,
        ScalarType::F16 | ScalarType::F32 | ScalarType::F64 => return None,
    })
}

/// Canonical bits of an integer value wrapped to `ty` (two's complement truncation), or
/// rounded to nearest even for a float `ty`.
pub(crate) fn int_bits(value: i128, ty: ScalarType) -> u64 {
    match ty {
        ScalarType::Bool => (value != 0) as u64,
        ScalarType::I8 | ScalarType::U8 => value as u8 as u64,
        ScalarType::I16 | ScalarType::U16 => value as u16 as u64,
        ScalarType::I32 | ScalarType::U32 => value as u32 as u64,
        ScalarType::I64 | ScalarType::U64 => value as u64,
        // Exact in `f64` up to 2^53; anything larger is infinite in `f16` either way.
        ScalarType::F16 => f16_bits(f16_from_f64(value as f64)),
        ScalarType::F32 => f32_bits(value as f32),
        ScalarType::F64 => (value as f64).to_bits(),
    }
}

/// Bits of a literal as a `ty`, or `None` when it does not fit ([`Literal::fits`]).
pub(crate) fn literal_bits(value: LitValue, ty: ScalarType) -> Option<u64> {
    if !Literal::fits(value, ty) {
        return None;
    }
    Some(match value {
        LitValue::Bool(b) => b as u64,
        LitValue::Int(v) => int_bits(v, ty),
        LitValue::Float(x) => match ty {
            ScalarType::F32 => f32_bits(x as f32),
            ScalarType::F16 => f16_bits(f16_from_f64(x)),
            ScalarType::F64 => x.to_bits(),
            _ => return None,
        },
    })
}

/// Reads one element of type `ty` from little-endian `bytes` (its lanes, not vec3's
/// padding) into `out`, one entry per lane. A stored `bool` is true when its byte is
/// non-zero. Missing bytes read as zero.
#[inline]
pub(crate) fn read_elem(bytes: &[u8], ty: Type, out: &mut [u64]) {
    let size = ty.scalar.size() as usize;
    for (lane, slot) in out.iter_mut().enumerate().take(ty.lanes as usize) {
        let start = lane * size;
        let bits = match bytes.get(start..start + size) {
            Some(&[a]) => a as u64,
            Some(&[a, b]) => u16::from_le_bytes([a, b]) as u64,
            Some(&[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]) as u64,
            Some(&[a, b, c, d, e, f, g, h]) => u64::from_le_bytes([a, b, c, d, e, f, g, h]),
            _ => 0,
        };
        *slot = if ty.scalar == ScalarType::Bool { (bits != 0) as u64 } else { bits };
    }
}

/// Writes one element of type `ty` (its lanes, not vec3's padding) little-endian.
#[inline]
pub(crate) fn write_elem(bytes: &mut [u8], ty: Type, lanes: &[u64]) {
    let size = ty.scalar.size() as usize;
    for (lane, bits) in lanes.iter().enumerate().take(ty.lanes as usize) {
        let start = lane * size;
        if let Some(dst) = bytes.get_mut(start..start + size) {
            dst.copy_from_slice(&bits.to_le_bytes()[..size]);
        }
    }
}

/// The bytes an element's lanes occupy (vec3: 3 lanes, without the padding lane).
pub(crate) fn elem_data_bytes(ty: Type) -> u64 {
    ty.scalar.size() * ty.lanes as u64
}

/// A zero- or poison-filled byte vector, or an error message when it cannot be allocated.
pub(crate) fn alloc_bytes(len: u64, fill: u8) -> Result<Vec<u8>, String> {
    let n = usize::try_from(len).map_err(|_| format!("{len} bytes do not fit this host's address space"))?;
    if len > MAX_OBJECT_BYTES {
        return Err(format!(
            "{len} bytes exceed the interpreter's limit of {MAX_OBJECT_BYTES} bytes per memory object"
        ));
    }
    if fill == 0 {
        // Zeroed allocations come from the allocator's zeroed path, so untouched pages of a
        // large memory object cost nothing.
        return Ok(vec![0; n]);
    }
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| format!("cannot allocate {len} bytes"))?;
    v.resize(n, fill);
    Ok(v)
}

/// Largest memory object (or pool) the interpreter allocates: 16 GiB.
pub(crate) const MAX_OBJECT_BYTES: u64 = 16 << 30;

/// The byte graph allocations without `zero_init` are filled with at finalize, so that reading
/// memory nothing wrote shows up as an implausible value (0xCDCDCDCD as `f32` is -4.3e8).
pub const POISON: u8 = 0xCD;

/// `x` rounded once to the nearest `f16` (ties to even; [`cmdgraph_ir::data::f16_from_f64`]).
pub(crate) fn f16_from_f64(x: f64) -> f16 {
    cmdgraph_ir::data::f16_from_f64(x)
}
