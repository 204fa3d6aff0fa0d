//! llvmpipe's loop budget, and which `for` loops are unrolled to stay within it.
//!
//! Mesa's gallivm (llvmpipe and lavapipe, up to at least Mesa 22.3) gives each shader
//! invocation **one** counter of 65535 loop iterations (`LP_MAX_TGSI_LOOP_ITERATIONS`),
//! allocated once per function and decremented at the end of every iteration of every
//! loop; once it reaches 0 each loop leaves after its current iteration, with no error.
//! The counter is shared by all the loops of a kernel, so splitting one loop into nested
//! loops does not help (the inner loop's iterations are still counted, and the outer's
//! too). What helps is fewer back-edges: an innermost `for` is emitted with [`UNROLL`]
//! copies of its body per back-edge (control.rs), which lets one loop run up to
//! `65535 * UNROLL` iterations, and a small constant loop inside another loop becomes
//! straight-line code ([`Shape`]). Kernels whose loops provably stay within the budget are
//! emitted as before.

use cmdgraph_ir::kernel::{AtomicOp, Body, OpKind, Region, ValueDef, V};
use cmdgraph_ir::types::{LitValue, Literal};
use cmdgraph_ir::{ScalarType, ValueType};

use cmdgraph_ir::bundle::LLVMPIPE_LOOP_BUDGET;

/// Body copies per back-edge of an unrolled `for`.
pub(crate) const UNROLL: u32 = 8;

/// Deepest nesting the analysis follows (deeper is "unknown").
const MAX_DEPTH: usize = 256;

/// Whether the kernel's innermost loops are unrolled: its loops may take more back-edges
/// than llvmpipe's budget in one work-item (or the count is unknown: bounds that are not
/// constants, compare-and-swap retry loops).
pub(crate) fn needs_unrolling(body: &Body) -> bool {
    back_edges(body, &body.entry, 0).is_none_or(|n| n > LLVMPIPE_LOOP_BUDGET)
}

/// How a `for` is emitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// A loop with this many copies of its body per back-edge, each followed by its exit
    /// test (control.rs, `tested_for`): one back-edge per `copies` iterations, the last,
    /// partial, included.
    Loop(u32),
    /// `trips / copies` rounds of this many copies with no test between them, one back-edge
    /// each, then a tail of fewer guarded copies with none (control.rs, `unrolled_for`).
    Rounds(u32),
    /// No loop: its constant number of iterations (at most [`UNROLL`]) in a row.
    Straight(u32),
}

/// How a `for` with these bounds and body is emitted. In a kernel that unrolls, a `for`
/// with no `for` inside and a constant trip count of at most [`UNROLL`] becomes straight-line
/// code (no back-edge at all), and a loop whose body emits no loop gets [`UNROLL`] copies
/// per back-edge unless it runs at most once; so an outer loop around such small loops is
/// unrolled too (at most `UNROLL * UNROLL` copies of the innermost body).
pub(crate) fn shape(body: &Body, kernel_unrolls: bool, (lo, hi, step): (V, V, V), region: &Region) -> Shape {
    if !kernel_unrolls {
        return Shape::Loop(1);
    }
    let trips = trip_count(body, lo, hi, step);
    match trips {
        Some(n) if n <= u128::from(UNROLL) && !contains_for(body, region, 0) => Shape::Straight(n as u32),
        _ if emits_loop(body, region, 0) => Shape::Loop(1),
        Some(n) if n <= 1 => Shape::Loop(1),
        // Lanes with different trip counts split differently between rounds and tail, so a
        // body whose lanes must meet keeps one copy per iteration index.
        _ if convergent(body, region, 0) => Shape::Loop(UNROLL),
        _ => Shape::Rounds(UNROLL),
    }
}

/// The most loop back-edges one invocation of the kernel takes as codegen emits it (the
/// figure llvmpipe's budget is spent by): [`Shape::Loop`]`(c)` takes one back-edge per `c`
/// iterations (rounded up), [`Shape::Rounds`]`(c)` one per `c` (rounded down),
/// [`Shape::Straight`] none; `None` when unknown (a bound that is not a
/// constant, a compare-and-swap retry loop, a general `loop`). Recorded in the module for the executor's
/// llvmpipe warning (docs/abi.md, "Loop back-edges").
pub(crate) fn emitted_back_edges(body: &Body) -> Option<u128> {
    emitted(body, needs_unrolling(body), &body.entry, 0)
}

/// [`emitted_back_edges`] of one run of `region`.
fn emitted(body: &Body, unrolls: bool, region: &Region, depth: usize) -> Option<u128> {
    if depth > MAX_DEPTH {
        return None;
    }
    let mut total: u128 = 0;
    for &h in &region.ops {
        let op = body.ops.try_get(h)?;
        let cost = match &op.kind {
            OpKind::For { lo, hi, step, body: inner, .. } => {
                let each = emitted(body, unrolls, inner, depth + 1)?;
                match shape(body, unrolls, (*lo, *hi, *step), inner) {
                    Shape::Straight(n) => u128::from(n).checked_mul(each)?,
                    // Every iteration runs one copy of the body, plus the shape's back-edges.
                    Shape::Loop(copies) => {
                        let trips = trip_count(body, *lo, *hi, *step)?;
                        trips.div_ceil(u128::from(copies)).checked_add(trips.checked_mul(each)?)?
                    }
                    Shape::Rounds(copies) => {
                        let trips = trip_count(body, *lo, *hi, *step)?;
                        (trips / u128::from(copies)).checked_add(trips.checked_mul(each)?)?
                    }
                }
            }
            // One of the two runs.
            OpKind::If { then_region, else_region, .. } => {
                let e = match else_region {
                    Some(r) => emitted(body, unrolls, r, depth + 1)?,
                    None => 0,
                };
                emitted(body, unrolls, then_region, depth + 1)?.max(e)
            }
            // A general loop's trip count is data-dependent: unknown.
            OpKind::Loop { .. } => return None,
            kind if retry_loop(body, kind) => return None,
            _ => 0,
        };
        total = total.checked_add(cost)?;
    }
    Some(total)
}

