//! Scalar semantics of the kernel language, one function per (op, type).
//!
//! Each lookup returns a plain `fn` over canonical bits (see `value`), chosen once per op
//! execution and applied to every component, or `None` when the op does not apply to the
//! type. Semantics:
//! - `f32` arithmetic is done in `f32` (never widened), `fma` is `f32::mul_add` (one
//!   rounding; two with `FmaRounding::Twice`), math functions are Rust's `f32` functions;
//!   `rsqrt` is `1 / sqrt`.
//! - `f16` arithmetic and math are computed in `f32` and rounded once to `f16` (exact for
//!   `add sub mul div sqrt`, since `f32` has more than 2·11+2 bits); `fma` goes through `f64`
//!   (rounded to odd there, so the `f16` result is rounded once).
//! - `f64` arithmetic and math are done in `f64` (Rust's `f64` functions); `fma` is
//!   `f64::mul_add`. Its subnormals are kept in both denormal rules (`ftz` is `f32`'s).
//! - `min`/`max` on floats return the non-NaN operand (IEEE minNum/maxNum, SYCL `fmin`);
//!   float `rem` is C `fmod`.
//! - Integer arithmetic wraps; `div` and `rem` by zero give 0, and `MIN / -1` gives `MIN`
//!   (`rem` gives 0); shift amounts are taken modulo the bit width; `shr` is arithmetic on
//!   signed types.
//! - `cast` follows Rust `as`: float to integer truncates toward zero and saturates (NaN
//!   gives 0), integer to integer wraps, to `bool` is "not zero" (NaN is true), from `bool`
//!   is 0 or 1.

use super::value::{f16_bits, f16_from_f64, f16_of, f32_bits, f32_of, f64_of, int_bits, int_of};
use super::FmaRounding;
use cmdgraph_ir::kernel::{AtomicOp, BinaryOp, CmpOp, UnaryOp};
use cmdgraph_ir::types::ScalarType;
use half::f16;

/// A unary function over bits.
pub(crate) type Fn1 = fn(u64) -> u64;
/// A binary function over bits.
pub(crate) type Fn2 = fn(u64, u64) -> u64;
/// A ternary function over bits.
pub(crate) type Fn3 = fn(u64, u64, u64) -> u64;

fn f64_1(x: u64, f: impl Fn(f64) -> f64) -> u64 {
    f(f64_of(x)).to_bits()
}
fn f64_2(a: u64, b: u64, f: impl Fn(f64, f64) -> f64) -> u64 {
    f(f64_of(a), f64_of(b)).to_bits()
}
fn f32_1(x: u64, f: impl Fn(f32) -> f32) -> u64 {
    f32_bits(f(f32_of(x)))
}
fn f16_1(x: u64, f: impl Fn(f32) -> f32) -> u64 {
    f16_bits(f16::from_f32(f(f16_of(x).to_f32())))
}
fn f32_2(a: u64, b: u64, f: impl Fn(f32, f32) -> f32) -> u64 {
    f32_bits(f(f32_of(a), f32_of(b)))
}
fn f16_2(a: u64, b: u64, f: impl Fn(f32, f32) -> f32) -> u64 {
    f16_bits(f16::from_f32(f(f16_of(a).to_f32(), f16_of(b).to_f32())))
}

/// A float unary op: `$f` on `f32` (for `f32`, and `f16` rounded once), `$g` on `f64`.
macro_rules! float_unary {
    ($ty:expr, $f:expr, $g:expr) => {
        match $ty {
            ScalarType::F32 => Some((|x| f32_1(x, $f)) as Fn1),
            ScalarType::F16 => Some((|x| f16_1(x, $f)) as Fn1),
            ScalarType::F64 => Some((|x| f64_1(x, $g)) as Fn1),
            _ => None,
        }
    };
}

