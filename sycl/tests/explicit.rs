//! The explicit graph-building API (000 §8.2.1, §8.3, §8.4.6): node queries, edge
//! creation and provenance, every node type, dynamic objects, sub-graphs; each graph
//! round-trips through the text format and verifies, and those that compute are run.

mod common;

use cmdgraph_ir::kernel::BinaryOp;
use cmdgraph_ir::{EdgeKind, NodeType, Type};
use cmdgraph_sycl::*;
use common::*;

#[test]
fn nodes_in_creation_order_and_roots() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let a = g.add_empty(NodeProps::none()).unwrap();
    let b = g.add_empty(NodeProps::none()).unwrap();
    let c = g.add_empty(NodeProps::depends_on(&[&b, &a])).unwrap();
    let d = g.add_empty(NodeProps::none()).unwrap();
    g.make_edge(&d, &a).unwrap(); // an edge to an older node: creation order is not topological
    assert_eq!(g.get_nodes(), vec![a.clone(), b.clone(), c.clone(), d.clone()]);
    assert_eq!(g.get_root_nodes(), vec![b.clone(), d.clone()]);
    assert_eq!(c.get_predecessors(), vec![b.clone(), a.clone()], "in edge creation order");
    assert_eq!(a.get_successors(), vec![c.clone()]);
    assert_eq!(a.get_predecessors(), vec![d.clone()]);
    assert_eq!(
        edges(&g),
        vec![edge(&b, &c, EdgeKind::DependsOn), edge(&a, &c, EdgeKind::DependsOn), edge(&d, &a, EdgeKind::MakeEdge)]
    );
    let text = roundtrip(&g);
    assert!(text.contains(&format!("edge %{} -> %{}", d.name(), a.name())), "{text}");
    g.finalize(FinalizeProps::none()).unwrap();
}

#[test]
fn depends_on_all_leaves_takes_current_leaves() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let a = g.add_empty(NodeProps::none()).unwrap();
    let b = g.add_empty(NodeProps::depends_on(&[&a])).unwrap();
    let c = g.add_empty(NodeProps::none()).unwrap();
    let join = g.add_empty(NodeProps::depends_on(&[&a]).and_all_leaves()).unwrap();
    assert_eq!(
        edges(&g),
        vec![
            edge(&a, &b, EdgeKind::DependsOn),
            edge(&a, &join, EdgeKind::DependsOn),
            edge(&b, &join, EdgeKind::AllLeaves),
            edge(&c, &join, EdgeKind::AllLeaves),
        ]
    );
    roundtrip(&g);
}

/// Decision A5: an edge is made once. A repeated `make_edge` is a no-op, and when two
/// mechanisms of one `add` name the same source, the first (in the documented order)
/// makes the edge.
#[test]
fn duplicate_edges_are_made_once() {
    let env = Env::new();
    let g = env.graph(GraphProps::buffers());
    let a = g.add_empty(NodeProps::none()).unwrap();
    let b = g.add_empty(NodeProps::none()).unwrap();
    g.make_edge(&a, &b).unwrap();
    g.make_edge(&a, &b).unwrap();
    assert_eq!(edges(&g).len(), 1);

    let buf = Buffer::new(&env.ctx, None, Type::F32, 2).unwrap();
    let inc = env.kernel("increment");
    let w = g
        .add(
            |h| {
                let acc = h.access(&buf, Access::ReadWrite);
                h.parallel_for(&inc, 2, args![&acc]);
            },
            NodeProps::none(),
        )
        .unwrap();
    let r = g
        .add(
            |h| {
                let acc = h.access(&buf, Access::ReadWrite);
                h.parallel_for(&inc, 2, args![&acc]);
            },
            NodeProps::depends_on(&[&w]),
        )
        .unwrap();
    assert_eq!(r.get_predecessors(), vec![w.clone()]);
    assert_eq!(edges(&g)[1], edge(&w, &r, EdgeKind::DependsOn));
    roundtrip(&g);
}

