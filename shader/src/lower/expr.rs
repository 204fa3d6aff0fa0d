//! Expressions: each naga expression becomes IR ops (or a pointer, or a builtin vector).

use naga::{BinaryOperator as B, Expression as E, Handle, Literal, UnaryOperator as U};

use super::aggregate::{is_aggregate, Root};
use super::{FnCtx, Lowerer, Ptr, Val};
use crate::error::{Result, ShaderError};
use crate::types::{scalar, value_type, Ty, S};
use crate::Lang;

type H = Handle<naga::Expression>;

impl Lowerer<'_> {
    /// The IR meaning of expression `h`, lowering it (and the operands it needs) on first use
    /// in the current region.
    pub(crate) fn expr(&mut self, f: &mut FnCtx<'_>, h: H) -> Result<Val> {
        if let Some(v) = f.lookup(h) {
            return Ok(v.clone());
        }
        let v = self.expr_uncached(f, h)?;
        f.bind(h, v.clone());
        Ok(v)
    }

    /// Expression `h` as an IR value.
    pub(crate) fn value(&mut self, f: &mut FnCtx<'_>, h: H) -> Result<(String, Ty)> {
        let v = self.expr(f, h)?;
        self.ssa(&v, f.span(h))
    }

    fn expr_uncached(&mut self, f: &mut FnCtx<'_>, h: H) -> Result<Val> {
        let span = f.span(h);
        let Some(e) = f.func.expressions.try_get(h).ok() else {
            return Err(ShaderError::at(span, "internal: unknown expression", ""));
        };
        let ssa = |(n, t): (String, Ty)| Val::Ssa(n, t);
        Ok(match *e {
            E::Literal(lit) => ssa(self.literal(lit, span)?),
            E::Constant(c) => {
                let init = self.module.constants[c].init;
                if is_aggregate(&self.module.types[self.module.constants[c].ty].inner) {
                    self.global_tree(init, span)?
                } else {
                    ssa(self.global_const(init, span)?)
                }
            }
            E::ZeroValue(ty) if is_aggregate(&self.module.types[ty].inner) => self.zero_tree(ty, span)?,
            E::Compose { ty, ref components } if is_aggregate(&self.module.types[ty].inner) => {
                let mut parts = Vec::new();
                for &c in components {
                    parts.push(self.expr(f, c)?);
                }
                self.compose_tree(ty, parts, span)?
            }
            E::ZeroValue(ty) => {
                let t = value_type(&self.module.types[ty].inner).map_err(|what| unsupported_type(span, &what))?;
                Val::Zero(t)
            }
            E::Compose { ty, ref components } => {
                let t = value_type(&self.module.types[ty].inner).map_err(|what| {
                    ShaderError::at(span, format!("construction of a {what}"), "only vectors can be constructed")
                })?;
                let mut lanes = Vec::new();
                for &c in components {
                    let (n, ct) = self.value(f, c)?;
                    lanes.extend(self.lanes_of(&n, ct));
                }
                ssa(self.op(format!("vec {}", lanes.join(", ")), t))
            }
            E::Splat { size, value } => {
                let (n, t) = self.value(f, value)?;
                let vt = Ty { s: t.s, lanes: crate::types::lanes(size) };
                ssa(self.op(format!("splat {n} : {}", vt.text()), vt))
            }
            E::Swizzle { size, vector, pattern } => {
                let (n, t) = self.value(f, vector)?;
                let count = crate::types::lanes(size) as usize;
                let lanes: Vec<String> = pattern[..count]
                    .iter()
                    .map(|&c| self.op(format!("extract {n}, {}", c as u32), t.with_lanes1()).0)
                    .collect();
                ssa(self.op(format!("vec {}", lanes.join(", ")), Ty { s: t.s, lanes: count as u8 }))
            }
            E::FunctionArgument(i) => match f.args.get(i as usize) {
                Some(v) => v.clone(),
                None => return Err(ShaderError::at(span, "internal: unknown argument", "")),
            },
            E::GlobalVariable(g) => match self.globals.get(&(g.index() as u32)) {
                Some(v) => v.clone(),
                None => return Err(ShaderError::at(span, "a global variable that is not supported here", "")),
            },
            E::LocalVariable(l) => {
                let ty = f.func.local_variables[l].ty;
                if is_aggregate(&self.module.types[ty].inner) {
                    self.part_root(Root::Local(f.id, l.index() as u32), ty)
                } else {
                    Val::Ptr(Ptr::Var(super::VarKey::Local(f.id, l.index() as u32)))
                }
            }
            E::Access { base, index } if const_index(f.func, index).is_some() => {
                let i = const_index(f.func, index).unwrap_or_default();
                self.access_index(f, base, i, span)?
            }
            E::Access { base, index } => {
                let b = self.expr(f, base)?;
                let (i, it) = self.value(f, index)?;
                if !it.s.is_int() || it.lanes != 1 {
                    return Err(ShaderError::at(span, "an index that is not an integer scalar", ""));
                }
                match b {
                    Val::Ptr(Ptr::Mem { mem, elem, index: None, lane: None }) => {
                        Val::Ptr(Ptr::Mem { mem, elem, index: Some(i), lane: None })
                    }
                    Val::Ptr(p @ Ptr::Flat { .. }) => self.flat_access(p, i, it, span)?,
                    Val::Ptr(p @ Ptr::Part { .. }) => self.part_dynamic(p, i, it, span)?,
                    Val::Ptr(p @ Ptr::MemNd { .. }) => {
                        let i = self.index_as_u32(i, it);
                        self.nd_element(p, &i, span)?
                    }
                    v @ (Val::Struct(_) | Val::Ssa(..) | Val::Zero(_)) if it.s.is_int() => {
                        let i = self.index_as_u32(i, it);
                        self.pick(&v, &i, span)?
                    }
                    Val::FlatLoad(p, at, epoch) => {
                        let p = self.member_of_load(p, at, epoch, span)?;
                        let member = self.flat_access(p, i, it, span)?;
                        self.load_ptr(member, span)?
                    }
                    Val::MemArray(mem, elem, at, epoch) => {
                        self.member_of_load(Ptr::Mem { mem: mem.clone(), elem, index: None, lane: None }, at, epoch, span)?;
                        let i = self.index_as_u32(i, it);
                        self.load_ptr(Val::Ptr(Ptr::Mem { mem, elem, index: Some(i), lane: None }), span)?
                    }
                    _ => {
                        return Err(ShaderError::at(
                            span,
                            "indexing with a computed index into a vector or a value",
                            "index only storage buffers and work-group arrays with computed indices; use `.x`-style lanes for vectors",
                        ))
                    }
                }
            }
            E::AccessIndex { base, index } => self.access_index(f, base, index, span)?,
            E::Load { pointer } => self.load(f, pointer, span)?,
            E::Unary { op, expr } => {
                let (n, t) = self.value(f, expr)?;
                let name = match op {
                    U::Negate => "neg",
                    U::LogicalNot | U::BitwiseNot => "not",
                };
                ssa(self.op(format!("{name} {n}"), t))
            }
            E::Binary { op, left, right }
                if matches!(self.expr(f, left)?, Val::Struct(_)) || matches!(self.expr(f, right)?, Val::Struct(_)) =>
            {
                let (l, r) = (self.expr(f, left)?, self.expr(f, right)?);
                self.matrix_binary(op, l, r, span)?
            }
            E::Binary { op, left, right } => ssa(self.binary(f, op, left, right, span)?),
            E::Select { condition, accept, reject } => {
                let (c, _) = self.value(f, condition)?;
                let (a, t) = self.value(f, accept)?;
                let (r, _) = self.value(f, reject)?;
                ssa(self.op(format!("select {c}, {a}, {r}"), t))
            }
            E::Math { fun, arg, .. } if matches!(self.expr(f, arg)?, Val::Struct(_)) => {
                return Err(ShaderError::at(
                    span,
                    format!("`{}` of a matrix, struct or array", format!("{fun:?}").to_lowercase()),
                    "matrices support `+`, `-` and `*`; apply functions to their columns",
                ))
            }
            E::Math { fun, arg, arg1, arg2, .. } => ssa(self.math(f, fun, arg, arg1, arg2, span)?),
            E::As { expr, kind, convert } => {
                let (n, t) = self.value(f, expr)?;
                // `convert: None` is a bitcast (WGSL `bitcast<T>`, GLSL `floatBitsToUint`...):
                // the same width, read as `kind`.
                let (width, op) = match convert {
                    Some(width) => (width, "cast"),
                    None => (if matches!(t.s, S::I64 | S::U64) { 8 } else { 4 }, "bitcast"),
                };
                let s = scalar(naga::Scalar { kind, width }).map_err(|what| unsupported_type(span, &what))?;
                if s == t.s {
                    Val::Ssa(n, t)
                } else {
                    let to = t.with_scalar(s);
                    ssa(self.op(format!("{op} {n} to {}", to.text()), to))
                }
            }
            E::CallResult(_)
            | E::AtomicResult { .. }
            | E::WorkGroupUniformLoadResult { .. }
            | E::SubgroupBallotResult
            | E::SubgroupOperationResult { .. } => {
                return Err(ShaderError::at(span, "internal: a result used before its statement", ""))
            }
            E::ArrayLength(array) => ssa(self.array_length(f, array, span)?),
            E::Override(_) => return Err(ShaderError::at(span, "pipeline-overridable constants", "")),
            E::ImageSample { .. } | E::ImageLoad { .. } | E::ImageQuery { .. } => {
                return Err(ShaderError::at(span, "texture operations are not supported", ""))
            }
            E::Derivative { .. } => return Err(ShaderError::at(span, "derivatives are not supported", "")),
            E::Relational { fun, .. } => {
                return Err(ShaderError::at(
                    span,
                    format!("relational function `{fun:?}`",).to_lowercase() + " is not supported",
                    "",
                ))
            }
            _ => return Err(ShaderError::at(span, "this expression is not supported", "")),
        })
    }

    /// The lanes of an IR value as scalar values (itself, for a scalar).
    pub(crate) fn lanes_of(&mut self, n: &str, t: Ty) -> Vec<String> {
        if t.lanes == 1 {
            return vec![n.to_string()];
        }
        (0..t.lanes).map(|i| self.op(format!("extract {n}, {i}"), t.with_lanes1()).0).collect()
    }

    fn access_index(&mut self, f: &mut FnCtx<'_>, base: H, index: u32, span: naga::Span) -> Result<Val> {
        let b = self.expr(f, base)?;
        Ok(match b {
            Val::Ptr(Ptr::Mem { mem, elem, index: Some(i), lane: None }) if elem.lanes > 1 => {
                Val::Ptr(Ptr::Mem { mem, elem, index: Some(i), lane: Some(index) })
            }
            Val::Ptr(Ptr::Mem { mem, elem, index: None, lane: None }) => {
                let (i, _) = self.constant(&index.to_string(), Ty::U32);
                Val::Ptr(Ptr::Mem { mem, elem, index: Some(i), lane: None })
            }
            Val::Ptr(Ptr::MemStruct { mem, elem }) if index == 0 => {
                Val::Ptr(Ptr::Mem { mem, elem, index: None, lane: None })
            }
            Val::Ptr(p @ Ptr::Flat { .. }) => self.flat_access_index(p, index, span)?,
            Val::FlatLoad(p, at, epoch) => {
                let p = self.member_of_load(p, at, epoch, span)?;
                let member = self.flat_access_index(p, index, span)?;
                self.load_ptr(member, span)?
            }
            Val::MemArray(mem, elem, at, epoch) => {
                self.member_of_load(Ptr::Mem { mem: mem.clone(), elem, index: None, lane: None }, at, epoch, span)?;
                let (i, _) = self.constant(&index.to_string(), Ty::U32);
                self.load_ptr(Val::Ptr(Ptr::Mem { mem, elem, index: Some(i), lane: None }), span)?
            }
            Val::Ptr(Ptr::Block(g)) => match self.blocks.get(&g).and_then(|m| m.get(index as usize)) {
                Some(p) => Val::Ptr(p.clone()),
                None => return Err(ShaderError::at(span, "internal: unknown uniform member", "")),
            },
            Val::Ptr(Ptr::Var(k)) => Val::Ptr(Ptr::VarLane(k, index)),
            Val::Ptr(p @ Ptr::Part { .. }) => self.part_index(p, index, span)?,
            Val::Ptr(p @ Ptr::MemNd { .. }) => {
                let (i, _) = self.constant(&index.to_string(), Ty::U32);
                self.nd_element(p, &i, span)?
            }
            Val::Ptr(Ptr::Members(ms)) => match ms.get(index as usize) {
                Some(p) => Val::Ptr(p.clone()),
                None => return Err(ShaderError::at(span, "internal: unknown work-group struct member", "")),
            },
            Val::Ptr(Ptr::PartLeaf { root, leaf, dynamic, lane: None }) => {
                Val::Ptr(Ptr::PartLeaf { root, leaf, dynamic, lane: Some(index) })
            }
            // A lane of a uniform vector: the value never changes, so it is read here.
            Val::Ptr(Ptr::Scalar(n, t)) if t.lanes > 1 && u32::from(t.lanes) > index => {
                let (n, t) = self.op(format!("extract {n}, {index}"), t.with_lanes1());
                Val::Ptr(Ptr::Scalar(n, t))
            }
            Val::WholeLoad(at) => {
                return Err(ShaderError::at_or(
                    at,
                    span,
                    "a load of a whole array or struct",
                    "load single elements (`x[i]`) or scalar members",
                ))
            }
            Val::Struct(members) => match members.get(index as usize) {
                Some(v) => v.clone(),
                None => return Err(ShaderError::at(span, "internal: unknown struct member", "")),
            },
            Val::Builtin(b) => {
                let (n, t) = self.builtin_lane(b, index);
                Val::Ssa(n, t)
            }
            v @ (Val::Ssa(..) | Val::Zero(_)) => {
                let (n, t) = self.ssa(&v, span)?;
                if t.lanes == 1 {
                    return Err(ShaderError::at(span, "member access on a scalar", ""));
                }
                let (n, t) = self.op(format!("extract {n}, {index}"), t.with_lanes1());
                Val::Ssa(n, t)
            }
            _ => return Err(ShaderError::at(span, "this member or element access is not supported", "")),
        })
    }

    /// `arrayLength(&buf)`: the IR's `len` of the buffer; in a buffer of structs (flat.rs),
    /// the words past the array's offset divided by its stride in words.
    fn array_length(&mut self, f: &mut FnCtx<'_>, array: H, span: naga::Span) -> Result<(String, Ty)> {
        let refuse =
            || ShaderError::at(span, "arrayLength of this array", "pass the element count as a uniform scalar");
        match self.expr(f, array)? {
            Val::Ptr(Ptr::Mem { mem, index: None, lane: None, .. } | Ptr::MemStruct { mem, .. }) => {
                Ok(self.op(format!("len {mem}"), Ty::U32))
            }
            Val::Ptr(Ptr::Flat { mem, ty, dynamic: None, constant, .. }) => {
                let naga::TypeInner::Array { stride, size: naga::ArraySize::Dynamic, .. } = self.module.types[ty].inner
                else {
                    return Err(refuse());
                };
                let (n, _) = self.op(format!("len {mem}"), Ty::U32);
                let (c, _) = self.constant(&constant.to_string(), Ty::U32);
                let (s, _) = self.constant(&(stride / 4).max(1).to_string(), Ty::U32);
                let (words, _) = self.op(format!("sub {n}, {c}"), Ty::U32);
                Ok(self.op(format!("div {words}, {s}"), Ty::U32))
            }
            _ => Err(refuse()),
        }
    }

    fn load(&mut self, f: &mut FnCtx<'_>, pointer: H, span: naga::Span) -> Result<Val> {
        let p = self.expr(f, pointer)?;
        self.load_ptr(p, span)
    }

    /// A load through pointer `p`.
    fn load_ptr(&mut self, p: Val, span: naga::Span) -> Result<Val> {
        Ok(match p {
            Val::Ptr(Ptr::Var(k)) => match self.vars.get(&k) {
                Some(Val::Poisoned(at)) => {
                    let at = *at;
                    self.ssa(&Val::Poisoned(at), span)?;
                    return Err(ShaderError::at(span, "internal: poisoned", ""));
                }
                Some(v) => v.clone(),
                None => return Err(ShaderError::at(span, "a variable of an unsupported type", "")),
            },
            Val::Ptr(Ptr::VarLane(k, lane)) => {
                let v = self.vars.get(&k).cloned().unwrap_or(Val::Zero(Ty::U32));
                if let Val::Builtin(b) = v {
                    let (n, t) = self.builtin_lane(b, lane);
                    return Ok(Val::Ssa(n, t));
                }
                let (n, t) = self.ssa(&v, span)?;
                let (n, t) = self.op(format!("extract {n}, {lane}"), t.with_lanes1());
                Val::Ssa(n, t)
            }
            Val::Ptr(Ptr::Mem { mem, elem, index: Some(i), lane }) => {
                self.readable(&mem, span)?;
                let (n, t) = self.op(format!("load {mem}[{i}]"), elem);
                match lane {
                    None => Val::Ssa(n, t),
                    Some(l) => {
                        let (n, t) = self.op(format!("extract {n}, {l}"), t.with_lanes1());
                        Val::Ssa(n, t)
                    }
                }
            }
            Val::Ptr(Ptr::Scalar(n, t)) => Val::Ssa(n, t),
            Val::Ptr(p @ Ptr::Flat { .. }) => self.flat_load(&p, span)?,
            Val::Ptr(p @ (Ptr::Part { .. } | Ptr::PartLeaf { .. })) => self.part_load(p, span)?,
            Val::Ptr(Ptr::Block(g)) => {
                let members = self.blocks.get(&g).cloned().unwrap_or_default();
                Val::Struct(members.into_iter().map(|m| self.load_ptr(Val::Ptr(m), span)).collect::<Result<_>>()?)
            }
            Val::Ptr(Ptr::Mem { mem, elem, index: None, lane: None }) => Val::MemArray(mem, elem, span, self.epoch()),
            Val::Ptr(Ptr::Mem { index: None, .. } | Ptr::MemStruct { .. }) => Val::WholeLoad(span),
            _ => {
                return Err(ShaderError::at(
                    span,
                    "a load of a whole array or struct",
                    "load single elements (`x[i]`) or scalar members",
                ))
            }
        })
    }

    /// Two operands with one shape: a scalar next to a vector is splatted.
    pub(crate) fn unify(&mut self, a: (String, Ty), b: (String, Ty)) -> ((String, Ty), (String, Ty)) {
        let splat = |l: &mut Self, (n, t): (String, Ty), lanes: u8| {
            let vt = Ty { s: t.s, lanes };
            l.op(format!("splat {n} : {}", vt.text()), vt)
        };
        if a.1.lanes == 1 && b.1.lanes > 1 {
            let l = b.1.lanes;
            (splat(self, a, l), b)
        } else if b.1.lanes == 1 && a.1.lanes > 1 {
            let l = a.1.lanes;
            (a, splat(self, b, l))
        } else {
            (a, b)
        }
    }

    fn binary(&mut self, f: &mut FnCtx<'_>, op: B, left: H, right: H, span: naga::Span) -> Result<(String, Ty)> {
        let l = self.value(f, left)?;
        let r = self.value(f, right)?;
        let ((a, t), (mut b, bt)) = self.unify(l, r);
        if matches!(op, B::ShiftLeft | B::ShiftRight) && bt.s != t.s {
            // WGSL shift amounts are u32 whatever the shifted type; the IR wants one type.
            // Both take the amount modulo the bit width, so reinterpreting it keeps the result.
            b = self.op(format!("cast {b} to {}", t.text()), t).0;
        }
        let name = match op {
            B::Add => "add",
            B::Subtract => "sub",
            B::Multiply => "mul",
            B::Divide => "div",
            B::Modulo => "rem",
            B::Equal => "eq",
            B::NotEqual => "ne",
            B::Less => "lt",
            B::LessEqual => "le",
            B::Greater => "gt",
            B::GreaterEqual => "ge",
            B::And | B::LogicalAnd => "and",
            B::ExclusiveOr => "xor",
            B::InclusiveOr | B::LogicalOr => "or",
            B::ShiftLeft => "shl",
            B::ShiftRight => "shr",
        };
        let rt = match op {
            B::Equal | B::NotEqual | B::Less | B::LessEqual | B::Greater | B::GreaterEqual => {
                Ty { s: S::Bool, lanes: t.lanes }
            }
            _ => t,
        };
        if t.lanes > 1 && bt.lanes > 1 && t.lanes != bt.lanes {
            return Err(ShaderError::at(span, "operands of different vector sizes", ""));
        }
        if op == B::Modulo && t.s == S::F32 && self.lang == Lang::Wgsl {
            // WGSL defines float `%` as e1 - e2 * trunc(e1 / e2), rounding each step; the
            // IR's `rem` is the exact fmod.
            let (q, _) = self.op(format!("div {a}, {b}"), t);
            let tq = self.trunc(&q, t);
            let (m, _) = self.op(format!("mul {b}, {tq}"), t);
            return Ok(self.op(format!("sub {a}, {m}"), t));
        }
        let result = self.op(format!("{name} {a}, {b}"), rt);
        if op == B::Divide && t.s.is_int() && self.lang == Lang::Wgsl {
            // WGSL: an integer divided by zero is the dividend; the IR gives 0.
            let (zero, _) = self.constant("0", t);
            let (is_zero, _) = self.op(format!("eq {b}, {zero}"), Ty { s: S::Bool, lanes: t.lanes });
            return Ok(self.op(format!("select {is_zero}, {a}, {}", result.0), t));
        }
        Ok(result)
    }

    fn literal(&mut self, lit: Literal, span: naga::Span) -> Result<(String, Ty)> {
        let (text, s) = match lit {
            Literal::F32(v) => (float_text(v), S::F32),
            Literal::U32(v) => (v.to_string(), S::U32),
            Literal::I32(v) => (v.to_string(), S::I32),
            Literal::U64(v) => (v.to_string(), S::U64),
            Literal::I64(v) => (v.to_string(), S::I64),
            Literal::Bool(v) => (v.to_string(), S::Bool),
            Literal::F64(_) => return Err(unsupported_type(span, "f64")),
            Literal::F16(_) => return Err(unsupported_type(span, "f16")),
            _ => return Err(ShaderError::at(span, "an abstract literal", "")),
        };
        Ok(self.constant(&text, Ty::scalar(s)))
    }

    /// A module-level constant expression (the initializer of a `const`).
    pub(crate) fn global_const(&mut self, h: H, span: naga::Span) -> Result<(String, Ty)> {
        let Ok(e) = self.module.global_expressions.try_get(h) else {
            return Err(ShaderError::at(span, "internal: unknown constant", ""));
        };
        match *e {
            E::Literal(lit) => self.literal(lit, span),
            E::Constant(c) => self.global_const(self.module.constants[c].init, span),
            E::ZeroValue(ty) => {
                let t = value_type(&self.module.types[ty].inner).map_err(|what| unsupported_type(span, &what))?;
                Ok(self.constant(t.s.zero(), t))
            }
            E::Compose { ty, ref components } => {
                let t = value_type(&self.module.types[ty].inner).map_err(|what| unsupported_type(span, &what))?;
                let mut lanes = Vec::new();
                for &c in components {
                    let (n, ct) = self.global_const(c, span)?;
                    if ct.lanes != 1 {
                        return Err(ShaderError::at(span, "a constant vector built from vectors", ""));
                    }
                    lanes.push(n);
                }
                Ok(self.interned(format!("vec {}", lanes.join(", ")), t))
            }
            E::Splat { size, value } => {
                let (n, t) = self.global_const(value, span)?;
                let vt = Ty { s: t.s, lanes: crate::types::lanes(size) };
                Ok(self.interned(format!("splat {n} : {}", vt.text()), vt))
            }
            _ => Err(ShaderError::at(span, "this constant expression is not supported", "")),
        }
    }
}

/// An `f32` as IR text that reads back to the same bits (the IR reads floats as `f64` and
/// rounds to `f32`; an `f32` widened to `f64` is exact, so its shortest `f64` text is too).
fn float_text(v: f32) -> String {
    if v.is_nan() {
        "nan".to_string()
    } else {
        format!("{:?}", f64::from(v))
    }
}

/// The value of an index expression that is a constant (naga keeps `a[1]` as an `Access`
/// with a literal index), so that it is followed like a member access.
fn const_index(func: &naga::Function, h: H) -> Option<u32> {
    match func.expressions.try_get(h).ok()? {
        E::Literal(Literal::U32(v)) => Some(*v),
        E::Literal(Literal::I32(v)) => u32::try_from(*v).ok(),
        _ => None,
    }
}

pub(crate) fn unsupported_type(span: naga::Span, what: &str) -> ShaderError {
    ShaderError::at(
        span,
        format!("type {what} is not supported"),
        "use bool, i32, u32, i64, u64, f32 or vectors of them",
    )
}
