//! Kernel bodies: structure and SSA scoping. The walk visits the region tree from the entry
//! region, keeping the set of values in scope: parameters, then each op's results after the
//! op, loop variables and carried values inside their `for` body. A value defined in a
//! region leaves scope when the region ends. Op typing is in types.rs.
//!
//! Ops in the arena that no region lists are dead entries (a pass may leave them) and are
//! not checked; using one of their values is a scoping error.

use super::ctx::check_type;
use super::error::VerifyError;
use super::names::valid_name;
use crate::arena::Handle;
use crate::kernel::{Body, Kernel, KernelBody, Op, OpKind, ParamType, Region, ValueDef, ValueType, V};
use crate::module::Module;
use crate::span::Span;
use crate::types::Type;
use std::collections::BTreeMap;

/// Deepest nesting of `for`/`loop`/`if` regions (docs/ir.md, Limits).
const MAX_DEPTH: usize = 256;

/// Checks one kernel.
pub(super) fn check_kernel(m: &Module, kh: Handle<Kernel>, k: &Kernel, errors: &mut Vec<VerifyError>) {
    check_definition(m, k, m.kernels.span(kh), None, errors);
}

/// Checks a kernel (`results` `None`) or a function's definition (`Some`: its result types).
pub(super) fn check_definition(
    m: &Module,
    k: &Kernel,
    kspan: Span,
    results: Option<&[Type]>,
    errors: &mut Vec<VerifyError>,
) {
    let param_span = |i: usize| {
        let s = k.param_spans.get(&(i as u32));
        if s.is_defined() {
            s
        } else {
            kspan
        }
    };
    let mut names: BTreeMap<String, Span> = BTreeMap::new();
    for (i, p) in k.params.iter().enumerate() {
        let span = param_span(i);
        let (ParamType::Value(t) | ParamType::Buffer { elem: t, .. } | ParamType::Local { elem: t }) = p.ty;
        check_type(t, span, errors);
        note_name(&mut names, &p.name, "parameter", span, errors);
    }
    if let KernelBody::Shader { lang, .. } = &k.body {
        errors.push(VerifyError::UntranslatedShader { kernel: k.name.clone(), lang: lang.keyword(), span: kspan });
        return;
    }
    let KernelBody::Ir(body) = &k.body else { return };
    let mut w = Walker {
        m,
        body,
        kspan,
        errors,
        in_scope: vec![false; body.values.len()],
        defined: vec![false; body.values.len()],
        op_seen: vec![false; body.ops.len()],
        names,
        function: results.is_some(),
    };
    let mut top = Vec::new();
    for (i, p) in k.params.iter().enumerate() {
        let span = param_span(i);
        let problem = match Handle::<crate::kernel::Value>::from_usize(i).and_then(|h| body.values.try_get(h)) {
            None => Some("has no value in the body"),
            Some(v) if v.def != ValueDef::Param(i as u32) => Some("has a body value not defined as this parameter"),
            Some(v) if v.ty != ValueType::from(p.ty) => Some("has a body value of another type"),
            Some(v) if v.name != p.name => Some("has a body value of another name"),
            Some(_) => None,
        };
        if let Some(problem) = problem {
            w.errors.push(VerifyError::ParamValueMismatch { param: format!("%{}", p.name), problem, span });
            continue;
        }
        // Parameters are always at the front of the arena, so the index is the handle.
        if let (Some(s), Some(d)) = (w.in_scope.get_mut(i), w.defined.get_mut(i)) {
            *s = true;
            *d = true;
            top.push(i);
        }
    }
    let ctx = match results {
        None => RegionCtx { top: true, owner: "kernel", region: "body", expects: None, owner_span: kspan },
        // A function with results ends with `return` (E0342); without, it takes none.
        Some(results) => RegionCtx {
            top: true,
            owner: "function",
            region: "body",
            expects: (!results.is_empty()).then(|| results.iter().map(|t| Some(*t)).collect()),
            owner_span: kspan,
        },
    };
    w.region(&body.entry, &ctx, 0, top);
}

/// Records a value or parameter name, reporting an invalid name or a duplicate.
fn note_name(
    names: &mut BTreeMap<String, Span>,
    name: &str,
    kind: &'static str,
    span: Span,
    errors: &mut Vec<VerifyError>,
) {
    if !valid_name(name) {
        errors.push(VerifyError::InvalidName { kind, name: name.to_string(), span });
    }
    if let Some(first) = names.get(name) {
        errors.push(VerifyError::DuplicateValueName { name: format!("%{name}"), span, first: *first });
    } else {
        names.insert(name.to_string(), span);
    }
}

/// What a region is and what it must yield.
pub(super) struct RegionCtx {
    /// Whether this is the kernel's entry region.
    pub top: bool,
    /// `for`, `loop`, `if` or `kernel`.
    pub owner: &'static str,
    /// `body`, `then` or `else`.
    pub region: &'static str,
    /// Types the region yields (`None`: it has no results and takes no `yield`).
    pub expects: Option<Vec<Option<Type>>>,
    /// The owning op.
    pub owner_span: Span,
}

