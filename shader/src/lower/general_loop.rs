//! General loops: every naga `Loop` that is not a counted `for` (loops.rs) becomes the IR's
//! do-while `loop` (docs/ir.md, "Ops").
//!
//! naga writes every loop (WGSL `loop`, `while`, `for`; GLSL `while`, `do`, `for`) as
//!
//! ```text
//! Loop { body: [..], continuing: [..], break_if: Option<expr> }
//! ```
//!
//! where `break` leaves the loop, `continue` jumps to `continuing`, and `break_if` (WGSL
//! `break if`) is tested at the end of `continuing`. A round of the IR `loop` is one run of
//! `body` then `continuing`:
//!
//! ```text
//! %vars_out... = loop carry(%var = %init, ...) {
//!   body, with `break` / `continue` setting this round's flags and what follows a
//!   statement that may have set one guarded by `if !(broke or continued) { ... }`
//!   if !broke { continuing; broke = break_if }
//!   %again = not broke
//!   yield %again, %var_next...
//! }
//! ```
//!
//! The flags are [`VarKey::Broke`] and [`VarKey::Continued`], tracked like variables: an `if`
//! whose branch breaks makes the flag one of its results, so nesting needs nothing more. The
//! variables the loop stores to are its carried values, as in a counted `for`.
//!
//! A function that returns from inside a loop has a third flag, [`VarKey::Returned`], for
//! the whole function: `return` sets it (and the return value), every loop around ends its
//! round as if broken and stops, and what follows in the function is guarded like the rest
//! of a round; the flag and the return value are carried through the loops.

use std::collections::{BTreeSet, HashMap};

use naga::{Block, Statement as St};

use super::stmt::items;
use super::{FnCtx, Lowerer, Val, VarKey};
use crate::error::{Result, ShaderError};
use crate::types::{value_type, Ty};

type H = naga::Handle<naga::Expression>;

/// The exit flags of the innermost general loop being lowered (none outside one).
#[derive(Clone, Debug, Default)]
pub(crate) struct Flow {
    /// Set by `break` (`None` in a `switch` case, where `break` leaves the `switch`).
    pub(crate) broke: Option<VarKey>,
    /// Set by `continue`.
    pub(crate) continued: Option<VarKey>,
    /// Set by `return`, in a function that returns from inside a loop.
    pub(crate) returned: Option<VarKey>,
    /// The IR `const false` the flags start each round with.
    pub(crate) clear: String,
}

impl Flow {
    /// The flags this context has.
    fn keys(&self) -> impl Iterator<Item = VarKey> + '_ {
        self.broke.iter().chain(self.continued.iter()).chain(self.returned.iter()).copied()
    }
}

