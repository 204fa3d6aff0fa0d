//! `for` and `if` as natural loops and diamonds with phis.
//!
//! A `for` runs while `i < hi`; the next iteration runs when `step < hi - i` (unsigned
//! difference, exact since `i < hi`), so `i + step` never wraps, as in the interpreter,
//! which iterates in unbounded integers. A non-positive step runs no iteration (the
//! interpreter faults instead; docs/codegen.md).
//!
//! In a kernel whose loops may exceed llvmpipe's loop budget (budget.rs), or whose trip
//! counts are not constants, an innermost `for` is unrolled to [`budget::UNROLL`] copies of
//! its body per back-edge. The trip count `(hi - lo - 1) / step + 1` is computed on entry;
//! the loop runs `trips / UNROLL` rounds of that many copies with no test between them, then
//! a tail of `trips mod UNROLL` copies, copy `k` guarded by `rem > k` (no back-edge). So every
//! trip count runs exactly the one-copy loop's iterations in its order, and the copies of a
//! round are straight-line code: a driver can issue all of their loads before the first
//! value returns. (With a test after each copy, as this was until 2026-11-30, the NVIDIA
//! driver waited for every copy's loads in turn: a residual's strided loop over 4096 floats
//! in one work-group of 256 took about 1.4 µs longer, docs/performance.md `cond`.) A body
//! with a subgroup operation, a barrier or a call keeps that older shape (`tested_for`,
//! `budget::Shape::Loop`):
//! lanes with different trip counts would split them differently between rounds and tail,
//! and a subgroup operation must find the lanes of one iteration at one place. There, a
//! `for` with no `for` inside and a constant trip count of at most `UNROLL` is no loop at
//! all: its iterations in a row (`straight_for`), so the loop around it is innermost.

use super::{budget, Lowerer, Val};
use crate::error::CodegenError;
use cmdgraph_ir::kernel::{Region, V};
use cmdgraph_ir::{Handle, Op, Type};

/// One copy of an unrolled loop body, as the block joining the copies sees it.
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

/// What each copy of a `for` body needs: the op, its variable and the variable's LLVM type,
/// the carried values and the body.
struct LoopBody<'a, 'b> {
    h: Handle<Op>,
    var: V,
    ty: &'b str,
    carried: &'a [(V, V)],
    body: &'a Region,
    depth: usize,
}

