//! Executable graph update: whole-graph update accepted on topologically identical
//! graphs and refused, naming the first difference, on each kind of non-identity; and
//! individual node update (dynamic parameters, dynamic command groups, ranges), checked
//! by running the graphs.

mod common;

use cmdgraph_ir::identity::Mismatch;
use cmdgraph_ir::EdgeKind;
use cmdgraph_sycl::*;
use common::*;

struct Bufs {
    x: Usm,
    y: Usm,
}

fn bufs(env: &Env) -> Bufs {
    Bufs { x: env.usm_f32(&[1.0, 2.0, 3.0, 4.0]), y: env.usm_f32(&[0.0; 4]) }
}

/// y = s * x, then y += 1: two kernel nodes joined by `depends_on`.
fn two_step(env: &Env, b: &Bufs, s: f32) -> ModifiableGraph {
    let g = env.graph(GraphProps::none());
    let k0 = g.add(|h| h.parallel_for(&env.kernel("scale"), 4, args![&b.x, &b.y, s]), NodeProps::none()).unwrap();
    g.add(|h| h.parallel_for(&env.kernel("increment"), 4, args![&b.y]), NodeProps::depends_on(&[&k0])).unwrap();
    g
}

fn run(env: &Env, exec: &ExecutableGraph) {
    env.queue(QueueProps::none()).ext_oneapi_graph(exec, &[]).unwrap();
}

#[test]
fn whole_graph_update_from_identical_graph_changes_parameters() {
    let env = Env::new();
    let b = bufs(&env);
    let exec = two_step(&env, &b, 2.0).finalize(FinalizeProps::updatable()).unwrap();
    run(&env, &exec);
    assert_eq!(b.y.read::<f32>().unwrap(), vec![3.0, 5.0, 7.0, 9.0]);
    let source = two_step(&env, &b, 10.0);
    exec.update_graph(&source).unwrap();
    roundtrip_module(&exec.module());
    run(&env, &exec);
    assert_eq!(b.y.read::<f32>().unwrap(), vec![11.0, 21.0, 31.0, 41.0]);
}

#[test]
fn whole_graph_update_from_own_graph_keeps_registrations() {
    let env = Env::new();
    let b = bufs(&env);
    let g = env.graph(GraphProps::none());
    let p = DynamicParameter::new(&g, 2.0f32).unwrap();
    let n = g.add(|h| h.parallel_for(&env.kernel("scale"), 4, args![&b.x, &b.y, &p]), NodeProps::none()).unwrap();
    let exec = g.finalize(FinalizeProps::updatable()).unwrap();
    p.update(3.0f32).unwrap();
    run(&env, &exec);
    assert_eq!(b.y.read::<f32>().unwrap(), vec![2.0, 4.0, 6.0, 8.0], "not committed yet");
    n.update_range(2u64).unwrap();
    exec.update_graph(&g).unwrap();
    let text = roundtrip_module(&exec.module());
    assert!(text.contains(&format!("args(@{}, @{}, %{})", b.x.name(), b.y.name(), p.name())), "{text}");
    b.y.write(&[0.0f32; 4]).unwrap();
    run(&env, &exec);
    assert_eq!(b.y.read::<f32>().unwrap(), vec![3.0, 6.0, 0.0, 0.0]);
}

/// Builds target and source with `build`, finalizes the target and returns the refusal.
fn refused(_env: &Env, build: impl Fn(bool) -> ModifiableGraph) -> cmdgraph_ir::identity::Mismatch {
    let exec = build(false).finalize(FinalizeProps::updatable()).unwrap();
    let before = cmdgraph_ir::text::print(&exec.module());
    let source = build(true);
    let (tm, th) = (exec.module(), exec.graph_handle());
    let (sm, sh) = source.to_module();
    let mismatch = cmdgraph_ir::identity::topologically_identical(&tm, th, &sm, sh).expect_err("differs");
    let msg = expect_err(exec.update_graph(&source), Errc::Invalid, 31);
    assert!(msg.contains(&mismatch.to_string()), "{msg}");
    assert_eq!(cmdgraph_ir::text::print(&exec.module()), before, "a refused update changes nothing");
    mismatch.mismatch
}

