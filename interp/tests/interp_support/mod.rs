//! Builders for interpreter tests: kernels and graphs through the data model API.
#![allow(dead_code)]

use cmdgraph_ir::arena::Handle;
use cmdgraph_ir::kernel::{AtomicOp, BinaryOp, Builtin, CmpOp, MemBase, Param, UnaryOp};
use cmdgraph_ir::module::{Comments, DeviceGlobal, MemoryKind, MemoryObject, Module, UsmKind};
use cmdgraph_ir::types::{Access, LitValue, Literal, ScalarType, Type};
use cmdgraph_ir::{
    Alternative, Arg, ArgValue, Body, DynCommandGroup, DynParam, Edge, EdgeKind, Graph, Item, Kernel, KernelBody,
    KernelCommand, Launch, MemRef, Node, NodeKind, Op, OpKind, ParamType, Pointer, Region, Span, Stmt, Value, ValueDef,
    ValueType,
};

/// A value handle.
pub type V = Handle<Value>;

/// A region builder for `if`'s else branch.
pub type RegionFn<'a> = Box<dyn FnOnce(&mut KB) -> Vec<V> + 'a>;

/// Builds one kernel body op by op; `for`/`if` take closures for their regions.
pub struct KB {
    name: String,
    params: Vec<Param>,
    body: Body,
    regions: Vec<Vec<Handle<Op>>>,
    counter: usize,
}

impl KB {
    pub fn new(name: &str) -> KB {
        KB { name: name.to_string(), params: Vec::new(), body: Body::default(), regions: vec![Vec::new()], counter: 0 }
    }

    fn value(&mut self, ty: ValueType, def: ValueDef) -> V {
        self.counter += 1;
        let name = format!("v{}", self.counter);
        self.body.values.append(Value { name, ty, def }, Span::UNDEFINED)
    }

    pub fn param(&mut self, name: &str, ty: ParamType) -> V {
        let i = self.params.len() as u32;
        self.params.push(Param { name: name.to_string(), ty });
        self.body
            .values
            .append(Value { name: name.to_string(), ty: ty.into(), def: ValueDef::Param(i) }, Span::UNDEFINED)
    }

    pub fn buf(&mut self, name: &str, elem: Type, access: Access) -> V {
        self.param(name, ParamType::Buffer { elem, access })
    }

    pub fn scalar_param(&mut self, name: &str, ty: Type) -> V {
        self.param(name, ParamType::Value(ty))
    }

    pub fn ty(&self, v: V) -> Type {
        match self.body.values[v].ty {
            ValueType::Data(t) => t,
            ValueType::Buffer { elem, .. } | ValueType::Local { elem } => elem,
        }
    }

    fn op(&mut self, kind: OpKind, results: &[Type]) -> Vec<V> {
        let h = self.body.ops.append(
            Op { kind: OpKind::Yield(vec![]), results: vec![], comments: Comments::default() },
            Span::UNDEFINED,
        );
        let rs: Vec<V> = results
            .iter()
            .enumerate()
            .map(|(i, t)| self.value(ValueType::Data(*t), ValueDef::Result(h, i as u32)))
            .collect();
        self.body.ops[h] = Op { kind, results: rs.clone(), comments: Comments::default() };
        self.regions.last_mut().unwrap().push(h);
        rs
    }

    fn op1(&mut self, kind: OpKind, ty: Type) -> V {
        self.op(kind, &[ty])[0]
    }

