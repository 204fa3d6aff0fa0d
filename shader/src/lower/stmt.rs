//! Statements: stores update the variable map or write memory, `if`s merge the variables
//! their branches change, calls are inlined.

use std::collections::HashMap;

use naga::{AtomicFunction as A, Block, Statement as St};

use super::{FnCtx, Lowerer, Ptr, Val, VarKey};
use crate::error::{Result, ShaderError};
use crate::types::{Ty, S};

const EXIT_HELP: &str = "`break` and `continue` are supported in loops, and `break` at the end of a `switch` case";

impl Lowerer<'_> {
    /// Lowers `block` into the current region. `tail`: nothing of the function follows the
    /// block, so a `return` at its end just ends the function.
    pub(crate) fn block(&mut self, f: &mut FnCtx<'_>, block: &Block, tail: bool) -> Result<()> {
        self.statements(f, &items(block), tail)
    }

    /// Lowers statements with their spans (see [`Lowerer::block`]).
    pub(crate) fn statements(&mut self, f: &mut FnCtx<'_>, stmts: &[(&St, naga::Span)], tail: bool) -> Result<()> {
        let mut flags = self.flags();
        for (i, &(s, span)) in stmts.iter().enumerate() {
            let span = if span.to_range().is_some_and(|r| !r.is_empty()) { span } else { f.site };
            // The statement before may have run `break` or `continue` (in an `if`): the rest
            // runs only where it did not.
            let now = self.flags();
            if now != flags {
                return self.guard_rest(f, &stmts[i..], tail, span);
            }
            flags = now;
            let last = i + 1 == stmts.len();
            match s {
                St::Emit(range) => {
                    for h in range.clone() {
                        if f.lookup(h).is_none() {
                            self.expr(f, h)?;
                        }
                    }
                }
                St::Block(b) if tail && ends_in_return(b) => {
                    // What follows a returning block is unreachable.
                    return self.block(f, b, true);
                }
                St::Block(b) => self.block(f, b, tail && last)?,
                St::If { condition, accept, reject } => {
                    let (mut a, mut r) = (items(accept), items(reject));
                    if tail && !last {
                        // `if c { ...; return; } rest`: the rest runs only when the other
                        // branch does, so it becomes part of that branch.
                        let rest = &stmts[i + 1..];
                        match (ends_in_return(accept), ends_in_return(reject)) {
                            (true, true) => {}
                            (true, false) => r.extend_from_slice(rest),
                            (false, true) => a.extend_from_slice(rest),
                            (false, false) => {
                                self.if_(f, *condition, &a, &r, false, span)?;
                                continue;
                            }
                        }
                        return self.if_(f, *condition, &a, &r, true, span);
                    }
                    self.if_(f, *condition, &a, &r, tail && last, span)?
                }
                St::Loop { body, continuing, break_if } => self.loop_statement(f, body, continuing, *break_if, span)?,
                St::Return { value } if !(tail && last) && self.flow.returned.is_some() => {
                    // In a function that returns from inside a loop: the flag ends the loops
                    // around and guards what follows (general_loop.rs).
                    if let Some(v) = value {
                        let v = self.expr(f, *v)?;
                        self.vars.insert(VarKey::Ret(f.id), v);
                    }
                    if let Some(k) = self.flow.returned {
                        self.set_flag(k);
                    }
                    return Ok(());
                }
                St::Return { value } => {
                    if !(tail && last) {
                        return Err(ShaderError::at(
                            span,
                            "`return` before the end of the function",
                            "restructure the code so that it returns only at its end (use an `if` around the rest)",
                        ));
                    }
                    if let Some(v) = value {
                        let v = self.expr(f, *v)?;
                        self.vars.insert(VarKey::Ret(f.id), v);
                    }
                }
                // What follows a `break` or `continue` in its block is dead code.
                St::Break => match self.flow.broke {
                    Some(k) => {
                        self.set_flag(k);
                        return Ok(());
                    }
                    None => return Err(ShaderError::at(span, "`break` before the end of a `switch` case", EXIT_HELP)),
                },
                St::Continue => match self.flow.continued {
                    Some(k) => {
                        self.set_flag(k);
                        return Ok(());
                    }
                    None => return Err(ShaderError::at(span, "`continue` outside a loop", EXIT_HELP)),
                },
                St::Kill => return Err(ShaderError::at(span, "`discard` in a compute shader", "")),
                // A subgroup barrier (WGSL `subgroupBarrier()`) is met by a work-group one,
                // which orders more; where only part of a work-group reaches it, the
                // interpreter refuses the run (a divergent `group_barrier`).
                St::ControlBarrier(flags) if *flags == naga::Barrier::SUB_GROUP => {
                    self.stmt_line("group_barrier".into())
                }
                // The IR's `group_barrier` is SYCL's: a work-group barrier with a work-group
                // fence over all memory (codegen gives it `UniformMemory | WorkgroupMemory`),
                // so it is every WGSL/GLSL barrier: `workgroupBarrier()`, `storageBarrier()`
                // (ordering more than it asks: work-group memory too) and GLSL's `barrier()`.
                St::ControlBarrier(_) => self.stmt_line("group_barrier".into()),
                St::MemoryBarrier(_) => {
                    // The IR's only fence comes with its barrier: accept a memory barrier only
                    // right next to a control barrier (GLSL `memoryBarrierShared(); barrier();`).
                    let next_to = |j: Option<usize>| {
                        j.and_then(|j| stmts.get(j)).is_some_and(|(s, _)| matches!(s, St::ControlBarrier(_)))
                    };
                    if !(next_to(i.checked_sub(1)) || next_to(Some(i + 1))) {
                        return Err(ShaderError::at(
                            span,
                            "a memory barrier without a control barrier",
                            "use `workgroupBarrier()` / `barrier()`",
                        ));
                    }
                }
                St::Store { pointer, value } => self.store(f, *pointer, *value, span)?,
                St::Atomic { pointer, fun, value, result } => self.atomic(f, *pointer, fun, *value, *result, span)?,
                St::Call { function, arguments, result } => {
                    let mut args = Vec::new();
                    for &a in arguments {
                        // A struct loaded from a flat buffer is read where its members are
                        // used: refuse it as a value that outlives its statement.
                        args.push(match self.expr(f, a)? {
                            Val::FlatLoad(_, at, _) => Val::WholeLoad(at),
                            v => v,
                        });
                    }
                    let ret = self.call(*function, args, span)?;
                    if let (Some(r), Some(v)) = (result, ret) {
                        f.bind(*r, v);
                    }
                }
                St::WorkGroupUniformLoad { pointer, result } => {
                    self.stmt_line("group_barrier".into());
                    let p = self.expr(f, *pointer)?;
                    let v = match p {
                        Val::Ptr(Ptr::Mem { mem, elem, index: Some(i), lane: None }) => {
                            let (n, t) = self.op(format!("load {mem}[{i}]"), elem);
                            Val::Ssa(n, t)
                        }
                        _ => return Err(ShaderError::at(span, "workgroupUniformLoad of this pointer", "")),
                    };
                    self.stmt_line("group_barrier".into());
                    f.bind(*result, v);
                }
                St::Switch { selector, cases } => self.switch(f, *selector, cases, tail && last, span)?,
                St::SubgroupBallot { result, predicate } => {
                    let c = match predicate {
                        Some(p) => {
                            let v = self.expr(f, *p)?;
                            self.ssa(&v, f.span(*p))?.0
                        }
                        None => self.constant("true", Ty::BOOL).0,
                    };
                    let (n, t) = self.op(format!("subgroup_ballot {c}"), Ty { s: S::U32, lanes: 4 });
                    f.bind(*result, Val::Ssa(n, t));
                }
                St::SubgroupCollectiveOperation { op, collective_op, argument, result } => {
                    let v = self.expr(f, *argument)?;
                    let (x, t) = self.ssa(&v, f.span(*argument))?;
                    let text = subgroup_collective(*op, *collective_op, &x)
                        .ok_or_else(|| ShaderError::at(span, format!("subgroup {op:?} as a {collective_op:?}"), ""))?;
                    let ty = if matches!(op, naga::SubgroupOperation::All | naga::SubgroupOperation::Any) {
                        Ty::BOOL
                    } else {
                        t
                    };
                    let (n, t) = self.op(text, ty);
                    f.bind(*result, Val::Ssa(n, t));
                }
                St::SubgroupGather { mode, argument, result } => {
                    let v = self.expr(f, *argument)?;
                    let (x, t) = self.ssa(&v, f.span(*argument))?;
                    let text = self.subgroup_gather(f, mode, &x, span)?;
                    let (n, t) = self.op(text, t);
                    f.bind(*result, Val::Ssa(n, t));
                }
                St::ImageStore { .. } | St::ImageAtomic { .. } => {
                    return Err(ShaderError::at(span, "texture stores are not supported", ""))
                }
                _ => return Err(ShaderError::at(span, "this statement is not supported", "")),
            }
        }
        Ok(())
    }

    fn store(
        &mut self,
        f: &mut FnCtx<'_>,
        pointer: naga::Handle<naga::Expression>,
        value: naga::Handle<naga::Expression>,
        span: naga::Span,
    ) -> Result<()> {
        let p = self.expr(f, pointer)?;
        if let Val::Ptr(p @ Ptr::Flat { .. }) = &p {
            return self.flat_store(f, p, value, span);
        }
        let v = self.expr(f, value)?;
        match p {
            Val::Ptr(Ptr::Var(k)) => {
                // Builtin vectors and zeros stay symbolic: they cost nothing until used.
                let v = match v {
                    Val::Ssa(..) | Val::Builtin(_) | Val::Zero(_) => v,
                    other => {
                        let (n, t) = self.ssa(&other, f.span(value))?;
                        Val::Ssa(n, t)
                    }
                };
                self.vars.insert(k, v);
            }
            Val::Ptr(Ptr::VarLane(k, lane)) => {
                let cur = self.vars.get(&k).cloned().unwrap_or(Val::Poisoned(span));
                let (cur, t) = self.ssa(&cur, span)?;
                let (x, _) = self.ssa(&v, f.span(value))?;
                let (n, t) = self.op(format!("insert {cur}, {lane}, {x}"), t);
                self.vars.insert(k, Val::Ssa(n, t));
            }
            Val::Ptr(Ptr::Mem { mem, index: Some(i), lane: None, .. }) => {
                let (x, _) = self.ssa(&v, f.span(value))?;
                self.stmt_line(format!("store {mem}[{i}], {x}"));
            }
            Val::Ptr(p @ (Ptr::Part { .. } | Ptr::PartLeaf { .. })) => self.part_store(p, v, span)?,
            // A whole fixed-size array: copied from memory in a counted loop (`out = w.arr;`),
            // or stored element by element from a value (`out = local_array;`).
            Val::Ptr(Ptr::Mem { mem, index: None, lane: None, .. }) => match v {
                Val::MemArray(src, elem, at, epoch) => {
                    let whole = Ptr::Mem { mem: src.clone(), elem, index: None, lane: None };
                    self.member_of_load(whole, at, epoch, span)?;
                    let count = self.pointee_type(f, pointer).and_then(|t| match self.module.types[t].inner {
                        naga::TypeInner::Array { size: naga::ArraySize::Constant(n), .. } => Some(n.get()),
                        _ => None,
                    });
                    let Some(count) = count else {
                        return Err(ShaderError::at(
                            span,
                            "a store of a whole array of unknown size",
                            "copy element by element",
                        ));
                    };
                    self.readable(&src, span)?;
                    self.copy_array(&mem, &src, elem, count)?;
                }
                Val::Struct(elems) => {
                    for (i, e) in elems.iter().enumerate() {
                        let (x, _) = self.ssa(e, f.span(value))?;
                        let (at, _) = self.constant(&i.to_string(), Ty::U32);
                        self.stmt_line(format!("store {mem}[{at}], {x}"));
                    }
                }
                _ => {
                    return Err(ShaderError::at(
                        span,
                        "a store of a whole array of this value",
                        "store an array value (a constructor or a loaded fixed-size array), or element by element",
                    ))
                }
            },
            Val::Ptr(Ptr::Mem { lane: Some(_), .. }) => {
                return Err(ShaderError::at(
                    span,
                    "a store to one lane of a vector in memory",
                    "store the whole vector: other work-items may write the other lanes",
                ))
            }
            _ => return Err(ShaderError::at(span, "a store through this pointer is not supported", "")),
        }
        Ok(())
    }

    fn atomic(
        &mut self,
        f: &mut FnCtx<'_>,
        pointer: naga::Handle<naga::Expression>,
        fun: &A,
        value: naga::Handle<naga::Expression>,
        result: Option<naga::Handle<naga::Expression>>,
        span: naga::Span,
    ) -> Result<()> {
        let p = self.expr(f, pointer)?;
        let Val::Ptr(Ptr::Mem { mem, elem, index: Some(i), lane: None }) = p else {
            return Err(ShaderError::at(
                span,
                "an atomic on this pointer",
                "atomics work on buffer or work-group array elements",
            ));
        };
        self.readable(&mem, span)?;
        let (x, _) = self.value(f, value)?;
        if let A::Exchange { compare: Some(cmp) } = fun {
            // The IR's `cmpxchg` is strong and returns the old value; it exchanged exactly
            // when the old value is the one expected.
            let (c, _) = self.value(f, *cmp)?;
            let (old, t) = self.op(format!("atomic cmpxchg {mem}[{i}], {c}, {x}"), elem);
            let (ok, b) = self.op(format!("eq {old}, {c}"), crate::types::Ty::BOOL);
            if let Some(r) = result {
                f.bind(r, Val::Struct(vec![Val::Ssa(old, t), Val::Ssa(ok, b)]));
            }
            return Ok(());
        }
        let name = match fun {
            A::Add => "add",
            A::Subtract => "sub",
            A::And => "and",
            A::ExclusiveOr => "xor",
            A::InclusiveOr => "or",
            A::Min => "min",
            A::Max => "max",
            A::Exchange { compare: None } => "xchg",
            A::Exchange { compare: Some(_) } => return Err(ShaderError::at(span, "internal: compare-exchange", "")),
        };
        let (n, t) = self.op(format!("atomic {name} {mem}[{i}], {x}"), elem);
        if let Some(r) = result {
            f.bind(r, Val::Ssa(n, t));
        }
        Ok(())
    }

    fn if_(
        &mut self,
        f: &mut FnCtx<'_>,
        condition: naga::Handle<naga::Expression>,
        accept: &[(&St, naga::Span)],
        reject: &[(&St, naga::Span)],
        tail: bool,
        span: naga::Span,
    ) -> Result<()> {
        let (c, _) = self.value(f, condition)?;
        self.if_value(f, c, |l, f| l.statements(f, accept, tail), |l, f| l.statements(f, reject, tail), span)
    }

    /// An `if` on the IR value `c` whose branches are lowered by `accept` and `reject`: the
    /// variables either branch changes become its results.
    pub(crate) fn if_value<'f>(
        &mut self,
        f: &mut FnCtx<'f>,
        c: String,
        accept: impl FnOnce(&mut Self, &mut FnCtx<'f>) -> Result<()>,
        reject: impl FnOnce(&mut Self, &mut FnCtx<'f>) -> Result<()>,
        span: naga::Span,
    ) -> Result<()> {
        let before = self.vars.clone();
        let (vars_a, mut lines_a) = self.branch(f, accept)?;
        self.vars = before.clone();
        let (vars_b, mut lines_b) = self.branch(f, reject)?;
        // The variables either branch changed become the `if`'s results (in variable order,
        // so the text is deterministic). A counter poisoned in a branch stays poisoned.
        let mut results = Vec::new();
        let mut after = before.clone();
        for (k, old) in &before {
            let (a, b) = (vars_a.get(k).unwrap_or(old), vars_b.get(k).unwrap_or(old));
            if a == old && b == old {
                continue;
            }
            if let Val::Poisoned(_) = a {
                after.insert(*k, a.clone());
                continue;
            }
            if let Val::Poisoned(_) = b {
                after.insert(*k, b.clone());
                continue;
            }
            results.push((*k, a.clone(), b.clone()));
        }
        // A `bool` that is one constant in each branch (the loop flags, mostly) is the
        // condition itself, its negation or a constant: no `if` result.
        let truth = |l: &Self, v: &Val| match v {
            Val::Ssa(n, _) if l.interned.get("const true : bool") == Some(n) => Some(true),
            Val::Ssa(n, _) if l.interned.get("const false : bool") == Some(n) => Some(false),
            _ => None,
        };
        let mut kept = Vec::with_capacity(results.len());
        for (k, a, b) in results {
            let v = match (truth(self, &a), truth(self, &b)) {
                (Some(true), Some(false)) => Val::Ssa(c.clone(), crate::types::Ty::BOOL),
                (Some(false), Some(true)) => {
                    let (n, t) = self.op(format!("not {c}"), crate::types::Ty::BOOL);
                    Val::Ssa(n, t)
                }
                (Some(x), Some(y)) if x == y => a.clone(),
                _ => {
                    kept.push((k, a, b));
                    continue;
                }
            };
            after.insert(k, v);
        }
        let results = kept;
        if results.is_empty() {
            if lines_a.is_empty() && lines_b.is_empty() {
                self.vars = after;
                return Ok(());
            }
            if lines_a.is_empty() {
                // `if !c { b }`: the IR's `if` needs a then-region, not an else-only one.
                let (n, _) = self.op(format!("not {c}"), crate::types::Ty::BOOL);
                self.stmt_line(format!("if {n} {{"));
                self.nest(lines_b);
            } else {
                self.stmt_line(format!("if {c} {{"));
                self.nest(lines_a);
                if !lines_b.is_empty() {
                    self.stmt_line("} else {".into());
                    self.nest(lines_b);
                }
            }
            self.stmt_line("}".into());
            self.vars = after;
            return Ok(());
        }
        let mut yields_a = Vec::new();
        let mut yields_b = Vec::new();
        let mut types = Vec::new();
        let mut names = Vec::new();
        for (_, a, b) in &results {
            // Values a branch must materialise (zeros, builtin vectors) are prologue ops, so
            // they are visible in both regions.
            let (na, ta) = self.ssa(a, span)?;
            let (nb, tb) = self.ssa(b, span)?;
            if ta != tb {
                return Err(ShaderError::at(span, "internal: a variable changes type", ""));
            }
            yields_a.push(na);
            yields_b.push(nb);
            types.push(ta);
            names.push(self.fresh());
        }
        lines_a.push(format!("yield {}", yields_a.join(", ")));
        lines_b.push(format!("yield {}", yields_b.join(", ")));
        let tys: Vec<String> = types.iter().map(|t| t.text()).collect();
        self.stmt_line(format!("{} = if {c} -> {} {{", names.join(", "), tys.join(", ")));
        self.nest(lines_a);
        self.stmt_line("} else {".into());
        self.nest(lines_b);
        self.stmt_line("}".into());
        for (((k, _, _), n), t) in results.iter().zip(names).zip(types) {
            after.insert(*k, Val::Ssa(n, t));
        }
        self.vars = after;
        Ok(())
    }

    /// Lowers a branch as a region of its own: returns the variables at its end and its lines.
    fn branch<'f>(
        &mut self,
        f: &mut FnCtx<'f>,
        body: impl FnOnce(&mut Self, &mut FnCtx<'f>) -> Result<()>,
    ) -> Result<(std::collections::BTreeMap<VarKey, Val>, Vec<String>)> {
        f.scopes.push(HashMap::new());
        let r = self.region(|l| body(l, f));
        f.scopes.pop();
        let ((), lines) = r?;
        Ok((self.vars.clone(), lines))
    }

    /// Inlines a call of user function `function`; returns its result.
    fn call(
        &mut self,
        function: naga::Handle<naga::Function>,
        args: Vec<Val>,
        span: naga::Span,
    ) -> Result<Option<Val>> {
        let module = self.module;
        let Ok(func) = module.functions.try_get(function) else {
            return Err(ShaderError::at(span, "internal: unknown function", ""));
        };
        let id = function.index() as u32;
        let mut callee = FnCtx { func, id, args, scopes: vec![HashMap::new()], site: span };
        self.init_locals(&mut callee)?;
        self.vars.insert(VarKey::Ret(id), Val::Poisoned(span));
        // The caller's loop is out of the callee's reach.
        let outer = self.enter_function(&callee)?;
        let r = self.block(&mut callee, &func.body, true);
        self.leave_function(&callee, outer);
        r?;
        let ret = self.vars.remove(&VarKey::Ret(id)).filter(|v| !matches!(v, Val::Poisoned(_)));
        // The callee's locals die with the call.
        self.vars.retain(|k, _| !matches!(k, VarKey::Local(fid, _) if *fid == id));
        Ok(ret)
    }
}

