//! Kernel IR → textual LLVM IR for the Vulkan SPIR-V backend (docs/codegen.md).
//!
//! One entry function per kernel variant. Values of the kernel language become SSA values
//! (`bool` is `i1`, vectors are LLVM vectors); `for` and `if` become natural loops and
//! diamonds whose results are phis, which the SPIR-V backend structurizes; memory goes
//! through `llvm.spv.resource.*` handles on the bindings of docs/abi.md.

mod atomic;
mod budget;
mod builtins;
mod control;
mod general_loop;
mod half;
mod ir;
mod loop_tail;
mod memory;
mod ops;
mod ranges;
mod subgroup;
pub(crate) mod types;

use crate::error::CodegenError;
use crate::layout::{Layout, HEADER_BYTES};
use crate::target::{DATA_LAYOUT, TRIPLE};
use crate::vectorize::ITEMS_PER_INVOCATION;
use crate::Variant;
use cmdgraph_ir::kernel::{Body, OpKind, Region};
use cmdgraph_ir::{Handle, Kernel, Op, ParamType, Type, ValueType};
pub(crate) use ir::{IrWriter, Val};

/// Deepest region nesting lowered (docs/ir.md's bound).
const MAX_NESTING: usize = 256;

/// What one kernel variant is lowered with.
pub(crate) struct Plan<'a> {
    /// The kernel.
    pub kernel: &'a Kernel,
    /// Its body.
    pub body: &'a Body,
    /// The variant.
    pub variant: &'a Variant,
    /// Its argument layout.
    pub layout: &'a Layout,
    /// Whether to handle 4 work-items per invocation (vectorize.rs decided it may).
    pub vectorize: bool,
}

/// Lowering state.
pub(crate) struct Lowerer<'a> {
    pub plan: &'a Plan<'a>,
    pub ir: IrWriter,
    /// LLVM value per kernel value (by handle index).
    pub vals: Vec<Option<Val>>,
    /// Work-items per value: 1, or 4 in the vectorized path.
    pub width: u8,
    /// Global id 0 (offset included) of the current work-item(s), when it is not
    /// `thread.id + offset` (the vectorized kernel's paths).
    pub gid0: Option<Val>,
    /// In the vectorized path: global id of the first of the 4 work-items.
    pub vec_base: Option<Val>,
    /// Argument block handle.
    pub args: String,
    /// Argument block handle as `f32`s (empty when no `f32` parameter needs it).
    pub args_f32: String,
    /// Per memory slot: its handle.
    pub handles: Vec<String>,
    /// Per memory slot: its `<4 x T>` handle (vectorized kernels).
    pub vec_handles: Vec<Option<String>>,
    /// Work-group arrays: (value index, global name, element type, capacity).
    pub locals: Vec<(usize, String, Type, u64)>,
    /// Per memory slot: an `i32` view of an `f32` slot that `atomic min`/`max` update
    /// through compare-and-swap (atomic.rs).
    pub int_views: Vec<Option<String>>,
    /// Work-group arrays of `f32` held as `i32` bits (value indices; atomic.rs).
    pub int_locals: std::collections::BTreeSet<usize>,
    /// A zero the optimizer cannot see through, added to work-group indices (memory.rs).
    pub local_zero: String,
    /// Per memory slot: its element count (`i32`), read once in the entry block so that the
    /// bounds checks of every access share one load (memory.rs, "in_bounds"): a load of the
    /// argument block after a store to a slot is not merged with one before it, since LLVM
    /// cannot tell the two bindings apart.
    pub counts: Vec<Val>,
    /// Per memory slot: its pointer's element offset (`i32`), read in the entry block beside
    /// the count, so that an access's address does not wait on a load of the argument block
    /// inside the access's bounds-check branch (one load per slot, not one per access).
    pub offsets: Vec<Option<Val>>,
    /// Whether innermost `for` loops get several body copies per back-edge (budget.rs).
    pub unroll: bool,
    /// The range of each `u32` value where known (ranges.rs): work-group accesses whose index
    /// provably stays below the array's capacity need no bounds check.
    pub ranges: Vec<Option<ranges::Range>>,
    /// The predicate binding's handle, once made (loop_tail.rs).
    pub predicate: String,
    /// A loop's variant: the words its tail uses, read at the entry (loop_tail.rs).
    pub tail: Option<TailWords>,
}