    pub fn konst(&mut self, value: LitValue, ty: Type) -> V {
        self.op1(OpKind::Const(Literal { value, ty: Some(ty.scalar) }, ty), ty)
    }
    pub fn f32(&mut self, x: f64) -> V {
        self.konst(LitValue::Float(x), Type::F32)
    }
    pub fn u32(&mut self, x: u32) -> V {
        self.konst(LitValue::Int(x as i128), Type::U32)
    }
    pub fn i32(&mut self, x: i32) -> V {
        self.konst(LitValue::Int(x as i128), Type::scalar(ScalarType::I32))
    }
    pub fn builtin(&mut self, b: Builtin, d: u8) -> V {
        self.op1(OpKind::Builtin(b, d), Type::U32)
    }
    pub fn gid(&mut self, d: u8) -> V {
        self.builtin(Builtin::GlobalId, d)
    }
    pub fn lid(&mut self, d: u8) -> V {
        self.builtin(Builtin::LocalId, d)
    }
    pub fn bin(&mut self, op: BinaryOp, a: V, b: V) -> V {
        let t = self.ty(a);
        self.op1(OpKind::Binary(op, a, b), t)
    }
    pub fn add(&mut self, a: V, b: V) -> V {
        self.bin(BinaryOp::Add, a, b)
    }
    pub fn sub(&mut self, a: V, b: V) -> V {
        self.bin(BinaryOp::Sub, a, b)
    }
    pub fn mul(&mut self, a: V, b: V) -> V {
        self.bin(BinaryOp::Mul, a, b)
    }
    pub fn un(&mut self, op: UnaryOp, a: V) -> V {
        let t = self.ty(a);
        self.op1(OpKind::Unary(op, a), t)
    }
    pub fn fma(&mut self, a: V, b: V, c: V) -> V {
        let t = self.ty(a);
        self.op1(OpKind::Fma(a, b, c), t)
    }
    pub fn cmp(&mut self, op: CmpOp, a: V, b: V) -> V {
        let t = self.ty(a).with_scalar(ScalarType::Bool);
        self.op1(OpKind::Cmp(op, a, b), t)
    }
    pub fn select(&mut self, c: V, a: V, b: V) -> V {
        let t = self.ty(a);
        self.op1(OpKind::Select(c, a, b), t)
    }
    pub fn cast(&mut self, a: V, ty: Type) -> V {
        self.op1(OpKind::Cast(a, ty), ty)
    }
    pub fn splat(&mut self, a: V, ty: Type) -> V {
        self.op1(OpKind::Splat(a, ty), ty)
    }
    pub fn extract(&mut self, v: V, lane: u8) -> V {
        let t = Type::scalar(self.ty(v).scalar);
        self.op1(OpKind::Extract(v, lane), t)
    }
    pub fn insert(&mut self, v: V, lane: u8, s: V) -> V {
        let t = self.ty(v);
        self.op1(OpKind::Insert(v, lane, s), t)
    }
    pub fn vec(&mut self, parts: &[V]) -> V {
        let t = Type::vector(self.ty(parts[0]).scalar, parts.len() as u8);
        self.op1(OpKind::Construct(parts.to_vec()), t)
    }
    pub fn load(&mut self, mem: V, index: V) -> V {
        let t = self.ty(mem);
        self.op1(OpKind::Load { mem: MemBase::Value(mem), index }, t)
    }
    pub fn load_global(&mut self, g: Handle<MemoryObject>, elem: Type, index: V) -> V {
        self.op1(OpKind::Load { mem: MemBase::Global(g), index }, elem)
    }
    pub fn store(&mut self, mem: V, index: V, value: V) {
        self.op(OpKind::Store { mem: MemBase::Value(mem), index, value }, &[]);
    }
    pub fn store_global(&mut self, g: Handle<MemoryObject>, index: V, value: V) {
        self.op(OpKind::Store { mem: MemBase::Global(g), index, value }, &[]);
    }
    pub fn atomic(&mut self, op: AtomicOp, mem: V, index: V, value: V) -> V {
        let t = self.ty(mem);
        self.op1(OpKind::Atomic { op, mem: MemBase::Value(mem), index, value, expected: None }, t)
    }
    pub fn atomic_global(&mut self, op: AtomicOp, g: Handle<MemoryObject>, elem: Type, index: V, value: V) -> V {
        self.op1(OpKind::Atomic { op, mem: MemBase::Global(g), index, value, expected: None }, elem)
    }
    pub fn cmpxchg(&mut self, mem: V, index: V, expected: V, new: V) -> V {
        let t = self.ty(mem);
        let kind = OpKind::Atomic {
            op: AtomicOp::CompareExchange,
            mem: MemBase::Value(mem),
            index,
            value: new,
            expected: Some(expected),
        };
        self.op1(kind, t)
    }
    pub fn barrier(&mut self) {
        self.op(OpKind::GroupBarrier, &[]);
    }
    pub fn local(&mut self, elem: Type, count: u64) -> V {
        let h = self.body.ops.append(
            Op { kind: OpKind::LocalAlloc { elem, count }, results: vec![], comments: Comments::default() },
            Span::UNDEFINED,
        );
        let v = self.value(ValueType::Local { elem }, ValueDef::Result(h, 0));
        self.body.ops[h].results = vec![v];
        self.regions.last_mut().unwrap().push(h);
        v
    }