/// The function for a unary op on `ty`.
pub(crate) fn unary(op: UnaryOp, ty: ScalarType) -> Option<Fn1> {
    use ScalarType::*;
    match op {
        UnaryOp::Neg => match ty {
            I8 | U8 => Some(|x| (x as u8).wrapping_neg() as u64),
            I16 | U16 => Some(|x| (x as u16).wrapping_neg() as u64),
            I32 | U32 => Some(|x| (x as u32).wrapping_neg() as u64),
            I64 | U64 => Some(|x: u64| x.wrapping_neg()),
            _ => float_unary!(ty, |v: f32| -v, |v: f64| -v),
        },
        UnaryOp::Not => match ty {
            Bool => Some(|x| (x & 1) ^ 1),
            I8 | U8 => Some(|x| !(x as u8) as u64),
            I16 | U16 => Some(|x| !(x as u16) as u64),
            I32 | U32 => Some(|x| !(x as u32) as u64),
            I64 | U64 => Some(|x: u64| !x),
            _ => None,
        },
        UnaryOp::Abs => match ty {
            I8 => Some(|x| (x as u8 as i8).wrapping_abs() as u8 as u64),
            I16 => Some(|x| (x as u16 as i16).wrapping_abs() as u16 as u64),
            I32 => Some(|x| (x as u32 as i32).wrapping_abs() as u32 as u64),
            I64 => Some(|x| (x as i64).wrapping_abs() as u64),
            U8 | U16 | U32 | U64 => Some(|x| x),
            _ => float_unary!(ty, f32::abs, f64::abs),
        },
        UnaryOp::Sqrt => float_unary!(ty, f32::sqrt, f64::sqrt),
        UnaryOp::Rsqrt => float_unary!(ty, |v: f32| 1.0 / v.sqrt(), |v: f64| 1.0 / v.sqrt()),
        UnaryOp::Exp => float_unary!(ty, f32::exp, f64::exp),
        UnaryOp::Log => float_unary!(ty, f32::ln, f64::ln),
        UnaryOp::Sin => float_unary!(ty, f32::sin, f64::sin),
        UnaryOp::Cos => float_unary!(ty, f32::cos, f64::cos),
        UnaryOp::Tanh => float_unary!(ty, f32::tanh, f64::tanh),
        UnaryOp::Floor => float_unary!(ty, f32::floor, f64::floor),
        UnaryOp::Ceil => float_unary!(ty, f32::ceil, f64::ceil),
    }
}

/// A float binary op: `$f` on `f32` (for `f32`, and `f16` rounded once), `$g` on `f64`.
macro_rules! float_binary {
    ($ty:expr, $f:expr, $g:expr) => {
        match $ty {
            ScalarType::F32 => Some((|a, b| f32_2(a, b, $f)) as Fn2),
            ScalarType::F16 => Some((|a, b| f16_2(a, b, $f)) as Fn2),
            ScalarType::F64 => Some((|a, b| f64_2(a, b, $g)) as Fn2),
            _ => None,
        }
    };
}

/// `min` and `max` (docs/ir.md) on `$t`: the non-NaN operand, and `-0` below `+0`. Rust's
/// `f32::min` leaves the sign of equal zeros to the build (debug and release differ), so
/// they are spelled out.
macro_rules! min_max_num {
    ($min:ident, $max:ident, $t:ty) => {
        fn $min(a: $t, b: $t) -> $t {
            match (a.is_nan(), b.is_nan()) {
                (true, _) => b,
                (_, true) => a,
                _ if a == b => <$t>::from_bits(a.to_bits() | b.to_bits()),
                _ => {
                    if a < b {
                        a
                    } else {
                        b
                    }
                }
            }
        }

        fn $max(a: $t, b: $t) -> $t {
            match (a.is_nan(), b.is_nan()) {
                (true, _) => b,
                (_, true) => a,
                _ if a == b => <$t>::from_bits(a.to_bits() & b.to_bits()),
                _ => {
                    if a > b {
                        a
                    } else {
                        b
                    }
                }
            }
        }
    };
}
min_max_num!(min_num, max_num, f32);
min_max_num!(min_num64, max_num64, f64);