/// The entry-block values a loop's variant ends with (loop_tail.rs).
#[derive(Clone)]
pub(crate) struct TailWords {
    /// Mode 3 (`i1`).
    mode3: Val,
    /// The condition's element (argument-block word 7).
    element: Val,
    /// The next round's word and the tally's word in the predicate binding.
    next: Val,
    tally: Val,
    /// The tally's value before this dispatch.
    old: Val,
}

impl<'a> Lowerer<'a> {
    /// An error at op `h`.
    pub fn err(&self, h: Handle<Op>, message: impl Into<String>) -> CodegenError {
        CodegenError::Unsupported {
            kernel: self.plan.kernel.name.clone(),
            op: Some(h.index()),
            span: self.plan.body.ops.span(h),
            message: message.into(),
        }
    }

    /// An error not tied to an op.
    pub fn err_kernel(&self, message: impl Into<String>) -> CodegenError {
        CodegenError::unsupported(&self.plan.kernel.name, message)
    }

    /// The LLVM value of kernel value `v`.
    pub fn val(&self, h: Handle<Op>, v: cmdgraph_ir::kernel::V) -> Result<Val, CodegenError> {
        self.vals
            .get(v.index())
            .and_then(|x| x.clone())
            .ok_or_else(|| self.err(h, format!("value #{} is not defined here", v.index())))
    }

    /// The data type of kernel value `v`.
    pub fn data_ty(&self, h: Handle<Op>, v: cmdgraph_ir::kernel::V) -> Result<Type, CodegenError> {
        match self.plan.body.values.try_get(v).map(|x| x.ty) {
            Some(ValueType::Data(t)) => Ok(t),
            _ => Err(self.err(h, format!("value #{} is not data", v.index()))),
        }
    }

    /// Defines result `i` of op `op`.
    pub fn set(&mut self, h: Handle<Op>, op: &Op, i: usize, val: Val) -> Result<(), CodegenError> {
        let v = *op.results.get(i).ok_or_else(|| self.err(h, format!("the op has no result {i}")))?;
        match self.vals.get_mut(v.index()) {
            Some(slot) => {
                *slot = Some(val);
                Ok(())
            }
            None => Err(self.err(h, "result value out of range")),
        }
    }

    /// Binds a value directly (loop variables, carried values).
    pub fn bind(&mut self, v: cmdgraph_ir::kernel::V, val: Val) {
        if let Some(slot) = self.vals.get_mut(v.index()) {
            *slot = Some(val);
        }
    }

    /// Lowers a region; returns the values of its `yield`, if it ends with one.
    pub fn region(&mut self, region: &'a Region, depth: usize) -> Result<Option<Vec<Val>>, CodegenError> {
        if depth > MAX_NESTING {
            return Err(self.err_kernel(format!("regions nest deeper than {MAX_NESTING}")));
        }
        for &h in &region.ops {
            let op = self.plan.body.ops.try_get(h).ok_or_else(|| self.err(h, "op handle out of range"))?;
            match &op.kind {
                OpKind::Yield(values) => {
                    let mut out = Vec::with_capacity(values.len());
                    for &v in values {
                        out.push(self.val(h, v)?);
                    }
                    return Ok(Some(out));
                }
                OpKind::For { var, lo, hi, step, carried, body } => {
                    self.for_loop(h, op, (*var, *lo, *hi, *step), carried, body, depth)?
                }
                OpKind::If { cond, result_types, then_region, else_region } => {
                    self.if_op(h, op, *cond, result_types, then_region, else_region.as_ref(), depth)?
                }
                OpKind::Loop { carried, body } => self.general_loop(h, op, carried, body, depth)?,
                _ => self.simple(h, op)?,
            }
        }
        Ok(None)
    }

