//! Verifier invariants that only modules built through the API can break (the parser
//! cannot produce them): dangling handles, listing order, edge provenance, value
//! definitions. Each case has a near miss that verifies clean.

mod verify_support;

use cmdgraph_ir::kernel::{MemBase, OpKind, Region, ValueDef};
use cmdgraph_ir::verify::VerifyError;
use cmdgraph_ir::*;
use verify_support::*;

/// `usm @x : f32[64]`, a kernel `@touch`, and a graph `@g` with `%k = kernel @touch range(64) args(@x)`.
fn base() -> (Module, Handle<Kernel>, Handle<MemoryObject>, GraphBuilder) {
    let mut m = Module::default();
    let x = usm(&mut m, "x", 64);
    let k = touch_kernel(&mut m, "touch");
    let mut g = GraphBuilder::new("g");
    g.node("k", launch(k, 64, vec![ptr(MemRef::Memory(x))]));
    (m, k, x, g)
}

/// The node `base` makes, `%k`, which writes all of `@x`.
fn first_node() -> Handle<Node> {
    Handle::from_usize(0).unwrap()
}

#[test]
fn base_module_is_clean() {
    let (mut m, _, _, g) = base();
    g.finish(&mut m);
    assert_clean(&m);
}

#[test]
fn dangling_kernel_handle_is_diagnosed_not_panicked() {
    for bad in [true, false] {
        let (mut m, k, x, mut g) = base();
        let kernel = if bad { Handle::from_usize(k.index() + 7).unwrap() } else { k };
        let other = g.node("other", launch(kernel, 64, vec![ptr(MemRef::Memory(x))]));
        // Ordered after %k, which writes @x too (else a data race, E0280).
        g.inline(first_node(), other, EdgeKind::DependsOn);
        g.finish(&mut m);
        if !bad {
            assert_clean(&m);
            continue;
        }
        assert_codes(&m, &["E0200"]);
        let errors = verify::check(&m);
        assert_eq!(
            errors[0],
            VerifyError::DanglingHandle { what: "kernel", index: k.index() + 7, span: Span::UNDEFINED }
        );
    }
}

#[test]
fn dangling_memory_and_node_handles() {
    let (mut m, k, _, mut g) = base();
    let far_mem = Handle::from_usize(99).unwrap();
    let far_node = Handle::from_usize(99).unwrap();
    g.node("a", launch(k, 64, vec![ptr(MemRef::Memory(far_mem))]));
    g.node("b", launch(k, 64, vec![ptr(MemRef::Alloc(far_node))]));
    let c = g.node("c", NodeKind::Empty);
    g.inline(far_node, c, EdgeKind::DependsOn);
    g.node("f", NodeKind::AsyncFree { alloc: far_node });
    g.node("d", NodeKind::Dynamic { dcg: Handle::from_usize(3).unwrap() });
    g.node("s", NodeKind::Subgraph { graph: Handle::from_usize(42).unwrap() });
    g.finish(&mut m);
    let found = codes(&m);
    assert_eq!(found, vec!["E0200"; 6], "{:#?}", verify::check(&m));
}

#[test]
fn dangling_handles_in_a_kernel_body() {
    for bad in [true, false] {
        let mut m = Module::default();
        let dg = memory(&mut m, "g", MemoryKind::DeviceGlobal(DeviceGlobal::default()), Type::F32, 4);
        let (mut k, _) = KernelBuilder::new("k", &[]);
        let i = k.op(OpKind::Builtin(kernel::Builtin::GlobalId, 0), &[("i", U32)])[0];
        let f = k.op(OpKind::Const(Literal { value: LitValue::Float(1.0), ty: None }, Type::F32), &[("f", F32)])[0];
        let far = Handle::from_usize(50).unwrap();
        k.op(OpKind::Unary(kernel::UnaryOp::Neg, if bad { far } else { f }), &[("r", F32)]);
        if bad {
            k.body.entry.ops.push(Handle::from_usize(77).unwrap());
        }
        let mem = if bad { Handle::from_usize(5).unwrap() } else { dg };
        k.op(OpKind::Load { mem: MemBase::Global(mem), index: if bad { far } else { i } }, &[("l", F32)]);
        k.finish(&mut m);
        if bad {
            assert_eq!(codes(&m), vec!["E0200"; 4], "{:#?}", verify::check(&m));
        } else {
            assert_clean(&m);
        }
    }
}