/// Integer binary ops through `$t` (the Rust type of the IR type).
macro_rules! int_binary {
    ($op:expr, $t:ty, $u:ty) => {{
        let f: Fn2 = match $op {
            BinaryOp::Add => |a, b| (a as $t).wrapping_add(b as $t) as $u as u64,
            BinaryOp::Sub => |a, b| (a as $t).wrapping_sub(b as $t) as $u as u64,
            BinaryOp::Mul => |a, b| (a as $t).wrapping_mul(b as $t) as $u as u64,
            BinaryOp::Div => |a, b| {
                if b as $t == 0 {
                    0
                } else {
                    (a as $t).wrapping_div(b as $t) as $u as u64
                }
            },
            BinaryOp::Rem => |a, b| {
                if b as $t == 0 {
                    0
                } else {
                    (a as $t).wrapping_rem(b as $t) as $u as u64
                }
            },
            BinaryOp::Min => |a, b| (a as $t).min(b as $t) as $u as u64,
            BinaryOp::Max => |a, b| (a as $t).max(b as $t) as $u as u64,
            BinaryOp::And => |a, b| ((a as $t) & (b as $t)) as $u as u64,
            BinaryOp::Or => |a, b| ((a as $t) | (b as $t)) as $u as u64,
            BinaryOp::Xor => |a, b| ((a as $t) ^ (b as $t)) as $u as u64,
            BinaryOp::Shl => |a, b| (a as $t).wrapping_shl(b as u32) as $u as u64,
            BinaryOp::Shr => |a, b| (a as $t).wrapping_shr(b as u32) as $u as u64,
            BinaryOp::Pow => return None,
        };
        Some(f)
    }};
}

/// The function for a binary op on `ty`.
pub(crate) fn binary(op: BinaryOp, ty: ScalarType) -> Option<Fn2> {
    use ScalarType::*;
    match ty {
        // `bits as i32` keeps the low 32 bits, which are the canonical `i32` bits; the
        // same for 8 and 16 bits (`wrapping_shl` takes the amount modulo the width).
        I8 => int_binary!(op, i8, u8),
        U8 => int_binary!(op, u8, u8),
        I16 => int_binary!(op, i16, u16),
        U16 => int_binary!(op, u16, u16),
        I32 => int_binary!(op, i32, u32),
        U32 => int_binary!(op, u32, u32),
        I64 => int_binary!(op, i64, u64),
        U64 => int_binary!(op, u64, u64),
        Bool => match op {
            BinaryOp::And => Some(|a, b| a & b & 1),
            BinaryOp::Or => Some(|a, b| (a | b) & 1),
            BinaryOp::Xor => Some(|a, b| (a ^ b) & 1),
            _ => None,
        },
        F32 | F16 | F64 => match op {
            BinaryOp::Add => float_binary!(ty, |a, b| a + b, |a, b| a + b),
            BinaryOp::Sub => float_binary!(ty, |a, b| a - b, |a, b| a - b),
            BinaryOp::Mul => float_binary!(ty, |a, b| a * b, |a, b| a * b),
            BinaryOp::Div => float_binary!(ty, |a, b| a / b, |a, b| a / b),
            BinaryOp::Rem => float_binary!(ty, |a, b| a % b, |a, b| a % b),
            BinaryOp::Min => float_binary!(ty, min_num, min_num64),
            BinaryOp::Max => float_binary!(ty, max_num, max_num64),
            BinaryOp::Pow => float_binary!(ty, f32::powf, f64::powf),
            _ => None,
        },
    }
}

