//! Result types of kernel values, computed after parsing.
//!
//! A `load @g[%i]` has the element type of `device_global @g`, which may be declared after
//! the kernel, so types are computed once every module-level name is resolved. Ops and
//! values are in pre-order and operands are defined before use, so one pass over the op
//! arena in order sees every operand's type before it is needed.
//!
//! The rules compute a type from the operands without checking them: `add` has its first
//! operand's type, `lt` is `bool` with the operands' lane count, `load` the element type
//! of its memory, builtins `u32`, `for` and `loop` results and carried values the types of their
//! initial values, the loop variable the type of `lo`, `call` results the function's result
//! types. Where an operand's type makes the
//! rule meaningless (e.g. `extract` from a buffer), the result takes the operand's type as
//! it is and the verifier reports the op; the parser reports no type errors.

use crate::arena::Arena;
use crate::kernel::{Body, KernelBody, MemBase, OpKind, Value, ValueType, V};
use crate::module::{MemoryObject, Module};
use crate::types::{ScalarType, Type};

/// Computes the type of every op result, loop variable and carried value in every kernel
/// and function.
pub(super) fn infer_module(module: &mut Module) {
    let Module { kernels, functions, memories, .. } = module;
    let results: Vec<Vec<Type>> = functions.iter().map(|(_, f)| f.results.clone()).collect();
    let defs = kernels.iter_mut().map(|(_, k)| k).chain(functions.iter_mut().map(|(_, f)| &mut f.def));
    for kernel in defs {
        if let KernelBody::Ir(body) = &mut kernel.body {
            infer_body(body, memories, &results);
        }
    }
}

fn ty(values: &Arena<Value>, v: V) -> ValueType {
    values.try_get(v).map_or(ValueType::Data(Type::BOOL), |value| value.ty)
}

fn set(values: &mut Arena<Value>, v: V, ty: ValueType) {
    if values.try_get(v).is_some() {
        values[v].ty = ty;
    }
}

/// The type of an element of `mem`.
fn element(values: &Arena<Value>, memories: &Arena<MemoryObject>, mem: MemBase) -> ValueType {
    match mem {
        MemBase::Value(v) => match ty(values, v) {
            ValueType::Buffer { elem, .. } | ValueType::Local { elem } => ValueType::Data(elem),
            data => data,
        },
        MemBase::Global(g) => ValueType::Data(memories.try_get(g).map_or(Type::BOOL, |m| m.elem)),
    }
}

fn infer_body(body: &mut Body, memories: &Arena<MemoryObject>, functions: &[Vec<Type>]) {
    let Body { values, ops, .. } = body;
    for (_, op) in ops.iter() {
        let first = op.results.first().copied();
        let result = match &op.kind {
            OpKind::Const(_, t) | OpKind::Cast(_, t) | OpKind::Bitcast(_, t) | OpKind::Splat(_, t) => {
                ValueType::Data(*t)
            }
            OpKind::Builtin(..) | OpKind::Len(_) => ValueType::Data(Type::U32),
            OpKind::Unary(_, a)
            | OpKind::Binary(_, a, _)
            | OpKind::Fma(a, _, _)
            | OpKind::Select(_, a, _)
            | OpKind::Insert(a, _, _) => ty(values, *a),
            OpKind::Cmp(_, a, _) => match ty(values, *a) {
                ValueType::Data(t) => ValueType::Data(t.with_scalar(ScalarType::Bool)),
                other => other,
            },
            OpKind::Extract(v, _) => match ty(values, *v) {
                ValueType::Data(t) => ValueType::Data(Type::scalar(t.scalar)),
                other => other,
            },
            OpKind::Construct(parts) => match parts.first().map(|p| ty(values, *p)) {
                Some(ValueType::Data(t)) => {
                    ValueType::Data(Type::vector(t.scalar, u8::try_from(parts.len()).unwrap_or(u8::MAX)))
                }
                Some(other) => other,
                None => ValueType::Data(Type::BOOL),
            },
            OpKind::Load { mem, .. } | OpKind::Atomic { mem, .. } => element(values, memories, *mem),
            OpKind::LocalAlloc { elem, .. } => ValueType::Local { elem: *elem },
            OpKind::For { var, lo, carried, .. } => {
                let lo_ty = ty(values, *lo);
                set(values, *var, lo_ty);
                for (i, &(inner, init)) in carried.iter().enumerate() {
                    let init_ty = ty(values, init);
                    set(values, inner, init_ty);
                    if let Some(&r) = op.results.get(i) {
                        set(values, r, init_ty);
                    }
                }
                continue;
            }
            OpKind::Loop { carried, .. } => {
                for (i, &(inner, init)) in carried.iter().enumerate() {
                    let init_ty = ty(values, init);
                    set(values, inner, init_ty);
                    if let Some(&r) = op.results.get(i) {
                        set(values, r, init_ty);
                    }
                }
                continue;
            }
            OpKind::If { result_types, .. } => {
                for (&r, t) in op.results.iter().zip(result_types) {
                    set(values, r, ValueType::Data(*t));
                }
                continue;
            }
            OpKind::Subgroup(sg) => {
                let first = sg.operands().first().and_then(|&v| match ty(values, v) {
                    ValueType::Data(t) => Some(t),
                    _ => None,
                });
                ValueType::Data(sg.result_type(first))
            }
            OpKind::Call { func, .. } => {
                // A call of an undefined function has no types to give (the parser reports it).
                let types = functions.get(func.index()).map_or(&[][..], |r| &r[..]);
                for (&r, t) in op.results.iter().zip(types) {
                    set(values, r, ValueType::Data(*t));
                }
                continue;
            }
            OpKind::Store { .. } | OpKind::GroupBarrier | OpKind::Yield(_) | OpKind::Return(_) => continue,
        };
        if let Some(r) = first {
            set(values, r, result);
        }
    }
}
