//! Counted loops: the loop shape the IR's `for` has (tile-contractions recognises it).
//!
//! naga lowers `for (var i = lo; i < hi; i += step) { body }` (WGSL and GLSL alike) to
//!
//! ```text
//! Loop {
//!     body: [Emit.., If { i < hi, accept: [], reject: [Break] } (or If { !(i < hi), [Break], [] }), body..],
//!     continuing: [Emit.., Store i = i + step],
//!     break_if: None,
//! }
//! ```
//!
//! which is `for %i = lo to hi step step` when `step` is a positive constant, `hi` does not
//! change in the loop and the body neither assigns `i` nor leaves early (`break`,
//! `continue`). Every other loop is a general `loop` (general_loop.rs).

use std::collections::{BTreeSet, HashMap};

use naga::{BinaryOperator, Block, Expression as E, Handle, Literal, Statement as St, UnaryOperator};

use super::aggregate::PRIVATE;
use super::general_loop::exits;
use super::{FnCtx, Lowerer, Val, VarKey};
use crate::error::Result;

type H = Handle<naga::Expression>;

/// The shape of a recognised counted loop.
struct Counted<'a> {
    counter: Handle<naga::LocalVariable>,
    hi: H,
    step: H,
    /// The body after the exit test.
    rest: &'a [St],
    /// The index in the body of the first statement after the exit test.
    rest_at: usize,
    /// The expressions of the exit test.
    test: Vec<H>,
}

