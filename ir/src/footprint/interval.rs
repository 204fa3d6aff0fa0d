//! Closed integer intervals over `i128` for the footprint analysis.
//!
//! Every value the analysis knows lies in one `Interval` of the values its type can hold
//! (read as that type: `i32` bits as a signed number). Operations compute the exact
//! mathematical result range with checked `i128` arithmetic; the caller then keeps it only
//! if it fits the result type ([`Interval::fit`]), because an op that can leave the type's
//! range wraps in the kernel and the wrapped value can be anywhere. `None` means unknown.

use crate::types::ScalarType;

/// The integers `lo..=hi` (`lo <= hi`; the empty interval is never built).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Interval {
    /// Smallest value.
    pub lo: i128,
    /// Largest value (inclusive).
    pub hi: i128,
}

/// The values of an integer type, or `None` for the other types.
pub(crate) fn type_range(ty: ScalarType) -> Option<Interval> {
    let (lo, hi) = ty.int_range()?;
    Some(Interval { lo, hi })
}

/// Bit width of an integer type (shift amounts are taken modulo it).
fn bits(ty: ScalarType) -> i128 {
    ty.size() as i128 * 8
}

impl Interval {
    /// `lo..=hi`, or `None` when empty.
    pub fn new(lo: i128, hi: i128) -> Option<Interval> {
        (lo <= hi).then_some(Interval { lo, hi })
    }

    /// The single value `v`.
    pub fn exact(v: i128) -> Interval {
        Interval { lo: v, hi: v }
    }

    /// `self` if every value is representable in `ty`; otherwise the op could wrap, so
    /// nothing is known.
    pub fn fit(self, ty: ScalarType) -> Option<Interval> {
        let r = type_range(ty)?;
        (r.lo <= self.lo && self.hi <= r.hi).then_some(self)
    }

    /// The smallest interval holding both.
    pub fn hull(self, o: Interval) -> Interval {
        Interval { lo: self.lo.min(o.lo), hi: self.hi.max(o.hi) }
    }

    /// Whether every value is at least zero.
    fn non_negative(self) -> bool {
        self.lo >= 0
    }

    /// The interval spanned by `f` over the four corners; exact for functions monotone in
    /// each argument (sums, products, truncating division and shifts by positive amounts).
    fn corners(self, o: Interval, f: impl Fn(i128, i128) -> Option<i128>) -> Option<Interval> {
        let c = [f(self.lo, o.lo)?, f(self.lo, o.hi)?, f(self.hi, o.lo)?, f(self.hi, o.hi)?];
        Interval::new(*c.iter().min()?, *c.iter().max()?)
    }

    /// `a + b`.
    pub fn add(self, o: Interval) -> Option<Interval> {
        Interval::new(self.lo.checked_add(o.lo)?, self.hi.checked_add(o.hi)?)
    }

    /// `a - b`.
    pub fn sub(self, o: Interval) -> Option<Interval> {
        Interval::new(self.lo.checked_sub(o.hi)?, self.hi.checked_sub(o.lo)?)
    }

    /// `a * b` (the product is monotone in each argument once the other's sign is fixed,
    /// so the extremes are among the corner products).
    pub fn mul(self, o: Interval) -> Option<Interval> {
        self.corners(o, i128::checked_mul)
    }

    /// `a / b` truncating, only for a divisor known positive (a zero divisor gives 0 in the
    /// interpreter but is undefined on the device).
    pub fn div(self, o: Interval) -> Option<Interval> {
        if o.lo < 1 {
            return None;
        }
        self.corners(o, i128::checked_div)
    }

    /// `a % b` for a divisor known positive: the result has the dividend's sign and a
    /// magnitude below the divisor and at most the dividend's.
    pub fn rem(self, o: Interval) -> Option<Interval> {
        if o.lo < 1 {
            return None;
        }
        if self.non_negative() && self.hi < o.lo {
            return Some(self);
        }
        let m = o.hi - 1;
        Interval::new(self.lo.max(-m).min(0), self.hi.min(m).max(0))
    }

    /// `min(a, b)` (the type's own order; intervals hold values read as their type).
    pub fn min(self, o: Interval) -> Interval {
        Interval { lo: self.lo.min(o.lo), hi: self.hi.min(o.hi) }
    }

    /// `max(a, b)`.
    pub fn max(self, o: Interval) -> Interval {
        Interval { lo: self.lo.max(o.lo), hi: self.hi.max(o.hi) }
    }

    /// `a & b`: two's complement `and` with a non-negative operand is between 0 and it.
    pub fn and(self, o: Interval) -> Option<Interval> {
        match (self.non_negative(), o.non_negative()) {
            (true, true) => Interval::new(0, self.hi.min(o.hi)),
            (true, false) => Interval::new(0, self.hi),
            (false, true) => Interval::new(0, o.hi),
            (false, false) => None,
        }
    }

