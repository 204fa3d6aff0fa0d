//! Recognising a contraction: a kernel node whose work-item `(i, j)` of a 2-D `range` (or
//! `nd_range` without offset) computes `c[i, j] = init ⊕ a[i, 0]·b[0, j] ⊕ ... ⊕ a[i, T-1]·b[T-1, j]`
//! with one `for`.
//!
//! The kernel is evaluated symbolically with the node's constant arguments: every integer
//! value must be an affine form in the two global ids and the loop's trip counter, the loop
//! body must be exactly two `f32` loads and one `fma` (or `mul` then `add`) into the one
//! carried value, and after the loop the result is stored once. Anything else (another
//! store, a cast, a non-affine index, a second loop) means "not a contraction" and the node is
//! left alone, so the match is exact rather than heuristic. A comparison is allowed outside
//! the loop only where it has one value over the whole launch (a bounds guard such as
//! `row < m` with `m` the launch's row count, how WGSL and GLSL matmuls are written): an `if`
//! on it is then walked into its taken branch alone.
//! Indices are checked to stay in `[0, 2^32)` over the whole launch, so the kernel's
//! wrapping `u32` arithmetic equals the affine form everywhere.

use cmdgraph_ir::graph::{Arg, ArgValue, KernelCommand, Launch};
use cmdgraph_ir::kernel::{
    BinaryOp, Body, Builtin, CmpOp, MemBase, OpKind, Param, ParamType, Region, UnaryOp, ValueDef, ValueType,
};
use cmdgraph_ir::types::LitValue;
use cmdgraph_ir::{Handle, Kernel, KernelBody, ScalarType, Type};
use std::collections::HashMap;

type V = Handle<cmdgraph_ir::kernel::Value>;

/// An affine form `c + g0·gid0 + g1·gid1 + t·trip` over the integers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Affine {
    /// Constant term.
    pub c: i128,
    /// Coefficient of `global_id 0`.
    pub g0: i128,
    /// Coefficient of `global_id 1`.
    pub g1: i128,
    /// Coefficient of the loop's trip counter (0, 1, ..., T-1).
    pub t: i128,
}

impl Affine {
    fn constant(c: i128) -> Affine {
        Affine { c, ..Affine::default() }
    }
    fn add(self, o: Affine) -> Affine {
        Affine { c: self.c + o.c, g0: self.g0 + o.g0, g1: self.g1 + o.g1, t: self.t + o.t }
    }
    fn scale(self, k: i128) -> Affine {
        Affine { c: self.c * k, g0: self.g0 * k, g1: self.g1 * k, t: self.t * k }
    }
    fn as_constant(self) -> Option<i128> {
        (self.g0 == 0 && self.g1 == 0 && self.t == 0).then_some(self.c)
    }
    /// The least and greatest value over `gid0 < n0`, `gid1 < n1`, `trip < trips`.
    fn range(self, n0: u64, n1: u64, trips: u64) -> (i128, i128) {
        let mut lo = self.c;
        let mut hi = self.c;
        for (coef, n) in [(self.g0, n0), (self.g1, n1), (self.t, trips)] {
            let end = coef * (i128::from(n) - 1);
            lo += end.min(0);
            hi += end.max(0);
        }
        (lo, hi)
    }
}

/// How each step combines the product with the running value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combine {
    /// `fma a, b, acc` (one rounding where the device fuses; docs/ir.md).
    Fma,
    /// `mul a, b` then `add` with the running value (two roundings).
    MulAdd,
}

/// One operand access: which kernel parameter, and its element index as an affine form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// Parameter index.
    pub param: u32,
    /// Element index.
    pub index: Affine,
}

