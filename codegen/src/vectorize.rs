//! Which kernels are element-wise, so one invocation can handle 4 work-items with
//! `<4 x T>` loads and stores (docs/codegen.md, "Vectorization").

use crate::layout::Layout;
use crate::Variant;
use cmdgraph_ir::kernel::{Body, Builtin, MemBase, OpKind, V};
use cmdgraph_ir::{ScalarType, ValueDef, ValueType};

/// Work-items per invocation of a vectorized kernel.
pub const ITEMS_PER_INVOCATION: u32 = 4;

/// Whether the kernel is element-wise: a 1-D launch; straight-line code on scalars; the
/// only builtins are `global_id 0` and `global_range`; every load and store indexes a
/// 32-bit non-bool buffer or device global with `global_id 0`; no atomics, barriers,
/// work-group memory, loops or branches.
pub fn element_wise(body: &Body, layout: &Layout, variant: &Variant) -> bool {
    if variant.dims != 1 {
        return false;
    }
    let is_gid = |v: V| match body.values.try_get(v).map(|x| x.def) {
        Some(ValueDef::Result(op, 0)) => {
            matches!(body.ops.try_get(op).map(|o| &o.kind), Some(OpKind::Builtin(Builtin::GlobalId, 0)))
        }
        _ => false,
    };
    let word_elem = |mem: MemBase| -> bool {
        let elem = match mem {
            MemBase::Global(g) => layout
                .globals
                .iter()
                .find(|(h, _)| *h == g)
                .and_then(|(_, s)| layout.slots.get(*s as usize))
                .map(|s| s.elem),
            MemBase::Value(v) => match body.values.try_get(v).map(|x| x.ty) {
                Some(ValueType::Buffer { elem, .. }) => Some(elem),
                _ => None,
            },
        };
        elem.is_some_and(|e| e.lanes == 1 && matches!(e.scalar, ScalarType::F32 | ScalarType::I32 | ScalarType::U32))
    };
    let scalar_values = body.values.iter().all(|(_, v)| match v.ty {
        ValueType::Data(t) => t.lanes == 1,
        ValueType::Buffer { .. } => true,
        ValueType::Local { .. } => false,
    });
    let mut touches_memory = false;
    let ops_ok = body.entry.ops.iter().all(|&h| {
        let Some(op) = body.ops.try_get(h) else { return false };
        match &op.kind {
            OpKind::Const(..)
            | OpKind::Unary(..)
            | OpKind::Binary(..)
            | OpKind::Fma(..)
            | OpKind::Cmp(..)
            | OpKind::Select(..)
            | OpKind::Cast(..) => true,
            OpKind::Builtin(Builtin::GlobalId, 0) | OpKind::Builtin(Builtin::GlobalRange, _) => true,
            OpKind::Load { mem, index } | OpKind::Store { mem, index, .. } => {
                touches_memory = true;
                is_gid(*index) && word_elem(*mem)
            }
            _ => false,
        }
    });
    scalar_values && ops_ok && touches_memory && body.ops.len() == body.entry.ops.len()
}