pub(crate) fn items(block: &Block) -> Vec<(&St, naga::Span)> {
    block.span_iter().map(|(s, sp)| (s, *sp)).collect()
}

/// Whether control never falls out of the end of `block`: it ends in a `return`.
pub(crate) fn ends_in_return(block: &Block) -> bool {
    match block.last() {
        Some(St::Return { .. }) => true,
        Some(St::Block(b)) => ends_in_return(b),
        Some(St::If { accept, reject, .. }) => ends_in_return(accept) && ends_in_return(reject),
        _ => false,
    }
}

/// The IR op of a subgroup collective on `x`: `subgroup_reduce add %x`, `subgroup_all %c`, ...
fn subgroup_collective(op: naga::SubgroupOperation, collective: naga::CollectiveOperation, x: &str) -> Option<String> {
    use naga::{CollectiveOperation as C, SubgroupOperation as O};
    let name = match op {
        O::All | O::Any => {
            let vote = if op == O::All { "subgroup_all" } else { "subgroup_any" };
            return (collective == C::Reduce).then(|| format!("{vote} {x}"));
        }
        O::Add => "add",
        O::Mul => "mul",
        O::Min => "min",
        O::Max => "max",
        O::And => "and",
        O::Or => "or",
        O::Xor => "xor",
    };
    let kind = match collective {
        C::Reduce => "subgroup_reduce",
        C::InclusiveScan => "subgroup_inclusive_scan",
        C::ExclusiveScan => "subgroup_exclusive_scan",
    };
    Some(format!("{kind} {name} {x}"))
}

