//! Op typing: the operand rules of every op of the kernel language (docs/ir.md, Ops) and
//! the types of the results it defines. Nested `for`/`if` regions are walked from here.

use super::ctx::check_type;
use super::error::VerifyError;
use super::kernel::{op_keyword, RegionCtx, Walker};
use super::memory::literal_problem;
use crate::kernel::{atomic_scalar, AtomicOp, BinaryOp, CmpOp, MemBase, OpKind, UnaryOp, ValueType, V};
use crate::module::MemoryKind;
use crate::span::Span;
use crate::types::{Access, ScalarType, Type};

/// A class of scalar types an operand must belong to.
#[derive(Clone, Copy)]
enum Class {
    Float,
    Integer,
    IntegerOrBool,
    Numeric,
    Any,
}

impl Class {
    fn admits(self, s: ScalarType) -> bool {
        match self {
            Class::Float => s.is_float(),
            Class::Integer => s.is_integer(),
            Class::IntegerOrBool => s.is_integer() || s == ScalarType::Bool,
            Class::Numeric => s != ScalarType::Bool,
            Class::Any => true,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Class::Float => "floating-point operands",
            Class::Integer => "integer operands",
            Class::IntegerOrBool => "integer or bool operands",
            Class::Numeric => "numeric (non-bool) operands",
            Class::Any => "operands of any type",
        }
    }
}

fn unary_class(u: UnaryOp) -> Class {
    match u {
        UnaryOp::Not => Class::IntegerOrBool,
        UnaryOp::Neg | UnaryOp::Abs => Class::Numeric,
        _ => Class::Float,
    }
}

fn binary_class(b: BinaryOp) -> Class {
    match b {
        BinaryOp::Pow => Class::Float,
        BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => Class::IntegerOrBool,
        BinaryOp::Shl | BinaryOp::Shr => Class::Integer,
        _ => Class::Numeric,
    }
}

/// The memory of a load, store or atomic: element type, access (`None`: any), name.
struct Mem {
    elem: Type,
    access: Option<Access>,
    name: String,
}

