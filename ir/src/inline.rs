//! Inlining: every `call` replaced by the body of the function it calls.
//!
//! Codegen, the footprint analysis and the passes see kernels without calls: a GPU has no
//! call stack worth using for kernels this size, LLVM's SPIR-V backend would inline the
//! functions anyway, and the analyses stay intraprocedural. The interpreter runs calls as
//! calls, so it checks this file rather than sharing it.
//!
//! A body is rebuilt in pre-order (docs/ir.md, "Numbering"), so printing and parsing the
//! result gives it back. Where a call stood, the callee's ops follow one another with its
//! parameters replaced by the arguments; the call's results become the values the callee
//! returns, which take the call's result names where the callee defined them. The callee's
//! other values are renamed `%<call result or function>.<n>.<name>`, with `n` counting the
//! calls inlined into the kernel, so that names stay unique and say where they came from.

mod rounds;

pub use rounds::rounds_kernel;

use std::collections::HashSet;

use crate::arena::{Arena, Handle};
use crate::kernel::{Body, Builtin, Function, Kernel, KernelBody, Op, OpKind, Region, Value, ValueDef, ValueType, V};
use crate::module::Module;
use crate::types::{LitValue, Literal, ScalarType, Type};

/// Calls nested deeper than this are refused: the verifier refuses recursion (E0341), so
/// only a module built through the API and not verified gets here.
const MAX_CALL_DEPTH: usize = 64;

/// Why a body could not be inlined (only for a module that does not verify).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InlineError {
    /// The kernel.
    pub kernel: String,
    /// What is wrong.
    pub problem: String,
}

impl std::fmt::Display for InlineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot inline the calls of @{}: {}", self.kernel, self.problem)
    }
}

impl std::error::Error for InlineError {}

/// Whether `body` calls a function.
pub fn has_calls(body: &Body) -> bool {
    body.ops.iter().any(|(_, op)| matches!(op.kind, OpKind::Call { .. }))
}

/// Inlines every call in every kernel of `module` and removes its functions (every one is
/// unused then). Returns the number of calls inlined, counting nested ones.
pub fn inline_module(module: &mut Module) -> Result<usize, InlineError> {
    let mut total = 0;
    let mut bodies = Vec::new();
    for (h, k) in module.kernels.iter() {
        if let KernelBody::Ir(body) = &k.body {
            if has_calls(body) {
                let (body, n) = inline_body_counted(&module.functions, k, body)?;
                bodies.push((h, body));
                total += n;
            }
        }
    }
    for (h, body) in bodies {
        module.kernels[h].body = KernelBody::Ir(body);
    }
    if !module.functions.is_empty() {
        module.functions = Arena::new();
        module.items.retain(|i| !matches!(i, crate::module::Item::Function(_)));
    }
    Ok(total)
}

/// `kernel`'s body (`body`) with every call inlined.
pub fn inline_body(functions: &Arena<Function>, kernel: &Kernel, body: &Body) -> Result<Body, InlineError> {
    inline_body_counted(functions, kernel, body).map(|(b, _)| b)
}

/// `kernel` with every call inlined (a copy); `None` when it has no calls or no body.
pub fn inlined_kernel(functions: &Arena<Function>, kernel: &Kernel) -> Result<Option<Kernel>, InlineError> {
    let KernelBody::Ir(body) = &kernel.body else { return Ok(None) };
    if !has_calls(body) {
        return Ok(None);
    }
    let body = inline_body(functions, kernel, body)?;
    Ok(Some(Kernel { body: KernelBody::Ir(body), ..kernel.clone() }))
}

fn inline_body_counted(
    functions: &Arena<Function>,
    kernel: &Kernel,
    body: &Body,
) -> Result<(Body, usize), InlineError> {
    let names: HashSet<String> = body.values.iter().map(|(_, v)| v.name.clone()).collect();
    let mut b = Builder { functions, kernel: &kernel.name, out: Body::default(), names, calls: 0 };
    let mut map = vec![None; body.values.len()];
    for (i, p) in kernel.params.iter().enumerate() {
        let v = Handle::from_usize(i).ok_or_else(|| b.error("too many parameters"))?;
        let span = body.values.span(v);
        let value = Value { name: p.name.clone(), ty: p.ty.into(), def: ValueDef::Param(i as u32) };
        map[i] = Some(b.out.values.append(value, span));
    }
    let mut frame = Frame { body, map, prefix: None, depth: 0, coarse: None };
    b.out.entry = b.region(&mut frame, &body.entry)?;
    Ok((b.out, b.calls))
}

