//! One test per row of the error table (seed-features.md §22) that the API can meet:
//! each checks the `errc`, the row, and, where it matters, that nothing changed.
//! docs/semantics.md maps rows to these tests and lists the rows a Rust API cannot meet.

mod common;

use cmdgraph_ir::{DeviceGlobal as DgProps, HostAccess, LitValue, Literal, NodeType, ScalarType, Type};
use cmdgraph_sycl::*;
use common::*;

fn inc_cgf(env: &Env, x: &Usm) -> impl FnOnce(&mut Handler) {
    let k = env.kernel("increment");
    let x = x.clone();
    move |h: &mut Handler| h.parallel_for(&k, 2, args![&x])
}

fn recording(env: &Env, graph: &ModifiableGraph) -> Queue {
    let q = env.queue(QueueProps::none());
    graph.begin_recording(&q, RecordingProps::default()).unwrap();
    q
}

fn node_count(g: &ModifiableGraph) -> usize {
    g.get_nodes().len()
}

#[test]
fn row_01_graph_device_not_in_context() {
    let env = Env::new();
    let other = Device::new(7, DeviceInfo::default());
    expect_err(ModifiableGraph::new(&env.ctx, &other, GraphProps::none()), Errc::Invalid, 1);
}

#[test]
fn row_02_graph_device_without_graph_support() {
    let dev = Device::new(1, DeviceInfo { graph_support: GraphSupport::None, ..DeviceInfo::default() });
    let ctx = Context::new(1, std::slice::from_ref(&dev));
    expect_err(ModifiableGraph::new(&ctx, &dev, GraphProps::none()), Errc::Invalid, 2);
    // limited_graph devices can build graphs (only update is excluded).
    let limited = Device::new(2, DeviceInfo { graph_support: GraphSupport::Limited, ..DeviceInfo::default() });
    let ctx = Context::new(2, std::slice::from_ref(&limited));
    assert!(ModifiableGraph::new(&ctx, &limited, GraphProps::none()).is_ok());
}

#[test]
fn row_03_graph_from_queue_on_unsupported_device() {
    let dev = Device::new(1, DeviceInfo { graph_support: GraphSupport::None, ..DeviceInfo::default() });
    let ctx = Context::new(1, std::slice::from_ref(&dev));
    let q = Queue::new(&ctx, &dev, QueueProps::none()).unwrap();
    expect_err(ModifiableGraph::from_queue(&q, GraphProps::none()), Errc::Invalid, 3);
}

#[test]
fn row_04_add_empty_while_recording() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let _q = recording(&env, &g);
    expect_err(g.add_empty(NodeProps::none()), Errc::Invalid, 4);
    assert_eq!(node_count(&g), 0);
}

#[test]
fn row_05_add_command_group_while_recording() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let _q = recording(&env, &g);
    let x = env.usm_f32(&[0.0; 2]);
    expect_err(g.add(inc_cgf(&env, &x), NodeProps::none()), Errc::Invalid, 5);
    assert_eq!(node_count(&g), 0);
}

#[test]
fn row_06_add_uses_buffer_without_property() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let buf = Buffer::new(&env.ctx, None, Type::F32, 2).unwrap();
    let k = env.kernel("increment");
    let r = g.add(
        |h| {
            let a = h.access(&buf, Access::ReadWrite);
            h.parallel_for(&k, 2, args![&a]);
        },
        NodeProps::none(),
    );
    let msg = expect_err(r, Errc::Invalid, 6);
    assert!(msg.contains("assume_buffer_outlives_graph"), "{msg}");
}

#[test]
fn row_07_add_async_malloc_not_device() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    expect_err(g.add(|h| drop(h.async_malloc(UsmKind::Shared, Type::F32, 4)), NodeProps::none()), Errc::Invalid, 7);
    let pool = MemoryPool { kind: UsmKind::Host, zero_init: true };
    expect_err(g.add(|h| drop(h.async_malloc_from_pool(Type::F32, 4, &pool)), NodeProps::none()), Errc::Invalid, 7);
    assert_eq!(node_count(&g), 0);
}

#[test]
fn row_08_non_kernel_registers_dynamic_parameter() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let x = env.usm_f32(&[0.0; 4]);
    let p = DynamicParameter::new(&g, 1.0f32).unwrap();
    let r = g.add(
        |h| {
            h.set_arg(0, &p);
            h.memset(&x, 0, 16);
        },
        NodeProps::none(),
    );
    expect_err(r, Errc::Invalid, 8);
}

#[test]
fn row_09_add_dynamic_command_group_while_recording() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let x = env.usm_f32(&[0.0; 2]);
    let dcg = DynamicCommandGroup::new(&g, vec![CommandGroup::new(inc_cgf(&env, &x))]).unwrap();
    let _q = recording(&env, &g);
    expect_err(g.add_dynamic(&dcg, NodeProps::none()), Errc::Invalid, 9);
}

#[test]
fn row_10_add_dynamic_command_group_of_another_graph() {
    let env = Env::new();
    let g1 = env.graph(GraphProps::none());
    let g2 = env.graph(GraphProps::none());
    let x = env.usm_f32(&[0.0; 2]);
    let dcg = DynamicCommandGroup::new(&g1, vec![CommandGroup::new(inc_cgf(&env, &x))]).unwrap();
    expect_err(g2.add_dynamic(&dcg, NodeProps::none()), Errc::Invalid, 10);
}