/// The state of the walk over one kernel body.
pub(super) struct Walker<'a> {
    pub m: &'a Module,
    pub body: &'a Body,
    pub kspan: Span,
    pub errors: &'a mut Vec<VerifyError>,
    /// Values visible at the current point.
    pub in_scope: Vec<bool>,
    /// Values defined so far (to catch a second definition).
    pub defined: Vec<bool>,
    /// Ops visited so far (to catch an op listed twice).
    pub op_seen: Vec<bool>,
    /// Value names defined so far.
    pub names: BTreeMap<String, Span>,
    /// Whether the body is a function's (which ends with `return` and allocates no `local`).
    pub function: bool,
}

impl Walker<'_> {
    /// The span of an op, or the kernel's when it has none. A `for` or `if` spans its
    /// regions, which would drown the message: it is cut to its first line as far as the
    /// value spans tell (`%r = for %i = ... carry(%acc`, `%r`, or the `if` keyword).
    pub(super) fn op_span(&self, op: Handle<Op>) -> Span {
        let s = self.body.ops.span(op);
        if !s.is_defined() {
            return self.kspan;
        }
        let Some(o) = self.body.ops.try_get(op) else { return s };
        let inner: Vec<V> = match &o.kind {
            OpKind::For { var, carried, .. } => {
                std::iter::once(*var).chain(carried.iter().map(|(v, _)| *v)).chain(o.results.iter().copied()).collect()
            }
            OpKind::Loop { carried, .. } => carried.iter().map(|(v, _)| *v).chain(o.results.iter().copied()).collect(),
            OpKind::If { .. } => o.results.clone(),
            _ => return s,
        };
        let end = inner
            .iter()
            .map(|&v| self.body.values.span(v))
            .filter(|v| v.is_defined() && v.start >= s.start && v.end <= s.end)
            .map(|v| v.end)
            .max();
        let keyword_end = s.start.saturating_add(2).min(s.end);
        Span { start: s.start, end: end.unwrap_or(keyword_end) }
    }

    /// `%name` of a value.
    pub(super) fn value_name(&self, v: V) -> String {
        match self.body.values.try_get(v) {
            Some(val) => format!("%{}", val.name),
            None => format!("%<value {}>", v.index()),
        }
    }

    /// Walks a region; `scope` holds values already defined in it (loop variables and
    /// carried values), which leave scope with the region.
    pub(super) fn region(&mut self, region: &Region, ctx: &RegionCtx, depth: usize, mut scope: Vec<usize>) {
        let count = region.ops.len();
        for (i, &op) in region.ops.iter().enumerate() {
            if self.body.ops.try_get(op).is_none() {
                self.errors.push(VerifyError::DanglingHandle { what: "op", index: op.index(), span: ctx.owner_span });
                continue;
            }
            if std::mem::replace(&mut self.op_seen[op.index()], true) {
                let keyword = op_keyword(&self.body.ops[op].kind);
                self.errors.push(VerifyError::OpListedTwice { op: keyword, span: self.op_span(op) });
                continue;
            }
            self.op(op, ctx, i + 1 == count, depth, &mut scope);
        }
        if ctx.expects.is_some() {
            // A misplaced `yield` (`return`) is reported where it is; only a region with none
            // is missing one.
            let returns = ctx.top && self.function;
            let has_end = region.ops.iter().filter_map(|&op| self.body.ops.try_get(op)).any(|o| {
                if returns {
                    matches!(o.kind, OpKind::Return(_))
                } else {
                    matches!(o.kind, OpKind::Yield(_))
                }
            });
            if !has_end && returns {
                let problem = "a function with results ends with `return` of them".to_string();
                self.errors.push(VerifyError::ReturnPlacement { problem, span: ctx.owner_span });
            } else if !has_end {
                self.errors.push(VerifyError::MissingYield { op: ctx.owner, region: ctx.region, span: ctx.owner_span });
            }
        }
        for v in scope {
            if let Some(s) = self.in_scope.get_mut(v) {
                *s = false;
            }
        }
    }

    /// Checks one op, then defines its results.
    fn op(&mut self, op: Handle<Op>, ctx: &RegionCtx, last: bool, depth: usize, scope: &mut Vec<usize>) {
        let body = self.body;
        let o = &body.ops[op];
        let span = self.op_span(op);
        let types = match &o.kind {
            OpKind::For { var, lo, hi, step, carried, body } => {
                self.for_op(op, (*var, *lo, *hi, *step), carried, body, depth, span)
            }
            OpKind::Loop { carried, body } => self.loop_op(op, carried, body, depth, span),
            OpKind::If { cond, result_types, then_region, else_region } => {
                self.if_op(*cond, result_types, then_region, else_region.as_ref(), depth, span)
            }
            kind => self.check_kind(kind, ctx, last, span),
        };
        let expected = result_count(self.m, &o.kind);
        if o.results.len() != expected {
            self.errors.push(VerifyError::ResultCount {
                op: op_keyword(&o.kind),
                expected,
                found: o.results.len(),
                span,
            });
        }
        for (i, &r) in o.results.iter().enumerate() {
            if !self.define(r, ValueDef::Result(op, i as u32), span, scope) {
                continue;
            }
            if let Some(Some(ty)) = types.get(i) {
                let found = body.values[r].ty;
                if found != *ty {
                    self.errors.push(VerifyError::ResultType {
                        name: self.value_name(r),
                        expected: value_type_text(*ty),
                        found: value_type_text(found),
                        span,
                    });
                }
            }
        }
    }

    /// Defines `v` (checking its recorded definition and name) and puts it in scope.
    /// Returns whether it is a value that can be checked further.
    pub(super) fn define(&mut self, v: V, def: ValueDef, span: Span, scope: &mut Vec<usize>) -> bool {
        let Some(val) = self.body.values.try_get(v) else {
            self.errors.push(VerifyError::DanglingHandle { what: "value", index: v.index(), span });
            return false;
        };
        if std::mem::replace(&mut self.defined[v.index()], true) {
            self.errors.push(VerifyError::ValueDefinition {
                name: self.value_name(v),
                problem: "is defined more than once",
                span,
            });
            return false;
        }
        if val.def != def {
            self.errors.push(VerifyError::ValueDefinition {
                name: self.value_name(v),
                problem: "records a definition other than the op that defines it",
                span,
            });
        }
        self.in_scope[v.index()] = true;
        scope.push(v.index());
        let vspan = {
            let s = self.body.values.span(v);
            if s.is_defined() {
                s
            } else {
                span
            }
        };
        note_name(&mut self.names, &val.name, "value", vspan, self.errors);
        true
    }

    /// Uses `v` at `span`: it must exist and be in scope. Returns its type.
    pub(super) fn use_value(&mut self, v: V, span: Span) -> Option<ValueType> {
        let Some(val) = self.body.values.try_get(v) else {
            self.errors.push(VerifyError::DanglingHandle { what: "value", index: v.index(), span });
            return None;
        };
        if !self.in_scope[v.index()] {
            self.errors.push(VerifyError::ValueNotInScope {
                name: self.value_name(v),
                later: !self.defined[v.index()],
                span,
                def: self.body.values.span(v),
            });
        }
        Some(val.ty)
    }

    /// Uses `v` as a data operand (not memory). Returns its type.
    pub(super) fn data(&mut self, v: V, span: Span) -> Option<Type> {
        match self.use_value(v, span)? {
            ValueType::Data(t) => Some(t),
            _ => {
                self.errors.push(VerifyError::NotData { name: self.value_name(v), span });
                None
            }
        }
    }
}