    fn region(&mut self, f: impl FnOnce(&mut KB) -> Vec<V>, yields: bool) -> Region {
        self.regions.push(Vec::new());
        let ys = f(self);
        if yields {
            self.op(OpKind::Yield(ys), &[]);
        }
        Region { ops: self.regions.pop().unwrap(), closing_comments: vec![] }
    }

    /// `for %k = lo to hi step step carry(...)`; `body(kb, k, carried)` returns the yields.
    pub fn for_(
        &mut self,
        lo: V,
        hi: V,
        step: V,
        inits: &[V],
        body: impl FnOnce(&mut KB, V, &[V]) -> Vec<V>,
    ) -> Vec<V> {
        let h = self.body.ops.append(
            Op { kind: OpKind::Yield(vec![]), results: vec![], comments: Comments::default() },
            Span::UNDEFINED,
        );
        let t = self.ty(lo);
        let var = self.value(ValueType::Data(t), ValueDef::LoopVar(h));
        let carried: Vec<V> = inits
            .iter()
            .enumerate()
            .map(|(i, init)| {
                let ty = self.ty(*init);
                self.value(ValueType::Data(ty), ValueDef::Carried(h, i as u32))
            })
            .collect();
        let inner = carried.clone();
        let region = self.region(|kb| body(kb, var, &inner), !inits.is_empty());
        let results: Vec<V> = inits
            .iter()
            .enumerate()
            .map(|(i, init)| {
                let ty = self.ty(*init);
                self.value(ValueType::Data(ty), ValueDef::Result(h, i as u32))
            })
            .collect();
        let pairs = carried.into_iter().zip(inits.iter().copied()).collect();
        self.body.ops[h] = Op {
            kind: OpKind::For { var, lo, hi, step, carried: pairs, body: region },
            results: results.clone(),
            comments: Comments::default(),
        };
        self.regions.last_mut().unwrap().push(h);
        results
    }

    /// `if cond -> types { then } else { else }`.
    pub fn if_(
        &mut self,
        cond: V,
        types: &[Type],
        then_: impl FnOnce(&mut KB) -> Vec<V>,
        else_: Option<RegionFn<'_>>,
    ) -> Vec<V> {
        let h = self.body.ops.append(
            Op { kind: OpKind::Yield(vec![]), results: vec![], comments: Comments::default() },
            Span::UNDEFINED,
        );
        let yields = !types.is_empty();
        let then_region = self.region(then_, yields);
        let else_region = else_.map(|f| self.region(f, yields));
        let results: Vec<V> = types
            .iter()
            .enumerate()
            .map(|(i, t)| self.value(ValueType::Data(*t), ValueDef::Result(h, i as u32)))
            .collect();
        self.body.ops[h] = Op {
            kind: OpKind::If { cond, result_types: types.to_vec(), then_region, else_region },
            results: results.clone(),
            comments: Comments::default(),
        };
        self.regions.last_mut().unwrap().push(h);
        results
    }

