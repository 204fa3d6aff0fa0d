//! Converting between data files (raw bytes or `.npy`) and the bytes of a memory object,
//! and the checksums `cmdgraph interp` prints for each output.
//!
//! A memory object `T[N]` holds `N` elements of `T.size()` bytes each, little-endian;
//! `vec3` elements take 16 bytes (std430), the fourth lane being padding. A raw file is
//! exactly those bytes. An `.npy` file holds the lanes only: shape `(N,)` (or any C-order
//! shape with `N` elements) for a scalar type, `(N, L)` (or `(..., L)` with `N` rows) for
//! `vecL<T>` — so `vec3` is a trailing dimension of 3, the padding lane being zero on input
//! and left out on output.

use crate::npy;
use cmdgraph_ir::data::half::f16;
use cmdgraph_ir::types::{ScalarType, Type};

/// The shape of a memory object's contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Element type.
    pub elem: Type,
    /// Element count.
    pub count: u64,
}

impl Layout {
    /// Size in bytes of the memory object (vec3 padding included).
    pub fn bytes(self) -> u64 {
        self.elem.size().saturating_mul(self.count)
    }

    /// Bytes of lane data per element (no padding).
    fn lane_bytes(self) -> usize {
        (self.elem.scalar.size() * self.elem.lanes as u64) as usize
    }

    /// `f32[4096]`, `vec3<f32>[16]`.
    pub fn describe(self) -> String {
        format!("{}[{}]", self.elem, self.count)
    }

    /// The `.npy` shape this layout is written with.
    pub fn npy_shape(self) -> Vec<u64> {
        if self.elem.is_vector() {
            vec![self.count, self.elem.lanes as u64]
        } else {
            vec![self.count]
        }
    }
}

/// The little-endian NumPy dtype string of a scalar type.
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

/// Checks a raw file's length: it must be exactly the memory object's size.
pub fn check_raw_len(len: u64, layout: Layout) -> Result<(), String> {
    if len == layout.bytes() {
        return Ok(());
    }
    let mut why = format!("it has {len} bytes but {} takes {} bytes", layout.describe(), layout.bytes());
    if layout.elem.lanes == 3 {
        why.push_str(" (raw vec3 elements are 16 bytes, padding included; a .npy file holds 3 lanes)");
    }
    Err(why)
}

/// Decodes an `.npy` file into the memory object's bytes, or says why it does not fit.
pub fn from_npy(file: &[u8], layout: Layout) -> Result<Vec<u8>, String> {
    let (header, data) = npy::read(file).map_err(|e| e.0)?;
    let want = dtype(layout.elem.scalar);
    if header.descr != want {
        let mut why = format!("its dtype is '{}' but {} needs '{want}'", header.descr, layout.describe());
        if header.descr.starts_with('>') {
            why.push_str(" (big-endian data: convert with .astype('<...'))");
        }
        return Err(why);
    }
    if header.fortran_order && !header.order_is_irrelevant() {
        return Err("it is in Fortran order; save it with np.ascontiguousarray(a)".to_string());
    }
    check_shape(&header, layout)?;
    let lane_bytes = layout.lane_bytes();
    let expected = (layout.count as u128) * lane_bytes as u128;
    if data.len() as u128 != expected {
        return Err(format!(
            "its header promises {expected} bytes of data for shape ({}) but {} follow",
            header.shape.iter().map(u64::to_string).collect::<Vec<_>>().join(", "),
            data.len()
        ));
    }
    if layout.elem.lanes != 3 {
        return Ok(data.to_vec());
    }
    let stride = layout.elem.size() as usize;
    let mut bytes = vec![0u8; layout.count as usize * stride];
    for (dst, src) in bytes.chunks_exact_mut(stride).zip(data.chunks_exact(lane_bytes)) {
        dst[..lane_bytes].copy_from_slice(src);
    }
    Ok(bytes)
}

/// Scalars: any shape with `count` elements. Vectors: a last dimension equal to the lane
/// count, the others multiplying to `count`.
fn check_shape(header: &npy::Header, layout: Layout) -> Result<(), String> {
    let shape = &header.shape;
    let product = |dims: &[u64]| dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d));
    let shown = format!("({})", shape.iter().map(u64::to_string).collect::<Vec<_>>().join(", "));
    let lanes = layout.elem.lanes as u64;
    if layout.elem.is_vector() {
        match shape.split_last() {
            Some((&last, rest)) if last == lanes => {
                if product(rest) != Some(layout.count) {
                    return Err(format!(
                        "its shape {shown} has {} elements of {lanes} lanes but {} has {}",
                        product(rest).map_or("too many".to_string(), |n| n.to_string()),
                        layout.describe(),
                        layout.count
                    ));
                }
            }
            _ => {
                return Err(format!(
                    "its shape {shown} does not end in {lanes}, the lanes of {} (expected ({}, {lanes}))",
                    layout.elem, layout.count
                ))
            }
        }
    } else if header.element_count() != Some(layout.count) {
        return Err(format!(
            "its shape {shown} has {} elements but {} has {}",
            header.element_count().map_or("too many".to_string(), |n| n.to_string()),
            layout.describe(),
            layout.count
        ));
    }
    Ok(())
}