#[test]
fn row_11_dynamic_command_group_alternatives_with_different_dependencies() {
    let env = Env::new();
    let g = env.graph(GraphProps::buffers());
    let x = env.usm_f32(&[0.0; 2]);
    let q = recording(&env, &g);
    let e1 = q.parallel_for(&env.kernel("increment"), 2, args![&x], &[]).unwrap();
    let e2 = q.parallel_for(&env.kernel("increment"), 2, args![&x], &[]).unwrap();
    g.end_recording();
    let k = env.kernel("increment");
    let (k1, x1, k2, x2) = (k.clone(), x.clone(), k.clone(), x.clone());
    let dcg = DynamicCommandGroup::new(
        &g,
        vec![
            CommandGroup::new(move |h| {
                h.depends_on(&e1);
                h.parallel_for(&k1, 2, args![&x1]);
            }),
            CommandGroup::new(move |h| {
                h.depends_on(&e2);
                h.parallel_for(&k2, 2, args![&x2]);
            }),
        ],
    )
    .unwrap();
    expect_err(g.add_dynamic(&dcg, NodeProps::none()), Errc::Invalid, 11);

    // Different buffer accesses are refused too, even where they happen to give no edge yet.
    let (b1, b2) =
        (Buffer::new(&env.ctx, None, Type::F32, 2).unwrap(), Buffer::new(&env.ctx, None, Type::F32, 2).unwrap());
    let (ka, kb) = (k.clone(), k);
    let dcg = DynamicCommandGroup::new(
        &g,
        vec![
            CommandGroup::new(move |h| {
                let a = h.access(&b1, Access::ReadWrite);
                h.parallel_for(&ka, 2, args![&a]);
            }),
            CommandGroup::new(move |h| {
                let a = h.access(&b2, Access::ReadWrite);
                h.parallel_for(&kb, 2, args![&a]);
            }),
        ],
    )
    .unwrap();
    expect_err(g.add_dynamic(&dcg, NodeProps::none()), Errc::Invalid, 11);
}

#[test]
fn row_12_dynamic_command_group_uses_buffer_without_property() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let buf = Buffer::new(&env.ctx, None, Type::F32, 2).unwrap();
    let k = env.kernel("increment");
    let r = DynamicCommandGroup::new(
        &g,
        vec![CommandGroup::new(move |h| {
            let a = h.access(&buf, Access::ReadWrite);
            h.parallel_for(&k, 2, args![&a]);
        })],
    );
    expect_err(r, Errc::Invalid, 12);
}

#[test]
fn row_13_dynamic_command_group_with_memory_command() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let x = env.usm_f32(&[0.0; 2]);
    let r = DynamicCommandGroup::new(&g, vec![CommandGroup::new(move |h| h.memset(&x, 0, 8))]);
    let msg = expect_err(r, Errc::Invalid, 13);
    assert!(msg.contains("memset"), "{msg}");
}

#[test]
fn row_14_dynamic_command_group_empty_list() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    expect_err(DynamicCommandGroup::new(&g, vec![]), Errc::Invalid, 14);
}

#[test]
fn row_15_dynamic_command_group_mixed_types() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let x = env.usm_f32(&[0.0; 2]);
    let r = DynamicCommandGroup::new(
        &g,
        vec![CommandGroup::new(inc_cgf(&env, &x)), CommandGroup::new(|h: &mut Handler| h.host_task("log"))],
    );
    expect_err(r, Errc::Invalid, 15);
}

#[test]
fn row_16_set_active_index_out_of_range() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let x = env.usm_f32(&[0.0; 2]);
    let dcg = DynamicCommandGroup::new(&g, vec![CommandGroup::new(inc_cgf(&env, &x))]).unwrap();
    expect_err(dcg.set_active_index(1), Errc::Invalid, 16);
    assert_eq!(dcg.get_active_index(), 0);
    dcg.set_active_index(0).unwrap(); // the current index: a no-op
}

#[test]
fn row_17_make_edge_while_recording() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let a = g.add_empty(NodeProps::none()).unwrap();
    let b = g.add_empty(NodeProps::none()).unwrap();
    let _q = recording(&env, &g);
    expect_err(g.make_edge(&a, &b), Errc::Invalid, 17);
    assert!(edges(&g).is_empty());
}

#[test]
fn row_18_make_edge_node_of_another_graph() {
    let env = Env::new();
    let g1 = env.graph(GraphProps::none());
    let g2 = env.graph(GraphProps::none());
    let a = g1.add_empty(NodeProps::none()).unwrap();
    let b = g2.add_empty(NodeProps::none()).unwrap();
    expect_err(g1.make_edge(&a, &b), Errc::Invalid, 18);
    expect_err(g1.make_edge(&b, &a), Errc::Invalid, 18);
}

#[test]
fn row_19_make_edge_to_itself() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let a = g.add_empty(NodeProps::none()).unwrap();
    expect_err(g.make_edge(&a, &a), Errc::Invalid, 19);
}

#[test]
fn row_20_make_edge_cycle() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let a = g.add_empty(NodeProps::none()).unwrap();
    let b = g.add_empty(NodeProps::depends_on(&[&a])).unwrap();
    let c = g.add_empty(NodeProps::depends_on(&[&b])).unwrap();
    expect_err(g.make_edge(&c, &a), Errc::Invalid, 20);
    assert_eq!(edges(&g).len(), 2);

    // Under no_cycle_check the edge is made; the cyclic graph cannot be finalized (the
    // spec makes it undefined; we diagnose).
    let g = env.graph(GraphProps { no_cycle_check: true, ..GraphProps::none() });
    let a = g.add_empty(NodeProps::none()).unwrap();
    let b = g.add_empty(NodeProps::depends_on(&[&a])).unwrap();
    g.make_edge(&b, &a).unwrap();
    expect_err(g.finalize(FinalizeProps::none()), Errc::Invalid, 20);
}