#[test]
fn duplicate_and_invalid_names_from_the_api() {
    for bad in [true, false] {
        let (mut m, k, x, mut g) = base();
        let second = g.node(if bad { "k" } else { "k2" }, launch(k, 64, vec![ptr(MemRef::Memory(x))]));
        g.inline(first_node(), second, EdgeKind::DependsOn);
        g.node(if bad { "has space" } else { "has_no_space" }, NodeKind::Empty);
        g.finish(&mut m);
        usm(&mut m, if bad { "touch" } else { "touch2" }, 4);
        let mut found = codes(&m);
        found.sort();
        let expected: Vec<&str> = if bad { vec!["E0201", "E0201", "E0202"] } else { vec![] };
        assert_eq!(found, expected);
    }
}

#[test]
fn unlisted_and_twice_listed_entities() {
    for bad in [true, false] {
        let (mut m, _, _, mut g) = base();
        let lonely = g.g.nodes.append(
            Node {
                device: None,
                name: "lonely".into(),
                kind: NodeKind::Empty,
                queue: None,
                comments: Comments::default(),
            },
            Span::UNDEFINED,
        );
        if !bad {
            g.g.body.push(Stmt::Node(lonely));
        }
        g.finish(&mut m);
        if bad {
            let first = m.items[0];
            m.items.push(first);
        }
        let errors = verify::check(&m);
        if !bad {
            assert!(errors.is_empty(), "{errors:#?}");
            continue;
        }
        assert_eq!(errors.len(), 2, "{errors:#?}");
        assert!(errors.iter().all(|e| e.code() == "E0203"));
        assert!(errors.iter().any(|e| matches!(e, VerifyError::OrderList { entity, problem, .. }
            if entity == "%lonely" && problem.contains("not listed"))));
        assert!(errors.iter().any(|e| matches!(e, VerifyError::OrderList { entity, problem, .. }
            if entity == "@x" && problem.contains("more than once"))));
    }
}

#[test]
fn nodes_listed_out_of_creation_order() {
    let (mut m, _, _, mut g) = base();
    let a = g.node("a", NodeKind::Empty);
    let b = g.node("b", NodeKind::Empty);
    let n = g.g.body.len();
    g.g.body.swap(n - 2, n - 1);
    let _ = (a, b);
    g.finish(&mut m);
    assert_codes(&m, &["E0203"]);

    let (mut m, _, _, mut g) = base();
    g.node("a", NodeKind::Empty);
    g.node("b", NodeKind::Empty);
    g.finish(&mut m);
    assert_clean(&m);
}

#[test]
fn dynamic_parameter_defined_after_its_use() {
    let (mut m, k, _, mut g) = base();
    let p = g.g.dyn_params.append(
        DynParam {
            name: "p".into(),
            value: ArgValue::Pointer(Pointer { base: MemRef::Memory(Handle::from_usize(0).unwrap()), offset: 0 }),
            comments: Comments::default(),
        },
        Span::UNDEFINED,
    );
    let u = g.node("u", launch(k, 64, vec![Arg::Dyn(p)]));
    g.inline(first_node(), u, EdgeKind::DependsOn);
    g.g.body.push(Stmt::DynParam(p));
    let mut fixed = GraphBuilder { g: g.g.clone() };
    g.finish(&mut m.clone());
    let mut bad = m.clone();
    GraphBuilder { g: fixed.g.clone() }.finish(&mut bad);
    assert_codes(&bad, &["E0204"]);
    // Near miss: the same statements with the `dyn` first.
    let last = fixed.g.body.pop().unwrap();
    fixed.g.body.insert(0, last);
    fixed.finish(&mut m);
    assert_clean(&m);
}

