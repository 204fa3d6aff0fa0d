//! `switch`: a chain of `if`s, one per group of case values, with `default` last.
//!
//! WGSL has no fall-through: naga writes `case 3, 4: { body }` as a case 3 with an empty body
//! that falls through into case 4. Such empty falling cases join the next case's group; a
//! case with a body that falls through (GLSL without `break`) is refused. A `break` ending a
//! case body leaves the switch, so it is dropped; one elsewhere in a case is refused like any
//! early exit (`continue` restarts an enclosing loop). The selector values of a switch are distinct, so testing the groups in order
//! and taking `default`'s group (whatever other values it has) when none matches is exact.

use naga::{Statement as St, SwitchCase, SwitchValue};

use super::stmt::{ends_in_return, items};
use super::{FnCtx, Lowerer};
use crate::error::{Result, ShaderError};
use crate::types::{Ty, S};

type Body<'a> = Vec<(&'a St, naga::Span)>;

impl Lowerer<'_> {
    pub(crate) fn switch<'f, 'c>(
        &mut self,
        f: &mut FnCtx<'f>,
        selector: naga::Handle<naga::Expression>,
        cases: &'c [SwitchCase],
        tail: bool,
        span: naga::Span,
    ) -> Result<()> {
        let (sel, t) = self.value(f, selector)?;
        if !matches!(t.s, S::I32 | S::U32) || t.lanes != 1 {
            return Err(ShaderError::at(span, "a `switch` on a value that is not an i32 or u32 scalar", ""));
        }
        let mut groups: Vec<(Vec<String>, Body<'c>)> = Vec::new();
        let mut default: Body<'c> = Vec::new();
        let mut values = Vec::new();
        let mut is_default = false;
        for case in cases {
            match case.value {
                SwitchValue::I32(v) => values.push(v.to_string()),
                SwitchValue::U32(v) => values.push(v.to_string()),
                SwitchValue::Default => is_default = true,
            }
            // A body ending in `return` does not fall through, whatever the flag says (GLSL
            // cases without `break` have it set).
            if case.fall_through && !ends_in_return(&case.body) {
                if !case.body.is_empty() {
                    return Err(ShaderError::at(
                        span,
                        "a `switch` case that falls through into the next one",
                        "end every case with `break`",
                    ));
                }
                continue;
            }
            let mut body = items(&case.body);
            if matches!(body.last(), Some((St::Break, _))) {
                body.pop();
            }
            if is_default {
                default = body;
            } else {
                groups.push((std::mem::take(&mut values), body));
            }
            values.clear();
            is_default = false;
        }
        if !values.is_empty() || is_default {
            return Err(ShaderError::at(span, "a `switch` whose last case is empty and falls through", ""));
        }
        // A `break` in a case leaves the `switch`, not an enclosing loop (only one ending a
        // case is supported, and dropped above); `continue` still restarts the loop.
        let broke = self.flow.broke.take();
        let r = self.switch_chain(f, &sel, t, &groups, &default, tail, span);
        self.flow.broke = broke;
        r
    }

    #[allow(clippy::too_many_arguments)]
    fn switch_chain<'f, 'c>(
        &mut self,
        f: &mut FnCtx<'f>,
        sel: &str,
        t: Ty,
        groups: &[(Vec<String>, Body<'c>)],
        default: &Body<'c>,
        tail: bool,
        span: naga::Span,
    ) -> Result<()> {
        let Some(((values, body), rest)) = groups.split_first() else {
            return self.statements(f, default, tail);
        };
        let mut cond: Option<String> = None;
        for v in values {
            let (k, _) = self.constant(v, t);
            let (eq, _) = self.op(format!("eq {sel}, {k}"), Ty::BOOL);
            cond = Some(match cond {
                None => eq,
                Some(c) => self.op(format!("or {c}, {eq}"), Ty::BOOL).0,
            });
        }
        let Some(c) = cond else { return Err(ShaderError::at(span, "internal: a case without values", "")) };
        self.if_value(
            f,
            c,
            |l, f| l.statements(f, body, tail),
            |l, f| l.switch_chain(f, sel, t, rest, default, tail, span),
            span,
        )
    }
}
