//! A random module generator for the text round-trip property.
//!
//! [`module`] builds a module through the data model API from a string of bytes used as
//! a source of decisions: every choice reads the next byte(s), and an exhausted source
//! reads zeros, which always means "stop" or "the simplest option". So proptest's
//! shrinking of the byte vector shrinks the module too.
//!
//! The modules are "valid-ish": they obey everything the parser enforces (names unique
//! per namespace and defined before use where the language says so, references of the
//! right kind, result counts, value types computed by the parser's rules, creation order
//! in arenas matching statement order) but nothing the verifier checks (types may not
//! fit, arguments need not match parameters, edges may form cycles, ...).

use cmdgraph_ir::arena::{Arena, Handle};
use cmdgraph_ir::graph::{
    Accessor, Alternative, Arg, ArgValue, DynCommandGroup, DynParam, Edge, EdgeKind, Graph, GraphProperties,
    HostTaskCommand, KernelCommand, Launch, MemAccess, MemRef, Node, NodeKind, Pointer, Queue, Stmt,
};
use cmdgraph_ir::kernel::{
    AtomicOp, BinaryOp, Body, Builtin, CmpOp, Kernel, KernelBody, MemBase, Op, OpKind, Param, ParamType, Region,
    ShaderLang, ShaderSource, SpirvInterface, UnaryOp, Value, ValueDef, ValueType, V,
};
use cmdgraph_ir::module::{
    Comments, DeviceGlobal, HostAccess, InitMode, Item, MemoryKind, MemoryObject, Module, UsmKind,
};
use cmdgraph_ir::span::Span;
use cmdgraph_ir::types::{Access, LitValue, Literal, ScalarType, Type};

/// Builds a module from `bytes`.
pub fn module(bytes: &[u8]) -> Module {
    let mut g = Gen { src: bytes, pos: 0, counter: 0 };
    g.module()
}

struct Gen<'a> {
    src: &'a [u8],
    pos: usize,
    /// Makes every generated name unique.
    counter: usize,
}

/// Name decorations: never starting with a digit, so `prefix + counter + decoration` is
/// unique per counter.
const DECORATIONS: [&str; 6] = ["", ".a", "$", "-b", "_c", ".-$"];