#[test]
fn row_21_finalize_with_unsupported_command() {
    let dev = Device::new(0, DeviceInfo { fp16: false, native_graph: false, ..DeviceInfo::default() });
    let ctx = Context::new(0, std::slice::from_ref(&dev));
    let kernels = ctx
        .register_kernels_from_text(
            "kernel @half_inc(%x: buf<f16, read_write>) {\n  %i = global_id 0\n  %v = load %x[%i]\n  %one = const 1.0 : f16\n  %r = add %v, %one\n  store %x[%i], %r\n}\n",
        )
        .unwrap();
    let x = Usm::new(&ctx, None, Type::scalar(ScalarType::F16), 4, UsmKind::Device).unwrap();
    let g = ModifiableGraph::new(&ctx, &dev, GraphProps::none()).unwrap();
    g.add(|h| h.parallel_for(&kernels[0], 4, args![&x]), NodeProps::none()).unwrap();
    let msg = expect_err(g.finalize(FinalizeProps::none()), Errc::FeatureNotSupported, 21);
    assert!(msg.contains("fp16"), "{msg}");

    // f64 needs aspect::fp64 (issue 30): a device without it refuses; with it, finalizes.
    for fp64 in [false, true] {
        let dev = Device::new(0, DeviceInfo { fp64, ..DeviceInfo::default() });
        let ctx = Context::new(0, std::slice::from_ref(&dev));
        let kernels = ctx
            .register_kernels_from_text(
                "kernel @double_inc(%x: buf<f64, read_write>) {\n  %i = global_id 0\n  %v = load %x[%i]\n  %one = const 1.0 : f64\n  %r = add %v, %one\n  store %x[%i], %r\n}\n",
            )
            .unwrap();
        let x = Usm::new(&ctx, None, Type::scalar(ScalarType::F64), 4, UsmKind::Device).unwrap();
        let g = ModifiableGraph::new(&ctx, &dev, GraphProps::none()).unwrap();
        g.add(|h| h.parallel_for(&kernels[0], 4, args![&x]), NodeProps::none()).unwrap();
        if fp64 {
            assert!(g.finalize(FinalizeProps::none()).is_ok());
        } else {
            let msg = expect_err(g.finalize(FinalizeProps::none()), Errc::FeatureNotSupported, 21);
            assert!(msg.contains("uses f64") && msg.contains("aspect::fp64"), "{msg}");
        }
    }

    let g = ModifiableGraph::new(&ctx, &dev, GraphProps::none()).unwrap();
    ctx.register_native_command("nat", |_| Ok(()));
    g.add(|h| h.ext_codeplay_enqueue_native_command("nat", &[]), NodeProps::none()).unwrap();
    expect_err(g.finalize(FinalizeProps::none()), Errc::FeatureNotSupported, 21);
}

fn alloc_graph(env: &Env) -> ModifiableGraph {
    let g = env.graph(GraphProps::none());
    let mut ptr = None;
    let a = g.add(|h| ptr = Some(h.async_malloc(UsmKind::Device, Type::F32, 4)), NodeProps::none()).unwrap();
    let ptr = ptr.unwrap();
    g.add(|h| h.async_free(&ptr), NodeProps::depends_on(&[&a])).unwrap();
    g
}

#[test]
fn row_22_finalize_again_while_instance_with_allocations_lives() {
    let env = Env::new();
    let g = alloc_graph(&env);
    let exec = g.finalize(FinalizeProps::none()).unwrap();
    let copy = exec.clone();
    drop(exec);
    expect_err(g.finalize(FinalizeProps::none()), Errc::Invalid, 22);
    drop(copy);
    assert!(g.finalize(FinalizeProps::none()).is_ok(), "all copies dropped");
    // Without allocations, any number of instances may live.
    let plain = env.graph(GraphProps::none());
    let _e1 = plain.finalize(FinalizeProps::none()).unwrap();
    let _e2 = plain.finalize(FinalizeProps::none()).unwrap();
}

#[test]
fn row_23_print_graph_bad_path() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    g.add_empty(NodeProps::none()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let bad_ext = dir.path().join("graph.png");
    expect_err(g.print_graph(bad_ext.to_str().unwrap(), false), Errc::Invalid, 23);
    let missing_dir = dir.path().join("no/such/dir/graph.dot");
    expect_err(g.print_graph(missing_dir.to_str().unwrap(), true), Errc::Invalid, 23);
    let good = dir.path().join("graph.dot");
    g.print_graph(good.to_str().unwrap(), true).unwrap();
    let dot = std::fs::read_to_string(good).unwrap();
    assert!(dot.contains("digraph") && dot.contains("%empty0"), "{dot}");
}

fn kernel_graph(env: &Env) -> (ModifiableGraph, Node, Usm) {
    let g = env.graph(GraphProps::none());
    let x = env.usm_f32(&[0.0; 2]);
    let n = g.add(inc_cgf(env, &x), NodeProps::none()).unwrap();
    (g, n, x)
}

#[test]
fn row_24_update_node_not_updatable() {
    let env = Env::new();
    let (g, n, _) = kernel_graph(&env);
    let exec = g.finalize(FinalizeProps::none()).unwrap();
    expect_err(exec.update_node(&n), Errc::Invalid, 24);
    expect_err(exec.update_nodes(&[&n]), Errc::Invalid, 24);
}

#[test]
fn row_25_update_node_not_in_graph() {
    let env = Env::new();
    let (g, _, x) = kernel_graph(&env);
    let exec = g.finalize(FinalizeProps::updatable()).unwrap();
    let later = g.add(inc_cgf(&env, &x), NodeProps::none()).unwrap();
    expect_err(exec.update_node(&later), Errc::Invalid, 25);
    let (_, foreign, _) = kernel_graph(&env);
    expect_err(exec.update_node(&foreign), Errc::Invalid, 25);
}

#[test]
fn row_26_update_allocation_node() {
    let env = Env::new();
    let g = alloc_graph(&env);
    let exec = g.finalize(FinalizeProps::updatable()).unwrap();
    let nodes = g.get_nodes();
    assert_eq!(nodes[0].get_type(), NodeType::AsyncMalloc);
    expect_err(exec.update_node(&nodes[0]), Errc::Invalid, 26);
    expect_err(exec.update_nodes(&[&nodes[1]]), Errc::Invalid, 26);
}