/// The values of one body being copied: its value handles to the new body's.
struct Frame<'a> {
    body: &'a Body,
    map: Vec<Option<V>>,
    /// `Some(prefix)` in an inlined function: its values are renamed `prefix.name`.
    prefix: Option<String>,
    depth: usize,
    /// In a coarsened stage ([`Stage::coarse`]): the loop's induction variable, which
    /// stands for `global_id 0`, and the stage's item count, which stands for
    /// `global_range 0`.
    coarse: Option<(V, V)>,
}

struct Builder<'a> {
    functions: &'a Arena<Function>,
    kernel: &'a str,
    out: Body,
    /// Every value name in the new body, and the old one's (so new names avoid both).
    names: HashSet<String>,
    calls: usize,
}

impl Builder<'_> {
    fn error(&self, problem: &str) -> InlineError {
        InlineError { kernel: self.kernel.to_string(), problem: problem.to_string() }
    }

    fn unique(&mut self, wanted: String) -> String {
        let mut name = wanted.clone();
        let mut n = 1;
        while !self.names.insert(name.clone()) {
            name = format!("{wanted}.{n}");
            n += 1;
        }
        name
    }

    /// Defines the copy of `old` (of `f.body`) in the new body.
    fn value(&mut self, f: &mut Frame<'_>, old: V, def: ValueDef) -> Result<V, InlineError> {
        let value = f.body.values.try_get(old).ok_or_else(|| self.error("a dangling value"))?;
        let name = match &f.prefix {
            Some(prefix) => self.unique(format!("{prefix}.{}", value.name)),
            // The kernel's own names are kept as they are (they are unique already).
            None => value.name.clone(),
        };
        let v = self.out.values.append(Value { name, ty: value.ty, def }, f.body.values.span(old));
        if let Some(slot) = f.map.get_mut(old.index()) {
            *slot = Some(v);
        }
        Ok(v)
    }

    fn region(&mut self, f: &mut Frame<'_>, region: &Region) -> Result<Region, InlineError> {
        let mut ops = Vec::with_capacity(region.ops.len());
        for &h in &region.ops {
            let op = f.body.ops.try_get(h).ok_or_else(|| self.error("a dangling op"))?;
            // In a coarsened stage the loop's variable and the item count replace the
            // builtins they stand for (the op itself is dropped).
            if let (Some((var, items)), OpKind::Builtin(b @ (Builtin::GlobalId | Builtin::GlobalRange), 0)) =
                (f.coarse, &op.kind)
            {
                let to = if *b == Builtin::GlobalId { var } else { items };
                if let Some(slot) = op.results.first().and_then(|r| f.map.get_mut(r.index())) {
                    *slot = Some(to);
                }
                continue;
            }
            if let OpKind::Call { func, args } = &op.kind {
                self.call(f, op, *func, args, &mut ops)?;
            } else {
                ops.push(self.op(f, h, op)?);
            }
        }
        Ok(Region { ops, closing_comments: region.closing_comments.clone() })
    }

    /// A new op of `kind` with one result of type `ty` named `name`, appended in pre-order.
    fn result_op(&mut self, kind: OpKind, name: &str, ty: Type) -> (Handle<Op>, V) {
        let op = self.placeholder();
        self.out.ops[op].kind = kind;
        let name = self.unique(name.to_string());
        let value = Value { name, ty: ValueType::Data(ty), def: ValueDef::Result(op, 0) };
        let v = self.out.values.append(value, crate::Span::UNDEFINED);
        self.out.ops[op].results.push(v);
        (op, v)
    }

    /// A new op appended in pre-order, to be given its kind once its regions are copied.
    fn placeholder(&mut self) -> Handle<Op> {
        let op = Op { kind: OpKind::GroupBarrier, results: Vec::new(), comments: Default::default() };
        self.out.ops.append(op, crate::Span::UNDEFINED)
    }

    /// The kernel this builder made (named as the builder's kernel): `params` and the
    /// top-level `ops`.
    fn finish(self, params: Vec<crate::kernel::Param>, ops: Vec<Handle<Op>>) -> Kernel {
        let mut body = self.out;
        body.entry = Region { ops, closing_comments: Vec::new() };
        Kernel {
            name: self.kernel.to_string(),
            params,
            body: KernelBody::Ir(body),
            comments: Default::default(),
            param_spans: Default::default(),
        }
    }

    /// The ops of a coarsened stage ([`Stage::coarse`]): the loop's bounds, then the loop
    /// over `region`.
    fn coarse_loop(
        &mut self,
        f: &mut Frame<'_>,
        region: &Region,
        prefix: &str,
        items: u64,
        group: u64,
    ) -> Result<Vec<Handle<Op>>, InlineError> {
        let (lid_op, lid) = self.result_op(OpKind::Builtin(Builtin::LocalId, 0), &format!("{prefix}.item0"), Type::U32);
        let (n_op, n) = self.result_op(u32_const(items), &format!("{prefix}.items"), Type::U32);
        let (step_op, step) = self.result_op(u32_const(group), &format!("{prefix}.group"), Type::U32);
        let looped = self.placeholder();
        let name = self.unique(format!("{prefix}.item"));
        let var = self.out.values.append(
            Value { name, ty: ValueType::Data(Type::U32), def: ValueDef::LoopVar(looped) },
            crate::Span::UNDEFINED,
        );
        f.coarse = Some((var, n));
        let body = self.region(f, region)?;
        f.coarse = None;
        self.out.ops[looped].kind = OpKind::For { var, lo: lid, hi: n, step, carried: Vec::new(), body };
        Ok(vec![lid_op, n_op, step_op, looped])
    }

    /// Copies one op (not a call) and, in pre-order, its values and regions.
    fn op(&mut self, f: &mut Frame<'_>, h: Handle<Op>, op: &Op) -> Result<Handle<Op>, InlineError> {
        let span = f.body.ops.span(h);
        let new = self
            .out
            .ops
            .append(Op { kind: OpKind::GroupBarrier, results: Vec::new(), comments: op.comments.clone() }, span);
        let mut results = Vec::with_capacity(op.results.len());
        for (i, &r) in op.results.iter().enumerate() {
            results.push(self.value(f, r, ValueDef::Result(new, i as u32))?);
        }
        let kernel = self.kernel;
        let m = |f: &Frame<'_>, v: V| -> Result<V, InlineError> {
            f.map.get(v.index()).copied().flatten().ok_or_else(|| InlineError {
                kernel: kernel.to_string(),
                problem: "a value used before its definition".to_string(),
            })
        };
        let kind = match &op.kind {
            OpKind::For { var, lo, hi, step, carried, body } => {
                let (lo, hi, step) = (m(f, *lo)?, m(f, *hi)?, m(f, *step)?);
                let var = self.value(f, *var, ValueDef::LoopVar(new))?;
                let mut cs = Vec::with_capacity(carried.len());
                for (i, &(inner, init)) in carried.iter().enumerate() {
                    let init = m(f, init)?;
                    cs.push((self.value(f, inner, ValueDef::Carried(new, i as u32))?, init));
                }
                let body = self.region(f, body)?;
                OpKind::For { var, lo, hi, step, carried: cs, body }
            }
            OpKind::Loop { carried, body } => {
                let mut cs = Vec::with_capacity(carried.len());
                for (i, &(inner, init)) in carried.iter().enumerate() {
                    let init = m(f, init)?;
                    cs.push((self.value(f, inner, ValueDef::Carried(new, i as u32))?, init));
                }
                let body = self.region(f, body)?;
                OpKind::Loop { carried: cs, body }
            }
            OpKind::If { cond, result_types, then_region, else_region } => {
                let cond = m(f, *cond)?;
                let then_region = self.region(f, then_region)?;
                let else_region = match else_region {
                    Some(r) => Some(self.region(f, r)?),
                    None => None,
                };
                OpKind::If { cond, result_types: result_types.clone(), then_region, else_region }
            }
            OpKind::Call { .. } => return Err(self.error("a call where an op was expected")),
            other => {
                let mut kind = other.clone();
                for v in kind.operands_mut() {
                    *v = m(f, *v)?;
                }
                kind
            }
        };
        self.out.ops[new] = Op { kind, results, comments: op.comments.clone() };
        Ok(new)
    }

    /// Splices the body of `func` into `ops`, in place of `call`.
    fn call(
        &mut self,
        f: &mut Frame<'_>,
        call: &Op,
        func: Handle<Function>,
        args: &[V],
        ops: &mut Vec<Handle<Op>>,
    ) -> Result<(), InlineError> {
        if f.depth >= MAX_CALL_DEPTH {
            return Err(self.error("calls nest too deep (is a function recursive?)"));
        }
        let callee = self.functions.try_get(func).ok_or_else(|| self.error("a call of a missing function"))?;
        let body = callee.body().ok_or_else(|| self.error("a function without a body"))?;
        if args.len() != callee.def.params.len() {
            return Err(self.error("a call with the wrong number of arguments"));
        }
        let n = self.calls;
        self.calls += 1;
        let stem = call
            .results
            .first()
            .and_then(|&r| f.body.values.try_get(r))
            .map_or_else(|| callee.def.name.clone(), |v| v.name.clone());
        let mut map = vec![None; body.values.len()];
        for (i, &a) in args.iter().enumerate() {
            let arg = f.map.get(a.index()).copied().flatten().ok_or_else(|| self.error("an undefined argument"))?;
            if let Some(slot) = map.get_mut(i) {
                *slot = Some(arg);
            }
        }
        // The values the callee returns take the call's result names (each one once).
        let returned: Vec<V> = body
            .entry
            .ops
            .last()
            .and_then(|&h| body.ops.try_get(h))
            .and_then(|op| match &op.kind {
                OpKind::Return(vs) => Some(vs.clone()),
                _ => None,
            })
            .unwrap_or_default();
        let prefix = match &f.prefix {
            Some(outer) => format!("{outer}.{stem}.{n}"),
            None => format!("{stem}.{n}"),
        };
        let mut inner = Frame { body, map, prefix: Some(prefix), depth: f.depth + 1, coarse: f.coarse };
        let mut renames = Vec::new();
        for (&ret, &res) in returned.iter().zip(&call.results) {
            let param = body.values.try_get(ret).is_some_and(|v| matches!(v.def, ValueDef::Param(_)));
            if !param && !renames.iter().any(|(r, _)| *r == ret) {
                renames.push((ret, res));
            }
        }
        for &h in &body.entry.ops {
            let op = body.ops.try_get(h).ok_or_else(|| self.error("a dangling op"))?;
            match &op.kind {
                OpKind::Return(_) => {}
                OpKind::Call { func, args } => self.call(&mut inner, op, *func, args, ops)?,
                _ => {
                    let before = self.out.values.len();
                    ops.push(self.op(&mut inner, h, op)?);
                    // A returned value defined by this op takes the call result's name.
                    for (ret, res) in &renames {
                        if let Some(new) = inner.map.get(ret.index()).copied().flatten() {
                            if new.index() >= before {
                                let Some(wanted) = f.body.values.try_get(*res).map(|v| v.name.clone()) else {
                                    continue;
                                };
                                let old = std::mem::take(&mut self.out.values[new].name);
                                self.names.remove(&old);
                                // The kernel's own result name is free (the call's results are
                                // not copied); a callee's takes its frame's prefix.
                                self.out.values[new].name = match &f.prefix {
                                    Some(prefix) => self.unique(format!("{prefix}.{wanted}")),
                                    None => wanted,
                                };
                            }
                        }
                    }
                }
            }
        }
        for (&ret, &res) in returned.iter().zip(&call.results) {
            let v = inner.map.get(ret.index()).copied().flatten().ok_or_else(|| self.error("an undefined result"))?;
            if let Some(slot) = f.map.get_mut(res.index()) {
                *slot = Some(v);
            }
        }
        Ok(())
    }
}