impl Lowerer<'_> {
    /// Lowers a loop of the counted shape as a `for`; returns `false`, having emitted
    /// nothing that matters, when it does not have that shape.
    pub(crate) fn counted_loop(
        &mut self,
        f: &mut FnCtx<'_>,
        body: &Block,
        continuing: &Block,
        span: naga::Span,
    ) -> Result<bool> {
        let Some(shape) = recognise(f, body, continuing) else { return Ok(false) };
        if exits(shape.rest, false) {
            return Ok(false);
        }
        let counter = VarKey::Local(f.id, shape.counter.index() as u32);
        let mut stored = BTreeSet::new();
        self.stores_in(f, shape.rest, &mut stored);
        if stored.contains(&counter) {
            return Ok(false);
        }
        // The counter changes in the continuing block: a bound reading it is not invariant.
        let mut changing = stored.clone();
        changing.insert(counter);
        if !invariant(self, f, shape.hi, &changing) {
            return Ok(false);
        }
        let lo_val = self.vars.get(&counter).cloned().unwrap_or(Val::Poisoned(span));
        let (lo, lt) = self.ssa(&lo_val, span)?;
        // The bound is loop-invariant, so its value before the loop is its value in every test.
        let (hi, ht) = self.value(f, shape.hi)?;
        let (step, st) = self.value(f, shape.step)?;
        if lt != ht || lt != st || !lt.s.is_int() || lt.lanes != 1 {
            // The bound and step were lowered before the loop, where they are valid.
            return Ok(false);
        }
        // The emits before the exit test: all but the test itself (the counter's load, the
        // comparison and its negation) are lowered at the top of the body, where naga
        // evaluates them; the bound is already lowered before the loop.
        let lead: Vec<St> = body[..shape.rest_at - 1]
            .iter()
            .filter_map(|s| match s {
                St::Emit(r) => Some(r.clone()),
                _ => None,
            })
            .flat_map(|r| r.clone())
            .filter(|h| !shape.test.contains(h))
            .map(|h| St::Emit(naga::Range::new_from_bounds(h, h)))
            .collect();
        let mut items: Vec<(&St, naga::Span)> = lead.iter().map(|s| (s, span)).collect();
        items.extend(body.span_iter().skip(shape.rest_at).map(|(s, sp)| (s, *sp)));

        // The variables the body stores to are carried, except the counters of inner loops
        // (poisoned at the end of the body): those are found by a first lowering, and the
        // body is lowered again with them poisoned from the start, so that a read of one
        // before its loop sets it is refused rather than reading a value from before.
        let before = self.vars.clone();
        let mut excluded = BTreeSet::new();
        let (var, carried, carry_names, inits, mut lines) = loop {
            self.vars = before.clone();
            let carried: Vec<VarKey> =
                stored.iter().copied().filter(|k| self.vars.contains_key(k) && !excluded.contains(k)).collect();
            let mut inits = Vec::new();
            for k in &carried {
                let v = self.vars.get(k).cloned().unwrap_or(Val::Poisoned(span));
                inits.push(self.ssa(&v, span)?);
            }
            let var = self.fresh();
            let carry_names: Vec<String> = carried.iter().map(|_| self.fresh()).collect();
            self.vars.insert(counter, Val::Ssa(var.clone(), lt));
            for ((k, n), (_, t)) in carried.iter().zip(&carry_names).zip(&inits) {
                self.vars.insert(*k, Val::Ssa(n.clone(), *t));
            }
            for k in &excluded {
                self.vars.insert(*k, Val::Poisoned(span));
            }
            f.scopes.push(HashMap::new());
            // A `break` or `continue` in the body would be this loop's (there is none): the
            // flags of an enclosing general loop are out of reach.
            let outer = std::mem::take(&mut self.flow);
            let r = self.region(|l| l.statements(f, &items, false));
            self.flow = outer;
            f.scopes.pop();
            let ((), lines) = r?;
            let poisoned: Vec<VarKey> =
                carried.iter().copied().filter(|k| matches!(self.vars.get(k), Some(Val::Poisoned(_)))).collect();
            if poisoned.is_empty() {
                break (var, carried, carry_names, inits, lines);
            }
            excluded.extend(poisoned);
        };
        let mut header = format!("for {var} = {lo} to {hi} step {step}");
        if carried.is_empty() {
            self.stmt_line(format!("{header} {{"));
        } else {
            let mut yields = Vec::new();
            for k in &carried {
                let v = self.vars.get(k).cloned().unwrap_or(Val::Poisoned(span));
                yields.push(self.ssa(&v, span)?.0);
            }
            lines.push(format!("yield {}", yields.join(", ")));
            let pairs: Vec<String> =
                carry_names.iter().zip(&inits).map(|(c, (init, _))| format!("{c} = {init}")).collect();
            header.push_str(&format!(" carry({})", pairs.join(", ")));
            let results: Vec<String> = carried.iter().map(|_| self.fresh()).collect();
            self.stmt_line(format!("{} = {header} {{", results.join(", ")));
            for ((k, n), (_, t)) in carried.iter().zip(results).zip(&inits) {
                self.vars.insert(*k, Val::Ssa(n, *t));
            }
        }
        self.nest(lines);
        self.stmt_line("}".into());
        self.vars.insert(counter, Val::Poisoned(span));
        for k in excluded {
            self.vars.insert(k, Val::Poisoned(span));
        }
        Ok(true)
    }

    /// The tracked variables `stmts` may store to (locals of `f` and private globals, also
    /// through inlined calls).
    pub(crate) fn stores_in(&self, f: &FnCtx<'_>, stmts: &[St], out: &mut BTreeSet<VarKey>) {
        for s in stmts {
            match s {
                St::Store { pointer, .. } => {
                    if let Some(k) = root_var(f, *pointer, self) {
                        self.insert_stored(k, out);
                    }
                }
                St::Block(b) => self.stores_in(f, b, out),
                St::If { accept, reject, .. } => {
                    self.stores_in(f, accept, out);
                    self.stores_in(f, reject, out);
                }
                St::Loop { body, continuing, .. } => {
                    self.stores_in(f, body, out);
                    self.stores_in(f, continuing, out);
                }
                St::Switch { cases, .. } => {
                    for c in cases {
                        self.stores_in(f, &c.body, out);
                    }
                }
                St::Call { function, arguments, .. } => {
                    if let Ok(callee) = self.module.functions.try_get(*function) {
                        // A callee changes the private globals it stores to and, through
                        // pointer arguments, the caller's variables.
                        let ctx = FnCtx {
                            func: callee,
                            id: function.index() as u32,
                            args: Vec::new(),
                            scopes: Vec::new(),
                            site: f.site,
                        };
                        let mut inner = BTreeSet::new();
                        self.stores_in(&ctx, &callee.body, &mut inner);
                        out.extend(inner.into_iter().filter(|k| {
                            matches!(k, VarKey::Private(_)) || matches!(k, VarKey::Part(id, ..) if *id == PRIVATE)
                        }));
                        for &a in arguments {
                            if let Some(k) = root_var(f, a, self) {
                                self.insert_stored(k, out);
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

impl Lowerer<'_> {
    /// Records a store to variable `k`; for an aggregate variable, to every one of its leaves
    /// (aggregate.rs), since a computed index may reach any.
    fn insert_stored(&self, k: VarKey, out: &mut BTreeSet<VarKey>) {
        out.insert(k);
        let (id, index) = match k {
            VarKey::Local(f, l) => (f, l),
            VarKey::Private(g) => (PRIVATE, g),
            _ => return,
        };
        out.extend(self.vars.range(VarKey::Part(id, index, 0)..=VarKey::Part(id, index, u32::MAX)).map(|(k, _)| *k));
    }
}

/// The tracked variable a pointer expression points into, if any.
fn root_var(f: &FnCtx<'_>, mut h: H, l: &Lowerer<'_>) -> Option<VarKey> {
    loop {
        match f.func.expressions.try_get(h).ok()? {
            E::LocalVariable(v) => return Some(VarKey::Local(f.id, v.index() as u32)),
            E::GlobalVariable(g) => {
                let k = VarKey::Private(g.index() as u32);
                let part = VarKey::Part(PRIVATE, g.index() as u32, 0);
                return (l.vars.contains_key(&k) || l.vars.contains_key(&part)).then_some(k);
            }
            E::Access { base, .. } | E::AccessIndex { base, .. } => h = *base,
            _ => return None,
        }
    }
}

/// The counted shape of a loop, if it has it.
fn recognise<'a>(f: &FnCtx<'_>, body: &'a Block, continuing: &Block) -> Option<Counted<'a>> {
    let stmts: &[St] = body;
    let test = stmts.iter().position(|s| !matches!(s, St::Emit(_)))?;
    let exits = |b: &Block| b.len() == 1 && matches!(b.first(), Some(St::Break));
    let cond = match &stmts[test] {
        St::If { condition, accept, reject } if accept.is_empty() && exits(reject) => *condition,
        St::If { condition, accept, reject } if exits(accept) && reject.is_empty() => {
            match f.func.expressions.try_get(*condition) {
                Ok(E::Unary { op: UnaryOperator::LogicalNot, expr }) => *expr,
                _ => return None,
            }
        }
        _ => return None,
    };
    let Ok(E::Binary { op: BinaryOperator::Less, left, right }) = f.func.expressions.try_get(cond) else {
        return None;
    };
    let counter = loaded_local(f, *left)?;
    // The continuing block: emits, then `i = i + step`.
    let mut step = None;
    for s in continuing.iter() {
        match s {
            St::Emit(_) => {}
            St::Store { pointer, value } if step.is_none() => {
                let target = matches!(f.func.expressions.try_get(*pointer), Ok(E::LocalVariable(v)) if *v == counter);
                let add = match f.func.expressions.try_get(*value) {
                    Ok(E::Binary { op: BinaryOperator::Add, left, right })
                        if loaded_local(f, *left) == Some(counter) =>
                    {
                        Some(*right)
                    }
                    _ => None,
                };
                match (target, add) {
                    (true, Some(s)) if positive_constant(f, s) => step = Some(s),
                    _ => return None,
                }
            }
            _ => return None,
        }
    }
    let step = step?;
    let mut test_exprs = vec![cond, *left];
    if let St::If { condition, .. } = &stmts[test] {
        test_exprs.push(*condition);
    }
    Some(Counted { counter, hi: *right, step, rest: &stmts[test + 1..], rest_at: test + 1, test: test_exprs })
}

/// The local variable `h` loads, if it is `Load(LocalVariable)`.
fn loaded_local(f: &FnCtx<'_>, h: H) -> Option<Handle<naga::LocalVariable>> {
    match f.func.expressions.try_get(h).ok()? {
        E::Load { pointer } => match f.func.expressions.try_get(*pointer).ok()? {
            E::LocalVariable(v) => Some(*v),
            _ => None,
        },
        _ => None,
    }
}

fn positive_constant(f: &FnCtx<'_>, h: H) -> bool {
    matches!(
        f.func.expressions.try_get(h),
        Ok(E::Literal(Literal::U32(1..) | Literal::U64(1..) | Literal::I32(1..) | Literal::I64(1..)))
    )
}

/// Whether `h` has one value throughout a loop whose body stores to `stored`: it reads no
/// memory and no variable the loop changes.
fn invariant(l: &Lowerer<'_>, f: &FnCtx<'_>, h: H, stored: &BTreeSet<VarKey>) -> bool {
    let Ok(e) = f.func.expressions.try_get(h) else { return false };
    let inv = |x: &H| invariant(l, f, *x, stored);
    match e {
        E::Literal(_) | E::Constant(_) | E::ZeroValue(_) | E::FunctionArgument(_) => true,
        E::Load { pointer } => pointer_invariant(l, f, *pointer, stored),
        E::Binary { left, right, .. } => inv(left) && inv(right),
        E::Unary { expr, .. } | E::As { expr, .. } => inv(expr),
        E::Select { condition, accept, reject } => inv(condition) && inv(accept) && inv(reject),
        E::Math { arg, arg1, arg2, arg3, .. } => {
            inv(arg) && [arg1, arg2, arg3].iter().all(|a| a.as_ref().is_none_or(inv))
        }
        E::AccessIndex { base, .. } => inv(base),
        E::Splat { value, .. } => inv(value),
        E::Swizzle { vector, .. } => inv(vector),
        _ => false,
    }
}

/// Whether a load through `h` reads the same value throughout the loop: a variable the loop
/// does not store to, or a uniform.
fn pointer_invariant(l: &Lowerer<'_>, f: &FnCtx<'_>, h: H, stored: &BTreeSet<VarKey>) -> bool {
    match f.func.expressions.try_get(h) {
        Ok(E::LocalVariable(v)) => !stored.contains(&VarKey::Local(f.id, v.index() as u32)),
        Ok(E::AccessIndex { base, .. }) => pointer_invariant(l, f, *base, stored),
        // Uniforms, and private globals the loop does not store to; storage and work-group
        // memory may change.
        Ok(E::GlobalVariable(g)) => match l.module.global_variables.try_get(*g).map(|g| g.space) {
            Ok(naga::AddressSpace::Uniform | naga::AddressSpace::Immediate) => true,
            Ok(naga::AddressSpace::Private) => !stored.contains(&VarKey::Private(g.index() as u32)),
            _ => false,
        },
        _ => false,
    }
}
