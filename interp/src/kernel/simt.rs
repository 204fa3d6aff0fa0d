//! SIMT execution of one kernel body over one work-group at a time.
//!
//! Every SSA value holds one entry per work-item of the group ([`Lanes`]); ops run for the
//! whole group in lockstep under a lane mask. `if` runs each region under the lanes that
//! take it (skipping a region no lane takes), `for` and `loop` (general_loop.rs) iterate while
//! any lane is still in the loop, and `group_barrier` is a synchronisation point by construction: every work-item
//! has finished everything before it. A barrier reached by only part of the group is a
//! divergent barrier and an error. Pure ops compute every lane (inactive lanes compute
//! harmless garbage that is never observed); memory ops touch memory only for active lanes,
//! in lane order, which fixes the order of atomics and of racing stores.

use super::super::access::NodeLog;
use super::super::error::{Fault, FaultKind, InterpError, KernelSite};
use super::super::memory::MemCtx;
use super::super::scalar;
use super::super::scalar::ftz;
use super::super::value::{int_bits, int_of, literal_bits, Lanes};
use super::bind::{MemSlot, ParamBind, Prepared};
use super::launch::GroupIds;
use cmdgraph_ir::arena::{Arena, Handle};
use cmdgraph_ir::kernel::{Body, Builtin, Function, Kernel, Op, OpKind, Region, UnaryOp, ValueType, V};
use cmdgraph_ir::types::{ScalarType, Type};

/// Deepest region nesting executed (docs/ir.md's limit).
const MAX_NESTING: usize = 256;

/// What a value slot holds during a group's execution.
#[derive(Clone, Debug, Default)]
pub(crate) enum Slot {
    /// Not defined (yet) in this group.
    #[default]
    Empty,
    /// Data, one entry per work-item.
    Data(Lanes),
    /// Memory (a buffer or local parameter, or a `local` op).
    Mem(MemSlot),
}

/// The state of one kernel launch.
pub(crate) struct Exec<'k, 'r, 'a> {
    /// The kernel, or the function being run (a call switches to it).
    pub kernel: &'k Kernel,
    /// Its body.
    pub body: &'k Body,
    /// The module's functions, which `call` runs.
    pub functions: &'k Arena<Function>,
    /// The launched kernel's name (`kernel` is a function's while a call runs).
    pub launched: &'k str,
    pub node: &'r str,
    pub prep: Prepared,
    pub ids: GroupIds,
    pub slots: Vec<Slot>,
    pub mem: &'r mut MemCtx<'a>,
    pub log: Option<&'r mut NodeLog>,
    /// Op executions left, per work-item.
    pub fuel: &'r mut u64,
    /// How `fma` rounds.
    pub fma: super::super::FmaRounding,
    /// Whether float ops flush `f32` subnormals (`Denormals::Flush`).
    pub flush: bool,
    /// Lanes per subgroup (`RunOptions::subgroup_size`).
    pub subgroup_size: usize,
    /// The work-group's subgroups as lists of lanes (subgroup.rs), computed at the first
    /// subgroup op: every group of a launch has the same local ids.
    pub subgroups: Vec<Vec<usize>>,
}

impl<'k> Exec<'k, '_, '_> {
    /// Runs every group of the launch.
    pub fn run(&mut self) -> Result<(), InterpError> {
        let groups = self.prep.geo.group_count();
        for g in 0..groups {
            self.prep.geo.fill_ids(g, &mut self.ids);
            self.start_group();
            let mask = vec![true; self.ids.n];
            self.region(&self.body.entry, &mask, 0)?;
        }
        Ok(())
    }

    fn start_group(&mut self) {
        let n = self.ids.n;
        for slot in self.slots.iter_mut() {
            *slot = Slot::Empty;
        }
        for (v, bind) in &self.prep.params {
            let slot = match bind {
                ParamBind::Data(ty, lanes) => Slot::Data(Lanes::splat(*ty, lanes, n)),
                ParamBind::Mem(m) => Slot::Mem(*m),
            };
            if let Some(s) = self.slots.get_mut(v.index()) {
                *s = slot;
            }
        }
        for local in &mut self.prep.locals {
            local.bytes.fill(local.fill);
        }
    }