/// Every command a command group can hold, with its node type; the memory commands run.
#[test]
fn every_node_type_from_the_explicit_api() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let src = env.usm_f32(&[1.0, 2.0, 3.0, 4.0]);
    let dst = env.usm_f32(&[0.0; 4]);
    let ints = Usm::device::<u32>(&env.ctx, 4).unwrap();
    env.ctx.register_host_task("noop", |_| Ok(()));
    env.ctx.register_native_command("native_noop", |_| Ok(()));
    let child = env.graph(GraphProps::none());
    child.add_empty(NodeProps::none()).unwrap();
    let child = child.finalize(FinalizeProps::none()).unwrap();

    let empty = g.add_empty(NodeProps::none()).unwrap();
    let copy = g.add(|h| h.memcpy(&dst, &src, 8), NodeProps::depends_on(&[&empty])).unwrap();
    let set = g.add(|h| h.memset(dst.at(2), 0xff, 4), NodeProps::depends_on(&[&copy])).unwrap();
    let fill = g.add(|h| h.fill(&ints, 7u32, 4), NodeProps::none()).unwrap();
    let pre = g.add(|h| h.prefetch(&src, 16), NodeProps::none()).unwrap();
    let adv = g.add(|h| h.mem_advise(&src, 16, 1), NodeProps::none()).unwrap();
    let host = g.add(|h| h.host_task("noop"), NodeProps::none()).unwrap();
    let nat = g.add(|h| h.ext_codeplay_enqueue_native_command("native_noop", &[]), NodeProps::none()).unwrap();
    let sub = g.add(|h| h.ext_oneapi_graph(&child), NodeProps::none()).unwrap();
    let kern = g.add(|h| h.parallel_for(&env.kernel("increment"), 4, args![&src]), NodeProps::none()).unwrap();
    let mut ptr = None;
    let alloc = g.add(|h| ptr = Some(h.async_malloc(UsmKind::Device, Type::F32, 4)), NodeProps::none()).unwrap();
    let free = g.add(|h| h.async_free(ptr.as_ref().unwrap()), NodeProps::depends_on(&[&alloc])).unwrap();
    let types: Vec<NodeType> =
        [&empty, &copy, &set, &fill, &pre, &adv, &host, &nat, &sub, &kern, &alloc, &free].map(Node::get_type).to_vec();
    assert_eq!(
        types,
        vec![
            NodeType::Empty,
            NodeType::Memcpy,
            NodeType::Memset,
            NodeType::Memfill,
            NodeType::Prefetch,
            NodeType::Memadvise,
            NodeType::HostTask,
            NodeType::NativeCommand,
            NodeType::Subgraph,
            NodeType::Kernel,
            NodeType::AsyncMalloc,
            NodeType::AsyncFree,
        ]
    );
    roundtrip(&g);
    let exec = g.finalize(FinalizeProps::none()).unwrap();
    // One 16-byte allocation in a pool of 256-byte units (docs/memory.md).
    assert_eq!(exec.get_required_mem_size(), 256);
    env.queue(QueueProps::none()).ext_oneapi_graph(&exec, &[]).unwrap();
    let d = dst.read::<f32>().unwrap();
    assert_eq!(&d[..2], &[1.0, 2.0]);
    assert!(d[2].is_nan(), "0xffffffff is a NaN");
    assert_eq!(d[3], 0.0);
    assert_eq!(ints.read::<u32>().unwrap(), vec![7; 4]);
    assert_eq!(src.read::<f32>().unwrap(), vec![2.0, 3.0, 4.0, 5.0]);
}

