//! The fusion language: kernel bodies and the data flow between kernel nodes as terms of an
//! egg [`SymbolLang`], and the way back from an extracted term to a kernel body.
//!
//! Every work-item of an element-wise kernel touches only the element at its own index, so
//! one work-item of a whole group is a sequence of loads and stores on a per-element *memory
//! state*. Symbols:
//!
//! - `init`: the state before the group; `st m v s`: `s` after storing `v` into memory `m`;
//!   `vbound s` / `hbound s`: a launch boundary after a kernel whose results the next kernel
//!   reads (vertical) or not (horizontal);
//! - `ld m s`: the element of `m` in state `s`; `out m v rest` / `nil`: the group's stores;
//! - leaves `mem:K` (memory K, kept) and `dead:K` (a graph-owned temporary that dies inside
//!   the group), `arg:K` (a dynamic scalar argument), `gid` (`global_id 0`) and constants
//!   `c:<type>:<value>` (see [`const_symbol`]);
//! - operations `<keyword>.<type>` (`add.f32`, `lt.f32` with the operand type, `cast.f32`
//!   with the target type, `extract.2`, `vec.vec4<f32>`), so that typed rules stay exact.

use cmdgraph_ir::graph::{Arg, ArgValue, Graph, KernelCommand, MemRef, NodeKind};
use cmdgraph_ir::kernel::{
    BinaryOp, Body, Builtin, CmpOp, Kernel, KernelBody, MemBase, Op, OpKind, Param, ParamType, UnaryOp, Value,
    ValueDef, ValueType, V,
};
use cmdgraph_ir::types::{Access, LitValue, Literal, ScalarType, Type};
use cmdgraph_ir::{Handle, Module, Node, Span};
use egg::{EGraph, Id, RecExpr, SymbolLang};
use std::collections::{BTreeMap, BTreeSet};

/// Prefix of the leaf of a temporary that dies inside the group.
pub const DEAD_PREFIX: &str = "dead:";
/// Prefix of the leaf of memory whose final contents are kept.
pub const LIVE_PREFIX: &str = "mem:";

/// The canonical symbol of a constant: equal values of one type get one symbol (floats by
/// the bits they have in that type), so the e-graph shares them.
pub fn const_symbol(value: LitValue, ty: Type) -> String {
    let s = ty.scalar;
    let text = match value {
        LitValue::Bool(b) => b.to_string(),
        LitValue::Int(i) if !s.is_float() => i.to_string(),
        LitValue::Int(i) => float_text(i as f64, s),
        LitValue::Float(f) => float_text(f, s),
    };
    format!("c:{ty}:{text}")
}

fn float_text(f: f64, s: ScalarType) -> String {
    match s {
        ScalarType::F32 => format!("{:08x}", (f as f32).to_bits()),
        _ => format!("{:016x}", f.to_bits()),
    }
}

/// A memory object the group touches.
#[derive(Clone, Debug)]
pub struct MemInfo {
    /// The memory.
    pub mem: MemRef,
    /// Its element type as the kernels see it.
    pub elem: Type,
    /// Whether it dies inside the group (a temporary whose stores are dropped).
    pub dead: bool,
}

/// A dynamic scalar argument slot of a member, kept as a parameter of the fused kernel.
#[derive(Clone, Debug)]
pub struct ScalarSlot {
    /// The argument (an `Arg::Dyn`).
    pub arg: Arg,
    /// The parameter's type.
    pub ty: Type,
    /// The original parameter's name.
    pub name: String,
}

/// A group translated into one e-graph.
pub struct Term {
    /// The e-graph holding the group's term.
    pub egraph: EGraph<SymbolLang, ()>,
    /// The root (`out ...` chain).
    pub root: Id,
    /// Constant symbols and what they stand for.
    pub consts: BTreeMap<String, (Literal, Type)>,
    /// Type spellings used in operation names.
    pub types: BTreeMap<String, Type>,
    /// Memory objects by leaf index.
    pub mems: Vec<MemInfo>,
    /// Dynamic scalar slots by leaf index.
    pub scalars: Vec<ScalarSlot>,
}