    /// A fault at `op` for the work-item in lane `lane`.
    pub fn fault(&self, op: Handle<Op>, lane: usize, kind: FaultKind) -> InterpError {
        let dims = self.prep.geo.dims;
        let work_item = (0..dims).map(|d| self.ids.gid[d].get(lane).copied().unwrap_or(0)).collect();
        let keyword = self.body.ops.try_get(op).map_or("?".to_string(), |o| op_keyword(&o.kind));
        InterpError::Fault(Box::new(Fault {
            node: self.node.to_string(),
            site: Some(KernelSite {
                kernel: if self.kernel.name == self.launched {
                    self.kernel.name.clone()
                } else {
                    format!("{} (in function @{})", self.launched, self.kernel.name)
                },
                op: keyword,
                op_index: op.index(),
                span: self.body.ops.span(op),
                work_item,
            }),
            kind,
        }))
    }

    /// A fault that is not about one lane: reported at the first active lane.
    pub fn fault_at(&self, op: Handle<Op>, mask: &[bool], message: String) -> InterpError {
        self.fault(op, first(mask), FaultKind::Other(message))
    }

    /// The data in `v`.
    pub fn data(&self, op: Handle<Op>, mask: &[bool], v: V) -> Result<&Lanes, InterpError> {
        match self.slots.get(v.index()) {
            Some(Slot::Data(l)) => Ok(l),
            _ => Err(self.fault_at(op, mask, format!("value {} is not defined here or is not data", self.vname(v)))),
        }
    }

    /// `%name` of a value.
    pub fn vname(&self, v: V) -> String {
        self.body.values.try_get(v).map_or("%?".to_string(), |x| format!("%{}", x.name))
    }

    /// Defines result `i` of `op`.
    pub fn set(&mut self, h: Handle<Op>, op: &Op, mask: &[bool], i: usize, lanes: Lanes) -> Result<(), InterpError> {
        let Some(&v) = op.results.get(i) else {
            return Err(self.fault_at(h, mask, format!("the op has no result {i}")));
        };
        if let Some(value) = self.body.values.try_get(v) {
            if value.ty != ValueType::Data(lanes.ty) {
                let declared = match value.ty {
                    ValueType::Data(t) => t.to_string(),
                    ValueType::Buffer { elem, access } => format!("buf<{elem}, {access}>"),
                    ValueType::Local { elem } => format!("local<{elem}>"),
                };
                let msg = format!("result %{} is declared {declared} but the op yields {}", value.name, lanes.ty);
                return Err(self.fault_at(h, mask, msg));
            }
        }
        match self.slots.get_mut(v.index()) {
            Some(slot) => {
                *slot = Slot::Data(lanes);
                Ok(())
            }
            None => Err(self.fault_at(h, mask, "result value out of range".to_string())),
        }
    }