impl Builder<'_> {
    /// Defines the parameters of a kernel built from other kernels' bodies (names made
    /// unique in place); their values, in order.
    fn define_params(&mut self, params: &mut [crate::kernel::Param]) -> Vec<V> {
        let mut values = Vec::with_capacity(params.len());
        for (i, p) in params.iter_mut().enumerate() {
            p.name = self.unique(std::mem::take(&mut p.name));
            let value = Value { name: p.name.clone(), ty: p.ty.into(), def: ValueDef::Param(i as u32) };
            values.push(self.out.values.append(value, crate::Span::UNDEFINED));
        }
        values
    }

    /// The frame copying `stage`'s body, its parameters bound to `params` (the new kernel's).
    fn stage_frame<'s>(&self, stage: &Stage<'s>, params: &[V], what: &str) -> Result<Frame<'s>, InlineError> {
        let KernelBody::Ir(body) = &stage.kernel.body else {
            return Err(self.error(&format!("{what} (@{}) has no body to copy", stage.kernel.name)));
        };
        if stage.params.len() != stage.kernel.params.len() {
            return Err(self.error(&format!("{what} (@{}) binds the wrong number of parameters", stage.kernel.name)));
        }
        let mut map = vec![None; body.values.len()];
        for (slot, &p) in map.iter_mut().zip(&stage.params) {
            *slot = Some(*params.get(p).ok_or_else(|| self.error("a stage parameter out of range"))?);
        }
        Ok(Frame { body, map, prefix: Some(stage.prefix.clone()), depth: 0, coarse: None })
    }
}

