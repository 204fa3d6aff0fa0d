//! Atomics: native read-modify-writes, `cmpxchg`, and compare-and-swap loops.
//!
//! - Integer ops and `f32` `add`/`xchg` are one `atomicrmw` (`acq_rel`: LLVM 22's SPIR-V
//!   backend spells relaxed semantics as `OpConstantNull`, which it then also uses as a
//!   struct index, which is invalid). `f32` `add` needs `SPV_EXT_shader_atomic_float_add`.
//! - `cmpxchg` calls the backend's own `llvm.spv.cmpxchg` intrinsic: an LLVM `cmpxchg`
//!   instruction crashes LLVM 22's SPIR-V backend, which takes the instruction's result type
//!   `{T, i1}` as the pointee type of its pointer and inserts a pointer cast that
//!   SPIRVLegalizePointerCast cannot lower for an atomic (`llvm_unreachable`). The intrinsic
//!   returns its result as `i32` whatever `T` is, followed by `llvm.spv.extractv` of the
//!   real type; the backend then emits two `OpCompositeInsert`s into a scalar around the
//!   correct `OpAtomicCompareExchange`, which `crate::cmpxchg` removes from the words.
//! - `f32` `min`/`max` are a compare-and-swap loop on the integer bits computing exactly the
//!   interpreter's `min`/`max` (NaN operands lose, `-0` below `+0`), so no float min/max
//!   atomic extension is needed: `OpAtomicFMaxEXT` never finished on an H100
//!   (docs/executor.md). The memory is read through an `i32` view of the binding, and
//!   work-group arrays they update hold `i32` bits (memory.rs), where `add` and `xchg` then
//!   go through the integer bits too.

use super::memory::Place;
use super::types;
use super::{Lowerer, Val};
use crate::error::CodegenError;
use cmdgraph_ir::kernel::{AtomicOp, MemBase, OpKind, V};
use cmdgraph_ir::{Handle, Op, ScalarType, Type, ValueDef, ValueType};
use std::collections::BTreeSet;

/// SPIR-V scopes (the intrinsic takes them as numbers).
const SCOPE_DEVICE: u32 = 1;
const SCOPE_WORKGROUP: u32 = 2;
/// SPIR-V memory semantics bits.
const ACQUIRE: u32 = 0x2;
const ACQUIRE_RELEASE: u32 = 0x8;
const UNIFORM_MEMORY: u32 = 0x40;
const WORKGROUP_MEMORY: u32 = 0x100;

/// A pointer to the element an atomic updates, and what it needs to know about it.
struct Target {
    ptr: Val,
    /// `11` (storage buffer) or `3` (work-group).
    space: u32,
    /// `device` or `workgroup` (LLVM sync scope).
    scope: &'static str,
}