/// Encodes the memory object's bytes as an `.npy` file.
pub fn to_npy(bytes: &[u8], layout: Layout) -> Vec<u8> {
    let descr = dtype(layout.elem.scalar);
    if layout.elem.lanes != 3 {
        return npy::write(descr, &layout.npy_shape(), bytes);
    }
    let stride = layout.elem.size() as usize;
    let lane_bytes = layout.lane_bytes();
    let mut data = Vec::with_capacity(bytes.len() / stride * lane_bytes);
    for elem in bytes.chunks_exact(stride) {
        data.extend_from_slice(&elem[..lane_bytes]);
    }
    npy::write(descr, &layout.npy_shape(), &data)
}

/// FNV-1a (64-bit) of `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3))
}

/// How many leading elements the summary shows.
const SHOWN: usize = 4;

/// The summary of an output: FNV-1a of the memory bytes, the sum of every lane (floats
/// added in `f64` in element order, integers exactly, `bool` as a count of true), and the
/// first elements.
pub fn checksum(bytes: &[u8], layout: Layout) -> String {
    let stride = layout.elem.size() as usize;
    let size = layout.elem.scalar.size() as usize;
    let lanes = layout.elem.lanes as usize;
    let (mut fsum, mut isum) = (0f64, 0i128);
    let mut first = Vec::new();
    for (i, elem) in bytes.chunks_exact(stride.max(1)).enumerate() {
        let mut shown = Vec::new();
        for lane in elem.chunks_exact(size).take(lanes) {
            let (text, value) = scalar(lane, layout.elem.scalar);
            match value {
                Num::Float(x) => fsum += x,
                Num::Int(n) => isum = isum.wrapping_add(n),
            }
            if i < SHOWN {
                shown.push(text);
            }
        }
        if i < SHOWN {
            first.push(if lanes > 1 { format!("({})", shown.join(", ")) } else { shown.join("") });
        }
    }
    let sum = if layout.elem.scalar.is_float() { fsum.to_string() } else { isum.to_string() };
    let more = if layout.count as usize > SHOWN { ", ..." } else { "" };
    format!("fnv1a64 {:016x}, sum {sum}, first [{}{more}]", fnv1a64(bytes), first.join(", "))
}

enum Num {
    Float(f64),
    Int(i128),
}

/// One little-endian scalar (exactly `ty.size()` bytes) as display text and number.
fn scalar(b: &[u8], ty: ScalarType) -> (String, Num) {
    let mut raw = [0u8; 8];
    raw[..b.len().min(8)].copy_from_slice(&b[..b.len().min(8)]);
    let bits = u64::from_le_bytes(raw);
    match ty {
        ScalarType::F32 => {
            let x = f32::from_bits(bits as u32);
            (x.to_string(), Num::Float(x as f64))
        }
        ScalarType::F16 => {
            let x = f16::from_bits(bits as u16);
            (x.to_string(), Num::Float(x.to_f64()))
        }
        ScalarType::Bool => {
            let t = bits != 0;
            (t.to_string(), Num::Int(t as i128))
        }
        ScalarType::F64 => {
            let x = f64::from_bits(bits);
            (x.to_string(), Num::Float(x))
        }
        ScalarType::I8 => int((bits as u8 as i8).into()),
        ScalarType::U8 => int((bits as u8).into()),
        ScalarType::I16 => int((bits as u16 as i16).into()),
        ScalarType::U16 => int((bits as u16).into()),
        ScalarType::I32 => int((bits as u32 as i32).into()),
        ScalarType::U32 => int((bits as u32).into()),
        ScalarType::I64 => int((bits as i64).into()),
        ScalarType::U64 => int(bits.into()),
    }
}

