//! The predicate binding of predicated variants (docs/abi.md, "Predicated variants"), and
//! the end of a loop body's kernel in mode 3 ("Loop predicates"): the next round's predicate
//! written by the kernel itself, so that a `while` round whose body is one dispatch needs
//! no predicate dispatch and no barrier of its own after the body's.

use super::{types, Lowerer, Val};
use crate::error::CodegenError;

/// The predicate word's index in modes 1 and 2 is all of word 6's bits 2-31; in mode 3
/// bits 2-16, bits 17-31 being the next round's word.
const MODE3_INDEX_MASK: u32 = 0x7fff;

impl Lowerer<'_> {
    /// A pointer to word `index` (an `i32` value) of the predicate binding, the binding
    /// after the memory slots. Its handle is made once, in the entry block, writable in a
    /// loop's variant (which writes the next round's word).
    fn predicate_word(&mut self, index: &Val) -> Val {
        let writable = u8::from(self.plan.variant.loop_tail.is_some());
        if self.predicate.is_empty() {
            let binding = self.plan.layout.slots.len() as u32 + 1;
            let name = self.ir.cstring("predicate");
            self.predicate = self.handle("[0 x i32]", binding, writable == 1, &name);
        }
        let array = "[0 x i32]";
        let ht = format!("target(\"spirv.VulkanBuffer\", {array}, 12, {writable})");
        let f = format!("llvm.spv.resource.getpointer.p11.tspirv.VulkanBuffer_{}_12_{writable}t", types::mangle(array));
        self.ir.declare(format!("declare ptr addrspace(11) @{f}({ht}, i32)"));
        let handle = self.predicate.clone();
        self.ir.emit("ptr addrspace(11)", format!("call ptr addrspace(11) @{f}({ht} {handle}, i32 {})", index.v))
    }

    /// `inside` and, in a predicated variant, whether the predicate says to run: word 6 of
    /// the argument block holds the mode (bits 0-1: 0 always, 1 the word is non-zero, 2 it
    /// equals word 7, 3 the word is non-zero in a loop's variant) and the word's index in the
    /// predicate binding, the last binding. Every work-item of every group reads the same
    /// word, so a whole dispatch returns at once, before any barrier.
    pub(super) fn and_predicate(&mut self, inside: Val) -> Val {
        if !self.plan.variant.predicated {
            return inside;
        }
        let control = self.word(24);
        let mode = self.ir.emit("i32", format!("and i32 {}, 3", control.v));
        let mut index = self.ir.emit("i32", format!("lshr i32 {}, 2", control.v));
        if self.plan.variant.loop_tail.is_some() {
            let low = self.ir.emit("i32", format!("and i32 {}, {MODE3_INDEX_MASK}", index.v));
            let mode3 = self.ir.emit("i1", format!("icmp eq i32 {}, 3", mode.v));
            index = self.ir.emit("i32", format!("select i1 {}, i32 {}, i32 {}", mode3.v, low.v, index.v));
        }
        let expect = self.word(28);
        let p = self.predicate_word(&index);
        let word = self.ir.emit("i32", format!("load i32, ptr addrspace(11) {}, align 4", p.v));
        if self.plan.variant.loop_tail.is_some() {
            self.prepare_tail(&control, &mode, &index, &expect);
        }
        let nonzero = self.ir.emit("i1", format!("icmp ne i32 {}, 0", word.v));
        let equal = self.ir.emit("i1", format!("icmp eq i32 {}, {}", word.v, expect.v));
        let is_equal_mode = self.ir.emit("i1", format!("icmp eq i32 {}, 2", mode.v));
        let test = self.ir.emit("i1", format!("select i1 {}, i1 {}, i1 {}", is_equal_mode.v, equal.v, nonzero.v));
        let always = self.ir.emit("i1", format!("icmp eq i32 {}, 0", mode.v));
        let run = self.ir.emit("i1", format!("or i1 {}, {}", always.v, test.v));
        self.ir.emit("i1", format!("and i1 {}, {}", inside.v, run.v))
    }

    /// What the loop tail needs from memory, loaded at the kernel's entry beside the
    /// predicate word: after the barrier the tail's only dependent load is the condition's
    /// (each load there cost its latency on the round's critical path). The tally's old value
    /// can be read early because only this dispatch's first invocation writes it; outside
    /// mode 3 the load reads the tested word instead, which is inside the binding.
    fn prepare_tail(&mut self, control: &Val, mode: &Val, index: &Val, expect: &Val) {
        let mode3 = self.ir.emit("i1", format!("icmp eq i32 {}, 3", mode.v));
        let next = self.ir.emit("i32", format!("lshr i32 {}, 17", control.v));
        let after = self.ir.emit("i32", format!("add i32 {}, 1", next.v));
        let tally = self.ir.emit("i32", format!("select i1 {}, i32 {}, i32 {}", mode3.v, after.v, index.v));
        let p = self.predicate_word(&tally);
        let old = self.ir.emit("i32", format!("load i32, ptr addrspace(11) {}, align 4", p.v));
        self.tail = Some(super::TailWords { mode3, element: expect.clone(), next, tally, old });
    }

    /// In a loop's variant, the end of the kernel in mode 3, reached by every invocation
    /// whether the round ran or not: a work-group barrier (the body's writes of the
    /// condition visible), then the first invocation writes whether the condition (element
    /// word 7 of the condition parameter's memory, bounds-checked: 0 outside) is non-zero
    /// into word `word6 >> 17` and adds it to the word after (the tally). A round that did
    /// not run finds the condition 0 and writes 0. Nothing in other modes.
    pub(super) fn loop_tail(&mut self) -> Result<(), CodegenError> {
        let Some(param) = self.plan.variant.loop_tail else { return Ok(()) };
        let slot = self.plan.layout.param_slot.get(param as usize).copied().flatten();
        let slot = slot.ok_or_else(|| self.err_kernel("the loop's condition parameter has no memory slot"))?;
        let t = self.tail.clone().ok_or_else(|| self.err_kernel("a loop's variant without its entry words"))?;
        let mode3 = t.mode3.clone();
        let (tail, first, done, end) =
            (self.ir.label("tail"), self.ir.label("tail_first"), self.ir.label("tail_done"), self.ir.label("end"));
        self.ir.inst(format!("br i1 {}, label %{tail}, label %{end}", mode3.v));
        self.ir.start(&tail);
        self.ir.call_void("llvm.spv.group.memory.barrier.with.group.sync", &[]);
        let mut is_first = Val::new("i1", "true");
        for d in 0..3 {
            let id = self.ir.call("i32", "llvm.spv.thread.id.in.group.i32", &[Val::new("i32", d.to_string())]);
            let zero = self.ir.emit("i1", format!("icmp eq i32 {}, 0", id.v));
            is_first = self.ir.emit("i1", format!("and i1 {}, {}", is_first.v, zero.v));
        }
        self.ir.inst(format!("br i1 {}, label %{first}, label %{done}", is_first.v));
        self.ir.start(&first);
        let element = t.element.clone();
        let count = self.counts.get(slot as usize).cloned().ok_or_else(|| self.err_kernel("slot count"))?;
        let inside = self.ir.emit("i1", format!("icmp ult i32 {}, {}", element.v, count.v));
        // Outside the memory the index is clamped to 0 and the word read taken as 0.
        let at = self.ir.emit("i32", format!("select i1 {}, i32 {}, i32 0", inside.v, element.v));
        let handle = self.handles.get(slot as usize).cloned().ok_or_else(|| self.err_kernel("slot handle"))?;
        let writable = self.plan.layout.slots.get(slot as usize).is_some_and(|s| s.writes);
        let p = self.pointer(&super::memory::Place::Slot(slot), "i32", (&handle, "[0 x i32]", writable), at)?;
        let word = self.ir.emit("i32", format!("load i32, ptr addrspace(11) {}, align 4", p.v));
        let set = self.ir.emit("i1", format!("icmp ne i32 {}, 0", word.v));
        let run = self.ir.emit("i1", format!("and i1 {}, {}", inside.v, set.v));
        let run = self.ir.emit("i32", format!("zext i1 {} to i32", run.v));
        let p = self.predicate_word(&t.next);
        self.ir.inst(format!("store i32 {}, ptr addrspace(11) {}, align 4", run.v, p.v));
        let p = self.predicate_word(&t.tally);
        let new = self.ir.emit("i32", format!("add i32 {}, {}", t.old.v, run.v));
        self.ir.inst(format!("store i32 {}, ptr addrspace(11) {}, align 4", new.v, p.v));
        self.ir.inst(format!("br label %{done}"));
        self.ir.start(&done);
        self.ir.inst(format!("br label %{end}"));
        self.ir.start(&end);
        Ok(())
    }
}