struct Builder<'a> {
    term: Term,
    dead: &'a [MemRef],
}

impl Builder<'_> {
    fn leaf(&mut self, op: String) -> Id {
        self.term.egraph.add(SymbolLang::leaf(op))
    }
    fn node(&mut self, op: String, children: Vec<Id>) -> Id {
        self.term.egraph.add(SymbolLang::new(op, children))
    }
    fn ty(&mut self, t: Type) -> String {
        let s = t.to_string();
        self.term.types.insert(s.clone(), t);
        s
    }
    fn constant(&mut self, lit: Literal, ty: Type) -> Id {
        let sym = const_symbol(lit.value, ty);
        self.term.consts.entry(sym.clone()).or_insert((lit, ty));
        self.leaf(sym)
    }
    fn mem_index(&mut self, mem: MemRef, elem: Type) -> Result<usize, String> {
        if let Some(k) = self.term.mems.iter().position(|m| m.mem == mem) {
            return match self.term.mems.get(k) {
                Some(m) if m.elem == elem => Ok(k),
                _ => Err("one memory is read with two element types".into()),
            };
        }
        self.term.mems.push(MemInfo { mem, elem, dead: self.dead.contains(&mem) });
        Ok(self.term.mems.len() - 1)
    }
    fn mem_leaf(&mut self, k: usize) -> Id {
        let dead = self.term.mems.get(k).is_some_and(|m| m.dead);
        self.leaf(format!("{}{k}", if dead { DEAD_PREFIX } else { LIVE_PREFIX }))
    }
}

/// A group's term up to the memory objects and dynamic arguments it names, with those.
///
/// [`build`] numbers memory by first use and dynamic scalars by position, so two groups
/// whose members launch the same kernels with the same literals, memory in the same pattern
/// (and the same temporaries dying) build the same e-graph node for node: saturating and
/// extracting one serves both (a model's repeated blocks then cost one saturation).
pub struct Signature {
    /// The term's identity: kernels, argument pattern and dying memory, as tagged words.
    pub key: Vec<u64>,
    /// What [`Term::mems`] would be.
    pub mems: Vec<MemInfo>,
    /// What [`Term::scalars`] would be.
    pub scalars: Vec<ScalarSlot>,
}

/// Tags of [`Signature::key`] words (the top byte; the rest is an index or a value).
const KEY_KERNEL: u64 = 1 << 56;
const KEY_MEM: u64 = 2 << 56;
const KEY_BOOL: u64 = 3 << 56;
const KEY_INT: u64 = 4 << 56;
const KEY_FLOAT: u64 = 5 << 56;
const KEY_DYN: u64 = 6 << 56;
const KEY_DEAD: u64 = 7 << 56;