    pub fn finish(mut self) -> Kernel {
        self.body.entry = Region { ops: self.regions.pop().unwrap(), closing_comments: vec![] };
        Kernel {
            name: self.name,
            params: self.params,
            body: KernelBody::Ir(self.body),
            comments: Comments::default(),
            param_spans: Default::default(),
        }
    }
}

/// Module-level helpers.
pub fn add_kernel(m: &mut Module, k: Kernel) -> Handle<Kernel> {
    let h = m.kernels.append(k, Span::UNDEFINED);
    m.items.push(Item::Kernel(h));
    h
}

pub fn add_memory(m: &mut Module, name: &str, elem: Type, count: u64, kind: MemoryKind) -> Handle<MemoryObject> {
    let h = m.memories.append(
        MemoryObject {
            home: Default::default(),
            name: name.to_string(),
            elem,
            count,
            kind,
            comments: Comments::default(),
        },
        Span::UNDEFINED,
    );
    m.items.push(Item::Memory(h));
    h
}

pub fn usm(m: &mut Module, name: &str, elem: Type, count: u64) -> Handle<MemoryObject> {
    add_memory(m, name, elem, count, MemoryKind::Usm(UsmKind::Device))
}

pub fn buffer(m: &mut Module, name: &str, elem: Type, count: u64) -> Handle<MemoryObject> {
    add_memory(m, name, elem, count, MemoryKind::Buffer)
}

pub fn device_global(m: &mut Module, name: &str, elem: Type, count: u64, init: &[LitValue]) -> Handle<MemoryObject> {
    let init = init.iter().map(|v| Literal { value: *v, ty: None }).collect();
    add_memory(m, name, elem, count, MemoryKind::DeviceGlobal(DeviceGlobal { init, ..Default::default() }))
}

pub fn add_graph(m: &mut Module, g: Graph) -> Handle<Graph> {
    let h = m.graphs.append(g, Span::UNDEFINED);
    m.items.push(Item::Graph(h));
    h
}

/// Builds a graph statement by statement.
pub struct GB {
    pub g: Graph,
}

impl GB {
    pub fn new(name: &str) -> GB {
        GB { g: Graph { name: name.to_string(), ..Default::default() } }
    }

    pub fn node(&mut self, name: &str, kind: NodeKind, after: &[Handle<Node>]) -> Handle<Node> {
        let h = self.g.nodes.append(
            Node { device: None, name: name.to_string(), kind, queue: None, comments: Comments::default() },
            Span::UNDEFINED,
        );
        for &a in after {
            self.g.edges.append(Edge { from: a, to: h, kind: EdgeKind::DependsOn }, Span::UNDEFINED);
        }
        self.g.body.push(Stmt::Node(h));
        h
    }

    pub fn edge(&mut self, from: Handle<Node>, to: Handle<Node>) {
        let e = self.g.edges.append(Edge { from, to, kind: EdgeKind::MakeEdge }, Span::UNDEFINED);
        self.g.body.push(Stmt::MakeEdge(e));
    }

    pub fn dyn_param(&mut self, name: &str, value: ArgValue) -> Handle<DynParam> {
        let h = self
            .g
            .dyn_params
            .append(DynParam { name: name.to_string(), value, comments: Comments::default() }, Span::UNDEFINED);
        self.g.body.push(Stmt::DynParam(h));
        h
    }

    pub fn dcg(&mut self, name: &str, active: u32, alternatives: Vec<Alternative>) -> Handle<DynCommandGroup> {
        let h = self.g.dcgs.append(
            DynCommandGroup { name: name.to_string(), active, alternatives, comments: Comments::default() },
            Span::UNDEFINED,
        );
        self.g.body.push(Stmt::Dcg(h));
        h
    }

    pub fn finish(self) -> Graph {
        self.g
    }
}

pub fn kernel_node(kernel: Handle<Kernel>, launch: Launch, args: Vec<Arg>) -> NodeKind {
    NodeKind::Kernel(KernelCommand { kernel, launch, args })
}