/// `const n : u32`.
fn u32_const(n: u64) -> OpKind {
    OpKind::Const(Literal { value: LitValue::Int(i128::from(n)), ty: Some(ScalarType::U32) }, Type::U32)
}

/// One kernel spliced in as a stage of a stage-fused kernel ([`concat_stages`]).
pub struct Stage<'a> {
    /// The kernel whose body the stage runs.
    pub kernel: &'a Kernel,
    /// For each of its parameters, the fused kernel's parameter it reads.
    pub params: Vec<usize>,
    /// Prefix of the stage's value names in the fused body (`<prefix>.<name>`).
    pub prefix: String,
    /// `Some((items, group))`: the kernel was launched over `items` work-items in one
    /// dimension and the fused kernel runs as one work-group of `group`: the stage becomes
    /// `for %v = local_id 0 to items step group { body }`, with `%v` for `global_id 0` and
    /// `items` for `global_range 0`. Only for a body that uses no other builtin, no
    /// work-group memory, barrier or subgroup operation (the caller checks), so every
    /// work-item the launch had runs once, in the same order of its own operations.
    pub coarse: Option<(u64, u64)>,
}

/// A kernel named `name` with parameters `params` whose body runs the bodies of `stages` one
/// after another, with a `group_barrier` between two stages when `barrier` is set (calls in
/// the stages are inlined as they are copied). Every work-item runs every stage: kernel
/// bodies have no early exit, so each barrier is reached by the whole work-group.
pub fn concat_stages(
    functions: &Arena<Function>,
    name: String,
    mut params: Vec<crate::kernel::Param>,
    stages: &[Stage<'_>],
    barrier: bool,
) -> Result<Kernel, InlineError> {
    let mut b = Builder { functions, kernel: &name, out: Body::default(), names: HashSet::new(), calls: 0 };
    let fused_params = b.define_params(&mut params);
    let mut ops = Vec::new();
    for (i, stage) in stages.iter().enumerate() {
        let mut frame = b.stage_frame(stage, &fused_params, &format!("stage {i}"))?;
        if i > 0 && barrier {
            let op = Op { kind: OpKind::GroupBarrier, results: Vec::new(), comments: Default::default() };
            ops.push(b.out.ops.append(op, crate::Span::UNDEFINED));
        }
        let entry = &frame.body.entry;
        match stage.coarse {
            None => ops.extend(b.region(&mut frame, entry)?.ops),
            Some((items, group)) => ops.extend(b.coarse_loop(&mut frame, entry, &stage.prefix, items, group)?),
        }
    }
    Ok(b.finish(params, ops))
}

/// How a branch kernel ([`branch_kernel`]) picks its arm from the condition word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Branching {
    /// `if`: the first arm when the word is non-zero, else the second (if any).
    If,
    /// `switch`: arm `k` when the word is `k`; none past the last arm.
    Switch,
}