/// The [`Signature`] of a group, `None` when an argument is not a plain pointer or scalar
/// (then [`build`] reports why).
pub fn signature(graph: &Graph, module: &Module, members: &[Handle<Node>], dead: &[MemRef]) -> Option<Signature> {
    let mut key = Vec::with_capacity(members.len() * 5);
    let mut mems: Vec<MemInfo> = Vec::new();
    let mut scalars = Vec::new();
    for &member in members {
        let NodeKind::Kernel(cmd) = &graph.nodes.try_get(member)?.kind else { return None };
        let kernel = module.kernels.try_get(cmd.kernel)?;
        if kernel.params.len() != cmd.args.len() {
            return None;
        }
        key.push(KEY_KERNEL | cmd.kernel.index() as u64);
        for (param, arg) in kernel.params.iter().zip(&cmd.args) {
            match (param.ty, arg) {
                (ParamType::Buffer { elem, .. }, Arg::Value(ArgValue::Pointer(p))) if p.offset == 0 => {
                    let k = match mems.iter().position(|m| m.mem == p.base) {
                        Some(k) => k,
                        None => {
                            mems.push(MemInfo { mem: p.base, elem, dead: dead.contains(&p.base) });
                            mems.len() - 1
                        }
                    };
                    key.push(KEY_MEM | k as u64);
                }
                // Exactly the value (floats by their bits): the constant's symbol and the
                // literal the fused body gets both come from it.
                (ParamType::Value(_), Arg::Value(ArgValue::Scalar(lit))) => match lit.value {
                    LitValue::Bool(b) => key.push(KEY_BOOL | u64::from(b)),
                    LitValue::Int(i) => key.extend([KEY_INT, i as u64, (i >> 64) as u64]),
                    LitValue::Float(f) => key.extend([KEY_FLOAT, f.to_bits()]),
                },
                (ParamType::Value(ty), Arg::Dyn(_)) => {
                    scalars.push(ScalarSlot { arg: arg.clone(), ty, name: param.name.clone() });
                    key.push(KEY_DYN);
                }
                _ => return None,
            }
        }
    }
    key.extend(mems.iter().enumerate().filter(|(_, m)| m.dead).map(|(k, _)| KEY_DEAD | k as u64));
    Some(Signature { key, mems, scalars })
}

/// Translates the members of a group (in the order they run) into one term. `dead` lists
/// the temporaries that die inside the group. Errors name what is not element-wise.
pub fn build(module: &Module, graph: &Graph, members: &[Handle<Node>], dead: &[MemRef]) -> Result<Term, String> {
    let term = Term {
        egraph: EGraph::default(),
        root: Id::from(0usize),
        consts: BTreeMap::new(),
        types: BTreeMap::new(),
        mems: Vec::new(),
        scalars: Vec::new(),
    };
    let mut b = Builder { term, dead };
    let mut state = b.leaf("init".into());
    let mut written: BTreeSet<usize> = BTreeSet::new();
    for (position, &member) in members.iter().enumerate() {
        let Some(NodeKind::Kernel(cmd)) = graph.nodes.try_get(member).map(|n| &n.kind) else {
            return Err("not a kernel node".into());
        };
        let Some(kernel) = module.kernels.try_get(cmd.kernel) else { return Err("unknown kernel".into()) };
        let KernelBody::Ir(body) = &kernel.body else { return Err("an external SPIR-V kernel".into()) };
        let mut env: Vec<Option<Id>> = vec![None; body.values.len()];
        let mut param_mem: Vec<Option<usize>> = vec![None; kernel.params.len()];
        bind_params(&mut b, kernel, cmd, &mut env, &mut param_mem)?;
        let reads: BTreeSet<usize> =
            loaded_params(body).into_iter().filter_map(|i| param_mem.get(i).copied().flatten()).collect();
        if position > 0 {
            let bound = if reads.iter().any(|k| written.contains(k)) { "vbound" } else { "hbound" };
            state = b.node(bound.into(), vec![state]);
        }
        for &op in &body.entry.ops {
            let Some(op) = body.ops.try_get(op) else { return Err("dangling op".into()) };
            state = translate(&mut b, body, op, &mut env, &param_mem, state, &mut written)?;
        }
    }
    let mut rest = b.leaf("nil".into());
    for &k in written.iter().rev() {
        let leaf = b.mem_leaf(k);
        let value = b.node("ld".into(), vec![leaf, state]);
        rest = b.node("out".into(), vec![leaf, value, rest]);
    }
    b.term.root = rest;
    Ok(b.term)
}