#[test]
fn row_27_whole_graph_update_with_memory_command() {
    let env = Env::new();
    let make = || {
        let g = env.graph(GraphProps::none());
        let x = env.usm_f32(&[0.0; 2]);
        g.add(|h| h.memset(&x, 0, 8), NodeProps::none()).unwrap();
        g
    };
    let exec = make().finalize(FinalizeProps::updatable()).unwrap();
    let msg = expect_err(exec.update_graph(&make()), Errc::Invalid, 27);
    assert!(msg.contains("memset"), "{msg}");
}

#[test]
fn row_28_whole_graph_update_other_device() {
    let d0 = Device::new(0, DeviceInfo::default());
    let d1 = Device::new(1, DeviceInfo::default());
    let ctx = Context::new(0, &[d0.clone(), d1.clone()]);
    let g0 = ModifiableGraph::new(&ctx, &d0, GraphProps::none()).unwrap();
    g0.add_empty(NodeProps::none()).unwrap();
    let g1 = ModifiableGraph::new(&ctx, &d1, GraphProps::none()).unwrap();
    g1.add_empty(NodeProps::none()).unwrap();
    let exec = g0.finalize(FinalizeProps::updatable()).unwrap();
    expect_err(exec.update_graph(&g1), Errc::Invalid, 28);
}

#[test]
fn row_29_whole_graph_update_not_updatable() {
    let env = Env::new();
    let (g, _, _) = kernel_graph(&env);
    let exec = g.finalize(FinalizeProps::none()).unwrap();
    expect_err(exec.update_graph(&g), Errc::Invalid, 29);
}

#[test]
fn row_30_whole_graph_update_of_graph_with_allocations() {
    let env = Env::new();
    let exec = alloc_graph(&env).finalize(FinalizeProps::updatable()).unwrap();
    let source = env.graph(GraphProps::none());
    source.add_empty(NodeProps::none()).unwrap();
    source.add_empty(NodeProps::none()).unwrap();
    expect_err(exec.update_graph(&source), Errc::Invalid, 30);
}

#[test]
fn row_31_whole_graph_update_not_topologically_identical() {
    let env = Env::new();
    let (g, _, _) = kernel_graph(&env);
    let exec = g.finalize(FinalizeProps::updatable()).unwrap();
    let other = env.graph(GraphProps::none());
    other.add_empty(NodeProps::none()).unwrap();
    let msg = expect_err(exec.update_graph(&other), Errc::Invalid, 31);
    assert!(msg.contains("node types differ"), "{msg}");
}

/// Row 32: a failing update changes nothing (all checks run before any change), so the
/// node state never becomes undefined.
#[test]
fn row_32_failed_update_leaves_graph_unchanged() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let x = env.usm_f32(&[0.0; 2]);
    let y = env.usm_f32(&[0.0; 2]);
    let p = DynamicParameter::new(&g, 1.0f32).unwrap();
    let scale = env.kernel("scale");
    let n = g.add(|h| h.parallel_for(&scale, 2, args![&x, &y, &p]), NodeProps::none()).unwrap();
    let exec = g.finalize(FinalizeProps::updatable()).unwrap();
    let before = cmdgraph_ir::text::print(&exec.module());
    p.update(5.0f32).unwrap();
    let later = g.add_empty(NodeProps::none()).unwrap();
    expect_err(exec.update_nodes(&[&n, &later]), Errc::Invalid, 25);
    assert_eq!(cmdgraph_ir::text::print(&exec.module()), before);
}

#[test]
fn row_33_begin_recording_queue_already_recording() {
    let env = Env::new();
    let g1 = env.graph(GraphProps::none());
    let g2 = env.graph(GraphProps::none());
    let q = recording(&env, &g1);
    expect_err(g2.begin_recording(&q, RecordingProps::default()), Errc::Invalid, 33);
    expect_err(g1.begin_recording(&q, RecordingProps::default()), Errc::Invalid, 33);
    // All or nothing: a good queue listed with a bad one does not start recording.
    let fresh = env.queue(QueueProps::none());
    expect_err(g2.begin_recording_queues(&[&fresh, &q], RecordingProps::default()), Errc::Invalid, 33);
    assert_eq!(fresh.ext_oneapi_get_state(), QueueState::Executing);
}

#[test]
fn row_34_begin_recording_other_device() {
    let d0 = Device::new(0, DeviceInfo::default());
    let d1 = Device::new(1, DeviceInfo::default());
    let ctx = Context::new(0, &[d0.clone(), d1.clone()]);
    let g = ModifiableGraph::new(&ctx, &d0, GraphProps::none()).unwrap();
    let q = Queue::new(&ctx, &d1, QueueProps::none()).unwrap();
    expect_err(g.begin_recording(&q, RecordingProps::default()), Errc::Invalid, 34);
    let other_ctx = Context::new(1, std::slice::from_ref(&d0));
    let q = Queue::new(&other_ctx, &d0, QueueProps::none()).unwrap();
    expect_err(g.begin_recording(&q, RecordingProps::default()), Errc::Invalid, 34);
}

#[test]
fn row_35_end_recording_queue_of_another_graph() {
    let env = Env::new();
    let g1 = env.graph(GraphProps::none());
    let g2 = env.graph(GraphProps::none());
    let q = recording(&env, &g1);
    expect_err(g2.end_recording_queue(&q), Errc::Invalid, 35);
    expect_err(g2.end_recording_queues(&[&q]), Errc::Invalid, 35);
    assert_eq!(q.ext_oneapi_get_state(), QueueState::Recording);
    g2.end_recording(); // ends only g2's queues
    assert_eq!(q.ext_oneapi_get_state(), QueueState::Recording);
}

