//! `for` and `if` as natural loops and diamonds with phis.
//!
//! A `for` runs while `i < hi`; the next iteration runs when `step < hi - i` (unsigned
//! difference, exact since `i < hi`), so `i + step` never wraps, as in the interpreter,
//! which iterates in unbounded integers. A non-positive step runs no iteration (the
//! interpreter faults instead; docs/codegen.md).
//!
//! In a kernel whose loops may exceed llvmpipe's loop budget (budget.rs), an innermost
//! `for` holds [`budget::UNROLL`] copies of its body per back-edge: copy `k` runs iteration
//! `i + k * step` when the previous copy's test said there is one, and each copy's test is
//! the same `step < hi - i`, so every trip count runs exactly as in the one-copy loop. There,
//! a `for` with no `for` inside and a constant trip count of at most `UNROLL` is no loop at
//! all: its iterations in a row (`straight_for`), so the loop around it is innermost.

use super::{budget, Lowerer, Val};
use crate::error::CodegenError;
use cmdgraph_ir::kernel::{Region, V};
use cmdgraph_ir::{Handle, Op, Type};

/// One copy of an unrolled loop body, as its latch sees it.
struct BodyCopy {
    /// The block the copy ends in.
    end: String,
    /// Its iteration's induction value.
    iv: String,
    /// Its yielded values.
    yields: Vec<Val>,
    /// Its test: whether another iteration follows it.
    more: Val,
}

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
        let copies = match budget::shape(self.plan.body, self.unroll, (lo, hi, step), body) {
            budget::Shape::Loop(copies) => copies,
            budget::Shape::Straight(trips) => {
                return self.straight_for(h, op, (var, lo, step), carried, body, depth, trips)
            }
        };
        let (lo, hi, step) = (self.val(h, lo)?, self.val(h, hi)?, self.val(h, step)?);
        let ty = lo.ty.clone();
        let signed = t.scalar.is_signed_integer();
        let zero = Val::new(ty.clone(), "0");
        let positive = self.int_cmp(if signed { "sgt" } else { "ne" }, t, &step, &zero);
        let below = self.int_cmp(if signed { "slt" } else { "ult" }, t, &lo, &hi);
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
        let mut phis = Vec::with_capacity(carried.len());
        let mut current = Vec::with_capacity(carried.len());
        for init in &inits {
            let name = self.ir.tmp();
            phis.push((name.clone(), self.ir.placeholder()));
            current.push(Val::new(init.ty.clone(), name));
        }
        let mut ends: Vec<BodyCopy> = Vec::with_capacity(copies as usize);
        let mut iv = i.clone();
        let latch_l = if copies > 1 { self.ir.label("loop_latch") } else { String::new() };
        let mut copy_l = String::new();
        for k in 0..copies {
            if k > 0 {
                self.ir.start(&copy_l);
                iv = self.ir.emit(&ty, format!("add {ty} {iv}, {}", step.v)).v;
            }
            self.bind(var, Val::new(ty.clone(), iv.clone()));
            for ((inner, _), val) in carried.iter().zip(&current) {
                self.bind(*inner, val.clone());
            }
            let yielded = self.region(body, depth + 1)?.unwrap_or_default();
            if yielded.len() != carried.len() {
                return Err(self.err(h, format!("the loop body must yield {} values", carried.len())));
            }
            let end = self.ir.block.clone();
            let left = self.ir.emit(&ty, format!("sub {ty} {}, {iv}", hi.v));
            let more = self.ir.emit("i1", format!("icmp ugt {ty} {}, {}", left.v, step.v));
            if k + 1 < copies {
                copy_l = self.ir.label("loop_copy");
                self.ir.inst(format!("br i1 {}, label %{copy_l}, label %{latch_l}", more.v));
            }
            current.clone_from(&yielded);
            ends.push(BodyCopy { end, iv: iv.clone(), yields: yielded, more });
        }
        let (latch, last_i, yielded, more) = if copies == 1 {
            let c = ends.swap_remove(0);
            (c.end, c.iv, c.yields, c.more)
        } else {
            self.join_copies(&latch_l, &ty, &inits, &ends)
        };
        let next = self.ir.emit(&ty, format!("add {ty} {last_i}, {}", step.v));
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

    /// A `for` with a constant trip count `trips` as straight-line code: its iterations
    /// `lo, lo + step, ...` in a row (exact: the count says none passes `hi`), carried values
    /// passed from one to the next; `trips == 0` gives the initial values.
    #[allow(clippy::too_many_arguments)]
    fn straight_for(
        &mut self,
        h: Handle<Op>,
        op: &Op,
        (var, lo, step): (V, V, V),
        carried: &'a [(V, V)],
        body: &'a Region,
        depth: usize,
        trips: u32,
    ) -> Result<(), CodegenError> {
        let (lo, step) = (self.val(h, lo)?, self.val(h, step)?);
        let ty = lo.ty.clone();
        let mut current = Vec::with_capacity(carried.len());
        for &(_, init) in carried {
            current.push(self.val(h, init)?);
        }
        let mut iv = lo.v;
        for k in 0..trips {
            if k > 0 {
                iv = self.ir.emit(&ty, format!("add {ty} {iv}, {}", step.v)).v;
            }
            self.bind(var, Val::new(ty.clone(), iv.clone()));
            for ((inner, _), val) in carried.iter().zip(&current) {
                self.bind(*inner, val.clone());
            }
            current = self.region(body, depth + 1)?.unwrap_or_default();
            if current.len() != carried.len() {
                return Err(self.err(h, format!("the loop body must yield {} values", carried.len())));
            }
        }
        for (i, r) in current.into_iter().enumerate() {
            self.set(h, op, i, r)?;
        }
        Ok(())
    }

    /// The latch of an unrolled loop: every copy's test branches here when it ends the
    /// loop, the last copy always; the loop continues only from the last copy, so the
    /// test is `false` from the others. Returns the latch, the last iteration value, the
    /// yields and the test.
    fn join_copies(
        &mut self,
        latch: &str,
        ty: &str,
        inits: &[Val],
        ends: &[BodyCopy],
    ) -> (String, String, Vec<Val>, Val) {
        self.ir.inst(format!("br label %{latch}"));
        self.ir.start(latch);
        let incoming = |f: &dyn Fn(usize, &BodyCopy) -> String| {
            ends.iter().enumerate().map(|(k, c)| format!("[ {}, %{} ]", f(k, c), c.end)).collect::<Vec<_>>().join(", ")
        };
        let last = ends.len().saturating_sub(1);
        let tests = incoming(&|k, c| if k == last { c.more.v.clone() } else { "false".into() });
        let more = self.ir.emit("i1", format!("phi i1 {tests}"));
        let last_i = self.ir.emit(ty, format!("phi {ty} {}", incoming(&|_, c| c.iv.clone())));
        let mut ys = Vec::with_capacity(inits.len());
        for (j, init) in inits.iter().enumerate() {
            // Every copy yields one value per carried value (checked as each was lowered).
            let values = incoming(&|_, c| c.yields.get(j).map_or_else(|| "poison".into(), |y| y.v.clone()));
            ys.push(self.ir.emit(&init.ty, format!("phi {} {values}", init.ty)));
        }
        (latch.to_string(), last_i.v, ys, more)
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