/// A recognised contraction over a 2-D launch of `n0 × n1` work-items.
#[derive(Clone, Debug, PartialEq)]
pub struct Contraction {
    /// The operand that does not depend on `gid0` (the "row" operand when `gid1` is the row).
    pub a: Access,
    /// The operand that does not depend on `gid1`.
    pub b: Access,
    /// The stored result.
    pub c: Access,
    /// Launch size in dimension 0.
    pub n0: u64,
    /// Launch size in dimension 1.
    pub n1: u64,
    /// Loop trip count.
    pub trips: u64,
    /// Initial value of the running value (finite `f32`).
    pub init: f32,
    /// The step.
    pub combine: Combine,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Sym {
    Int(Affine),
    /// A `bool` with one value over the whole launch.
    Bool(bool),
    F32(f32),
    Load(Access),
    Running,
    Product,
    Step,
    Result,
}

/// The contraction `cmd` computes, if it is one.
pub fn recognise(kernel: &Kernel, cmd: &KernelCommand) -> Option<Contraction> {
    let KernelBody::Ir(body) = &kernel.body else { return None };
    let dims = match &cmd.launch {
        Launch::Range(dims) => dims,
        Launch::NdRange { global, offset, .. } if offset.iter().all(|&o| o == 0) => global,
        _ => return None,
    };
    let [n0, n1] = dims[..] else { return None };
    let mut m = Matcher {
        body,
        params: &kernel.params,
        syms: HashMap::new(),
        loop_seen: false,
        found: None,
        stored: None,
        n: (n0, n1),
    };
    for (i, p) in kernel.params.iter().enumerate() {
        let v = body.values.iter().find(|(_, v)| v.def == ValueDef::Param(i as u32)).map(|(h, _)| h);
        if let (ParamType::Value(Type { scalar: ScalarType::U32, lanes: 1 }), Some(v)) = (p.ty, v) {
            let Some(Arg::Value(ArgValue::Scalar(lit))) = cmd.args.get(i) else { return None };
            let LitValue::Int(x) = lit.value else { return None };
            m.syms.insert(v, Sym::Int(Affine::constant(x)));
        }
    }
    m.top(&body.entry)?;
    let (a, b, init, combine, trips) = m.found?;
    let c = m.stored?;
    // Which load is indexed by which id: `a` must not move with gid0, `b` not with gid1.
    let (a, b) = match (a.index.g0 == 0, b.index.g1 == 0, b.index.g0 == 0, a.index.g1 == 0) {
        (true, true, _, _) => (a, b),
        (_, _, true, true) => (b, a),
        _ => return None,
    };
    if c.index.t != 0 || [a.param, b.param].contains(&c.param) {
        return None;
    }
    for acc in [a, b, c] {
        let (lo, hi) = acc.index.range(n0, n1, trips);
        if lo < 0 || hi > i128::from(u32::MAX) {
            return None;
        }
    }
    Some(Contraction { a, b, c, n0, n1, trips, init, combine })
}

struct Matcher<'a> {
    body: &'a Body,
    params: &'a [Param],
    syms: HashMap<V, Sym>,
    loop_seen: bool,
    /// (a, b, init, combine, trips) of the loop.
    found: Option<(Access, Access, f32, Combine, u64)>,
    stored: Option<Access>,
    n: (u64, u64),
}

