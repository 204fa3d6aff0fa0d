//! Rounding `f32` values to `f16` in integer operations before every `fptrunc` to `half`.
//!
//! NVIDIA's driver (H200, 580.159.04) drops an `OpFConvert` to `f32` of an `OpFConvert` to
//! `f16`: `cast(cast(x to f16) to f32)` returned `x` on 4096 of 4096 lanes, and an `f16` op
//! feeding another (computed widened, see `float_op`) kept its unrounded `f32` result
//! (docs/reliability.md, "On the H200"). Rounding the value to `f16` precision first, in
//! integer arithmetic no optimizer reads as a conversion, makes the `fptrunc` exact, so a
//! dropped pair gives the same bits. The cost is about 25 integer operations per `f16`
//! result; native `f16` arithmetic would avoid it but not the explicit cast pair.

use super::types;
use super::{Lowerer, Val};

impl Lowerer<'_> {
    /// `w` (`float` or a vector of them) rounded to the nearest `f16` value, ties to even, as
    /// an `f32`: overflow gives an infinity, values below half the smallest subnormal give a
    /// zero of their sign, infinities and NaNs pass unchanged. `fptrunc` of it is exact.
    pub(super) fn round_to_f16(&mut self, w: &Val) -> Val {
        let ft = w.ty.clone();
        let it = ft.replace("float", "i32");
        let bt = ft.replace("float", "i1");
        let k = |v: i64| Val::new(it.clone(), types::splat_int(&it, &v.to_string()));
        let bits = self.ir.emit(&it, format!("bitcast {} to {it}", w.typed()));
        let mag = self.ir.emit(&it, format!("and {}, {}", bits.typed(), k(0x7fff_ffff).v));
        let sign = self.ir.emit(&it, format!("and {}, {}", bits.typed(), k(-0x8000_0000).v));
        let exp = self.ir.emit(&it, format!("lshr {}, {}", mag.typed(), k(23).v));
        // Bits to drop from the 24-bit significand: 13 for f16 normals (exponent 113 and
        // up), one more per binade below down to 25 (everything rounds to zero there).
        let drop = self.ir.emit(&it, format!("sub {}, {}", k(126).typed(), exp.v));
        let low = self.ir.emit(&bt, format!("icmp slt {}, {}", drop.typed(), k(13).v));
        let drop = self.ir.emit(&it, format!("select {}, {}, {}", low.typed(), k(13).typed(), drop.typed()));
        let high = self.ir.emit(&bt, format!("icmp sgt {}, {}", drop.typed(), k(25).v));
        let drop = self.ir.emit(&it, format!("select {}, {}, {}", high.typed(), k(25).typed(), drop.typed()));
        let frac = self.ir.emit(&it, format!("and {}, {}", mag.typed(), k(0x7f_ffff).v));
        let sig = self.ir.emit(&it, format!("or {}, {}", frac.typed(), k(0x80_0000).v));
        // Round half to even: add half an ulp minus one, plus the kept lowest bit.
        let kept = self.ir.emit(&it, format!("lshr {}, {}", sig.typed(), drop.v));
        let odd = self.ir.emit(&it, format!("and {}, {}", kept.typed(), k(1).v));
        let below = self.ir.emit(&it, format!("sub {}, {}", drop.typed(), k(1).v));
        let half = self.ir.emit(&it, format!("shl {}, {}", k(1).typed(), below.v));
        let half = self.ir.emit(&it, format!("sub {}, {}", half.typed(), k(1).v));
        let sum = self.ir.emit(&it, format!("add {}, {}", sig.typed(), half.v));
        let sum = self.ir.emit(&it, format!("add {}, {}", sum.typed(), odd.v));
        let q = self.ir.emit(&it, format!("lshr {}, {}", sum.typed(), drop.v));
        let rounded = self.ir.emit(&it, format!("shl {}, {}", q.typed(), drop.v));
        // The value is rounded * 2^(exp - 150): exponent field exp - 1 plus the significand
        // (a carry into 2^24 moves to the next binade by itself).
        let below_exp = self.ir.emit(&it, format!("sub {}, {}", exp.typed(), k(1).v));
        let base = self.ir.emit(&it, format!("shl {}, {}", below_exp.typed(), k(23).v));
        let r = self.ir.emit(&it, format!("add {}, {}", base.typed(), rounded.v));
        let zero = self.ir.emit(&bt, format!("icmp eq {}, {}", rounded.typed(), k(0).v));
        let r = self.ir.emit(&it, format!("select {}, {}, {}", zero.typed(), k(0).typed(), r.typed()));
        // Past 65504, the largest f16, the value overflows.
        let over = self.ir.emit(&bt, format!("icmp ugt {}, {}", r.typed(), k(0x477f_e000).v));
        let r = self.ir.emit(&it, format!("select {}, {}, {}", over.typed(), k(0x7f80_0000).typed(), r.typed()));
        let special = self.ir.emit(&bt, format!("icmp uge {}, {}", mag.typed(), k(0x7f80_0000).v));
        let r = self.ir.emit(&it, format!("select {}, {}, {}", special.typed(), mag.typed(), r.typed()));
        let r = self.ir.emit(&it, format!("or {}, {}", r.typed(), sign.v));
        self.ir.emit(&ft, format!("bitcast {} to {ft}", r.typed()))
    }

    /// `fptrunc` of `w` to `half` (or a vector of them), rounded by `round_to_f16` first.
    pub(super) fn truncate_to_f16(&mut self, w: &Val) -> Val {
        let rounded = self.round_to_f16(w);
        let narrow = w.ty.replace("float", "half");
        self.ir.emit(&narrow.clone(), format!("fptrunc {} to {narrow}", rounded.typed()))
    }
}