/// Dynamic parameters of each kind (scalar, pointer, accessor, raw bytes, work-group
/// memory) print as `dyn` statements and register the slots that name them.
#[test]
fn dynamic_parameters_of_every_kind() {
    let env = Env::new();
    let text = r#"
kernel @group_sum(%x: buf<f32, read>, %out: buf<f32, write>, %tile: local<f32>) {
  %g = global_id 0
  %l = local_id 0
  %n = local_range 0
  %v = load %x[%g]
  store %tile[%l], %v
  group_barrier
  %zero = const 0 : u32
  %first = eq %l, %zero
  if %first {
    %one = const 1 : u32
    %z = const 0.0 : f32
    %s = for %k = %zero to %n step %one carry(%acc = %z) {
      %t = load %tile[%k]
      %a = add %acc, %t
      yield %a
    }
    %grp = group_id 0
    store %out[%grp], %s
  }
}
"#;
    env.ctx.register_kernels_from_text(text).unwrap();
    let g = env.graph(GraphProps::buffers());
    let x = env.usm_f32(&(1..=8).map(|i| i as f32).collect::<Vec<_>>());
    let out = env.usm_f32(&[0.0; 4]);
    let y = env.usm_f32(&[0.0; 8]);
    let buf = Buffer::new(&env.ctx, None, Type::F32, 8).unwrap();
    let src = DynamicParameter::new(&g, &x).unwrap();
    let tile = DynamicParameter::new(&g, KArg::local(Type::F32, 4)).unwrap();
    let gain = DynamicParameter::new(&g, KArg::raw(&2.0f32.to_le_bytes())).unwrap();
    let acc = DynamicParameter::new(&g, buf.placeholder(Access::Write)).unwrap();
    let sum = g
        .add(
            |h| h.parallel_for_nd(&env.kernel("group_sum"), NdRange::new(8u64, 4u64), args![&src, &out, &tile]),
            NodeProps::none(),
        )
        .unwrap();
    g.add(|h| h.parallel_for(&env.kernel("scale"), 8, args![&src, &y, &gain]), NodeProps::none()).unwrap();
    g.add(
        |h| {
            h.require_dyn(&acc);
            h.parallel_for(&env.kernel("scale"), 8, args![&x, &acc, 1.0f32]);
        },
        NodeProps::none(),
    )
    .unwrap();
    let text = roundtrip(&g);
    for expected in ["= @usm", "= local f32[4]", "= x\"00000040\"", &format!("= acc(@{}, write)", buf.name())] {
        assert!(text.contains(expected), "missing `{expected}` in:\n{text}");
    }
    let exec = g.finalize(FinalizeProps::updatable()).unwrap();
    let q = env.queue(QueueProps::none());
    q.ext_oneapi_graph(&exec, &[]).unwrap();
    assert_eq!(&out.read::<f32>().unwrap()[..2], &[10.0, 26.0]);
    assert_eq!(y.read::<f32>().unwrap()[7], 16.0);
    assert_eq!(buf.host_access::<f32>().unwrap()[7], 8.0);
    // Work-group size 2 through the local-memory parameter and the nd-range.
    tile.update(KArg::local(Type::F32, 2)).unwrap();
    sum.update_nd_range(NdRange::new(8u64, 2u64)).unwrap();
    exec.update_node(&sum).unwrap();
    q.ext_oneapi_graph(&exec, &[]).unwrap();
    assert_eq!(out.read::<f32>().unwrap(), vec![3.0, 7.0, 11.0, 15.0]);
    // A value of another shape is refused.
    assert!(gain.update(1.0f32).is_err());
}

