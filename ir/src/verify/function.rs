//! Functions and calls: each function's body is checked as a kernel's is (kernel.rs), with
//! `return` in place of the top region's `yield`; a `call` passes one argument of each
//! parameter's type; and no function calls itself, directly or through others, since a
//! call is inlined (GPU code has no call stack to recurse on, and SYCL forbids recursion in
//! device code).

use super::error::VerifyError;
use super::kernel::{check_definition, value_type_text, RegionCtx, Walker};
use crate::arena::{Arena, Handle};
use crate::kernel::{Body, Function, Kernel, KernelBody, OpKind, ParamType, ValueType, V};
use crate::module::Module;
use crate::span::Span;

/// Checks every function's definition, then that no call chain is a cycle.
pub(super) fn check_functions(m: &Module, errors: &mut Vec<VerifyError>) {
    for (h, f) in m.functions.iter() {
        if !matches!(f.def.body, KernelBody::Ir(_)) {
            errors.push(VerifyError::CallArgs {
                problem: format!("function @{} has no body in the kernel language", f.def.name),
                span: m.functions.span(h),
            });
            continue;
        }
        for t in &f.results {
            super::ctx::check_type(*t, m.functions.span(h), errors);
        }
        check_definition(m, &f.def, m.functions.span(h), Some(&f.results), errors);
    }
    recursion(m, errors);
}

/// The calls of a body: (op span, callee), in arena order.
fn calls(body: &Body) -> impl Iterator<Item = (Span, Handle<Function>)> + '_ {
    body.ops.iter().filter_map(|(h, op)| match op.kind {
        OpKind::Call { func, .. } => Some((body.ops.span(h), func)),
        _ => None,
    })
}

/// Reports each call that closes a cycle of the call graph (E0341), once per cycle entry,
/// by a depth-first search from every function in order (iterative: call chains may be
/// long).
fn recursion(m: &Module, errors: &mut Vec<VerifyError>) {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Active,
        Done,
    }
    let fs = &m.functions;
    let mut mark = vec![Mark::New; fs.len()];
    let edges: Vec<Vec<(Span, Handle<Function>)>> =
        fs.iter().map(|(_, f)| f.body().map(|b| calls(b).collect()).unwrap_or_default()).collect();
    for (root, _) in fs.iter() {
        if mark[root.index()] != Mark::New {
            continue;
        }
        // (function, next edge to follow)
        let mut stack = vec![(root, 0usize)];
        mark[root.index()] = Mark::Active;
        while let Some(&mut (f, ref mut next)) = stack.last_mut() {
            let Some(&(span, callee)) = edges[f.index()].get(*next) else {
                mark[f.index()] = Mark::Done;
                stack.pop();
                continue;
            };
            *next += 1;
            match mark.get(callee.index()) {
                Some(Mark::New) => {
                    mark[callee.index()] = Mark::Active;
                    stack.push((callee, 0));
                }
                Some(Mark::Active) => {
                    let from = stack.iter().position(|(g, _)| *g == callee).unwrap_or(0);
                    let chain: Vec<String> = stack[from..]
                        .iter()
                        .map(|(g, _)| format!("@{}", fs[*g].def.name))
                        .chain(std::iter::once(format!("@{}", fs[callee].def.name)))
                        .collect();
                    errors.push(VerifyError::Recursion { chain: chain.join(" -> "), span });
                }
                // Done, or a dangling handle (reported at the call by the walk).
                _ => {}
            }
        }
    }
}

/// The first work-group op (keyword) each function reaches, itself or through the functions
/// it calls, by handle; computed callees first, so each function is looked at once. A cycle
/// (E0341) is cut where it closes.
pub(super) fn group_ops(functions: &Arena<Function>) -> Vec<Option<&'static str>> {
    let mut out: Vec<Option<Option<&'static str>>> = vec![None; functions.len()];
    for (root, _) in functions.iter() {
        let mut stack = vec![root];
        let mut active = vec![false; functions.len()];
        while let Some(&f) = stack.last() {
            if out[f.index()].is_some() {
                stack.pop();
                continue;
            }
            active[f.index()] = true;
            let Some(body) = functions[f].body() else {
                out[f.index()] = Some(None);
                continue;
            };
            let pending = calls(body)
                .map(|(_, c)| c)
                .find(|c| c.index() < out.len() && out[c.index()].is_none() && !active[c.index()]);
            if let Some(callee) = pending {
                stack.push(callee);
                continue;
            }
            let own = body.ops.iter().find_map(|(_, op)| op.kind.work_group_keyword());
            let through = calls(body).find_map(|(_, c)| out.get(c.index()).copied().flatten().flatten());
            out[f.index()] = Some(own.or(through));
            active[f.index()] = false;
            stack.pop();
        }
    }
    out.into_iter().map(Option::flatten).collect()
}

