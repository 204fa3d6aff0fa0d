//! Lowering of a validated naga entry point to IR kernel text.
//!
//! naga's IR keeps mutable state in local variables reached through pointers and its control
//! flow in `If`/`Loop` statements; the IR kernel language has neither mutable variables nor
//! unstructured exits. The lowering walks the statements in order and keeps, for every
//! variable, the IR value it holds at that point (`Lowerer::vars`): a `Store` replaces it, a
//! `Load` reads it, an `if` turns the variables either branch changes into its results and a
//! loop (a counted `for`, or else the general `loop`) turns those its body changes into
//! carried values. `break` and `continue` set flags tracked like variables
//! (general_loop.rs).

mod aggregate;
mod expr;
mod flat;
mod general_loop;
mod globals;
mod loops;
mod math;
mod matrix;
mod stmt;
mod switch;
mod workgroup;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use naga::{Handle, Module};

use crate::error::{Result, ShaderError};
use crate::types::Ty;
use crate::{Lang, Translated};

/// A builtin vector (`vec3<u32>`) whose lanes are the IR builtin ops of one kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Builtin(&'static str);

/// A variable whose value is tracked: a function's local (by function and local index; the
/// entry point is function `u32::MAX`) or a private global.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum VarKey {
    Local(u32, u32),
    Private(u32),
    /// The value a function returns, tracked like a variable so that returns at the ends of
    /// `if` branches merge like stores.
    Ret(u32),
    /// Whether general loop `n` (general_loop.rs) has run a `break` in this round: a `bool`
    /// tracked like a variable, so that `if`s merge it like a store.
    Broke(u32),
    /// Whether general loop `n` has run a `continue` in this round.
    Continued(u32),
    /// Whether function `n` has run a `return` (kept only in functions that return from
    /// inside a loop, general_loop.rs).
    Returned(u32),
    /// Leaf `n` of an aggregate variable (aggregate.rs): a local (function id, local index)
    /// or a private global (`u32::MAX - 1`, global index).
    Part(u32, u32, u32),
}

/// Where a pointer expression points.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Ptr {
    /// A whole tracked variable.
    Var(VarKey),
    /// One lane of a tracked vector variable.
    VarLane(VarKey, u32),
    /// Memory (a `buf` parameter or a `local` array): the array itself (`index` `None`), one
    /// element, or one lane of a vector element.
    Mem { mem: String, elem: Ty, index: Option<String>, lane: Option<u32> },
    /// A struct wrapping a runtime-sized array (member 0): a GLSL buffer block.
    MemStruct { mem: String, elem: Ty },
    /// A value of naga type `ty` (a struct, array or vector) in a buffer of its one scalar
    /// type, at word `dynamic + constant` (see `flat.rs`).
    Flat { mem: String, scalar: crate::types::S, ty: Handle<naga::Type>, dynamic: Option<String>, constant: u32 },
    /// A uniform or push-constant struct, by global variable index.
    Block(u32),
    /// A scalar parameter.
    Scalar(String, Ty),
    /// A struct, fixed-size array or matrix inside an aggregate variable (aggregate.rs): its
    /// type, its first leaf and the computed indices on the way to it.
    Part { root: aggregate::Root, ty: Handle<naga::Type>, leaf: u32, dynamic: Vec<aggregate::Dynamic> },
    /// A struct in work-group memory, one pointer per member (workgroup.rs).
    Members(Vec<Ptr>),
    /// An array of arrays in work-group memory, row by row in one `local`: the flat index of
    /// its first element and its dimensions, outermost first (workgroup.rs).
    MemNd { mem: String, elem: Ty, index: String, dims: Vec<u32> },
    /// A scalar or vector leaf (or one lane of it) reached through computed indices.
    PartLeaf { root: aggregate::Root, leaf: u32, dynamic: Vec<aggregate::Dynamic>, lane: Option<u32> },
}

/// What a naga expression (or a variable) stands for in the IR being built.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Val {
    /// An IR value.
    Ssa(String, Ty),
    /// A zero not yet written as a `const` (a variable before its first store).
    Zero(Ty),
    /// A builtin vector, materialised only when used as a whole.
    Builtin(Builtin),
    /// A pointer.
    Ptr(Ptr),
    /// A counted loop's counter after its loop: reading it is refused.
    Poisoned(naga::Span),
    /// A struct, fixed-size array or matrix value: its members, elements or columns
    /// (aggregate.rs), or the members of an `atomicCompareExchangeWeak` result.
    Struct(Vec<Val>),
    /// A load of a whole array or struct in memory (`let a = buf;`): refused where it is used,
    /// so that an unused one costs nothing.
    WholeLoad(naga::Span),
    /// A load of a whole one-dimensional array in memory (a buffer or `local` array and its
    /// element type): copied element by element where it is stored, taken apart or indexed,
    /// only where no memory write can have come between (`Lowerer::epoch`, as `FlatLoad`).
    MemArray(String, Ty, naga::Span, (u32, u32)),
    /// A load of a whole struct or array in a flat buffer (`flat.rs`): only its members and
    /// elements can be used (GLSL front ends load `a[i]` before taking `.m`), read when they
    /// are, so only where no memory write can have come between (`Lowerer::epoch`).
    FlatLoad(Ptr, naga::Span, (u32, u32)),
}

