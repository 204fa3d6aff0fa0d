//! Random outlining: a run of ops of a generated kernel moved into a function that the
//! kernel calls, so that the fuzzer covers calls with everything the generator writes
//! (loops, branches, atomics, barriers, work-group memory passed as `local<T>`, subgroup
//! ops). The interpreter runs the call as a call; codegen inlines it (cmdgraph_ir::inline),
//! so every compared batch with a call checks the inliner against the interpreter.
//!
//! A run of ops `[a, b)` of one region becomes `func @<kernel>_f<n>`: its parameters are the
//! values the run reads but does not define (data, buffers, work-group memory), in the order
//! first read; its results are the values the run defines at its top level that something
//! after the run reads. The run is replaced by `%r... = call @f(...)` defining those same
//! values. `local` ops stay in the kernel (functions allocate none).

use super::super::Rng;
use cmdgraph_ir::arena::Handle;
use cmdgraph_ir::kernel::{
    Body, Function, Kernel, KernelBody, Op, OpKind, Param, ParamType, Region, Value, ValueDef, ValueType, V,
};
use cmdgraph_ir::module::Item;
use cmdgraph_ir::{Module, Span};
use std::collections::{BTreeSet, HashMap};

/// Outlines up to one run of ops per kernel (each with probability `percent`); returns how
/// many functions were made. The module must verify; it still does afterwards.
pub fn outline(module: &mut Module, rng: &mut Rng, percent: u64) -> u64 {
    let mut made = 0;
    let handles: Vec<Handle<Kernel>> = module.kernels.handles().collect();
    for kh in handles {
        if rng.below(100) >= percent {
            continue;
        }
        let name = format!("{}_f{made}", module.kernels[kh].name);
        let KernelBody::Ir(body) = &mut module.kernels[kh].body else { continue };
        if let Some((function, call)) = outline_one(body, &name, rng) {
            let h = module.functions.append(function, Span::UNDEFINED);
            if let OpKind::Call { func, .. } = &mut body.ops[call].kind {
                *func = h;
            }
            module.items.insert(0, Item::Function(h));
            made += 1;
        }
    }
    made
}

/// Every region of `body`, as paths of (op, region index) from the entry region.
fn regions(body: &Body) -> Vec<Vec<(Handle<Op>, usize)>> {
    let mut out = vec![Vec::new()];
    let mut stack = vec![(Vec::new(), &body.entry)];
    while let Some((path, region)) = stack.pop() {
        for &h in &region.ops {
            for (i, r) in body.ops[h].kind.regions().into_iter().enumerate() {
                let mut p: Vec<(Handle<Op>, usize)> = path.clone();
                p.push((h, i));
                out.push(p.clone());
                stack.push((p, r));
            }
        }
    }
    out
}

/// The region a path ends at: region `i` of its last op (the entry region for no path).
fn region_at<'a>(body: &'a mut Body, path: &[(Handle<Op>, usize)]) -> &'a mut Region {
    let Some(&(h, i)) = path.last() else { return &mut body.entry };
    match (&mut body.ops[h].kind, i) {
        (OpKind::For { body, .. } | OpKind::Loop { body, .. }, _) => body,
        (OpKind::If { then_region, .. }, 0) => then_region,
        (OpKind::If { else_region: Some(e), .. }, _) => e,
        _ => unreachable!("a path built by `regions`"),
    }
}

/// Ops of `ops` and of their regions, depth first.
fn deep(body: &Body, ops: &[Handle<Op>], out: &mut Vec<Handle<Op>>) {
    for &h in ops {
        out.push(h);
        for r in body.ops[h].kind.regions() {
            deep(body, &r.ops, out);
        }
    }
}

/// The values an op defines: results, and a `for`'s variable and carried values.
fn defined(op: &Op) -> Vec<V> {
    let mut out = op.results.clone();
    match &op.kind {
        OpKind::For { var, carried, .. } => {
            out.push(*var);
            out.extend(carried.iter().map(|(v, _)| *v));
        }
        OpKind::Loop { carried, .. } => out.extend(carried.iter().map(|(v, _)| *v)),
        _ => {}
    }
    out
}