/// One executable graph used twice as a sub-graph is embedded once; after an update it is
/// another version, embedded under a fresh name. Sub-graphs nest.
#[test]
fn subgraphs_embed_and_nest() {
    let env = Env::new();
    let x = env.usm_f32(&[1.0]);
    let inner = env.graph(GraphProps::none());
    let p = DynamicParameter::new(&inner, 2.0f32).unwrap();
    let k = inner.add(|h| h.parallel_for(&env.kernel("scale"), 1, args![&x, &x.at(0), &p]), NodeProps::none());
    // Source and destination alias here on purpose: scale reads then writes element i.
    let k = k.unwrap();
    let inner_exec = inner.finalize(FinalizeProps::updatable()).unwrap();
    let middle = env.graph(GraphProps::none());
    let s1 = middle.add(|h| h.ext_oneapi_graph(&inner_exec), NodeProps::none()).unwrap();
    middle.add(|h| h.ext_oneapi_graph(&inner_exec), NodeProps::depends_on(&[&s1])).unwrap();
    let (m, _) = middle.to_module();
    assert_eq!(m.graphs.len(), 2, "one embedded child");
    p.update(3.0f32).unwrap();
    inner_exec.update_node(&k).unwrap();
    middle.add(|h| h.ext_oneapi_graph(&inner_exec), NodeProps::all_leaves()).unwrap();
    let text = roundtrip(&middle);
    assert!(text.contains(&format!("graph @{}.1", inner.name())), "{text}");
    let middle_exec = middle.finalize(FinalizeProps::none()).unwrap();
    let outer = env.graph(GraphProps::none());
    outer.add(|h| h.ext_oneapi_graph(&middle_exec), NodeProps::none()).unwrap();
    roundtrip(&outer);
    let exec = outer.finalize(FinalizeProps::none()).unwrap();
    env.queue(QueueProps::none()).ext_oneapi_graph(&exec, &[]).unwrap();
    assert_eq!(x.read::<f32>().unwrap(), vec![12.0], "2 * 2 * 3");
}

/// Kernels built in Rust with [`KernelBuilder`] print, parse back equal, and run.
#[test]
fn kernel_builder_kernels_round_trip_and_run() {
    let env = Env::new();
    let mut kb = KernelBuilder::new("axpb");
    let x = kb.buffer_param("x", Type::F32, Access::ReadWrite);
    let a = kb.value_param("a", Type::F32);
    let i = kb.global_id(0);
    let v = kb.load(x, i);
    let b = kb.const_f32(0.5);
    let ax = kb.binary(BinaryOp::Mul, v, a);
    let r = kb.binary(BinaryOp::Add, ax, b);
    kb.store(x, i, r);
    let k = env.ctx.register_kernel(kb.finish()).unwrap();
    let data = env.usm_f32(&[1.0, 2.0]);
    let g = env.graph(GraphProps::none());
    g.add(|h| h.parallel_for(&k, 2, args![&data, 4.0f32]), NodeProps::none()).unwrap();
    roundtrip(&g);
    env.queue(QueueProps::none()).ext_oneapi_graph(&g.finalize(FinalizeProps::none()).unwrap(), &[]).unwrap();
    assert_eq!(data.read::<f32>().unwrap(), vec![4.5, 8.5]);
    // Registering the same name twice is refused.
    assert!(env.ctx.register_kernel(KernelBuilder::new("axpb").finish()).is_err());
}