impl Gen<'_> {
    fn byte(&mut self) -> u8 {
        let b = self.src.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    fn u64(&mut self) -> u64 {
        let mut v = 0u64;
        for _ in 0..8 {
            v = v << 8 | u64::from(self.byte());
        }
        v
    }

    /// A number in `0..n` (0 when `n` is 0).
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        usize::from(self.byte()) % n
    }

    fn chance(&mut self, percent: u8) -> bool {
        self.byte() % 100 < percent
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    /// Small numbers mostly, sometimes extremes.
    fn count(&mut self) -> u64 {
        match self.below(4) {
            0 => u64::from(self.byte()),
            1 => self.u64(),
            2 => 1 << self.below(64),
            _ => u64::MAX - u64::from(self.byte()),
        }
    }

    fn name(&mut self, prefix: &str) -> String {
        self.counter += 1;
        let deco = self.pick(&DECORATIONS);
        format!("{prefix}{}{deco}", self.counter)
    }

    fn text(&mut self, max: usize, comment: bool) -> String {
        const CHARS: [char; 16] =
            ['a', 'Z', ' ', '"', '\\', '\t', '\u{1}', '\u{7f}', 'é', '😀', '/', '%', '@', '{', '\r', '\u{85}'];
        let n = self.below(max + 1);
        let mut s: String = (0..n).map(|_| self.pick(&CHARS)).collect();
        if !comment {
            if self.chance(10) {
                s.push('\n');
            }
        } else {
            // The lexer takes a line's trailing `\r` as part of the line break.
            while s.ends_with('\r') {
                s.pop();
            }
        }
        s
    }

    fn comments(&mut self) -> Comments {
        let mut c = Comments::default();
        if self.chance(15) {
            let n = 1 + self.below(2);
            c.leading = (0..n).map(|_| self.text(12, true)).collect();
        }
        if self.chance(15) {
            c.trailing = Some(self.text(12, true));
        }
        c
    }

    fn comment_lines(&mut self) -> Vec<String> {
        if self.chance(15) {
            let n = 1 + self.below(2);
            return (0..n).map(|_| self.text(12, true)).collect();
        }
        Vec::new()
    }

    fn scalar(&mut self) -> ScalarType {
        self.pick(&ScalarType::ALL)
    }

    fn ty(&mut self) -> Type {
        let lanes = self.pick(&[1, 1, 2, 3, 4]);
        Type::vector(self.scalar(), lanes)
    }

    fn access(&mut self) -> Access {
        self.pick(&Access::ALL)
    }

    fn lit_value(&mut self) -> LitValue {
        match self.below(8) {
            0 => LitValue::Bool(self.chance(50)),
            1 => LitValue::Int(i128::from(self.byte())),
            2 => LitValue::Int(-i128::from(self.u64())),
            3 => LitValue::Int(self.pick(&[i128::MIN, i128::MAX, 0, -1, i128::from(u64::MAX)])),
            4 => LitValue::Float(f64::from_bits(self.u64())),
            5 => LitValue::Float(self.pick(&[
                0.0,
                -0.0,
                1.5,
                2.0,
                1e-7,
                1e300,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::NAN,
            ])),
            6 => LitValue::Float(f64::from(self.byte()) / 8.0),
            _ => LitValue::Float(-(self.u64() as f64)),
        }
    }

    fn module(&mut self) -> Module {
        let nk = self.below(4);
        let nm = self.below(5);
        let ng = self.below(4);
        let mut m = Module::default();
        // Memory first: kernels read `device_global` element types.
        let memories: Vec<MemoryObject> = (0..nm).map(|_| self.memory()).collect();
        for mem in memories {
            m.memories.append(mem, Span::UNDEFINED);
        }
        let kernels: Vec<Kernel> = (0..nk).map(|_| self.kernel(&m.memories)).collect();
        for k in kernels {
            m.kernels.append(k, Span::UNDEFINED);
        }
        for _ in 0..ng {
            let g = self.graph(nk, nm, ng);
            m.graphs.append(g, Span::UNDEFINED);
        }
        // Items: a random interleaving that keeps each kind in arena order.
        let (mut k, mut me, mut gr) = (m.kernels.handles(), m.memories.handles(), m.graphs.handles());
        let mut left = [nk, nm, ng];
        while left.iter().any(|&n| n > 0) {
            let kind = self.below(3);
            let kind = (0..3).map(|i| (kind + i) % 3).find(|&i| left[i] > 0).unwrap_or(0);
            left[kind] -= 1;
            m.items.push(match kind {
                0 => Item::Kernel(k.next().unwrap()),
                1 => Item::Memory(me.next().unwrap()),
                _ => Item::Graph(gr.next().unwrap()),
            });
        }
        m.trailing_comments = self.comment_lines();
        m
    }

    fn memory(&mut self) -> MemoryObject {
        let kind = match self.below(3) {
            0 => MemoryKind::Usm(self.pick(&[UsmKind::Device, UsmKind::Shared, UsmKind::Host])),
            1 => MemoryKind::Buffer,
            _ => {
                let n = self.below(4);
                MemoryKind::DeviceGlobal(DeviceGlobal {
                    init: (0..n).map(|_| Literal { value: self.lit_value(), ty: None }).collect(),
                    device_image_scope: self.chance(50),
                    host_access: self.pick(&[
                        None,
                        Some(HostAccess::Read),
                        Some(HostAccess::Write),
                        Some(HostAccess::ReadWrite),
                        Some(HostAccess::None),
                    ]),
                    init_mode: self.pick(&[None, Some(InitMode::Reprogram), Some(InitMode::Reset)]),
                    implement_in_csr: self.chance(50),
                })
            }
        };
        MemoryObject {
            home: Default::default(),
            name: self.name("m"),
            elem: self.ty(),
            count: self.count(),
            kind,
            comments: self.comments(),
        }
    }

    fn kernel(&mut self, memories: &Arena<MemoryObject>) -> Kernel {
        let name = self.name("k");
        let n = self.below(5);
        let params: Vec<Param> = (0..n)
            .map(|_| {
                let ty = match self.below(3) {
                    0 => ParamType::Value(self.ty()),
                    1 => ParamType::Buffer { elem: self.ty(), access: self.access() },
                    _ => ParamType::Local { elem: self.ty() },
                };
                Param { name: self.name("p"), ty }
            })
            .collect();
        let body = if self.chance(20) {
            KernelBody::Spirv {
                path: self.text(10, false),
                entry: self.text(6, false),
                interface: if self.chance(50) { SpirvInterface::Bindings } else { SpirvInterface::ArgumentBlock },
            }
        } else if self.chance(20) {
            let lang = if self.chance(50) { ShaderLang::Wgsl } else { ShaderLang::Glsl };
            let source = if self.chance(50) {
                ShaderSource::File(self.text(10, false))
            } else {
                // Raw text: anything but `"` (it could end the `"""` early), over lines.
                let text: String = self.text(40, false).chars().map(|c| if c == '"' { '\n' } else { c }).collect();
                ShaderSource::Inline(text)
            };
            KernelBody::Shader { lang, source, entry: self.text(6, false) }
        } else {
            let mut kg = KernelGen { body: Body::default(), visible: Vec::new(), memories };
            for (i, p) in params.iter().enumerate() {
                let v = kg.body.values.append(
                    Value { name: p.name.clone(), ty: p.ty.into(), def: ValueDef::Param(i as u32) },
                    Span::UNDEFINED,
                );
                kg.visible.push(v);
            }
            kg.body.entry = self.region(&mut kg, 0, 0);
            KernelBody::Ir(kg.body)
        };
        Kernel { name, params, body, comments: self.comments(), param_spans: Default::default() }
    }

    /// A region of random ops; `yields` > 0 ends it with a `yield` of that many values.
    fn region(&mut self, kg: &mut KernelGen<'_>, depth: usize, yields: usize) -> Region {
        let mark = kg.visible.len();
        let n = self.below(6);
        let mut ops: Vec<Handle<Op>> = (0..n).map(|_| self.op(kg, depth)).collect();
        if yields > 0 {
            if let Some(vs) = (0..yields).map(|_| kg.any(self)).collect::<Option<Vec<V>>>() {
                let comments = self.comments();
                ops.push(
                    kg.body.ops.append(Op { kind: OpKind::Yield(vs), results: vec![], comments }, Span::UNDEFINED),
                );
            }
        }
        kg.visible.truncate(mark);
        Region { ops, closing_comments: self.comment_lines() }
    }

    /// A visible value (callers make sure there is one).
    fn val(&mut self, kg: &KernelGen<'_>) -> V {
        kg.any(self).unwrap_or_else(|| Handle::from_usize(0).unwrap())
    }

    fn op(&mut self, kg: &mut KernelGen<'_>, depth: usize) -> Handle<Op> {
        let choice = self.below(23);
        // Ops that need operands fall back to a constant when nothing is visible.
        let choice = if kg.visible.is_empty() && !matches!(choice, 0 | 1 | 15 | 16) { 0 } else { choice };
        let choice = if depth >= 3 && matches!(choice, 19 | 20 | 22) { 1 } else { choice };
        if choice == 19 {
            return self.for_op(kg, depth);
        }
        if choice == 22 {
            return self.loop_op(kg, depth);
        }
        if choice == 20 {
            return self.if_op(kg, depth);
        }
        let (kind, results) = match choice {
            0 => (OpKind::Const(Literal { value: self.lit_value(), ty: None }, self.ty()), 1),
            1 => (OpKind::Builtin(self.pick(&Builtin::ALL), self.pick(&[0, 1, 2])), 1),
            2 => (OpKind::Unary(self.pick(&UnaryOp::ALL), self.val(kg)), 1),
            3 => (OpKind::Binary(self.pick(&BinaryOp::ALL), self.val(kg), self.val(kg)), 1),
            4 => (OpKind::Fma(self.val(kg), self.val(kg), self.val(kg)), 1),
            5 => (OpKind::Cmp(self.pick(&CmpOp::ALL), self.val(kg), self.val(kg)), 1),
            6 => (OpKind::Select(self.val(kg), self.val(kg), self.val(kg)), 1),
            7 if self.chance(25) => (OpKind::Bitcast(self.val(kg), self.ty()), 1),
            7 => (OpKind::Cast(self.val(kg), self.ty()), 1),
            8 => (OpKind::Splat(self.val(kg), self.ty()), 1),
            9 => (OpKind::Extract(self.val(kg), self.byte()), 1),
            10 => (OpKind::Insert(self.val(kg), self.byte(), self.val(kg)), 1),
            11 => {
                let n = 1 + self.below(4);
                (OpKind::Construct((0..n).map(|_| self.val(kg)).collect()), 1)
            }
            12 => (OpKind::Load { mem: kg.mem(self), index: kg.any(self).unwrap() }, 1),
            13 => (OpKind::Store { mem: kg.mem(self), index: kg.any(self).unwrap(), value: kg.any(self).unwrap() }, 0),
            14 | 21 => {
                let op = self.pick(&AtomicOp::ALL);
                let mem = kg.mem(self);
                let index = kg.any(self).unwrap();
                let value = kg.any(self).unwrap();
                let expected = (op == AtomicOp::CompareExchange).then(|| kg.any(self).unwrap());
                (OpKind::Atomic { op, mem, index, value, expected }, usize::from(self.chance(70)))
            }
            15 => (OpKind::GroupBarrier, 0),
            16 => (OpKind::LocalAlloc { elem: self.ty(), count: self.count() }, 1),
            17 => {
                let n = 1 + self.below(3);
                (OpKind::Yield((0..n).map(|_| self.val(kg)).collect()), 0)
            }
            _ => (OpKind::Unary(UnaryOp::Neg, self.val(kg)), 1),
        };
        let ty = (results > 0).then(|| kg.result_type(&kind));
        let comments = self.comments();
        let op = kg.body.ops.append(Op { kind, results: vec![], comments }, Span::UNDEFINED);
        if let Some(ty) = ty {
            let r = kg
                .body
                .values
                .append(Value { name: self.name("v"), ty, def: ValueDef::Result(op, 0) }, Span::UNDEFINED);
            kg.body.ops[op].results.push(r);
            kg.visible.push(r);
        }
        op
    }

    fn for_op(&mut self, kg: &mut KernelGen<'_>, depth: usize) -> Handle<Op> {
        let (lo, hi, step) = (kg.any(self).unwrap(), kg.any(self).unwrap(), kg.any(self).unwrap());
        let k = self.below(3);
        let inits: Vec<V> = (0..k).map(|_| kg.any(self).unwrap()).collect();
        let op = kg
            .body
            .ops
            .append(Op { kind: OpKind::GroupBarrier, results: vec![], comments: Comments::default() }, Span::UNDEFINED);
        let results: Vec<V> = inits
            .iter()
            .enumerate()
            .map(|(i, &init)| {
                let ty = kg.body.values[init].ty;
                kg.body
                    .values
                    .append(Value { name: self.name("r"), ty, def: ValueDef::Result(op, i as u32) }, Span::UNDEFINED)
            })
            .collect();
        let mark = kg.visible.len();
        let var_ty = kg.body.values[lo].ty;
        let var = kg
            .body
            .values
            .append(Value { name: self.name("i"), ty: var_ty, def: ValueDef::LoopVar(op) }, Span::UNDEFINED);
        kg.visible.push(var);
        let carried: Vec<(V, V)> = inits
            .iter()
            .enumerate()
            .map(|(i, &init)| {
                let ty = kg.body.values[init].ty;
                let c = kg
                    .body
                    .values
                    .append(Value { name: self.name("c"), ty, def: ValueDef::Carried(op, i as u32) }, Span::UNDEFINED);
                kg.visible.push(c);
                (c, init)
            })
            .collect();
        let body = self.region(kg, depth + 1, k);
        kg.visible.truncate(mark);
        kg.visible.extend(&results);
        let comments = self.comments();
        kg.body.ops[op] = Op { kind: OpKind::For { var, lo, hi, step, carried, body }, results, comments };
        op
    }

    /// A general `loop`: results, carried values, then the body, which yields the condition
    /// and one value per carried value (numbered as the parser numbers them).
    fn loop_op(&mut self, kg: &mut KernelGen<'_>, depth: usize) -> Handle<Op> {
        let k = self.below(3);
        let inits: Vec<V> = (0..k).map(|_| kg.any(self).unwrap()).collect();
        let op = kg
            .body
            .ops
            .append(Op { kind: OpKind::GroupBarrier, results: vec![], comments: Comments::default() }, Span::UNDEFINED);
        let results: Vec<V> = inits
            .iter()
            .enumerate()
            .map(|(i, &init)| {
                let ty = kg.body.values[init].ty;
                kg.body
                    .values
                    .append(Value { name: self.name("r"), ty, def: ValueDef::Result(op, i as u32) }, Span::UNDEFINED)
            })
            .collect();
        let mark = kg.visible.len();
        let carried: Vec<(V, V)> = inits
            .iter()
            .enumerate()
            .map(|(i, &init)| {
                let ty = kg.body.values[init].ty;
                let c = kg
                    .body
                    .values
                    .append(Value { name: self.name("c"), ty, def: ValueDef::Carried(op, i as u32) }, Span::UNDEFINED);
                kg.visible.push(c);
                (c, init)
            })
            .collect();
        let body = self.region(kg, depth + 1, k + 1);
        kg.visible.truncate(mark);
        kg.visible.extend(&results);
        let comments = self.comments();
        kg.body.ops[op] = Op { kind: OpKind::Loop { carried, body }, results, comments };
        op
    }

    fn if_op(&mut self, kg: &mut KernelGen<'_>, depth: usize) -> Handle<Op> {
        let cond = kg.any(self).unwrap();
        let n = self.below(3);
        let result_types: Vec<Type> = (0..n).map(|_| self.ty()).collect();
        let op = kg
            .body
            .ops
            .append(Op { kind: OpKind::GroupBarrier, results: vec![], comments: Comments::default() }, Span::UNDEFINED);
        let results: Vec<V> = result_types
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                let value = Value { name: self.name("r"), ty: ValueType::Data(t), def: ValueDef::Result(op, i as u32) };
                kg.body.values.append(value, Span::UNDEFINED)
            })
            .collect();
        let then_region = self.region(kg, depth + 1, n);
        let else_region = (n > 0 || self.chance(50)).then(|| self.region(kg, depth + 1, n));
        kg.visible.extend(&results);
        let comments = self.comments();
        kg.body.ops[op] = Op { kind: OpKind::If { cond, result_types, then_region, else_region }, results, comments };
        op
    }

    fn graph(&mut self, nk: usize, nm: usize, ng: usize) -> Graph {
        let mut properties = GraphProperties::default();
        for kw in GraphProperties::KEYWORDS {
            if self.chance(30) {
                properties.set(kw);
            }
        }
        let mut g = Graph {
            name: self.name("g"),
            properties,
            device: if self.chance(70) { 0 } else { self.u64() as u32 },
            context: if self.chance(70) { 0 } else { self.u64() as u32 },
            comments: self.comments(),
            ..Graph::default()
        };
        let mut ctx = GraphGen { nk, nm, ng, allocs: Vec::new() };
        let n = self.below(14);
        for _ in 0..n {
            match self.below(10) {
                0 => {
                    let q = Queue {
                        name: self.name("q"),
                        in_order: self.chance(50),
                        discard_events: self.chance(50),
                        comments: self.comments(),
                    };
                    let h = g.queues.append(q, Span::UNDEFINED);
                    g.body.push(Stmt::Queue(h));
                }
                1 => {
                    let value = self.arg_value(&g, &ctx, true);
                    let p = DynParam { name: self.name("p"), value, comments: self.comments() };
                    let h = g.dyn_params.append(p, Span::UNDEFINED);
                    g.body.push(Stmt::DynParam(h));
                }
                2 => {
                    let n = self.below(4);
                    let alternatives = (0..n)
                        .map(|_| match self.command(&g, &ctx) {
                            NodeKind::Kernel(cmd) => Alternative::Kernel(cmd),
                            NodeKind::HostTask(t) => Alternative::HostTask(t),
                            other => Alternative::Other(Box::new(other)),
                        })
                        .collect();
                    let d = DynCommandGroup {
                        name: self.name("d"),
                        active: self.u64() as u32,
                        alternatives,
                        comments: self.comments(),
                    };
                    let h = g.dcgs.append(d, Span::UNDEFINED);
                    g.body.push(Stmt::Dcg(h));
                }
                3 if !g.nodes.is_empty() => {
                    let (from, to) = (self.node(&g), self.node(&g));
                    let h = g.edges.append(Edge { from, to, kind: EdgeKind::MakeEdge }, Span::UNDEFINED);
                    let c = self.comments();
                    if !c.is_empty() {
                        g.edge_comments.insert(h, c);
                    }
                    g.body.push(Stmt::MakeEdge(h));
                }
                _ => {
                    let kind = self.command(&g, &ctx);
                    let is_alloc = matches!(kind, NodeKind::AsyncMalloc { .. });
                    let queue = (!g.queues.is_empty() && self.chance(40)).then(|| pick_handle(self, &g.queues));
                    let deps = if g.nodes.is_empty() { 0 } else { self.below(4) };
                    let deps: Vec<(Handle<Node>, EdgeKind)> =
                        (0..deps).map(|_| (self.node(&g), self.pick(&EdgeKind::ALL[1..]))).collect();
                    let node = Node { device: None, name: self.name("n"), kind, queue, comments: self.comments() };
                    let h = g.nodes.append(node, Span::UNDEFINED);
                    for (from, kind) in deps {
                        g.edges.append(Edge { from, to: h, kind }, Span::UNDEFINED);
                    }
                    if is_alloc {
                        ctx.allocs.push(h);
                    }
                    g.body.push(Stmt::Node(h));
                }
            }
        }
        g.closing_comments = self.comment_lines();
        g
    }

    fn node(&mut self, g: &Graph) -> Handle<Node> {
        pick_handle(self, &g.nodes)
    }

    /// Memory: a module memory object or an earlier `async_malloc` node.
    fn mem_ref(&mut self, ctx: &GraphGen) -> Option<MemRef> {
        match (ctx.nm, ctx.allocs.len()) {
            (0, 0) => None,
            (0, n) => Some(MemRef::Alloc(ctx.allocs[self.below(n)])),
            (m, 0) => Some(MemRef::Memory(Handle::from_usize(self.below(m)).unwrap())),
            (m, n) => Some(if self.chance(50) {
                MemRef::Alloc(ctx.allocs[self.below(n)])
            } else {
                MemRef::Memory(Handle::from_usize(self.below(m)).unwrap())
            }),
        }
    }

    fn pointer(&mut self, ctx: &GraphGen) -> Option<Pointer> {
        let base = self.mem_ref(ctx)?;
        let offset = if self.chance(50) { 0 } else { self.count() };
        Some(Pointer { base, offset })
    }

    fn dims(&mut self) -> Vec<u64> {
        let n = 1 + self.below(3);
        (0..n).map(|_| self.count()).collect()
    }

    fn task(&mut self, ctx: &GraphGen) -> HostTaskCommand {
        let n = self.below(3);
        let access = (0..n).filter_map(|_| Some(MemAccess { mem: self.mem_ref(ctx)?, mode: self.access() })).collect();
        HostTaskCommand { callback: self.text(8, false), access }
    }

    fn arg_value(&mut self, g: &Graph, ctx: &GraphGen, dyn_value: bool) -> ArgValue {
        let _ = g;
        let scalar = |s: &mut Self| {
            let value = s.lit_value();
            let ty = if dyn_value || s.chance(50) { Some(s.scalar()) } else { None };
            ArgValue::Scalar(Literal { value, ty })
        };
        match self.below(5) {
            1 => match self.pointer(ctx) {
                Some(p) => ArgValue::Pointer(p),
                None => scalar(self),
            },
            2 => match self.mem_ref(ctx) {
                Some(buffer) => {
                    let range = self.chance(50).then(|| (self.count(), self.count()));
                    ArgValue::Accessor(Accessor { buffer, mode: self.access(), range })
                }
                None => scalar(self),
            },
            3 => {
                let n = self.below(6);
                ArgValue::Bytes((0..n).map(|_| self.byte()).collect())
            }
            4 => ArgValue::Local { elem: self.ty(), count: self.count() },
            _ => scalar(self),
        }
    }

    fn command(&mut self, g: &Graph, ctx: &GraphGen) -> NodeKind {
        let choice = self.below(15);
        let ptr = |s: &mut Self| s.pointer(ctx);
        let kind = match choice {
            1 if ctx.nk > 0 => {
                let launch = match self.below(3) {
                    0 => Launch::SingleTask,
                    1 => Launch::Range(self.dims()),
                    _ => {
                        let global = self.dims();
                        let local = (0..global.len()).map(|_| self.count()).collect();
                        let offset =
                            if self.chance(50) { vec![] } else { (0..global.len()).map(|_| self.count()).collect() };
                        Launch::NdRange { global, local, offset }
                    }
                };
                let n = self.below(5);
                let args = (0..n)
                    .map(|_| {
                        if !g.dyn_params.is_empty() && self.chance(30) {
                            Arg::Dyn(pick_handle(self, &g.dyn_params))
                        } else {
                            Arg::Value(self.arg_value(g, ctx, false))
                        }
                    })
                    .collect();
                Some(NodeKind::Kernel(KernelCommand {
                    kernel: Handle::from_usize(self.below(ctx.nk)).unwrap(),
                    launch,
                    args,
                }))
            }
            2 => ptr(self).zip(ptr(self)).map(|(dst, src)| NodeKind::Memcpy { dst, src, bytes: self.count() }),
            3 => ptr(self).map(|dst| NodeKind::Memset { dst, value: self.byte(), bytes: self.count() }),
            4 => ptr(self).map(|dst| {
                let pattern = Literal { value: self.lit_value(), ty: Some(self.scalar()) };
                NodeKind::Memfill { dst, pattern, count: self.count() }
            }),
            5 => ptr(self).map(|p| NodeKind::Prefetch { ptr: p, bytes: self.count() }),
            6 => ptr(self).map(|p| NodeKind::Memadvise { ptr: p, bytes: self.count(), advice: self.u64() as i32 }),
            7 => {
                let n = if g.nodes.is_empty() { 0 } else { self.below(3) };
                Some(NodeKind::Barrier { wait: (0..n).map(|_| self.node(g)).collect() })
            }
            8 => Some(NodeKind::HostTask(self.task(ctx))),
            9 => Some(NodeKind::Native(self.task(ctx))),
            10 if ctx.ng > 0 => Some(NodeKind::Subgraph { graph: Handle::from_usize(self.below(ctx.ng)).unwrap() }),
            11 => Some(NodeKind::AsyncMalloc {
                elem: self.ty(),
                count: self.count(),
                kind: self.pick(&[UsmKind::Device, UsmKind::Shared, UsmKind::Host]),
                zero_init: self.chance(50),
            }),
            12 if !g.nodes.is_empty() => Some(NodeKind::AsyncFree { alloc: self.node(g) }),
            13 if !g.dcgs.is_empty() => Some(NodeKind::Dynamic { dcg: pick_handle(self, &g.dcgs) }),
            14 => ptr(self).map(|p| {
                use cmdgraph_ir::comm::{CommCommand, CommOp, ReduceOp};
                let (peer, tag) = (self.below(4) as u32, self.u64() as u32);
                let op = match self.below(3) {
                    0 => CommOp::Send { peer, tag },
                    1 => CommOp::Recv { peer, tag },
                    _ => CommOp::AllReduce(self.pick(&ReduceOp::ALL)),
                };
                NodeKind::Comm(CommCommand { op, ptr: p, bytes: self.count() })
            }),
            _ => None,
        };
        kind.unwrap_or(NodeKind::Empty)
    }
}