#[test]
fn vector_of_five_lanes() {
    let mut m = Module::default();
    memory(&mut m, "v", MemoryKind::Usm(UsmKind::Device), Type::vector(ScalarType::F32, 5), 4);
    assert_codes(&m, &["E0205"]);
    let mut m = Module::default();
    memory(&mut m, "v", MemoryKind::Usm(UsmKind::Device), Type::vector(ScalarType::F32, 4), 4);
    assert_clean(&m);
}

#[test]
fn edge_statement_with_inline_provenance() {
    for (kind, expected) in [(EdgeKind::DependsOn, vec!["E0252"]), (EdgeKind::MakeEdge, vec![])] {
        let (mut m, _, _, mut g) = base();
        let a = g.node("a", NodeKind::Empty);
        let b = g.node("b", NodeKind::Empty);
        let e = g.g.edges.append(Edge { from: a, to: b, kind }, Span::UNDEFINED);
        g.g.body.push(Stmt::MakeEdge(e));
        g.finish(&mut m);
        assert_eq!(codes(&m), expected);
    }
}

#[test]
fn make_edge_without_statement() {
    let (mut m, _, _, mut g) = base();
    let a = g.node("a", NodeKind::Empty);
    let b = g.node("b", NodeKind::Empty);
    g.g.edges.append(Edge { from: a, to: b, kind: EdgeKind::MakeEdge }, Span::UNDEFINED);
    let mut fixed = m.clone();
    let mut gf = GraphBuilder { g: g.g.clone() };
    g.finish(&mut m);
    assert_codes(&m, &["E0252"]);
    gf.g.body.push(Stmt::MakeEdge(Handle::from_usize(0).unwrap()));
    gf.finish(&mut fixed);
    assert_clean(&fixed);
}

#[test]
fn edges_out_of_creation_order() {
    // %b is created with an inline edge from %a, but the make_edge edge created before it
    // in the arena is only stated after %b.
    let (mut m, _, _, mut g) = base();
    let a = g.node("a", NodeKind::Empty);
    let c = g.node("c", NodeKind::Empty);
    let e_make = g.g.edges.append(Edge { from: a, to: c, kind: EdgeKind::MakeEdge }, Span::UNDEFINED);
    let b = g.node("b", NodeKind::Empty);
    g.inline(a, b, EdgeKind::DependsOn);
    g.g.body.push(Stmt::MakeEdge(e_make));
    g.finish(&mut m);
    let errors = verify::check(&m);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(matches!(&errors[0], VerifyError::EdgeProvenance { edge, .. } if edge == "%a -> %c"));

    // Near miss: the edge statement right where the edge was created.
    let (mut m, _, _, mut g) = base();
    let a = g.node("a", NodeKind::Empty);
    let c = g.node("c", NodeKind::Empty);
    g.make_edge(a, c);
    let b = g.node("b", NodeKind::Empty);
    g.inline(a, b, EdgeKind::DependsOn);
    g.finish(&mut m);
    assert_clean(&m);
}

#[test]
fn inline_edge_from_a_later_node() {
    let (mut m, _, _, mut g) = base();
    let a = g.node("a", NodeKind::Empty);
    let b = g.node("b", NodeKind::Empty);
    g.inline(b, a, EdgeKind::DependsOn);
    g.finish(&mut m);
    assert_codes(&m, &["E0253"]);
    let errors = verify::check(&m);
    assert!(matches!(&errors[0], VerifyError::EdgeBeforeEndpoint { node, .. } if node == "%b"));

    // Near miss: the same edge, created with %b.
    let (mut m, _, _, mut g) = base();
    let a = g.node("a", NodeKind::Empty);
    let b = g.node("b", NodeKind::Empty);
    g.inline(a, b, EdgeKind::DependsOn);
    g.finish(&mut m);
    assert_clean(&m);
}