/// Per-function state: which function's expressions are being lowered, what its arguments
/// are, and the IR values of its expressions in the regions being lowered (innermost last).
pub(crate) struct FnCtx<'m> {
    pub(crate) func: &'m naga::Function,
    /// The index used in [`VarKey::Local`].
    pub(crate) id: u32,
    pub(crate) args: Vec<Val>,
    pub(crate) scopes: Vec<HashMap<Handle<naga::Expression>, Val>>,
    /// The span of the call being inlined (or of nothing, for the entry point): where an
    /// error in generated code without a span of its own is reported.
    pub(crate) site: naga::Span,
}

impl FnCtx<'_> {
    pub(crate) fn lookup(&self, h: Handle<naga::Expression>) -> Option<&Val> {
        self.scopes.iter().rev().find_map(|s| s.get(&h))
    }

    pub(crate) fn bind(&mut self, h: Handle<naga::Expression>, v: Val) {
        if let Some(top) = self.scopes.last_mut() {
            top.insert(h, v);
        }
    }

    pub(crate) fn span(&self, h: Handle<naga::Expression>) -> naga::Span {
        let s = self.func.expressions.get_span(h);
        if s.to_range().is_some_and(|r| !r.is_empty()) {
            s
        } else {
            self.site
        }
    }
}

/// The state of one translation.
pub(crate) struct Lowerer<'m> {
    pub(crate) module: &'m Module,
    pub(crate) lang: Lang,
    /// Ops at the top of the kernel body: `local` arrays, constants and builtins, each
    /// written once (they dominate every use, whatever region it is in).
    prologue: Vec<String>,
    interned: HashMap<String, String>,
    /// The lines of the region being built (indented relative to it).
    pub(crate) body: Vec<String>,
    /// The current value of each tracked variable.
    pub(crate) vars: BTreeMap<VarKey, Val>,
    /// The value each global variable expression stands for.
    pub(crate) globals: HashMap<u32, Val>,
    /// The scalar parameters of each uniform / push-constant struct, by global index.
    pub(crate) blocks: HashMap<u32, Vec<Ptr>>,
    /// Names taken by parameters and values.
    used: BTreeSet<String>,
    next: u32,
    /// The exit flags of the innermost general loop being lowered, if any.
    pub(crate) flow: general_loop::Flow,
    /// General loops lowered so far (their [`VarKey::Broke`] numbers).
    pub(crate) loops: u32,
    /// Stores, atomics and barriers written so far, and the region being built (a number
    /// per region): a struct loaded whole is read member by member only under the same pair.
    writes: u32,
    region_id: u32,
    regions: u32,
    /// The `buf` parameters of GLSL `writeonly` buffers: a read of one is refused here, at
    /// the shader's line.
    pub(crate) write_only_mems: BTreeSet<String>,
}

pub(crate) fn lower(
    module: &Module,
    info: &naga::valid::FunctionInfo,
    ep: &naga::EntryPoint,
    lang: Lang,
    kernel_name: &str,
    write_only: &BTreeSet<u32>,
) -> Result<Translated> {
    let mut l = Lowerer {
        module,
        lang,
        prologue: Vec::new(),
        interned: HashMap::new(),
        body: Vec::new(),
        vars: BTreeMap::new(),
        globals: HashMap::new(),
        blocks: HashMap::new(),
        used: BTreeSet::new(),
        next: 0,
        flow: general_loop::Flow::default(),
        loops: 0,
        writes: 0,
        region_id: 0,
        regions: 0,
        write_only_mems: BTreeSet::new(),
    };
    let params = l.globals(info, write_only)?;
    let mut args = Vec::new();
    for arg in &ep.function.arguments {
        args.push(l.entry_argument(arg, ep)?);
    }
    if ep.function.result.is_some() {
        return Err(ShaderError::at(naga::Span::default(), "a compute entry point with a result", ""));
    }
    let mut f =
        FnCtx { func: &ep.function, id: u32::MAX, args, scopes: vec![HashMap::new()], site: naga::Span::default() };
    l.init_locals(&mut f)?;
    let outer = l.enter_function(&f)?;
    let r = l.block(&mut f, &ep.function.body, true);
    l.leave_function(&f, outer);
    r?;

    let mut text = format!("kernel @{kernel_name}(");
    let decls: Vec<String> = params.iter().map(|(decl, _)| decl.clone()).collect();
    text.push_str(&decls.join(", "));
    text.push_str(") {\n");
    for line in l.prologue.iter().chain(l.body.iter()) {
        text.push_str("  ");
        text.push_str(line);
        text.push('\n');
    }
    text.push_str("}\n");
    Ok(Translated {
        text,
        params: params.into_iter().map(|(_, origin)| origin).collect(),
        workgroup_size: ep.workgroup_size,
    })
}