/// The function for a comparison on `ty`; the result is bool bits.
pub(crate) fn compare(op: CmpOp, ty: ScalarType) -> Fn2 {
    macro_rules! cmp_via {
        ($conv:expr) => {
            match op {
                CmpOp::Eq => |a, b| ($conv(a) == $conv(b)) as u64,
                CmpOp::Ne => |a, b| ($conv(a) != $conv(b)) as u64,
                CmpOp::Lt => |a, b| ($conv(a) < $conv(b)) as u64,
                CmpOp::Le => |a, b| ($conv(a) <= $conv(b)) as u64,
                CmpOp::Gt => |a, b| ($conv(a) > $conv(b)) as u64,
                CmpOp::Ge => |a, b| ($conv(a) >= $conv(b)) as u64,
            }
        };
    }
    match ty {
        ScalarType::F32 => cmp_via!(f32_of),
        ScalarType::F16 => cmp_via!(|x| f16_of(x).to_f32()),
        ScalarType::F64 => cmp_via!(f64_of),
        ScalarType::I8 => cmp_via!(|x: u64| x as u8 as i8),
        ScalarType::I16 => cmp_via!(|x: u64| x as u16 as i16),
        ScalarType::I32 => cmp_via!(|x: u64| x as u32 as i32),
        ScalarType::I64 => cmp_via!(|x: u64| x as i64),
        // Canonical bits are zero-extended, so unsigned types compare as `u64`.
        ScalarType::Bool | ScalarType::U8 | ScalarType::U16 | ScalarType::U32 | ScalarType::U64 => {
            cmp_via!(|x: u64| x)
        }
    }
}

/// `a * b + c` under `rounding`: rounded once (`Once`), or the product rounded to the
/// element type and then the sum (`Twice`, what `mul` then `add` computes).
pub(crate) fn fma(ty: ScalarType, rounding: FmaRounding) -> Option<Fn3> {
    match (ty, rounding) {
        (ScalarType::F32, FmaRounding::Once) => Some(|a, b, c| f32_bits(f32_of(a).mul_add(f32_of(b), f32_of(c)))),
        (ScalarType::F32, FmaRounding::Twice) => Some(|a, b, c| f32_bits(f32_of(a) * f32_of(b) + f32_of(c))),
        (ScalarType::F64, FmaRounding::Once) => Some(|a, b, c| f64_of(a).mul_add(f64_of(b), f64_of(c)).to_bits()),
        (ScalarType::F64, FmaRounding::Twice) => Some(|a, b, c| (f64_of(a) * f64_of(b) + f64_of(c)).to_bits()),
        // The product of two `f16` is exact in `f64` (22 bits); the sum is rounded to odd in
        // `f64` (53 > 2·11 + 2 bits), so rounding that to `f16` is the one correct rounding.
        (ScalarType::F16, FmaRounding::Once) => Some(|a, b, c| {
            let w = |x: u64| f16_of(x).to_f64();
            f16_bits(f16_from_f64(add_round_to_odd(w(a) * w(b), w(c))))
        }),
        // An `f16` product rounded to `f16` plus an `f16` is exact in `f64` (their exponents
        // span at most 16 + 24 bits), so the sum is rounded once more, to `f16`.
        (ScalarType::F16, FmaRounding::Twice) => Some(|a, b, c| {
            let w = |x: u64| f16_of(x).to_f64();
            let p = f16_from_f64(w(a) * w(b)).to_f64();
            f16_bits(f16_from_f64(p + w(c)))
        }),
        _ => None,
    }
}

/// `x + y` rounded to odd: the nearest `f64` when exact, else the neighbour of the exact sum
/// whose last significand bit is 1 (so a later rounding to a narrower type is correct).
fn add_round_to_odd(x: f64, y: f64) -> f64 {
    let s = x + y;
    if !s.is_finite() {
        return s;
    }
    // TwoSum: `s + e` is the exact sum.
    let yv = s - x;
    let e = (x - (s - yv)) + (y - yv);
    if e == 0.0 || s.to_bits() & 1 == 1 {
        return s;
    }
    // `s` is even and inexact: step one ulp toward the exact sum.
    let toward_bigger_magnitude = (e > 0.0) == (s > 0.0);
    let bits = s.to_bits();
    f64::from_bits(if toward_bigger_magnitude { bits + 1 } else { bits - 1 })
}

/// `f32` bits with a subnormal replaced by the zero of its sign when `on`
/// (`Denormals::Flush`); other values, and everything when `!on`, unchanged.
#[inline]
pub(crate) fn ftz(on: bool, bits: u64) -> u64 {
    if on && bits & 0x7f80_0000 == 0 {
        bits & 0x8000_0000
    } else {
        bits
    }
}