#[test]
fn free_and_pointer_naming_a_non_allocation() {
    let (mut m, k, _, mut g) = base();
    let kn = Handle::from_usize(0).unwrap();
    let f = g.node("f", NodeKind::AsyncFree { alloc: kn });
    g.inline(kn, f, EdgeKind::DependsOn);
    let u = g.node("u", launch(k, 64, vec![ptr(MemRef::Alloc(kn))]));
    g.inline(kn, u, EdgeKind::DependsOn);
    g.finish(&mut m);
    assert_codes(&m, &["E0241", "E0242"]);
}

#[test]
fn freeing_an_allocation_is_fine() {
    let (mut m, k, _, mut g) = base();
    let t = g.node("t", malloc(64));
    let u = g.node("u", launch(k, 64, vec![ptr(MemRef::Alloc(t))]));
    g.inline(t, u, EdgeKind::DependsOn);
    let f = g.node("f", NodeKind::AsyncFree { alloc: t });
    g.inline(u, f, EdgeKind::DependsOn);
    g.finish(&mut m);
    assert_clean(&m);
}

#[test]
fn untyped_dynamic_scalar() {
    let (mut m, _, _, mut g) = base();
    g.dyn_param("a", ArgValue::Scalar(Literal { value: LitValue::Float(1.0), ty: None }));
    let mut ok = m.clone();
    let mut g2 = GraphBuilder { g: g.g.clone() };
    g.finish(&mut m);
    assert_codes(&m, &["E0220"]);
    g2.g.dyn_params[Handle::from_usize(0).unwrap()].value =
        ArgValue::Scalar(Literal { value: LitValue::Float(1.0), ty: Some(ScalarType::F32) });
    g2.finish(&mut ok);
    assert_clean(&ok);
}

#[test]
fn parameter_without_its_body_value() {
    for (ty, expected) in [(U32, vec!["E0300"]), (F32, vec![])] {
        let mut m = Module::default();
        let (mut k, p) = KernelBuilder::new("k", &[("a", ParamType::Value(Type::F32))]);
        k.body.values[p[0]].ty = ty;
        k.finish(&mut m);
        assert_eq!(codes(&m), expected);
    }
}

#[test]
fn op_listed_twice_and_a_region_that_contains_its_own_op() {
    for bad in [true, false] {
        let mut m = Module::default();
        let (mut k, _) = KernelBuilder::new("k", &[]);
        let c = k.op(OpKind::Const(Literal { value: LitValue::Int(0), ty: None }, Type::U32), &[("z", U32)])[0];
        if bad {
            let first = k.body.entry.ops[0];
            k.body.entry.ops.push(first);
        }
        // A `for` whose body lists the `for` itself: must not loop forever.
        let var = k.value("i", U32);
        let (f, _) =
            k.detached(OpKind::For { var, lo: c, hi: c, step: c, carried: vec![], body: Region::default() }, &[]);
        k.body.values[var].def = ValueDef::LoopVar(f);
        let (inner, _) = k.detached(OpKind::GroupBarrier, &[]);
        if let OpKind::For { body, .. } = &mut k.body.ops[f].kind {
            body.ops.push(if bad { f } else { inner });
        }
        k.body.entry.ops.push(f);
        k.finish(&mut m);
        let expected: Vec<&str> = if bad { vec!["E0302", "E0302"] } else { vec![] };
        assert_eq!(codes(&m), expected, "{:#?}", verify::check(&m));
    }
}

#[test]
fn value_with_a_wrong_definition_and_one_defined_twice() {
    for bad in [true, false] {
        let mut m = Module::default();
        let (mut k, _) = KernelBuilder::new("k", &[]);
        let c = k.op(OpKind::Builtin(kernel::Builtin::GlobalId, 0), &[("i", U32)])[0];
        let (op, _) = k.detached(OpKind::Builtin(kernel::Builtin::LocalId, 0), &[]);
        if bad {
            k.body.values[c].def = ValueDef::Param(0);
            k.body.ops[op].results.push(c);
        } else {
            let l = k.value("l", U32);
            k.body.values[l].def = ValueDef::Result(op, 0);
            k.body.ops[op].results.push(l);
        }
        k.body.entry.ops.push(op);
        k.finish(&mut m);
        let expected: Vec<&str> = if bad { vec!["E0303", "E0303"] } else { vec![] };
        assert_eq!(codes(&m), expected, "{:#?}", verify::check(&m));
    }
}

