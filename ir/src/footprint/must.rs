//! What a launch writes for certain: the under-approximation beside the footprint's
//! over-approximation. `place-devices` uses it to skip bringing memory to a device where a
//! node overwrites all of it before reading any (docs/multi-device.md).
//!
//! Deliberately narrow: a `store %p[%i], %v` at the kernel's top level (every work-item runs
//! it: the kernel language has no early return), to a buffer parameter `%p`, at `%i =
//! global_id 0` of a one-dimensional `range(N)` launch, writes elements `[0, N)` of what
//! `%p` points at. Anything else (stores under `if` or in loops, computed indices, other
//! launches) proves nothing.

use crate::graph::Launch;
use crate::kernel::{Body, Builtin, Kernel, KernelBody, MemBase, OpKind, ParamType, ValueDef};
use std::collections::BTreeMap;

/// By buffer parameter index: how many elements from the argument's start every launch of
/// `kernel` with `launch` writes for certain (parameters it proves nothing for are absent).
pub fn surely_written(kernel: &Kernel, launch: &Launch) -> BTreeMap<u32, u64> {
    let mut out = BTreeMap::new();
    let (KernelBody::Ir(body), Launch::Range(dims)) = (&kernel.body, launch) else { return out };
    let [n] = dims.as_slice() else { return out };
    for &op in &body.entry.ops {
        let Some(OpKind::Store { mem: MemBase::Value(p), index, .. }) = body.ops.try_get(op).map(|o| &o.kind) else {
            continue;
        };
        let Some(ValueDef::Param(i)) = body.values.try_get(*p).map(|v| v.def) else { continue };
        if !matches!(kernel.params.get(i as usize).map(|p| p.ty), Some(ParamType::Buffer { .. })) {
            continue;
        }
        if is_global_id_0(body, *index) {
            out.insert(i, *n);
        }
    }
    out
}

/// Whether value `v` is `global_id 0` computed at the top level.
fn is_global_id_0(body: &Body, v: crate::kernel::V) -> bool {
    let Some(ValueDef::Result(op, 0)) = body.values.try_get(v).map(|x| x.def) else { return false };
    body.entry.ops.contains(&op)
        && matches!(body.ops.try_get(op).map(|o| &o.kind), Some(OpKind::Builtin(Builtin::GlobalId, 0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(text: &str) -> (crate::Module, crate::Handle<Kernel>) {
        let m = crate::text::parse(text).unwrap_or_else(|d| panic!("{d:?}"));
        let k = m.kernels.handles().next().unwrap();
        (m, k)
    }

    #[test]
    fn only_top_level_stores_at_global_id_0_of_a_1d_range_count() {
        let (m, k) = kernel(
            "kernel @k(%x: buf<f32, read>, %y: buf<f32, write>, %z: buf<f32, write>, %w: buf<f32, write>) {
  %i = global_id 0
  %v = load %x[%i]
  store %y[%i], %v
  %one = const 1 : u32
  %j = add %i, %one
  store %z[%j], %v
  %zero = const 0 : u32
  %c = eq %i, %zero
  if %c {
    store %w[%i], %v
  }
}
",
        );
        let kernel = &m.kernels[k];
        let got = surely_written(kernel, &Launch::Range(vec![256]));
        // %y only: %z's index is computed, %w's store is conditional, %x is read.
        assert_eq!(got, BTreeMap::from([(1, 256)]));
        assert!(surely_written(kernel, &Launch::Range(vec![16, 16])).is_empty());
        assert!(surely_written(kernel, &Launch::SingleTask).is_empty());
    }
}