/// Kernels from text that call `func`s are registered with the calls inlined (the context
/// holds kernels only), and run; a builder kernel with a `bitcast` runs too.
#[test]
fn kernels_calling_functions_and_bitcasts_run() {
    let env = Env::new();
    let text = "func @twice_plus(%v: f32, %b: f32) -> f32 {\n  %t = add %v, %v\n  %r = add %t, %b\n  return %r\n}\n\n\
                kernel @tp(%x: buf<f32, read_write>, %b: f32) {\n  %i = global_id 0\n  %v = load %x[%i]\n  \
                %r = call @twice_plus(%v, %b)\n  store %x[%i], %r\n}\n";
    let ks = env.ctx.register_kernels_from_text(text).unwrap();
    assert_eq!(ks.len(), 1);
    let data = env.usm_f32(&[1.0, 2.5]);
    let g = env.graph(GraphProps::none());
    g.add(|h| h.parallel_for(&ks[0], 2, args![&data, 0.25f32]), NodeProps::none()).unwrap();
    roundtrip(&g);
    env.queue(QueueProps::none()).ext_oneapi_graph(&g.finalize(FinalizeProps::none()).unwrap(), &[]).unwrap();
    assert_eq!(data.read::<f32>().unwrap(), vec![2.25, 5.25]);

    let mut kb = KernelBuilder::new("bits");
    let x = kb.buffer_param("x", Type::F32, Access::ReadWrite);
    let i = kb.global_id(0);
    let v = kb.load(x, i);
    let b = kb.bitcast(v, Type::U32);
    let mask = kb.const_u32(0x7fff_ffff);
    let m = kb.binary(BinaryOp::And, b, mask);
    let r = kb.bitcast(m, Type::F32);
    kb.store(x, i, r);
    let k = env.ctx.register_kernel(kb.finish()).unwrap();
    let data = env.usm_f32(&[-1.5, 3.0]);
    let g = env.graph(GraphProps::none());
    g.add(|h| h.parallel_for(&k, 2, args![&data]), NodeProps::none()).unwrap();
    env.queue(QueueProps::none()).ext_oneapi_graph(&g.finalize(FinalizeProps::none()).unwrap(), &[]).unwrap();
    assert_eq!(data.read::<f32>().unwrap(), vec![1.5, 3.0], "the sign bit cleared");
}

/// Executing queues run submissions (asynchronously on a device: complete after `wait`); a
/// kernel through `set_arg`.
#[test]
fn executing_queue_runs_commands_now() {
    let env = Env::new();
    let q = env.queue(QueueProps { in_order: true, enable_profiling: true, ..QueueProps::none() });
    let x = env.usm_f32(&[1.0, 2.0]);
    let y = env.usm_f32(&[0.0; 2]);
    let e = q
        .submit(|h| {
            h.set_arg(0, &x);
            h.set_arg(1, &y);
            h.set_arg(2, 3.0f32);
            h.parallel_for(&env.kernel("scale"), 2, vec![]);
        })
        .unwrap();
    e.wait().unwrap();
    assert_eq!(e.get_status().unwrap(), EventStatus::Complete);
    assert!(e.get_profiling_info().is_ok());
    q.memcpy(&x, &y, 8, &[&e]).unwrap().wait().unwrap();
    assert_eq!(x.read::<f32>().unwrap(), vec![3.0, 6.0]);
    q.wait().unwrap();
}

/// A graph built on a `command_graph(queue)` takes the queue's device and context.
#[test]
fn graph_from_queue_uses_its_device_and_context() {
    let env = Env::new();
    let q = env.queue(QueueProps::none());
    let g = ModifiableGraph::from_queue(&q, GraphProps::none()).unwrap();
    assert_eq!(g.device(), env.dev);
    assert!(g.context().same(&env.ctx));
    g.begin_recording(&q, RecordingProps::default()).unwrap();
    assert!(q.ext_oneapi_get_graph().unwrap().same(&g));
}

/// Decision A11: in an explicit `add`, `handler::depends_on` with the event of work that
/// ran outside any graph is refused like a foreign event while recording (row 47).
#[test]
fn explicit_add_refuses_event_of_work_that_ran() {
    let env = Env::new();
    let q = env.queue(QueueProps::none());
    let x = env.usm_f32(&[0.0; 2]);
    let ran = q.parallel_for(&env.kernel("increment"), 2, args![&x], &[]).unwrap();
    let g = env.graph(GraphProps::none());
    let r = g.add(
        |h| {
            h.depends_on(&ran);
            h.parallel_for(&env.kernel("increment"), 2, args![&x]);
        },
        NodeProps::none(),
    );
    expect_err(r, Errc::Invalid, 47);
}

