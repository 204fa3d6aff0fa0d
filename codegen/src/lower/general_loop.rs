//! The general `loop` as a natural loop with one back-edge.
//!
//! ```text
//! pre:    br label %head
//! head:   %c = phi [ init, %pre ], [ next, %latch ]   ; one per carried value
//!         ...body...                                  ; may branch (if) and end in %latch
//! latch:  br i1 %again, label %head, label %exit
//! exit:   %r = phi [ next, %latch ]                   ; the loop's results
//! ```
//!
//! The body runs at least once (a do-while). The results are read through one-input phis in
//! the exit block (LCSSA form), which keeps the values defined in the loop out of the code
//! after it, as the SPIR-V backend's structurizer expects. Nothing is unrolled: the trip
//! count is unknown, so the kernel's loop budget is "unbounded" (budget.rs).

use super::{Lowerer, Val};
use crate::error::CodegenError;
use cmdgraph_ir::kernel::{Region, V};
use cmdgraph_ir::{Handle, Op};

impl<'a> Lowerer<'a> {
    /// `[%r...] = loop carry(...) { ... yield %again, ... }`.
    pub fn general_loop(
        &mut self,
        h: Handle<Op>,
        op: &Op,
        carried: &'a [(V, V)],
        body: &'a Region,
        depth: usize,
    ) -> Result<(), CodegenError> {
        if self.width > 1 {
            return Err(self.err(h, "a `loop` in a vectorised kernel"));
        }
        let mut inits = Vec::with_capacity(carried.len());
        for &(_, init) in carried {
            inits.push(self.val(h, init)?);
        }
        let pre = self.ir.block.clone();
        let head = self.ir.label("gloop");
        let exit = self.ir.label("gloop_exit");
        self.ir.inst(format!("br label %{head}"));
        self.ir.start(&head);
        let mut phis = Vec::with_capacity(carried.len());
        for ((inner, _), init) in carried.iter().zip(&inits) {
            let name = self.ir.tmp();
            phis.push((name.clone(), self.ir.placeholder()));
            self.bind(*inner, Val::new(init.ty.clone(), name));
        }
        let yielded = self.region(body, depth + 1)?.unwrap_or_default();
        let Some((again, next)) = yielded.split_first().filter(|(_, n)| n.len() == carried.len()) else {
            return Err(self.err(h, format!("the loop body must yield a condition and {} values", carried.len())));
        };
        if again.ty != "i1" {
            return Err(self.err(h, "the `loop` condition is not a bool"));
        }
        let latch = self.ir.block.clone();
        self.ir.inst(format!("br i1 {}, label %{head}, label %{exit}", again.v));
        for ((name, at), (init, y)) in phis.iter().zip(inits.iter().zip(next)) {
            self.ir.patch(*at, format!("  {name} = phi {} [ {}, %{pre} ], [ {}, %{latch} ]", init.ty, init.v, y.v));
        }
        self.ir.start(&exit);
        for (i, y) in next.iter().enumerate() {
            let r = self.ir.emit(&y.ty, format!("phi {} [ {}, %{latch} ]", y.ty, y.v));
            self.set(h, op, i, r)?;
        }
        Ok(())
    }
}