impl Lowerer<'_> {
    /// A naga `Loop`: a counted `for` when it has that shape and no early exit, else a
    /// general `loop`.
    pub(crate) fn loop_statement(
        &mut self,
        f: &mut FnCtx<'_>,
        body: &Block,
        continuing: &Block,
        break_if: Option<H>,
        span: naga::Span,
    ) -> Result<()> {
        if break_if.is_none() && self.counted_loop(f, body, continuing, span)? {
            return Ok(());
        }
        self.general_loop(f, body, continuing, break_if, span)
    }

    /// The current values of the flags of the innermost loop (to see whether a statement
    /// may have set one).
    pub(crate) fn flags(&self) -> Vec<Option<Val>> {
        self.flow.keys().map(|k| self.vars.get(&k).cloned()).collect()
    }

    /// Lowers `rest` (the statements after one that may have run `break` or `continue`)
    /// under `if !(broke or continued)`.
    pub(crate) fn guard_rest(
        &mut self,
        f: &mut FnCtx<'_>,
        rest: &[(&St, naga::Span)],
        tail: bool,
        span: naga::Span,
    ) -> Result<()> {
        let mut stop: Option<String> = None;
        for k in self.flow.keys().collect::<Vec<_>>() {
            let v = self.vars.get(&k).cloned().unwrap_or(Val::Poisoned(span));
            if matches!(&v, Val::Ssa(n, _) if *n == self.flow.clear) {
                continue;
            }
            let (x, _) = self.ssa(&v, span)?;
            stop = Some(match stop {
                None => x,
                Some(s) => self.op(format!("or {s}, {x}"), Ty::BOOL).0,
            });
        }
        let Some(stop) = stop else { return self.statements(f, rest, tail) };
        let (go, _) = self.op(format!("not {stop}"), Ty::BOOL);
        self.if_value(f, go, |l, f| l.statements(f, rest, tail), |_, _| Ok(()), span)
    }

    /// Starts lowering function `f`: a flow of its own (the caller's loops are out of its
    /// reach), with the `return` flag if it returns from inside a loop. Returns the caller's
    /// flow, for [`Lowerer::leave_function`].
    pub(crate) fn enter_function(&mut self, f: &FnCtx<'_>) -> Result<Flow> {
        let outer = std::mem::take(&mut self.flow);
        if returns_in_loop(&f.func.body, false) {
            let (clear, _) = self.constant("false", Ty::BOOL);
            let k = VarKey::Returned(f.id);
            self.vars.insert(k, Val::Ssa(clear.clone(), Ty::BOOL));
            if let Some(result) = &f.func.result {
                // A value to carry through the loops until a `return` sets it.
                let t = value_type(&self.module.types[result.ty].inner).map_err(|what| {
                    ShaderError::at(f.site, format!("a function returning {what}"), "return scalars or vectors")
                })?;
                self.vars.insert(VarKey::Ret(f.id), Val::Zero(t));
            }
            self.flow.returned = Some(k);
            self.flow.clear = clear;
        }
        Ok(outer)
    }

    /// Ends lowering function `f`, back to the caller's flow.
    pub(crate) fn leave_function(&mut self, f: &FnCtx<'_>, outer: Flow) {
        self.vars.remove(&VarKey::Returned(f.id));
        self.flow = outer;
    }

    /// Sets flag `key` (a `break` or `continue` that runs): the statements after it in its
    /// block are dead.
    pub(crate) fn set_flag(&mut self, key: VarKey) {
        let (t, _) = self.constant("true", Ty::BOOL);
        self.vars.insert(key, Val::Ssa(t, Ty::BOOL));
    }

    fn general_loop(
        &mut self,
        f: &mut FnCtx<'_>,
        body: &Block,
        continuing: &Block,
        break_if: Option<H>,
        span: naga::Span,
    ) -> Result<()> {
        let id = self.loops;
        self.loops += 1;
        let (broke, continued) = (VarKey::Broke(id), VarKey::Continued(id));
        let mut stored = BTreeSet::new();
        self.stores_in(f, body, &mut stored);
        self.stores_in(f, continuing, &mut stored);
        let returned = self.flow.returned;
        if let Some(k) = returned.filter(|_| returns_in_loop(body, true)) {
            // A `return` in the loop sets these; they are read after it.
            stored.insert(k);
            stored.insert(VarKey::Ret(f.id));
        }
        let (clear, _) = self.constant("false", Ty::BOOL);
        let outer = std::mem::replace(
            &mut self.flow,
            Flow { broke: Some(broke), continued: Some(continued), returned, clear: clear.clone() },
        );
        let r = self.general_loop_rounds(f, body, continuing, break_if, &stored, span);
        self.flow = outer;
        let (carried, carry_names, inits, again, mut lines, excluded) = r?;
        let mut yields = vec![again];
        for k in &carried {
            let v = self.vars.get(k).cloned().unwrap_or(Val::Poisoned(span));
            yields.push(self.ssa(&v, span)?.0);
        }
        lines.push(format!("yield {}", yields.join(", ")));
        let mut header = "loop".to_string();
        if !carried.is_empty() {
            let pairs: Vec<String> =
                carry_names.iter().zip(&inits).map(|(c, (init, _))| format!("{c} = {init}")).collect();
            header = format!("loop carry({})", pairs.join(", "));
            let results: Vec<String> = carried.iter().map(|_| self.fresh()).collect();
            header = format!("{} = {header}", results.join(", "));
            for ((k, n), (_, t)) in carried.iter().zip(results).zip(&inits) {
                self.vars.insert(*k, Val::Ssa(n, *t));
            }
        }
        self.stmt_line(format!("{header} {{"));
        self.nest(lines);
        self.stmt_line("}".into());
        self.vars.remove(&broke);
        self.vars.remove(&continued);
        for k in excluded {
            self.vars.insert(k, Val::Poisoned(span));
        }
        Ok(())
    }

    /// Lowers one round of a general loop. The variables the loop stores to are carried,
    /// except the counters of inner counted loops (poisoned at the end of the round): those
    /// are found by a first lowering, and the round is lowered again with them poisoned
    /// from the start, so that reading one before its loop sets it is refused, as in a
    /// counted loop. Returns the carried variables, their names inside the loop, their
    /// initial values, the condition to run again, the round's lines and the excluded
    /// counters.
    #[allow(clippy::type_complexity)]
    fn general_loop_rounds(
        &mut self,
        f: &mut FnCtx<'_>,
        body: &Block,
        continuing: &Block,
        break_if: Option<H>,
        stored: &BTreeSet<VarKey>,
        span: naga::Span,
    ) -> Result<(Vec<VarKey>, Vec<String>, Vec<(String, Ty)>, String, Vec<String>, BTreeSet<VarKey>)> {
        let before = self.vars.clone();
        let mut excluded = BTreeSet::new();
        loop {
            self.vars = before.clone();
            let carried: Vec<VarKey> =
                stored.iter().copied().filter(|k| self.vars.contains_key(k) && !excluded.contains(k)).collect();
            let mut inits = Vec::new();
            for k in &carried {
                let v = self.vars.get(k).cloned().unwrap_or(Val::Poisoned(span));
                inits.push(self.ssa(&v, span)?);
            }
            let carry_names: Vec<String> = carried.iter().map(|_| self.fresh()).collect();
            for ((k, n), (_, t)) in carried.iter().zip(&carry_names).zip(&inits) {
                self.vars.insert(*k, Val::Ssa(n.clone(), *t));
            }
            for k in &excluded {
                self.vars.insert(*k, Val::Poisoned(span));
            }
            // Each round starts with no `break` or `continue` run (a `return` ends the loop).
            for k in self.flow.broke.iter().chain(self.flow.continued.iter()).copied().collect::<Vec<_>>() {
                self.vars.insert(k, Val::Ssa(self.flow.clear.clone(), Ty::BOOL));
            }
            f.scopes.push(HashMap::new());
            let r = self.region(|l| l.round(f, body, continuing, break_if, span));
            f.scopes.pop();
            let (again, lines) = r?;
            let poisoned: Vec<VarKey> =
                carried.iter().copied().filter(|k| matches!(self.vars.get(k), Some(Val::Poisoned(_)))).collect();
            if poisoned.is_empty() {
                return Ok((carried, carry_names, inits, again, lines, excluded));
            }
            excluded.extend(poisoned);
        }
    }

    /// The body, then the continuing block unless the body broke out; returns the IR
    /// condition to run another round.
    fn round(
        &mut self,
        f: &mut FnCtx<'_>,
        body: &Block,
        continuing: &Block,
        break_if: Option<H>,
        span: naga::Span,
    ) -> Result<String> {
        self.statements(f, &items(body), false)?;
        let Some(broke) = self.flow.broke else { return Ok(self.constant("true", Ty::BOOL).0) };
        // `continue` jumps to the continuing block: its flag is spent.
        if let Some(c) = self.flow.continued {
            self.vars.insert(c, Val::Ssa(self.flow.clear.clone(), Ty::BOOL));
        }
        let cont = items(continuing);
        let run_continuing = |l: &mut Self, f: &mut FnCtx<'_>| -> Result<()> {
            l.statements(f, &cont, false)?;
            if let Some(c) = break_if {
                let (c, _) = l.value(f, c)?;
                l.vars.insert(broke, Val::Ssa(c, Ty::BOOL));
            }
            Ok(())
        };
        match self.stopped(span)? {
            None => run_continuing(self, f)?,
            Some(stop) if !(continuing.is_empty() && break_if.is_none()) => {
                let (go, _) = self.op(format!("not {stop}"), Ty::BOOL);
                self.if_value(f, go, run_continuing, |_, _| Ok(()), span)?;
            }
            Some(_) => {}
        }
        match self.stopped(span)? {
            None => Ok(self.constant("true", Ty::BOOL).0),
            Some(stop) => Ok(self.op(format!("not {stop}"), Ty::BOOL).0),
        }
    }

    /// Whether this round has run a `break` or a `return`: `None` when neither can have
    /// run, else the IR `bool`.
    fn stopped(&mut self, span: naga::Span) -> Result<Option<String>> {
        let mut stop: Option<String> = None;
        for k in self.flow.broke.iter().chain(self.flow.returned.iter()).copied().collect::<Vec<_>>() {
            let v = self.vars.get(&k).cloned().unwrap_or(Val::Poisoned(span));
            let (x, _) = self.ssa(&v, span)?;
            if x == self.flow.clear {
                continue;
            }
            stop = Some(match stop {
                None => x,
                Some(s) => self.op(format!("or {s}, {x}"), Ty::BOOL).0,
            });
        }
        Ok(stop)
    }
}