    /// Binds every by-value parameter from the argument block (splatted in the vector path).
    fn bind_params(&mut self) -> Result<(), CodegenError> {
        let param_values: Vec<_> =
            self.plan.body.values.iter().map(|(h, _)| h).take(self.plan.kernel.params.len()).collect();
        for (i, p) in self.plan.kernel.params.iter().enumerate() {
            let (ParamType::Value(t), Some(&v)) = (p.ty, param_values.get(i)) else { continue };
            let offset = self.plan.layout.abi.fields.get(i).map(|f| f.offset).unwrap_or(HEADER_BYTES);
            let scalar = self.arg_value(t, offset);
            let val = self.widen(t, scalar);
            self.bind(v, val);
        }
        Ok(())
    }

    /// Splats a uniform scalar to the current width.
    pub fn widen(&mut self, t: Type, x: Val) -> Val {
        if self.width <= 1 || t.lanes > 1 {
            return x;
        }
        let vt = types::reg(t, self.width);
        let one = types::vector(&x.ty, 1);
        let ins = self.ir.emit(&vt, format!("insertelement {vt} poison, {one} {}, i32 0", x.v));
        self.ir.emit(&vt, format!("shufflevector {vt} {}, {vt} poison, <{} x i32> zeroinitializer", ins.v, self.width))
    }

    /// The entry function's prologue: resource handles and work-group arrays.
    fn prologue(&mut self) -> Result<(), CodegenError> {
        let name = self.ir.cstring("args");
        self.args = self.handle("[0 x i32]", 0, false, &name);
        let has_f32 = self
            .plan
            .kernel
            .params
            .iter()
            .any(|p| matches!(p.ty, ParamType::Value(t) if t.scalar == cmdgraph_ir::ScalarType::F32));
        if has_f32 {
            let name = self.ir.cstring("args_f32");
            self.args_f32 = self.handle("[0 x float]", 0, false, &name);
        }
        let slots = self.plan.layout.slots.clone();
        let int_slots = self.float_cas_targets().0;
        for (i, slot) in slots.iter().enumerate() {
            let binding = i as u32 + 1;
            let name = self.ir.cstring(&format!("slot{i}"));
            let h = self.handle(&format!("[0 x {}]", types::buffer_mem(slot.elem)), binding, slot.writes, &name);
            self.handles.push(h);
            let vh = if self.plan.vectorize && slot.elem.lanes == 1 {
                let name = self.ir.cstring(&format!("slot{i}_v4"));
                let ty = format!("[0 x <4 x {}>]", types::mem_scalar(slot.elem.scalar));
                Some(self.handle(&ty, binding, slot.writes, &name))
            } else {
                None
            };
            self.vec_handles.push(vh);
            let iv = if int_slots.contains(&(i as u32)) {
                let name = self.ir.cstring(&format!("slot{i}_bits"));
                Some(self.handle("[0 x i32]", binding, slot.writes, &name))
            } else {
                None
            };
            self.int_views.push(iv);
            let offset = slot.offset_field.map(|f| self.word(f));
            self.offsets.push(offset);
            let count = match (slot.offset_field, slot.count) {
                (Some(f), _) => self.word(f + 4),
                (None, Some(n)) => Val::new("i32", n.min(u64::from(u32::MAX)).to_string()),
                (None, None) => return Err(self.err_kernel("memory slot without an element count")),
            };
            self.counts.push(count);
        }
        self.declare_locals()
    }

    /// A resource handle on `binding` of set 0 for a runtime array `array`.
    fn handle(&mut self, array: &str, binding: u32, writable: bool, name: &str) -> String {
        let ty = format!("target(\"spirv.VulkanBuffer\", {array}, 12, {})", u8::from(writable));
        let m = format!("tspirv.VulkanBuffer_{}_12_{}t", types::mangle(array), u8::from(writable));
        let f = format!("llvm.spv.resource.handlefrombinding.{m}");
        self.ir.declare(format!("declare {ty} @{f}(i32, i32, i32, i32, ptr)"));
        let v = self.ir.emit(&ty, format!("call {ty} @{f}(i32 0, i32 {binding}, i32 1, i32 0, ptr {name})"));
        v.v
    }

    /// Reads the argument-block word at byte `offset`.
    pub fn word(&mut self, offset: u32) -> Val {
        self.arg_load(offset, false)
    }