impl Lowerer<'_> {
    /// The memories `atomic min`/`max` on `f32` update: slots (then read through an `i32`
    /// view) and work-group arrays (by value index; then held as `i32` bits).
    pub(super) fn float_cas_targets(&self) -> (BTreeSet<u32>, BTreeSet<usize>) {
        let (mut slots, mut locals) = (BTreeSet::new(), BTreeSet::new());
        let layout = self.plan.layout;
        let f32_slot = |s: u32| layout.slots.get(s as usize).is_some_and(|x| x.elem == Type::scalar(ScalarType::F32));
        for (_, op) in self.plan.body.ops.iter() {
            let OpKind::Atomic { op: AtomicOp::Min | AtomicOp::Max, mem, .. } = op.kind else { continue };
            match mem {
                MemBase::Global(g) => {
                    if let Some(&(_, s)) = layout.globals.iter().find(|(x, _)| *x == g) {
                        if f32_slot(s) {
                            slots.insert(s);
                        }
                    }
                }
                MemBase::Value(v) => match self.plan.body.values.try_get(v).map(|x| (x.ty, x.def)) {
                    Some((ValueType::Buffer { .. }, ValueDef::Param(i))) => {
                        if let Some(s) = layout.param_slot.get(i as usize).copied().flatten() {
                            if f32_slot(s) {
                                slots.insert(s);
                            }
                        }
                    }
                    Some((ValueType::Local { elem }, _)) if elem == Type::scalar(ScalarType::F32) => {
                        locals.insert(v.index());
                    }
                    _ => {}
                },
            }
        }
        (slots, locals)
    }

    /// `atomic op mem[index], value` and `atomic cmpxchg mem[index], expected, value`; the
    /// result is the old value. Out of range (memory.rs), nothing happens and the result is 0.
    pub fn atomic(
        &mut self,
        h: Handle<Op>,
        aop: AtomicOp,
        mem: MemBase,
        index: V,
        value: V,
        expected: Option<V>,
    ) -> Result<Val, CodegenError> {
        let ok = self.in_bounds(h, mem, index)?;
        let r = self.guarded(ok, |l| l.atomic_unchecked(h, aop, mem, index, value, expected).map(Some))?;
        r.ok_or_else(|| self.err(h, "atomic without a value"))
    }

    fn atomic_unchecked(
        &mut self,
        h: Handle<Op>,
        aop: AtomicOp,
        mem: MemBase,
        index: V,
        value: V,
        expected: Option<V>,
    ) -> Result<Val, CodegenError> {
        let (place, elem) = self.place(h, mem)?;
        if elem.lanes != 1 || !cmdgraph_ir::kernel::atomic_scalar(aop, elem.scalar) || self.width > 1 {
            return Err(self.err(h, format!("atomic {} on {elem}", aop.keyword())));
        }
        if matches!(elem.scalar, ScalarType::I64 | ScalarType::U64) {
            // The backend's Vulkan environment lacks `Int64Atomics`: llc aborts with "Unable
            // to meet SPIR-V requirements" (docs/codegen.md, "Atomics").
            return Err(self.err(
                h,
                format!(
                    "atomic {} on {elem}: LLVM 22's SPIR-V backend cannot emit 64-bit atomics for Vulkan; use a 32-bit element or split the value",
                    aop.keyword()
                ),
            ));
        }
        let float = elem.scalar == ScalarType::F32;
        if aop == AtomicOp::CompareExchange && float {
            return Err(self.err(h, "atomic cmpxchg on f32"));
        }
        let v = self.val(h, value)?;
        let bits = float && (matches!(aop, AtomicOp::Min | AtomicOp::Max) || self.int_backed(&place));
        let target = self.target(h, &place, index, if bits { "i32" } else { types::scalar(elem.scalar) })?;
        if bits {
            return self.float_bits_atomic(aop, &target, &v);
        }
        let ty = types::scalar(elem.scalar);
        if aop == AtomicOp::CompareExchange {
            let e = match expected {
                Some(e) => self.val(h, e)?,
                None => return Err(self.err(h, "atomic cmpxchg without an expected value")),
            };
            return Ok(self.cmpxchg(&target, ty, &e, &v));
        }
        let signed = types::signed(elem.scalar);
        let op = match aop {
            AtomicOp::Add if float => "fadd",
            AtomicOp::Add => "add",
            AtomicOp::Sub => "sub",
            AtomicOp::And => "and",
            AtomicOp::Or => "or",
            AtomicOp::Xor => "xor",
            AtomicOp::Exchange => "xchg",
            AtomicOp::Min if signed => "min",
            AtomicOp::Max if signed => "max",
            AtomicOp::Min => "umin",
            AtomicOp::Max => "umax",
            AtomicOp::CompareExchange => return Err(self.err(h, "atomic cmpxchg")),
        };
        Ok(self.rmw(&target, op, &v))
    }

    /// The element pointer of an atomic, typed `ty` (`i32` for the bits of an `f32`).
    fn target(&mut self, h: Handle<Op>, place: &Place, index: V, ty: &str) -> Result<Target, CodegenError> {
        let idx = self.index32(h, index)?;
        let (space, scope) = match place {
            Place::Local(..) => (3, "workgroup"),
            Place::Slot(_) => (11, "device"),
        };
        let (mut handle, writable) = self.slot_handle(place);
        if let (Place::Slot(s), "i32", false) = (place, ty, self.int_backed(place)) {
            if let Some(Some(view)) = self.int_views.get(*s as usize) {
                handle = view.clone();
            }
        }
        let ptr = self.pointer(place, ty, (&handle, &format!("[0 x {ty}]"), writable), idx)?;
        Ok(Target { ptr, space, scope })
    }

    /// `atomicrmw op`, returning the old value.
    fn rmw(&mut self, t: &Target, op: &str, v: &Val) -> Val {
        self.ir
            .emit(&v.ty, format!("atomicrmw {op} {}, {} syncscope(\"{}\") acq_rel", t.ptr.typed(), v.typed(), t.scope))
    }

    /// Compare-and-swap of `ty` values: stores `new` if the element equals `expected`;
    /// returns the old value.
    fn cmpxchg(&mut self, t: &Target, ty: &str, expected: &Val, new: &Val) -> Val {
        let (scope, storage) =
            if t.space == 3 { (SCOPE_WORKGROUP, WORKGROUP_MEMORY) } else { (SCOPE_DEVICE, UNIFORM_MEMORY) };
        let (equal, unequal) = (ACQUIRE_RELEASE | storage, ACQUIRE | storage);
        let pt = format!("ptr addrspace({})", t.space);
        let f = format!("llvm.spv.cmpxchg.p{}", t.space);
        self.ir.declare(format!("declare i32 @{f}({pt}, ...)"));
        let raw = self.ir.emit(
            "i32",
            format!(
                "call i32 ({pt}, ...) @{f}({}, {ty} {}, {ty} {}, i32 {scope}, i32 {equal}, i32 {unequal})",
                t.ptr.typed(),
                expected.v,
                new.v
            ),
        );
        let x = format!("llvm.spv.extractv.{ty}");
        self.ir.declare(format!("declare {ty} @{x}(i32, ...)"));
        self.ir.emit(ty, format!("call {ty} (i32, ...) @{x}(i32 {}, i32 0)", raw.v))
    }

    /// An `f32` atomic on `i32` bits: `xchg` directly, everything else as a
    /// compare-and-swap loop that computes the new bits from the current ones.
    fn float_bits_atomic(&mut self, aop: AtomicOp, t: &Target, v: &Val) -> Result<Val, CodegenError> {
        let vb = self.ir.emit("i32", format!("bitcast {} to i32", v.typed()));
        if aop == AtomicOp::Exchange {
            let old = self.rmw(t, "xchg", &vb);
            return Ok(self.ir.emit("float", format!("bitcast i32 {} to float", old.v)));
        }
        // An atomic read (`or 0`) for the first guess; a plain load would race with the
        // other work-items' atomics.
        let zero = Val::new("i32", "0");
        let first = self.rmw(t, "or", &zero);
        let pre = self.ir.block.clone();
        let head = self.ir.label("cas");
        let done = self.ir.label("cas_done");
        self.ir.inst(format!("br label %{head}"));
        self.ir.start(&head);
        let cur = self.ir.tmp();
        let phi = self.ir.placeholder();
        let cur_v = Val::new("i32", cur.clone());
        let new = match aop {
            AtomicOp::Add => {
                let a = self.ir.emit("float", format!("bitcast i32 {cur} to float"));
                let s = self.ir.emit("float", format!("fadd float {}, {}", a.v, v.v));
                self.ir.emit("i32", format!("bitcast float {} to i32", s.v))
            }
            AtomicOp::Min | AtomicOp::Max => self.min_max_bits(aop == AtomicOp::Min, &cur_v, &vb),
            _ => return Err(self.err_kernel(format!("atomic {} on f32", aop.keyword()))),
        };
        let seen = self.cmpxchg(t, "i32", &cur_v, &new);
        let ok = self.ir.emit("i1", format!("icmp eq i32 {}, {cur}", seen.v));
        let latch = self.ir.block.clone();
        self.ir.inst(format!("br i1 {}, label %{done}, label %{head}", ok.v));
        self.ir.patch(phi, format!("  {cur} = phi i32 [ {}, %{pre} ], [ {}, %{latch} ]", first.v, seen.v));
        self.ir.start(&done);
        Ok(self.ir.emit("float", format!("bitcast i32 {cur} to float")))
    }

    /// The bits of the interpreter's `min`/`max` of the `f32`s with bits `a` (the memory)
    /// and `b` (the operand): a NaN operand gives the other one, equal operands (only zeros
    /// differ in bits) give `-0` for `min` and `+0` for `max`, else the smaller/larger.
    /// Selected on bits, so NaN payloads and signs pass through unchanged.
    fn min_max_bits(&mut self, min: bool, a: &Val, b: &Val) -> Val {
        let af = self.ir.emit("float", format!("bitcast i32 {} to float", a.v));
        let bf = self.ir.emit("float", format!("bitcast i32 {} to float", b.v));
        let a_nan = self.ir.emit("i1", format!("fcmp une float {}, {}", af.v, af.v));
        let b_nan = self.ir.emit("i1", format!("fcmp une float {}, {}", bf.v, bf.v));
        let eq = self.ir.emit("i1", format!("fcmp oeq float {}, {}", af.v, bf.v));
        let pred = if min { "olt" } else { "ogt" };
        let a_wins = self.ir.emit("i1", format!("fcmp {pred} float {}, {}", af.v, bf.v));
        let zeros = self.ir.emit("i32", format!("{} i32 {}, {}", if min { "or" } else { "and" }, a.v, b.v));
        let r = self.ir.emit("i32", format!("select i1 {}, i32 {}, i32 {}", a_wins.v, a.v, b.v));
        let r = self.ir.emit("i32", format!("select i1 {}, i32 {}, i32 {}", eq.v, zeros.v, r.v));
        let r = self.ir.emit("i32", format!("select i1 {}, i32 {}, i32 {}", b_nan.v, a.v, r.v));
        self.ir.emit("i32", format!("select i1 {}, i32 {}, i32 {}", a_nan.v, b.v, r.v))
    }
}