#[test]
fn row_36_get_graph_of_executing_queue() {
    let env = Env::new();
    let q = env.queue(QueueProps::none());
    expect_err(q.ext_oneapi_get_graph(), Errc::Invalid, 36);
}

#[test]
fn row_37_queue_shortcut_records_graph_with_allocations() {
    let env = Env::new();
    let exec = alloc_graph(&env).finalize(FinalizeProps::none()).unwrap();
    let g = env.graph(GraphProps::none());
    let q = recording(&env, &g);
    expect_err(q.ext_oneapi_graph(&exec, &[]), Errc::Invalid, 37);
}

#[test]
fn row_38_subgraph_of_another_device() {
    let d0 = Device::new(0, DeviceInfo::default());
    let d1 = Device::new(1, DeviceInfo::default());
    let ctx = Context::new(0, &[d0.clone(), d1.clone()]);
    let child = ModifiableGraph::new(&ctx, &d1, GraphProps::none()).unwrap();
    child.add_empty(NodeProps::none()).unwrap();
    let exec = child.finalize(FinalizeProps::none()).unwrap();
    let parent = ModifiableGraph::new(&ctx, &d0, GraphProps::none()).unwrap();
    expect_err(parent.add(|h| h.ext_oneapi_graph(&exec), NodeProps::none()), Errc::Invalid, 38);
    let q = Queue::new(&ctx, &d0, QueueProps::none()).unwrap();
    parent.begin_recording(&q, RecordingProps::default()).unwrap();
    expect_err(q.submit(|h| h.ext_oneapi_graph(&exec)), Errc::Invalid, 38);
}

#[test]
fn row_39_handler_records_subgraph_with_allocations() {
    let env = Env::new();
    let exec = alloc_graph(&env).finalize(FinalizeProps::none()).unwrap();
    let g = env.graph(GraphProps::none());
    let q = recording(&env, &g);
    expect_err(q.submit(|h| h.ext_oneapi_graph(&exec)), Errc::Invalid, 39);
}

#[test]
fn row_40_set_arg_dynamic_parameter_while_recording() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let p = DynamicParameter::new(&g, 2.0f32).unwrap();
    let (x, y) = (env.usm_f32(&[0.0; 2]), env.usm_f32(&[0.0; 2]));
    let q = recording(&env, &g);
    let scale = env.kernel("scale");
    expect_err(q.parallel_for(&scale, 2, args![&x, &y, &p], &[]), Errc::Invalid, 40);
    let r = q.submit(|h| {
        h.set_args(args![&x, &y]);
        h.set_arg(2, &p);
        h.parallel_for(&scale, 2, vec![]);
    });
    expect_err(r, Errc::Invalid, 40);
}

#[test]
fn row_41_set_arg_dynamic_parameter_outside_graph() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let p = DynamicParameter::new(&g, 2.0f32).unwrap();
    let (x, y) = (env.usm_f32(&[1.0; 2]), env.usm_f32(&[0.0; 2]));
    let q = env.queue(QueueProps::none());
    expect_err(q.parallel_for(&env.kernel("scale"), 2, args![&x, &y, &p], &[]), Errc::Invalid, 41);
    assert_eq!(y.read::<f32>().unwrap(), vec![0.0, 0.0], "nothing ran");
}

#[test]
fn row_42_dynamic_parameter_of_another_graph() {
    let env = Env::new();
    let g1 = env.graph(GraphProps::none());
    let g2 = env.graph(GraphProps::none());
    let p = DynamicParameter::new(&g1, 2.0f32).unwrap();
    let (x, y) = (env.usm_f32(&[0.0; 2]), env.usm_f32(&[0.0; 2]));
    let scale = env.kernel("scale");
    expect_err(g2.add(|h| h.parallel_for(&scale, 2, args![&x, &y, &p]), NodeProps::none()), Errc::Invalid, 42);
}

#[test]
fn row_43_require_dynamic_accessor_misuse() {
    let env = Env::new();
    let g = env.graph(GraphProps::buffers());
    let buf = Buffer::new(&env.ctx, None, Type::F32, 2).unwrap();
    let p = DynamicParameter::new(&g, buf.placeholder(Access::ReadWrite)).unwrap();
    let inc = env.kernel("increment");
    // From another graph.
    let g2 = env.graph(GraphProps::buffers());
    let r = g2.add(
        |h| {
            h.require_dyn(&p);
            h.parallel_for(&inc, 2, args![&p]);
        },
        NodeProps::none(),
    );
    expect_err(r, Errc::Invalid, 43);
    // In a recorded command group.
    let q = recording(&env, &g);
    expect_err(q.submit(|h| h.require_dyn(&p)), Errc::Invalid, 43);
    g.end_recording();
    // In a normal submission.
    expect_err(q.submit(|h| h.require_dyn(&p)), Errc::Invalid, 43);
    // Used properly it registers and requires.
    let n = g
        .add(
            |h| {
                h.require_dyn(&p);
                h.parallel_for(&inc, 2, args![&p]);
            },
            NodeProps::none(),
        )
        .unwrap();
    assert_eq!(n.get_type(), NodeType::Kernel);
    roundtrip(&g);
}

#[test]
fn row_44_node_from_event_without_node() {
    let env = Env::new();
    let q = env.queue(QueueProps::none());
    let x = env.usm_f32(&[0.0; 2]);
    let e = q.parallel_for(&env.kernel("increment"), 2, args![&x], &[]).unwrap();
    expect_err(Node::get_node_from_event(&e), Errc::Invalid, 44);
}