fn bind_params(
    b: &mut Builder<'_>,
    kernel: &Kernel,
    cmd: &KernelCommand,
    env: &mut [Option<Id>],
    param_mem: &mut [Option<usize>],
) -> Result<(), String> {
    if cmd.args.len() != kernel.params.len() {
        return Err("argument count differs from the parameters".into());
    }
    for (i, (param, arg)) in kernel.params.iter().zip(&cmd.args).enumerate() {
        match (param.ty, arg) {
            (ParamType::Buffer { elem, .. }, Arg::Value(ArgValue::Pointer(p))) if p.offset == 0 => {
                let k = b.mem_index(p.base, elem)?;
                if let Some(slot) = param_mem.get_mut(i) {
                    *slot = Some(k);
                }
            }
            (ParamType::Value(ty), Arg::Value(ArgValue::Scalar(lit))) => {
                let id = b.constant(*lit, ty);
                if let Some(slot) = env.get_mut(i) {
                    *slot = Some(id);
                }
            }
            (ParamType::Value(ty), Arg::Dyn(_)) => {
                let k = b.term.scalars.len();
                b.term.scalars.push(ScalarSlot { arg: arg.clone(), ty, name: param.name.clone() });
                let id = b.leaf(format!("arg:{k}"));
                if let Some(slot) = env.get_mut(i) {
                    *slot = Some(id);
                }
            }
            _ => return Err(format!("argument {i} is not a plain pointer or scalar")),
        }
    }
    Ok(())
}

/// Parameter indices a body loads from.
fn loaded_params(body: &Body) -> Vec<usize> {
    let mut out = Vec::new();
    for &op in &body.entry.ops {
        if let Some(Op { kind: OpKind::Load { mem: MemBase::Value(v), .. }, .. }) = body.ops.try_get(op) {
            if let Some(Value { def: ValueDef::Param(i), .. }) = body.values.try_get(*v) {
                out.push(*i as usize);
            }
        }
    }
    out
}

fn data_ty(body: &Body, v: V) -> Result<Type, String> {
    match body.values.try_get(v).map(|v| v.ty) {
        Some(ValueType::Data(t)) => Ok(t),
        _ => Err("an operand is not a data value".into()),
    }
}

fn translate(
    b: &mut Builder<'_>,
    body: &Body,
    op: &Op,
    env: &mut [Option<Id>],
    param_mem: &[Option<usize>],
    state: Id,
    written: &mut BTreeSet<usize>,
) -> Result<Id, String> {
    let get = |v: V| env.get(v.index()).copied().flatten().ok_or_else(|| "an operand has no term".to_string());
    let mem_of = |mem: &MemBase| match mem {
        MemBase::Value(v) => match body.values.try_get(*v).map(|v| v.def) {
            Some(ValueDef::Param(i)) => param_mem.get(i as usize).copied().flatten().ok_or("not a buffer"),
            _ => Err("not a parameter"),
        },
        MemBase::Global(_) => Err("a device_global"),
    };
    let result_ty = |i: usize| op.results.get(i).and_then(|&r| data_ty(body, r).ok());
    let (id, new_state) = match &op.kind {
        OpKind::Const(lit, ty) => (Some(b.constant(*lit, *ty)), state),
        OpKind::Builtin(Builtin::GlobalId, 0) => (Some(b.leaf("gid".into())), state),
        OpKind::Unary(u, a) => {
            let t = b.ty(data_ty(body, *a)?);
            (Some(b.node(format!("{}.{t}", u.keyword()), vec![get(*a)?])), state)
        }
        OpKind::Binary(o, x, y) => {
            let t = b.ty(data_ty(body, *x)?);
            (Some(b.node(format!("{}.{t}", o.keyword()), vec![get(*x)?, get(*y)?])), state)
        }
        OpKind::Fma(x, y, z) => {
            let t = b.ty(data_ty(body, *x)?);
            (Some(b.node(format!("fma.{t}"), vec![get(*x)?, get(*y)?, get(*z)?])), state)
        }
        OpKind::Cmp(c, x, y) => {
            let t = b.ty(data_ty(body, *x)?);
            (Some(b.node(format!("{}.{t}", c.keyword()), vec![get(*x)?, get(*y)?])), state)
        }
        OpKind::Select(c, x, y) => {
            let t = b.ty(data_ty(body, *x)?);
            (Some(b.node(format!("select.{t}"), vec![get(*c)?, get(*x)?, get(*y)?])), state)
        }
        OpKind::Cast(x, to) => {
            let t = b.ty(*to);
            (Some(b.node(format!("cast.{t}"), vec![get(*x)?])), state)
        }
        OpKind::Bitcast(x, to) => {
            let t = b.ty(*to);
            (Some(b.node(format!("bitcast.{t}"), vec![get(*x)?])), state)
        }
        OpKind::Splat(x, to) => {
            let t = b.ty(*to);
            (Some(b.node(format!("splat.{t}"), vec![get(*x)?])), state)
        }
        OpKind::Extract(x, lane) => (Some(b.node(format!("extract.{lane}"), vec![get(*x)?])), state),
        OpKind::Insert(x, lane, y) => (Some(b.node(format!("insert.{lane}"), vec![get(*x)?, get(*y)?])), state),
        OpKind::Construct(parts) => {
            let t = b.ty(result_ty(0).ok_or("a vector without a type")?);
            let children = parts.iter().map(|p| get(*p)).collect::<Result<Vec<_>, _>>()?;
            (Some(b.node(format!("vec.{t}"), children)), state)
        }
        OpKind::Load { mem, .. } => {
            let k = mem_of(mem)?;
            let leaf = b.mem_leaf(k);
            (Some(b.node("ld".into(), vec![leaf, state])), state)
        }
        OpKind::Store { mem, value, .. } => {
            let k = mem_of(mem)?;
            written.insert(k);
            let leaf = b.mem_leaf(k);
            let v = get(*value)?;
            (None, b.node("st".into(), vec![leaf, v, state]))
        }
        _ => return Err("an operation that is not element-wise".into()),
    };
    if let (Some(id), Some(&r)) = (id, op.results.first()) {
        if let Some(slot) = env.get_mut(r.index()) {
            *slot = Some(id);
        }
    }
    Ok(new_state)
}