/// Decision A6: `update` reaches every (node, argument) its parameter was registered
/// with, so a slot registered with two parameters shows the one registered last until
/// one of them is updated, and then the one updated last; never a silent no-op.
#[test]
fn last_update_wins_on_a_slot_with_two_parameters() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let (x, y) = (env.usm_f32(&[1.0]), env.usm_f32(&[0.0]));
    let p1 = DynamicParameter::new(&g, 2.0f32).unwrap();
    let p2 = DynamicParameter::new(&g, 5.0f32).unwrap();
    g.add(
        |h| {
            h.set_args(args![&x, &y]);
            h.set_arg(2, &p1);
            h.set_arg(2, &p2);
            h.parallel_for(&env.kernel("scale"), 1, vec![]);
        },
        NodeProps::none(),
    )
    .unwrap();
    let q = env.queue(QueueProps::none());
    let check = |shown: &DynamicParameter, hidden: &DynamicParameter, want: f32| {
        let text = roundtrip(&g);
        let names = |p: &DynamicParameter| text.contains(&format!(", %{})", p.name()));
        assert!(names(shown) && !names(hidden), "the slot names %{}:\n{text}", shown.name());
        q.ext_oneapi_graph(&g.finalize(FinalizeProps::none()).unwrap(), &[]).unwrap();
        assert_eq!(y.read::<f32>().unwrap(), vec![want]);
    };
    check(&p2, &p1, 5.0);
    p1.update(100.0f32).unwrap();
    check(&p1, &p2, 100.0);
    p2.update(7.0f32).unwrap();
    check(&p2, &p1, 7.0);
}

/// Every way of registering counts: a parameter in the launch's argument list whose slot
/// a later `set_arg` overrides (with another parameter, or with a plain value) is still
/// registered, and its update takes the slot back.
#[test]
fn overridden_registrations_still_reach_their_slot() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let x = env.usm_f32(&[1.0]);
    let (y1, y2) = (env.usm_f32(&[0.0]), env.usm_f32(&[0.0]));
    let p1 = DynamicParameter::new(&g, 2.0f32).unwrap();
    let p2 = DynamicParameter::new(&g, 5.0f32).unwrap();
    let scale = env.kernel("scale");
    g.add(
        |h| {
            h.set_arg(2, &p2);
            h.parallel_for(&scale, 1, args![&x, &y1, &p1]);
        },
        NodeProps::none(),
    )
    .unwrap();
    g.add(
        |h| {
            h.set_args(args![&x, &y2, &p1]);
            h.set_arg(2, 3.0f32);
            h.parallel_for(&scale, 1, vec![]);
        },
        NodeProps::none(),
    )
    .unwrap();
    let q = env.queue(QueueProps::none());
    let run = || {
        roundtrip(&g);
        q.ext_oneapi_graph(&g.finalize(FinalizeProps::none()).unwrap(), &[]).unwrap();
        (y1.read::<f32>().unwrap()[0], y2.read::<f32>().unwrap()[0])
    };
    assert_eq!(run(), (5.0, 3.0), "set_arg overrides the argument list");
    p1.update(9.0f32).unwrap();
    assert_eq!(run(), (9.0, 9.0));
}

/// A registration the slot does not show now may show after an update, so its value is
/// checked against the kernel parameter when the node is added (row 0, like any argument
/// that does not fit), and a failed `add` registers nothing.
#[test]
fn overridden_registration_must_fit_the_parameter() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let (x, y) = (env.usm_f32(&[1.0]), env.usm_f32(&[0.0]));
    let wrong = DynamicParameter::new(&g, 2u32).unwrap();
    let right = DynamicParameter::new(&g, 5.0f32).unwrap();
    let r = g.add(
        |h| {
            h.set_arg(2, &wrong);
            h.set_arg(2, &right);
            h.parallel_for(&env.kernel("scale"), 1, args![&x, &y]);
        },
        NodeProps::none(),
    );
    let msg = expect_err(r, Errc::Invalid, 0);
    assert!(msg.contains("argument 2"), "{msg}");
    assert!(g.get_nodes().is_empty());
    wrong.update(3u32).unwrap();
    roundtrip(&g);
}

