//! `for` and `if` as natural loops and diamonds with phis.
//!
//! A `for` runs while `i < hi`; the next iteration runs when `step < hi - i` (unsigned
//! difference, exact since `i < hi`), so `i + step` never wraps, as in the interpreter,
//! which iterates in unbounded integers. A non-positive step runs no iteration (the
//! interpreter faults instead; docs/codegen.md).

use super::{Lowerer, Val};
use crate::error::CodegenError;
use cmdgraph_ir::kernel::{Region, V};
use cmdgraph_ir::{Handle, Op, Type};

impl<'a> Lowerer<'a> {
    /// `[%r...] = for %i = %lo to %hi step %s carry(...) { ... }`.
    pub fn for_loop(
        &mut self,
        h: Handle<Op>,
        op: &Op,
        (var, lo, hi, step): (V, V, V, V),
        carried: &'a [(V, V)],
        body: &'a Region,
        depth: usize,
    ) -> Result<(), CodegenError> {
        let t = self.data_ty(h, lo)?;
        if t.lanes != 1 || !t.scalar.is_integer() || self.width > 1 {
            return Err(self.err(h, format!("loop bounds of type {t}")));
        }
        let (lo, hi, step) = (self.val(h, lo)?, self.val(h, hi)?, self.val(h, step)?);
        let ty = lo.ty.clone();
        let signed = t.scalar.is_signed_integer();
        let positive = self.ir.emit("i1", format!("icmp {} {ty} {}, 0", if signed { "sgt" } else { "ne" }, step.v));
        let below = self.ir.emit("i1", format!("icmp {} {ty} {}, {}", if signed { "slt" } else { "ult" }, lo.v, hi.v));
        let enter = self.ir.emit("i1", format!("and i1 {}, {}", positive.v, below.v));
        let mut inits = Vec::with_capacity(carried.len());
        for &(_, init) in carried {
            inits.push(self.val(h, init)?);
        }
        let pre = self.ir.block.clone();
        let head = self.ir.label("loop");
        let exit = self.ir.label("loop_exit");
        self.ir.inst(format!("br i1 {}, label %{head}, label %{exit}", enter.v));
        self.ir.start(&head);
        let i = self.ir.tmp();
        let i_phi = self.ir.placeholder();
        self.bind(var, Val::new(ty.clone(), i.clone()));
        let mut phis = Vec::with_capacity(carried.len());
        for (&(inner, _), init) in carried.iter().zip(&inits) {
            let name = self.ir.tmp();
            phis.push((name.clone(), self.ir.placeholder()));
            self.bind(inner, Val::new(init.ty.clone(), name));
        }
        let yielded = self.region(body, depth + 1)?.unwrap_or_default();
        if yielded.len() != carried.len() {
            return Err(self.err(h, format!("the loop body must yield {} values", carried.len())));
        }
        let latch = self.ir.block.clone();
        let left = self.ir.emit(&ty, format!("sub {ty} {}, {i}", hi.v));
        let more = self.ir.emit("i1", format!("icmp ugt {ty} {}, {}", left.v, step.v));
        let next = self.ir.emit(&ty, format!("add {ty} {i}, {}", step.v));
        self.ir.inst(format!("br i1 {}, label %{head}, label %{exit}", more.v));
        self.ir.patch(i_phi, format!("  {i} = phi {ty} [ {}, %{pre} ], [ {}, %{latch} ]", lo.v, next.v));
        for ((name, at), (init, y)) in phis.iter().zip(inits.iter().zip(&yielded)) {
            self.ir.patch(*at, format!("  {name} = phi {} [ {}, %{pre} ], [ {}, %{latch} ]", init.ty, init.v, y.v));
        }
        self.ir.start(&exit);
        for (i, (init, y)) in inits.iter().zip(&yielded).enumerate() {
            let r = self.ir.emit(&init.ty, format!("phi {} [ {}, %{pre} ], [ {}, %{latch} ]", init.ty, init.v, y.v));
            self.set(h, op, i, r)?;
        }
        Ok(())
    }

    /// `[%r...] = if %c [-> T...] { ... } [else { ... }]`.
    #[allow(clippy::too_many_arguments)]
    pub fn if_op(
        &mut self,
        h: Handle<Op>,
        op: &Op,
        cond: V,
        result_types: &[Type],
        then_region: &'a Region,
        else_region: Option<&'a Region>,
        depth: usize,
    ) -> Result<(), CodegenError> {
        let c = self.val(h, cond)?;
        if c.ty != "i1" {
            return Err(self.err(h, "`if` condition is not a bool"));
        }
        let then_l = self.ir.label("then");
        let merge = self.ir.label("endif");
        let else_l = if else_region.is_some() { self.ir.label("else") } else { merge.clone() };
        let from = self.ir.block.clone();
        self.ir.inst(format!("br i1 {}, label %{then_l}, label %{else_l}", c.v));
        self.ir.start(&then_l);
        let then_vals = self.region(then_region, depth + 1)?.unwrap_or_default();
        let then_end = self.ir.block.clone();
        self.ir.inst(format!("br label %{merge}"));
        let (else_vals, else_end) = match else_region {
            Some(r) => {
                self.ir.start(&else_l);
                let vals = self.region(r, depth + 1)?.unwrap_or_default();
                let end = self.ir.block.clone();
                self.ir.inst(format!("br label %{merge}"));
                (vals, end)
            }
            None => (Vec::new(), from),
        };
        self.ir.start(&merge);
        if result_types.is_empty() {
            return Ok(());
        }
        if then_vals.len() != result_types.len() || else_vals.len() != result_types.len() {
            return Err(self.err(h, format!("both regions must yield {} values", result_types.len())));
        }
        for (i, (a, b)) in then_vals.iter().zip(&else_vals).enumerate() {
            let r = self.ir.emit(&a.ty, format!("phi {} [ {}, %{then_end} ], [ {}, %{else_end} ]", a.ty, a.v, b.v));
            self.set(h, op, i, r)?;
        }
        Ok(())
    }
}
