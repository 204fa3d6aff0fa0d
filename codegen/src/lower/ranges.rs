//! Value ranges of a kernel's `u32` integers, for the bounds checks of work-group memory.
//!
//! Every access is bounds-checked (memory.rs, `in_bounds`): an index past the memory reads 0
//! and writes nothing. For work-group arrays the capacity is a constant, and the index is
//! often an affine form of `local_id` and constants (a tiled matmul reads `%as[%ty + 36]`),
//! whose range the variant's work-group size bounds. An access whose index provably stays
//! below the capacity needs no check; without one, the access is straight-line code that the
//! device compiler schedules freely (a check puts every access in its own branch, and the
//! tiled matmul's inner loop spent most of its time there: docs/codegen.md, "Bounds checks").
//!
//! The analysis is a single forward walk in program order (values are defined before use)
//! over intervals `[lo, hi]` of `u32` values, each operation's result the interval of every
//! result it can give without wrapping; a result that may wrap, or any value the walk does
//! not follow (loads, carried values, `if` results, subgroup builtins), is unknown. A
//! `for` loop's variable is below the loop's end inside the body.

use cmdgraph_ir::kernel::{BinaryOp, Body, Builtin, OpKind, Region, ValueType};
use cmdgraph_ir::types::{LitValue, Type};

/// An inclusive interval of `u32` values.
pub type Range = (u64, u64);

const MAX: u64 = u32::MAX as u64;

/// The range of every `u32` value of `body` (indexed by value), `None` where unknown, for a
/// variant whose work-groups are `workgroup_size` work-items.
pub fn ranges(body: &Body, workgroup_size: [u32; 3]) -> Vec<Option<Range>> {
    let mut out = vec![None; body.values.len()];
    walk(body, &body.entry, workgroup_size, &mut out);
    out
}

fn is_u32(body: &Body, v: cmdgraph_ir::kernel::V) -> bool {
    body.values.try_get(v).is_some_and(|x| x.ty == ValueType::Data(Type::U32))
}

fn walk(body: &Body, region: &Region, wg: [u32; 3], out: &mut Vec<Option<Range>>) {
    for &h in &region.ops {
        let Some(op) = body.ops.try_get(h) else { continue };
        let get = |out: &Vec<Option<Range>>, v: cmdgraph_ir::kernel::V| out.get(v.index()).copied().flatten();
        let result = match &op.kind {
            OpKind::Const(lit, ty) if *ty == Type::U32 => match lit.value {
                LitValue::Int(x) if (0..=MAX as i128).contains(&x) => Some((x as u64, x as u64)),
                _ => None,
            },
            OpKind::Builtin(Builtin::LocalId, d) => wg.get(*d as usize).map(|&n| (0, u64::from(n.max(1)) - 1)),
            OpKind::Builtin(Builtin::LocalRange, d) => wg.get(*d as usize).map(|&n| (u64::from(n), u64::from(n))),
            OpKind::Binary(b, x, y) => match (get(out, *x), get(out, *y)) {
                (Some(a), Some(c)) => binary(*b, a, c),
                _ => None,
            },
            OpKind::Select(_, x, y) => match (get(out, *x), get(out, *y)) {
                (Some(a), Some(c)) => Some((a.0.min(c.0), a.1.max(c.1))),
                _ => None,
            },
            OpKind::For { var, hi, body: inner, .. } => {
                // Inside the body the variable is below the end (however it got there).
                if is_u32(body, *var) {
                    if let Some((_, end)) = get(out, *hi).filter(|r| r.1 >= 1) {
                        if let Some(slot) = out.get_mut(var.index()) {
                            *slot = Some((0, end - 1));
                        }
                    }
                }
                walk(body, inner, wg, out);
                None
            }
            OpKind::Loop { body: inner, .. } => {
                walk(body, inner, wg, out);
                None
            }
            OpKind::If { then_region, else_region, .. } => {
                walk(body, then_region, wg, out);
                if let Some(r) = else_region {
                    walk(body, r, wg, out);
                }
                None
            }
            _ => None,
        };
        if let (Some(r), [v]) = (result, &op.results[..]) {
            if is_u32(body, *v) {
                if let Some(slot) = out.get_mut(v.index()) {
                    *slot = Some(r);
                }
            }
        }
    }
}