/// A `for` lowered as a loop: its body, its bounds (lowered) and the carried values'
/// initial values.
struct ForParts<'a, 'b> {
    body: LoopBody<'a, 'b>,
    lo: &'b Val,
    hi: &'b Val,
    step: &'b Val,
    inits: &'b [Val],
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
        let shape = budget::shape(self.plan.body, self.unroll, (lo, hi, step), body);
        let (lo, hi, step) = (self.val(h, lo)?, self.val(h, hi)?, self.val(h, step)?);
        let ty = lo.ty.clone();
        let each = LoopBody { h, var, ty: &ty, carried, body, depth };
        let (copies, rounds) = match shape {
            budget::Shape::Straight(trips) => return self.straight_for(&each, op, (&lo, &step), trips),
            budget::Shape::Loop(copies) => (copies, false),
            budget::Shape::Rounds(copies) => (copies, true),
        };
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
        let first = self.ir.label("loop");
        let exit = self.ir.label("loop_exit");
        self.ir.inst(format!("br i1 {}, label %{first}, label %{exit}", enter.v));
        self.ir.start(&first);
        let f = ForParts { body: each, lo: &lo, hi: &hi, step: &step, inits: &inits };
        let (last, yielded) = match rounds {
            true => self.unrolled_for(&f, copies)?,
            false => self.tested_for(&f, (&pre, &first), copies)?,
        };
        self.ir.inst(format!("br label %{exit}"));
        self.ir.start(&exit);
        for (i, (init, y)) in inits.iter().zip(&yielded).enumerate() {
            let r = self.ir.emit(&init.ty, format!("phi {} [ {}, %{pre} ], [ {}, %{last} ]", init.ty, init.v, y.v));
            self.set(h, op, i, r)?;
        }
        Ok(())
    }

    /// A loop header's phis for the carried values, patched later ([`Self::patch_carried`]):
    /// their names with their placeholders, and the values the first copy sees.
    fn carried_phis(&mut self, inits: &[Val]) -> (Vec<(String, usize)>, Vec<Val>) {
        let mut phis = Vec::with_capacity(inits.len());
        let mut current = Vec::with_capacity(inits.len());
        for init in inits {
            let name = self.ir.tmp();
            phis.push((name.clone(), self.ir.placeholder()));
            current.push(Val::new(init.ty.clone(), name));
        }
        (phis, current)
    }

    /// Fills [`Self::carried_phis`]: the initial values from block `from`, `yields` from
    /// the back-edge's block `latch`.
    fn patch_carried(&mut self, phis: &[(String, usize)], inits: &[Val], yields: &[Val], from: &str, latch: &str) {
        for ((name, at), (init, y)) in phis.iter().zip(inits.iter().zip(yields)) {
            self.ir.patch(*at, format!("  {name} = phi {} [ {}, %{from} ], [ {}, %{latch} ]", init.ty, init.v, y.v));
        }
    }

    /// One copy of a loop body for iteration `iv` with the carried values `current`: its
    /// yields.
    fn body_copy(&mut self, f: &LoopBody<'a, '_>, iv: String, current: &[Val]) -> Result<Vec<Val>, CodegenError> {
        self.bind(f.var, Val::new(f.ty, iv));
        for ((inner, _), val) in f.carried.iter().zip(current) {
            self.bind(*inner, val.clone());
        }
        let yielded = self.region(f.body, f.depth + 1)?.unwrap_or_default();
        if yielded.len() != f.carried.len() {
            return Err(self.err(f.h, format!("the loop body must yield {} values", f.carried.len())));
        }
        Ok(yielded)
    }

    /// The loop with `copies` body copies per back-edge, each followed by its test, entered
    /// at block `head` from `pre` (at least one iteration): copy `k` runs iteration
    /// `i + k * step` when the previous copy's `step < hi - i` says there is one, else
    /// branches to the latch, which continues only from the last copy. Every iteration index
    /// has one copy, so the lanes of a subgroup in iteration `i` are at one place, which
    /// subgroup operations in the body need. Returns the block it leaves from and the last
    /// yields, for the exit's phis.
    fn tested_for(
        &mut self,
        f: &ForParts<'a, '_>,
        (pre, head): (&str, &str),
        copies: u32,
    ) -> Result<(String, Vec<Val>), CodegenError> {
        let (ty, inits) = (f.body.ty, f.inits);
        let i = self.ir.tmp();
        let i_phi = self.ir.placeholder();
        let (phis, mut current) = self.carried_phis(inits);
        let mut ends: Vec<BodyCopy> = Vec::with_capacity(copies as usize);
        let mut iv = i.clone();
        let latch_l = if copies > 1 { self.ir.label("loop_latch") } else { String::new() };
        let mut copy_l = String::new();
        for k in 0..copies {
            if k > 0 {
                self.ir.start(&copy_l);
                iv = self.ir.emit(ty, format!("add {ty} {iv}, {}", f.step.v)).v;
            }
            current = self.body_copy(&f.body, iv.clone(), &current)?;
            let end = self.ir.block.clone();
            let left = self.ir.emit(ty, format!("sub {ty} {}, {iv}", f.hi.v));
            let more = self.ir.emit("i1", format!("icmp ugt {ty} {}, {}", left.v, f.step.v));
            if k + 1 < copies {
                copy_l = self.ir.label("loop_copy");
                self.ir.inst(format!("br i1 {}, label %{copy_l}, label %{latch_l}", more.v));
            }
            ends.push(BodyCopy { end, iv: iv.clone(), yields: current.clone(), more });
        }
        let (latch, last_i, yielded, more) = match ends.len() {
            1 => {
                let c = ends.swap_remove(0);
                (c.end, c.iv, c.yields, c.more)
            }
            _ => self.join_copies(&latch_l, ty, inits, &ends),
        };
        let next = self.ir.emit(ty, format!("add {ty} {last_i}, {}", f.step.v));
        let done = self.ir.label("loop_done");
        self.ir.inst(format!("br i1 {}, label %{head}, label %{done}", more.v));
        self.ir.patch(i_phi, format!("  {i} = phi {ty} [ {}, %{pre} ], [ {}, %{latch} ]", f.lo.v, next.v));
        self.patch_carried(&phis, inits, &yielded, pre, &latch);
        self.ir.start(&done);
        Ok((done, yielded))
    }

    /// The unrolled loop (module doc): in block `setup` (at least one iteration), the trip
    /// count splits into `full` rounds of `copies` unconditional body copies (one
    /// back-edge each) and a tail of `rem < copies` guarded copies after them. Returns the
    /// block it leaves from and the last yields, for the exit's phis.
    fn unrolled_for(&mut self, f: &ForParts<'a, '_>, copies: u32) -> Result<(String, Vec<Val>), CodegenError> {
        let (ty, inits) = (f.body.ty, f.inits);
        let setup = self.ir.block.clone();
        // trips = (hi - lo - 1) / step + 1: exact for lo < hi and step > 0 (unsigned).
        let span = self.ir.emit(ty, format!("sub {ty} {}, {}", f.hi.v, f.lo.v));
        let span1 = self.ir.emit(ty, format!("sub {ty} {}, 1", span.v));
        let q = self.ir.emit(ty, format!("udiv {ty} {}, {}", span1.v, f.step.v));
        let trips = self.ir.emit(ty, format!("add {ty} {}, 1", q.v));
        let full = self.ir.emit(ty, format!("udiv {ty} {}, {copies}", trips.v));
        let rem = self.ir.emit(ty, format!("urem {ty} {}, {copies}", trips.v));
        let any_full = self.ir.emit("i1", format!("icmp ne {ty} {}, 0", full.v));
        let main = self.ir.label("loop");
        let tail = self.ir.label("loop_tail");
        self.ir.inst(format!("br i1 {}, label %{main}, label %{tail}", any_full.v));

        // The rounds: `copies` iterations each, no test between them, so the device may
        // start every copy's loads at once.
        self.ir.start(&main);
        let (i, j) = (self.ir.tmp(), self.ir.tmp());
        let (i_phi, j_phi) = (self.ir.placeholder(), self.ir.placeholder());
        let (phis, mut current) = self.carried_phis(inits);
        let mut iv = i.clone();
        for k in 0..copies {
            if k > 0 {
                iv = self.ir.emit(ty, format!("add {ty} {iv}, {}", f.step.v)).v;
            }
            current = self.body_copy(&f.body, iv.clone(), &current)?;
        }
        let latch = self.ir.block.clone();
        // Past the last iteration when no round follows: then unused (no tail copy runs
        // when `rem` is 0), and a wrap is harmless.
        let next = self.ir.emit(ty, format!("add {ty} {iv}, {}", f.step.v));
        let j1 = self.ir.emit(ty, format!("sub {ty} {j}, 1"));
        let again = self.ir.emit("i1", format!("icmp ne {ty} {}, 0", j1.v));
        self.ir.inst(format!("br i1 {}, label %{main}, label %{tail}", again.v));
        self.ir.patch(i_phi, format!("  {i} = phi {ty} [ {}, %{setup} ], [ {}, %{latch} ]", f.lo.v, next.v));
        self.ir.patch(j_phi, format!("  {j} = phi {ty} [ {}, %{setup} ], [ {}, %{latch} ]", full.v, j1.v));
        self.patch_carried(&phis, inits, &current, &setup, &latch);

        // The tail: copy `k` runs when `rem > k`.
        self.ir.start(&tail);
        let incoming = |a: &str, b: &str| format!("[ {a}, %{setup} ], [ {b}, %{latch} ]");
        let mut iv = self.ir.emit(ty, format!("phi {ty} {}", incoming(&f.lo.v, &next.v))).v;
        let rounds = std::mem::take(&mut current);
        for (init, y) in inits.iter().zip(&rounds) {
            current.push(self.ir.emit(&init.ty, format!("phi {} {}", init.ty, incoming(&init.v, &y.v))));
        }
        let join = self.ir.label("loop_join");
        let mut ends: Vec<BodyCopy> = vec![BodyCopy {
            end: tail.clone(),
            iv: iv.clone(),
            yields: current.clone(),
            more: self.ir.emit("i1", format!("icmp ne {ty} {}, 0", rem.v)),
        }];
        for k in 0..copies - 1 {
            let copy_l = self.ir.label("loop_copy");
            let more = ends.last().map(|e| e.more.v.clone()).unwrap_or_default();
            self.ir.inst(format!("br i1 {more}, label %{copy_l}, label %{join}"));
            self.ir.start(&copy_l);
            if k > 0 {
                iv = self.ir.emit(ty, format!("add {ty} {iv}, {}", f.step.v)).v;
            }
            current = self.body_copy(&f.body, iv.clone(), &current)?;
            let more = self.ir.emit("i1", format!("icmp ugt {ty} {}, {}", rem.v, k + 1));
            ends.push(BodyCopy { end: self.ir.block.clone(), iv: iv.clone(), yields: current.clone(), more });
        }
        // The join's test is unused: nothing follows the tail.
        let (_, _, yields, _) = self.join_copies(&join, ty, inits, &ends);
        Ok((join, yields))
    }

    /// A `for` with a constant trip count `trips` as straight-line code: its iterations
    /// `lo, lo + step, ...` in a row (exact: the count says none passes `hi`), carried values
    /// passed from one to the next; `trips == 0` gives the initial values.
    fn straight_for(
        &mut self,
        f: &LoopBody<'a, '_>,
        op: &Op,
        (lo, step): (&Val, &Val),
        trips: u32,
    ) -> Result<(), CodegenError> {
        let ty = f.ty;
        let mut current = Vec::with_capacity(f.carried.len());
        for &(_, init) in f.carried {
            current.push(self.val(f.h, init)?);
        }
        let mut iv = lo.v.clone();
        for k in 0..trips {
            if k > 0 {
                iv = self.ir.emit(ty, format!("add {ty} {iv}, {}", step.v)).v;
            }
            current = self.body_copy(f, iv.clone(), &current)?;
        }
        for (i, r) in current.into_iter().enumerate() {
            self.set(f.h, op, i, r)?;
        }
        Ok(())
    }

    /// The latch of unrolled copies: every copy's test branches here when it ends the
    /// copies, the last copy always; only the last copy's test may be `true` here (the
    /// others are `false`). Returns the latch, the last iteration value, the yields and the
    /// test.
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