impl Matcher<'_> {
    fn int(&self, v: V) -> Option<Affine> {
        match self.syms.get(&v)? {
            Sym::Int(a) => Some(*a),
            _ => None,
        }
    }

    fn is_u32(&self, v: V) -> bool {
        self.body.values.try_get(v).is_some_and(|x| x.ty == ValueType::Data(Type::U32))
    }

    fn set(&mut self, op: &cmdgraph_ir::kernel::Op, s: Sym) -> Option<()> {
        let [r] = op.results[..] else { return None };
        self.syms.insert(r, s);
        Some(())
    }

    /// Pure integer ops shared by the top level and the loop body.
    fn integer(&mut self, op: &cmdgraph_ir::kernel::Op) -> Option<()> {
        let s = match &op.kind {
            OpKind::Const(lit, ty) if *ty == Type::U32 => match lit.value {
                LitValue::Int(x) => Sym::Int(Affine::constant(x)),
                _ => return None,
            },
            OpKind::Const(lit, ty) if *ty == Type::F32 => match lit.value {
                LitValue::Float(x) if (x as f32).is_finite() => Sym::F32(x as f32),
                LitValue::Int(x) => Sym::F32(x as f32),
                _ => return None,
            },
            OpKind::Builtin(Builtin::GlobalId, 0) => Sym::Int(Affine { g0: 1, ..Affine::default() }),
            OpKind::Builtin(Builtin::GlobalId, 1) => Sym::Int(Affine { g1: 1, ..Affine::default() }),
            OpKind::Builtin(Builtin::GlobalRange, 0) => Sym::Int(Affine::constant(i128::from(self.n.0))),
            OpKind::Builtin(Builtin::GlobalRange, 1) => Sym::Int(Affine::constant(i128::from(self.n.1))),
            OpKind::Binary(b, x, y) if self.is_u32(*x) => {
                let (x, y) = (self.int(*x)?, self.int(*y)?);
                Sym::Int(match b {
                    BinaryOp::Add => x.add(y),
                    BinaryOp::Sub => x.add(y.scale(-1)),
                    BinaryOp::Mul => match (x.as_constant(), y.as_constant()) {
                        (Some(k), _) => y.scale(k),
                        (_, Some(k)) => x.scale(k),
                        _ => return None,
                    },
                    BinaryOp::Shl => x.scale(1i128 << (y.as_constant()? & 31)),
                    _ => return None,
                })
            }
            _ => return None,
        };
        self.set(op, s)
    }

    /// A `bool` op outside the loop whose value is the same for every work-item of the
    /// launch, or `None`.
    fn boolean(&self, kind: &OpKind) -> Option<Sym> {
        let known = |v: &V| match self.syms.get(v) {
            Some(Sym::Bool(b)) => Some(*b),
            _ => None,
        };
        let b = match kind {
            OpKind::Const(lit, ty) if *ty == Type::BOOL => match lit.value {
                LitValue::Bool(b) => b,
                _ => return None,
            },
            OpKind::Cmp(cmp, x, y) if self.is_u32(*x) => {
                // x - y over the launch: one sign everywhere, or no single answer.
                let d = self.int(*x)?.add(self.int(*y)?.scale(-1));
                if d.t != 0 {
                    return None;
                }
                let (lo, hi) = d.range(self.n.0, self.n.1, 1);
                // Each predicate is monotone in d: its ends decide it.
                let always = |f: fn(i128) -> bool| (f(lo) == f(hi)).then(|| f(lo));
                match cmp {
                    CmpOp::Lt => always(|v| v < 0)?,
                    CmpOp::Le => always(|v| v <= 0)?,
                    CmpOp::Gt => always(|v| v > 0)?,
                    CmpOp::Ge => always(|v| v >= 0)?,
                    CmpOp::Eq if lo == 0 && hi == 0 => true,
                    CmpOp::Ne if lo == 0 && hi == 0 => false,
                    CmpOp::Eq if lo > 0 || hi < 0 => false,
                    CmpOp::Ne if lo > 0 || hi < 0 => true,
                    _ => return None,
                }
            }
            OpKind::Unary(UnaryOp::Not, x) => !known(x)?,
            OpKind::Binary(BinaryOp::And, x, y) => known(x)? && known(y)?,
            OpKind::Binary(BinaryOp::Or, x, y) => known(x)? || known(y)?,
            _ => return None,
        };
        Some(Sym::Bool(b))
    }

    /// Walks the ops of a region outside the loop; returns what its `yield` gives (nothing
    /// for the kernel's entry region).
    fn top(&mut self, region: &Region) -> Option<Vec<Sym>> {
        for &h in &region.ops {
            let op = self.body.ops.try_get(h)?;
            if let Some(b) = self.boolean(&op.kind) {
                self.set(op, b)?;
                continue;
            }
            match &op.kind {
                OpKind::If { cond, then_region, else_region, .. } => {
                    let Some(Sym::Bool(taken)) = self.syms.get(cond).copied() else { return None };
                    // Every work-item takes the same branch: the other one is dead code.
                    let yielded = match (taken, else_region) {
                        (true, _) => self.top(then_region)?,
                        (false, Some(r)) => self.top(r)?,
                        (false, None) => Vec::new(),
                    };
                    if yielded.len() != op.results.len() {
                        return None;
                    }
                    for (&r, s) in op.results.iter().zip(yielded) {
                        self.syms.insert(r, s);
                    }
                }
                OpKind::Yield(vs) => return vs.iter().map(|v| self.syms.get(v).copied()).collect(),
                OpKind::For { var, lo, hi, step, carried, body } if !self.loop_seen => {
                    self.loop_seen = true;
                    let (lo, hi, step) =
                        (self.int(*lo)?.as_constant()?, self.int(*hi)?.as_constant()?, self.int(*step)?.as_constant()?);
                    if step <= 0 || !self.is_u32(*var) || hi < lo {
                        return None;
                    }
                    let trips = u64::try_from((hi - lo + step - 1) / step).ok()?;
                    self.syms.insert(*var, Sym::Int(Affine { c: lo, t: step, ..Affine::default() }));
                    let [(running, init)] = carried[..] else { return None };
                    let Some(Sym::F32(init)) = self.syms.get(&init).copied() else { return None };
                    self.syms.insert(running, Sym::Running);
                    let (a, b, combine) = self.loop_body(body)?;
                    if trips == 0 {
                        return None;
                    }
                    self.found = Some((a, b, init, combine, trips));
                    self.set(op, Sym::Result)?;
                }
                OpKind::Store { mem: MemBase::Value(p), index, value } if self.stored.is_none() => {
                    if self.syms.get(value) != Some(&Sym::Result) {
                        return None;
                    }
                    self.stored = Some(Access { param: self.buffer(*p)?, index: self.int(*index)? });
                }
                _ => self.integer(op)?,
            }
        }
        Some(Vec::new())
    }

    /// The parameter index of buffer `p` with element `f32` (access modes are the
    /// verifier's business: the tiled kernel keeps the parameters as they are).
    fn buffer(&self, p: V) -> Option<u32> {
        let ValueDef::Param(i) = self.body.values.try_get(p)?.def else { return None };
        match self.params.get(i as usize)?.ty {
            ParamType::Buffer { elem, .. } if elem == Type::F32 => Some(i),
            _ => None,
        }
    }

    fn loop_body(&mut self, region: &Region) -> Option<(Access, Access, Combine)> {
        let mut loads = Vec::new();
        let mut step = None;
        for &h in &region.ops {
            let op = self.body.ops.try_get(h)?;
            match &op.kind {
                OpKind::Load { mem: MemBase::Value(p), index } if loads.len() < 2 => {
                    let [r] = op.results[..] else { return None };
                    if self.body.values.try_get(r)?.ty != ValueType::Data(Type::F32) {
                        return None;
                    }
                    let acc = Access { param: self.buffer(*p)?, index: self.int(*index)? };
                    loads.push(acc);
                    self.syms.insert(r, Sym::Load(acc));
                }
                OpKind::Fma(x, y, z) if step.is_none() => {
                    let ok = self.is_loads(*x, *y) && self.syms.get(z) == Some(&Sym::Running);
                    if !ok {
                        return None;
                    }
                    step = Some(Combine::Fma);
                    self.set(op, Sym::Step)?;
                }
                OpKind::Binary(BinaryOp::Mul, x, y) if step.is_none() && self.is_loads(*x, *y) => {
                    self.set(op, Sym::Product)?;
                }
                OpKind::Binary(BinaryOp::Add, x, y) if step.is_none() && !self.is_u32(*x) => {
                    let pair = (self.syms.get(x).copied(), self.syms.get(y).copied());
                    if !matches!(
                        pair,
                        (Some(Sym::Product), Some(Sym::Running)) | (Some(Sym::Running), Some(Sym::Product))
                    ) {
                        return None;
                    }
                    step = Some(Combine::MulAdd);
                    self.set(op, Sym::Step)?;
                }
                OpKind::Yield(vs) => {
                    let [v] = vs[..] else { return None };
                    if self.syms.get(&v) != Some(&Sym::Step) {
                        return None;
                    }
                }
                _ => self.integer(op)?,
            }
        }
        let [a, b] = loads[..] else { return None };
        // The product's loads must be the two loads (each used once, in either order).
        Some((a, b, step?))
    }

    fn is_loads(&self, x: V, y: V) -> bool {
        matches!((self.syms.get(&x), self.syms.get(&y)), (Some(Sym::Load(p)), Some(Sym::Load(q))) if p != q || x != y)
    }
}
