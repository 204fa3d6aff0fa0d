//! Loops after their keyword: the counted `for` and the general `loop` (docs/ir.md, "Ops").
//!
//! Both number their values in pre-order: the op, its results, (for `for`) the loop
//! variable, the carried values, then the body.

use super::super::{PResult, Parser};
use super::{result_count, KernelScope};
use crate::arena::Handle;
use crate::kernel::{Body, Op, OpKind, ValueDef, V};
use crate::module::Comments;
use crate::span::Span;
use crate::text::keyword::Kw;
use crate::text::lexer::TokenKind;

/// A parsed `carry(%a = %init, ...)` list: each carried name with its initial value.
type Carry<'s> = Vec<((&'s str, Span), V)>;

impl<'s> Parser<'s> {
    /// An optional `carry(%a = %init, ...)`.
    fn carry(&mut self, body: &Body, scope: &KernelScope<'s>) -> PResult<Carry<'s>> {
        if !self.eat_keyword(Kw::Carry)? {
            return Ok(Vec::new());
        }
        self.paren_list(|p| {
            let name = p.expect_local("a carried value name (`%name`)")?;
            p.expect(TokenKind::Eq)?;
            Ok((name, p.operand(body, scope)?))
        })
    }

    /// Checks that a loop has one result per carried value, then appends a placeholder op
    /// (replaced once the body is parsed) and its result values.
    fn loop_head(
        &mut self,
        body: &mut Body,
        scope: &mut KernelScope<'s>,
        keyword: &str,
        results: Vec<(&'s str, Span)>,
        results_span: Span,
        carried: usize,
    ) -> (Handle<Op>, Vec<V>) {
        if results.len() != carried {
            let expected = match carried {
                0 => "no result (it has no `carry`)".to_string(),
                1 => "1 result (one per carried value)".to_string(),
                n => format!("{n} results (one per carried value)"),
            };
            self.error(result_count(keyword, expected, results.len(), results_span));
        }
        let op = body.ops.append(
            Op { kind: OpKind::GroupBarrier, results: Vec::new(), comments: Comments::default() },
            Span::UNDEFINED,
        );
        let result_values = results
            .into_iter()
            .enumerate()
            .map(|(i, r)| self.new_value(body, scope, r, ValueDef::Result(op, i as u32)))
            .collect();
        (op, result_values)
    }

    /// Defines the carried values of loop `op` inside its body and makes them visible.
    fn carried_values(
        &mut self,
        body: &mut Body,
        scope: &mut KernelScope<'s>,
        op: Handle<Op>,
        carry: Carry<'s>,
    ) -> Vec<(V, V)> {
        let mut carried = Vec::with_capacity(carry.len());
        for (i, (name, init)) in carry.into_iter().enumerate() {
            let v = self.new_value(body, scope, name, ValueDef::Carried(op, i as u32));
            scope.enter(v);
            carried.push((v, init));
        }
        carried
    }

    /// `for %k = %lo to %hi step %s [carry(%a = %init, ...)] { ... }` after `for`.
    pub(super) fn for_op(
        &mut self,
        body: &mut Body,
        scope: &mut KernelScope<'s>,
        results: Vec<(&'s str, Span)>,
        results_span: Span,
        mut comments: Comments,
        start: usize,
    ) -> PResult<Handle<Op>> {
        self.hint = "a loop is `[%r, ... =] for %k = %lo to %hi step %s [carry(%a = %init, ...)] { ... }`";
        let var = self.expect_local("the loop variable (`%name`)")?;
        self.expect(TokenKind::Eq)?;
        let lo = self.operand(body, scope)?;
        self.expect_keyword(Kw::To)?;
        let hi = self.operand(body, scope)?;
        self.expect_keyword(Kw::Step)?;
        let step = self.operand(body, scope)?;
        let carry = self.carry(body, scope)?;
        let (op, result_values) = self.loop_head(body, scope, "for", results, results_span, carry.len());
        let mark = scope.stack.len();
        let var = self.new_value(body, scope, var, ValueDef::LoopVar(op));
        scope.enter(var);
        let carried = self.carried_values(body, scope, op, carry);
        let region = self.region(body, scope, "the `for` region", "")?;
        scope.leave(mark);
        result_values.iter().for_each(|&v| scope.enter(v));
        body.ops.set_span(op, Span::new(start, self.prev_end as usize));
        self.finish_comments(&mut comments)?;
        body.ops[op] =
            Op { kind: OpKind::For { var, lo, hi, step, carried, body: region }, results: result_values, comments };
        Ok(op)
    }

    /// `loop [carry(%a = %init, ...)] { ... yield %again, ... }` after `loop`.
    pub(super) fn loop_op(
        &mut self,
        body: &mut Body,
        scope: &mut KernelScope<'s>,
        results: Vec<(&'s str, Span)>,
        results_span: Span,
        mut comments: Comments,
        start: usize,
    ) -> PResult<Handle<Op>> {
        self.hint = "a general loop is `[%r, ... =] loop [carry(%a = %init, ...)] { ... yield %again, %a_next, ... }`";
        let carry = self.carry(body, scope)?;
        let (op, result_values) = self.loop_head(body, scope, "loop", results, results_span, carry.len());
        let mark = scope.stack.len();
        let carried = self.carried_values(body, scope, op, carry);
        let region = self.region(body, scope, "the `loop` region", "")?;
        scope.leave(mark);
        result_values.iter().for_each(|&v| scope.enter(v));
        body.ops.set_span(op, Span::new(start, self.prev_end as usize));
        self.finish_comments(&mut comments)?;
        body.ops[op] = Op { kind: OpKind::Loop { carried, body: region }, results: result_values, comments };
        Ok(op)
    }
}