#[test]
fn result_count_and_type_from_the_api() {
    let mut m = Module::default();
    let (mut k, _) = KernelBuilder::new("k", &[]);
    k.op(OpKind::Builtin(kernel::Builtin::GlobalId, 0), &[("i", F32)]);
    k.op(OpKind::GroupBarrier, &[("nothing", U32)]);
    k.finish(&mut m);
    assert_codes(&m, &["E0306", "E0305"]);

    let mut m = Module::default();
    let (mut k, _) = KernelBuilder::new("k", &[]);
    k.op(OpKind::Builtin(kernel::Builtin::GlobalId, 0), &[("i", U32)]);
    k.op(OpKind::GroupBarrier, &[]);
    k.finish(&mut m);
    assert_clean(&m);
}

/// Nests `depth` result-less `if`s in the entry region.
fn nested_ifs(depth: usize) -> Module {
    let mut m = Module::default();
    let (mut k, _) = KernelBuilder::new("k", &[]);
    let t = k.op(
        OpKind::Const(Literal { value: LitValue::Bool(true), ty: None }, Type::BOOL),
        &[("t", ValueType::Data(Type::BOOL))],
    )[0];
    let mut inner = Region::default();
    for _ in 0..depth {
        let (op, _) =
            k.detached(OpKind::If { cond: t, result_types: vec![], then_region: inner, else_region: None }, &[]);
        inner = Region { ops: vec![op], closing_comments: vec![] };
    }
    k.body.entry.ops.extend(inner.ops);
    k.finish(&mut m);
    m
}

#[test]
fn nesting_limit() {
    assert_codes(&nested_ifs(300), &["E0331"]);
    assert_clean(&nested_ifs(256));
}

#[test]
fn spans_point_at_api_provided_locations() {
    // Spans given through the API are the ones reported.
    let (mut m, _, _, mut g) = base();
    let a = g.node("a", NodeKind::Empty);
    let e = g.inline(a, a, EdgeKind::DependsOn);
    g.g.edges.set_span(e, Span::new(10, 14));
    g.finish(&mut m);
    let errors = verify::check(&m);
    assert_eq!(errors, vec![VerifyError::SelfEdge { node: "%a".into(), span: Span::new(10, 14) }]);
}

#[test]
fn builtin_dimension_three() {
    // The parser only reads dimensions 0..=2; the API can hold any u8.
    for (dim, expected) in [(3u8, vec!["E0310"]), (2, vec![])] {
        let mut m = Module::default();
        let (mut k, _) = KernelBuilder::new("k", &[]);
        k.op(OpKind::Builtin(kernel::Builtin::GroupId, dim), &[("g", U32)]);
        k.finish(&mut m);
        assert_eq!(codes(&m), expected);
    }
}

#[test]
fn atomic_expected_value_only_for_cmpxchg() {
    let build = |op: kernel::AtomicOp, with_expected: bool| {
        let mut m = Module::default();
        let (mut k, p) =
            KernelBuilder::new("k", &[("x", ParamType::Buffer { elem: Type::U32, access: Access::ReadWrite })]);
        let i = k.op(OpKind::Builtin(kernel::Builtin::GlobalId, 0), &[("i", U32)])[0];
        let expected = with_expected.then_some(i);
        k.op(OpKind::Atomic { op, mem: MemBase::Value(p[0]), index: i, value: i, expected }, &[("old", U32)]);
        k.finish(&mut m);
        codes(&m)
    };
    assert_eq!(build(kernel::AtomicOp::CompareExchange, false), vec!["E0322"]);
    assert_eq!(build(kernel::AtomicOp::Add, true), vec!["E0322"]);
    assert!(build(kernel::AtomicOp::CompareExchange, true).is_empty());
    assert!(build(kernel::AtomicOp::Add, false).is_empty());
}