/// A kernel named `name` with parameters `params` (parameter `cond` a `u32` buffer) that
/// reads word 0 of `cond` and runs the body of the arm the word picks (`how`), each arm's
/// parameters bound as [`concat_stages`] binds them: an `if` or a `switch` of one kernel per
/// body, as one dispatch (`merge-branches`). Every work-item reads the same word, so the
/// branch is uniform.
pub fn branch_kernel(
    functions: &Arena<Function>,
    name: String,
    mut params: Vec<crate::kernel::Param>,
    cond: usize,
    arms: &[Stage<'_>],
    how: Branching,
) -> Result<Kernel, InlineError> {
    let mut b = Builder { functions, kernel: &name, out: Body::default(), names: HashSet::new(), calls: 0 };
    let fused_params = b.define_params(&mut params);
    let cond = *fused_params.get(cond).ok_or_else(|| b.error("the condition parameter out of range"))?;
    // `local` ops stand at a kernel's top level (the verifier's rule), so every arm's come
    // first, whichever arm runs; each arm's body then runs without them.
    let mut ops = Vec::new();
    let mut bodies = Vec::with_capacity(arms.len());
    for stage in arms {
        let mut frame = b.stage_frame(stage, &fused_params, "a body")?;
        let entry = &frame.body.entry;
        let is_local =
            |h: &Handle<Op>| matches!(frame.body.ops.try_get(*h).map(|o| &o.kind), Some(OpKind::LocalAlloc { .. }));
        let (locals, rest): (Vec<Handle<Op>>, Vec<Handle<Op>>) = entry.ops.iter().partition(|h| is_local(h));
        let locals = Region { ops: locals, closing_comments: Vec::new() };
        ops.extend(b.region(&mut frame, &locals)?.ops);
        bodies.push((frame, Region { ops: rest, closing_comments: entry.closing_comments.clone() }));
    }
    let (zero_op, zero) = b.result_op(u32_const(0), "branch.zero", Type::U32);
    let load = OpKind::Load { mem: crate::kernel::MemBase::Value(cond), index: zero };
    let (load_op, word) = b.result_op(load, "branch.word", Type::U32);
    ops.extend([zero_op, load_op]);
    let mut bodies = bodies.into_iter();
    let mut arm = |b: &mut Builder<'_>| -> Result<Option<Region>, InlineError> {
        match bodies.next() {
            Some((mut frame, body)) => b.region(&mut frame, &body).map(Some),
            None => Ok(None),
        }
    };
    match how {
        Branching::If => {
            let test = OpKind::Cmp(crate::kernel::CmpOp::Ne, word, zero);
            let (test_op, on) = b.result_op(test, "branch.on", Type::scalar(ScalarType::Bool));
            let branch = b.placeholder();
            let then_region = arm(&mut b)?.ok_or_else(|| b.error("an `if` without a body"))?;
            let else_region = arm(&mut b)?;
            b.out.ops[branch].kind = OpKind::If { cond: on, result_types: Vec::new(), then_region, else_region };
            ops.extend([test_op, branch]);
        }
        Branching::Switch => {
            // `if word == 0 { arm 0 } else { if word == 1 { arm 1 } else { ... } }`, its ops
            // made in pre-order; the innermost `if` has no `else`.
            let mut cases = Vec::with_capacity(arms.len());
            for k in 0..arms.len() {
                let (k_op, kv) = b.result_op(u32_const(k as u64), &format!("branch.case{k}"), Type::U32);
                let test = OpKind::Cmp(crate::kernel::CmpOp::Eq, word, kv);
                let (test_op, on) = b.result_op(test, &format!("branch.is{k}"), Type::scalar(ScalarType::Bool));
                let branch = b.placeholder();
                let then_region = arm(&mut b)?.ok_or_else(|| b.error("a missing case"))?;
                cases.push(([k_op, test_op, branch], on, then_region));
            }
            let mut else_region: Option<Region> = None;
            while let Some((three, on, then_region)) = cases.pop() {
                b.out.ops[three[2]].kind = OpKind::If { cond: on, result_types: Vec::new(), then_region, else_region };
                else_region = Some(Region { ops: three.to_vec(), closing_comments: Vec::new() });
            }
            ops.extend(else_region.map(|r| r.ops).unwrap_or_default());
        }
    }
    Ok(b.finish(params, ops))
}
