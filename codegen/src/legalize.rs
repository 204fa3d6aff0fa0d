//! What the SPIR-V backend cannot take as the `-O` pipeline leaves it: merged pointers
//! ([`legalize`]) and the `zext` of a `trunc` or `sext` it miscombines ([`narrow_extensions`]).
//!
//! Logical addressing: no `phi` or `select` of pointers reaches the SPIR-V backend.
//!
//! Vulkan SPIR-V addresses memory logically: a pointer may be the result of `OpPhi` or
//! `OpSelect` only with the `VariablePointers` capabilities, which cmdgraph does not ask the
//! device for (and `spirv-val --target-env vulkan1.3` rejects without them). The lowering
//! never merges pointers — every access computes its own `llvm.spv.resource.getpointer`
//! (buffers) or `getelementptr` (work-group arrays) next to its load or store — but the `-O`
//! pipeline may: GVN's scalar PRE treats the read-none `getpointer` call like arithmetic, and
//! an address computed on one side of an `if` and again after it becomes a copy in the other
//! arm plus a `phi ptr` at the merge (issue 16: the offset word of `%u` in
//! `if %c { load %u[%i - 1] } ...; load %u[%i]` at -O2).
//!
//! [`legalize`] runs after the pipeline at every level and undoes any such merge the way the
//! lowering would have written it: the pointers merged by a "web" (pointer phis and selects
//! connected through their operands, loop-carried cycles included) must all be
//! `getpointer(handle, index)` calls on one handle, or `getelementptr`s with one base and
//! source type; the web then becomes a phi or select of each operand that differs (the
//! element index) and one new `getpointer`/`getelementptr` after it. A merge of pointers
//! into different resources, or of pointers of another origin, cannot be written without
//! variable pointers and is an error (an internal one: no kernel-language construct makes
//! one). A module without pointer merges is left untouched, bit for bit.

use ffi::{Builder, Type, Value};
use inkwell::module::Module;
use std::collections::HashMap;

/// The resource intrinsic whose pointer results may be merged (by its name's prefix).
const GETPOINTER: &str = "llvm.spv.resource.getpointer";

/// How a merged pointer is computed: operand 0 is the base (resource handle or base
/// pointer), which every pointer of a web must share; the others may differ.
#[derive(Clone)]
enum Shape {
    /// `call ptr @llvm.spv.resource.getpointer...(handle, index)`.
    Call { callee: Value, fn_ty: Type, operands: Vec<Value> },
    /// `getelementptr source, base, indices...` (instruction or constant expression).
    Gep { source: Type, flags: u32, operands: Vec<Value> },
}

impl Shape {
    fn of(v: Value) -> Option<Shape> {
        if let Some(name) = v.called_function_name() {
            if !name.starts_with(GETPOINTER) {
                return None;
            }
            let operands = (0..v.call_arg_count()).map(|i| v.operand(i)).collect();
            return Some(Shape::Call { callee: v.called_value(), fn_ty: v.called_function_type(), operands });
        }
        if v.is_gep() {
            let operands = (0..v.operand_count()).map(|i| v.operand(i)).collect();
            return Some(Shape::Gep { source: v.gep_source_type(), flags: v.gep_flags(), operands });
        }
        None
    }

    fn operands(&self) -> &[Value] {
        match self {
            Shape::Call { operands, .. } | Shape::Gep { operands, .. } => operands,
        }
    }

    /// Whether `other` computes a pointer of the same kind from the same base.
    fn same_kind(&self, other: &Shape) -> bool {
        let kind = match (self, other) {
            (Shape::Call { callee: a, .. }, Shape::Call { callee: b, .. }) => a == b,
            (Shape::Gep { source: a, .. }, Shape::Gep { source: b, .. }) => a == b,
            _ => false,
        };
        kind && self.operands().len() == other.operands().len() && self.operands().first() == other.operands().first()
    }
}

/// Rewrites every pointer merge of `module` (module doc). Returns how many webs were
/// rewritten; an error describes the first merge that cannot be.
pub(crate) fn legalize(module: &Module<'_>) -> Result<usize, String> {
    let mut rewritten = 0;
    for function in ffi::functions(module) {
        let nodes: Vec<Value> = ffi::blocks(function)
            .into_iter()
            .flat_map(ffi::instructions)
            .filter(|v| (v.is_phi() || v.is_select()) && v.ty().is_pointer())
            .collect();
        if nodes.is_empty() {
            continue;
        }
        for web in webs(&nodes) {
            rewrite(module, &web)?;
            rewritten += 1;
        }
    }
    Ok(rewritten)
}

/// The pointer operands a node merges: a phi's incoming values, a select's two arms.
fn merged(node: Value) -> Vec<Value> {
    if node.is_phi() {
        node.incoming().into_iter().map(|(v, _)| v).collect()
    } else {
        vec![node.operand(1), node.operand(2)]
    }
}

