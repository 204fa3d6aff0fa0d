//! Structured control flow: `for`, `loop` and `if` ops, which open nested regions. Kept apart
//! from op typing so that the frames on the recursion path (region, op, these) stay small:
//! regions nest up to 256 deep and the walk must fit a default thread stack.

use super::ctx::check_type;
use super::error::VerifyError;
use super::kernel::{max_depth, value_type_text, RegionCtx, Walker};
use crate::arena::Handle;
use crate::kernel::{Op, Region, ValueDef, ValueType, V};
use crate::span::Span;
use crate::types::Type;

impl Walker<'_> {
    /// `[%r...] = for %i = %lo to %hi step %s [carry(...)] { ... }`
    #[allow(clippy::too_many_arguments)]
    pub(super) fn for_op(
        &mut self,
        op: Handle<Op>,
        (var, lo, hi, step): (V, V, V, V),
        carried: &[(V, V)],
        body: &Region,
        depth: usize,
        span: Span,
    ) -> Vec<Option<ValueType>> {
        let bounds = self.for_bounds(lo, hi, step, span);
        let inits: Vec<Option<Type>> = carried.iter().map(|(_, init)| self.data(*init, span)).collect();
        if depth + 1 > max_depth() {
            self.errors.push(VerifyError::NestingTooDeep { span });
            return inits.into_iter().map(|t| t.map(ValueType::Data)).collect();
        }
        let mut scope = Vec::new();
        if self.define(var, ValueDef::LoopVar(op), span, &mut scope) {
            let tv = self.body.values[var].ty;
            if let Some(b) = bounds.filter(|b| ValueType::Data(*b) != tv) {
                self.errors.push(VerifyError::ForBounds {
                    problem: format!("the loop variable has type {} but the bounds are {b}", value_type_text(tv)),
                    span,
                });
            }
        }
        let expects = self.carried(op, carried, &inits, span, &mut scope);
        let region_ctx = RegionCtx {
            top: false,
            owner: "for",
            region: "body",
            expects: if carried.is_empty() { None } else { Some(expects) },
            owner_span: span,
        };
        self.region(body, &region_ctx, depth + 1, scope);
        inits.into_iter().map(|t| t.map(ValueType::Data)).collect()
    }
    /// Defines the carried values of loop `op` in `scope`, checking each against its
    /// initial value's type; returns the types the body must yield for them.
    fn carried(
        &mut self,
        op: Handle<Op>,
        carried: &[(V, V)],
        inits: &[Option<Type>],
        span: Span,
        scope: &mut Vec<usize>,
    ) -> Vec<Option<Type>> {
        let mut expects = Vec::new();
        for (i, ((inner, _), init)) in carried.iter().zip(inits).enumerate() {
            if !self.define(*inner, ValueDef::Carried(op, i as u32), span, scope) {
                expects.push(*init);
                continue;
            }
            let ty = self.body.values[*inner].ty;
            match (ty, init) {
                (ValueType::Data(t), Some(init)) if t != *init => {
                    self.errors.push(VerifyError::CarriedType {
                        name: self.value_name(*inner),
                        problem: format!("has type {t} but its initial value is {init}"),
                        span,
                    });
                    expects.push(Some(t));
                }
                (ValueType::Data(t), _) => expects.push(Some(t)),
                (other, _) => {
                    self.errors.push(VerifyError::CarriedType {
                        name: self.value_name(*inner),
                        problem: format!("has memory type {}", value_type_text(other)),
                        span,
                    });
                    expects.push(None);
                }
            }
        }
        expects
    }

    /// `[%r...] = loop [carry(...)] { ... yield %again, ... }`: the body's `yield` is checked
    /// in types.rs (its first value is the condition, E0345; the rest the carried types).
    pub(super) fn loop_op(
        &mut self,
        op: Handle<Op>,
        carried: &[(V, V)],
        body: &Region,
        depth: usize,
        span: Span,
    ) -> Vec<Option<ValueType>> {
        let inits: Vec<Option<Type>> = carried.iter().map(|(_, init)| self.data(*init, span)).collect();
        if depth + 1 > max_depth() {
            self.errors.push(VerifyError::NestingTooDeep { span });
            return inits.into_iter().map(|t| t.map(ValueType::Data)).collect();
        }
        let mut scope = Vec::new();
        let expects = self.carried(op, carried, &inits, span, &mut scope);
        // Unlike `for`, the body always yields: at least the condition.
        let region_ctx =
            RegionCtx { top: false, owner: "loop", region: "body", expects: Some(expects), owner_span: span };
        self.region(body, &region_ctx, depth + 1, scope);
        inits.into_iter().map(|t| t.map(ValueType::Data)).collect()
    }

    /// `[%r...] = if %c [-> T, ...] { ... } [else { ... }]`
    pub(super) fn if_op(
        &mut self,
        cond: V,
        result_types: &[Type],
        then_region: &Region,
        else_region: Option<&Region>,
        depth: usize,
        span: Span,
    ) -> Vec<Option<ValueType>> {
        if let Some(t) = self.data(cond, span) {
            if t != Type::BOOL {
                self.errors.push(VerifyError::IfCondition { found: t.to_string(), span });
            }
        }
        let valid: Vec<Option<Type>> =
            result_types.iter().map(|t| check_type(*t, span, self.errors).then_some(*t)).collect();
        if !result_types.is_empty() && else_region.is_none() {
            self.errors.push(VerifyError::IfMissingElse { span });
        }
        if depth + 1 > max_depth() {
            self.errors.push(VerifyError::NestingTooDeep { span });
        } else {
            let expects = if result_types.is_empty() { None } else { Some(valid.clone()) };
            let then_ctx =
                RegionCtx { top: false, owner: "if", region: "then", expects: expects.clone(), owner_span: span };
            self.region(then_region, &then_ctx, depth + 1, Vec::new());
            if let Some(else_region) = else_region {
                let else_ctx = RegionCtx { top: false, owner: "if", region: "else", expects, owner_span: span };
                self.region(else_region, &else_ctx, depth + 1, Vec::new());
            }
        }
        valid.into_iter().map(|t| t.map(ValueType::Data)).collect()
    }

    /// `for` bounds and step: one integer scalar type, returned.
    fn for_bounds(&mut self, lo: V, hi: V, step: V, span: Span) -> Option<Type> {
        let types: Vec<Option<Type>> = [lo, hi, step].iter().map(|v| self.data(*v, span)).collect();
        let known: Vec<Type> = types.iter().flatten().copied().collect();
        let first = *known.first()?;
        let problem = if known.iter().any(|t| *t != first) {
            Some(format!(
                "the bounds and step must have one type, found {}",
                known.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ")
            ))
        } else if first.is_vector() || !first.scalar.is_integer() {
            Some(format!("the bounds and step must be integers, found {first}"))
        } else {
            None
        };
        if let Some(problem) = problem {
            self.errors.push(VerifyError::ForBounds { problem, span });
            return None;
        }
        (types.len() == known.len()).then_some(first)
    }
}
