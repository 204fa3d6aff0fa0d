//! Printer tests on modules built through the API: canonical spellings, omitted defaults,
//! escaping, layout, and robustness on malformed modules.

use super::*;
use crate::graph::{
    Arg, ArgValue, Edge, EdgeKind, Graph, KernelCommand, Launch, MemRef, Node, NodeKind, Pointer, Stmt,
};
use crate::kernel::{Body, Kernel, KernelBody, Op, OpKind, Region, Value, ValueDef, ValueType};
use crate::types::{ScalarType, Type};

fn node(name: &str, kind: NodeKind) -> Node {
    Node { device: None, name: name.into(), kind, queue: None, comments: Comments::default() }
}

fn usm(name: &str, kind: UsmKind) -> MemoryObject {
    MemoryObject {
        home: Default::default(),
        name: name.into(),
        elem: Type::F32,
        count: 4,
        kind: MemoryKind::Usm(kind),
        comments: Comments::default(),
    }
}

fn lit(value: LitValue, ty: Option<ScalarType>) -> ArgValue {
    ArgValue::Scalar(Literal { value, ty })
}

/// A module with one kernel `@k`, memory `@x` and graph `@g` holding `nodes` (and the
/// given edges); each node is a statement.
fn graph_module(nodes: Vec<Node>, edges: Vec<Edge>) -> Module {
    let mut m = Module::default();
    let k = m.kernels.append(
        Kernel {
            name: "k".into(),
            params: vec![],
            body: KernelBody::Spirv { path: "k.spv".into(), entry: "main".into(), interface: Default::default() },
            comments: Comments::default(),
            param_spans: Default::default(),
        },
        crate::span::Span::UNDEFINED,
    );
    let x = m.memories.append(usm("x", UsmKind::Device), crate::span::Span::UNDEFINED);
    let mut g = Graph { name: "g".into(), ..Graph::default() };
    for n in nodes {
        let h = g.nodes.append(n, crate::span::Span::UNDEFINED);
        g.body.push(Stmt::Node(h));
    }
    for e in edges {
        g.edges.append(e, crate::span::Span::UNDEFINED);
    }
    let gh = m.graphs.append(g, crate::span::Span::UNDEFINED);
    m.items = vec![Item::Kernel(k), Item::Memory(x), Item::Graph(gh)];
    m
}

fn h<T>(i: usize) -> Handle<T> {
    Handle::from_usize(i).unwrap()
}

#[test]
fn defaults_are_omitted() {
    let x = MemRef::Memory(h(0));
    let nodes = vec![
        node(
            "a",
            NodeKind::Memcpy { dst: Pointer { base: x, offset: 0 }, src: Pointer { base: x, offset: 8 }, bytes: 4 },
        ),
        node("t", NodeKind::AsyncMalloc { elem: Type::F32, count: 4, kind: UsmKind::Device, zero_init: false }),
        node("b", NodeKind::Barrier { wait: vec![] }),
    ];
    let edges = vec![
        Edge { from: h(0), to: h(2), kind: EdgeKind::DependsOn },
        Edge { from: h(1), to: h(2), kind: EdgeKind::Barrier },
    ];
    let text = crate::text::print(&graph_module(nodes, edges));
    assert_eq!(
        text,
        "kernel @k() spirv \"k.spv\" entry \"main\"\n\nusm @x : f32[4]\n\ngraph @g {\n  \
         %a = memcpy @x, @x + 8, 4\n  %t = async_malloc f32[4]\n  %b = barrier after(%a, %t via barrier)\n}\n"
    );
}

#[test]
fn literals_use_their_canonical_spelling() {
    let args = vec![
        Arg::Value(lit(LitValue::Float(2.0), None)),
        Arg::Value(lit(LitValue::Float(1e-7), Some(ScalarType::F32))),
        Arg::Value(lit(LitValue::Float(-0.0), None)),
        Arg::Value(lit(LitValue::Float(f64::INFINITY), None)),
        Arg::Value(lit(LitValue::Float(f64::NEG_INFINITY), None)),
        Arg::Value(lit(LitValue::Float(-f64::NAN), None)),
        Arg::Value(lit(LitValue::Int(i128::MIN), Some(ScalarType::I64))),
        Arg::Value(lit(LitValue::Int(u64::MAX.into()), None)),
        Arg::Value(lit(LitValue::Bool(false), Some(ScalarType::Bool))),
        Arg::Value(ArgValue::Bytes(vec![0x0a, 0xff, 0])),
        Arg::Value(ArgValue::Local { elem: Type::vector(ScalarType::I32, 3), count: 16 }),
    ];
    let cmd = KernelCommand { kernel: h(0), launch: Launch::Range(vec![8, 2]), args };
    let text = crate::text::print(&graph_module(vec![node("k", NodeKind::Kernel(cmd))], vec![]));
    let expected = "%k = kernel @k range(8, 2) args(2.0, 1e-7 : f32, -0.0, inf, -inf, nan, \
                    -170141183460469231731687303715884105728 : i64, 18446744073709551615, false : bool, \
                    x\"0aff00\", local vec3<i32>[16])";
    assert!(text.contains(expected), "{text}");
}