/// How many results an op defines.
fn result_count(m: &Module, kind: &OpKind) -> usize {
    match kind {
        OpKind::Store { .. } | OpKind::GroupBarrier | OpKind::Yield(_) | OpKind::Return(_) => 0,
        OpKind::Call { func, .. } => m.functions.try_get(*func).map_or(0, |f| f.results.len()),
        OpKind::For { carried, .. } | OpKind::Loop { carried, .. } => carried.len(),
        OpKind::If { result_types, .. } => result_types.len(),
        _ => 1,
    }
}

/// The keyword of an op, for messages.
pub(super) fn op_keyword(kind: &OpKind) -> &'static str {
    match kind {
        OpKind::Const(..) => "const",
        OpKind::Builtin(b, _) => b.keyword(),
        OpKind::Unary(u, _) => u.keyword(),
        OpKind::Binary(b, ..) => b.keyword(),
        OpKind::Fma(..) => "fma",
        OpKind::Cmp(c, ..) => c.keyword(),
        OpKind::Select(..) => "select",
        OpKind::Cast(..) => "cast",
        OpKind::Bitcast(..) => "bitcast",
        OpKind::Splat(..) => "splat",
        OpKind::Extract(..) => "extract",
        OpKind::Insert(..) => "insert",
        OpKind::Construct(..) => "vec",
        OpKind::Load { .. } => "load",
        OpKind::Len(_) => "len",
        OpKind::Store { .. } => "store",
        OpKind::Atomic { .. } => "atomic",
        OpKind::GroupBarrier => "group_barrier",
        OpKind::LocalAlloc { .. } => "local",
        OpKind::For { .. } => "for",
        OpKind::If { .. } => "if",
        OpKind::Yield(_) => "yield",
        OpKind::Subgroup(sg) => sg.keyword(),
        OpKind::Call { .. } => "call",
        OpKind::Return(_) => "return",
        OpKind::Loop { .. } => "loop",
    }
}

/// A value type as the text format writes it.
pub(super) fn value_type_text(ty: ValueType) -> String {
    match ty {
        ValueType::Data(t) => t.to_string(),
        ValueType::Buffer { elem, access } => format!("buf<{elem}, {access}>"),
        ValueType::Local { elem } => format!("local<{elem}>"),
    }
}

/// The maximum region depth, for types.rs.
pub(super) fn max_depth() -> usize {
    MAX_DEPTH
}