impl Walker<'_> {
    /// Checks an op's operands (walking its regions) and returns its result types, one per
    /// result it defines (`None` where a type cannot be known because of another error).
    pub(super) fn check_kind(
        &mut self,
        kind: &OpKind,
        ctx: &RegionCtx,
        last: bool,
        span: Span,
    ) -> Vec<Option<ValueType>> {
        let keyword = op_keyword(kind);
        let data = |t: Option<Type>| vec![t.map(ValueType::Data)];
        match kind {
            OpKind::Const(lit, ty) => {
                if check_type(*ty, span, self.errors) {
                    if let Some(problem) = literal_problem(lit, ty.scalar) {
                        self.errors.push(VerifyError::ConstLiteral { problem, span });
                    }
                }
                data(Some(*ty))
            }
            OpKind::Builtin(b, dim) => {
                if *dim > 2 {
                    self.errors.push(VerifyError::BuiltinDim { builtin: b.keyword(), dim: *dim, span });
                }
                data(Some(Type::U32))
            }
            OpKind::Unary(u, a) => {
                let t = self.data(*a, span);
                data(t.inspect(|t| self.class(keyword, unary_class(*u), *t, span)))
            }
            OpKind::Binary(b, x, y) => data(self.same(keyword, &[*x, *y], binary_class(*b), span)),
            OpKind::Fma(a, b, c) => data(self.same(keyword, &[*a, *b, *c], Class::Float, span)),
            OpKind::Cmp(c, x, y) => {
                let class = if matches!(c, CmpOp::Eq | CmpOp::Ne) { Class::Any } else { Class::Numeric };
                data(self.same(keyword, &[*x, *y], class, span).map(|t| t.with_scalar(ScalarType::Bool)))
            }
            OpKind::Select(c, a, b) => {
                let tc = self.data(*c, span);
                let t = self.same(keyword, &[*a, *b], Class::Any, span);
                if let (Some(tc), Some(t)) = (tc, t) {
                    if tc.scalar != ScalarType::Bool || (tc.lanes != 1 && tc.lanes != t.lanes) {
                        self.errors.push(VerifyError::SelectCondition {
                            found: tc.to_string(),
                            operands: t.to_string(),
                            span,
                        });
                    }
                }
                data(t)
            }
            OpKind::Cast(a, to) => {
                let from = self.data(*a, span);
                if check_type(*to, span, self.errors) {
                    if let Some(from) = from.filter(|f| f.lanes != to.lanes) {
                        self.errors.push(VerifyError::CastLanes { from: from.to_string(), to: to.to_string(), span });
                    }
                }
                data(Some(*to))
            }
            OpKind::Bitcast(a, to) => {
                let from = self.data(*a, span);
                if check_type(*to, span, self.errors) {
                    if let Some(from) = from {
                        let problem = if from.lanes != to.lanes {
                            Some("changes the lane count")
                        } else if from.scalar == ScalarType::Bool || to.scalar == ScalarType::Bool {
                            Some("has no bits to reinterpret in `bool`")
                        } else if from.scalar.size() != to.scalar.size() {
                            Some("changes the scalar width")
                        } else {
                            None
                        };
                        if let Some(problem) = problem {
                            self.errors.push(VerifyError::Bitcast {
                                from: from.to_string(),
                                to: to.to_string(),
                                problem,
                                span,
                            });
                        }
                    }
                }
                data(Some(*to))
            }
            OpKind::Splat(a, to) => {
                let from = self.data(*a, span);
                if check_type(*to, span, self.errors) {
                    let problem = if !to.is_vector() {
                        Some(format!("the result type {to} is not a vector"))
                    } else {
                        match from {
                            Some(f) if f.is_vector() => Some(format!("the operand has vector type {f}")),
                            Some(f) if f.scalar != to.scalar => {
                                Some(format!("the operand is {f} but the lanes are {}", to.scalar))
                            }
                            _ => None,
                        }
                    };
                    if let Some(problem) = problem {
                        self.errors.push(VerifyError::VectorShape { op: keyword, problem, span });
                    }
                }
                data(Some(*to))
            }
            OpKind::Extract(v, lane) => {
                let t = self.vector_lane(keyword, *v, *lane, span);
                data(t.map(|t| Type::scalar(t.scalar)))
            }
            OpKind::Insert(v, lane, s) => {
                let t = self.vector_lane(keyword, *v, *lane, span);
                let ts = self.data(*s, span);
                if let (Some(t), Some(ts)) = (t, ts) {
                    if ts != Type::scalar(t.scalar) {
                        self.errors.push(VerifyError::VectorShape {
                            op: keyword,
                            problem: format!("the inserted value is {ts} but the lanes are {}", t.scalar),
                            span,
                        });
                    }
                }
                data(t)
            }
            OpKind::Construct(parts) => data(self.construct(keyword, parts, span)),
            OpKind::Len(mem) => {
                // Any memory has a count, whatever it may do with its elements.
                self.memory(*mem, span);
                data(Some(Type::U32))
            }
            OpKind::Load { mem, index } => {
                let m = self.memory(*mem, span);
                self.index(*index, span);
                let m = m.inspect(|m| self.access(keyword, m, Access::reads, span));
                data(m.map(|m| m.elem))
            }
            OpKind::Store { mem, index, value } => {
                let m = self.memory(*mem, span);
                self.index(*index, span);
                let tv = self.data(*value, span);
                if let Some(m) = m {
                    self.access(keyword, &m, Access::writes, span);
                    self.value_matches(keyword, &m, tv, span);
                }
                Vec::new()
            }
            OpKind::Atomic { op: aop, mem, index, value, expected } => {
                let m = self.memory(*mem, span);
                self.index(*index, span);
                let tv = self.data(*value, span);
                let te = expected.map(|e| self.data(e, span));
                if expected.is_some() != (*aop == AtomicOp::CompareExchange) {
                    self.errors.push(VerifyError::AtomicOperands { op: aop.keyword(), span });
                }
                if let Some(m) = &m {
                    if m.elem.lanes != 1 || !atomic_scalar(*aop, m.elem.scalar) {
                        self.errors.push(VerifyError::AtomicType { op: aop.keyword(), ty: m.elem.to_string(), span });
                    }
                    if let Some(a) = m.access.filter(|a| *a != Access::ReadWrite) {
                        self.errors.push(VerifyError::AtomicAccess { name: m.name.clone(), access: a.keyword(), span });
                    }
                    self.value_matches(keyword, m, tv, span);
                    if let Some(te) = te {
                        self.value_matches(keyword, m, te, span);
                    }
                }
                data(m.map(|m| m.elem))
            }
            OpKind::GroupBarrier => Vec::new(),
            OpKind::Subgroup(sg) => {
                let types: Vec<Option<Type>> = sg.operands().iter().map(|v| self.data(*v, span)).collect();
                let known: Option<Vec<Type>> = types.iter().copied().collect();
                if let Some(problem) = known.as_deref().and_then(|t| sg.operand_problem(t)) {
                    self.errors.push(VerifyError::SubgroupOperand { op: sg.keyword(), problem, span });
                }
                data(Some(sg.result_type(types.first().copied().flatten())))
            }
            OpKind::LocalAlloc { elem, count } => {
                if self.function {
                    self.errors.push(VerifyError::LocalInFunction { span });
                } else if !ctx.top {
                    self.errors.push(VerifyError::LocalNotTopLevel { span });
                }
                if check_type(*elem, span, self.errors) && (*count == 0 || elem.size().checked_mul(*count).is_none()) {
                    self.errors.push(VerifyError::EmptyLocal { span });
                }
                vec![Some(ValueType::Local { elem: *elem })]
            }
            // `op` routes these to control.rs, keeping this large frame off the recursion.
            OpKind::For { .. } | OpKind::If { .. } | OpKind::Loop { .. } => Vec::new(),
            OpKind::Call { func, args } => self.call(*func, args, span),
            OpKind::Return(values) => {
                self.return_op(values, ctx, last, span);
                Vec::new()
            }
            OpKind::Yield(values) => {
                let types: Vec<Option<Type>> = values.iter().map(|v| self.data(*v, span)).collect();
                let problem = if ctx.top {
                    Some("`yield` outside a `for`, `loop` or `if` region")
                } else if !last {
                    Some("`yield` must be the last op of its region")
                } else if ctx.expects.is_none() {
                    Some("this region has no results, so it takes no `yield`")
                } else {
                    None
                };
                if let Some(problem) = problem {
                    self.errors.push(VerifyError::YieldPlacement { problem, span });
                } else if let (Some(expects), "loop") = (&ctx.expects, ctx.owner) {
                    self.loop_yield(expects, &types, span);
                } else if let Some(expects) = &ctx.expects {
                    self.yield_matches(expects, &types, span);
                }
                Vec::new()
            }
        }
    }

    /// Reports an operand type outside `class`.
    fn class(&mut self, op: &'static str, class: Class, t: Type, span: Span) {
        if !class.admits(t.scalar) {
            self.errors.push(VerifyError::OperandClass { op, required: class.describe(), found: t.to_string(), span });
        }
    }

    /// Operands that must share one type in `class`; returns that type.
    fn same(&mut self, op: &'static str, vs: &[V], class: Class, span: Span) -> Option<Type> {
        let types: Vec<Option<Type>> = vs.iter().map(|v| self.data(*v, span)).collect();
        let known: Vec<Type> = types.iter().flatten().copied().collect();
        let first = *known.first()?;
        if known.iter().any(|t| *t != first) {
            self.errors.push(VerifyError::OperandTypesDiffer {
                op,
                types: known.iter().map(|t| t.to_string()).collect(),
                span,
            });
            return None;
        }
        self.class(op, class, first, span);
        (types.len() == known.len()).then_some(first)
    }

    /// The vector operand of `extract`/`insert`, with its lane in range.
    fn vector_lane(&mut self, op: &'static str, v: V, lane: u8, span: Span) -> Option<Type> {
        let t = self.data(v, span)?;
        if !t.is_vector() {
            let problem = format!("the operand is {t}, not a vector");
            self.errors.push(VerifyError::VectorShape { op, problem, span });
            return None;
        }
        if lane >= t.lanes {
            self.errors.push(VerifyError::LaneOutOfRange { op, lane, ty: t.to_string(), span });
        }
        Some(t)
    }

    /// `vec %a, %b, ...`: 2 to 4 scalars of one type.
    fn construct(&mut self, op: &'static str, parts: &[V], span: Span) -> Option<Type> {
        let types: Vec<Option<Type>> = parts.iter().map(|v| self.data(*v, span)).collect();
        if !(2..=4).contains(&parts.len()) {
            let problem = format!("builds a vector from 2 to 4 scalars, not {}", parts.len());
            self.errors.push(VerifyError::VectorShape { op, problem, span });
            return None;
        }
        if let Some((i, t)) = types.iter().enumerate().find_map(|(i, t)| t.filter(|t| t.is_vector()).map(|t| (i, t))) {
            let problem = format!("operand {i} is {t}, not a scalar");
            self.errors.push(VerifyError::VectorShape { op, problem, span });
            return None;
        }
        let known: Vec<Type> = types.iter().flatten().copied().collect();
        let first = *known.first()?;
        if known.iter().any(|t| *t != first) {
            self.errors.push(VerifyError::OperandTypesDiffer {
                op,
                types: known.iter().map(|t| t.to_string()).collect(),
                span,
            });
            return None;
        }
        (types.len() == known.len()).then_some(Type::vector(first.scalar, parts.len() as u8))
    }

    /// Resolves the memory of a load, store or atomic.
    fn memory(&mut self, mem: MemBase, span: Span) -> Option<Mem> {
        match mem {
            MemBase::Value(v) => match self.use_value(v, span)? {
                ValueType::Buffer { elem, access } => {
                    Some(Mem { elem, access: Some(access), name: self.value_name(v) })
                }
                ValueType::Local { elem } => Some(Mem { elem, access: None, name: self.value_name(v) }),
                ValueType::Data(_) => {
                    self.errors.push(VerifyError::NotMemory { name: self.value_name(v), span });
                    None
                }
            },
            MemBase::Global(h) => {
                let Some(m) = self.m.memories.try_get(h) else {
                    self.errors.push(VerifyError::DanglingHandle { what: "memory object", index: h.index(), span });
                    return None;
                };
                match m.kind {
                    MemoryKind::DeviceGlobal(_) => {
                        Some(Mem { elem: m.elem, access: None, name: format!("@{}", m.name) })
                    }
                    _ => {
                        self.errors.push(VerifyError::NotMemory { name: format!("@{}", m.name), span });
                        None
                    }
                }
            }
        }
    }

    /// A memory index: an integer scalar.
    fn index(&mut self, v: V, span: Span) {
        if let Some(t) = self.data(v, span) {
            if t.is_vector() || !t.scalar.is_integer() {
                self.errors.push(VerifyError::IndexNotInteger { found: t.to_string(), span });
            }
        }
    }

    /// Reports memory whose access does not allow the op.
    fn access(&mut self, op: &'static str, m: &Mem, allowed: fn(Access) -> bool, span: Span) {
        if let Some(a) = m.access.filter(|a| !allowed(*a)) {
            self.errors.push(VerifyError::MemoryAccess { op, name: m.name.clone(), access: a.keyword(), span });
        }
    }

    /// Reports a value whose type is not the memory's element type.
    fn value_matches(&mut self, op: &'static str, m: &Mem, t: Option<Type>, span: Span) {
        if let Some(t) = t.filter(|t| *t != m.elem) {
            self.errors.push(VerifyError::MemoryValueType {
                op,
                expected: m.elem.to_string(),
                found: t.to_string(),
                span,
            });
        }
    }

    /// A `loop` body's `yield`: the condition (a `bool` scalar, E0345), then one value per
    /// carried value, of its type.
    fn loop_yield(&mut self, expects: &[Option<Type>], found: &[Option<Type>], span: Span) {
        let Some((cond, next)) = found.split_first() else {
            self.errors.push(VerifyError::LoopCondition { found: "missing".to_string(), span });
            return;
        };
        if let Some(t) = cond.filter(|t| *t != Type::BOOL) {
            self.errors.push(VerifyError::LoopCondition { found: t.to_string(), span });
        }
        if expects.len() != next.len() {
            let problem =
                format!("yields {} values after the condition but the `loop` carries {}", next.len(), expects.len());
            self.errors.push(VerifyError::YieldMismatch { problem, span });
            return;
        }
        for (i, (e, f)) in expects.iter().zip(next).enumerate() {
            if let (Some(e), Some(f)) = (e, f) {
                if e != f {
                    let problem =
                        format!("value {} (for carried value {i}) is {f} but the carried value is {e}", i + 1);
                    self.errors.push(VerifyError::YieldMismatch { problem, span });
                }
            }
        }
    }

    /// A `yield`'s values against the region's result types.
    pub(super) fn yield_matches(&mut self, expects: &[Option<Type>], found: &[Option<Type>], span: Span) {
        if expects.len() != found.len() {
            let problem = format!("yields {} values but the region has {} results", found.len(), expects.len());
            self.errors.push(VerifyError::YieldMismatch { problem, span });
            return;
        }
        for (i, (e, f)) in expects.iter().zip(found).enumerate() {
            if let (Some(e), Some(f)) = (e, f) {
                if e != f {
                    let problem = format!("value {i} is {f} but result {i} is {e}");
                    self.errors.push(VerifyError::YieldMismatch { problem, span });
                }
            }
        }
    }
}