/// Whether an argument of type `arg` may be passed for a parameter of type `param`: data of
/// the same type; memory of the same element type whose access allows what the parameter's
/// does.
fn passes(arg: ValueType, param: ParamType) -> bool {
    match (arg, param) {
        (ValueType::Data(a), ParamType::Value(p)) => a == p,
        (ValueType::Buffer { elem: a, access: aa }, ParamType::Buffer { elem: p, access: pa }) => {
            a == p && (!pa.reads() || aa.reads()) && (!pa.writes() || aa.writes())
        }
        (ValueType::Local { elem: a }, ParamType::Local { elem: p }) => a == p,
        _ => false,
    }
}

fn param_text(ty: ParamType) -> String {
    ty.to_string()
}

impl Walker<'_> {
    /// `call @f(args)`: the arguments against the parameters; the results are the
    /// function's.
    pub(super) fn call(&mut self, func: Handle<Function>, args: &[V], span: Span) -> Vec<Option<ValueType>> {
        let Some(f) = self.m.functions.try_get(func) else {
            self.errors.push(VerifyError::DanglingHandle { what: "function", index: func.index(), span });
            return Vec::new();
        };
        let def: &Kernel = &f.def;
        if args.len() != def.params.len() {
            self.errors.push(VerifyError::CallArgs {
                problem: format!(
                    "@{} takes {} argument{} but is given {}",
                    def.name,
                    def.params.len(),
                    if def.params.len() == 1 { "" } else { "s" },
                    args.len()
                ),
                span,
            });
        }
        for (i, (&a, p)) in args.iter().zip(&def.params).enumerate() {
            let Some(found) = self.use_value(a, span) else { continue };
            if !passes(found, p.ty) {
                self.errors.push(VerifyError::CallArgs {
                    problem: format!(
                        "argument {i} ({}) is {}, but parameter %{} of @{} is {}",
                        self.value_name(a),
                        value_type_text(found),
                        p.name,
                        def.name,
                        param_text(p.ty)
                    ),
                    span,
                });
            }
        }
        f.results.iter().map(|t| Some(ValueType::Data(*t))).collect()
    }

    /// `return %a, ...`: the last op of a function's body, with one value per result.
    pub(super) fn return_op(&mut self, values: &[V], ctx: &RegionCtx, last: bool, span: Span) {
        let types: Vec<_> = values.iter().map(|v| self.data(*v, span)).collect();
        let problem = if !self.function {
            Some("`return` outside a function (a kernel's body ends without one)".to_string())
        } else if !ctx.top {
            Some("`return` inside a `for` or `if` region: a function returns once, at the end of its body".to_string())
        } else if !last {
            Some("`return` must be the last op of the function's body".to_string())
        } else if ctx.expects.is_none() {
            Some("this function has no results, so it takes no `return`".to_string())
        } else {
            None
        };
        if let Some(problem) = problem {
            self.errors.push(VerifyError::ReturnPlacement { problem, span });
            return;
        }
        let expects = ctx.expects.as_deref().unwrap_or(&[]);
        if expects.len() != types.len() {
            let problem = format!("returns {} values but the function has {} results", types.len(), expects.len());
            self.errors.push(VerifyError::ReturnPlacement { problem, span });
            return;
        }
        for (i, (e, f)) in expects.iter().zip(&types).enumerate() {
            if let (Some(e), Some(f)) = (e, f) {
                if e != f {
                    let problem = format!("value {i} is {f} but result {i} is {e}");
                    self.errors.push(VerifyError::ReturnPlacement { problem, span });
                }
            }
        }
    }
}