fn int(n: i128) -> (String, Num) {
    (n.to_string(), Num::Int(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    const F32X4: Layout = Layout { elem: Type::F32, count: 4 };
    const VEC3: Layout = Layout { elem: Type::vector(ScalarType::I32, 3), count: 2 };

    fn f32_bytes(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn npy_round_trip_keeps_the_bytes() {
        let bytes = f32_bytes(&[1.0, -2.5, 0.0, 3.25]);
        let file = to_npy(&bytes, F32X4);
        assert_eq!(from_npy(&file, F32X4), Ok(bytes));
    }

    #[test]
    fn any_c_order_shape_with_the_right_count_is_accepted_for_scalars() {
        let data = f32_bytes(&[1.0, 2.0, 3.0, 4.0]);
        for shape in [vec![4], vec![2, 2], vec![1, 4, 1]] {
            let file = npy::write("<f4", &shape, &data);
            assert_eq!(from_npy(&file, F32X4), Ok(data.clone()), "{shape:?}");
        }
        let file = npy::write("<f4", &[5], &f32_bytes(&[0.0; 5]));
        let e = from_npy(&file, F32X4).expect_err("wrong count");
        assert!(e.contains("shape (5) has 5 elements but f32[4] has 4"), "{e}");
    }

    #[test]
    fn vec3_drops_padding_in_npy_and_zeroes_it_on_input() {
        let mut memory = Vec::new();
        for v in [1i32, 2, 3, 99, 4, 5, 6, 99] {
            memory.extend_from_slice(&v.to_le_bytes());
        }
        let file = to_npy(&memory, VEC3);
        let (h, data) = npy::read(&file).expect("valid");
        assert_eq!(h.shape, vec![2, 3]);
        assert_eq!(data.len(), 24);
        let back = from_npy(&file, VEC3).expect("fits");
        assert_eq!(back.len(), 32);
        assert_eq!(&back[12..16], &[0; 4], "padding lane zeroed");
        assert_eq!(&back[16..28], &memory[16..28]);
        let flat = npy::write("<i4", &[6], data);
        let e = from_npy(&flat, VEC3).expect_err("no lane dimension");
        assert!(e.contains("does not end in 3"), "{e}");
    }

    #[test]
    fn dtype_mismatches_name_both_types() {
        let file = npy::write("<f8", &[4], &[0; 32]);
        let e = from_npy(&file, F32X4).expect_err("f8");
        assert!(e.contains("dtype is '<f8' but f32[4] needs '<f4'"), "{e}");
        let file = npy::write(">f4", &[4], &[0; 16]);
        assert!(from_npy(&file, F32X4).expect_err("big").contains("big-endian"));
    }

    #[test]
    fn data_length_and_order_are_checked() {
        let mut file = npy::write("<f4", &[4], &[0; 16]);
        file.pop();
        assert!(from_npy(&file, F32X4).expect_err("short").contains("promises 16 bytes of data"));
        let mut file = npy::write("<f4", &[2, 2], &[0; 16]);
        let at = file.windows(5).position(|w| w == b"False").expect("fortran_order");
        file[at..at + 5].copy_from_slice(b"True ");
        let e = from_npy(&file, F32X4).expect_err("fortran");
        assert!(e.contains("Fortran order"), "{e}");
    }

    #[test]
    fn truncated_or_corrupted_files_are_errors_not_panics() {
        let memory = vec![7u8; 32];
        let file = to_npy(&memory, VEC3);
        for n in 0..file.len() {
            assert!(from_npy(&file[..n], VEC3).is_err(), "prefix of {n} bytes accepted");
        }
        for i in 0..file.len() {
            let mut bad = file.clone();
            bad[i] ^= 0xff;
            let _ = from_npy(&bad, VEC3);
        }
    }

    #[test]
    fn raw_length_must_match_exactly() {
        assert_eq!(check_raw_len(16, F32X4), Ok(()));
        assert!(check_raw_len(12, F32X4).expect_err("short").contains("has 12 bytes but f32[4] takes 16"));
        assert!(check_raw_len(24, VEC3).expect_err("vec3").contains("16 bytes, padding included"));
    }

    #[test]
    fn checksums_sum_lanes_and_show_the_first_elements() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        let s = checksum(&f32_bytes(&[1.5, 2.0, -0.5, 4.0]), F32X4);
        assert!(s.ends_with("sum 7, first [1.5, 2, -0.5, 4]"), "{s}");
        let mut memory = Vec::new();
        for v in [1i32, -2, 3, 77, 4, 5, 6, 77] {
            memory.extend_from_slice(&v.to_le_bytes());
        }
        let s = checksum(&memory, VEC3);
        assert!(s.ends_with("sum 17, first [(1, -2, 3), (4, 5, 6)]"), "{s}");
        let bools = Layout { elem: Type::BOOL, count: 6 };
        assert!(checksum(&[1, 0, 2, 1, 0, 0], bools).ends_with("sum 3, first [true, false, true, true, ...]"));
    }
}