#[test]
fn whole_graph_update_refuses_other_node_count() {
    let env = Env::new();
    let m = refused(&env, |extra| {
        let g = env.graph(GraphProps::none());
        g.add_empty(NodeProps::none()).unwrap();
        if extra {
            g.add_empty(NodeProps::none()).unwrap();
        }
        g
    });
    assert_eq!(m, Mismatch::NodeCount { a: 1, b: 2 });
}

#[test]
fn whole_graph_update_refuses_other_edge_count() {
    let env = Env::new();
    let m = refused(&env, |extra| {
        let g = env.graph(GraphProps::none());
        let a = g.add_empty(NodeProps::none()).unwrap();
        let b = g.add_empty(NodeProps::none()).unwrap();
        if extra {
            g.make_edge(&a, &b).unwrap();
        }
        g
    });
    assert_eq!(m, Mismatch::EdgeCount { a: 0, b: 1 });
}

#[test]
fn whole_graph_update_refuses_other_node_type() {
    let env = Env::new();
    let b = bufs(&env);
    let m = refused(&env, |kernel| {
        let g = env.graph(GraphProps::none());
        if kernel {
            g.add(|h| h.parallel_for(&env.kernel("increment"), 4, args![&b.y]), NodeProps::none()).unwrap();
        } else {
            g.add_empty(NodeProps::none()).unwrap();
        }
        g
    });
    assert_eq!(m, Mismatch::NodeType { a: NodeType::Empty, b: NodeType::Kernel });
}

#[test]
fn whole_graph_update_refuses_other_kernel() {
    let env = Env::new();
    let b = bufs(&env);
    let m = refused(&env, |negate| {
        let g = env.graph(GraphProps::none());
        let k = env.kernel(if negate { "negate" } else { "relu" });
        g.add(|h| h.parallel_for(&k, 4, args![&b.x, &b.y]), NodeProps::none()).unwrap();
        g
    });
    assert_eq!(m, Mismatch::Kernel { a: "relu".into(), b: "negate".into() });
}

#[test]
fn whole_graph_update_refuses_other_edge_source() {
    let env = Env::new();
    let m = refused(&env, |other| {
        let g = env.graph(GraphProps::none());
        let a = g.add_empty(NodeProps::none()).unwrap();
        let b = g.add_empty(NodeProps::none()).unwrap();
        g.add_empty(NodeProps::depends_on(&[if other { &b } else { &a }])).unwrap();
        g
    });
    assert!(matches!(m, Mismatch::EdgeSource { index: 0, .. }), "{m:?}");
}

#[test]
fn whole_graph_update_refuses_other_provenance() {
    let env = Env::new();
    let m = refused(&env, |via_make_edge| {
        let g = env.graph(GraphProps::none());
        let a = g.add_empty(NodeProps::none()).unwrap();
        if via_make_edge {
            let b = g.add_empty(NodeProps::none()).unwrap();
            g.make_edge(&a, &b).unwrap();
        } else {
            g.add_empty(NodeProps::depends_on(&[&a])).unwrap();
        }
        g
    });
    assert_eq!(m, Mismatch::EdgeProvenance { index: 0, a: EdgeKind::DependsOn, b: EdgeKind::MakeEdge });
}

#[test]
fn whole_graph_update_refuses_other_edge_order() {
    let env = Env::new();
    let m = refused(&env, |swapped| {
        let g = env.graph(GraphProps::none());
        let a = g.add_empty(NodeProps::none()).unwrap();
        let b = g.add_empty(NodeProps::none()).unwrap();
        let c = g.add_empty(NodeProps::none()).unwrap();
        if swapped {
            g.make_edge(&b, &c).unwrap();
            g.make_edge(&a, &c).unwrap();
        } else {
            g.make_edge(&a, &c).unwrap();
            g.make_edge(&b, &c).unwrap();
        }
        g
    });
    assert!(matches!(m, Mismatch::EdgeSource { index: 0, .. }), "{m:?}");
}