/// Whether `stmts` may leave or restart the loop they are in: a `break` or `continue` not
/// inside a nested loop (a `break` in a `switch` leaves the `switch`), or a `return`.
pub(crate) fn exits(stmts: &[St], in_switch: bool) -> bool {
    stmts.iter().any(|s| match s {
        St::Break => !in_switch,
        St::Continue | St::Return { .. } => true,
        St::Block(b) => exits(b, in_switch),
        St::If { accept, reject, .. } => exits(accept, in_switch) || exits(reject, in_switch),
        St::Switch { cases, .. } => cases.iter().any(|c| exits(&c.body, true)),
        St::Loop { body, continuing, .. } => returns_in_loop(body, true) || returns_in_loop(continuing, true),
        _ => false,
    })
}

/// Whether `stmts` hold a `return` inside a loop (`in_loop`: they are in one already).
fn returns_in_loop(stmts: &[St], in_loop: bool) -> bool {
    stmts.iter().any(|s| match s {
        St::Return { .. } => in_loop,
        St::Block(b) => returns_in_loop(b, in_loop),
        St::If { accept, reject, .. } => returns_in_loop(accept, in_loop) || returns_in_loop(reject, in_loop),
        St::Switch { cases, .. } => cases.iter().any(|c| returns_in_loop(&c.body, in_loop)),
        St::Loop { body, continuing, .. } => returns_in_loop(body, true) || returns_in_loop(continuing, true),
        _ => false,
    })
}