/// Whether `region` holds a `for` that is emitted as a loop in a kernel that unrolls.
fn emits_loop(body: &Body, region: &Region, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return true;
    }
    region.ops.iter().any(|&h| match body.ops.try_get(h).map(|op| &op.kind) {
        Some(OpKind::For { lo, hi, step, body: inner, .. }) => {
            !matches!(trip_count(body, *lo, *hi, *step), Some(n) if n <= u128::from(UNROLL))
                || contains_for(body, inner, depth + 1)
        }
        // Always a loop (general_loop.rs).
        Some(OpKind::Loop { .. }) => true,
        Some(OpKind::If { then_region, else_region, .. }) => {
            emits_loop(body, then_region, depth + 1)
                || else_region.as_ref().is_some_and(|r| emits_loop(body, r, depth + 1))
        }
        _ => false,
    })
}

/// An upper bound on the loop iterations (back-edges, counted as llvmpipe counts them: one
/// per iteration, the last included) of one run of `region`; `None` when unknown.
fn back_edges(body: &Body, region: &Region, depth: usize) -> Option<u128> {
    if depth > MAX_DEPTH {
        return None;
    }
    let mut total: u128 = 0;
    for &h in &region.ops {
        let op = body.ops.try_get(h)?;
        let cost = match &op.kind {
            OpKind::For { lo, hi, step, body: inner, .. } => {
                let trips = trip_count(body, *lo, *hi, *step)?;
                trips.checked_mul(back_edges(body, inner, depth + 1)?.checked_add(1)?)?
            }
            OpKind::If { then_region, else_region, .. } => {
                let e = match else_region {
                    Some(r) => back_edges(body, r, depth + 1)?,
                    None => 0,
                };
                back_edges(body, then_region, depth + 1)?.checked_add(e)?
            }
            OpKind::Loop { .. } => return None,
            kind if retry_loop(body, kind) => return None,
            _ => 0,
        };
        total = total.checked_add(cost)?;
    }
    Some(total)
}

/// Whether `kind` is emitted as a loop of unknown length: `f32` `min`/`max` (and work-group
/// `f32` `add`) are compare-and-swap loops whose retries depend on the other work-items
/// (atomic.rs).
fn retry_loop(body: &Body, kind: &OpKind) -> bool {
    matches!(kind, OpKind::Atomic { op: AtomicOp::Min | AtomicOp::Max | AtomicOp::Add, value, .. }
        if matches!(body.values.try_get(*value).map(|v| v.ty),
            Some(ValueType::Data(t)) if t.scalar == ScalarType::F32))
}

/// Whether `region` holds a `for` or a general `loop` (at any depth): a `for` around one is
/// not straight-line code.
fn contains_for(body: &Body, region: &Region, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return true;
    }
    region.ops.iter().any(|&h| match body.ops.try_get(h).map(|op| &op.kind) {
        Some(OpKind::For { .. } | OpKind::Loop { .. }) => true,
        Some(OpKind::If { then_region, else_region, .. }) => {
            contains_for(body, then_region, depth + 1)
                || else_region.as_ref().is_some_and(|r| contains_for(body, r, depth + 1))
        }
        _ => false,
    })
}

/// Whether `region` holds (at any depth) an operation whose lanes must reach it together:
/// a subgroup operation, a work-group barrier or a call (which may hold either).
fn convergent(body: &Body, region: &Region, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return true;
    }
    region.ops.iter().any(|&h| match body.ops.try_get(h).map(|op| &op.kind) {
        None | Some(OpKind::Subgroup(_) | OpKind::GroupBarrier | OpKind::Call { .. }) => true,
        Some(OpKind::For { body: inner, .. } | OpKind::Loop { body: inner, .. }) => convergent(body, inner, depth + 1),
        Some(OpKind::If { then_region, else_region, .. }) => {
            convergent(body, then_region, depth + 1)
                || else_region.as_ref().is_some_and(|r| convergent(body, r, depth + 1))
        }
        _ => false,
    })
}

/// The iterations of a `for` whose bounds and step are constants (a non-positive step runs
/// none on the device, control.rs); `None` when one is not a constant.
fn trip_count(body: &Body, lo: V, hi: V, step: V) -> Option<u128> {
    let (lo, hi, step) = (constant(body, lo)?, constant(body, hi)?, constant(body, step)?);
    if step <= 0 || lo >= hi {
        return Some(0);
    }
    // |hi - lo| < 2^65 and step >= 1: no overflow in i128.
    Some(((hi - lo + step - 1) / step) as u128)
}

/// The value of a `const` integer.
fn constant(body: &Body, v: V) -> Option<i128> {
    let ValueDef::Result(h, 0) = body.values.try_get(v)?.def else { return None };
    match body.ops.try_get(h)?.kind {
        OpKind::Const(lit, t) => match lit.value {
            // A literal its type cannot hold (the verifier rejects it) is not trusted.
            LitValue::Int(n) if t.lanes == 1 && Literal::fits(lit.value, t.scalar) => Some(n),
            _ => None,
        },
        _ => None,
    }
}