    /// Reads an argument-block word that will be reinterpreted (`f16`, halves of 64-bit
    /// values). The load is volatile so that InstCombine cannot retype it into a load of
    /// another type through the `u32` view (LLVM 22's SPIR-V backend crashes on such a
    /// pun in SPIRVLegalizePointerCast).
    fn word_raw(&mut self, offset: u32) -> Val {
        self.arg_load(offset, true)
    }

    fn arg_load(&mut self, offset: u32, volatile: bool) -> Val {
        let handle = self.args.clone();
        self.view_load(&handle, "i32", offset / 4, volatile)
    }

    /// Loads element `index` of the argument block through the view `handle` of `elem`s.
    fn view_load(&mut self, handle: &str, elem: &str, index: u32, volatile: bool) -> Val {
        let array = format!("[0 x {elem}]");
        let ht = format!("target(\"spirv.VulkanBuffer\", {array}, 12, 0)");
        let f = format!("llvm.spv.resource.getpointer.p11.tspirv.VulkanBuffer_{}_12_0t", types::mangle(&array));
        self.ir.declare(format!("declare ptr addrspace(11) @{f}({ht}, i32)"));
        let p = self.ir.emit("ptr addrspace(11)", format!("call ptr addrspace(11) @{f}({ht} {handle}, i32 {index})"));
        let v = if volatile { "volatile " } else { "" };
        self.ir.emit(elem, format!("load {v}{elem}, ptr addrspace(11) {}, align 4", p.v))
    }

    /// The value of a by-value parameter of type `t` at byte `offset` (one work-item).
    fn arg_value(&mut self, t: Type, offset: u32) -> Val {
        let lane_bytes = if t.scalar == cmdgraph_ir::ScalarType::Bool { 4 } else { t.scalar.size() as u32 };
        let mut lanes = Vec::with_capacity(t.lanes as usize);
        for lane in 0..t.lanes as u32 {
            let at = offset + lane * lane_bytes;
            lanes.push(self.arg_scalar(t.scalar, at));
        }
        if t.lanes == 1 {
            return lanes.swap_remove(0);
        }
        let vt = types::reg(t, 1);
        let mut acc = Val::new(vt.clone(), "poison");
        for (i, l) in lanes.iter().enumerate() {
            acc = self.ir.emit(&vt, format!("insertelement {vt} {}, {}, i32 {i}", acc.v, l.typed()));
        }
        acc
    }

    fn arg_scalar(&mut self, s: cmdgraph_ir::ScalarType, at: u32) -> Val {
        use cmdgraph_ir::ScalarType as S;
        if s == S::F32 {
            let handle = self.args_f32.clone();
            return self.view_load(&handle, "float", at / 4, false);
        }
        let w = if matches!(s, S::Bool | S::I32 | S::U32) { self.word(at & !3) } else { self.word_raw(at & !3) };
        match s {
            S::Bool => self.ir.emit("i1", format!("icmp ne i32 {}, 0", w.v)),
            S::I32 | S::U32 => w,
            S::F32 => w,
            // 8- and 16-bit fields sit inside a word at their std430 offset (docs/abi.md).
            S::F16 | S::I8 | S::U8 | S::I16 | S::U16 => {
                let sh = self.ir.emit("i32", format!("lshr i32 {}, {}", w.v, (at & 3) * 8));
                let it = if s.size() == 1 { "i8" } else { "i16" };
                let t = self.ir.emit(it, format!("trunc i32 {} to {it}", sh.v));
                if s == S::F16 {
                    self.ir.emit("half", format!("bitcast i16 {} to half", t.v))
                } else {
                    t
                }
            }
            S::I64 | S::U64 => {
                let hi = self.word_raw(at + 4);
                let lo64 = self.ir.emit("i64", format!("zext i32 {} to i64", w.v));
                let hi64 = self.ir.emit("i64", format!("zext i32 {} to i64", hi.v));
                let sh = self.ir.emit("i64", format!("shl i64 {}, 32", hi64.v));
                self.ir.emit("i64", format!("or i64 {}, {}", sh.v, lo64.v))
            }
            // The two words as a `<2 x i32>` bitcast to `double` (low word first): no 64-bit
            // integer, so an `f64` parameter needs `shaderFloat64` alone.
            S::F64 => {
                let hi = self.word_raw(at + 4);
                let v = self.ir.emit("<2 x i32>", format!("insertelement <2 x i32> poison, i32 {}, i32 0", w.v));
                let v = self.ir.emit("<2 x i32>", format!("insertelement <2 x i32> {}, i32 {}, i32 1", v.v, hi.v));
                self.ir.emit("double", format!("bitcast <2 x i32> {} to double", v.v))
            }
        }
    }
}

