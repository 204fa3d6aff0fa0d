//! Property tests: the verifier never panics on arbitrary API-built modules (dangling
//! handles, wrong kinds, cycles, nonsense bodies), is deterministic, and `verify` fails
//! exactly when `check` finds something, with one diagnostic per error.

use cmdgraph_ir::kernel::{Body, Builtin, MemBase, Op, OpKind, Region, UnaryOp, Value, ValueDef, ValueType};
use cmdgraph_ir::*;
use proptest::prelude::*;

fn h<T>(i: u8) -> Handle<T> {
    Handle::from_usize(i as usize).expect("small index")
}

fn memref(i: u8) -> MemRef {
    if i.is_multiple_of(2) {
        MemRef::Memory(h(i / 2 % 5))
    } else {
        MemRef::Alloc(h(i / 2))
    }
}

fn arg_value(kind: u8, a: u8) -> ArgValue {
    match kind % 5 {
        0 => ArgValue::Scalar(Literal { value: LitValue::Int(a as i128 - 3), ty: None }),
        1 => ArgValue::Pointer(Pointer { base: memref(a), offset: (a as u64) * 4 }),
        2 => ArgValue::Accessor(Accessor {
            buffer: memref(a),
            mode: Access::ALL[a as usize % 4],
            range: (a.is_multiple_of(3)).then_some((a as u64, 3)),
        }),
        3 => ArgValue::Bytes(vec![0; a as usize % 9]),
        _ => ArgValue::Local { elem: Type::F32, count: a as u64 % 3 },
    }
}

fn node_kind(kind: u8, a: u8, b: u8, c: u8) -> NodeKind {
    let ptr = |x: u8| Pointer { base: memref(x), offset: x as u64 };
    let args = vec![
        Arg::Value(arg_value(a, b)),
        if c.is_multiple_of(2) { Arg::Dyn(h(c % 4)) } else { Arg::Value(arg_value(c, a)) },
    ];
    match kind % 15 {
        0 => NodeKind::Empty,
        1 => NodeKind::Kernel(KernelCommand {
            kernel: h(a % 3),
            launch: match b % 3 {
                0 => Launch::SingleTask,
                1 => Launch::Range(vec![c as u64; (a % 5) as usize]),
                _ => Launch::NdRange { global: vec![c as u64, 8], local: vec![b as u64 % 5], offset: vec![] },
            },
            args,
        }),
        2 => NodeKind::Memcpy { dst: ptr(a), src: ptr(b), bytes: c as u64 * 8 },
        3 => NodeKind::Memset { dst: ptr(a), value: b, bytes: c as u64 },
        4 => NodeKind::Memfill {
            dst: ptr(a),
            pattern: Literal { value: LitValue::Float(1.5), ty: (b.is_multiple_of(2)).then_some(ScalarType::F32) },
            count: c as u64,
        },
        5 => NodeKind::Prefetch { ptr: ptr(a), bytes: b as u64 },
        6 => NodeKind::Memadvise { ptr: ptr(a), bytes: b as u64, advice: 1 },
        7 => NodeKind::Barrier { wait: vec![h(a % 9), h(b % 9)] },
        8 => NodeKind::HostTask(HostTaskCommand {
            callback: "cb".into(),
            access: vec![MemAccess { mem: memref(a), mode: Access::ALL[b as usize % 4] }],
        }),
        9 => NodeKind::Subgraph { graph: h(a % 3) },
        10 => NodeKind::AsyncMalloc {
            elem: Type::vector(ScalarType::F32, 1 + a % 5),
            count: b as u64,
            kind: [UsmKind::Device, UsmKind::Host][c as usize % 2],
            zero_init: false,
        },
        11 => NodeKind::AsyncFree { alloc: h(a % 9) },
        12 => NodeKind::Native(HostTaskCommand { callback: "n".into(), access: vec![] }),
        13 => NodeKind::Comm(cmdgraph_ir::comm::CommCommand {
            op: cmdgraph_ir::comm::CommOp::Send { peer: b as u32, tag: c as u32 },
            ptr: ptr(a),
            bytes: c as u64,
        }),
        _ => NodeKind::Dynamic { dcg: h(a % 3) },
    }
}

/// A kernel body of random ops over random (possibly dangling or out-of-scope) values.
fn body(ops: &[(u8, u8, u8)]) -> Body {
    let mut body = Body::default();
    let mut region = Region::default();
    for (i, &(kind, a, b)) in ops.iter().enumerate() {
        let v = |x: u8| h::<Value>(x % (ops.len() as u8 + 2));
        let kind = match kind % 9 {
            0 => OpKind::Builtin(Builtin::GlobalId, a % 4),
            1 => OpKind::Unary(UnaryOp::Sqrt, v(a)),
            2 => OpKind::Binary(kernel::BinaryOp::Add, v(a), v(b)),
            3 => OpKind::Load { mem: MemBase::Value(v(a)), index: v(b) },
            4 => OpKind::Store { mem: MemBase::Global(h(a % 6)), index: v(a), value: v(b) },
            5 => OpKind::If {
                cond: v(a),
                result_types: vec![Type::F32],
                then_region: Region::default(),
                else_region: None,
            },
            6 => OpKind::Yield(vec![v(a)]),
            7 => OpKind::Loop {
                carried: vec![(v(a), v(b))],
                body: Region { ops: vec![h(b % 8)], closing_comments: vec![] },
            },
            _ => OpKind::For {
                var: v(a),
                lo: v(b),
                hi: v(a),
                step: v(b),
                carried: vec![(v(b), v(a))],
                body: Region { ops: vec![h(a % 8)], closing_comments: vec![] },
            },
        };
        let result = body.values.append(
            Value {
                name: format!("v{i}"),
                ty: if a.is_multiple_of(3) { ValueType::Data(Type::U32) } else { ValueType::Data(Type::F32) },
                def: ValueDef::Result(h(i as u8), 0),
            },
            Span::UNDEFINED,
        );
        let op = body.ops.append(Op { kind, results: vec![result], comments: Comments::default() }, Span::UNDEFINED);
        region.ops.push(op);
    }
    body.entry = region;
    body
}