/// Events of a `discard_events` queue are not linked to nodes (row 44).
#[test]
fn discarded_events_have_no_node() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let q = env.queue(QueueProps { discard_events: true, ..QueueProps::none() });
    g.begin_recording(&q, RecordingProps::default()).unwrap();
    let e = q.ext_oneapi_submit_barrier().unwrap();
    expect_err(Node::get_node_from_event(&e), Errc::Invalid, 44);
    g.end_recording();
    let text = roundtrip(&g);
    assert!(text.contains("discard_events"), "{text}");
}

/// Decision A9: a graph-owned allocation keeps its contents between executions of one
/// executable graph; `zero_init` zeroes it at finalize only.
#[test]
fn zero_init_allocation_is_zeroed_at_finalize_only() {
    let env = Env::new();
    let out = env.usm_f32(&[0.0; 2]);
    let g = env.graph(GraphProps::none());
    let mut p = None;
    let pool = MemoryPool { kind: UsmKind::Device, zero_init: true };
    let a = g.add(|h| p = Some(h.async_malloc_from_pool(Type::F32, 2, &pool)), NodeProps::none()).unwrap();
    let p = p.unwrap();
    let k = g.add(|h| h.parallel_for(&env.kernel("increment"), 2, args![&p]), NodeProps::depends_on(&[&a])).unwrap();
    let c = g.add(|h| h.memcpy(&out, p.clone(), 8), NodeProps::depends_on(&[&k])).unwrap();
    g.add(|h| h.async_free(&p), NodeProps::depends_on(&[&c])).unwrap();
    let text = roundtrip(&g);
    assert!(text.contains("async_malloc f32[2] zero_init"), "{text}");
    let q = env.queue(QueueProps::none());
    let exec = g.finalize(FinalizeProps::none()).unwrap();
    for _ in 0..3 {
        q.ext_oneapi_graph(&exec, &[]).unwrap();
    }
    assert_eq!(out.read::<f32>().unwrap(), vec![3.0, 3.0]);
    drop(exec);
    let again = g.finalize(FinalizeProps::none()).unwrap();
    q.ext_oneapi_graph(&again, &[]).unwrap();
    assert_eq!(out.read::<f32>().unwrap(), vec![1.0, 1.0], "a new finalize zeroes again");
}

/// A `device_global` has one instance per device: kernels of different graphs and copies
/// on executing queues see the same contents, across executions.
#[test]
fn device_global_is_shared_across_graphs_and_runs() {
    let env = Env::new();
    let kernels = env
        .ctx
        .register_kernels_from_text(
            "device_global @hits : u32[1] = [5]\nkernel @hit(%unused: buf<u32, read>) {\n  %z = const 0 : u32\n  %one = const 1 : u32\n  %old = atomic add @hits[%z], %one\n}\n",
        )
        .unwrap();
    let dummy = Usm::device::<u32>(&env.ctx, 1).unwrap();
    let q = env.queue(QueueProps::none());
    let make = || {
        let g = env.graph(GraphProps::none());
        g.add(|h| h.single_task(&kernels[0], args![&dummy]), NodeProps::none()).unwrap();
        roundtrip(&g);
        g.finalize(FinalizeProps::none()).unwrap()
    };
    let (a, b) = (make(), make());
    q.ext_oneapi_graph(&a, &[]).unwrap();
    q.ext_oneapi_graph(&b, &[]).unwrap();
    q.ext_oneapi_graph(&a, &[]).unwrap();
    let hits = env.ctx.device_global("hits").expect("declared by the kernel text");
    assert_eq!(q.copy_from_device_global::<u32>(&hits, 1, 0).unwrap(), vec![8]);
    q.copy_to_device_global(&hits, &[100u32], 0).unwrap();
    q.ext_oneapi_graph(&b, &[]).unwrap();
    assert_eq!(q.copy_from_device_global::<u32>(&hits, 1, 0).unwrap(), vec![101]);
}