pub fn ptr(h: Handle<MemoryObject>) -> Arg {
    Arg::Value(ArgValue::Pointer(Pointer { base: MemRef::Memory(h), offset: 0 }))
}

pub fn mem_ptr(h: Handle<MemoryObject>, offset: u64) -> Pointer {
    Pointer { base: MemRef::Memory(h), offset }
}

pub fn alloc_ptr(node: Handle<Node>, offset: u64) -> Pointer {
    Pointer { base: MemRef::Alloc(node), offset }
}

pub fn alloc_arg(node: Handle<Node>) -> Arg {
    Arg::Value(ArgValue::Pointer(alloc_ptr(node, 0)))
}

pub fn f32_arg(x: f64) -> Arg {
    Arg::Value(ArgValue::Scalar(Literal { value: LitValue::Float(x), ty: None }))
}

pub fn u32_arg(x: u32) -> Arg {
    Arg::Value(ArgValue::Scalar(Literal { value: LitValue::Int(x as i128), ty: None }))
}

pub fn range(n: &[u64]) -> Launch {
    Launch::Range(n.to_vec())
}

pub fn nd(global: &[u64], local: &[u64]) -> Launch {
    Launch::NdRange { global: global.to_vec(), local: local.to_vec(), offset: vec![] }
}

pub fn f32_buf(access: Access) -> ParamType {
    ParamType::Buffer { elem: Type::F32, access }
}

pub const I32: Type = Type::scalar(ScalarType::I32);
pub const U32: Type = Type::U32;
pub const F32: Type = Type::F32;

/// Deterministic pseudo-random f32 inputs in [-1, 1).
pub fn inputs(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// The saxpy kernel: `y[i] = a * x[i] + y[i]` over `range(n)`.
pub fn saxpy_kernel() -> Kernel {
    let mut kb = KB::new("saxpy");
    let x = kb.buf("x", F32, Access::Read);
    let y = kb.buf("y", F32, Access::ReadWrite);
    let a = kb.scalar_param("a", F32);
    let i = kb.gid(0);
    let xv = kb.load(x, i);
    let yv = kb.load(y, i);
    let ax = kb.mul(a, xv);
    let r = kb.add(ax, yv);
    kb.store(y, i, r);
    kb.finish()
}

/// `y[i] = x[i] * a` over `range(n)`.
pub fn scale_kernel() -> Kernel {
    let mut kb = KB::new("scale");
    let x = kb.buf("x", F32, Access::Read);
    let y = kb.buf("y", F32, Access::Write);
    let a = kb.scalar_param("a", F32);
    let i = kb.gid(0);
    let v = kb.load(x, i);
    let r = kb.mul(v, a);
    kb.store(y, i, r);
    kb.finish()
}

/// `y[i] = x[i] + a` over `range(n)`.
pub fn add_kernel_const() -> Kernel {
    let mut kb = KB::new("add_const");
    let x = kb.buf("x", F32, Access::Read);
    let y = kb.buf("y", F32, Access::Write);
    let a = kb.scalar_param("a", F32);
    let i = kb.gid(0);
    let v = kb.load(x, i);
    let r = kb.add(v, a);
    kb.store(y, i, r);
    kb.finish()
}

#[allow(unused_imports)]
pub use cmdgraph_ir::kernel::{AtomicOp as Atomic, BinaryOp as Bin, Builtin as B, CmpOp as Cmp, UnaryOp as Un};

/// Parses `.cgir` text, panicking with the rendered diagnostics on failure.
pub fn parse(source: &str) -> Module {
    match cmdgraph_ir::text::parse(source) {
        Ok(m) => m,
        Err(diags) => {
            let text: Vec<String> = diags.iter().map(|d| d.render("test.cgir", source)).collect();
            panic!("test input does not parse:\n{}", text.join("\n"))
        }
    }
}

/// Parses `source` and makes an interpreter for it.
pub fn interp(source: &str) -> cmdgraph_interp::Interpreter {
    cmdgraph_interp::Interpreter::new(&parse(source)).unwrap()
}
