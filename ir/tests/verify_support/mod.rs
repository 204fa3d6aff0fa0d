//! Builders for verifier tests that construct modules through the data-model API, for
//! invariants the parser cannot produce (dangling handles, listing order, provenance).
#![allow(dead_code)]

use cmdgraph_ir::kernel::{Body, Op, OpKind, Param, ParamType, Value, ValueDef, ValueType, V};
use cmdgraph_ir::verify::VerifyError;
use cmdgraph_ir::*;

/// The codes of every error `check` reports, in order.
pub fn codes(m: &Module) -> Vec<&'static str> {
    cmdgraph_ir::verify::check(m).iter().map(VerifyError::code).collect()
}

/// Asserts that the module verifies clean.
pub fn assert_clean(m: &Module) {
    let errors = cmdgraph_ir::verify::check(m);
    assert!(errors.is_empty(), "expected no errors, got {errors:#?}");
    assert!(cmdgraph_ir::verify::verify(m).is_ok());
}

/// Asserts that the module has exactly the errors with these codes (in order).
pub fn assert_codes(m: &Module, expected: &[&str]) {
    let errors = cmdgraph_ir::verify::check(m);
    let found: Vec<&str> = errors.iter().map(VerifyError::code).collect();
    assert_eq!(found, expected, "errors: {errors:#?}");
    let diags = cmdgraph_ir::verify::verify(m).expect_err("verify must fail");
    assert_eq!(diags.len(), expected.len());
    for d in diags {
        assert!(d.help.is_some(), "{} has no help", d.code);
        assert!(!d.message.is_empty());
    }
}

