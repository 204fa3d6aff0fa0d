//! The general `loop` as a natural loop with one back-edge, leaving from its header.
//!
//! ```text
//! pre:    br label %head
//! head:   %c  = phi [ init, %pre ], [ next, %latch ]     ; one per carried value
//!         %go = phi [ true, %pre ], [ again, %latch ]
//!         br i1 %go, label %body, label %exit
//! body:   ...body...                                     ; may branch (if) and end in %latch
//! latch:  br label %head
//! exit:   the loop's results are the header's %c
//! ```
//!
//! The body runs at least once (a do-while: `%go` starts true). The loop leaves from its
//! header, and its results are the header's phis, as a `for`'s are (control.rs): with an
//! exit from the latch reading values defined in the body, llvmpipe gave a work-item that
//! left early the values of a later round (of a subgroup scan, say) of the work-items still
//! in the loop. Nothing is unrolled: the trip count is unknown, so the kernel's loop budget
//! is "unbounded" (budget.rs).

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
        let body_l = self.ir.label("gloop_body");
        let exit = self.ir.label("gloop_exit");
        self.ir.inst(format!("br label %{head}"));
        self.ir.start(&head);
        let mut phis = Vec::with_capacity(carried.len());
        let mut current = Vec::with_capacity(carried.len());
        for ((inner, _), init) in carried.iter().zip(&inits) {
            let name = self.ir.tmp();
            phis.push((name.clone(), self.ir.placeholder()));
            let val = Val::new(init.ty.clone(), name);
            self.bind(*inner, val.clone());
            current.push(val);
        }
        let go = self.ir.tmp();
        let go_phi = self.ir.placeholder();
        self.ir.inst(format!("br i1 {go}, label %{body_l}, label %{exit}"));
        self.ir.start(&body_l);
        let yielded = self.region(body, depth + 1)?.unwrap_or_default();
        let Some((again, next)) = yielded.split_first().filter(|(_, n)| n.len() == carried.len()) else {
            return Err(self.err(h, format!("the loop body must yield a condition and {} values", carried.len())));
        };
        if again.ty != "i1" {
            return Err(self.err(h, "the `loop` condition is not a bool"));
        }
        let latch = self.ir.block.clone();
        self.ir.inst(format!("br label %{head}"));
        for ((name, at), (init, y)) in phis.iter().zip(inits.iter().zip(next)) {
            self.ir.patch(*at, format!("  {name} = phi {} [ {}, %{pre} ], [ {}, %{latch} ]", init.ty, init.v, y.v));
        }
        self.ir.patch(go_phi, format!("  {go} = phi i1 [ true, %{pre} ], [ {}, %{latch} ]", again.v));
        self.ir.start(&exit);
        for (i, c) in current.into_iter().enumerate() {
            self.set(h, op, i, c)?;
        }
        Ok(())
    }
}