#[test]
fn whole_graph_update_refuses_other_in_degree() {
    let env = Env::new();
    let m = refused(&env, |moved| {
        let g = env.graph(GraphProps::none());
        let a = g.add_empty(NodeProps::none()).unwrap();
        let b = g.add_empty(NodeProps::none()).unwrap();
        let c = g.add_empty(NodeProps::none()).unwrap();
        if moved {
            g.make_edge(&a, &b).unwrap();
            g.make_edge(&a, &c).unwrap();
        } else {
            g.make_edge(&a, &c).unwrap();
            g.make_edge(&b, &c).unwrap();
        }
        g
    });
    assert_eq!(m, Mismatch::InDegree { a: 0, b: 1 });
}

/// Decision A1: a host task's function can be swapped by whole-graph update (Table 6).
#[test]
fn whole_graph_update_swaps_host_task() {
    let env = Env::new();
    let x = env.usm_f32(&[1.0; 2]);
    let name = format!("@{}", x.name());
    for (cb, factor) in [("times2", 2.0f32), ("times5", 5.0)] {
        let name = name.clone();
        env.ctx.register_host_task(cb, move |hc| {
            let v: Vec<f32> = hc.read_as(&name)?;
            hc.write_as(&name, 0, &v.iter().map(|a| a * factor).collect::<Vec<_>>())
        });
    }
    let build = |cb: &str| {
        let g = env.graph(GraphProps::none());
        g.add(|h| h.host_task_with_access(cb, &[(x.ptr(), Access::ReadWrite)]), NodeProps::none()).unwrap();
        g
    };
    let exec = build("times2").finalize(FinalizeProps::updatable()).unwrap();
    run(&env, &exec);
    exec.update_graph(&build("times5")).unwrap();
    run(&env, &exec);
    assert_eq!(x.read::<f32>().unwrap(), vec![10.0, 10.0]);
}

#[test]
fn dynamic_parameter_reaches_executable_only_after_update() {
    let env = Env::new();
    let b = bufs(&env);
    let g = env.graph(GraphProps::none());
    let alpha = DynamicParameter::new(&g, 2.0f32).unwrap();
    let n = g.add(|h| h.parallel_for(&env.kernel("scale"), 4, args![&b.x, &b.y, &alpha]), NodeProps::none()).unwrap();
    let exec = g.finalize(FinalizeProps::updatable()).unwrap();
    alpha.update(-1.0f32).unwrap();
    run(&env, &exec);
    assert_eq!(b.y.read::<f32>().unwrap(), vec![2.0, 4.0, 6.0, 8.0]);
    exec.update_node(&n).unwrap();
    run(&env, &exec);
    assert_eq!(b.y.read::<f32>().unwrap(), vec![-1.0, -2.0, -3.0, -4.0]);
    // A new finalize takes the current value too.
    let fresh = g.finalize(FinalizeProps::none()).unwrap();
    alpha.update(0.5f32).unwrap();
    run(&env, &fresh);
    assert_eq!(b.y.read::<f32>().unwrap(), vec![-1.0, -2.0, -3.0, -4.0]);
}

/// A parameter shared by two nodes: updating one node leaves the other with the value it
/// had (it is written out as a plain argument in the snapshot until it is updated too).
#[test]
fn shared_parameter_updates_only_the_nodes_given() {
    let env = Env::new();
    let x = env.usm_f32(&[1.0, 1.0]);
    let (y1, y2) = (env.usm_f32(&[0.0; 2]), env.usm_f32(&[0.0; 2]));
    let g = env.graph(GraphProps::none());
    let s = DynamicParameter::new(&g, 2.0f32).unwrap();
    let scale = env.kernel("scale");
    let n1 = g.add(|h| h.parallel_for(&scale, 2, args![&x, &y1, &s]), NodeProps::none()).unwrap();
    let n2 = g.add(|h| h.parallel_for(&scale, 2, args![&x, &y2, &s]), NodeProps::none()).unwrap();
    let exec = g.finalize(FinalizeProps::updatable()).unwrap();
    s.update(7.0f32).unwrap();
    exec.update_node(&n1).unwrap();
    roundtrip_module(&exec.module());
    run(&env, &exec);
    assert_eq!((y1.read::<f32>().unwrap(), y2.read::<f32>().unwrap()), (vec![7.0; 2], vec![2.0; 2]));
    exec.update_nodes(&[&n2]).unwrap();
    run(&env, &exec);
    assert_eq!(y2.read::<f32>().unwrap(), vec![7.0; 2]);
    let text = roundtrip_module(&exec.module());
    assert_eq!(text.matches(&format!("%{})", s.name())).count(), 2, "both registrations are back:\n{text}");
}

