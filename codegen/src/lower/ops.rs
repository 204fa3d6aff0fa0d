//! Pure ops: constants, arithmetic, comparisons, select, casts and vector shuffles, with
//! the reference interpreter's semantics (interp/src/scalar.rs).

use super::types::{self, bits, reg, signed};
use super::{Lowerer, Val};
use crate::error::CodegenError;
use cmdgraph_ir::kernel::{BinaryOp, CmpOp, OpKind, UnaryOp};
use cmdgraph_ir::{Handle, Op, ScalarType, Type};

impl Lowerer<'_> {
    /// Every op without regions.
    pub fn simple(&mut self, h: Handle<Op>, op: &Op) -> Result<(), CodegenError> {
        let out = match &op.kind {
            OpKind::Const(lit, t) => {
                let text = types::literal(lit.value, t.scalar)
                    .ok_or_else(|| self.err(h, format!("the literal does not fit {t}")))?;
                Val::new(reg(*t, self.width), types::splat_const(*t, self.width, &text))
            }
            OpKind::Builtin(b, d) => self.builtin(h, *b, *d)?,
            OpKind::Unary(u, a) => {
                let t = self.data_ty(h, *a)?;
                let a = self.val(h, *a)?;
                self.unary(h, *u, t, a)?
            }
            OpKind::Binary(b, x, y) => {
                let t = self.data_ty(h, *x)?;
                let (x, y) = (self.val(h, *x)?, self.val(h, *y)?);
                self.binary(h, *b, t, x, y)?
            }
            OpKind::Fma(a, b, c) => {
                let t = self.data_ty(h, *a)?;
                if !t.scalar.is_float() {
                    return Err(self.err(h, format!("`fma` does not apply to {t}")));
                }
                let args = [self.val(h, *a)?, self.val(h, *b)?, self.val(h, *c)?];
                self.float_op(t, &args, |l, w| {
                    let name = format!("llvm.fma.{}", types::mangle(&w[0].ty));
                    l.ir.call(&w[0].ty.clone(), &name, w)
                })
            }
            OpKind::Cmp(c, x, y) => {
                let t = self.data_ty(h, *x)?;
                let (x, y) = (self.val(h, *x)?, self.val(h, *y)?);
                self.compare(*c, t, &x, &y)
            }
            OpKind::Select(c, x, y) => {
                let (c, x, y) = (self.val(h, *c)?, self.val(h, *x)?, self.val(h, *y)?);
                self.ir.emit(&x.ty.clone(), format!("select {}, {}, {}", c.typed(), x.typed(), y.typed()))
            }
            OpKind::Cast(x, to) => {
                let from = self.data_ty(h, *x)?;
                let x = self.val(h, *x)?;
                self.cast(from, *to, x)
            }
            // The element count the bounds checks use.
            OpKind::Len(mem) => self.element_count(h, *mem)?,
            OpKind::Bitcast(x, to) => {
                let from = self.data_ty(h, *x)?;
                let x = self.val(h, *x)?;
                let (fr, tr) = (reg(from, self.width), reg(*to, self.width));
                if fr == tr {
                    // Integers of one width share an LLVM type: the same register.
                    Val::new(tr, x.v)
                } else {
                    self.ir.emit(&tr, format!("bitcast {} to {tr}", x.typed()))
                }
            }
            OpKind::Splat(x, t) => {
                let x = self.val(h, *x)?;
                let vt = reg(*t, 1);
                let ins = self.ir.emit(&vt, format!("insertelement {vt} poison, {}, i32 0", x.typed()));
                self.ir.emit(
                    &vt,
                    format!("shufflevector {vt} {}, {vt} poison, <{} x i32> zeroinitializer", ins.v, t.lanes),
                )
            }
            OpKind::Extract(v, lane) => {
                let t = self.data_ty(h, *v)?;
                let v = self.val(h, *v)?;
                self.ir.emit(types::scalar(t.scalar), format!("extractelement {}, i32 {lane}", v.typed()))
            }
            OpKind::Insert(v, lane, s) => {
                let (v, s) = (self.val(h, *v)?, self.val(h, *s)?);
                self.ir.emit(&v.ty.clone(), format!("insertelement {}, {}, i32 {lane}", v.typed(), s.typed()))
            }
            OpKind::Construct(parts) => {
                let first = *parts.first().ok_or_else(|| self.err(h, "`vec` needs 2 to 4 scalars"))?;
                let t = self.data_ty(h, first)?;
                let vt = types::vector(types::scalar(t.scalar), parts.len() as u8);
                let mut acc = Val::new(vt.clone(), "poison");
                for (i, &p) in parts.iter().enumerate() {
                    let p = self.val(h, p)?;
                    acc = self.ir.emit(&vt, format!("insertelement {vt} {}, {}, i32 {i}", acc.v, p.typed()));
                }
                acc
            }
            OpKind::Load { mem, index } => self.load(h, *mem, *index)?,
            OpKind::Store { mem, index, value } => return self.store(h, *mem, *index, *value),
            OpKind::Atomic { op: aop, mem, index, value, expected } => {
                self.atomic(h, *aop, *mem, *index, *value, *expected)?
            }
            OpKind::GroupBarrier => {
                self.ir.call_void("llvm.spv.group.memory.barrier.with.group.sync", &[]);
                return Ok(());
            }
            OpKind::LocalAlloc { .. } => return Ok(()),
            OpKind::Subgroup(sg) => self.subgroup(h, sg)?,
            OpKind::For { .. } | OpKind::If { .. } | OpKind::Loop { .. } | OpKind::Yield(_) => {
                return Err(self.err(h, "structured op outside region lowering"))
            }
            // lib.rs inlines every call before lowering.
            OpKind::Call { .. } | OpKind::Return(_) => return Err(self.err(h, "a call that was not inlined")),
        };
        self.set(h, op, 0, out)
    }

    /// Runs `f` on float operands; `f16` is computed in `f32` and rounded once, as the
    /// interpreter does.
    fn float_op(&mut self, t: Type, args: &[Val], f: impl FnOnce(&mut Self, &[Val]) -> Val) -> Val {
        if t.scalar != ScalarType::F16 {
            return f(self, args);
        }
        let wide_ty = args.first().map(|a| a.ty.replace("half", "float")).unwrap_or_else(|| "float".into());
        let wide: Vec<Val> =
            args.iter().map(|a| self.ir.emit(&wide_ty, format!("fpext {} to {wide_ty}", a.typed()))).collect();
        let r = f(self, &wide);
        self.truncate_to_f16(&r)
    }

    /// A constant of `x`'s type with every lane `text`.
    fn like(&self, x: &Val, t: Type, text: &str) -> Val {
        Val::new(x.ty.clone(), types::splat_const(t, self.lanes_of(t), text))
    }

    fn lanes_of(&self, t: Type) -> u8 {
        if self.width > 1 {
            self.width
        } else {
            t.lanes
        }
    }

    /// `icmp`/`fcmp` type of the result for operands of type `t`.
    fn bool_ty(&self, t: Type) -> String {
        reg(t.with_scalar(ScalarType::Bool), self.width)
    }

    fn unary(&mut self, h: Handle<Op>, u: UnaryOp, t: Type, a: Val) -> Result<Val, CodegenError> {
        let s = t.scalar;
        let ty = a.ty.clone();
        if s.is_float() {
            let name = match u {
                UnaryOp::Neg => return Ok(self.ir.emit(&ty, format!("fneg {}", a.typed()))),
                UnaryOp::Not => return Err(self.err(h, format!("`not` does not apply to {t}"))),
                UnaryOp::Abs => "fabs",
                UnaryOp::Sqrt | UnaryOp::Rsqrt => "sqrt",
                UnaryOp::Exp => "exp",
                UnaryOp::Log => "log",
                UnaryOp::Sin => "sin",
                UnaryOp::Cos => "cos",
                UnaryOp::Tanh => "tanh",
                UnaryOp::Floor => "floor",
                UnaryOp::Ceil => "ceil",
            };
            return Ok(self.float_op(t, &[a], |l, w| {
                let wt = w[0].ty.clone();
                let r = l.ir.call(&wt, &format!("llvm.{name}.{}", types::mangle(&wt)), w);
                if u == UnaryOp::Rsqrt {
                    // The computing type: `f32` for `f16` (widened), else the operand's.
                    let wide = if t.scalar == ScalarType::F16 { ScalarType::F32 } else { t.scalar };
                    let one = Val::new(
                        wt.clone(),
                        types::splat_const(t.with_scalar(wide), l.lanes_of(t), &types::f32_text(1.0)),
                    );
                    l.ir.emit(&wt, format!("fdiv {}, {}", one.typed(), r.v))
                } else if matches!(u, UnaryOp::Floor | UnaryOp::Ceil) {
                    // IEEE: the result has the operand's sign (`ceil(-0.5)` is `-0`);
                    // llvmpipe's GLSL Ceil returned `+0`. Zero results take the sign bit.
                    let a = &w[0];
                    let (it, sign_bit) = types::float_bits_ty(&wt);
                    let ai = l.ir.emit(&it, format!("bitcast {} to {it}", a.typed()));
                    let ri = l.ir.emit(&it, format!("bitcast {} to {it}", r.typed()));
                    let min = Val::new(it.clone(), types::splat_of(&it, sign_bit));
                    let sign = l.ir.emit(&it, format!("and {}, {}", ai.typed(), min.v));
                    let bits = l.ir.emit(&it, format!("or {}, {}", ri.typed(), sign.v));
                    l.ir.emit(&wt, format!("bitcast {} to {wt}", bits.typed()))
                } else if u == UnaryOp::Abs {
                    // A NaN passes unchanged rather than through `FAbs`: NVIDIA's driver
                    // (H200, 580.159.04) folds `FAbs(x) > c` to true for a negative constant
                    // `c`, NaN `x` included (docs/reliability.md, "On the H200"); through
                    // the select its value range is no longer "not negative".
                    let a = &w[0];
                    let bt = wt.replace("float", "i1").replace("double", "i1");
                    let nan = l.ir.emit(&bt, format!("fcmp une {}, {}", a.typed(), a.v));
                    l.ir.emit(&wt, format!("select {}, {}, {}", nan.typed(), a.typed(), r.typed()))
                } else {
                    r
                }
            }));
        }
        Ok(match u {
            UnaryOp::Neg if s != ScalarType::Bool => {
                let zero = self.like(&a, t, "0");
                self.ir.emit(&ty, format!("sub {}, {}", zero.typed(), a.v))
            }
            UnaryOp::Not => {
                let ones = self.like(&a, t, if s == ScalarType::Bool { "true" } else { "-1" });
                self.ir.emit(&ty, format!("xor {}, {}", a.typed(), ones.v))
            }
            UnaryOp::Abs if signed(s) => {
                // `(x ^ s) - s` with `s` all sign bits, not a compare and select: that
                // compare is the one llvmpipe gets wrong on a sign-extended value
                // (`signed_icmp`), and this form has none (`MIN` stays `MIN`, wrapping).
                let top = self.like(&a, t, &(bits(s) - 1).to_string());
                let sign = self.ir.emit(&ty, format!("ashr {}, {}", a.typed(), top.v));
                let flipped = self.ir.emit(&ty, format!("xor {}, {}", a.typed(), sign.v));
                self.ir.emit(&ty, format!("sub {}, {}", flipped.typed(), sign.v))
            }
            UnaryOp::Abs if s.is_integer() => a,
            _ => return Err(self.err(h, format!("`{}` does not apply to {t}", u.keyword()))),
        })
    }

    fn binary(&mut self, h: Handle<Op>, b: BinaryOp, t: Type, x: Val, y: Val) -> Result<Val, CodegenError> {
        let s = t.scalar;
        let ty = x.ty.clone();
        if s.is_float() {
            let bool_ty = self.bool_ty(t);
            return Ok(self.float_op(t, &[x, y], |l, w| {
                let wt = w[0].ty.clone();
                let (a, c) = (&w[0], &w[1]);
                let simple = |op: &str| format!("{op} {}, {}", a.typed(), c.v);
                match b {
                    BinaryOp::Add => l.ir.emit(&wt, simple("fadd")),
                    BinaryOp::Sub => l.ir.emit(&wt, simple("fsub")),
                    BinaryOp::Mul => l.ir.emit(&wt, simple("fmul")),
                    BinaryOp::Div => l.ir.emit(&wt, simple("fdiv")),
                    BinaryOp::Rem => {
                        // C fmod: a zero result has the sign of the dividend. OpFRem leaves
                        // the sign of a zero result open (llvmpipe gives +0 for fmod(-x, x)),
                        // so zero results take the dividend's sign bit explicitly.
                        let r = l.ir.emit(&wt, simple("frem"));
                        let (it, sign_bit) = types::float_bits_ty(&wt);
                        let ai = l.ir.emit(&it, format!("bitcast {} to {it}", a.typed()));
                        let sign = l.ir.emit(&it, format!("and {it} {}, {}", ai.v, types::splat_of(&it, sign_bit)));
                        let signed_zero = l.ir.emit(&wt, format!("bitcast {it} {} to {wt}", sign.v));
                        let zero = l.ir.emit(&bool_ty, format!("fcmp oeq {}, zeroinitializer", r.typed()));
                        l.ir.emit(&wt, format!("select {}, {}, {}", zero.typed(), signed_zero.typed(), r.typed()))
                    }
                    BinaryOp::Pow => l.ir.call(&wt, &format!("llvm.pow.{}", types::mangle(&wt)), w),
                    // IEEE minNum/maxNum: the non-NaN operand wins (Rust f32::min/max).
                    BinaryOp::Min | BinaryOp::Max => {
                        let pred = if b == BinaryOp::Min { "olt" } else { "ogt" };
                        let better = l.ir.emit(&bool_ty, format!("fcmp {pred} {}, {}", a.typed(), c.v));
                        let nan = l.ir.emit(&bool_ty, format!("fcmp une {}, {}", c.typed(), c.v));
                        let pick = l.ir.emit(&bool_ty, format!("or {}, {}", better.typed(), nan.v));
                        // Equal operands (only zeros can differ): -0 is below +0, so the
                        // sign bits are or-ed for min and and-ed for max (docs/ir.md).
                        let (it, _) = types::float_bits_ty(&wt);
                        let eq = l.ir.emit(&bool_ty, format!("fcmp oeq {}, {}", a.typed(), c.v));
                        let ai = l.ir.emit(&it, format!("bitcast {} to {it}", a.typed()));
                        let ci = l.ir.emit(&it, format!("bitcast {} to {it}", c.typed()));
                        let bits = if b == BinaryOp::Min { "or" } else { "and" };
                        let zi = l.ir.emit(&it, format!("{bits} {}, {}", ai.typed(), ci.v));
                        let z = l.ir.emit(&wt, format!("bitcast {} to {wt}", zi.typed()));
                        let other = l.ir.emit(&wt, format!("select {}, {}, {}", eq.typed(), z.typed(), c.typed()));
                        l.ir.emit(&wt, format!("select {}, {}, {}", pick.typed(), a.typed(), other.typed()))
                    }
                    _ => Val::new(wt, "poison"),
                }
            }))
            .and_then(|v| {
                if v.v == "poison" {
                    Err(self.err(h, format!("`{}` does not apply to {t}", b.keyword())))
                } else {
                    Ok(v)
                }
            });
        }
        let simple = |op: &str| format!("{op} {}, {}", x.typed(), y.v);
        Ok(match b {
            BinaryOp::And => self.ir.emit(&ty, simple("and")),
            BinaryOp::Or => self.ir.emit(&ty, simple("or")),
            BinaryOp::Xor => self.ir.emit(&ty, simple("xor")),
            _ if s == ScalarType::Bool => return Err(self.err(h, format!("`{}` does not apply to {t}", b.keyword()))),
            BinaryOp::Add => self.ir.emit(&ty, simple("add")),
            BinaryOp::Sub => self.ir.emit(&ty, simple("sub")),
            BinaryOp::Mul => self.ir.emit(&ty, simple("mul")),
            BinaryOp::Div | BinaryOp::Rem => self.int_div(b, t, &x, &y),
            BinaryOp::Min | BinaryOp::Max => {
                let pred = match (b, signed(s)) {
                    (BinaryOp::Min, true) => "slt",
                    (BinaryOp::Min, false) => "ult",
                    (_, true) => "sgt",
                    (_, false) => "ugt",
                };
                let c = self.int_cmp(pred, t, &x, &y);
                self.ir.emit(&ty, format!("select {}, {}, {}", c.typed(), x.typed(), y.typed()))
            }
            BinaryOp::Shl | BinaryOp::Shr => {
                // The shift amount is taken modulo the bit width.
                let m = self.like(&y, t, &(bits(s) - 1).to_string());
                let amount = self.ir.emit(&ty, format!("and {}, {}", y.typed(), m.v));
                let op = match (b, signed(s)) {
                    (BinaryOp::Shl, _) => "shl",
                    (_, true) => "ashr",
                    (_, false) => "lshr",
                };
                self.ir.emit(&ty, format!("{op} {}, {}", x.typed(), amount.v))
            }
            BinaryOp::Pow => return Err(self.err(h, format!("`pow` does not apply to {t}"))),
        })
    }

    /// Integer `div`/`rem`: by zero gives 0; `MIN / -1` gives `MIN` and `MIN % -1` gives 0.
    fn int_div(&mut self, b: BinaryOp, t: Type, x: &Val, y: &Val) -> Val {
        let ty = x.ty.clone();
        let bt = self.bool_ty(t);
        let zero = self.like(y, t, "0");
        let one = self.like(y, t, "1");
        let is_zero = self.ir.emit(&bt, format!("icmp eq {}, {}", y.typed(), zero.v));
        if !signed(t.scalar) {
            let safe = self.ir.emit(&ty, format!("select {}, {}, {}", is_zero.typed(), one.typed(), y.typed()));
            let op = if b == BinaryOp::Div { "udiv" } else { "urem" };
            let q = self.ir.emit(&ty, format!("{op} {}, {}", x.typed(), safe.v));
            return self.ir.emit(&ty, format!("select {}, {}, {}", is_zero.typed(), zero.typed(), q.typed()));
        }
        let minus_one = self.like(y, t, "-1");
        let is_m1 = self.ir.emit(&bt, format!("icmp eq {}, {}", y.typed(), minus_one.v));
        let special = self.ir.emit(&bt, format!("or {}, {}", is_zero.typed(), is_m1.v));
        let safe = self.ir.emit(&ty, format!("select {}, {}, {}", special.typed(), one.typed(), y.typed()));
        let q = if b == BinaryOp::Div {
            self.ir.emit(&ty, format!("sdiv {}, {}", x.typed(), safe.v))
        } else {
            self.signed_rem(t, x, &safe)
        };
        // x / -1 is the wrapping negation; x % -1 is 0.
        let by_m1 =
            if b == BinaryOp::Div { self.ir.emit(&ty, format!("sub {}, {}", zero.typed(), x.v)) } else { zero.clone() };
        let q = self.ir.emit(&ty, format!("select {}, {}, {}", is_m1.typed(), by_m1.typed(), q.typed()));
        self.ir.emit(&ty, format!("select {}, {}, {}", is_zero.typed(), zero.typed(), q.typed()))
    }

    /// Signed remainder (`safe` is neither 0 nor -1) without `OpSRem`: the remainder of the
    /// magnitudes, with the dividend's sign. NVIDIA's driver (H200, 580.159.04) computes
    /// `OpSRem` on the unsigned-typed operands LLVM's SPIR-V backend gives every integer as
    /// the unsigned remainder (`-1 rem 6` gave 3; docs/codegen.md, docs/reliability.md "On the
    /// H200"). `|MIN|` wraps to `MIN`, which as unsigned is the right magnitude.
    fn signed_rem(&mut self, t: Type, x: &Val, safe: &Val) -> Val {
        let ty = x.ty.clone();
        let zero = self.like(x, t, "0");
        let magnitude = |g: &mut Self, v: &Val| -> (Val, Val) {
            let neg = g.int_cmp("slt", t, v, &zero);
            let minus = g.ir.emit(&ty, format!("sub {}, {}", zero.typed(), v.v));
            (neg.clone(), g.ir.emit(&ty, format!("select {}, {}, {}", neg.typed(), minus.typed(), v.typed())))
        };
        let (x_neg, ax) = magnitude(self, x);
        let (_, ay) = magnitude(self, safe);
        let r = self.ir.emit(&ty, format!("urem {}, {}", ax.typed(), ay.v));
        let minus_r = self.ir.emit(&ty, format!("sub {}, {}", zero.typed(), r.v));
        self.ir.emit(&ty, format!("select {}, {}, {}", x_neg.typed(), minus_r.typed(), r.typed()))
    }

    /// A comparison; floats are ordered except `ne` (true when either is NaN).
    pub fn compare(&mut self, c: CmpOp, t: Type, x: &Val, y: &Val) -> Val {
        let bt = self.bool_ty(t);
        if t.scalar.is_float() {
            let pred = match c {
                CmpOp::Eq => "oeq",
                CmpOp::Ne => "une",
                CmpOp::Lt => "olt",
                CmpOp::Le => "ole",
                CmpOp::Gt => "ogt",
                CmpOp::Ge => "oge",
            };
            return self.ir.emit(&bt, format!("fcmp {pred} {}, {}", x.typed(), y.v));
        }
        let sgn = signed(t.scalar);
        let pred = match c {
            CmpOp::Eq => "eq",
            CmpOp::Ne => "ne",
            CmpOp::Lt if sgn => "slt",
            CmpOp::Le if sgn => "sle",
            CmpOp::Gt if sgn => "sgt",
            CmpOp::Ge if sgn => "sge",
            CmpOp::Lt => "ult",
            CmpOp::Le => "ule",
            CmpOp::Gt => "ugt",
            CmpOp::Ge => "uge",
        };
        self.int_cmp(pred, t, x, y)
    }

    /// `icmp pred x, y` on integers of type `t`. A signed ordering on 64-bit operands is
    /// emitted as the unsigned one of the operands with their sign bits flipped: llvmpipe
    /// (Mesa 22.3.6) answers `OpSLessThan` and the other signed orderings wrongly for a
    /// sign-extended 32-bit value against a constant (`sext(-10) < 0` is false, on every
    /// negative lane at every -O level; docs/reliability.md, class E). LLVM's pipeline here
    /// has no InstCombine (target.rs), so the flip reaches the SPIR-V.
    pub(super) fn int_cmp(&mut self, pred: &str, t: Type, x: &Val, y: &Val) -> Val {
        let bt = self.bool_ty(t);
        let unsigned = match pred {
            "slt" => "ult",
            "sle" => "ule",
            "sgt" => "ugt",
            "sge" => "uge",
            _ => return self.ir.emit(&bt, format!("icmp {pred} {}, {}", x.typed(), y.v)),
        };
        if bits(t.scalar) != 64 {
            return self.ir.emit(&bt, format!("icmp {pred} {}, {}", x.typed(), y.v));
        }
        let min = self.like(x, t, &i64::MIN.to_string());
        let xf = self.ir.emit(&x.ty, format!("xor {}, {}", x.typed(), min.v));
        let yf = self.ir.emit(&y.ty, format!("xor {}, {}", y.typed(), min.v));
        self.ir.emit(&bt, format!("icmp {unsigned} {}, {}", xf.typed(), yf.v))
    }

    /// `x` (`double` or a vector of them) rounded to odd in `f32`: the nearest `f32` when
    /// exact, else the neighbour of `x` whose last significand bit is 1. `fptrunc` may give
    /// either neighbour (Vulkan does not require round to nearest without `RoundingModeRTE`);
    /// where it was inexact and even, the other neighbour is one step away from it toward `x`.
    fn f64_to_f32_odd(&mut self, x: &Val) -> Val {
        let ft = x.ty.replace("double", "float");
        let it = x.ty.replace("double", "i32");
        let bt = x.ty.replace("double", "i1");
        let k = |v: i64| Val::new(it.clone(), types::splat_int(&it, &v.to_string()));
        let r = self.ir.emit(&ft, format!("fptrunc {} to {ft}", x.typed()));
        let back = self.ir.emit(&x.ty, format!("fpext {} to {}", r.typed(), x.ty));
        // `one`: ordered and unequal, so a NaN is never "inexact".
        let inexact = self.ir.emit(&bt, format!("fcmp one {}, {}", back.typed(), x.v));
        let fabs = format!("llvm.fabs.{}", types::mangle(&x.ty));
        let mag_back = self.ir.call(&x.ty, &fabs, std::slice::from_ref(&back));
        let mag_x = self.ir.call(&x.ty, &fabs, std::slice::from_ref(x));
        let above = self.ir.emit(&bt, format!("fcmp ogt {}, {}", mag_back.typed(), mag_x.v));
        let bits = self.ir.emit(&it, format!("bitcast {} to {it}", r.typed()));
        let low = self.ir.emit(&it, format!("and {}, {}", bits.typed(), k(1).v));
        let even = self.ir.emit(&bt, format!("icmp eq {}, {}", low.typed(), k(0).v));
        let step = self.ir.emit(&bt, format!("and {}, {}", inexact.typed(), even.v));
        let delta = self.ir.emit(&it, format!("select {}, {}, {}", above.typed(), k(-1).typed(), k(1).typed()));
        let moved = self.ir.emit(&it, format!("add {}, {}", bits.typed(), delta.v));
        let odd = self.ir.emit(&it, format!("select {}, {}, {}", step.typed(), moved.typed(), bits.typed()));
        self.ir.emit(&ft, format!("bitcast {} to {ft}", odd.typed()))
    }

    /// Numeric conversion with Rust `as` semantics (float to integer saturates, NaN is 0).
    pub fn cast(&mut self, from: Type, to: Type, x: Val) -> Val {
        let (fs, ts) = (from.scalar, to.scalar);
        let tt = reg(to, self.width);
        let lanes = self.lanes_of(to);
        if fs == ts {
            return x;
        }
        if ts == ScalarType::Bool {
            let zero = self.like(&x, from, if fs.is_float() { "0x0" } else { "0" });
            let op = if fs.is_float() { "fcmp une" } else { "icmp ne" };
            return self.ir.emit(&tt, format!("{op} {}, {}", x.typed(), zero.v));
        }
        if !fs.is_float() {
            let wide = bits(ts) > bits(fs);
            let op = match (ts.is_float(), signed(fs), wide, bits(ts) == bits(fs)) {
                (true, true, _, _) => "sitofp",
                (true, false, _, _) => "uitofp",
                (false, _, _, true) => return Val::new(tt, x.v),
                (false, true, true, _) => "sext",
                (false, false, true, _) => "zext",
                (false, _, false, _) => "trunc",
            };
            return self.ir.emit(&tt, format!("{op} {} to {tt}", x.typed()));
        }
        if ts.is_float() {
            if bits(ts) > bits(fs) {
                return self.ir.emit(&tt, format!("fpext {} to {tt}", x.typed()));
            }
            if fs == ScalarType::F64 && ts == ScalarType::F32 {
                return self.ir.emit(&tt, format!("fptrunc {} to {tt}", x.typed()));
            }
            // To `f16`: from `f64` through `f32` rounded to odd, so that the one rounding to
            // `f16` after it is the correct one (`f32` has more than 11 + 2 bits).
            let x = if fs == ScalarType::F64 { self.f64_to_f32_odd(&x) } else { x };
            return self.truncate_to_f16(&x);
        }
        if fs == ScalarType::F16 {
            // Every f16 is exact in f32, so convert from there (one set of bounds).
            let wide = reg(from.with_scalar(ScalarType::F32), self.width);
            let x = self.ir.emit(&wide.clone(), format!("fpext {} to {wide}", x.typed()));
            return self.cast(from.with_scalar(ScalarType::F32), to, x);
        }
        // Float to integer: compare in the source type against the exact bounds 2^(n-1)
        // (signed) or 2^n (unsigned); NaN and values below the range give 0 or MIN.
        let bt = reg(from.with_scalar(ScalarType::Bool), self.width);
        let n = bits(ts);
        let (lo_f, hi_f) =
            if signed(ts) { (-(2f64.powi(n as i32 - 1)), 2f64.powi(n as i32 - 1)) } else { (0.0, 2f64.powi(n as i32)) };
        let fconst = |v: f64| types::f32_text(v as f32);
        let ints = |v: &str| Val::new(tt.clone(), types::splat_const(to, lanes, v));
        let (min_i, max_i) = match ts.int_range() {
            Some((lo, hi)) if signed(ts) => (lo.to_string(), hi.to_string()),
            _ => ("0".to_string(), "-1".to_string()),
        };
        let hi = Val::new(x.ty.clone(), types::splat_const(from, lanes, &fconst(hi_f)));
        let lo = Val::new(x.ty.clone(), types::splat_const(from, lanes, &fconst(lo_f)));
        let op = if signed(ts) { "fptosi" } else { "fptoui" };
        let raw = self.ir.emit(&tt, format!("{op} {} to {tt}", x.typed()));
        let too_big = self.ir.emit(&bt, format!("fcmp oge {}, {}", x.typed(), hi.v));
        let too_small =
            self.ir.emit(&bt, format!("fcmp {} {}, {}", if signed(ts) { "olt" } else { "ole" }, x.typed(), lo.v));
        let nan = self.ir.emit(&bt, format!("fcmp une {}, {}", x.typed(), x.v));
        let r = self.ir.emit(&tt, format!("select {}, {}, {}", too_big.typed(), ints(&max_i).typed(), raw.typed()));
        let r = self.ir.emit(&tt, format!("select {}, {}, {}", too_small.typed(), ints(&min_i).typed(), r.typed()));
        self.ir.emit(&tt, format!("select {}, {}, {}", nan.typed(), ints("0").typed(), r.typed()))
    }
}