/// The range of `a op b` for `u32` operands in `a` and `b`, `None` if it may wrap or the op
/// is not followed.
fn binary(op: BinaryOp, a: Range, b: Range) -> Option<Range> {
    let within = |r: Range| (r.1 <= MAX).then_some(r);
    match op {
        BinaryOp::Add => within((a.0 + b.0, a.1 + b.1)),
        BinaryOp::Sub => (a.0 >= b.1).then(|| (a.0 - b.1, a.1 - b.0)),
        BinaryOp::Mul => within((a.0.checked_mul(b.0)?, a.1.checked_mul(b.1)?)),
        BinaryOp::Div => (b.0 >= 1).then(|| (a.0 / b.1, a.1 / b.0)),
        BinaryOp::Rem => (b.0 >= 1).then(|| (0, a.1.min(b.1 - 1))),
        BinaryOp::Min => Some((a.0.min(b.0), a.1.min(b.1))),
        BinaryOp::Max => Some((a.0.max(b.0), a.1.max(b.1))),
        BinaryOp::And => Some((0, a.1.min(b.1))),
        // Shifts by a constant below the width (the amount is taken modulo 32).
        BinaryOp::Shl if b.0 == b.1 && b.0 < 32 => within((a.0 << b.0, a.1 << b.0)),
        BinaryOp::Shr if b.0 == b.1 && b.0 < 32 => Some((a.0 >> b.0, a.1 >> b.0)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(text: &str) -> (Body, Vec<String>) {
        let m = cmdgraph_ir::text::parse(text).expect("parses");
        let k = m.kernels.iter().next().expect("a kernel").1.clone();
        let cmdgraph_ir::kernel::KernelBody::Ir(b) = k.body else { panic!("no body") };
        let names = b.values.iter().map(|(_, v)| v.name.clone()).collect();
        (b, names)
    }

    fn range_of(text: &str, wg: [u32; 3], name: &str) -> Option<Range> {
        let (b, names) = body(text);
        let i = names.iter().position(|n| n == name).expect("named value");
        ranges(&b, wg)[i]
    }

    const K: &str = "kernel @k(%a: buf<u32, read>, %n: u32) {
  %tx = local_id 0
  %ty = local_id 1
  %c36 = const 36 : u32
  %i = add %ty, %c36
  %four = const 4 : u32
  %m = mul %tx, %four
  %j = add %m, %i
  %r = rem %j, %four
  %d = div %j, %four
  %s = sub %i, %ty
  %w = sub %ty, %i
  %big = const 4294967295 : u32
  %wrap = add %tx, %big
  %sh = shl %tx, %four
  %q = load %a[%tx]
  %unk = add %q, %tx
  %byn = add %n, %tx
  %zero = const 0 : u32
  %one = const 1 : u32
  %ten = const 10 : u32
  for %k = %zero to %ten step %one {
    %kk = add %k, %ty
  }
}
";

    #[test]
    fn affine_forms_of_local_ids_and_constants_have_ranges() {
        let wg = [16, 8, 1];
        assert_eq!(range_of(K, wg, "tx"), Some((0, 15)));
        assert_eq!(range_of(K, wg, "i"), Some((36, 43)));
        assert_eq!(range_of(K, wg, "j"), Some((36, 103)));
        assert_eq!(range_of(K, wg, "r"), Some((0, 3)));
        assert_eq!(range_of(K, wg, "d"), Some((9, 25)));
        assert_eq!(range_of(K, wg, "s"), Some((29, 43)));
        assert_eq!(range_of(K, wg, "sh"), Some((0, 240)));
        assert_eq!(range_of(K, wg, "k"), Some((0, 9)));
        assert_eq!(range_of(K, wg, "kk"), Some((0, 16)));
    }

    #[test]
    fn what_may_wrap_or_is_not_followed_is_unknown() {
        let wg = [16, 8, 1];
        // `ty - (ty + 36)` wraps; `tx + 2^32 - 1` wraps for tx > 0.
        assert_eq!(range_of(K, wg, "w"), None);
        assert_eq!(range_of(K, wg, "wrap"), None);
        // Loaded values and parameters are unknown, and so is what they reach.
        assert_eq!(range_of(K, wg, "q"), None);
        assert_eq!(range_of(K, wg, "unk"), None);
        assert_eq!(range_of(K, wg, "byn"), None);
    }
}