/// A parameter update re-points every slot registered with it in the modifiable graph
/// (decision A6); like a value, the re-pointed slot reaches an executable graph only when
/// its node is updated, and a node still naming the other parameter keeps that one.
#[test]
fn repointed_slot_reaches_executable_only_after_update() {
    let env = Env::new();
    let x = env.usm_f32(&[1.0, 1.0]);
    let (y1, y2) = (env.usm_f32(&[0.0; 2]), env.usm_f32(&[0.0; 2]));
    let g = env.graph(GraphProps::none());
    let p1 = DynamicParameter::new(&g, 2.0f32).unwrap();
    let p2 = DynamicParameter::new(&g, 5.0f32).unwrap();
    let scale = env.kernel("scale");
    let n1 = g
        .add(
            |h| {
                h.set_arg(2, &p1);
                h.parallel_for(&scale, 2, args![&x, &y1, &p2]);
            },
            NodeProps::none(),
        )
        .unwrap();
    let n2 = g.add(|h| h.parallel_for(&scale, 2, args![&x, &y2, &p2]), NodeProps::none()).unwrap();
    let exec = g.finalize(FinalizeProps::updatable()).unwrap();
    let ys = || (y1.read::<f32>().unwrap()[0], y2.read::<f32>().unwrap()[0]);
    run(&env, &exec);
    assert_eq!(ys(), (2.0, 5.0), "set_arg overrides the argument list");
    p2.update(4.0f32).unwrap();
    run(&env, &exec);
    assert_eq!(ys(), (2.0, 5.0), "not committed yet");
    exec.update_node(&n1).unwrap();
    run(&env, &exec);
    assert_eq!(ys(), (4.0, 5.0), "n2 keeps what it ran until it is updated");
    let text = roundtrip_module(&exec.module());
    assert!(text.contains(&format!("args(@{}, @{}, %{})", x.name(), y1.name(), p2.name())), "{text}");
    p1.update(3.0f32).unwrap();
    exec.update_nodes(&[&n1, &n2]).unwrap();
    run(&env, &exec);
    assert_eq!(ys(), (3.0, 4.0));
    let text = roundtrip_module(&exec.module());
    assert!(text.contains(&format!("args(@{}, @{}, %{})", x.name(), y1.name(), p1.name())), "{text}");
    assert!(text.contains(&format!("args(@{}, @{}, %{})", x.name(), y2.name(), p2.name())), "{text}");
}

/// A dynamic command group's alternative is a registration too: updating a parameter
/// whose slot a later registration took re-points the alternative's slot.
#[test]
fn parameter_update_reaches_dynamic_command_group_slots() {
    let env = Env::new();
    let x = env.usm_f32(&[1.0, 1.0]);
    let y = env.usm_f32(&[0.0; 2]);
    let g = env.graph(GraphProps::none());
    let p1 = DynamicParameter::new(&g, 2.0f32).unwrap();
    let p2 = DynamicParameter::new(&g, 5.0f32).unwrap();
    let scale = env.kernel("scale");
    let (x1, y1, x2, y2, s1, s2, q1, q2) =
        (x.clone(), y.clone(), x.clone(), y.clone(), scale.clone(), scale.clone(), p1.clone(), p2.clone());
    let dcg = DynamicCommandGroup::new(
        &g,
        vec![
            CommandGroup::new(move |h| {
                h.set_arg(2, &q2);
                h.parallel_for(&s1, 2, args![&x1, &y1, &q1]);
            }),
            CommandGroup::new(move |h| h.parallel_for(&s2, 2, args![&x2, &y2, 10.0f32])),
        ],
    )
    .unwrap();
    let n = g.add_dynamic(&dcg, NodeProps::none()).unwrap();
    let exec = g.finalize(FinalizeProps::updatable()).unwrap();
    run(&env, &exec);
    assert_eq!(y.read::<f32>().unwrap(), vec![5.0; 2]);
    p1.update(3.0f32).unwrap();
    let text = roundtrip(&g);
    assert!(text.contains(&format!("args(@{}, @{}, %{})", x.name(), y.name(), p1.name())), "{text}");
    exec.update_node(&n).unwrap();
    run(&env, &exec);
    assert_eq!(y.read::<f32>().unwrap(), vec![3.0; 2]);
}