/// Converts `bits` of type `from` to `to` (Rust `as` semantics, see the module doc).
pub(crate) fn cast(bits: u64, from: ScalarType, to: ScalarType) -> u64 {
    if let Some(v) = int_of(bits, from) {
        return int_bits(v, to);
    }
    // Every `f16` and `f32` is exact in `f64`, so one set of conversions from `f64` serves
    // all three (Rust `as` from `f64` saturates and truncates exactly as from `f32`).
    let x = match from {
        ScalarType::F16 => f16_of(bits).to_f64(),
        ScalarType::F32 => f64::from(f32_of(bits)),
        _ => f64_of(bits),
    };
    match to {
        ScalarType::Bool => (x != 0.0) as u64,
        ScalarType::I8 => x as i8 as u8 as u64,
        ScalarType::U8 => x as u8 as u64,
        ScalarType::I16 => x as i16 as u16 as u64,
        ScalarType::U16 => x as u16 as u64,
        ScalarType::I32 => x as i32 as u32 as u64,
        ScalarType::U32 => x as u32 as u64,
        ScalarType::I64 => x as i64 as u64,
        ScalarType::U64 => x as u64,
        // Rounded once from the exact value (`f16_from_f64` rounds to odd in `f32` first).
        ScalarType::F16 => f16_bits(f16_from_f64(x)),
        ScalarType::F32 => f32_bits(x as f32),
        ScalarType::F64 => x.to_bits(),
    }
}