/// What an extracted node became in the new body.
#[derive(Clone, Copy)]
enum Emitted {
    Val(V, Type),
    Mem(usize),
    Other,
}

/// The fused kernel and the arguments of the node launching it, from an extracted term.
/// Errors when the term still needs a memory state other than `init` (a load the rules
/// could not forward) or reads a dead temporary.
pub fn emit(
    term: &Term,
    expr: &RecExpr<SymbolLang>,
    name: String,
    mem_names: &[String],
) -> Result<(Kernel, Vec<Arg>), String> {
    let nodes = expr.as_ref();
    let access = accessed(expr)?;
    let mut body = Body::default();
    let mut params = Vec::new();
    let mut args = Vec::new();
    let mut param_of_mem: BTreeMap<usize, V> = BTreeMap::new();
    for (&k, &(read, write)) in &access {
        let info = term.mems.get(k).ok_or("bad memory leaf")?;
        if info.dead {
            return Err("the group reads a temporary before writing it".into());
        }
        let access = match (read, write) {
            (true, true) => Access::ReadWrite,
            (false, true) => Access::Write,
            _ => Access::Read,
        };
        let ty = ParamType::Buffer { elem: info.elem, access };
        let pname = mem_names.get(k).cloned().unwrap_or_else(|| format!("m{k}"));
        let v = add_param(&mut body, &mut params, pname, ty);
        param_of_mem.insert(k, v);
        args.push(Arg::Value(ArgValue::Pointer(cmdgraph_ir::graph::Pointer { base: info.mem, offset: 0 })));
    }
    let mut scalar_params = Vec::new();
    for (k, s) in term.scalars.iter().enumerate() {
        scalar_params.push(add_param(&mut body, &mut params, format!("{}_{k}", s.name), ParamType::Value(s.ty)));
        args.push(s.arg.clone());
    }
    let gid = push_op(&mut body, OpKind::Builtin(Builtin::GlobalId, 0), Some(Type::U32)).ok_or("no gid")?;
    let mut emitted: Vec<Emitted> = Vec::with_capacity(nodes.len());
    let mut stores: Vec<(usize, V)> = Vec::new();
    for n in nodes {
        let child = |i: usize| -> Result<Emitted, String> {
            n.children.get(i).and_then(|c| emitted.get(usize::from(*c))).copied().ok_or_else(|| "bad child".into())
        };
        let val = |i: usize| -> Result<(V, Type), String> {
            match child(i)? {
                Emitted::Val(v, t) => Ok((v, t)),
                _ => Err("an operand is not a value".into()),
            }
        };
        let op = n.op.as_str();
        let e = if op == "gid" {
            Emitted::Val(gid, Type::U32)
        } else if let Some(k) = op.strip_prefix(LIVE_PREFIX).or_else(|| op.strip_prefix(DEAD_PREFIX)) {
            Emitted::Mem(k.parse().map_err(|_| "bad memory leaf")?)
        } else if let Some(k) = op.strip_prefix("arg:") {
            let k: usize = k.parse().map_err(|_| "bad argument leaf")?;
            let v = *scalar_params.get(k).ok_or("bad argument leaf")?;
            Emitted::Val(v, term.scalars.get(k).map(|s| s.ty).ok_or("bad argument leaf")?)
        } else if let Some((lit, ty)) = term.consts.get(op) {
            let lit = Literal { value: lit.value, ty: Some(ty.scalar) };
            let v = push_op(&mut body, OpKind::Const(lit, *ty), Some(*ty)).ok_or("const")?;
            Emitted::Val(v, *ty)
        } else if matches!(op, "init" | "nil" | "out") {
            if op == "out" {
                let Emitted::Mem(k) = child(0)? else { return Err("bad store".into()) };
                stores.push((k, val(1)?.0));
            }
            Emitted::Other
        } else if op == "ld" {
            let Emitted::Mem(k) = child(0)? else { return Err("bad load".into()) };
            let base = *param_of_mem.get(&k).ok_or("a load of unknown memory")?;
            let elem = term.mems.get(k).map(|m| m.elem).ok_or("bad memory leaf")?;
            let v =
                push_op(&mut body, OpKind::Load { mem: MemBase::Value(base), index: gid }, Some(elem)).ok_or("load")?;
            Emitted::Val(v, elem)
        } else {
            let (kw, suffix) = op.split_once('.').ok_or_else(|| format!("unknown symbol `{op}`"))?;
            let ty = term.types.get(suffix).copied();
            let (kind, rty) = operation(kw, suffix, ty, &val)?;
            let v = push_op(&mut body, kind, Some(rty)).ok_or("op")?;
            Emitted::Val(v, rty)
        };
        emitted.push(e);
    }
    // `out` chains are extracted innermost first; store in memory order.
    stores.sort_by_key(|(k, _)| *k);
    for (k, v) in stores {
        let base = *param_of_mem.get(&k).ok_or("a store to unknown memory")?;
        push_op(&mut body, OpKind::Store { mem: MemBase::Value(base), index: gid, value: v }, None);
    }
    let kernel = Kernel {
        name,
        params,
        body: KernelBody::Ir(body),
        comments: Default::default(),
        param_spans: Default::default(),
    };
    Ok((kernel, args))
}