#[test]
fn dynamic_command_group_switches_kernel_after_update() {
    let env = Env::new();
    let x = env.usm_f32(&[-1.0, 2.0]);
    let y = env.usm_f32(&[0.0; 2]);
    let g = env.graph(GraphProps::none());
    let (relu, negate) = (env.kernel("relu"), env.kernel("negate"));
    let (x1, y1, x2, y2) = (x.clone(), y.clone(), x.clone(), y.clone());
    let dcg = DynamicCommandGroup::new(
        &g,
        vec![
            CommandGroup::new(move |h| h.parallel_for(&relu, 2, args![&x1, &y1])),
            CommandGroup::new(move |h| h.parallel_for(&negate, 2, args![&x2, &y2])),
        ],
    )
    .unwrap();
    let n = g.add_dynamic(&dcg, NodeProps::none()).unwrap();
    assert_eq!(n.get_type(), NodeType::Kernel);
    let text = roundtrip(&g);
    assert!(text.contains(&format!("dcg %{} active(0)", dcg.name())), "{text}");
    let exec = g.finalize(FinalizeProps::updatable()).unwrap();
    run(&env, &exec);
    assert_eq!(y.read::<f32>().unwrap(), vec![0.0, 2.0]);
    dcg.set_active_index(1).unwrap();
    run(&env, &exec);
    assert_eq!(y.read::<f32>().unwrap(), vec![0.0, 2.0], "not committed yet");
    exec.update_node(&n).unwrap();
    run(&env, &exec);
    assert_eq!(y.read::<f32>().unwrap(), vec![1.0, -2.0]);
}

/// A range update of a dynamic node changes the active alternative, so every node
/// sharing the group; switching back keeps the updated range (000 §8.4.2).
#[test]
fn dynamic_command_group_range_follows_alternative() {
    let env = Env::new();
    let x = env.usm_f32(&[0.0; 4]);
    let g = env.graph(GraphProps::none());
    let inc = env.kernel("increment");
    let (i1, x1, i2, x2) = (inc.clone(), x.clone(), inc, x.clone());
    let dcg = DynamicCommandGroup::new(
        &g,
        vec![
            CommandGroup::new(move |h| h.parallel_for(&i1, 4, args![&x1])),
            CommandGroup::new(move |h| h.parallel_for(&i2, 4, args![&x2])),
        ],
    )
    .unwrap();
    let n = g.add_dynamic(&dcg, NodeProps::none()).unwrap();
    n.update_range(1u64).unwrap();
    dcg.set_active_index(1).unwrap();
    n.update_range(3u64).unwrap();
    dcg.set_active_index(0).unwrap();
    let exec = g.finalize(FinalizeProps::updatable()).unwrap();
    run(&env, &exec);
    assert_eq!(x.read::<f32>().unwrap(), vec![1.0, 0.0, 0.0, 0.0]);
    dcg.set_active_index(1).unwrap();
    exec.update_node(&n).unwrap();
    run(&env, &exec);
    assert_eq!(x.read::<f32>().unwrap(), vec![2.0, 1.0, 1.0, 0.0]);
}