#[test]
fn row_45_update_range_dimension_mismatch() {
    let env = Env::new();
    let (g, n, _) = kernel_graph(&env);
    expect_err(n.update_range([2u64, 1]), Errc::Invalid, 45);
    expect_err(n.update_nd_range(NdRange::new([2u64, 2, 1], [1u64, 1, 1])), Errc::Invalid, 45);
    n.update_range(2u64).unwrap();
    roundtrip(&g);
}

#[test]
fn row_46_update_range_of_non_kernel() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let e = g.add_empty(NodeProps::none()).unwrap();
    expect_err(e.update_range(4u64), Errc::Invalid, 46);
    expect_err(e.update_nd_range(NdRange::new(4u64, 2u64)), Errc::Invalid, 46);
}

#[test]
fn row_47_depends_on_event_of_another_graph() {
    let env = Env::new();
    let g1 = env.graph(GraphProps::none());
    let g2 = env.graph(GraphProps::none());
    let x = env.usm_f32(&[0.0; 2]);
    let q1 = recording(&env, &g1);
    let q2 = recording(&env, &g2);
    let e1 = q1.parallel_for(&env.kernel("increment"), 2, args![&x], &[]).unwrap();
    expect_err(q2.parallel_for(&env.kernel("increment"), 2, args![&x], &[&e1]), Errc::Invalid, 47);
    // An event of work that ran (not recorded) cannot make an edge either.
    g1.end_recording();
    g2.end_recording();
    let ran = q1.parallel_for(&env.kernel("increment"), 2, args![&x], &[]).unwrap();
    g2.begin_recording(&q2, RecordingProps::default()).unwrap();
    expect_err(q2.parallel_for(&env.kernel("increment"), 2, args![&x], &[&ran]), Errc::Invalid, 47);
}

#[test]
fn row_48_depends_on_discarded_event() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let x = env.usm_f32(&[0.0; 2]);
    let q = env.queue(QueueProps { discard_events: true, ..QueueProps::none() });
    g.begin_recording(&q, RecordingProps::default()).unwrap();
    let e = q.parallel_for(&env.kernel("increment"), 2, args![&x], &[]).unwrap();
    expect_err(q.parallel_for(&env.kernel("increment"), 2, args![&x], &[&e]), Errc::Invalid, 48);
}

#[test]
fn row_49_status_and_profiling_of_recorded_event() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let q = env.queue(QueueProps { enable_profiling: true, ..QueueProps::none() });
    g.begin_recording(&q, RecordingProps::default()).unwrap();
    let e = q.ext_oneapi_submit_barrier().unwrap();
    expect_err(e.get_status(), Errc::Invalid, 49);
    expect_err(e.get_profiling_info(), Errc::Invalid, 49);
}

#[test]
fn row_50_wait_on_recorded_event() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let q = recording(&env, &g);
    let e = q.ext_oneapi_submit_barrier().unwrap();
    expect_err(e.wait(), Errc::Invalid, 50);
}

#[test]
fn row_51_recorded_event_used_after_recording() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let x = env.usm_f32(&[0.0; 2]);
    let q = recording(&env, &g);
    let e = q.parallel_for(&env.kernel("increment"), 2, args![&x], &[]).unwrap();
    g.end_recording();
    expect_err(q.parallel_for(&env.kernel("increment"), 2, args![&x], &[&e]), Errc::Invalid, 51);
    assert_eq!(x.read::<f32>().unwrap(), vec![0.0, 0.0]);
}

#[test]
fn row_52_wait_on_recording_queue() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let q = recording(&env, &g);
    expect_err(q.wait(), Errc::Invalid, 52);
    g.end_recording();
    q.wait().unwrap();
}

#[test]
fn row_53_recorded_buffer_without_property() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let buf = Buffer::new(&env.ctx, None, Type::F32, 2).unwrap();
    let q = recording(&env, &g);
    let r = q.submit(|h| {
        let a = h.access(&buf, Access::ReadWrite);
        h.parallel_for(&env.kernel("increment"), 2, args![&a]);
    });
    expect_err(r, Errc::Invalid, 53);
}

#[test]
fn row_54_recorded_accessor_on_write_back_buffer() {
    let env = Env::new();
    let g = env.graph(GraphProps::buffers());
    let buf = Buffer::from_host(&env.ctx, None, &[1.0f32, 2.0]).unwrap();
    let q = recording(&env, &g);
    let submit = || {
        q.submit(|h| {
            let a = h.access(&buf, Access::ReadWrite);
            h.parallel_for(&env.kernel("increment"), 2, args![&a]);
        })
    };
    expect_err(submit(), Errc::Invalid, 54);
    buf.set_write_back(false);
    submit().unwrap();
}

#[test]
fn row_55_host_accessor_on_buffer_being_recorded() {
    let env = Env::new();
    let g = env.graph(GraphProps::buffers());
    let buf = Buffer::new(&env.ctx, None, Type::F32, 2).unwrap();
    let q = recording(&env, &g);
    q.submit(|h| {
        let a = h.access(&buf, Access::ReadWrite);
        h.parallel_for(&env.kernel("increment"), 2, args![&a]);
    })
    .unwrap();
    expect_err(buf.host_access::<f32>(), Errc::Invalid, 55);
    g.end_recording();
    assert_eq!(buf.host_access::<f32>().unwrap(), vec![0.0, 0.0]);
}

#[test]
fn row_56_recorded_async_malloc_not_device() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let q = recording(&env, &g);
    expect_err(q.async_malloc(UsmKind::Host, Type::F32, 4), Errc::Invalid, 56);
}

/// Row 57 lists four uses of a graph with allocations; rows 22, 26, 30, 37 and 39 test
/// the others, this one the explicit sub-graph.
#[test]
fn row_57_graph_with_allocations_as_explicit_subgraph() {
    let env = Env::new();
    let exec = alloc_graph(&env).finalize(FinalizeProps::none()).unwrap();
    let g = env.graph(GraphProps::none());
    expect_err(g.add(|h| h.ext_oneapi_graph(&exec), NodeProps::none()), Errc::Invalid, 57);
}