impl<'m> Lowerer<'m> {
    /// A fresh value name (`%` included), avoiding the parameters' names.
    pub(crate) fn fresh(&mut self) -> String {
        loop {
            let name = format!("v{}", self.next);
            self.next += 1;
            if self.used.insert(name.clone()) {
                return format!("%{name}");
            }
        }
    }

    /// Claims `%base` (or `%base_N` if taken) for a parameter or `local` array.
    pub(crate) fn claim(&mut self, base: &str) -> String {
        let mut clean: String =
            base.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
        if !clean.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
            clean.insert(0, '_');
        }
        let mut name = clean.clone();
        let mut n = 1;
        while !self.used.insert(name.clone()) {
            name = format!("{clean}_{n}");
            n += 1;
        }
        format!("%{name}")
    }

    /// Emits `%new = <op>` in the current region.
    pub(crate) fn op(&mut self, op: String, ty: Ty) -> (String, Ty) {
        if op.starts_with("atomic ") {
            self.writes += 1;
        }
        let name = self.fresh();
        self.body.push(format!("{name} = {op}"));
        (name, ty)
    }

    /// Emits an op without results in the current region.
    pub(crate) fn stmt_line(&mut self, line: String) {
        // Every op without a result that touches memory: a store or a barrier.
        self.writes += 1;
        self.body.push(line);
    }

    /// A loop-invariant op (a constant or builtin) written once in the prologue.
    pub(crate) fn interned(&mut self, op: String, ty: Ty) -> (String, Ty) {
        if let Some(name) = self.interned.get(&op) {
            return (name.clone(), ty);
        }
        let name = self.fresh();
        self.prologue.push(format!("{name} = {op}"));
        self.interned.insert(op, name.clone());
        (name, ty)
    }

    /// An op in the prologue that is not shared (a `local` array).
    pub(crate) fn prologue_line(&mut self, line: String) {
        self.prologue.push(line);
    }

    pub(crate) fn constant(&mut self, text: &str, ty: Ty) -> (String, Ty) {
        self.interned(format!("const {text} : {}", ty.text()), ty)
    }

    /// Runs `f` with an empty current region; returns its result and the region's lines.
    pub(crate) fn region<R>(&mut self, f: impl FnOnce(&mut Self) -> Result<R>) -> Result<(R, Vec<String>)> {
        let saved = std::mem::take(&mut self.body);
        let outer = self.region_id;
        self.regions += 1;
        self.region_id = self.regions;
        let r = f(self);
        self.region_id = outer;
        let lines = std::mem::replace(&mut self.body, saved);
        Ok((r?, lines))
    }

    /// Appends `lines` to the current region, one level deeper.
    pub(crate) fn nest(&mut self, lines: Vec<String>) {
        self.body.extend(lines.into_iter().map(|l| format!("  {l}")));
    }

    /// `v` as an IR value: zeros become constants and builtin vectors are built from their
    /// lanes; pointers and poisoned counters are errors at `span`.
    pub(crate) fn ssa(&mut self, v: &Val, span: naga::Span) -> Result<(String, Ty)> {
        match v {
            Val::Ssa(n, t) => Ok((n.clone(), *t)),
            Val::Zero(t) => Ok(self.constant(t.s.zero(), *t)),
            Val::Builtin(b) => {
                let lanes: Vec<String> = (0..3).map(|d| self.builtin_lane(*b, d).0).collect::<Vec<_>>();
                let ty = Ty { s: crate::types::S::U32, lanes: 3 };
                Ok(self.interned(format!("vec {}", lanes.join(", ")), ty))
            }
            Val::Ptr(_) => Err(ShaderError::at(
                span,
                "a pointer used as a value",
                "only loads and stores through pointers are supported",
            )),
            Val::WholeLoad(at) | Val::FlatLoad(_, at, _) | Val::MemArray(_, _, at, _) => Err(ShaderError::at_or(
                *at,
                span,
                "a load of a whole array or struct",
                "load single elements (`x[i]`) or scalar members",
            )),
            Val::Struct(_) => Err(ShaderError::at(
                span,
                "a struct, array or matrix used where a scalar or vector is needed",
                "use its members or elements",
            )),
            Val::Poisoned(at) => Err(ShaderError::at_or(
                span,
                *at,
                "the counter of a counted `for` loop is read after the loop",
                "declare the counter in the loop header and use it only inside the loop",
            )),
        }
    }

    /// Refuses a read of a GLSL `writeonly` buffer at `span`.
    pub(crate) fn readable(&self, mem: &str, span: naga::Span) -> Result<()> {
        if self.write_only_mems.contains(mem) {
            return Err(ShaderError::at(
                span,
                format!("a read of `writeonly` buffer `{}`", mem.trim_start_matches('%')),
                "drop `writeonly` from the buffer's declaration",
            ));
        }
        Ok(())
    }

    /// Where a whole load is read: the writes so far and the region.
    pub(crate) fn epoch(&self) -> (u32, u32) {
        (self.writes, self.region_id)
    }

    /// Lane `d` of a builtin vector: the IR builtin op, written once.
    pub(crate) fn builtin_lane(&mut self, b: Builtin, d: u32) -> (String, Ty) {
        self.interned(format!("{} {d}", b.0), Ty::U32)
    }
}