/// Two nodes share a dynamic command group; updating one leaves the other running the
/// alternative it had.
#[test]
fn shared_dynamic_command_group_updates_only_given_node() {
    let env = Env::new();
    let x = env.usm_f32(&[3.0]);
    let (y1, y2) = (env.usm_f32(&[0.0]), env.usm_f32(&[0.0]));
    let g = env.graph(GraphProps::none());
    let p_out = DynamicParameter::new(&g, &y1).unwrap();
    let (relu, negate) = (env.kernel("relu"), env.kernel("negate"));
    let (xa, pa, xb, pb) = (x.clone(), p_out.clone(), x.clone(), p_out.clone());
    let dcg = DynamicCommandGroup::new(
        &g,
        vec![
            CommandGroup::new(move |h| h.parallel_for(&relu, 1, args![&xa, &pa])),
            CommandGroup::new(move |h| h.parallel_for(&negate, 1, args![&xb, &pb])),
        ],
    )
    .unwrap();
    let n1 = g.add_dynamic(&dcg, NodeProps::none()).unwrap();
    let _n2 = g.add_dynamic(&dcg, NodeProps::depends_on(&[&n1])).unwrap();
    let exec = g.finalize(FinalizeProps::updatable()).unwrap();
    dcg.set_active_index(1).unwrap();
    p_out.update(&y2).unwrap();
    exec.update_node(&n1).unwrap();
    roundtrip_module(&exec.module());
    run(&env, &exec);
    // n1 now negates into y2; n2 still runs relu into y1.
    assert_eq!((y1.read::<f32>().unwrap(), y2.read::<f32>().unwrap()), (vec![3.0], vec![-3.0]));
}

#[test]
fn update_range_reaches_executable_after_update() {
    let env = Env::new();
    let x = env.usm_f32(&[0.0; 8]);
    let q = env.queue(QueueProps::none());
    let g = env.graph(GraphProps::none());
    g.begin_recording(&q, RecordingProps::default()).unwrap();
    let e = q.parallel_for_nd(&env.kernel("double2d"), NdRange::new([2u64, 4], [1u64, 2]), args![&x], &[]).unwrap();
    g.end_recording();
    let n = Node::get_node_from_event(&e).unwrap();
    x.write(&[1.0f32; 8]).unwrap();
    let exec = g.finalize(FinalizeProps::updatable()).unwrap();
    n.update_nd_range(NdRange::new([1u64, 4], [1u64, 4])).unwrap();
    exec.update_node(&n).unwrap();
    run(&env, &exec);
    assert_eq!(x.read::<f32>().unwrap(), vec![2.0, 2.0, 2.0, 2.0, 1.0, 1.0, 1.0, 1.0]);
}

/// Decision A2: `update(node)` takes kernels and host tasks; other node types have nothing
/// to update and are accepted as a no-op (allocation nodes are refused, row 26).
#[test]
fn update_of_node_without_updatable_state_is_a_no_op() {
    let env = Env::new();
    let x = env.usm_f32(&[0.0; 2]);
    let g = env.graph(GraphProps::none());
    let e = g.add_empty(NodeProps::none()).unwrap();
    let m = g.add(|h| h.memset(&x, 0, 8), NodeProps::depends_on(&[&e])).unwrap();
    let exec = g.finalize(FinalizeProps::updatable()).unwrap();
    let before = cmdgraph_ir::text::print(&exec.module());
    exec.update_nodes(&[&e, &m]).unwrap();
    assert_eq!(cmdgraph_ir::text::print(&exec.module()), before);
}

/// The executable graph is a snapshot: nodes added later do not run in it.
#[test]
fn executable_graph_is_independent_of_later_changes() {
    let env = Env::new();
    let x = env.usm_f32(&[0.0; 2]);
    let g = env.graph(GraphProps::none());
    g.add(|h| h.parallel_for(&env.kernel("increment"), 2, args![&x]), NodeProps::none()).unwrap();
    let exec = g.finalize(FinalizeProps::none()).unwrap();
    g.add(|h| h.parallel_for(&env.kernel("increment"), 2, args![&x]), NodeProps::all_leaves()).unwrap();
    run(&env, &exec);
    assert_eq!(x.read::<f32>().unwrap(), vec![1.0, 1.0]);
    let exec2 = g.finalize(FinalizeProps::none()).unwrap();
    run(&env, &exec2);
    assert_eq!(x.read::<f32>().unwrap(), vec![3.0, 3.0]);
}