#[test]
fn row_58_explicit_barrier() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let msg = expect_err(g.add(|h| h.ext_oneapi_barrier(), NodeProps::none()), Errc::Invalid, 58);
    assert!(msg.contains("depends_on_all_leaves"), "{msg}");
}

#[test]
fn row_59_banned_extensions_in_graphs() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let dg = DeviceGlobal::new(&env.ctx, "dg59", Type::U32, 4, DgProps::default()).unwrap();
    let x = env.usm_f32(&[0.0; 4]);
    expect_err(g.add(|h| h.copy_to_device_global(&dg, &[1u32], 0), NodeProps::none()), Errc::Invalid, 59);
    let q = recording(&env, &g);
    expect_err(q.copy_to_device_global(&dg, &[1u32], 0), Errc::Invalid, 59);
    expect_err(q.copy_from_device_global::<u32>(&dg, 1, 0), Errc::Invalid, 59);
    g.end_recording();
    expect_err(g.add(|h| h.ext_oneapi_memcpy2d(&x.ptr(), 8, &x.at(2), 8, 8, 1), NodeProps::none()), Errc::Invalid, 59);
    expect_err(g.add(|h| h.ext_oneapi_copy_image(), NodeProps::none()), Errc::Invalid, 59);
    let r = g.add(
        |h| {
            h.set_work_group_scratch_size(64);
            h.parallel_for(&env.kernel("increment"), 4, args![&x]);
        },
        NodeProps::none(),
    );
    expect_err(r, Errc::Invalid, 59);
    assert_eq!(node_count(&g), 0);
}

#[test]
fn row_60_reduction_and_stream_in_graph() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    expect_err(g.add(|h| h.reduction(), NodeProps::none()), Errc::FeatureNotSupported, 60);
    expect_err(g.add(|h| h.stream(), NodeProps::none()), Errc::FeatureNotSupported, 60);
}

#[test]
fn row_61_profiling_graph_without_enable_profiling() {
    let env = Env::new();
    let q = env.queue(QueueProps { enable_profiling: true, ..QueueProps::none() });
    let (g, _, _) = kernel_graph(&env);
    let plain = g.finalize(FinalizeProps::none()).unwrap();
    let e = q.ext_oneapi_graph(&plain, &[]).unwrap();
    expect_err(e.get_profiling_info(), Errc::Invalid, 61);
    let profiled = g.finalize(FinalizeProps { enable_profiling: true, ..FinalizeProps::none() }).unwrap();
    let info = q.ext_oneapi_graph(&profiled, &[]).unwrap().get_profiling_info().unwrap();
    assert!(info.submit <= info.start && info.start <= info.end);
}

/// Row 62 (explicit API while recording) is rows 4, 5, 9 and 17; this test runs all four.
#[test]
fn row_62_explicit_api_while_recording() {
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let x = env.usm_f32(&[0.0; 2]);
    let a = g.add_empty(NodeProps::none()).unwrap();
    let b = g.add_empty(NodeProps::none()).unwrap();
    let dcg = DynamicCommandGroup::new(&g, vec![CommandGroup::new(inc_cgf(&env, &x))]).unwrap();
    let _q = recording(&env, &g);
    let rows = [
        g.add_empty(NodeProps::none()).map(|_| ()),
        g.add(inc_cgf(&env, &x), NodeProps::none()).map(|_| ()),
        g.add_dynamic(&dcg, NodeProps::none()).map(|_| ()),
        g.make_edge(&a, &b),
    ]
    .map(|r| r.expect_err("refused while recording").row);
    assert_eq!(rows, [4, 5, 9, 17]);
}

/// Row 63 (002: native commands are invalid in graphs) is superseded by 000/004 (decision
/// A3): a native command is a node, and its callback runs at finalize with a graph.
#[test]
fn row_63_native_command_is_accepted() {
    let env = Env::new();
    let calls = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let seen = calls.clone();
    env.ctx.register_native_command("nat", move |ih| {
        seen.borrow_mut().push(ih.ext_codeplay_has_graph());
        ih.ext_codeplay_get_native_graph().map(|_| ())
    });
    let g = env.graph(GraphProps::none());
    let n = g.add(|h| h.ext_codeplay_enqueue_native_command("nat", &[]), NodeProps::none()).unwrap();
    assert_eq!(n.get_type(), NodeType::NativeCommand);
    roundtrip(&g);
    g.finalize(FinalizeProps::none()).unwrap();
    g.finalize(FinalizeProps::none()).unwrap();
    assert_eq!(*calls.borrow(), vec![true, true], "called at every finalize (decision A8)");
}

#[test]
fn row_64_native_graph_without_graph() {
    let env = Env::new();
    env.ctx.register_native_command("nat", |ih| ih.ext_codeplay_get_native_graph().map(|_| ()));
    let q = env.queue(QueueProps::none());
    expect_err(q.submit(|h| h.ext_codeplay_enqueue_native_command("nat", &[])), Errc::Invalid, 64);
}

fn dg(env: &Env, name: &str, props: DgProps) -> DeviceGlobal {
    DeviceGlobal::new(&env.ctx, name, Type::U32, 4, props).unwrap()
}

#[test]
fn row_65_device_global_copy_past_the_end() {
    let env = Env::new();
    let g = dg(&env, "dg65", DgProps::default());
    let q = env.queue(QueueProps::none());
    expect_err(q.copy_to_device_global(&g, &[1u32, 2, 3], 2), Errc::Invalid, 65);
    expect_err(q.copy_from_device_global::<u32>(&g, 5, 0), Errc::Invalid, 65);
    q.copy_to_device_global(&g, &[7u32, 8], 2).unwrap();
    assert_eq!(q.copy_from_device_global::<u32>(&g, 4, 0).unwrap(), vec![0, 0, 7, 8]);
}