/// Which memory leaves (by index) an extracted term loads and stores, in index order: the
/// fused kernel's buffer parameters and the node's pointer arguments, in that order. Errors
/// when the term still needs a memory state other than `init`.
pub fn accessed(expr: &RecExpr<SymbolLang>) -> Result<BTreeMap<usize, (bool, bool)>, String> {
    let nodes = expr.as_ref();
    let mut access: BTreeMap<usize, (bool, bool)> = BTreeMap::new();
    for n in nodes {
        let mem_child = |i: usize| n.children.get(i).and_then(|c| nodes.get(usize::from(*c))).map(|m| m.op.as_str());
        let k = match mem_child(0).and_then(|m| m.strip_prefix(LIVE_PREFIX).or_else(|| m.strip_prefix(DEAD_PREFIX))) {
            Some(k) => k.parse::<usize>().map_err(|_| "bad memory leaf")?,
            None => continue,
        };
        match n.op.as_str() {
            "ld" => {
                if mem_child(1) != Some("init") {
                    return Err("a load the rules could not forward".into());
                }
                access.entry(k).or_default().0 = true;
            }
            "out" => access.entry(k).or_default().1 = true,
            _ => {}
        }
    }
    Ok(access)
}

type ValFn<'a> = dyn Fn(usize) -> Result<(V, Type), String> + 'a;

