//! Loads, stores and atomics on buffers, device globals and work-group memory.
//!
//! A buffer element `i` is element `offset + i` of the slot's binding, `offset` being the
//! parameter's element-offset word in the argument block (0 for device globals). `bool`
//! is one byte in memory. In the vectorized path the index is known to be the global id,
//! so 4 consecutive elements are one `<4 x T>` element of the slot's vector view.
//!
//! Every access to a slot is bounds-checked (docs/abi.md, "Bounds"): it runs only when the
//! index, compared unsigned at its own width (so a negative index is out of range), is below
//! the slot's element count (the count word after the offset word; a constant for device
//! globals). An out-of-range load gives 0, an out-of-range store or atomic does nothing and
//! an atomic's result is then 0. The vectorized path checks its 4 elements once per
//! invocation (lower/mod.rs) and takes the scalar path, checked per access, otherwise.

use super::types::{self, reg};
use super::{Lowerer, Val};
use crate::error::CodegenError;
use cmdgraph_ir::kernel::{MemBase, OpKind, V};
use cmdgraph_ir::{Handle, Op, ParamType, ScalarType, Type, ValueDef, ValueType};

/// Where an access goes.
pub(super) enum Place {
    /// Memory slot `slot` (binding `1 + slot`).
    Slot(u32),
    /// Work-group array `name` of `capacity` elements.
    Local(String, u64),
}