#[test]
fn row_67_device_image_scope_global_no_kernel_uses() {
    let env = Env::new();
    let g = dg(&env, "dg67", DgProps { device_image_scope: true, ..DgProps::default() });
    let q = env.queue(QueueProps::none());
    expect_err(q.copy_to_device_global(&g, &[1u32], 0), Errc::KernelNotSupported, 67);
    // Once a kernel of the image uses it, the copy works.
    env.ctx
        .register_kernels_from_text(
            "device_global @dg67 : u32[4] properties(device_image_scope)\nkernel @use67(%o: buf<u32, write>) {\n  %z = const 0 : u32\n  %v = load @dg67[%z]\n  store %o[%z], %v\n}\n",
        )
        .unwrap();
    q.copy_to_device_global(&g, &[5u32], 0).unwrap();
}

#[test]
fn row_68_device_global_host_access() {
    let env = Env::new();
    let read_only = dg(&env, "dg68r", DgProps { host_access: Some(HostAccess::Read), ..DgProps::default() });
    let write_only = dg(&env, "dg68w", DgProps { host_access: Some(HostAccess::Write), ..DgProps::default() });
    let q = env.queue(QueueProps::none());
    expect_err(q.copy_to_device_global(&read_only, &[1u32], 0), Errc::Invalid, 68);
    assert!(q.copy_from_device_global::<u32>(&read_only, 1, 0).is_ok());
    expect_err(q.copy_from_device_global::<u32>(&write_only, 1, 0), Errc::Invalid, 68);
    assert!(q.copy_to_device_global(&write_only, &[1u32], 0).is_ok());
}

/// Row 71 (001: `queue::begin_recording(g)` while recording to another graph) is row 33
/// here: the same check through `command_graph::begin_recording`.
#[test]
fn row_71_begin_recording_into_second_graph() {
    let env = Env::new();
    let g1 = env.graph(GraphProps::none());
    let g2 = env.graph(GraphProps::none());
    let q = recording(&env, &g1);
    let e = g2.begin_recording(&q, RecordingProps::default()).expect_err("already recording");
    assert_eq!((e.code, e.row), (Errc::Invalid, 33));
}

/// Row 72 (001: whole-graph update with a different topology or insertion order throws
/// `invalid`) is what this runtime does for row 31: here the insertion order differs.
#[test]
fn row_72_update_with_other_insertion_order() {
    let env = Env::new();
    let x = env.usm_f32(&[0.0; 2]);
    let y = env.usm_f32(&[0.0; 2]);
    let build = |first: &str, second: &str| {
        let g = env.graph(GraphProps::none());
        g.add(|h| h.parallel_for(&env.kernel(first), 2, args![&x]), NodeProps::none()).unwrap();
        g.add(|h| h.parallel_for(&env.kernel(second), 2, args![&x, &y, 1.0f32]), NodeProps::none()).unwrap();
        g
    };
    let target = build("increment", "scale").finalize(FinalizeProps::updatable()).unwrap();
    let swapped = env.graph(GraphProps::none());
    swapped.add(|h| h.parallel_for(&env.kernel("scale"), 2, args![&x, &y, 1.0f32]), NodeProps::none()).unwrap();
    swapped.add(|h| h.parallel_for(&env.kernel("increment"), 2, args![&x]), NodeProps::none()).unwrap();
    let msg = expect_err(target.update_graph(&swapped), Errc::Invalid, 31);
    assert!(msg.contains("node #0"), "{msg}");
}

/// Row 73 (undefined behaviour): this runtime diagnoses what it can see. A pointer into
/// another graph's allocation, and a use of an allocation after its free (found by the
/// verifier at finalize).
#[test]
fn row_73_undefined_behaviour_that_is_diagnosed() {
    let env = Env::new();
    let g1 = env.graph(GraphProps::none());
    let mut ptr = None;
    g1.add(|h| ptr = Some(h.async_malloc(UsmKind::Device, Type::F32, 2)), NodeProps::none()).unwrap();
    let ptr = ptr.unwrap();
    let g2 = env.graph(GraphProps::none());
    expect_err(g2.add(|h| h.memset(ptr.clone(), 0, 8), NodeProps::none()), Errc::Invalid, 73);

    let g = env.graph(GraphProps::none());
    let mut p = None;
    let a = g.add(|h| p = Some(h.async_malloc(UsmKind::Device, Type::F32, 2)), NodeProps::none()).unwrap();
    let p = p.unwrap();
    let f = g.add(|h| h.async_free(&p), NodeProps::depends_on(&[&a])).unwrap();
    g.add(|h| h.memset(p.clone(), 0, 8), NodeProps::depends_on(&[&f])).unwrap();
    let msg = expect_err(g.finalize(FinalizeProps::none()), Errc::Invalid, 73);
    assert!(msg.contains("E024"), "{msg}");
}

#[test]
fn scalar_literal_types_are_checked() {
    // Not a §22 row: an argument that does not fit its parameter is refused at add
    // (C++ would not compile it), with row 0.
    let env = Env::new();
    let g = env.graph(GraphProps::none());
    let (x, y) = (env.usm_f32(&[0.0; 2]), env.usm_f32(&[0.0; 2]));
    let r = g.add(|h| h.parallel_for(&env.kernel("scale"), 2, args![&x, &y, 2u32]), NodeProps::none());
    expect_err(r, Errc::Invalid, 0);
    let lit = Literal { value: LitValue::Float(2.0), ty: Some(ScalarType::F32) };
    g.add(
        |h| h.parallel_for(&env.kernel("scale"), 2, vec![(&x).into(), (&y).into(), KArg::Scalar(lit)]),
        NodeProps::none(),
    )
    .unwrap();
}
