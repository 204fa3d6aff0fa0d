//! Host data: how an application's typed element slices become the little-endian bytes of
//! memory objects and back. Shared by the interpreter and the executor, which read and write
//! the same bytes.

pub use half;
use half::f16;

/// A plain element type the application can bind and read (the interpreter's `bind_as`/`read_as`, the
/// executor's typed reads and writes): little-endian, no padding.
pub trait Element: Copy {
    /// Size in bytes.
    const SIZE: usize;
    /// Appends the little-endian bytes of `self`.
    fn put(self, out: &mut Vec<u8>);
    /// Decodes from exactly [`Element::SIZE`] little-endian bytes.
    fn get(bytes: &[u8]) -> Self;
}

macro_rules! element {
    ($($t:ty),*) => {$(
        impl Element for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(bytes: &[u8]) -> Self {
                let mut raw = [0u8; std::mem::size_of::<$t>()];
                for (dst, src) in raw.iter_mut().zip(bytes) {
                    *dst = *src;
                }
                <$t>::from_le_bytes(raw)
            }
        }
    )*};
}
element!(u8, i8, u16, i16, u32, i32, u64, i64, f32, f64, f16);

/// `x` rounded once to the nearest `f16` (ties to even): what every engine makes of an
/// `f16` literal or value given as an `f64`. `half`'s own `f16::from_f64` goes through `f32`
/// (or drops the low 32 significand bits), rounding twice; here `x` is rounded to odd in
/// `f32` (24 >= 11 + 2 bits), so the final rounding to `f16` is the only one.
pub fn f16_from_f64(x: f64) -> f16 {
    let r = x as f32;
    let r = if !r.is_finite() || f64::from(r) == x || r.to_bits() & 1 == 1 {
        r
    } else if (f64::from(r) < x) == (x > 0.0) {
        // `r` is below `x` in magnitude: one step away from zero (from a zero too, so the
        // test is on `x`'s sign, not `r`'s).
        f32::from_bits(r.to_bits() + 1)
    } else {
        f32::from_bits(r.to_bits() - 1)
    };
    f16::from_f32(r)
}

/// The little-endian bytes of `values`.
pub fn to_bytes<T: Element>(values: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * T::SIZE);
    for v in values {
        v.put(&mut out);
    }
    out
}

/// Decodes little-endian `bytes` into elements; a trailing partial element is dropped.
pub fn from_bytes<T: Element>(bytes: &[u8]) -> Vec<T> {
    bytes.chunks_exact(T::SIZE).map(T::get).collect()
}