    /// Runs a region under `mask`; returns the values of its `yield`, if it has one.
    pub fn region(&mut self, region: &'k Region, mask: &[bool], depth: usize) -> Result<Option<&'k [V]>, InterpError> {
        for &h in &region.ops {
            let Some(op) = self.body.ops.try_get(h) else {
                return Err(self.fault_at(h, mask, "op handle out of range".to_string()));
            };
            if let OpKind::Yield(values) | OpKind::Return(values) = &op.kind {
                return Ok(Some(values));
            }
            if depth > MAX_NESTING {
                return Err(self.fault_at(h, mask, format!("regions nest deeper than {MAX_NESTING}")));
            }
            let cost = self.ids.n as u64;
            if *self.fuel < cost {
                return Err(self.fault(h, first(mask), FaultKind::OutOfFuel));
            }
            *self.fuel -= cost;
            self.op(h, op, mask, depth)?;
        }
        Ok(None)
    }

    /// One op. Structured ops recurse through here, so this frame (and `for_loop`'s and
    /// `if_op`'s) stays small: everything else happens in `simple_op`, out of line.
    fn op(&mut self, h: Handle<Op>, op: &'k Op, mask: &[bool], depth: usize) -> Result<(), InterpError> {
        match &op.kind {
            OpKind::For { var, lo, hi, step, carried, body } => {
                self.for_loop(h, op, mask, depth, (*var, *lo, *hi, *step), carried, body)
            }
            OpKind::If { cond, result_types, then_region, else_region } => {
                self.if_op(h, op, mask, depth, *cond, result_types, then_region, else_region.as_ref())
            }
            OpKind::Call { func, args } => self.call(h, op, mask, depth, *func, args),
            OpKind::Loop { carried, body } => self.general_loop(h, op, mask, depth, carried, body),
            _ => self.simple_op(h, op, mask),
        }
    }

    /// Every op without regions.
    #[inline(never)]
    fn simple_op(&mut self, h: Handle<Op>, op: &'k Op, mask: &[bool]) -> Result<(), InterpError> {
        let n = self.ids.n;
        let out = match &op.kind {
            OpKind::Const(lit, ty) => {
                let bits = literal_bits(lit.value, ty.scalar)
                    .ok_or_else(|| self.fault_at(h, mask, format!("the literal does not fit {ty}")))?;
                Lanes::splat(*ty, &vec![bits; ty.lanes as usize], n)
            }
            OpKind::Builtin(b, d) => self.builtin(h, mask, *b, *d)?,
            OpKind::Unary(u, a) => {
                let a = self.data(h, mask, *a)?;
                let f = scalar::unary(*u, a.ty.scalar)
                    .ok_or_else(|| self.fault_at(h, mask, format!("`{}` does not apply to {}", u.keyword(), a.ty)))?;
                // `neg` flushes too, `abs` does not: what the H200 computes for our SPIR-V
                // (`abs` is a select around `FAbs`, docs/codegen.md; docs/ir.md, "Float
                // precision").
                let z = self.ftz(a.ty.scalar) && *u != UnaryOp::Abs;
                Lanes { ty: a.ty, data: a.data.iter().map(|&x| ftz(z, f(ftz(z, x)))).collect() }
            }
            OpKind::Binary(b, x, y) => {
                let (x, y) = (self.data(h, mask, *x)?, self.data(h, mask, *y)?);
                self.same(h, mask, x.ty, y.ty)?;
                let f = scalar::binary(*b, x.ty.scalar)
                    .ok_or_else(|| self.fault_at(h, mask, format!("`{}` does not apply to {}", b.keyword(), x.ty)))?;
                let z = self.ftz(x.ty.scalar);
                let data = x.data.iter().zip(&y.data).map(|(&p, &q)| ftz(z, f(ftz(z, p), ftz(z, q)))).collect();
                Lanes { ty: x.ty, data }
            }
            OpKind::Fma(a, b, c) => {
                let (a, b, c) = (self.data(h, mask, *a)?, self.data(h, mask, *b)?, self.data(h, mask, *c)?);
                self.same(h, mask, a.ty, b.ty)?;
                self.same(h, mask, a.ty, c.ty)?;
                let f = scalar::fma(a.ty.scalar, self.fma)
                    .ok_or_else(|| self.fault_at(h, mask, format!("`fma` does not apply to {}", a.ty)))?;
                let z = self.ftz(a.ty.scalar);
                let data = a.data.iter().zip(&b.data).zip(&c.data);
                let data = data.map(|((&p, &q), &r)| ftz(z, f(ftz(z, p), ftz(z, q), ftz(z, r)))).collect();
                Lanes { ty: a.ty, data }
            }
            OpKind::Cmp(c, x, y) => {
                let (x, y) = (self.data(h, mask, *x)?, self.data(h, mask, *y)?);
                self.same(h, mask, x.ty, y.ty)?;
                let f = scalar::compare(*c, x.ty.scalar);
                let z = self.ftz(x.ty.scalar);
                let data = x.data.iter().zip(&y.data).map(|(&p, &q)| f(ftz(z, p), ftz(z, q))).collect();
                Lanes { ty: x.ty.with_scalar(ScalarType::Bool), data }
            }
            OpKind::Select(c, x, y) => self.select(h, mask, *c, *x, *y)?,
            OpKind::Cast(x, ty) => {
                let x = self.data(h, mask, *x)?;
                if x.ty.lanes != ty.lanes {
                    return Err(self.fault_at(h, mask, format!("cast from {} to {ty} changes the lane count", x.ty)));
                }
                let (from, to) = (x.ty.scalar, ty.scalar);
                let (zi, zo) = (self.ftz(from), self.ftz(to));
                Lanes { ty: *ty, data: x.data.iter().map(|&b| ftz(zo, scalar::cast(ftz(zi, b), from, to))).collect() }
            }
            OpKind::Len(base) => self.len(h, mask, *base)?,
            OpKind::Bitcast(x, ty) => {
                let x = self.data(h, mask, *x)?;
                if x.ty.lanes != ty.lanes || x.ty.scalar.size() != ty.scalar.size() {
                    return Err(self.fault_at(h, mask, format!("bitcast from {} to {ty} changes the bits", x.ty)));
                }
                // The same bits (lanes hold their bit patterns, zero-extended to 64 bits); no
                // float op runs, so nothing is flushed or quieted.
                Lanes { ty: *ty, data: x.data.clone() }
            }
            OpKind::Splat(x, ty) => {
                let x = self.data(h, mask, *x)?;
                if x.ty != Type::scalar(ty.scalar) {
                    return Err(self.fault_at(h, mask, format!("splat of {} to {ty}", x.ty)));
                }
                let w = ty.lanes as usize;
                Lanes { ty: *ty, data: x.data.iter().flat_map(|&b| std::iter::repeat_n(b, w)).collect() }
            }
            OpKind::Extract(v, lane) => {
                let v = self.data(h, mask, *v)?;
                let (w, l) = (v.width(), *lane as usize);
                if l >= w {
                    return Err(self.fault_at(h, mask, format!("lane {lane} of a {}", v.ty)));
                }
                Lanes { ty: Type::scalar(v.ty.scalar), data: v.data.chunks(w).map(|c| c[l]).collect() }
            }
            OpKind::Insert(v, lane, s) => {
                let (v, s) = (self.data(h, mask, *v)?, self.data(h, mask, *s)?);
                let (w, l) = (v.width(), *lane as usize);
                if l >= w || s.ty != Type::scalar(v.ty.scalar) {
                    return Err(self.fault_at(h, mask, format!("insert of a {} into lane {lane} of a {}", s.ty, v.ty)));
                }
                let mut out = v.clone();
                for (chunk, &x) in out.data.chunks_mut(w).zip(&s.data) {
                    chunk[l] = x;
                }
                out
            }
            OpKind::Construct(parts) => self.construct(h, mask, parts)?,
            OpKind::Load { mem, index } => self.load(h, mask, *mem, *index)?,
            OpKind::Store { mem, index, value } => return self.store(h, mask, *mem, *index, *value),
            OpKind::Atomic { op: aop, mem, index, value, expected } => {
                self.atomic(h, mask, *aop, *mem, *index, *value, *expected)?
            }
            OpKind::GroupBarrier => {
                if let Some(missing) = mask.iter().position(|m| !m) {
                    let msg = format!(
                        "divergent group_barrier: reached by this work-item but not by work-item {} of the same \
                         work-group",
                        self.item_text(missing)
                    );
                    return Err(self.fault_at(h, mask, msg));
                }
                return Ok(());
            }
            OpKind::LocalAlloc { .. } => {
                let Some(&i) = self.prep.op_locals.get(&h) else {
                    return Err(self.fault_at(h, mask, "local memory was not prepared".to_string()));
                };
                if let Some(local) = self.prep.locals.get_mut(i) {
                    local.bytes.fill(local.fill);
                }
                let Some(&v) = op.results.first() else {
                    return Err(self.fault_at(h, mask, "`local` has no result".to_string()));
                };
                if let Some(slot) = self.slots.get_mut(v.index()) {
                    *slot = Slot::Mem(MemSlot::Local(i));
                }
                return Ok(());
            }
            OpKind::Subgroup(sg) => self.subgroup(h, mask, sg)?,
            OpKind::For { .. }
            | OpKind::If { .. }
            | OpKind::Loop { .. }
            | OpKind::Yield(_)
            | OpKind::Return(_)
            | OpKind::Call { .. } => return Ok(()),
        };
        self.set(h, op, mask, 0, out)
    }

    /// `call @f(args)`: runs `f`'s body under the same lanes, in a frame of its own (its
    /// values in fresh slots, its parameters holding the arguments), and defines the call's
    /// results from its `return`. The interpreter runs calls as calls rather than inlining
    /// them, so that it checks the inliner codegen uses (cmdgraph_ir::inline).
    #[inline(never)]
    fn call(
        &mut self,
        h: Handle<Op>,
        op: &'k Op,
        mask: &[bool],
        depth: usize,
        func: Handle<Function>,
        args: &'k [V],
    ) -> Result<(), InterpError> {
        let functions = self.functions;
        let Some(f) = functions.try_get(func) else {
            return Err(self.fault_at(h, mask, "call of a missing function".to_string()));
        };
        let Some(body) = f.body() else {
            return Err(self.fault_at(h, mask, format!("function @{} has no body", f.def.name)));
        };
        if depth > MAX_NESTING {
            return Err(self.fault_at(h, mask, format!("calls and regions nest deeper than {MAX_NESTING}")));
        }
        if args.len() != f.def.params.len() {
            return Err(self.fault_at(h, mask, format!("@{} takes {} arguments", f.def.name, f.def.params.len())));
        }
        let mut frame = vec![Slot::Empty; body.values.len()];
        for (i, &a) in args.iter().enumerate() {
            let arg = match self.slots.get(a.index()) {
                Some(Slot::Empty) | None => {
                    return Err(self.fault_at(h, mask, format!("argument {} is not defined here", self.vname(a))))
                }
                Some(slot) => slot.clone(),
            };
            if let Some(slot) = frame.get_mut(i) {
                *slot = arg;
            }
        }
        let caller = (self.kernel, self.body, std::mem::replace(&mut self.slots, frame));
        self.kernel = &f.def;
        self.body = body;
        let returned = match self.region(&body.entry, mask, depth + 1) {
            Ok(values) => values
                .unwrap_or(&[])
                .iter()
                .map(|&v| self.data(h, mask, v).cloned())
                .collect::<Result<Vec<Lanes>, InterpError>>(),
            Err(e) => Err(e),
        };
        (self.kernel, self.body, self.slots) = caller;
        for (i, lanes) in returned?.into_iter().enumerate() {
            self.set(h, op, mask, i, lanes)?;
        }
        Ok(())
    }

    /// Whether float ops on `ty` flush subnormals in this run (`f32` under `Denormals::Flush`).
    fn ftz(&self, ty: ScalarType) -> bool {
        self.flush && ty == ScalarType::F32
    }

    /// Fails unless two operand types are equal.
    pub fn same(&self, h: Handle<Op>, mask: &[bool], a: Type, b: Type) -> Result<(), InterpError> {
        if a == b {
            Ok(())
        } else {
            Err(self.fault_at(h, mask, format!("operands of types {a} and {b}")))
        }
    }

    /// `(x, y, z)` of the work-item in `lane`.
    pub fn item_text(&self, lane: usize) -> String {
        let ids: Vec<String> =
            (0..self.prep.geo.dims).map(|d| self.ids.gid[d].get(lane).copied().unwrap_or(0).to_string()).collect();
        format!("({})", ids.join(", "))
    }

    fn builtin(&self, h: Handle<Op>, mask: &[bool], b: Builtin, d: u8) -> Result<Lanes, InterpError> {
        let d = d as usize;
        if d > 2 {
            return Err(self.fault_at(h, mask, format!("dimension {d} (0 to 2 are allowed)")));
        }
        let geo = &self.prep.geo;
        let n = self.ids.n;
        // Dimensions the launch did not write read as id 0 and size 1 (as OpenCL does).
        let uniform = |x: u64| Lanes::splat(Type::U32, &[x], n);
        let per_item = |v: &[u64]| Lanes { ty: Type::U32, data: v.iter().map(|&x| x as u32 as u64).collect() };
        Ok(match b {
            Builtin::GlobalId => per_item(&self.ids.gid[d]),
            Builtin::LocalId => per_item(&self.ids.lid[d]),
            Builtin::GroupId => uniform(self.ids.group[d]),
            Builtin::GlobalRange => uniform(geo.global[d]),
            Builtin::LocalRange => uniform(geo.local[d]),
            Builtin::GroupRange => uniform(geo.groups()[d]),
        })
    }

    fn select(&self, h: Handle<Op>, mask: &[bool], c: V, x: V, y: V) -> Result<Lanes, InterpError> {
        let (c, x, y) = (self.data(h, mask, c)?, self.data(h, mask, x)?, self.data(h, mask, y)?);
        self.same(h, mask, x.ty, y.ty)?;
        if c.ty.scalar != ScalarType::Bool || !(c.ty.lanes == 1 || c.ty.lanes == x.ty.lanes) {
            return Err(self.fault_at(h, mask, format!("select condition of type {} for {}", c.ty, x.ty)));
        }
        let w = x.width();
        let per_lane = c.ty.lanes > 1;
        let data = (0..x.data.len())
            .map(|i| {
                let cond = if per_lane { c.data[i] } else { c.data[i / w] };
                if cond != 0 {
                    x.data[i]
                } else {
                    y.data[i]
                }
            })
            .collect();
        Ok(Lanes { ty: x.ty, data })
    }

    fn construct(&self, h: Handle<Op>, mask: &[bool], parts: &[V]) -> Result<Lanes, InterpError> {
        let mut lanes = Vec::with_capacity(parts.len());
        for &p in parts {
            lanes.push(self.data(h, mask, p)?);
        }
        let Some(first_part) = lanes.first() else {
            return Err(self.fault_at(h, mask, "`vec` needs 2 to 4 scalars".to_string()));
        };
        let scalar_ty = first_part.ty;
        if !(2..=4).contains(&lanes.len()) || scalar_ty.lanes != 1 || lanes.iter().any(|l| l.ty != scalar_ty) {
            return Err(self.fault_at(h, mask, "`vec` needs 2 to 4 scalars of one type".to_string()));
        }
        let w = lanes.len();
        let mut data = Vec::with_capacity(self.ids.n * w);
        for item in 0..self.ids.n {
            for part in &lanes {
                data.push(part.data[item]);
            }
        }
        Ok(Lanes { ty: Type::vector(scalar_ty.scalar, w as u8), data })
    }

    /// Copies the values `yielded` by a region into `into`, in the lanes of `mask` only (the
    /// other lanes keep theirs): how `if`, `for` and `loop` results merge per lane.
    pub(super) fn merge_yielded(
        &self,
        h: Handle<Op>,
        mask: &[bool],
        into: &mut [Lanes],
        yielded: &[V],
    ) -> Result<(), InterpError> {
        for (out, &y) in into.iter_mut().zip(yielded) {
            let src = match self.slots.get(y.index()) {
                Some(Slot::Data(l)) if l.ty == out.ty => l,
                _ => {
                    let msg = format!("yielded {} is not a defined {}", self.vname(y), out.ty);
                    return Err(self.fault_at(h, mask, msg));
                }
            };
            let w = out.width();
            for (l, _) in mask.iter().enumerate().filter(|(_, a)| **a) {
                out.data[l * w..(l + 1) * w].copy_from_slice(&src.data[l * w..(l + 1) * w]);
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn for_loop(
        &mut self,
        h: Handle<Op>,
        op: &'k Op,
        mask: &[bool],
        depth: usize,
        (var, lo, hi, step): (V, V, V, V),
        carried: &'k [(V, V)],
        body: &'k Region,
    ) -> Result<(), InterpError> {
        let (lo, hi, step) = (self.data(h, mask, lo)?, self.data(h, mask, hi)?, self.data(h, mask, step)?);
        let t = lo.ty;
        if t.lanes != 1 || !t.scalar.is_integer() || hi.ty != t || step.ty != t {
            return Err(self.fault_at(h, mask, format!("loop bounds of types {}, {}, {}", lo.ty, hi.ty, step.ty)));
        }
        let int = |bits: u64| int_of(bits, t.scalar).unwrap_or(0);
        let mut cur: Vec<i128> = lo.data.iter().map(|&b| int(b)).collect();
        let hi: Vec<i128> = hi.data.iter().map(|&b| int(b)).collect();
        let step: Vec<i128> = step.data.iter().map(|&b| int(b)).collect();
        let mut active: Vec<bool> = (0..self.ids.n).map(|l| mask[l] && cur[l] < hi[l]).collect();
        if let Some(l) = (0..self.ids.n).find(|&l| active[l] && step[l] <= 0) {
            return Err(self.fault(h, l, FaultKind::Other(format!("for step {} is not positive", step[l]))));
        }
        let mut values: Vec<Lanes> = Vec::with_capacity(carried.len());
        for &(_, init) in carried {
            values.push(self.data(h, mask, init)?.clone());
        }
        while active.iter().any(|&a| a) {
            let var_lanes = Lanes { ty: t, data: cur.iter().map(|&x| int_bits(x, t.scalar)).collect() };
            self.put(var, Slot::Data(var_lanes));
            for (&(inner, _), value) in carried.iter().zip(&values) {
                self.put(inner, Slot::Data(value.clone()));
            }
            let yielded = self.region(body, &active, depth + 1)?;
            if !carried.is_empty() {
                let yielded = yielded.filter(|y| y.len() == carried.len()).ok_or_else(|| {
                    self.fault_at(h, &active, format!("the loop body must yield {} values", carried.len()))
                })?;
                self.merge_yielded(h, &active, &mut values, yielded)?;
            }
            for l in 0..self.ids.n {
                if active[l] {
                    cur[l] += step[l];
                    active[l] = cur[l] < hi[l];
                }
            }
        }
        for (i, value) in values.into_iter().enumerate() {
            self.set(h, op, mask, i, value)?;
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn if_op(
        &mut self,
        h: Handle<Op>,
        op: &'k Op,
        mask: &[bool],
        depth: usize,
        cond: V,
        result_types: &'k [Type],
        then_region: &'k Region,
        else_region: Option<&'k Region>,
    ) -> Result<(), InterpError> {
        let c = self.data(h, mask, cond)?;
        if c.ty != Type::BOOL {
            return Err(self.fault_at(h, mask, format!("`if` condition of type {}", c.ty)));
        }
        let then_mask: Vec<bool> = mask.iter().zip(&c.data).map(|(&m, &b)| m && b != 0).collect();
        let else_mask: Vec<bool> = mask.iter().zip(&c.data).map(|(&m, &b)| m && b == 0).collect();
        let mut results: Vec<Lanes> = result_types.iter().map(|&t| Lanes::zeros(t, self.ids.n)).collect();
        for (region, lanes) in [(Some(then_region), &then_mask), (else_region, &else_mask)] {
            if !lanes.iter().any(|&a| a) {
                continue;
            }
            let Some(region) = region else {
                if results.is_empty() {
                    continue;
                }
                return Err(self.fault_at(h, lanes, "an `if` with results needs an else region".to_string()));
            };
            let yielded = self.region(region, lanes, depth + 1)?.unwrap_or(&[]);
            if yielded.len() != results.len() {
                return Err(self.fault_at(h, lanes, format!("the region must yield {} values", results.len())));
            }
            self.merge_yielded(h, lanes, &mut results, yielded)?;
        }
        for (i, value) in results.into_iter().enumerate() {
            self.set(h, op, mask, i, value)?;
        }
        Ok(())
    }

    pub(super) fn put(&mut self, v: V, slot: Slot) {
        if let Some(s) = self.slots.get_mut(v.index()) {
            *s = slot;
        }
    }
}

/// The first active lane (0 when none is).
pub(crate) fn first(mask: &[bool]) -> usize {
    mask.iter().position(|&m| m).unwrap_or(0)
}

/// The keyword an op is written with.
pub(crate) fn op_keyword(kind: &OpKind) -> String {
    match kind {
        OpKind::Const(..) => "const".into(),
        OpKind::Builtin(b, _) => b.keyword().into(),
        OpKind::Unary(u, _) => u.keyword().into(),
        OpKind::Binary(b, ..) => b.keyword().into(),
        OpKind::Fma(..) => "fma".into(),
        OpKind::Cmp(c, ..) => c.keyword().into(),
        OpKind::Select(..) => "select".into(),
        OpKind::Cast(..) => "cast".into(),
        OpKind::Len(_) => "len".into(),
        OpKind::Bitcast(..) => "bitcast".into(),
        OpKind::Splat(..) => "splat".into(),
        OpKind::Extract(..) => "extract".into(),
        OpKind::Insert(..) => "insert".into(),
        OpKind::Construct(..) => "vec".into(),
        OpKind::Load { .. } => "load".into(),
        OpKind::Store { .. } => "store".into(),
        OpKind::Atomic { op, .. } => format!("atomic {}", op.keyword()),
        OpKind::GroupBarrier => "group_barrier".into(),
        OpKind::LocalAlloc { .. } => "local".into(),
        OpKind::For { .. } => "for".into(),
        OpKind::If { .. } => "if".into(),
        OpKind::Yield(..) => "yield".into(),
        OpKind::Return(..) => "return".into(),
        OpKind::Call { .. } => "call".into(),
        OpKind::Subgroup(sg) => sg.keyword().into(),
        OpKind::Loop { .. } => "loop".into(),
    }
}