fn pick_handle<T>(g: &mut Gen<'_>, arena: &Arena<T>) -> Handle<T> {
    Handle::from_usize(g.below(arena.len())).unwrap()
}

/// What a graph's statements may refer to.
struct GraphGen {
    nk: usize,
    nm: usize,
    ng: usize,
    /// The `async_malloc` nodes so far.
    allocs: Vec<Handle<Node>>,
}

/// A kernel body being built and the values visible at the current point.
struct KernelGen<'m> {
    body: Body,
    visible: Vec<V>,
    memories: &'m Arena<MemoryObject>,
}

impl KernelGen<'_> {
    fn any(&self, g: &mut Gen<'_>) -> Option<V> {
        (!self.visible.is_empty()).then(|| self.visible[g.below(self.visible.len())])
    }

    fn mem(&self, g: &mut Gen<'_>) -> MemBase {
        if !self.memories.is_empty() && g.chance(30) {
            MemBase::Global(pick_handle(g, self.memories))
        } else {
            MemBase::Value(self.any(g).unwrap())
        }
    }

    fn ty(&self, v: V) -> ValueType {
        self.body.values[v].ty
    }

    fn element(&self, mem: MemBase) -> ValueType {
        match mem {
            MemBase::Value(v) => match self.ty(v) {
                ValueType::Buffer { elem, .. } | ValueType::Local { elem } => ValueType::Data(elem),
                data => data,
            },
            MemBase::Global(m) => ValueType::Data(self.memories[m].elem),
        }
    }

    /// The result type of a single-result op, by the rules documented in docs/ir.md.
    fn result_type(&self, kind: &OpKind) -> ValueType {
        match kind {
            OpKind::Const(_, t) | OpKind::Cast(_, t) | OpKind::Bitcast(_, t) | OpKind::Splat(_, t) => {
                ValueType::Data(*t)
            }
            OpKind::Builtin(..) => ValueType::Data(Type::U32),
            OpKind::Unary(_, a)
            | OpKind::Binary(_, a, _)
            | OpKind::Fma(a, ..)
            | OpKind::Select(_, a, _)
            | OpKind::Insert(a, ..) => self.ty(*a),
            OpKind::Cmp(_, a, _) => match self.ty(*a) {
                ValueType::Data(t) => ValueType::Data(t.with_scalar(ScalarType::Bool)),
                other => other,
            },
            OpKind::Extract(v, _) => match self.ty(*v) {
                ValueType::Data(t) => ValueType::Data(Type::scalar(t.scalar)),
                other => other,
            },
            OpKind::Construct(parts) => match self.ty(parts[0]) {
                ValueType::Data(t) => ValueType::Data(Type::vector(t.scalar, parts.len() as u8)),
                other => other,
            },
            OpKind::Load { mem, .. } | OpKind::Atomic { mem, .. } => self.element(*mem),
            OpKind::LocalAlloc { elem, .. } => ValueType::Local { elem: *elem },
            other => panic!("no single result: {other:?}"),
        }
    }
}