#[test]
fn strings_are_escaped() {
    let task = crate::graph::HostTaskCommand { callback: "a\"b\\c\nd\te\u{1}\u{7f}é😀".into(), access: vec![] };
    let text = crate::text::print(&graph_module(vec![node("h", NodeKind::HostTask(task))], vec![]));
    assert!(text.contains(r#"%h = host_task "a\"b\\c\nd\te\u{1}\u{7f}é😀""#), "{text}");
}

#[test]
fn memory_declarations_are_grouped_other_items_separated() {
    let mut m = Module::default();
    let a = m.memories.append(usm("a", UsmKind::Shared), crate::span::Span::UNDEFINED);
    let b = m.memories.append(usm("b", UsmKind::Host), crate::span::Span::UNDEFINED);
    let g = m.graphs.append(Graph { name: "g".into(), device: 3, ..Graph::default() }, crate::span::Span::UNDEFINED);
    let c = m.memories.append(usm("c", UsmKind::Device), crate::span::Span::UNDEFINED);
    m.items = vec![Item::Memory(a), Item::Memory(b), Item::Graph(g), Item::Memory(c)];
    m.trailing_comments = vec![" end".into()];
    assert_eq!(
        crate::text::print(&m),
        "usm @a : f32[4] shared\nusm @b : f32[4] host\n\ngraph @g device(3) {\n}\n\nusm @c : f32[4]\n\n// end\n"
    );
    assert_eq!(crate::text::print(&Module::default()), "");
}

#[test]
fn dangling_handles_print_as_invalid_without_panicking() {
    let nodes = vec![
        node("f", NodeKind::AsyncFree { alloc: h(7) }),
        node("s", NodeKind::Subgraph { graph: h(9) }),
        node("c", NodeKind::Memset { dst: Pointer { base: MemRef::Memory(h(5)), offset: 0 }, value: 1, bytes: 2 }),
    ];
    let edges = vec![
        Edge { from: h(42), to: h(0), kind: EdgeKind::DependsOn },
        Edge { from: h(0), to: h(99), kind: EdgeKind::Event },
    ];
    let mut m = graph_module(nodes, edges);
    m.items.push(Item::Kernel(h(3)));
    let text = crate::text::print(&m);
    assert!(text.contains("%f = async_free %<invalid> after(%<invalid>)"), "{text}");
    assert!(text.contains("%s = subgraph @<invalid>"), "{text}");
    assert!(text.contains("%c = memset @<invalid>, 1, 2"), "{text}");
}

#[test]
fn a_region_cycle_does_not_exhaust_the_stack() {
    // An op whose body contains itself: only a broken API-built module can hold this.
    let mut body = Body::default();
    let n = body.values.append(
        Value { name: "n".into(), ty: ValueType::Data(Type::U32), def: ValueDef::Param(0) },
        crate::span::Span::UNDEFINED,
    );
    let op = body.ops.append(
        Op { kind: OpKind::GroupBarrier, results: vec![], comments: Comments::default() },
        crate::span::Span::UNDEFINED,
    );
    let region = Region { ops: vec![op], closing_comments: vec![] };
    body.ops[op].kind = OpKind::For { var: n, lo: n, hi: n, step: n, carried: vec![], body: region.clone() };
    body.entry = region;
    let mut m = Module::default();
    let k = m.kernels.append(
        Kernel {
            name: "k".into(),
            params: vec![],
            body: KernelBody::Ir(body),
            comments: Comments::default(),
            param_spans: Default::default(),
        },
        crate::span::Span::UNDEFINED,
    );
    m.items.push(Item::Kernel(k));
    let text = crate::text::print(&m);
    assert!(text.contains("// regions nested too deep to print"));
}
