//! A kernel that runs the body of a `while` node's one kernel several times per launch
//! (`iterate-in-kernel`, docs/passes.md): one launch is then up to `rounds` iterations of
//! the loop, each taken only while the condition word is non-zero.

use super::{u32_const, Builder, InlineError, Stage};
use crate::arena::{Arena, Handle};
use crate::kernel::{Builtin, CmpOp, Function, Kernel, MemBase, Op, OpKind, Region, Value, ValueDef, ValueType};
use crate::types::{LitValue, Literal, ScalarType, Type};
use std::collections::HashSet;

/// A kernel named `name` with parameters `params` (parameter `cond` a `u32` buffer whose
/// element 0 is the loop's condition) that runs `body`'s kernel up to `rounds` times:
///
/// ```text
/// for %r = 0 to rounds {
///   %word = load %cond[0]; %on = ne %word, 0
///   (every `local` array zeroed again, each work-item its elements local_id 0, + group, ...)
///   group_barrier
///   if %on { the body }
///   group_barrier
/// }
/// ```
///
/// Every work-item reads the word after the previous turn's last barrier, and no work-item
/// can write it before the next barrier, so all of them take the same branch (the barriers
/// inside the body stay uniform). A `local` array is zero at the start of each launch
/// (docs/ir.md), so each turn zeroes it again: a turn sees what a launch of its own would.
/// The caller guarantees one work-group of `group` work-items, one dimension of them when
/// the body has `local` arrays, and scalar `local` element types. `group` is `None` for a
/// `single_task`, which has no work-group to synchronize (the verifier refuses a barrier
/// there): one work-item, no barriers, its program order is the order.
pub fn rounds_kernel(
    functions: &Arena<Function>,
    name: String,
    mut params: Vec<crate::kernel::Param>,
    cond: usize,
    body: &Stage<'_>,
    (rounds, group): (u64, Option<u64>),
) -> Result<Kernel, InlineError> {
    let mut b = Builder { functions, kernel: &name, out: Default::default(), names: HashSet::new(), calls: 0 };
    let fused = b.define_params(&mut params);
    let cond = *fused.get(cond).ok_or_else(|| b.error("the condition parameter out of range"))?;
    let mut frame = b.stage_frame(body, &fused, "the loop's body")?;
    // `local` ops stand at the top level (the verifier's rule): copied first, then zeroed
    // in every turn.
    let entry = &frame.body.entry;
    let is_local =
        |h: &Handle<Op>| matches!(frame.body.ops.try_get(*h).map(|o| &o.kind), Some(OpKind::LocalAlloc { .. }));
    let (locals, rest): (Vec<Handle<Op>>, Vec<Handle<Op>>) = entry.ops.iter().partition(|h| is_local(h));
    let rest = Region { ops: rest, closing_comments: entry.closing_comments.clone() };
    let mut ops = b.region(&mut frame, &Region { ops: locals, closing_comments: Vec::new() })?.ops;
    let arrays: Vec<(crate::kernel::V, Type, u64)> = ops
        .iter()
        .filter_map(|&h| match (&b.out.ops[h].kind, b.out.ops[h].results.first()) {
            (OpKind::LocalAlloc { elem, count }, Some(&v)) => Some((v, *elem, *count)),
            _ => None,
        })
        .collect();
    let (zero_op, zero) = b.result_op(u32_const(0), "rounds.zero", Type::U32);
    let (n_op, n) = b.result_op(u32_const(rounds), "rounds.count", Type::U32);
    let (one_op, one) = b.result_op(u32_const(1), "rounds.one", Type::U32);
    ops.extend([zero_op, n_op, one_op]);
    // What zeroing the arrays needs: the work-item's first element, the stride, and per
    // array its count and a zero of its type.
    let mut zeroing = Vec::new();
    if !arrays.is_empty() {
        let (lid_op, lid) = b.result_op(OpKind::Builtin(Builtin::LocalId, 0), "rounds.item", Type::U32);
        let (step_op, step) = b.result_op(u32_const(group.unwrap_or(1)), "rounds.group", Type::U32);
        ops.extend([lid_op, step_op]);
        for (k, &(array, elem, count)) in arrays.iter().enumerate() {
            if elem.lanes != 1 {
                return Err(b.error("a `local` array of vectors in a loop's body"));
            }
            let value = match elem.scalar {
                ScalarType::Bool => LitValue::Bool(false),
                s if s.is_float() => LitValue::Float(0.0),
                _ => LitValue::Int(0),
            };
            let lit = OpKind::Const(Literal { value, ty: Some(elem.scalar) }, elem);
            let (c_op, c) = b.result_op(u32_const(count), &format!("rounds.size{k}"), Type::U32);
            let (z_op, z) = b.result_op(lit, &format!("rounds.zero{k}"), elem);
            ops.extend([c_op, z_op]);
            zeroing.push((array, c, z, lid, step));
        }
    }
    let looped = b.placeholder();
    let r = new_value(&mut b, "rounds.turn", ValueDef::LoopVar(looped));
    let load = OpKind::Load { mem: MemBase::Value(cond), index: zero };
    let (load_op, word) = b.result_op(load, "rounds.word", Type::U32);
    let (on_op, on) = b.result_op(OpKind::Cmp(CmpOp::Ne, word, zero), "rounds.on", Type::scalar(ScalarType::Bool));
    let mut turn = vec![load_op, on_op];
    for (k, (array, count, value, lid, step)) in zeroing.into_iter().enumerate() {
        let clear = b.placeholder();
        let z = new_value(&mut b, &format!("rounds.clear{k}"), ValueDef::LoopVar(clear));
        let store = b.placeholder();
        b.out.ops[store].kind = OpKind::Store { mem: MemBase::Value(array), index: z, value };
        let body = Region { ops: vec![store], closing_comments: Vec::new() };
        b.out.ops[clear].kind = OpKind::For { var: z, lo: lid, hi: count, step, carried: Vec::new(), body };
        turn.push(clear);
    }
    if group.is_some() {
        turn.push(barrier(&mut b));
    }
    let branch = b.placeholder();
    let then_region = b.region(&mut frame, &rest)?;
    b.out.ops[branch].kind = OpKind::If { cond: on, result_types: Vec::new(), then_region, else_region: None };
    turn.push(branch);
    if group.is_some() {
        turn.push(barrier(&mut b));
    }
    let body = Region { ops: turn, closing_comments: Vec::new() };
    b.out.ops[looped].kind = OpKind::For { var: r, lo: zero, hi: n, step: one, carried: Vec::new(), body };
    ops.push(looped);
    Ok(b.finish(params, ops))
}

/// A `u32` value named `name` (made unique), defined by `def`.
fn new_value(b: &mut Builder<'_>, name: &str, def: ValueDef) -> crate::kernel::V {
    let name = b.unique(name.to_string());
    b.out.values.append(Value { name, ty: ValueType::Data(Type::U32), def }, crate::Span::UNDEFINED)
}

/// A `group_barrier` op.
fn barrier(b: &mut Builder<'_>) -> Handle<Op> {
    b.placeholder()
}