impl Lowerer<'_> {
    /// The IR op of a subgroup gather of `x`: broadcasts and shuffles, the relative shuffles
    /// (`subgroupShuffleDown/Up/Xor`) as a shuffle from the lane they compute.
    fn subgroup_gather(
        &mut self,
        f: &mut FnCtx<'_>,
        mode: &naga::GatherMode,
        x: &str,
        span: naga::Span,
    ) -> Result<String> {
        use naga::GatherMode as G;
        let mut lane = |this: &mut Self, h: naga::Handle<naga::Expression>| -> Result<String> {
            let v = this.expr(f, h)?;
            Ok(this.ssa(&v, f.span(h))?.0)
        };
        Ok(match *mode {
            G::BroadcastFirst => format!("subgroup_broadcast_first {x}"),
            G::Broadcast(l) => format!("subgroup_broadcast {x}, {}", lane(self, l)?),
            G::Shuffle(l) => format!("subgroup_shuffle {x}, {}", lane(self, l)?),
            G::ShuffleDown(d) | G::ShuffleUp(d) | G::ShuffleXor(d) => {
                let d = lane(self, d)?;
                let (me, _) = self.interned("subgroup_local_id".into(), Ty::U32);
                let how = match *mode {
                    G::ShuffleDown(_) => "add",
                    G::ShuffleUp(_) => "sub",
                    _ => "xor",
                };
                let (from, _) = self.op(format!("{how} {me}, {d}"), Ty::U32);
                format!("subgroup_shuffle {x}, {from}")
            }
            G::QuadBroadcast(_) | G::QuadSwap(_) => {
                return Err(ShaderError::at(span, "quad operations", "use subgroup broadcasts and shuffles"))
            }
        })
    }
}
