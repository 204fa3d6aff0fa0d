//! Math functions: the IR's own ops, and WGSL's definitions of the others written out with
//! IR ops (each exactly as the WGSL specification defines it, so the result is bit-exact
//! wherever the ops used are).

use naga::{Handle, MathFunction as M};

use super::{FnCtx, Lowerer};
use crate::error::{Result, ShaderError};
use crate::types::{Ty, S};

type H = Handle<naga::Expression>;

const SUPPORTED: &str = "supported: abs sqrt inverseSqrt exp log sin cos tanh floor ceil trunc round fract sign \
    min max clamp saturate pow fma mix step smoothstep dot cross length distance normalize countOneBits";

impl Lowerer<'_> {
    pub(crate) fn math(
        &mut self,
        f: &mut FnCtx<'_>,
        fun: M,
        arg: H,
        arg1: Option<H>,
        arg2: Option<H>,
        span: naga::Span,
    ) -> Result<(String, Ty)> {
        let (x, t) = self.value(f, arg)?;
        let float = t.s == S::F32;
        let unary = match fun {
            M::Abs if float => Some("abs"),
            M::Sqrt => Some("sqrt"),
            M::InverseSqrt => Some("rsqrt"),
            M::Exp => Some("exp"),
            M::Log => Some("log"),
            M::Sin => Some("sin"),
            M::Cos => Some("cos"),
            M::Tanh => Some("tanh"),
            M::Floor => Some("floor"),
            M::Ceil => Some("ceil"),
            _ => None,
        };
        if let Some(name) = unary {
            return Ok(self.op(format!("{name} {x}"), t));
        }
        let mut operand = |l: &mut Self, h: Option<H>| -> Result<String> {
            let Some(h) = h else { return Err(ShaderError::at(span, "internal: missing operand", "")) };
            let v = l.value(f, h)?;
            Ok(l.unify((x.clone(), t), v).1 .0)
        };
        let needs_float = |what: &str| {
            if float {
                Ok(())
            } else {
                Err(ShaderError::at(span, format!("`{what}` of {}", t.text()), "only f32 is supported here"))
            }
        };
        match fun {
            M::Min | M::Max | M::Pow => {
                let y = operand(self, arg1)?;
                let name = match fun {
                    M::Min => "min",
                    M::Max => "max",
                    _ => "pow",
                };
                Ok(self.op(format!("{name} {x}, {y}"), t))
            }
            M::Clamp => {
                // clamp(e, lo, hi) = min(max(e, lo), hi): WGSL's definition for floats, and
                // the same for integers when lo <= hi.
                let lo = operand(self, arg1)?;
                let hi = operand(self, arg2)?;
                let m = self.bin("max", &x, &lo, t);
                Ok((self.bin("min", &m, &hi, t), t))
            }
            M::Saturate => {
                needs_float("saturate")?;
                let (zero, _) = self.constant("0.0", t);
                let (one, _) = self.constant("1.0", t);
                let m = self.bin("max", &x, &zero, t);
                Ok((self.bin("min", &m, &one, t), t))
            }
            M::Fma => {
                let b = operand(self, arg1)?;
                let c = operand(self, arg2)?;
                Ok(self.op(format!("fma {x}, {b}, {c}"), t))
            }
            M::Abs => {
                // Integers: -e for negative e (wrapping: abs(MIN) is MIN); unsigned: e.
                if t.s == S::U32 || t.s == S::U64 {
                    return Ok((x, t));
                }
                let (zero, _) = self.constant("0", t);
                let neg = self.op(format!("lt {x}, {zero}"), t.with_scalar(S::Bool)).0;
                let minus = self.op(format!("neg {x}"), t).0;
                Ok(self.op(format!("select {neg}, {minus}, {x}"), t))
            }
            M::Trunc => {
                needs_float("trunc")?;
                Ok((self.trunc(&x, t), t))
            }
            M::Fract => {
                // WGSL: e - floor(e).
                needs_float("fract")?;
                let fl = self.op(format!("floor {x}"), t).0;
                Ok((self.bin("sub", &x, &fl, t), t))
            }
            M::Round => {
                needs_float("round")?;
                Ok((self.round_even(&x, t), t))
            }
            M::Sign => Ok((self.sign(&x, t), t)),
            M::Step => {
                // step(edge, e) = 1.0 if edge <= e, else 0.0.
                needs_float("step")?;
                let e = operand(self, arg1)?;
                let (one, _) = self.constant("1.0", t);
                let (zero, _) = self.constant("0.0", t);
                let c = self.op(format!("le {x}, {e}"), t.with_scalar(S::Bool)).0;
                Ok(self.op(format!("select {c}, {one}, {zero}"), t))
            }
            M::SmoothStep => {
                // t = clamp((e - low) / (high - low), 0.0, 1.0); t * t * (3.0 - 2.0 * t).
                needs_float("smoothstep")?;
                let high = operand(self, arg1)?;
                let e = operand(self, arg2)?;
                let num = self.bin("sub", &e, &x, t);
                let den = self.bin("sub", &high, &x, t);
                let q = self.bin("div", &num, &den, t);
                let (zero, _) = self.constant("0.0", t);
                let (one, _) = self.constant("1.0", t);
                let (two, _) = self.constant("2.0", t);
                let (three, _) = self.constant("3.0", t);
                let m = self.bin("max", &q, &zero, t);
                let c = self.bin("min", &m, &one, t);
                let cc = self.bin("mul", &c, &c, t);
                let tc = self.bin("mul", &two, &c, t);
                let s = self.bin("sub", &three, &tc, t);
                Ok((self.bin("mul", &cc, &s, t), t))
            }
            M::Mix => {
                // WGSL and GLSL: e1 * (1 - e3) + e2 * e3.
                needs_float("mix")?;
                let y = operand(self, arg1)?;
                let a = operand(self, arg2)?;
                let (one, _) = self.constant("1.0", t);
                let inv = self.bin("sub", &one, &a, t);
                let l = self.bin("mul", &x, &inv, t);
                let r = self.bin("mul", &y, &a, t);
                Ok((self.bin("add", &l, &r, t), t))
            }
            M::Dot => {
                let y = operand(self, arg1)?;
                Ok(self.dot(&x, &y, t))
            }
            M::Length => {
                needs_float("length")?;
                Ok(self.length(&x, t))
            }
            M::Distance => {
                needs_float("distance")?;
                let y = operand(self, arg1)?;
                let d = self.bin("sub", &x, &y, t);
                Ok(self.length(&d, t))
            }
            M::Normalize => {
                // e / length(e).
                needs_float("normalize")?;
                let (len, _) = self.length(&x, t);
                let s = self.op(format!("splat {len} : {}", t.text()), t).0;
                Ok((self.bin("div", &x, &s, t), t))
            }
            M::Cross => {
                let y = operand(self, arg1)?;
                if t.lanes != 3 {
                    return Err(ShaderError::at(span, "internal: cross of a non-vec3", ""));
                }
                let a = self.lanes_of(&x, t);
                let b = self.lanes_of(&y, t);
                let s = t.with_lanes1();
                let mut lanes = Vec::new();
                for (i, j) in [(1, 2), (2, 0), (0, 1)] {
                    let p = self.bin("mul", &a[i], &b[j], s);
                    let q = self.bin("mul", &a[j], &b[i], s);
                    lanes.push(self.bin("sub", &p, &q, s));
                }
                Ok(self.op(format!("vec {}", lanes.join(", ")), t))
            }
            M::CountOneBits if matches!(t.s, S::U32 | S::I32) => Ok((self.popcount(&x, t), t)),
            other => Err(ShaderError::at(
                span,
                format!("math function `{other:?}` is not supported").to_lowercase(),
                SUPPORTED,
            )),
        }
    }

    /// `%r = NAME a, b`.
    fn bin(&mut self, name: &str, a: &str, b: &str, t: Ty) -> String {
        self.op(format!("{name} {a}, {b}"), t).0
    }

    /// trunc(q) = q < 0 ? ceil(q) : floor(q) (the IR has no trunc).
    pub(crate) fn trunc(&mut self, q: &str, t: Ty) -> String {
        let (zero, _) = self.constant("0.0", t);
        let neg = self.op(format!("lt {q}, {zero}"), t.with_scalar(S::Bool)).0;
        let up = self.op(format!("ceil {q}"), t).0;
        let down = self.op(format!("floor {q}"), t).0;
        self.op(format!("select {neg}, {up}, {down}"), t).0
    }

    /// Round half to even, exactly: with f = floor(e), d = e - f is exact (for |e| < 2^23 both
    /// lie in one binade's grid; beyond, e is an integer and d = 0), so comparing d with 0.5
    /// decides, and a tie goes to the even one of f and f + 1 (f + 1 is exact where d > 0).
    /// A zero result takes e's sign (round(-0.3) is -0.0). NaN and infinities pass through.
    fn round_even(&mut self, e: &str, t: Ty) -> String {
        let b = t.with_scalar(S::Bool);
        let (half, _) = self.constant("0.5", t);
        let (one, _) = self.constant("1.0", t);
        let (two, _) = self.constant("2.0", t);
        let (zero, _) = self.constant("0.0", t);
        let f = self.op(format!("floor {e}"), t).0;
        let d = self.bin("sub", e, &f, t);
        let up = self.bin("add", &f, &one, t);
        // f is even when floor(f / 2) * 2 == f (halving an integer-valued float is exact).
        let h = self.bin("mul", &f, &half, t);
        let hf = self.op(format!("floor {h}"), t).0;
        let h2 = self.bin("mul", &hf, &two, t);
        let even = self.op(format!("eq {h2}, {f}"), b).0;
        let tie = self.op(format!("select {even}, {f}, {up}"), t).0;
        let above = self.op(format!("gt {d}, {half}"), b).0;
        let at = self.op(format!("eq {d}, {half}"), b).0;
        let r1 = self.op(format!("select {at}, {tie}, {f}"), t).0;
        let r = self.op(format!("select {above}, {up}, {r1}"), t).0;
        let is_zero = self.op(format!("eq {r}, {zero}"), b).0;
        let neg = self.op(format!("lt {e}, {zero}"), b).0;
        let neg_zero_wanted = self.op(format!("and {is_zero}, {neg}"), b).0;
        let neg_zero = self.op(format!("neg {zero}"), t).0;
        self.op(format!("select {neg_zero_wanted}, {neg_zero}, {r}"), t).0
    }

    /// sign(e): 1 for e > 0, -1 for e < 0, otherwise e itself (a float zero keeps its sign
    /// and NaN stays NaN; WGSL leaves both open).
    fn sign(&mut self, e: &str, t: Ty) -> String {
        let b = t.with_scalar(S::Bool);
        let (one, minus, zero) = if t.s == S::F32 {
            (self.constant("1.0", t).0, self.constant("-1.0", t).0, self.constant("0.0", t).0)
        } else {
            (self.constant("1", t).0, self.constant("-1", t).0, self.constant("0", t).0)
        };
        let gt = self.op(format!("gt {e}, {zero}"), b).0;
        let lt = self.op(format!("lt {e}, {zero}"), b).0;
        let m = self.op(format!("select {lt}, {minus}, {e}"), t).0;
        self.op(format!("select {gt}, {one}, {m}"), t).0
    }

    /// The sum of the lane products, added in lane order: ((a0 b0 + a1 b1) + a2 b2) + a3 b3.
    fn dot(&mut self, a: &str, b: &str, t: Ty) -> (String, Ty) {
        let s = t.with_lanes1();
        let p = self.bin("mul", a, b, t);
        let lanes = self.lanes_of(&p, t);
        let mut acc = lanes[0].clone();
        for l in &lanes[1..] {
            acc = self.bin("add", &acc, l, s);
        }
        (acc, s)
    }

    /// length(e): |e| for a scalar, sqrt(e0^2 + e1^2 + ...) (in lane order) for a vector.
    fn length(&mut self, e: &str, t: Ty) -> (String, Ty) {
        if t.lanes == 1 {
            return self.op(format!("abs {e}"), t);
        }
        let (d, s) = self.dot(e, e, t);
        self.op(format!("sqrt {d}"), s)
    }

    /// countOneBits of a 32-bit integer, by the SWAR population count (exact with wrapping
    /// arithmetic; on the bits, so signed values count as unsigned).
    fn popcount(&mut self, e: &str, t: Ty) -> String {
        let u = t.with_scalar(S::U32);
        let x = if t.s == S::U32 { e.to_string() } else { self.op(format!("cast {e} to {}", u.text()), u).0 };
        let k = |l: &mut Self, v: u32| l.constant(&v.to_string(), u).0;
        let (c1, c2, c4, c24) = (k(self, 1), k(self, 2), k(self, 4), k(self, 24));
        let (m1, m2, m4, h01) =
            (k(self, 0x5555_5555), k(self, 0x3333_3333), k(self, 0x0f0f_0f0f), k(self, 0x0101_0101));
        let a = self.bin("shr", &x, &c1, u);
        let a = self.bin("and", &a, &m1, u);
        let x = self.bin("sub", &x, &a, u);
        let lo = self.bin("and", &x, &m2, u);
        let hi = self.bin("shr", &x, &c2, u);
        let hi = self.bin("and", &hi, &m2, u);
        let x = self.bin("add", &lo, &hi, u);
        let s = self.bin("shr", &x, &c4, u);
        let x = self.bin("add", &x, &s, u);
        let x = self.bin("and", &x, &m4, u);
        let x = self.bin("mul", &x, &h01, u);
        let r = self.bin("shr", &x, &c24, u);
        if t.s == S::U32 {
            r
        } else {
            self.op(format!("cast {r} to {}", t.text()), t).0
        }
    }
}