fn outline_one(body: &mut Body, name: &str, rng: &mut Rng) -> Option<(Function, Handle<Op>)> {
    let paths = regions(body);
    let path = paths[rng.below(paths.len() as u64) as usize].clone();
    let region_ops = region_at(body, &path).ops.clone();
    // Runs end before a region's `yield`; `local` ops stay in the kernel.
    let usable =
        region_ops.iter().position(|&h| matches!(body.ops[h].kind, OpKind::Yield(_))).unwrap_or(region_ops.len());
    if usable == 0 {
        return None;
    }
    let a = rng.below(usable as u64) as usize;
    let b = a + 1 + rng.below((usable - a).min(12) as u64) as usize;
    let run = &region_ops[a..b];
    let mut inside = Vec::new();
    deep(body, run, &mut inside);
    if inside.iter().any(|&h| matches!(body.ops[h].kind, OpKind::LocalAlloc { .. })) {
        return None;
    }
    let defs: BTreeSet<V> = inside.iter().flat_map(|&h| defined(&body.ops[h])).collect();
    // Parameters: read inside, defined outside, in the order first read.
    let mut params: Vec<V> = Vec::new();
    for &h in &inside {
        for v in body.ops[h].kind.operands() {
            if !defs.contains(&v) && !params.contains(&v) {
                params.push(v);
            }
        }
    }
    // Results: defined by the run's top-level ops and read after the run.
    let mut after = Vec::new();
    deep(body, &region_ops[b..], &mut after);
    // Enclosing regions' later ops read them too (values of a nested region are not
    // visible there, but the run's top level may be the kernel's).
    for depth in 0..path.len() {
        let outer = region_at(body, &path[..depth]).ops.clone();
        if let Some(i) = outer.iter().position(|&h| h == path[depth].0) {
            deep(body, &outer[i + 1..], &mut after);
        }
    }
    let read_after: BTreeSet<V> = after.iter().flat_map(|&h| body.ops[h].kind.operands()).collect();
    let results: Vec<V> =
        run.iter().flat_map(|&h| body.ops[h].results.clone()).filter(|v| read_after.contains(v)).collect();
    let mut f = Body::default();
    let mut map: HashMap<V, V> = HashMap::new();
    let mut fparams = Vec::new();
    for (i, &p) in params.iter().enumerate() {
        let value = &body.values[p];
        let ty = match value.ty {
            ValueType::Data(t) => ParamType::Value(t),
            ValueType::Buffer { elem, access } => ParamType::Buffer { elem, access },
            ValueType::Local { elem } => ParamType::Local { elem },
        };
        let nv = f
            .values
            .append(Value { name: value.name.clone(), ty: value.ty, def: ValueDef::Param(i as u32) }, Span::UNDEFINED);
        map.insert(p, nv);
        fparams.push(Param { name: value.name.clone(), ty });
    }
    let mut result_types = Vec::new();
    for &r in &results {
        let ValueType::Data(t) = body.values[r].ty else { return None };
        result_types.push(t);
    }
    f.entry.ops = run.iter().map(|&h| copy(body, &mut f, &mut map, h)).collect();
    if !results.is_empty() {
        let rets = results.iter().map(|r| map[r]).collect();
        let ret = f.ops.append(
            Op { kind: OpKind::Return(rets), results: Vec::new(), comments: Default::default() },
            Span::UNDEFINED,
        );
        f.entry.ops.push(ret);
    }
    let call = body.ops.append(
        Op {
            kind: OpKind::Call { func: Handle::from_usize(0).expect("handle"), args: params.clone() },
            results: results.clone(),
            comments: Default::default(),
        },
        Span::UNDEFINED,
    );
    for (i, &r) in results.iter().enumerate() {
        body.values[r].def = ValueDef::Result(call, i as u32);
    }
    let region = region_at(body, &path);
    region.ops.splice(a..b, [call]);
    let def = Kernel {
        name: name.to_string(),
        params: fparams,
        body: KernelBody::Ir(f),
        comments: Default::default(),
        param_spans: Default::default(),
    };
    Some((Function { def, results: result_types }, call))
}

/// Copies op `h` of `from` (and its regions) into `to`, mapping values through `map`.
fn copy(from: &Body, to: &mut Body, map: &mut HashMap<V, V>, h: Handle<Op>) -> Handle<Op> {
    let op = &from.ops[h];
    let new = to
        .ops
        .append(Op { kind: OpKind::GroupBarrier, results: Vec::new(), comments: Default::default() }, Span::UNDEFINED);
    let def_value = |to: &mut Body, map: &mut HashMap<V, V>, v: V, def: ValueDef| {
        let value = &from.values[v];
        let nv = to.values.append(Value { name: value.name.clone(), ty: value.ty, def }, Span::UNDEFINED);
        map.insert(v, nv);
        nv
    };
    let results: Vec<V> =
        op.results.iter().enumerate().map(|(i, &r)| def_value(to, map, r, ValueDef::Result(new, i as u32))).collect();
    let mut kind = op.kind.clone();
    for v in kind.operands_mut() {
        *v = map[v];
    }
    match &mut kind {
        OpKind::For { var, carried, body, .. } => {
            *var = def_value(to, map, *var, ValueDef::LoopVar(new));
            for (i, (inner, _)) in carried.iter_mut().enumerate() {
                *inner = def_value(to, map, *inner, ValueDef::Carried(new, i as u32));
            }
            body.ops = body.ops.clone().into_iter().map(|o| copy(from, to, map, o)).collect();
        }
        OpKind::Loop { carried, body } => {
            for (i, (inner, _)) in carried.iter_mut().enumerate() {
                *inner = def_value(to, map, *inner, ValueDef::Carried(new, i as u32));
            }
            body.ops = body.ops.clone().into_iter().map(|o| copy(from, to, map, o)).collect();
        }
        OpKind::If { then_region, else_region, .. } => {
            then_region.ops = then_region.ops.clone().into_iter().map(|o| copy(from, to, map, o)).collect();
            if let Some(e) = else_region {
                e.ops = e.ops.clone().into_iter().map(|o| copy(from, to, map, o)).collect();
            }
        }
        _ => {}
    }
    to.ops[new] = Op { kind, results, comments: op.comments.clone() };
    new
}