    /// `a | b` and `a ^ b` of non-negative operands stay below the next power of two;
    /// `or` is also at least either operand.
    pub fn or_xor(self, o: Interval, is_or: bool) -> Option<Interval> {
        if !self.non_negative() || !o.non_negative() {
            return None;
        }
        let top = self.hi.max(o.hi);
        let ceiling = 1i128.checked_shl(128 - top.leading_zeros())?.checked_sub(1)?;
        let lo = if is_or { self.lo.max(o.lo) } else { 0 };
        Interval::new(lo, ceiling)
    }

    /// `a << s`: a multiplication by `2^s` when every shift amount is below the width
    /// (larger amounts are taken modulo the width).
    pub fn shl(self, s: Interval, ty: ScalarType) -> Option<Interval> {
        if s.lo < 0 || s.hi >= bits(ty) {
            return None;
        }
        self.mul(Interval::new(1i128 << s.lo, 1i128 << s.hi)?)
    }

    /// `a >> s` (arithmetic on signed types, which is `i128`'s `>>` on the typed value)
    /// when every shift amount is below the width.
    pub fn shr(self, s: Interval, ty: ScalarType) -> Option<Interval> {
        if s.lo < 0 || s.hi >= bits(ty) {
            return None;
        }
        self.corners(s, |x, k| Some(x >> k))
    }

    /// `-a`.
    pub fn neg(self) -> Option<Interval> {
        Interval::new(self.hi.checked_neg()?, self.lo.checked_neg()?)
    }

    /// Bitwise `not`: `-a - 1` on signed types, `MAX - a` on unsigned ones.
    pub fn not(self, ty: ScalarType) -> Option<Interval> {
        if ty.is_signed_integer() {
            Interval::new(self.hi.checked_neg()?.checked_sub(1)?, self.lo.checked_neg()?.checked_sub(1)?)
        } else {
            let max = type_range(ty)?.hi;
            Interval::new(max.checked_sub(self.hi)?, max.checked_sub(self.lo)?)
        }
    }

    /// `|a|` (the caller's `fit` rejects `|MIN|`, which wraps to `MIN`).
    pub fn abs(self) -> Option<Interval> {
        if self.lo >= 0 {
            Some(self)
        } else if self.hi <= 0 {
            self.neg()
        } else {
            Interval::new(0, self.hi.max(self.lo.checked_neg()?))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(lo: i128, hi: i128) -> Interval {
        Interval::new(lo, hi).unwrap()
    }

    /// Every operation against brute force over small ranges, with the result read in the
    /// mathematical integers (wrapping is the caller's `fit`).
    #[test]
    fn footprint_interval_ops_are_sound_on_small_ranges() {
        let ranges = [iv(0, 0), iv(0, 5), iv(3, 9), iv(-4, 2), iv(-7, -3), iv(1, 1), iv(2, 6)];
        type Case = (fn(Interval, Interval) -> Option<Interval>, fn(i128, i128) -> Option<i128>);
        let cases: [Case; 10] = [
            (|a, b| a.add(b), |x, y| Some(x + y)),
            (|a, b| a.sub(b), |x, y| Some(x - y)),
            (|a, b| a.mul(b), |x, y| Some(x * y)),
            (|a, b| a.div(b), |x, y| (y != 0).then(|| x / y)),
            (|a, b| a.rem(b), |x, y| (y != 0).then(|| x % y)),
            (|a, b| Some(a.min(b)), |x, y| Some(x.min(y))),
            (|a, b| Some(a.max(b)), |x, y| Some(x.max(y))),
            (|a, b| a.and(b), |x, y| Some(x & y)),
            (|a, b| a.or_xor(b, true), |x, y| Some(x | y)),
            (|a, b| a.or_xor(b, false), |x, y| Some(x ^ y)),
        ];
        for (op, concrete) in cases {
            for a in ranges {
                for b in ranges {
                    let Some(r) = op(a, b) else { continue };
                    for x in a.lo..=a.hi {
                        for y in b.lo..=b.hi {
                            if let Some(v) = concrete(x, y) {
                                assert!(r.lo <= v && v <= r.hi, "{a:?} op {b:?} = {r:?} misses {v}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn footprint_interval_shifts_and_wrapping() {
        assert_eq!(iv(1, 3).shl(iv(2, 2), ScalarType::U32), Some(iv(4, 12)));
        assert_eq!(iv(-8, 8).shr(iv(1, 2), ScalarType::I32), Some(iv(-4, 4)));
        assert_eq!(iv(0, 3).shr(iv(32, 32), ScalarType::U32), None);
        assert_eq!(iv(-1, 0).fit(ScalarType::U32), None);
        assert_eq!(iv(0, u32::MAX as i128 + 1).fit(ScalarType::U32), None);
        assert_eq!(iv(i32::MIN as i128, 0).abs().and_then(|r| r.fit(ScalarType::I32)), None);
        assert_eq!(iv(0, 5).not(ScalarType::U32), Some(iv(u32::MAX as i128 - 5, u32::MAX as i128)));
        assert_eq!(iv(0, 5).rem(iv(4, 4)), Some(iv(0, 3)));
        assert_eq!(iv(0, 2).rem(iv(4, 4)), Some(iv(0, 2)));
        assert_eq!(iv(i128::MAX - 1, i128::MAX).mul(iv(2, 2)), None);
    }
}