/// The op for symbol `kw.suffix` and its result type.
fn operation(kw: &str, suffix: &str, ty: Option<Type>, val: &ValFn<'_>) -> Result<(OpKind, Type), String> {
    let need = |t: Option<Type>| t.ok_or_else(|| format!("unknown type `{suffix}`"));
    if let Some(u) = UnaryOp::ALL.into_iter().find(|u| u.keyword() == kw) {
        return Ok((OpKind::Unary(u, val(0)?.0), need(ty)?));
    }
    if let Some(o) = BinaryOp::ALL.into_iter().find(|o| o.keyword() == kw) {
        return Ok((OpKind::Binary(o, val(0)?.0, val(1)?.0), need(ty)?));
    }
    if let Some(c) = CmpOp::ALL.into_iter().find(|c| c.keyword() == kw) {
        return Ok((OpKind::Cmp(c, val(0)?.0, val(1)?.0), need(ty)?.with_scalar(ScalarType::Bool)));
    }
    Ok(match kw {
        "fma" => (OpKind::Fma(val(0)?.0, val(1)?.0, val(2)?.0), need(ty)?),
        "select" => (OpKind::Select(val(0)?.0, val(1)?.0, val(2)?.0), need(ty)?),
        "cast" => (OpKind::Cast(val(0)?.0, need(ty)?), need(ty)?),
        "bitcast" => (OpKind::Bitcast(val(0)?.0, need(ty)?), need(ty)?),
        "splat" => (OpKind::Splat(val(0)?.0, need(ty)?), need(ty)?),
        "extract" => {
            let lane: u8 = suffix.parse().map_err(|_| "bad lane")?;
            let (v, t) = val(0)?;
            (OpKind::Extract(v, lane), Type::scalar(t.scalar))
        }
        "insert" => {
            let lane: u8 = suffix.parse().map_err(|_| "bad lane")?;
            let (v, t) = val(0)?;
            (OpKind::Insert(v, lane, val(1)?.0), t)
        }
        "vec" => {
            let t = need(ty)?;
            let parts = (0..t.lanes as usize).map(|i| val(i).map(|p| p.0)).collect::<Result<Vec<_>, _>>()?;
            (OpKind::Construct(parts), t)
        }
        _ => return Err(format!("unknown operation `{kw}`")),
    })
}

fn add_param(body: &mut Body, params: &mut Vec<Param>, name: String, ty: ParamType) -> V {
    let index = params.len() as u32;
    params.push(Param { name: name.clone(), ty });
    body.values.append(Value { name, ty: ty.into(), def: ValueDef::Param(index) }, Span::UNDEFINED)
}

/// Appends an op to the entry region with one result of type `result` (none for `None`).
fn push_op(body: &mut Body, kind: OpKind, result: Option<Type>) -> Option<V> {
    let op = body.ops.append(Op { kind, results: Vec::new(), comments: Default::default() }, Span::UNDEFINED);
    body.entry.ops.push(op);
    let ty = result?;
    let name = format!("v{}", body.values.len());
    let v = body.values.append(Value { name, ty: ValueType::Data(ty), def: ValueDef::Result(op, 0) }, Span::UNDEFINED);
    body.ops.try_get_mut(op)?.results.push(v);
    Some(v)
}