/// Adds a module memory object and lists it.
pub fn memory(m: &mut Module, name: &str, kind: MemoryKind, elem: Type, count: u64) -> Handle<MemoryObject> {
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

/// Adds `usm @name : f32[count]`.
pub fn usm(m: &mut Module, name: &str, count: u64) -> Handle<MemoryObject> {
    memory(m, name, MemoryKind::Usm(UsmKind::Device), Type::F32, count)
}

/// A kernel body under construction: ops go to the entry region.
pub struct KernelBuilder {
    pub name: String,
    pub params: Vec<Param>,
    pub body: Body,
}

impl KernelBuilder {
    /// A kernel with these parameters; their values come first in the body.
    pub fn new(name: &str, params: &[(&str, ParamType)]) -> (KernelBuilder, Vec<V>) {
        let mut body = Body::default();
        let mut values = Vec::new();
        for (i, (pname, ty)) in params.iter().enumerate() {
            values.push(body.values.append(
                Value { name: pname.to_string(), ty: ValueType::from(*ty), def: ValueDef::Param(i as u32) },
                Span::UNDEFINED,
            ));
        }
        let params = params.iter().map(|(n, ty)| Param { name: n.to_string(), ty: *ty }).collect();
        (KernelBuilder { name: name.to_string(), params, body }, values)
    }

    /// Appends an op (not yet placed in a region) defining results of these names and types.
    pub fn detached(&mut self, kind: OpKind, results: &[(&str, ValueType)]) -> (Handle<Op>, Vec<V>) {
        let placeholder = ValueDef::Param(u32::MAX);
        let vs: Vec<V> = results
            .iter()
            .map(|(n, ty)| {
                self.body.values.append(Value { name: n.to_string(), ty: *ty, def: placeholder }, Span::UNDEFINED)
            })
            .collect();
        let op = self.body.ops.append(Op { kind, results: vs.clone(), comments: Comments::default() }, Span::UNDEFINED);
        for (i, v) in vs.iter().enumerate() {
            self.body.values[*v].def = ValueDef::Result(op, i as u32);
        }
        (op, vs)
    }

    /// Appends an op to the entry region.
    pub fn op(&mut self, kind: OpKind, results: &[(&str, ValueType)]) -> Vec<V> {
        let (op, vs) = self.detached(kind, results);
        self.body.entry.ops.push(op);
        vs
    }

    /// A value defined by a `for` op (loop variable or carried value), placed later.
    pub fn value(&mut self, name: &str, ty: ValueType) -> V {
        self.body.values.append(Value { name: name.to_string(), ty, def: ValueDef::Param(u32::MAX) }, Span::UNDEFINED)
    }

    /// Adds the kernel to the module.
    pub fn finish(self, m: &mut Module) -> Handle<Kernel> {
        let h = m.kernels.append(
            Kernel {
                name: self.name,
                params: self.params,
                body: KernelBody::Ir(self.body),
                comments: Comments::default(),
                param_spans: Default::default(),
            },
            Span::UNDEFINED,
        );
        m.items.push(Item::Kernel(h));
        h
    }
}

/// `f32` data.
pub const F32: ValueType = ValueType::Data(Type::F32);
/// `u32` data.
pub const U32: ValueType = ValueType::Data(Type::U32);

/// `kernel @name(%x: buf<f32, read_write>) { %i = global_id 0; %v = load %x[%i]; store %x[%i], %v }`
pub fn touch_kernel(m: &mut Module, name: &str) -> Handle<Kernel> {
    let (mut k, p) =
        KernelBuilder::new(name, &[("x", ParamType::Buffer { elem: Type::F32, access: Access::ReadWrite })]);
    let i = k.op(OpKind::Builtin(kernel::Builtin::GlobalId, 0), &[("i", U32)])[0];
    let v = k.op(OpKind::Load { mem: kernel::MemBase::Value(p[0]), index: i }, &[("v", F32)])[0];
    k.op(OpKind::Store { mem: kernel::MemBase::Value(p[0]), index: i, value: v }, &[]);
    k.finish(m)
}

/// A graph under construction.
pub struct GraphBuilder {
    pub g: Graph,
}

impl GraphBuilder {
    /// An empty graph.
    pub fn new(name: &str) -> GraphBuilder {
        GraphBuilder { g: Graph { name: name.to_string(), ..Graph::default() } }
    }

    /// Adds a node statement.
    pub fn node(&mut self, name: &str, kind: NodeKind) -> Handle<Node> {
        let h = self.g.nodes.append(
            Node { device: None, name: name.to_string(), kind, queue: None, comments: Comments::default() },
            Span::UNDEFINED,
        );
        self.g.body.push(Stmt::Node(h));
        h
    }

    /// Adds an edge created with the last node (`after(...)`).
    pub fn inline(&mut self, from: Handle<Node>, to: Handle<Node>, kind: EdgeKind) -> Handle<Edge> {
        self.g.edges.append(Edge { from, to, kind }, Span::UNDEFINED)
    }

    /// Adds an `edge %a -> %b` statement.
    pub fn make_edge(&mut self, from: Handle<Node>, to: Handle<Node>) -> Handle<Edge> {
        let e = self.g.edges.append(Edge { from, to, kind: EdgeKind::MakeEdge }, Span::UNDEFINED);
        self.g.body.push(Stmt::MakeEdge(e));
        e
    }

    /// Adds a `dyn` statement.
    pub fn dyn_param(&mut self, name: &str, value: ArgValue) -> Handle<DynParam> {
        let h = self
            .g
            .dyn_params
            .append(DynParam { name: name.to_string(), value, comments: Comments::default() }, Span::UNDEFINED);
        self.g.body.push(Stmt::DynParam(h));
        h
    }

    /// Adds a `queue` statement.
    pub fn queue(&mut self, name: &str, in_order: bool) -> Handle<Queue> {
        let h = self.g.queues.append(
            Queue { name: name.to_string(), in_order, discard_events: false, comments: Comments::default() },
            Span::UNDEFINED,
        );
        self.g.body.push(Stmt::Queue(h));
        h
    }

    /// Adds the graph to the module.
    pub fn finish(self, m: &mut Module) -> Handle<Graph> {
        let h = m.graphs.append(self.g, Span::UNDEFINED);
        m.items.push(Item::Graph(h));
        h
    }
}

/// A kernel launch of `kernel` over `range(n)` with these arguments.
pub fn launch(kernel: Handle<Kernel>, n: u64, args: Vec<Arg>) -> NodeKind {
    NodeKind::Kernel(KernelCommand { kernel, launch: Launch::Range(vec![n]), args })
}

/// A pointer argument to the start of `mem`.
pub fn ptr(mem: MemRef) -> Arg {
    Arg::Value(ArgValue::Pointer(Pointer { base: mem, offset: 0 }))
}

/// `async_malloc f32[n]`.
pub fn malloc(n: u64) -> NodeKind {
    NodeKind::AsyncMalloc { elem: Type::F32, count: n, kind: UsmKind::Device, zero_init: false }
}

/// Parses `src`, panicking with the rendered diagnostics if it does not parse.
pub fn parse(src: &str) -> Module {
    cmdgraph_ir::text::parse(src).unwrap_or_else(|d| {
        panic!("test source does not parse:\n{}\n{src}", cmdgraph_ir::diag::render_all(&d, "test.cgir", src))
    })
}

/// Asserts that `src` parses and verifies clean.
pub fn expect_clean(src: &str) {
    let m = parse(src);
    if let Err(d) = cmdgraph_ir::verify::verify(&m) {
        panic!("expected no error:\n{}\n{src}", cmdgraph_ir::diag::render_all(&d, "test.cgir", src));
    }
}

/// Asserts that `src` parses and has exactly one verifier error, `code` at `line:col`.
pub fn expect_error(src: &str, code: &str, line: usize, col: usize) {
    let m = parse(src);
    let diags = cmdgraph_ir::verify::verify(&m).err().unwrap_or_default();
    let rendered = cmdgraph_ir::diag::render_all(&diags, "test.cgir", src);
    assert_eq!(diags.len(), 1, "expected exactly one error, got:\n{rendered}\n{src}");
    let d = &diags[0];
    assert_eq!(d.code, code, "{rendered}");
    assert_eq!(d.line_col(src), (line, col), "{rendered}");
    assert!(d.help.is_some(), "{rendered}");
    assert!(rendered.contains(&format!("test.cgir:{line}:{col}")), "{rendered}");
}

/// `template` with its `§` replaced by `bad` has exactly the error `code` at `line:col`;
/// with `good` instead (the near miss) it verifies clean.
pub fn near_miss(template: &str, bad: &str, good: &str, code: &str, line: usize, col: usize) {
    assert!(template.contains('§'), "template without a § placeholder");
    expect_error(&template.replace('§', bad), code, line, col);
    expect_clean(&template.replace('§', good));
}