pub(crate) use budget::emitted_back_edges;

/// Lowers `plan` to a textual LLVM module with one entry function named `entry`.
pub(crate) fn lower(plan: &Plan<'_>, entry: &str) -> Result<String, CodegenError> {
    let mut l = Lowerer {
        plan,
        ir: IrWriter::default(),
        vals: vec![None; plan.body.values.len()],
        width: 1,
        gid0: None,
        vec_base: None,
        args: String::new(),
        args_f32: String::new(),
        handles: Vec::new(),
        vec_handles: Vec::new(),
        locals: Vec::new(),
        int_views: Vec::new(),
        int_locals: Default::default(),
        local_zero: "0".into(),
        counts: Vec::new(),
        offsets: Vec::new(),
        unroll: budget::needs_unrolling(plan.body),
        ranges: ranges::ranges(plan.body, plan.variant.workgroup_size),
        predicate: String::new(),
        tail: None,
    };
    l.ir.start("entry");
    l.prologue()?;
    let exit = "exit".to_string();
    if plan.vectorize {
        l.vectorized_body(&exit)?;
    } else {
        let go = l.ir.label("body");
        let inside = l.tail_check()?;
        let inside = l.and_predicate(inside);
        l.ir.inst(format!("br i1 {}, label %{go}, label %{exit}", inside.v));
        l.ir.start(&go);
        l.bind_params()?;
        l.region(&plan.body.entry, 0)?;
        l.ir.inst(format!("br label %{exit}"));
    }
    l.ir.start(&exit);
    l.loop_tail()?;
    l.ir.inst("ret void".into());
    Ok(finish(l.ir, entry, plan.variant.workgroup_size))
}