impl Lowerer<'_> {
    /// Declares one work-group array per `local` op and `local<T>` parameter.
    pub fn declare_locals(&mut self) -> Result<(), CodegenError> {
        let body = self.plan.body;
        let mut capacities = self.plan.variant.local_capacity.iter();
        let mut found = Vec::new();
        for (i, p) in self.plan.kernel.params.iter().enumerate() {
            if let ParamType::Local { elem } = p.ty {
                let cap = *capacities.next().ok_or_else(|| self.err_kernel("missing local capacity"))?;
                if let Some((v, _)) = body.values.iter().nth(i) {
                    found.push((v.index(), elem, cap, false));
                }
            }
        }
        for (_, op) in body.ops.iter() {
            if let (OpKind::LocalAlloc { elem, count }, Some(&v)) = (&op.kind, op.results.first()) {
                found.push((v.index(), *elem, *count, true));
            }
        }
        let int_backed = self.float_cas_targets().1;
        if !found.is_empty() {
            // The local id shifted right by 31 is 0 (work-groups have at most 1024 items), but
            // LLVM cannot prove it. Added to every work-group index, it keeps the pass
            // pipeline from folding an access to element 0 into a bare pointer to the whole
            // array, which LLVM 22's SPIR-V backend crashes on (SPIRVLegalizePointerCast).
            let id = self.ir.call("i32", "llvm.spv.thread.id.in.group.i32", &[Val::new("i32", "0")]);
            self.local_zero = self.ir.emit("i32", format!("lshr i32 {}, 31", id.v)).v;
        }
        for (v, elem, cap, zeroed) in found {
            if cap > u32::MAX as u64 / elem.size().max(1) {
                return Err(self.err_kernel(format!("work-group memory of {cap} elements is too large")));
            }
            let name = format!("@__cg_local{}", self.locals.len());
            let n = cap.max(1);
            // An `f32` array that `atomic min`/`max` update holds the bits as `i32`: the
            // compare-and-swap those lower to (atomic.rs) needs an integer pointer, and the
            // backend types a work-group array by one element type for every access.
            let mt = if int_backed.contains(&v) {
                self.int_locals.insert(v);
                "i32".to_string()
            } else {
                types::mem(elem)
            };
            // A `local` op's memory is zero at the start of each group (docs/ir.md: SYCL's
            // `group_local_memory` value-initialises): a null initializer, which Vulkan 1.3
            // guarantees through `shaderZeroInitializeWorkgroupMemory` (the executor enables
            // it). A `local<T>` parameter's memory is undefined, as in SYCL.
            let init = if zeroed { "zeroinitializer" } else { "poison" };
            self.ir.globals.push(format!("{name} = internal addrspace(3) global [{n} x {mt}] {init}, align 16"));
            self.locals.push((v, name, elem, n));
        }
        Ok(())
    }

    pub(super) fn place(&self, h: Handle<Op>, mem: MemBase) -> Result<(Place, Type), CodegenError> {
        let layout = self.plan.layout;
        match mem {
            MemBase::Global(g) => {
                let slot = layout.globals.iter().find(|(x, _)| *x == g).map(|(_, s)| *s);
                let slot = slot.ok_or_else(|| self.err(h, "device_global has no memory slot"))?;
                let elem = layout.slots.get(slot as usize).map(|s| s.elem).ok_or_else(|| self.err(h, "slot"))?;
                Ok((Place::Slot(slot), elem))
            }
            MemBase::Value(v) => {
                let value = self.plan.body.values.try_get(v).ok_or_else(|| self.err(h, "memory value"))?;
                match (value.ty, value.def) {
                    (ValueType::Buffer { elem, .. }, ValueDef::Param(i)) => {
                        let slot = layout.param_slot.get(i as usize).copied().flatten();
                        Ok((Place::Slot(slot.ok_or_else(|| self.err(h, "buffer without slot"))?), elem))
                    }
                    (ValueType::Local { elem }, _) => {
                        let local = self.locals.iter().find(|(x, ..)| *x == v.index());
                        let (_, name, _, cap) = local.ok_or_else(|| self.err(h, "work-group memory not declared"))?;
                        Ok((Place::Local(name.clone(), *cap), elem))
                    }
                    _ => Err(self.err(h, "not a memory value")),
                }
            }
        }
    }

    /// The element index as `i32`, before the slot offset.
    pub(super) fn index32(&mut self, h: Handle<Op>, index: V) -> Result<Val, CodegenError> {
        let t = self.data_ty(h, index)?;
        let v = self.val(h, index)?;
        if !t.scalar.is_integer() || t.lanes != 1 || self.width > 1 {
            return Err(self.err(h, format!("index of type {t}")));
        }
        Ok(if types::bits(t.scalar) == 64 { self.ir.emit("i32", format!("trunc {} to i32", v.typed())) } else { v })
    }

    /// A pointer to element `index` of `place`, through `handle` (slot views).
    pub(super) fn pointer(
        &mut self,
        place: &Place,
        elem_ty: &str,
        (handle, array, writable): (&str, &str, bool),
        idx: Val,
    ) -> Result<Val, CodegenError> {
        match place {
            Place::Slot(slot) => {
                let idx = match self.offsets.get(*slot as usize).cloned().flatten() {
                    Some(off) => self.ir.emit("i32", format!("add i32 {}, {}", idx.v, off.v)),
                    None => idx,
                };
                let w = u8::from(writable);
                let m = format!("tspirv.VulkanBuffer_{}_12_{w}t", types::mangle(array));
                let f = format!("llvm.spv.resource.getpointer.p11.{m}");
                let ht = format!("target(\"spirv.VulkanBuffer\", {array}, 12, {w})");
                self.ir.declare(format!("declare ptr addrspace(11) @{f}({ht}, i32)"));
                Ok(self
                    .ir
                    .emit("ptr addrspace(11)", format!("call ptr addrspace(11) @{f}({ht} {handle}, i32 {})", idx.v)))
            }
            Place::Local(name, cap) => {
                let idx = self.ir.emit("i32", format!("add i32 {}, {}", idx.v, self.local_zero));
                Ok(self.ir.emit(
                    "ptr addrspace(3)",
                    format!("getelementptr [{cap} x {elem_ty}], ptr addrspace(3) {name}, i32 0, i32 {}", idx.v),
                ))
            }
        }
    }

    /// The pointer an access at `index` uses, and the element's memory type.
    fn element(&mut self, h: Handle<Op>, mem: MemBase, index: V) -> Result<(Val, Type), CodegenError> {
        let (place, elem) = self.place(h, mem)?;
        let mt = types::mem(elem);
        if self.width > 1 {
            let Place::Slot(slot) = place else { return Err(self.err(h, "vectorized work-group memory")) };
            let base = self.vec_base.clone().ok_or_else(|| self.err(h, "vector base"))?;
            let handle =
                self.vec_handles.get(slot as usize).cloned().flatten().ok_or_else(|| self.err(h, "vector view"))?;
            let start = match self.offsets.get(slot as usize).cloned().flatten() {
                Some(off) => self.ir.emit("i32", format!("add i32 {}, {}", base.v, off.v)),
                None => base,
            };
            let quad = self.ir.emit("i32", format!("lshr i32 {}, 2", start.v));
            let vt = format!("<4 x {}>", types::mem_scalar(elem.scalar));
            let array = format!("[0 x {vt}]");
            let w = u8::from(self.plan.layout.slots.get(slot as usize).is_some_and(|s| s.writes));
            let m = format!("tspirv.VulkanBuffer_{}_12_{w}t", types::mangle(&array));
            let f = format!("llvm.spv.resource.getpointer.p11.{m}");
            let ht = format!("target(\"spirv.VulkanBuffer\", {array}, 12, {w})");
            self.ir.declare(format!("declare ptr addrspace(11) @{f}({ht}, i32)"));
            let p = self
                .ir
                .emit("ptr addrspace(11)", format!("call ptr addrspace(11) @{f}({ht} {handle}, i32 {})", quad.v));
            return Ok((p, elem));
        }
        let idx = self.index32(h, index)?;
        let (handle, writable) = self.slot_handle(&place);
        let mt = if self.int_backed(&place) {
            "i32".to_string()
        } else if matches!(place, Place::Slot(_)) {
            types::buffer_mem(elem)
        } else {
            mt
        };
        let p = self.pointer(&place, &mt, (&handle, &format!("[0 x {mt}]"), writable), idx)?;
        Ok((p, elem))
    }

    /// Whether `place` is a work-group array of `f32` stored as `i32` bits.
    pub(super) fn int_backed(&self, place: &Place) -> bool {
        match place {
            Place::Local(name, _) => self.locals.iter().any(|(v, n, ..)| n == name && self.int_locals.contains(v)),
            Place::Slot(_) => false,
        }
    }

    /// The scalar-view handle of a slot place and whether it is writable.
    pub(super) fn slot_handle(&self, place: &Place) -> (String, bool) {
        match place {
            Place::Slot(s) => (
                self.handles.get(*s as usize).cloned().unwrap_or_default(),
                self.plan.layout.slots.get(*s as usize).is_some_and(|x| x.writes),
            ),
            Place::Local(..) => (String::new(), false),
        }
    }

    fn align(&self, elem: Type) -> u64 {
        let a = if self.width > 1 { elem.scalar.size() * 4 } else { elem.size() };
        a.max(1)
    }

    /// The element count of `mem` as an `i32`: a buffer slot's count word, or a work-group
    /// array's capacity (what `len` gives and what the bounds checks compare with).
    pub(super) fn element_count(&mut self, h: Handle<Op>, mem: MemBase) -> Result<Val, CodegenError> {
        match self.place(h, mem)?.0 {
            Place::Slot(slot) => self.counts.get(slot as usize).cloned().ok_or_else(|| self.err(h, "slot count")),
            Place::Local(_, capacity) => {
                let capacity =
                    u32::try_from(capacity).map_err(|_| self.err(h, "work-group array above 2^32 elements"))?;
                Ok(Val { ty: "i32".into(), v: capacity.to_string() })
            }
        }
    }

    /// `i1` true when an access at `index` to `mem` is inside its memory, or `None` when the
    /// access needs no check here (the vectorized path, checked once per invocation).
    /// Work-group memory is checked against its array's capacity: an index past it would
    /// reach whatever the device keeps beside the array (on llvmpipe, the process's heap);
    /// an index whose range (ranges.rs) stays below the capacity needs no check.
    pub(super) fn in_bounds(&mut self, h: Handle<Op>, mem: MemBase, index: V) -> Result<Option<Val>, CodegenError> {
        if self.width > 1 {
            return Ok(None);
        }
        // A work-group array indexed below its capacity on every work-item (ranges.rs).
        if let Place::Local(_, capacity) = self.place(h, mem)?.0 {
            if self.ranges.get(index.index()).copied().flatten().is_some_and(|(_, hi)| hi < capacity) {
                return Ok(None);
            }
        }
        let count = self.element_count(h, mem)?;
        let t = self.data_ty(h, index)?;
        let v = self.val(h, index)?;
        if !t.scalar.is_integer() || t.lanes != 1 {
            return Err(self.err(h, format!("index of type {t}")));
        }
        Ok(Some(if types::bits(t.scalar) == 64 {
            // Unsigned in 64 bits: a negative `i64` is above any count, and no index wraps
            // into range before the comparison (the address is computed in 32 bits after it).
            let wide = self.ir.emit("i64", format!("zext i32 {} to i64", count.v));
            self.ir.emit("i1", format!("icmp ult {}, {}", v.typed(), wide.v))
        } else {
            let below = self.ir.emit("i1", format!("icmp ult i32 {}, {}", v.v, count.v));
            if t.scalar.is_signed_integer() {
                // A negative `i32` compares unsigned at 2^31 or more, which a count above
                // 2^31 (a 1-byte element type in more than 2 GiB) could exceed.
                let nonneg = self.ir.emit("i1", format!("icmp sge i32 {}, 0", v.v));
                self.ir.emit("i1", format!("and i1 {}, {}", below.v, nonneg.v))
            } else {
                below
            }
        }))
    }

    /// Runs `access` only where `ok` holds (always when `None`): a diamond whose merge
    /// block gives the access's result, or zero of `ty` where it did not run.
    pub(super) fn guarded(
        &mut self,
        ok: Option<Val>,
        access: impl FnOnce(&mut Self) -> Result<Option<Val>, CodegenError>,
    ) -> Result<Option<Val>, CodegenError> {
        let Some(ok) = ok else { return access(self) };
        let from = self.ir.block.clone();
        let go = self.ir.label("in_bounds");
        let merge = self.ir.label("bounds_done");
        self.ir.inst(format!("br i1 {}, label %{go}, label %{merge}", ok.v));
        self.ir.start(&go);
        let r = access(self)?;
        let end = self.ir.block.clone();
        self.ir.inst(format!("br label %{merge}"));
        self.ir.start(&merge);
        Ok(match r {
            Some(r) => {
                Some(self.ir.emit(&r.ty, format!("phi {} [ {}, %{end} ], [ zeroinitializer, %{from} ]", r.ty, r.v)))
            }
            None => None,
        })
    }

    /// `load mem[index]`; 0 where the index is out of range.
    pub fn load(&mut self, h: Handle<Op>, mem: MemBase, index: V) -> Result<Val, CodegenError> {
        let ok = self.in_bounds(h, mem, index)?;
        let r = self.guarded(ok, |l| l.load_unchecked(h, mem, index).map(Some))?;
        r.ok_or_else(|| self.err(h, "load without a value"))
    }

    /// `store mem[index], value`; nothing where the index is out of range.
    pub fn store(&mut self, h: Handle<Op>, mem: MemBase, index: V, value: V) -> Result<(), CodegenError> {
        let ok = self.in_bounds(h, mem, index)?;
        self.guarded(ok, |l| l.store_unchecked(h, mem, index, value).map(|()| None)).map(|_| ())
    }

    fn load_unchecked(&mut self, h: Handle<Op>, mem: MemBase, index: V) -> Result<Val, CodegenError> {
        if self.width == 1 && self.place(h, mem).is_ok_and(|(p, _)| self.int_backed(&p)) {
            let (p, _) = self.element(h, mem, index)?;
            let bits = self.ir.emit("i32", format!("load i32, {}, align 4", p.typed()));
            return Ok(self.ir.emit("float", format!("bitcast i32 {} to float", bits.v)));
        }
        let padded = self.width == 1 && elem_is_padded(self.place(h, mem));
        let (p, elem) = self.element(h, mem, index)?;
        let lanes = if self.width > 1 { self.width } else { elem.lanes };
        let mt = types::vector(types::mem_scalar(elem.scalar), lanes);
        let a = self.align(elem);
        let raw = if padded {
            // A buffer `vec3` through its `vec4` view: the first three lanes.
            let wide = types::vector(types::mem_scalar(elem.scalar), 4);
            let all = self.ir.emit(&wide, format!("load {wide}, {}, align {a}", p.typed()));
            self.ir.emit(&mt, format!("shufflevector {wide} {}, {wide} poison, <3 x i32> <i32 0, i32 1, i32 2>", all.v))
        } else {
            self.ir.emit(&mt, format!("load {mt}, {}, align {a}", p.typed()))
        };
        if elem.scalar != ScalarType::Bool {
            return Ok(raw);
        }
        let rt = reg(elem, self.width);
        let zero = types::splat_const(Type::vector(ScalarType::U32, lanes), 1, "0").replace("i32", "i8");
        Ok(self.ir.emit(&rt, format!("icmp ne {mt} {}, {zero}", raw.v)))
    }

    fn store_unchecked(&mut self, h: Handle<Op>, mem: MemBase, index: V, value: V) -> Result<(), CodegenError> {
        let v = self.val(h, value)?;
        if self.width == 1 && self.place(h, mem).is_ok_and(|(p, _)| self.int_backed(&p)) {
            let (p, _) = self.element(h, mem, index)?;
            let bits = self.ir.emit("i32", format!("bitcast {} to i32", v.typed()));
            self.ir.inst(format!("store i32 {}, {}, align 4", bits.v, p.typed()));
            return Ok(());
        }
        let padded = self.width == 1 && elem_is_padded(self.place(h, mem));
        let (p, elem) = self.element(h, mem, index)?;
        let lanes = if self.width > 1 { self.width } else { elem.lanes };
        let mt = types::vector(types::mem_scalar(elem.scalar), lanes);
        let v =
            if elem.scalar == ScalarType::Bool { self.ir.emit(&mt, format!("zext {} to {mt}", v.typed())) } else { v };
        let a = self.align(elem);
        let v = if padded {
            // A buffer `vec3` through its `vec4` view: the fourth lane (padding) keeps its
            // bytes. Only this work-item may write the element (anything else is a race), so
            // reading it back first is sound.
            let wide = types::vector(types::mem_scalar(elem.scalar), 4);
            let old = self.ir.emit(&wide, format!("load {wide}, {}, align {a}", p.typed()));
            let grown = self.ir.emit(
                &wide,
                format!("shufflevector {}, {mt} poison, <4 x i32> <i32 0, i32 1, i32 2, i32 poison>", v.typed()),
            );
            self.ir.emit(
                &wide,
                format!("shufflevector {wide} {}, {wide} {}, <4 x i32> <i32 0, i32 1, i32 2, i32 7>", grown.v, old.v),
            )
        } else {
            v
        };
        self.ir.inst(format!("store {}, {}, align {a}", v.typed(), p.typed()));
        Ok(())
    }
}

/// Whether an access to `place` goes through a buffer's `vec4` view of a `vec3` element
/// ([`types::buffer_mem`]).
fn elem_is_padded(place: Result<(Place, Type), CodegenError>) -> bool {
    matches!(place, Ok((Place::Slot(_), t)) if t.lanes == 3)
}