/// `nodes` grouped into webs (connected through their operands), each in instruction
/// order, webs ordered by their first node: deterministic, never by address.
fn webs(nodes: &[Value]) -> Vec<Vec<Value>> {
    let index: HashMap<Value, usize> = nodes.iter().enumerate().map(|(i, &v)| (v, i)).collect();
    let mut parent: Vec<usize> = (0..nodes.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for (i, &n) in nodes.iter().enumerate() {
        for op in merged(n) {
            if let Some(&j) = index.get(&op) {
                let (a, b) = (root(&mut parent, i), root(&mut parent, j));
                parent[a.max(b)] = a.min(b);
            }
        }
    }
    let mut out: Vec<Vec<Value>> = Vec::new();
    let mut slot: HashMap<usize, usize> = HashMap::new();
    for (i, &n) in nodes.iter().enumerate() {
        let r = root(&mut parent, i);
        let at = *slot.entry(r).or_insert_with(|| {
            out.push(Vec::new());
            out.len() - 1
        });
        out[at].push(n);
    }
    out
}

/// Rewrites one web (module doc).
fn rewrite(module: &Module<'_>, web: &[Value]) -> Result<(), String> {
    let in_web = |v: &Value| web.contains(v);
    // The pointers the web merges, in first-use order.
    let mut leaves: Vec<Value> = Vec::new();
    for &n in web {
        for op in merged(n) {
            if !in_web(&op) && !leaves.contains(&op) {
                leaves.push(op);
            }
        }
    }
    let cannot = |why: &str| format!("cannot merge pointers without variable pointers ({why}): {}", web[0].print());
    let mut shapes: HashMap<Value, Shape> = HashMap::new();
    let mut first: Option<Shape> = None;
    for &leaf in &leaves {
        if leaf.is_undef() {
            continue;
        }
        let shape = Shape::of(leaf).ok_or_else(|| cannot(&format!("a pointer of unknown origin: {}", leaf.print())))?;
        match &first {
            None => first = Some(shape.clone()),
            Some(f) if f.same_kind(&shape) => {}
            Some(_) => return Err(cannot("pointers into different resources")),
        }
        shapes.insert(leaf, shape);
    }
    let builder = Builder::new(module);
    let Some(first) = first else {
        // Nothing but undefined pointers: the merge is undefined too.
        for &n in web {
            n.replace_all_uses_with(n.ty().poison());
        }
        for &n in web {
            n.erase();
        }
        return Ok(());
    };
    // Operand positions that differ between the merged pointers; each gets its own merge.
    let count = first.operands().len();
    let varying: Vec<usize> =
        (1..count).filter(|&k| shapes.values().any(|s| s.operands()[k] != first.operands()[k])).collect();
    let mut types = HashMap::new();
    for &k in &varying {
        let ty = first.operands()[k].ty();
        if shapes.values().any(|s| s.operands()[k].ty() != ty) {
            return Err(cannot("indices of different types"));
        }
        types.insert(k, ty);
    }
    if let Shape::Gep { source, .. } = &first {
        // A struct member index must stay a constant.
        let mut ty = *source;
        for k in 2..count {
            if ty.is_struct() {
                if varying.contains(&k) {
                    return Err(cannot("different struct members"));
                }
                ty = ty.struct_field(first.operands()[k].const_zext().unwrap_or(0) as u32);
            } else {
                ty = ty.element();
            }
        }
    }

    // The merged value of operand `k` for a pointer the web reads.
    let mut index: HashMap<(Value, usize), Value> = HashMap::new();
    let operand_of = |index: &HashMap<(Value, usize), Value>, v: Value, k: usize| -> Value {
        if let Some(&x) = index.get(&(v, k)) {
            x
        } else if let Some(s) = shapes.get(&v) {
            s.operands()[k]
        } else {
            types[&k].poison()
        }
    };
    // Phis first (their operands may come later, so they are filled afterwards), at the top
    // of their blocks.
    for &n in web.iter().filter(|n| n.is_phi()) {
        builder.position_before(n.block().first_instruction());
        for &k in &varying {
            index.insert((n, k), builder.phi(types[&k], "ptr.index"));
        }
    }
    // Selects once the selects they read exist (no cycle: only phis close cycles). Without
    // a differing operand there is nothing to merge and every node is rebuilt below.
    let mut pending: Vec<Value> =
        if varying.is_empty() { Vec::new() } else { web.iter().copied().filter(|n| n.is_select()).collect() };
    while !pending.is_empty() {
        let built = |index: &HashMap<(Value, usize), Value>, op: &Value| {
            !(op.is_select() && in_web(op)) || index.contains_key(&(*op, varying[0]))
        };
        let before = pending.len();
        let mut waiting = Vec::new();
        for n in pending {
            if !merged(n).iter().all(|op| built(&index, op)) {
                waiting.push(n);
                continue;
            }
            builder.position_before(n);
            for &k in &varying {
                let (a, b) = (operand_of(&index, n.operand(1), k), operand_of(&index, n.operand(2), k));
                let s = builder.select(n.operand(0), a, b, "ptr.index");
                index.insert((n, k), s);
            }
        }
        if waiting.len() == before {
            return Err(cannot("a cycle of selects"));
        }
        pending = waiting;
    }
    for &n in web.iter().filter(|n| n.is_phi()) {
        for (v, block) in n.incoming() {
            for &k in &varying {
                builder.add_incoming(index[&(n, k)], operand_of(&index, v, k), block);
            }
        }
    }
    // One new pointer per node, from the shared base and the merged indices.
    let mut replacement = Vec::with_capacity(web.len());
    for &n in web {
        if n.is_phi() {
            builder.position_before(n.block().first_non_phi());
        } else {
            builder.position_before(n);
        }
        let operands: Vec<Value> =
            (0..count).map(|k| if varying.contains(&k) { index[&(n, k)] } else { first.operands()[k] }).collect();
        let p = match &first {
            Shape::Call { callee, fn_ty, .. } => builder.call(*fn_ty, *callee, &operands, "ptr"),
            Shape::Gep { source, .. } => {
                let flags = shapes.values().fold(u32::MAX, |acc, s| match s {
                    Shape::Gep { flags, .. } => acc & flags,
                    Shape::Call { .. } => acc,
                });
                builder.gep(*source, operands[0], &operands[1..], flags, "ptr")
            }
        };
        replacement.push(p);
    }
    for (&n, &p) in web.iter().zip(&replacement) {
        n.replace_all_uses_with(p);
    }
    for &n in web {
        n.erase();
    }
    // Pointers only the web used are dead now.
    for &leaf in &leaves {
        if leaf.is_instruction() && !leaf.has_uses() && shapes.contains_key(&leaf) {
            leaf.erase();
        }
    }
    Ok(())
}

/// Rewrites the `zext` of a `trunc` or `sext` that LLVM 22's SPIR-V backend cannot lower as
/// `and (sext y), mask`, with `y` the `trunc` or `sext` and `mask` the all-ones value of
/// `y`'s width: the same bits. Its combiner folds such a `zext` into one `G_AND` with the
/// first cast's operand and gets the types wrong: for a scalar `zext (trunc x)` narrower
/// than `x`, an `OpBitwiseAnd` of the result type on `x` itself, which spirv-val rejects
/// ("Expected operands to have the same bit width as Result Type"); for vectors, from a
/// `trunc` or a `sext` of any widths, an `and` of a scalar and a vector that instruction
/// selection aborts on ("cannot select: G_AND"). 8- and 16-bit integers make these pairs (an
/// 8-bit argument widened to 16 bits, two casts, or what `-O` passes leave of them); a sweep
/// of every pair of casts over 8 to 64 bits and 1 to 4 lanes through `llc` and spirv-val found
/// exactly these, and the rewritten form passes in all of them. Returns how many were
/// rewritten; a module without such a pair is left untouched.
pub(crate) fn narrow_extensions(module: &Module<'_>) -> usize {
    let mut rewritten = 0;
    for function in ffi::functions(module) {
        for block in ffi::blocks(function) {
            for zext in ffi::instructions(block) {
                if !zext.is_zext() {
                    continue;
                }
                let inner = zext.operand(0);
                let (to, mid) = (zext.ty(), inner.ty());
                let miscombined = if to.is_vector() {
                    inner.is_trunc() || inner.is_sext()
                } else {
                    inner.is_trunc() && to.int_width() < inner.operand(0).ty().int_width()
                };
                if !miscombined {
                    continue;
                }
                let b = Builder::new(module);
                b.position_before(zext);
                let widened = b.sext(inner, to, "narrow.sext");
                let mask = b.zext(mid.all_ones(), to, "narrow.mask");
                let masked = b.and(widened, mask, "narrow.and");
                zext.replace_all_uses_with(masked);
                zext.erase();
                rewritten += 1;
            }
        }
    }
    rewritten
}

/// The few LLVM C API calls the rewrites need, as safe wrappers.
///
/// Every [`Value`], [`Block`] and [`Type`] is obtained from the module passed to
/// [`legalize`] or [`narrow_extensions`], which the caller keeps alive (and holds under target.rs's lock) for the
/// whole rewrite; no value is used after [`Value::erase`].
#[allow(unsafe_code)]
mod ffi {
    use inkwell::llvm_sys::core::*;
    use inkwell::llvm_sys::prelude::*;
    use inkwell::llvm_sys::{LLVMOpcode, LLVMTypeKind};
    use inkwell::module::Module;
    use std::ffi::CString;

    /// An LLVM value of the module being rewritten.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub(super) struct Value(LLVMValueRef);

    /// A basic block of the module being rewritten.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(super) struct Block(LLVMBasicBlockRef);

    /// A type of the module's context.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub(super) struct Type(LLVMTypeRef);

    fn opt(v: LLVMValueRef) -> Option<Value> {
        (!v.is_null()).then_some(Value(v))
    }

    /// The functions of `module` that have a body.
    pub(super) fn functions(module: &Module<'_>) -> Vec<Value> {
        let mut out = Vec::new();
        // SAFETY: `as_mut_ptr` is the live module; the iteration functions only read it and
        // return null after the last function.
        let mut f = unsafe { LLVMGetFirstFunction(module.as_mut_ptr()) };
        while let Some(v) = opt(f) {
            out.push(v);
            // SAFETY: `f` is a function of the live module.
            f = unsafe { LLVMGetNextFunction(f) };
        }
        out
    }

    /// The blocks of `function`, in layout order.
    pub(super) fn blocks(function: Value) -> Vec<Block> {
        let mut out = Vec::new();
        // SAFETY: `function` is a function of the live module (null for a declaration).
        let mut b = unsafe { LLVMGetFirstBasicBlock(function.0) };
        while !b.is_null() {
            out.push(Block(b));
            // SAFETY: `b` is a block of that function.
            b = unsafe { LLVMGetNextBasicBlock(b) };
        }
        out
    }

    /// The instructions of `block`, in order.
    pub(super) fn instructions(block: Block) -> Vec<Value> {
        let mut out = Vec::new();
        let mut i = block.first_instruction().0;
        while let Some(v) = opt(i) {
            out.push(v);
            // SAFETY: `i` is an instruction of the live block.
            i = unsafe { LLVMGetNextInstruction(i) };
        }
        out
    }

    impl Block {
        /// Its first instruction.
        pub(super) fn first_instruction(self) -> Value {
            // SAFETY: a block of the live module; every block has a terminator.
            Value(unsafe { LLVMGetFirstInstruction(self.0) })
        }

        /// Its first instruction that is not a phi (the terminator at the latest).
        pub(super) fn first_non_phi(self) -> Value {
            let mut i = self.first_instruction();
            while i.is_phi() {
                // SAFETY: `i` is a phi of the block, so a terminator follows it.
                i = Value(unsafe { LLVMGetNextInstruction(i.0) });
            }
            i
        }
    }

    impl Type {
        pub(super) fn is_pointer(self) -> bool {
            // SAFETY: a type of the live context.
            unsafe { LLVMGetTypeKind(self.0) == LLVMTypeKind::LLVMPointerTypeKind }
        }

        pub(super) fn is_struct(self) -> bool {
            // SAFETY: a type of the live context.
            unsafe { LLVMGetTypeKind(self.0) == LLVMTypeKind::LLVMStructTypeKind }
        }

        /// The element type of an array or vector type.
        pub(super) fn element(self) -> Type {
            // SAFETY: called on the array or vector types a GEP indexes (not on structs).
            Type(unsafe { LLVMGetElementType(self.0) })
        }

        /// Member `i` of a struct type.
        pub(super) fn struct_field(self, i: u32) -> Type {
            // SAFETY: `self` is a struct type and `i` a constant member index of a valid GEP.
            Type(unsafe { LLVMStructGetTypeAtIndex(self.0, i) })
        }

        /// The bit width of an integer type, or of a vector type's integer elements.
        pub(super) fn int_width(self) -> u32 {
            // SAFETY: a type of the live context; the width is asked of integer types only.
            unsafe {
                let t = if LLVMGetTypeKind(self.0) == LLVMTypeKind::LLVMVectorTypeKind {
                    LLVMGetElementType(self.0)
                } else {
                    self.0
                };
                if LLVMGetTypeKind(t) == LLVMTypeKind::LLVMIntegerTypeKind {
                    LLVMGetIntTypeWidth(t)
                } else {
                    0
                }
            }
        }

        pub(super) fn is_vector(self) -> bool {
            // SAFETY: a type of the live context.
            unsafe { LLVMGetTypeKind(self.0) == LLVMTypeKind::LLVMVectorTypeKind }
        }

        /// The all-ones constant of an integer (or integer vector) type.
        pub(super) fn all_ones(self) -> Value {
            // SAFETY: an integer or integer-vector type of the live context.
            Value(unsafe { LLVMConstAllOnes(self.0) })
        }

        /// The poison value of this type.
        pub(super) fn poison(self) -> Value {
            // SAFETY: a first-class type of the live context.
            Value(unsafe { LLVMGetPoison(self.0) })
        }
    }

    impl Value {
        pub(super) fn ty(self) -> Type {
            // SAFETY: a live value.
            Type(unsafe { LLVMTypeOf(self.0) })
        }

        pub(super) fn is_instruction(self) -> bool {
            // SAFETY: a live value; the `IsA` query returns null when it is not one.
            unsafe { !LLVMIsAInstruction(self.0).is_null() }
        }

        fn opcode(self) -> Option<LLVMOpcode> {
            // SAFETY: only asked of instructions.
            self.is_instruction().then(|| unsafe { LLVMGetInstructionOpcode(self.0) })
        }

        pub(super) fn is_phi(self) -> bool {
            self.opcode() == Some(LLVMOpcode::LLVMPHI)
        }

        pub(super) fn is_select(self) -> bool {
            self.opcode() == Some(LLVMOpcode::LLVMSelect)
        }

        pub(super) fn is_zext(self) -> bool {
            self.opcode() == Some(LLVMOpcode::LLVMZExt)
        }

        pub(super) fn is_trunc(self) -> bool {
            self.opcode() == Some(LLVMOpcode::LLVMTrunc)
        }

        pub(super) fn is_sext(self) -> bool {
            self.opcode() == Some(LLVMOpcode::LLVMSExt)
        }

        /// A `getelementptr` instruction or constant expression.
        pub(super) fn is_gep(self) -> bool {
            // SAFETY: a live value; `IsA` queries return null otherwise, and the constant
            // opcode is asked of constant expressions only.
            unsafe {
                !LLVMIsAGetElementPtrInst(self.0).is_null()
                    || (!LLVMIsAConstantExpr(self.0).is_null()
                        && LLVMGetConstOpcode(self.0) == LLVMOpcode::LLVMGetElementPtr)
            }
        }

        /// `undef` or `poison`.
        pub(super) fn is_undef(self) -> bool {
            // SAFETY: a live value.
            unsafe { LLVMIsUndef(self.0) != 0 }
        }

        pub(super) fn operand_count(self) -> usize {
            // SAFETY: a live user (instruction or constant expression).
            (unsafe { LLVMGetNumOperands(self.0) }).max(0) as usize
        }

        pub(super) fn operand(self, i: usize) -> Value {
            // SAFETY: callers pass `i` below `operand_count` (select arms 1 and 2, call
            // arguments, GEP operands).
            Value(unsafe { LLVMGetOperand(self.0, i as u32) })
        }

        /// A phi's incoming values and blocks.
        pub(super) fn incoming(self) -> Vec<(Value, Block)> {
            // SAFETY: `self` is a phi; indices are below its incoming count.
            unsafe {
                (0..LLVMCountIncoming(self.0))
                    .map(|i| (Value(LLVMGetIncomingValue(self.0, i)), Block(LLVMGetIncomingBlock(self.0, i))))
                    .collect()
            }
        }

        /// The block of an instruction.
        pub(super) fn block(self) -> Block {
            // SAFETY: `self` is an instruction in a block.
            Block(unsafe { LLVMGetInstructionParent(self.0) })
        }

        /// The name of the function a direct call calls.
        pub(super) fn called_function_name(self) -> Option<String> {
            // SAFETY: a live value; the callee is asked of calls only, its name of functions
            // only, and the returned bytes are copied while the function lives.
            unsafe {
                if LLVMIsACallInst(self.0).is_null() {
                    return None;
                }
                let callee = LLVMGetCalledValue(self.0);
                if LLVMIsAFunction(callee).is_null() {
                    return None;
                }
                let mut len = 0usize;
                let name = LLVMGetValueName2(callee, &mut len);
                if name.is_null() {
                    return None;
                }
                let bytes = std::slice::from_raw_parts(name.cast::<u8>(), len);
                Some(String::from_utf8_lossy(bytes).into_owned())
            }
        }

        pub(super) fn called_value(self) -> Value {
            // SAFETY: `self` is a call.
            Value(unsafe { LLVMGetCalledValue(self.0) })
        }

        pub(super) fn called_function_type(self) -> Type {
            // SAFETY: `self` is a call.
            Type(unsafe { LLVMGetCalledFunctionType(self.0) })
        }

        pub(super) fn call_arg_count(self) -> usize {
            // SAFETY: `self` is a call.
            (unsafe { LLVMGetNumArgOperands(self.0) }) as usize
        }

        pub(super) fn gep_source_type(self) -> Type {
            // SAFETY: `self` is a GEP instruction or constant expression (a GEPOperator).
            Type(unsafe { LLVMGetGEPSourceElementType(self.0) })
        }

        pub(super) fn gep_flags(self) -> u32 {
            // SAFETY: `self` is a GEP instruction or constant expression (a GEPOperator).
            unsafe { LLVMGEPGetNoWrapFlags(self.0) }
        }

        /// The value of an integer constant.
        pub(super) fn const_zext(self) -> Option<u64> {
            // SAFETY: a live value; the value is read of integer constants only.
            unsafe { (!LLVMIsAConstantInt(self.0).is_null()).then(|| LLVMConstIntGetZExtValue(self.0)) }
        }

        pub(super) fn has_uses(self) -> bool {
            // SAFETY: a live value.
            unsafe { !LLVMGetFirstUse(self.0).is_null() }
        }

        pub(super) fn replace_all_uses_with(self, with: Value) {
            // SAFETY: both are live values of the same type.
            unsafe { LLVMReplaceAllUsesWith(self.0, with.0) }
        }

        /// Removes an instruction from its block and deletes it; `self` is dead afterwards.
        pub(super) fn erase(self) {
            // SAFETY: an instruction of the live module; callers erase only instructions
            // without remaining uses (or whose users are erased with it) and never use it
            // again.
            unsafe { LLVMInstructionEraseFromParent(self.0) }
        }

        /// The value as LLVM prints it (for messages).
        pub(super) fn print(self) -> String {
            // SAFETY: a live value; the message LLVM allocates is copied and then disposed.
            unsafe {
                let s = LLVMPrintValueToString(self.0);
                if s.is_null() {
                    return String::new();
                }
                let text = std::ffi::CStr::from_ptr(s).to_string_lossy().trim().to_string();
                LLVMDisposeMessage(s);
                text
            }
        }
    }

    /// An LLVM IR builder in the module's context.
    pub(super) struct Builder(LLVMBuilderRef);

    impl Drop for Builder {
        fn drop(&mut self) {
            // SAFETY: created by `LLVMCreateBuilderInContext`, disposed once.
            unsafe { LLVMDisposeBuilder(self.0) }
        }
    }

    fn name(text: &str) -> CString {
        CString::new(text).unwrap_or_default()
    }

    impl Builder {
        pub(super) fn new(module: &Module<'_>) -> Builder {
            // SAFETY: the live module's context outlives the builder (dropped in `rewrite`).
            Builder(unsafe { LLVMCreateBuilderInContext(LLVMGetModuleContext(module.as_mut_ptr())) })
        }

        /// New instructions go right before `at`.
        pub(super) fn position_before(&self, at: Value) {
            // SAFETY: `at` is an instruction in a block of the live module.
            unsafe { LLVMPositionBuilderBefore(self.0, at.0) }
        }

        pub(super) fn phi(&self, ty: Type, label: &str) -> Value {
            let n = name(label);
            // SAFETY: the builder is positioned at the top of a block (before its phis).
            Value(unsafe { LLVMBuildPhi(self.0, ty.0, n.as_ptr()) })
        }

        pub(super) fn add_incoming(&self, phi: Value, value: Value, block: Block) {
            let (mut v, mut b) = ([value.0], [block.0]);
            // SAFETY: `phi` is a phi built here, `value` has its type, `block` is a
            // predecessor of its block; the arrays hold one element each.
            unsafe { LLVMAddIncoming(phi.0, v.as_mut_ptr(), b.as_mut_ptr(), 1) }
        }

        pub(super) fn select(&self, cond: Value, a: Value, b: Value, label: &str) -> Value {
            let n = name(label);
            // SAFETY: `cond` is an `i1` (an existing select's condition), `a` and `b` have one
            // type; the builder is positioned.
            Value(unsafe { LLVMBuildSelect(self.0, cond.0, a.0, b.0, n.as_ptr()) })
        }

        pub(super) fn sext(&self, v: Value, to: Type, label: &str) -> Value {
            let n = name(label);
            // SAFETY: `v` is an integer (vector) narrower than `to`, of its shape; positioned.
            Value(unsafe { LLVMBuildSExt(self.0, v.0, to.0, n.as_ptr()) })
        }

        pub(super) fn zext(&self, v: Value, to: Type, label: &str) -> Value {
            let n = name(label);
            // SAFETY: `v` is an integer (vector) narrower than `to`, of its shape; positioned.
            Value(unsafe { LLVMBuildZExt(self.0, v.0, to.0, n.as_ptr()) })
        }

        pub(super) fn and(&self, a: Value, b: Value, label: &str) -> Value {
            let n = name(label);
            // SAFETY: `a` and `b` have one integer (vector) type; positioned.
            Value(unsafe { LLVMBuildAnd(self.0, a.0, b.0, n.as_ptr()) })
        }

        pub(super) fn call(&self, fn_ty: Type, callee: Value, args: &[Value], label: &str) -> Value {
            let mut raw: Vec<LLVMValueRef> = args.iter().map(|a| a.0).collect();
            let n = name(label);
            // SAFETY: `fn_ty` is `callee`'s type (taken from an existing call of it) and the
            // arguments have the types of that call's arguments; the builder is positioned.
            Value(unsafe { LLVMBuildCall2(self.0, fn_ty.0, callee.0, raw.as_mut_ptr(), raw.len() as u32, n.as_ptr()) })
        }

        pub(super) fn gep(&self, source: Type, base: Value, indices: &[Value], flags: u32, label: &str) -> Value {
            let mut raw: Vec<LLVMValueRef> = indices.iter().map(|a| a.0).collect();
            let n = name(label);
            // SAFETY: the operands are those of existing GEPs of `source` from `base`, with
            // merged indices of the same types; the builder is positioned.
            Value(unsafe {
                LLVMBuildGEPWithNoWrapFlags(
                    self.0,
                    source.0,
                    base.0,
                    raw.as_mut_ptr(),
                    raw.len() as u32,
                    n.as_ptr(),
                    flags,
                )
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{to_spirv, Failure};

    /// A compute entry over two float buffers `%u` (read, binding 1) and `%w` (read,
    /// binding 3), an output `%y` (binding 2) and a work-group array `@lds`, with `body`
    /// after the handles (`%id` is the thread id; `%u0`, `%uid` pointers to `u[0]`, `u[id]`).
    fn module(body: &str) -> String {
        let gp = |suffix: &str, w: u8| {
            format!(
                "declare ptr addrspace(11) @llvm.spv.resource.getpointer.p11.tspirv.VulkanBuffer_a0f32_12_{w}t{suffix}(target(\"spirv.VulkanBuffer\", [0 x float], 12, {w}), i32)\n"
            )
        };
        let h = |w: u8| {
            format!(
                "declare target(\"spirv.VulkanBuffer\", [0 x float], 12, {w}) @llvm.spv.resource.handlefrombinding.tspirv.VulkanBuffer_a0f32_12_{w}t(i32, i32, i32, i32, ptr)\n"
            )
        };
        format!(
            "target datalayout = \"{dl}\"\ntarget triple = \"{tt}\"\n\n\
             @__cg_str0 = private unnamed_addr constant [2 x i8] c\"u\\00\"\n\
             @__cg_str1 = private unnamed_addr constant [2 x i8] c\"y\\00\"\n\
             @__cg_str2 = private unnamed_addr constant [2 x i8] c\"w\\00\"\n\
             @lds = internal addrspace(3) global [64 x float] poison, align 16\n\n\
             define void @k() #0 {{\nentry:\n\
             \x20 %u = call target(\"spirv.VulkanBuffer\", [0 x float], 12, 0) @llvm.spv.resource.handlefrombinding.tspirv.VulkanBuffer_a0f32_12_0t(i32 0, i32 1, i32 1, i32 0, ptr @__cg_str0)\n\
             \x20 %y = call target(\"spirv.VulkanBuffer\", [0 x float], 12, 1) @llvm.spv.resource.handlefrombinding.tspirv.VulkanBuffer_a0f32_12_1t(i32 0, i32 2, i32 1, i32 0, ptr @__cg_str1)\n\
             \x20 %w = call target(\"spirv.VulkanBuffer\", [0 x float], 12, 0) @llvm.spv.resource.handlefrombinding.tspirv.VulkanBuffer_a0f32_12_0t(i32 0, i32 3, i32 1, i32 0, ptr @__cg_str2)\n\
             \x20 %id = call i32 @llvm.spv.thread.id.i32(i32 0)\n\
             \x20 %u0 = call ptr addrspace(11) @llvm.spv.resource.getpointer.p11.tspirv.VulkanBuffer_a0f32_12_0t(target(\"spirv.VulkanBuffer\", [0 x float], 12, 0) %u, i32 0)\n\
             \x20 %uid = call ptr addrspace(11) @llvm.spv.resource.getpointer.p11.tspirv.VulkanBuffer_a0f32_12_0t(target(\"spirv.VulkanBuffer\", [0 x float], 12, 0) %u, i32 %id)\n\
             {body}\n}}\n\n{}{}{}\
             declare i32 @llvm.spv.thread.id.i32(i32)\n\n\
             attributes #0 = {{ \"hlsl.shader\"=\"compute\" \"hlsl.numthreads\"=\"64,1,1\" }}\n",
            gp("", 0),
            gp("", 1),
            h(0) + &h(1),
            dl = crate::target::DATA_LAYOUT,
            tt = crate::target::TRIPLE,
        )
    }

    /// A pointer into `%u` (or `%w`) at `index`, named `name`.
    fn ptr(name: &str, buffer: &str, index: &str) -> String {
        format!(
            "  {name} = call ptr addrspace(11) @llvm.spv.resource.getpointer.p11.tspirv.VulkanBuffer_a0f32_12_0t(target(\"spirv.VulkanBuffer\", [0 x float], 12, 0) {buffer}, i32 {index})"
        )
    }

    /// Stores float `value` to `y[id]` and returns.
    fn store_and_return(value: &str) -> String {
        format!(
            "  %py = call ptr addrspace(11) @llvm.spv.resource.getpointer.p11.tspirv.VulkanBuffer_a0f32_12_1t(target(\"spirv.VulkanBuffer\", [0 x float], 12, 1) %y, i32 %id)\n  store float {value}, ptr addrspace(11) %py, align 4\n  ret void"
        )
    }

    /// Whether a line of `ir` is a phi or select of pointers.
    fn merges_pointers(ir: &str) -> bool {
        ir.lines().any(|l| l.contains(" = phi ptr") || (l.contains(" = select ") && l.contains(", ptr ")))
    }

    /// The optimized (here: -O0, so only legalized) IR of a module that must pass spirv-val.
    fn legal(body: &str) -> String {
        let text = module(body);
        match to_spirv(&text, 0) {
            Ok((_, ir)) => {
                assert!(!merges_pointers(&ir), "a pointer merge is left:\n{ir}");
                ir
            }
            Err(Failure::Llvm(m) | Failure::Invalid(m)) => panic!("{m}\n{text}"),
            Err(Failure::Tool(e)) => panic!("{e}"),
        }
    }

    #[test]
    fn a_zext_of_a_trunc_or_sext_becomes_a_sext_and_a_mask() {
        // Without the rewrite spirv-val rejects the scalar pair (an `OpBitwiseAnd` of
        // `ushort` on a `uint` operand) and `llc` aborts on the vector ones.
        let body = format!(
            "  %t = trunc i32 %id to i8\n  %z = zext i8 %t to i16\n  %v = insertelement <2 x i32> poison, i32 %id, i32 0\n  %vt = trunc <2 x i32> %v to <2 x i8>\n  %vz = zext <2 x i8> %vt to <2 x i16>\n  %vs = sext <2 x i8> %vt to <2 x i16>\n  %vw = zext <2 x i16> %vs to <2 x i32>\n  %l = extractelement <2 x i16> %vz, i32 0\n  %m = extractelement <2 x i32> %vw, i32 1\n  %mt = trunc i32 %m to i16\n  %s = add i16 %z, %l\n  %s2 = add i16 %s, %mt\n  %f = uitofp i16 %s2 to float\n{}",
            store_and_return("%f")
        );
        let ir = legal(&body);
        assert!(!ir.contains("zext i8 %t to i16") && !ir.contains("zext <2 x i16> %vs"), "{ir}");
        assert!(ir.contains("and i16") && ir.contains("and <2 x i32>"), "{ir}");
    }

    #[test]
    fn a_select_of_two_element_pointers_becomes_a_select_of_indices() {
        let body = format!(
            "  %c = icmp ugt i32 %id, 0\n  %im = sub i32 %id, 1\n{}\n  %p = select i1 %c, ptr addrspace(11) %pm, ptr addrspace(11) %uid\n  %v = load float, ptr addrspace(11) %p, align 4\n{}",
            ptr("%pm", "%u", "%im"),
            store_and_return("%v")
        );
        let ir = legal(&body);
        assert!(ir.contains("select i1 %c, i32 %im, i32 %id"), "{ir}");
    }

    #[test]
    fn a_phi_of_pointers_in_a_diamond_becomes_a_phi_of_indices() {
        let body = format!(
            "  %c = icmp ugt i32 %id, 0\n  br i1 %c, label %then, label %else\nthen:\n  %im = sub i32 %id, 1\n{}\n  br label %merge\nelse:\n{}\n  br label %merge\nmerge:\n  %p = phi ptr addrspace(11) [ %pm, %then ], [ %pi, %else ]\n  %v = load float, ptr addrspace(11) %p, align 4\n{}",
            ptr("%pm", "%u", "%im"),
            ptr("%pi", "%u", "%id"),
            store_and_return("%v")
        );
        let ir = legal(&body);
        assert!(ir.contains("phi i32 [ %im, %then ], [ %id, %else ]"), "{ir}");
    }

    #[test]
    fn the_same_pointer_on_both_sides_needs_no_index_merge() {
        // What GVN's PRE makes of the issue-16 kernel: the same address computed in both arms.
        let body = format!(
            "  %c = icmp ugt i32 %id, 0\n  br i1 %c, label %then, label %else\nthen:\n{}\n  br label %merge\nelse:\n{}\n  br label %merge\nmerge:\n  %p = phi ptr addrspace(11) [ %a, %then ], [ %b, %else ]\n  %v = load float, ptr addrspace(11) %p, align 4\n{}",
            ptr("%a", "%u", "7"),
            ptr("%b", "%u", "7"),
            store_and_return("%v")
        );
        let ir = legal(&body);
        assert!(!ir.contains("phi i32"), "{ir}");
        assert!(ir.contains("(target(\"spirv.VulkanBuffer\", [0 x float], 12, 0) %u, i32 7)\n  %v = load"), "{ir}");
    }

    #[test]
    fn a_loop_carried_web_of_phis_and_selects_is_merged_as_a_whole() {
        // %p walks u[0], u[1], ... and %q picks u[j] or u[id] from it: a cycle through a
        // phi and a select.
        let body = format!(
            "  br label %loop\nloop:\n  %j = phi i32 [ 0, %entry ], [ %jn, %loop ]\n  %p = phi ptr addrspace(11) [ %u0, %entry ], [ %q, %loop ]\n  %acc = phi float [ 0.0, %entry ], [ %acc2, %loop ]\n  %v = load float, ptr addrspace(11) %p, align 4\n  %acc2 = fadd float %acc, %v\n  %jn = add i32 %j, 1\n{}\n  %odd = trunc i32 %jn to i1\n  %q = select i1 %odd, ptr addrspace(11) %pn, ptr addrspace(11) %uid\n  %more = icmp ult i32 %jn, 16\n  br i1 %more, label %loop, label %done\ndone:\n{}",
            ptr("%pn", "%u", "%jn"),
            store_and_return("%acc2")
        );
        let ir = legal(&body);
        assert!(ir.contains("phi i32 [ 0, %entry ], [ %ptr.index"), "{ir}");
        assert!(ir.contains("select i1 %odd, i32 %jn, i32 %id"), "{ir}");
    }

    #[test]
    fn work_group_pointers_merge_through_their_element_index() {
        let gep = |name: &str, index: &str| {
            format!("  {name} = getelementptr [64 x float], ptr addrspace(3) @lds, i32 0, i32 {index}")
        };
        let body = format!(
            "  %lid = and i32 %id, 63\n  %c = icmp ugt i32 %lid, 0\n  %im = sub i32 %lid, 1\n{}\n{}\n  store float 1.0, ptr addrspace(3) %a, align 4\n  %s = select i1 %c, ptr addrspace(3) %a, ptr addrspace(3) %b\n  br i1 %c, label %then, label %merge\nthen:\n{}\n  br label %merge\nmerge:\n  %p = phi ptr addrspace(3) [ %s, %entry ], [ %d, %then ]\n  %v = load float, ptr addrspace(3) %p, align 4\n{}",
            gep("%a", "%lid"),
            gep("%b", "%im"),
            gep("%d", "%lid"),
            store_and_return("%v")
        );
        let ir = legal(&body);
        assert!(ir.contains("select i1 %c, i32 %lid, i32 %im"), "{ir}");
    }

    #[test]
    fn an_undefined_incoming_pointer_merges_as_an_undefined_index() {
        let body = format!(
            "  %c = icmp ugt i32 %id, 0\n  br i1 %c, label %then, label %merge\nthen:\n  br label %merge\nmerge:\n  %p = phi ptr addrspace(11) [ poison, %then ], [ %uid, %entry ]\n  %v = load float, ptr addrspace(11) %p, align 4\n{}",
            store_and_return("%v")
        );
        legal(&body);
    }

    #[test]
    fn pointers_into_different_buffers_are_an_error_naming_the_merge() {
        let body = format!(
            "  %c = icmp ugt i32 %id, 0\n{}\n  %p = select i1 %c, ptr addrspace(11) %uid, ptr addrspace(11) %pw\n  %v = load float, ptr addrspace(11) %p, align 4\n{}",
            ptr("%pw", "%w", "%id"),
            store_and_return("%v")
        );
        match to_spirv(&module(&body), 0) {
            Err(Failure::Llvm(m)) => {
                assert!(m.contains("different resources") && m.contains("%p = select"), "{m}");
            }
            Err(Failure::Invalid(m)) => panic!("spirv-val saw it first: {m}"),
            Err(Failure::Tool(e)) => panic!("{e}"),
            Ok((_, ir)) => panic!("merged anyway:\n{ir}"),
        }
    }

    #[test]
    fn a_module_without_pointer_merges_is_left_as_it_is() {
        let body = format!("  %v = load float, ptr addrspace(11) %uid, align 4\n{}", store_and_return("%v"));
        let plain = module(&body);
        let (_, ir) = match to_spirv(&plain, 0) {
            Ok(x) => x,
            Err(_) => panic!("does not compile"),
        };
        assert!(!ir.contains("ptr.index") && !ir.contains("%ptr"), "{ir}");
    }
}