impl Lowerer<'_> {
    /// `i1` true when this work-item is inside the global range in every launch dimension.
    fn tail_check(&mut self) -> Result<Val, CodegenError> {
        let mut acc = Val::new("i1", "true");
        for d in 0..self.plan.variant.dims.min(3) as u32 {
            let id = self.thread_id(d);
            let size = self.word(4 * d);
            let ok = self.ir.emit("i1", format!("icmp ult i32 {}, {}", id.v, size.v));
            acc = self.ir.emit("i1", format!("and i1 {}, {}", acc.v, ok.v));
        }
        Ok(acc)
    }

    /// The vectorized kernel: a `<4 x T>` path for 4 aligned in-range work-items whose 4
    /// elements are inside every slot's memory, else a scalar loop over the 1 to 4 remaining
    /// ones, bounds-checked per access (docs/codegen.md, "Vectorization").
    fn vectorized_body(&mut self, exit: &str) -> Result<(), CodegenError> {
        let tid = self.thread_id(0);
        let base = self.ir.emit("i32", format!("shl i32 {}, 2", tid.v));
        let size = self.word(0);
        let inside = self.ir.emit("i1", format!("icmp ult i32 {}, {}", base.v, size.v));
        let inside = self.and_predicate(inside);
        let go = self.ir.label("go");
        self.ir.inst(format!("br i1 {}, label %{go}, label %{exit}", inside.v));
        self.ir.start(&go);
        let off = self.word(12);
        let gbase = self.ir.emit("i32", format!("add i32 {}, {}", base.v, off.v));
        let rem = self.ir.emit("i32", format!("sub i32 {}, {}", size.v, base.v));
        let full = self.ir.emit("i1", format!("icmp ugt i32 {}, 3", rem.v));
        let mut aligned = full.clone();
        let slots = self.plan.layout.slots.clone();
        for (i, _) in slots.iter().enumerate() {
            let start = match self.offsets.get(i).cloned().flatten() {
                Some(w) => self.ir.emit("i32", format!("add i32 {}, {}", w.v, gbase.v)),
                None => gbase.clone(),
            };
            let low = self.ir.emit("i32", format!("and i32 {}, 3", start.v));
            let ok = self.ir.emit("i1", format!("icmp eq i32 {}, 0", low.v));
            aligned = self.ir.emit("i1", format!("and i1 {}, {}", aligned.v, ok.v));
            // Bounds, once for the 4 elements (every access here is at the global id): the
            // slot's count exceeds gbase + 3, written without a sum that could wrap. Memory
            // shorter than that goes to the scalar path, which checks each access.
            let count = self.counts.get(i).cloned().ok_or_else(|| self.err_kernel("slot count"))?;
            let above = self.ir.emit("i1", format!("icmp ugt i32 {}, {}", count.v, gbase.v));
            let left = self.ir.emit("i32", format!("sub i32 {}, {}", count.v, gbase.v));
            let room = self.ir.emit("i1", format!("icmp ugt i32 {}, 3", left.v));
            let fits = self.ir.emit("i1", format!("and i1 {}, {}", above.v, room.v));
            aligned = self.ir.emit("i1", format!("and i1 {}, {}", aligned.v, fits.v));
        }
        let vec = self.ir.label("vec");
        let scalar = self.ir.label("scalar");
        // Both paths meet in their own merge block, not in `exit`, which already merges
        // the range check: one block cannot merge two selections.
        let join = self.ir.label("join");
        self.ir.inst(format!("br i1 {}, label %{vec}, label %{scalar}", aligned.v));

        self.ir.start(&vec);
        self.width = 4;
        let splat = self.widen(Type::U32, gbase.clone());
        let ids = self.ir.emit("<4 x i32>", format!("add <4 x i32> {}, <i32 0, i32 1, i32 2, i32 3>", splat.v));
        self.gid0 = Some(ids);
        self.vec_base = Some(gbase.clone());
        self.reset_vals();
        self.bind_params()?;
        self.region(&self.plan.body.entry, 0)?;
        self.ir.inst(format!("br label %{join}"));

        self.ir.start(&scalar);
        self.width = 1;
        self.vec_base = None;
        // Up to 4 scalar work-items, unrolled: a loop here would branch from the selection
        // straight into a loop header, which the backend's structurizer rejects.
        for k in 0..ITEMS_PER_INVOCATION {
            let next = self.ir.label("item_done");
            if k > 0 {
                let item = self.ir.label("item");
                let valid = self.ir.emit("i1", format!("icmp ult i32 {k}, {}", rem.v));
                self.ir.inst(format!("br i1 {}, label %{item}, label %{next}", valid.v));
                self.ir.start(&item);
            }
            let gid = self.ir.emit("i32", format!("add i32 {}, {k}", gbase.v));
            self.gid0 = Some(gid);
            self.reset_vals();
            self.bind_params()?;
            self.region(&self.plan.body.entry, 0)?;
            self.ir.inst(format!("br label %{next}"));
            self.ir.start(&next);
        }
        self.ir.inst(format!("br label %{join}"));
        self.ir.start(&join);
        self.ir.inst(format!("br label %{exit}"));
        Ok(())
    }

    fn reset_vals(&mut self) {
        for v in self.vals.iter_mut() {
            *v = None;
        }
    }
}

/// Assembles the module text.
fn finish(ir: IrWriter, entry: &str, wg: [u32; 3]) -> String {
    let mut out = String::new();
    out.push_str(&format!("target datalayout = \"{DATA_LAYOUT}\"\ntarget triple = \"{TRIPLE}\"\n\n"));
    for g in &ir.globals {
        out.push_str(g);
        out.push('\n');
    }
    out.push_str(&format!("\ndefine void @\"{entry}\"() #0 {{\n"));
    for line in &ir.body {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str("}\n\n");
    for d in &ir.decls {
        out.push_str(d);
        out.push('\n');
    }
    out.push_str(&format!(
        "\nattributes #0 = {{ \"hlsl.shader\"=\"compute\" \"hlsl.numthreads\"=\"{},{},{}\" }}\n",
        wg[0], wg[1], wg[2]
    ));
    out
}