/// The new memory value of an atomic read-modify-write (`old` op `operand`), or `None` when
/// the op does not apply to `ty`. `cmpxchg` is handled by the caller.
pub(crate) fn atomic(op: AtomicOp, ty: ScalarType) -> Option<Fn2> {
    let as_binary = |b: BinaryOp| binary(b, ty);
    match (op, ty) {
        (_, ScalarType::Bool | ScalarType::F16 | ScalarType::F64) => None,
        (_, ScalarType::I8 | ScalarType::U8 | ScalarType::I16 | ScalarType::U16) => None,
        (AtomicOp::Exchange, _) => Some(|_, new| new),
        (AtomicOp::CompareExchange, _) => None,
        (AtomicOp::Add, _) => as_binary(BinaryOp::Add),
        (AtomicOp::Min, _) => as_binary(BinaryOp::Min),
        (AtomicOp::Max, _) => as_binary(BinaryOp::Max),
        (_, ScalarType::F32) => None,
        (AtomicOp::Sub, _) => as_binary(BinaryOp::Sub),
        (AtomicOp::And, _) => as_binary(BinaryOp::And),
        (AtomicOp::Or, _) => as_binary(BinaryOp::Or),
        (AtomicOp::Xor, _) => as_binary(BinaryOp::Xor),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_edge_cases() {
        let div = binary(BinaryOp::Div, ScalarType::I32).unwrap();
        assert_eq!(div(7, 0), 0);
        let min = i32::MIN as u32 as u64;
        assert_eq!(div(min, (-1i32) as u32 as u64), min);
        let shl = binary(BinaryOp::Shl, ScalarType::U32).unwrap();
        assert_eq!(shl(1, 33), 2);
        let shr = binary(BinaryOp::Shr, ScalarType::I32).unwrap();
        assert_eq!(shr((-8i32) as u32 as u64, 1), (-4i32) as u32 as u64);
        let lt = compare(CmpOp::Lt, ScalarType::I32);
        assert_eq!(lt((-1i32) as u32 as u64, 1), 1);
        let ltu = compare(CmpOp::Lt, ScalarType::U32);
        assert_eq!(ltu((-1i32) as u32 as u64, 1), 0);
    }

    #[test]
    fn casts_follow_rust_as() {
        assert_eq!(cast(f32_bits(-1.5), ScalarType::F32, ScalarType::I32), (-1i32) as u32 as u64);
        assert_eq!(cast(f32_bits(1e20), ScalarType::F32, ScalarType::I32), i32::MAX as u32 as u64);
        assert_eq!(cast(f32_bits(f32::NAN), ScalarType::F32, ScalarType::U32), 0);
        assert_eq!(cast((-1i32) as u32 as u64, ScalarType::I32, ScalarType::I64), u64::MAX);
        assert_eq!(cast(u32::MAX as u64, ScalarType::U32, ScalarType::I64), u32::MAX as u64);
        assert_eq!(f32_of(cast(16_777_217, ScalarType::I64, ScalarType::F32)), 16_777_216.0);
    }

    #[test]
    fn narrow_integers_wrap_at_their_width() {
        use ScalarType::*;
        let bits8 = |v: i8| v as u8 as u64;
        let bits16 = |v: i16| v as u16 as u64;
        assert_eq!(binary(BinaryOp::Add, I8).unwrap()(bits8(127), 1), bits8(-128));
        assert_eq!(binary(BinaryOp::Mul, U8).unwrap()(200, 2), 144);
        assert_eq!(binary(BinaryOp::Sub, U16).unwrap()(0, 1), 0xffff);
        let div = binary(BinaryOp::Div, I8).unwrap();
        assert_eq!(div(bits8(-128), bits8(-1)), bits8(-128));
        assert_eq!(div(bits8(7), 0), 0);
        assert_eq!(binary(BinaryOp::Rem, I16).unwrap()(bits16(i16::MIN), bits16(-1)), 0);
        assert_eq!(binary(BinaryOp::Rem, I8).unwrap()(bits8(-7), bits8(3)), bits8(-1));
        // Shift amounts modulo 8 and 16; `shr` arithmetic on signed types.
        assert_eq!(binary(BinaryOp::Shl, U8).unwrap()(1, 9), 2);
        assert_eq!(binary(BinaryOp::Shr, I8).unwrap()(bits8(-128), 7), bits8(-1));
        assert_eq!(binary(BinaryOp::Shr, U16).unwrap()(0x8000, 31), 1);
        assert_eq!(unary(UnaryOp::Abs, I8).unwrap()(bits8(-128)), bits8(-128));
        assert_eq!(unary(UnaryOp::Neg, U8).unwrap()(1), 0xff);
        assert_eq!(unary(UnaryOp::Not, I16).unwrap()(0), 0xffff);
        assert_eq!(compare(CmpOp::Lt, I8)(bits8(-1), 1), 1);
        assert_eq!(compare(CmpOp::Lt, U8)(bits8(-1), 1), 0);
        assert_eq!(binary(BinaryOp::Max, I16).unwrap()(bits16(-5), 3), 3);
    }

    #[test]
    fn casts_to_and_from_narrow_types_and_f64() {
        use ScalarType::*;
        let f64b = |x: f64| x.to_bits();
        assert_eq!(cast(f64b(300.5), F64, U8), 255);
        assert_eq!(cast(f64b(-300.5), F64, I8), (-128i8) as u8 as u64);
        assert_eq!(cast(f64b(-0.9), F64, U16), 0);
        assert_eq!(cast(f64b(f64::NAN), F64, I16), 0);
        assert_eq!(cast(f64b(1e300), F64, I64), i64::MAX as u64);
        assert_eq!(cast(f32_bits(-40000.0), F32, I16), (i16::MIN) as u16 as u64);
        // Integers wrap and sign-extend.
        assert_eq!(cast(0x1ff, U32, I8), 0xff);
        assert_eq!(cast(0xff, I8, I32), u32::MAX as u64);
        assert_eq!(cast(0xff, U8, I32), 0xff);
        assert_eq!(cast(0x8000, I16, U64), 0xffff_ffff_ffff_8000);
        // Float conversions round once: f64 -> f16 directly, not through f32.
        let x = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
        assert_eq!(cast(f64b(x), F64, F16), 0x3c01);
        assert_eq!(cast(cast(f64b(x), F64, F32), F32, F16), 0x3c00);
        assert_eq!(f32_of(cast(f64b(1.0 + 2f64.powi(-24)), F64, F32)), 1.0);
        assert_eq!(cast(f64b(5e-324), F64, F16), 0);
        assert_eq!(f64_of(cast(u64::MAX, U64, F64)), 18446744073709551616.0);
        assert_eq!(f64_of(cast(0x3c00, F16, F64)), 1.0);
        assert_eq!(cast((-1i8) as u8 as u64, I8, Bool), 1);
    }

    #[test]
    fn f64_arithmetic_is_binary64() {
        use ScalarType::*;
        let f64b = |x: f64| x.to_bits();
        assert_eq!(f64_of(binary(BinaryOp::Add, F64).unwrap()(f64b(0.1), f64b(0.2))), 0.1 + 0.2);
        assert_ne!(0.1f64 + 0.2, f64::from(0.1f32 + 0.2f32));
        assert_eq!(f64_of(binary(BinaryOp::Min, F64).unwrap()(f64b(f64::NAN), f64b(2.0))), 2.0);
        assert_eq!(binary(BinaryOp::Min, F64).unwrap()(f64b(0.0), f64b(-0.0)), f64b(-0.0));
        assert_eq!(binary(BinaryOp::Max, F64).unwrap()(f64b(-0.0), f64b(0.0)), f64b(0.0));
        // Subnormals stay (no flush rule for f64).
        assert_eq!(f64_of(binary(BinaryOp::Mul, F64).unwrap()(f64b(5e-324), f64b(1.0))), 5e-324);
        let a = 1.0 + f64::EPSILON;
        let c = -(1.0 + 2.0 * f64::EPSILON);
        assert_eq!(f64_of(fma(F64, FmaRounding::Once).unwrap()(f64b(a), f64b(a), f64b(c))), 2f64.powi(-104));
        assert_eq!(f64_of(fma(F64, FmaRounding::Twice).unwrap()(f64b(a), f64b(a), f64b(c))), 0.0);
        assert!(atomic(AtomicOp::Add, F64).is_none() && atomic(AtomicOp::Add, I8).is_none());
    }

    /// SplitMix64, for the random operands below.
    fn next(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Every finite `f16` as an exact multiple of 2^-48 (an `i128`), ascending.
    fn f16_grid() -> Vec<(i128, u16)> {
        let mut v: Vec<(i128, u16)> = (0..=u16::MAX)
            .map(f16::from_bits)
            .filter(|h| h.is_finite())
            .map(|h| ((h.to_f64() * 2f64.powi(48)) as i128, h.to_bits()))
            .collect();
        v.sort_by_key(|p| p.0);
        v.dedup_by_key(|p| p.0); // +0 and -0
        v
    }

    /// The exact value `n`·2^-48 rounded once to `f16`, ties to even (no overflow).
    fn round_f16(grid: &[(i128, u16)], n: i128) -> u16 {
        let i = grid.partition_point(|p| p.0 < n);
        if i < grid.len() && grid[i].0 == n {
            return grid[i].1;
        }
        let (lo, hi) = (grid[i - 1], grid[i]);
        match (n - lo.0).cmp(&(hi.0 - n)) {
            std::cmp::Ordering::Less => lo.1,
            std::cmp::Ordering::Greater => hi.1,
            std::cmp::Ordering::Equal => {
                if lo.1 & 1 == 0 {
                    lo.1
                } else {
                    hi.1
                }
            }
        }
    }

    fn scaled(h: u16) -> i128 {
        (f16::from_bits(h).to_f64() * 2f64.powi(48)) as i128
    }

    /// The exact product of two `f16`, in units of 2^-48.
    fn product(a: u16, b: u16) -> i128 {
        let s24 = |h: u16| (f16::from_bits(h).to_f64() * 2f64.powi(24)) as i128;
        s24(a) * s24(b)
    }

    #[test]
    fn f16_fma_rounds_once_or_twice_exactly() {
        let grid = f16_grid();
        let once = fma(ScalarType::F16, FmaRounding::Once).unwrap();
        let twice = fma(ScalarType::F16, FmaRounding::Twice).unwrap();
        let mut state = 1;
        let (mut differ, mut n) = (0, 0);
        // Random finite operands whose exact result stays below 65504 in magnitude, plus the
        // case where rounding through f32 or f64 gives the wrong tie: 683/512 · 3/4 is the
        // midpoint 1 + 2^-11, and a tiny addend decides the rounding.
        let mut cases = vec![(0x3d56u16, 0x3a00u16, 0x0001u16), (0x3d56, 0x3a00, 0x8001)];
        while cases.len() < 200_000 {
            let pick = |s: &mut u64| {
                let b = next(s) as u16;
                if f16::from_bits(b).is_finite() {
                    b
                } else {
                    b & 0x3fff
                }
            };
            let (a, b, c) = (pick(&mut state), pick(&mut state), pick(&mut state));
            if product(a, b).abs() + scaled(c).abs() < scaled(0x7bff) / 2 {
                cases.push((a, b, c));
            }
        }
        for (a, b, c) in cases {
            let exact = product(a, b) + scaled(c);
            let want = round_f16(&grid, exact);
            let got = once(u64::from(a), u64::from(b), u64::from(c)) as u16;
            // Signed zeros: compare values.
            assert_eq!(f16::from_bits(got).to_f64(), f16::from_bits(want).to_f64(), "once {a:#x} {b:#x} {c:#x}");
            let p = round_f16(&grid, product(a, b));
            let want2 = round_f16(&grid, scaled(p) + scaled(c));
            let got2 = twice(u64::from(a), u64::from(b), u64::from(c)) as u16;
            assert_eq!(f16::from_bits(got2).to_f64(), f16::from_bits(want2).to_f64(), "twice {a:#x} {b:#x} {c:#x}");
            differ += usize::from(got != got2);
            n += 1;
        }
        assert!(differ * 20 > n, "the two roundings differ in {differ} of {n}");
    }

    #[test]
    fn f32_fma_rounds_once_or_twice() {
        let once = fma(ScalarType::F32, FmaRounding::Once).unwrap();
        let twice = fma(ScalarType::F32, FmaRounding::Twice).unwrap();
        // (1 + 2^-23)^2 - (1 + 2^-22) = 2^-46 exactly; the rounded product loses it.
        let a = f32_bits(1.0 + f32::EPSILON);
        let c = f32_bits(-(1.0 + 2.0 * f32::EPSILON));
        assert_eq!(f32_of(once(a, a, c)), 2f32.powi(-46));
        assert_eq!(f32_of(twice(a, a, c)), 0.0);
        let mut state = 7;
        for _ in 0..100_000 {
            let x = |s: &mut u64| f32::from_bits((next(s) as u32 & 0x007f_ffff) | 0x3f80_0000) - 1.5;
            let (p, q, r) = (x(&mut state), x(&mut state), x(&mut state));
            let exact = f64::from(p) * f64::from(q) + f64::from(r);
            let got = f32_of(once(f32_bits(p), f32_bits(q), f32_bits(r)));
            assert!((f64::from(got) - exact).abs() <= f64::from(got).abs() * 2f64.powi(-24) + 1e-45);
            assert_eq!(f32_of(twice(f32_bits(p), f32_bits(q), f32_bits(r))), p * q + r);
        }
    }

    #[test]
    fn f16_from_f64_rounds_once() {
        let grid = f16_grid();
        let mut state = 3;
        // Midpoints nudged by less than an f32 ulp: rounding through f32 would tie.
        let mut xs = vec![1.0 + 2f64.powi(-11) + 2f64.powi(-40), 1.0 + 2f64.powi(-11) - 2f64.powi(-40)];
        for _ in 0..200_000 {
            let bits = next(&mut state);
            let x = f64::from_bits((bits & 0x800f_ffff_ffff_ffff) | ((1000 + (bits >> 52) % 38) << 52));
            xs.push(x);
        }
        for x in xs {
            let n = (x * 2f64.powi(48)).round() as i128;
            if (n as f64) != x * 2f64.powi(48) {
                continue; // not a multiple of 2^-48: outside the grid's exactness
            }
            assert_eq!(f16_from_f64(x).to_bits(), round_f16(&grid, n), "{x:e}");
        }
    }
}