/// `%r = for %i = %z to %z step %z carry(%acc = %init) { yield %acc }` with `%acc` of type
/// `carried` and `%init` a `u32`.
fn loop_with_carried(carried: ValueType) -> Module {
    let mut m = Module::default();
    let (mut k, _) = KernelBuilder::new("k", &[]);
    let z = k.op(OpKind::Const(Literal { value: LitValue::Int(0), ty: None }, Type::U32), &[("z", U32)])[0];
    let var = k.value("i", U32);
    let acc = k.value("acc", carried);
    let (y, _) = k.detached(OpKind::Yield(vec![acc]), &[]);
    let body = Region { ops: vec![y], closing_comments: vec![] };
    let (f, _) = k.detached(OpKind::For { var, lo: z, hi: z, step: z, carried: vec![(acc, z)], body }, &[("r", U32)]);
    k.body.values[var].def = ValueDef::LoopVar(f);
    k.body.values[acc].def = ValueDef::Carried(f, 0);
    k.body.entry.ops.push(f);
    k.finish(&mut m);
    m
}

#[test]
fn carried_value_of_another_type_than_its_initial_value() {
    // The parser gives carried values their initial value's type; the API may not.
    assert_eq!(codes(&loop_with_carried(F32)), vec!["E0324"]);
    assert_clean(&loop_with_carried(U32));
}

#[test]
fn duplicate_value_names_and_a_use_out_of_scope() {
    // The parser rejects both (E0102, E0104); the API can build them.
    for bad in [true, false] {
        let mut m = Module::default();
        let (mut k, _) = KernelBuilder::new("k", &[("a", ParamType::Value(Type::F32))]);
        k.op(OpKind::Builtin(kernel::Builtin::GlobalId, 0), &[(if bad { "a" } else { "b" }, U32)]);
        let t = k.op(
            OpKind::Const(Literal { value: LitValue::Bool(true), ty: None }, Type::BOOL),
            &[("t", ValueType::Data(Type::BOOL))],
        )[0];
        let (inner, vs) = k.detached(OpKind::Builtin(kernel::Builtin::LocalId, 0), &[("inner", U32)]);
        let mut then_region = Region { ops: vec![inner], closing_comments: vec![] };
        let (late, _) = k.detached(OpKind::Unary(kernel::UnaryOp::Not, vs[0]), &[("late", U32)]);
        if !bad {
            then_region.ops.push(late);
        }
        k.op(OpKind::If { cond: t, result_types: vec![], then_region, else_region: None }, &[]);
        if bad {
            k.body.entry.ops.push(late);
        }
        k.finish(&mut m);
        let errors = verify::check(&m);
        if !bad {
            assert!(errors.is_empty(), "{errors:#?}");
            continue;
        }
        let found: Vec<&str> = errors.iter().map(VerifyError::code).collect();
        assert_eq!(found, vec!["E0301", "E0304"], "{errors:#?}");
        assert!(matches!(&errors[1], VerifyError::ValueNotInScope { name, later: false, .. } if name == "%inner"));
    }
}

#[test]
fn use_before_definition_in_a_kernel() {
    for bad in [true, false] {
        let mut m = Module::default();
        let (mut k, _) = KernelBuilder::new("k", &[]);
        let (def, v) = k.detached(OpKind::Builtin(kernel::Builtin::GlobalId, 0), &[("v", U32)]);
        let (user, _) = k.detached(OpKind::Unary(kernel::UnaryOp::Not, v[0]), &[("user", U32)]);
        k.body.entry.ops = if bad { vec![user, def] } else { vec![def, user] };
        k.finish(&mut m);
        let errors = verify::check(&m);
        if bad {
            assert!(matches!(&errors[..], [VerifyError::ValueNotInScope { later: true, .. }]), "{errors:#?}");
        } else {
            assert!(errors.is_empty(), "{errors:#?}");
        }
    }
}