type NodeSpec = (u8, u8, u8, u8);

fn build(nodes: &[NodeSpec], edges: &[(u8, u8, u8)], ops: &[(u8, u8, u8)], subgraph_self: bool) -> Module {
    let mut m = Module::default();
    let kinds = [
        MemoryKind::Usm(UsmKind::Device),
        MemoryKind::Buffer,
        MemoryKind::DeviceGlobal(DeviceGlobal::default()),
        MemoryKind::Usm(UsmKind::Host),
    ];
    for (i, kind) in kinds.into_iter().enumerate() {
        let mem = m.memories.append(
            MemoryObject {
                home: Default::default(),
                name: format!("m{i}"),
                elem: Type::F32,
                count: 16,
                kind,
                comments: Comments::default(),
            },
            Span::UNDEFINED,
        );
        m.items.push(Item::Memory(mem));
    }
    let k = m.kernels.append(
        Kernel {
            name: "k".into(),
            params: vec![
                kernel::Param { name: "p".into(), ty: kernel::ParamType::Value(Type::F32) },
                kernel::Param {
                    name: "b".into(),
                    ty: kernel::ParamType::Buffer { elem: Type::F32, access: Access::Read },
                },
            ],
            body: KernelBody::Ir(body(ops)),
            comments: Comments::default(),
            param_spans: Default::default(),
        },
        Span::UNDEFINED,
    );
    m.items.push(Item::Kernel(k));
    let mut g = Graph { name: "g".into(), ..Graph::default() };
    let q = g.queues.append(
        Queue { name: "q".into(), in_order: true, discard_events: true, comments: Comments::default() },
        Span::UNDEFINED,
    );
    g.body.push(Stmt::Queue(q));
    for i in 0..3u8 {
        let p = g.dyn_params.append(
            DynParam { name: format!("d{i}"), value: arg_value(i, i + 1), comments: Comments::default() },
            Span::UNDEFINED,
        );
        g.body.push(Stmt::DynParam(p));
    }
    let alt = |x: u8| match x % 3 {
        0 => Alternative::Kernel(KernelCommand { kernel: h(0), launch: Launch::Range(vec![4]), args: vec![] }),
        1 => Alternative::HostTask(HostTaskCommand { callback: "c".into(), access: vec![] }),
        _ => Alternative::Other(Box::new(NodeKind::Empty)),
    };
    let d = g.dcgs.append(
        DynCommandGroup {
            name: "dcg".into(),
            active: 1,
            alternatives: vec![alt(0), alt(nodes.len() as u8)],
            comments: Comments::default(),
        },
        Span::UNDEFINED,
    );
    g.body.push(Stmt::Dcg(d));
    for (i, &(kind, a, b, c)) in nodes.iter().enumerate() {
        let n = g.nodes.append(
            Node {
                device: None,
                name: format!("n{i}"),
                kind: node_kind(kind, a, b, c),
                queue: (c.is_multiple_of(3)).then_some(h(c % 2)),
                comments: Comments::default(),
            },
            Span::UNDEFINED,
        );
        g.body.push(Stmt::Node(n));
    }
    for &(from, to, kind) in edges {
        let kind = EdgeKind::ALL[kind as usize % 8];
        let e = g.edges.append(Edge { from: h(from % 10), to: h(to % 10), kind }, Span::UNDEFINED);
        if kind == EdgeKind::MakeEdge || from.is_multiple_of(4) {
            g.body.push(Stmt::MakeEdge(e));
        }
    }
    if subgraph_self {
        let n = g.nodes.append(
            Node {
                device: None,
                name: "self".into(),
                kind: NodeKind::Subgraph { graph: h(0) },
                queue: None,
                comments: Comments::default(),
            },
            Span::UNDEFINED,
        );
        g.body.push(Stmt::Node(n));
    }
    let gh = m.graphs.append(g, Span::UNDEFINED);
    m.items.push(Item::Graph(gh));
    m
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_and_is_deterministic(
        nodes in prop::collection::vec(any::<(u8, u8, u8, u8)>(), 0..10),
        edges in prop::collection::vec(any::<(u8, u8, u8)>(), 0..14),
        ops in prop::collection::vec(any::<(u8, u8, u8)>(), 0..10),
        subgraph_self in any::<bool>(),
    ) {
        let m = build(&nodes, &edges, &ops, subgraph_self);
        let first = verify::check(&m);
        let second = verify::check(&m);
        prop_assert_eq!(&first, &second);
        match verify::verify(&m) {
            Ok(()) => prop_assert!(first.is_empty()),
            Err(diags) => {
                prop_assert_eq!(diags.len(), first.len());
                for (d, e) in diags.iter().zip(&first) {
                    prop_assert_eq!(d.code, e.code());
                    prop_assert!(d.code.starts_with("E02") || d.code.starts_with("E03"));
                    prop_assert!(d.help.is_some());
                }
            }
        }
        if subgraph_self {
            prop_assert!(first.iter().any(|e| e.code() == "E0265"));
        }
    }
}
