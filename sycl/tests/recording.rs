//! Queue recording rules (000 §8.2.2, §8.5, §8.11.7): one test per rule, each checking
//! the edges and their provenance, and, where the graph computes something, the numbers.

mod common;

use cmdgraph_ir::{EdgeKind, NodeType, Type};
use cmdgraph_sycl::*;
use common::*;

fn node(e: &Event) -> Node {
    Node::get_node_from_event(e).expect("recorded event")
}

/// In-order queue: each submission depends on the one before (`via in_order`).
#[test]
fn in_order_queue_chains_submissions() {
    let env = Env::new();
    let q = env.named_queue("inorder", QueueProps::in_order());
    let graph = env.graph(GraphProps::none());
    let x = env.usm_f32(&[1.0, 2.0, 3.0, 4.0]);
    let y = env.usm_f32(&[0.0; 4]);
    graph.begin_recording(&q, RecordingProps::default()).unwrap();
    let e0 = q.parallel_for(&env.kernel("increment"), 4, args![&x], &[]).unwrap();
    let e1 = q.parallel_for(&env.kernel("scale"), 4, args![&x, &y, 10.0f32], &[]).unwrap();
    let e2 = q.parallel_for(&env.kernel("increment"), 4, args![&y], &[]).unwrap();
    graph.end_recording();
    let (n0, n1, n2) = (node(&e0), node(&e1), node(&e2));
    assert_eq!(edges(&graph), vec![edge(&n0, &n1, EdgeKind::InOrder), edge(&n1, &n2, EdgeKind::InOrder)]);
    let text = roundtrip(&graph);
    assert!(text.contains("queue @inorder in_order"), "{text}");
    assert!(text.contains("on @inorder after(%kernel1 via in_order)"), "{text}");
    let exec = graph.finalize(FinalizeProps::none()).unwrap();
    q.ext_oneapi_graph(&exec, &[]).unwrap();
    assert_eq!(y.read::<f32>().unwrap(), vec![21.0, 31.0, 41.0, 51.0]);
}

/// An in-order queue keeps its chain in a graph across recording sessions.
#[test]
fn in_order_chain_continues_after_recording_again() {
    let env = Env::new();
    let q = env.queue(QueueProps::in_order());
    let graph = env.graph(GraphProps::none());
    let x = env.usm_f32(&[0.0; 2]);
    graph.begin_recording(&q, RecordingProps::default()).unwrap();
    let e0 = q.parallel_for(&env.kernel("increment"), 2, args![&x], &[]).unwrap();
    graph.end_recording();
    graph.begin_recording(&q, RecordingProps::default()).unwrap();
    let e1 = q.parallel_for(&env.kernel("increment"), 2, args![&x], &[]).unwrap();
    graph.end_recording();
    assert_eq!(edges(&graph), vec![edge(&node(&e0), &node(&e1), EdgeKind::InOrder)]);
    roundtrip(&graph);
}

/// A recorded command group on an out-of-order queue depends only on what it names.
#[test]
fn out_of_order_queue_makes_no_implicit_edges() {
    let env = Env::new();
    let q = env.queue(QueueProps::none());
    let graph = env.graph(GraphProps::none());
    let x = env.usm_f32(&[0.0; 2]);
    let y = env.usm_f32(&[0.0; 2]);
    graph.begin_recording(&q, RecordingProps::default()).unwrap();
    q.parallel_for(&env.kernel("increment"), 2, args![&x], &[]).unwrap();
    q.parallel_for(&env.kernel("increment"), 2, args![&y], &[]).unwrap();
    graph.end_recording();
    assert!(edges(&graph).is_empty());
    assert_eq!(graph.get_root_nodes().len(), 2);
    roundtrip(&graph);
}

/// `handler::depends_on(event)` makes a `via event` edge.
#[test]
fn depends_on_event_makes_event_edge() {
    let env = Env::new();
    let q = env.queue(QueueProps::none());
    let graph = env.graph(GraphProps::none());
    let x = env.usm_f32(&[1.0; 2]);
    let y = env.usm_f32(&[0.0; 2]);
    graph.begin_recording(&q, RecordingProps::default()).unwrap();
    let a = q.parallel_for(&env.kernel("increment"), 2, args![&x], &[]).unwrap();
    let b = q
        .submit(|h| {
            h.depends_on(&a);
            h.parallel_for(&env.kernel("scale"), 2, args![&x, &y, 3.0f32]);
        })
        .unwrap();
    graph.end_recording();
    assert_eq!(edges(&graph), vec![edge(&node(&a), &node(&b), EdgeKind::Event)]);
    assert_eq!(node(&b).get_predecessors(), vec![node(&a)]);
    assert_eq!(node(&a).get_successors(), vec![node(&b)]);
    roundtrip(&graph);
    let exec = graph.finalize(FinalizeProps::none()).unwrap();
    q.ext_oneapi_graph(&exec, &[]).unwrap();
    assert_eq!(y.read::<f32>().unwrap(), vec![6.0, 6.0]);
}

/// Records `first` then `second` accessing one buffer and returns the edges.
fn accessor_pair(first: Access, second: Access) -> Vec<EdgeKind> {
    let env = Env::new();
    let buf = Buffer::new(&env.ctx, None, Type::F32, 4).unwrap();
    let q = env.queue(QueueProps::none());
    let graph = env.graph(GraphProps::buffers());
    graph.begin_recording(&q, RecordingProps::default()).unwrap();
    for mode in [first, second] {
        let out = env.usm_f32(&[0.0; 4]);
        let src = env.usm_f32(&[1.0; 4]);
        q.submit(|h| {
            let acc = h.access(&buf, mode);
            if mode == Access::Read {
                h.parallel_for(&env.kernel("scale"), 4, args![&acc, &out, 1.0f32]);
            } else {
                h.parallel_for(&env.kernel("scale"), 4, args![&src, &acc, 1.0f32]);
            }
        })
        .unwrap();
    }
    graph.end_recording();
    roundtrip(&graph);
    edges(&graph).into_iter().map(|e| e.2).collect()
}

/// Read after write: the reader depends on the writer.
#[test]
fn accessor_read_after_write_makes_edge() {
    assert_eq!(accessor_pair(Access::Write, Access::Read), vec![EdgeKind::Accessor]);
}

/// Write after read: the writer depends on the reader.
#[test]
fn accessor_write_after_read_makes_edge() {
    assert_eq!(accessor_pair(Access::Read, Access::Write), vec![EdgeKind::Accessor]);
}

/// Write after write: the second writer depends on the first (`no_init` writes too).
#[test]
fn accessor_write_after_write_makes_edge() {
    assert_eq!(accessor_pair(Access::Write, Access::Write), vec![EdgeKind::Accessor]);
    assert_eq!(accessor_pair(Access::Write, Access::NoInit), vec![EdgeKind::Accessor]);
}

/// Read after read: no edge.
#[test]
fn accessor_read_after_read_makes_no_edge() {
    assert_eq!(accessor_pair(Access::Read, Access::Read), vec![]);
}

/// Accessors on disjoint element ranges of one buffer do not conflict; overlapping ones do.
#[test]
fn accessor_ranges_decide_conflicts() {
    let env = Env::new();
    let buf = Buffer::new(&env.ctx, None, Type::F32, 8).unwrap();
    let graph = env.graph(GraphProps::buffers());
    let inc = env.kernel("increment");
    let a = graph
        .add(
            |h| {
                let acc = h.access_range(&buf, Access::ReadWrite, 0, 4);
                h.parallel_for(&inc, 4, args![&acc]);
            },
            NodeProps::none(),
        )
        .unwrap();
    let b = graph
        .add(
            |h| {
                let acc = h.access_range(&buf, Access::ReadWrite, 4, 8);
                h.parallel_for(&inc, 4, args![&acc]);
            },
            NodeProps::none(),
        )
        .unwrap();
    let c = graph
        .add(
            |h| {
                let acc = h.access_range(&buf, Access::ReadWrite, 2, 6);
                h.parallel_for(&inc, 4, args![&acc]);
            },
            NodeProps::none(),
        )
        .unwrap();
    assert_eq!(edges(&graph), vec![edge(&a, &c, EdgeKind::Accessor), edge(&b, &c, EdgeKind::Accessor)]);
    roundtrip(&graph);
}

/// A writer after a writer and two readers depends on the readers only: the first
/// writer is already ordered before them (read-after-write edges).
#[test]
fn accessor_edges_skip_sources_already_ordered() {
    let env = Env::new();
    let buf = Buffer::new(&env.ctx, None, Type::F32, 4).unwrap();
    let graph = env.graph(GraphProps::buffers());
    let scale = env.kernel("scale");
    let src = env.usm_f32(&[2.0; 4]);
    let (o1, o2) = (env.usm_f32(&[0.0; 4]), env.usm_f32(&[0.0; 4]));
    let write = |h: &mut Handler| {
        let acc = h.access(&buf, Access::Write);
        h.parallel_for(&scale, 4, args![&src, &acc, 1.0f32]);
    };
    let w1 = graph.add(write, NodeProps::none()).unwrap();
    let r1 = graph
        .add(
            |h| {
                let acc = h.access(&buf, Access::Read);
                h.parallel_for(&scale, 4, args![&acc, &o1, 1.0f32]);
            },
            NodeProps::none(),
        )
        .unwrap();
    let r2 = graph
        .add(
            |h| {
                let acc = h.access(&buf, Access::Read);
                h.parallel_for(&scale, 4, args![&acc, &o2, 1.0f32]);
            },
            NodeProps::none(),
        )
        .unwrap();
    let w2 = graph.add(write, NodeProps::none()).unwrap();
    assert_eq!(
        edges(&graph),
        vec![
            edge(&w1, &r1, EdgeKind::Accessor),
            edge(&w1, &r2, EdgeKind::Accessor),
            edge(&r1, &w2, EdgeKind::Accessor),
            edge(&r2, &w2, EdgeKind::Accessor),
        ]
    );
    roundtrip(&graph);
}

/// A recorded accessor conflicts with one added through the explicit API before.
#[test]
fn accessor_edges_join_explicit_and_recorded_nodes() {
    let env = Env::new();
    let buf = Buffer::new(&env.ctx, None, Type::F32, 4).unwrap();
    let graph = env.graph(GraphProps::buffers());
    let inc = env.kernel("increment");
    let first = graph
        .add(
            |h| {
                let acc = h.access(&buf, Access::ReadWrite);
                h.parallel_for(&inc, 4, args![&acc]);
            },
            NodeProps::none(),
        )
        .unwrap();
    let q = env.queue(QueueProps::none());
    graph.begin_recording(&q, RecordingProps::default()).unwrap();
    let e = q
        .submit(|h| {
            let acc = h.access(&buf, Access::ReadWrite);
            h.parallel_for(&inc, 4, args![&acc]);
        })
        .unwrap();
    graph.end_recording();
    assert_eq!(edges(&graph), vec![edge(&first, &node(&e), EdgeKind::Accessor)]);
    roundtrip(&graph);
    let exec = graph.finalize(FinalizeProps::none()).unwrap();
    q.ext_oneapi_graph(&exec, &[]).unwrap();
    assert_eq!(buf.host_access::<f32>().unwrap(), vec![2.0; 4]);
}

/// Builds the two-queue scene of the barrier tests: q1 records `a` and `b`, q2 records
/// `c` after `a`.
struct Scene {
    env: Env,
    graph: ModifiableGraph,
    q1: Queue,
    q2: Queue,
    a: Event,
    b: Event,
    c: Event,
    x: Usm,
}

fn scene() -> Scene {
    let env = Env::new();
    let graph = env.graph(GraphProps::none());
    let q1 = env.named_queue("q1", QueueProps::none());
    let q2 = env.named_queue("q2", QueueProps::none());
    let x = env.usm_f32(&[0.0; 4]);
    graph.begin_recording_queues(&[&q1, &q2], RecordingProps::default()).unwrap();
    let inc = env.kernel("increment");
    let a = q1.parallel_for(&inc, 1, args![x.at(0)], &[]).unwrap();
    let b = q1.parallel_for(&inc, 1, args![x.at(1)], &[]).unwrap();
    let c = q2.parallel_for(&inc, 1, args![x.at(0)], &[&a]).unwrap();
    Scene { env, graph, q1, q2, a, b, c, x }
}

/// A barrier with an empty wait list depends on its queue's leaves, the nodes recorded
/// from its queue with no successor at all (000 §8.11.7, as DPC++ has it): `a`, whose only
/// successor `c` is from q2, is not one, so the barrier waits for `b` only. Only later
/// submissions from that queue depend on the barrier.
#[test]
fn barrier_without_wait_list_waits_for_queue_leaves() {
    let s = scene();
    let inc = s.env.kernel("increment");
    let bar = s.q1.ext_oneapi_submit_barrier().unwrap();
    let d = s.q2.parallel_for(&inc, 1, args![s.x.at(2)], &[]).unwrap();
    let e = s.q1.parallel_for(&inc, 1, args![s.x.at(3)], &[]).unwrap();
    s.graph.end_recording();
    let [a, b, c, bar, d, e] = [&s.a, &s.b, &s.c, &bar, &d, &e].map(node);
    assert_eq!(bar.get_type(), NodeType::Barrier);
    assert_eq!(
        edges(&s.graph),
        vec![edge(&a, &c, EdgeKind::Event), edge(&b, &bar, EdgeKind::Barrier), edge(&bar, &e, EdgeKind::Barrier)]
    );
    assert_eq!(bar.get_predecessors(), vec![b]);
    assert_eq!(a.get_successors(), vec![c], "a's successor on q2 keeps it from being a leaf of q1");
    assert!(d.get_predecessors().is_empty(), "q2 does not wait for q1's barrier");
    let text = roundtrip(&s.graph);
    assert!(text.contains("barrier on @q1 after("), "{text}");
    let exec = s.graph.finalize(FinalizeProps::none()).unwrap();
    s.q1.ext_oneapi_graph(&exec, &[]).unwrap();
    assert_eq!(s.x.read::<f32>().unwrap(), vec![2.0, 1.0, 1.0, 1.0]);
}

/// A successor added through the explicit API counts too: a node of the queue that an
/// explicit node depends on is no leaf of the queue, so a barrier recorded later gets no
/// edge from it; the barrier then depends on nothing when the queue has no other node.
#[test]
fn barrier_skips_queue_node_with_explicit_successor() {
    let env = Env::new();
    let graph = env.graph(GraphProps::none());
    let q = env.named_queue("q", QueueProps::none());
    let x = env.usm_f32(&[0.0; 2]);
    let inc = env.kernel("increment");
    graph.begin_recording(&q, RecordingProps::default()).unwrap();
    let a = node(&q.parallel_for(&inc, 1, args![x.at(0)], &[]).unwrap());
    graph.end_recording();
    let join = graph.add_empty(NodeProps::depends_on(&[&a])).unwrap();
    graph.begin_recording(&q, RecordingProps::default()).unwrap();
    let b = node(&q.parallel_for(&inc, 1, args![x.at(1)], &[]).unwrap());
    let bar = node(&q.ext_oneapi_submit_barrier().unwrap());
    graph.end_recording();
    assert_eq!(a.get_successors(), vec![join]);
    assert_eq!(bar.get_predecessors(), vec![b], "`a` has a successor, so it is no leaf of q");
    roundtrip(&graph);
}

/// A barrier with a wait list depends on exactly the listed events (here one from the
/// other queue); later submissions of its own queue depend on it, the other queue's do not.
#[test]
fn barrier_with_wait_list_across_queues() {
    let s = scene();
    let inc = s.env.kernel("increment");
    let bar = s.q1.ext_oneapi_submit_barrier_with(&[&s.c]).unwrap();
    let d = s.q2.parallel_for(&inc, 1, args![s.x.at(2)], &[]).unwrap();
    let e = s.q1.parallel_for(&inc, 1, args![s.x.at(3)], &[]).unwrap();
    s.graph.end_recording();
    let [a, c, bar, d, e] = [&s.a, &s.c, &bar, &d, &e].map(node);
    assert_eq!(
        edges(&s.graph),
        vec![edge(&a, &c, EdgeKind::Event), edge(&c, &bar, EdgeKind::Barrier), edge(&bar, &e, EdgeKind::Barrier)]
    );
    assert!(d.get_predecessors().is_empty());
    let text = roundtrip(&s.graph);
    assert!(text.contains(&format!("barrier wait(%{}) on @q1", c.name())), "{text}");
}

/// Every later submission of the barrier's queue gets its own edge from the barrier, even
/// one already ordered after it through another path (here an event on a node that depends
/// on the barrier): construction keeps the edges the API makes; passes such as
/// `transitive-reduction` may drop redundant ones later.
#[test]
fn barrier_edge_made_even_when_already_ordered() {
    let s = scene();
    let inc = s.env.kernel("increment");
    let bar = s.q1.ext_oneapi_submit_barrier().unwrap();
    let e = s.q1.parallel_for(&inc, 1, args![s.x.at(3)], &[]).unwrap();
    let f = s.q1.parallel_for(&inc, 1, args![s.x.at(3)], &[&e]).unwrap();
    s.graph.end_recording();
    let [bar, e, f] = [&bar, &e, &f].map(node);
    assert_eq!(f.get_predecessors(), vec![e.clone(), bar.clone()]);
    assert_eq!(e.get_predecessors(), vec![bar.clone()]);
    assert_eq!(bar.get_successors(), vec![e.clone(), f.clone()]);
    let listed = edges(&s.graph);
    assert_eq!(&listed[listed.len() - 2..], &[edge(&e, &f, EdgeKind::Event), edge(&bar, &f, EdgeKind::Barrier)]);
    roundtrip(&s.graph);
}

/// On an in-order queue a barrier joins the chain. The chain edge comes first; a barrier
/// edge from the same source is not made again (A5), so the barrier's edge from `a` and
/// its edge to `b` are chain edges, and `c`, chained after `b`, gets no edge from the
/// barrier: in-order queues never get the last-barrier edge, as in DPC++ (A4; the DPC++
/// cases are in `barriers_dpcpp.rs`).
#[test]
fn barrier_on_in_order_queue_follows_chain() {
    let env = Env::new();
    let q = env.queue(QueueProps::in_order());
    let graph = env.graph(GraphProps::none());
    let x = env.usm_f32(&[0.0; 1]);
    graph.begin_recording(&q, RecordingProps::default()).unwrap();
    let a = q.parallel_for(&env.kernel("increment"), 1, args![&x], &[]).unwrap();
    let bar = q.ext_oneapi_submit_barrier().unwrap();
    let b = q.parallel_for(&env.kernel("increment"), 1, args![&x], &[]).unwrap();
    let c = q.parallel_for(&env.kernel("increment"), 1, args![&x], &[]).unwrap();
    graph.end_recording();
    let [a, bar, b, c] = [&a, &bar, &b, &c].map(node);
    assert_eq!(
        edges(&graph),
        vec![edge(&a, &bar, EdgeKind::InOrder), edge(&bar, &b, EdgeKind::InOrder), edge(&b, &c, EdgeKind::InOrder),]
    );
    assert_eq!(bar.get_successors(), vec![b.clone()]);
    roundtrip(&graph);
}

/// Transitive recording: an executing queue that depends on a recording queue's event
/// records the command group (`via transitive`), inherits the recording properties and
/// stops with the graph's `end_recording()`; its later submissions are ordinary recorded
/// ones.
#[test]
fn transitive_recording_joins_the_graph() {
    let env = Env::new();
    let graph = env.graph(GraphProps::none());
    let q1 = env.queue(QueueProps::none());
    let q2 = env.queue(QueueProps::in_order());
    let x = env.usm_f32(&[1.0; 2]);
    let inc = env.kernel("increment");
    let props = RecordingProps { assume_data_outlives_buffer: true };
    graph.begin_recording(&q1, props).unwrap();
    let a = q1.parallel_for(&inc, 2, args![&x], &[]).unwrap();
    let b = q2.parallel_for(&inc, 2, args![&x], &[&a]).unwrap();
    let c = q2.parallel_for(&inc, 2, args![&x], &[]).unwrap();
    assert_eq!(q2.recording_props(), Some(props));
    graph.end_recording();
    assert_eq!(q2.ext_oneapi_get_state(), QueueState::Executing);
    let [a, b, c] = [&a, &b, &c].map(node);
    assert_eq!(edges(&graph), vec![edge(&a, &b, EdgeKind::Transitive), edge(&b, &c, EdgeKind::InOrder)]);
    roundtrip(&graph);
    // q2 executes again: this runs now.
    q2.parallel_for(&inc, 2, args![&x], &[]).unwrap();
    assert_eq!(x.read::<f32>().unwrap(), vec![2.0, 2.0]);
    let exec = graph.finalize(FinalizeProps::none()).unwrap();
    q1.ext_oneapi_graph(&exec, &[]).unwrap();
    assert_eq!(x.read::<f32>().unwrap(), vec![5.0, 5.0]);
}

/// `begin_recording(queues)` and `end_recording(queue)` for one of them.
#[test]
fn several_queues_record_and_stop_separately() {
    let env = Env::new();
    let graph = env.graph(GraphProps::none());
    let q1 = env.queue(QueueProps::none());
    let q2 = env.queue(QueueProps::none());
    graph.begin_recording_queues(&[&q1, &q2], RecordingProps::default()).unwrap();
    assert!(graph.is_recording());
    graph.end_recording_queue(&q1).unwrap();
    assert_eq!(q1.ext_oneapi_get_state(), QueueState::Executing);
    assert_eq!(q2.ext_oneapi_get_state(), QueueState::Recording);
    graph.end_recording_queue(&q1).unwrap(); // no-op on an executing queue
    graph.end_recording_queues(&[&q2]).unwrap();
    assert!(!graph.is_recording());
    assert!(graph.to_module().0.graphs.iter().all(|(_, g)| g.queues.len() == 2));
}

/// Dropping the last copy of a modifiable graph ends recording on its queues (000 §8.7).
#[test]
fn dropping_the_graph_ends_recording() {
    let env = Env::new();
    let q = env.queue(QueueProps::none());
    let graph = env.graph(GraphProps::none());
    let copy = graph.clone();
    graph.begin_recording(&q, RecordingProps::default()).unwrap();
    drop(graph);
    assert_eq!(q.ext_oneapi_get_state(), QueueState::Recording, "a copy is still alive");
    assert!(q.ext_oneapi_get_graph().unwrap().same(&copy));
    drop(copy);
    assert_eq!(q.ext_oneapi_get_state(), QueueState::Executing);
}

/// A recorded event gives an edge in an explicit `add` to the same graph (000 §8.2.1).
#[test]
fn explicit_add_depends_on_recorded_event() {
    let env = Env::new();
    let q = env.queue(QueueProps::none());
    let graph = env.graph(GraphProps::none());
    let x = env.usm_f32(&[0.0; 2]);
    graph.begin_recording(&q, RecordingProps::default()).unwrap();
    let e = q.parallel_for(&env.kernel("increment"), 2, args![&x], &[]).unwrap();
    graph.end_recording();
    let n = graph
        .add(
            |h| {
                h.depends_on(&e);
                h.parallel_for(&env.kernel("increment"), 2, args![&x]);
            },
            NodeProps::none(),
        )
        .unwrap();
    assert_eq!(edges(&graph), vec![edge(&node(&e), &n, EdgeKind::Event)]);
    let text = roundtrip(&graph);
    let line = text.lines().find(|l| l.trim_start().starts_with(&format!("%{} =", n.name()))).unwrap();
    assert!(line.ends_with("via event)") && !line.contains(" on @"), "{line}");
}

/// Recording `queue::ext_oneapi_graph(exec)` makes a sub-graph node; the child runs as a
/// whole where the node is.
#[test]
fn recorded_subgraph_runs_child() {
    let env = Env::new();
    let x = env.usm_f32(&[1.0, 2.0]);
    let child = env.graph(GraphProps::none());
    child.add(|h| h.parallel_for(&env.kernel("increment"), 2, args![&x]), NodeProps::none()).unwrap();
    let child_exec = child.finalize(FinalizeProps::none()).unwrap();

    let parent = env.graph(GraphProps::none());
    let q = env.queue(QueueProps::in_order());
    let y = env.usm_f32(&[0.0; 2]);
    parent.begin_recording(&q, RecordingProps::default()).unwrap();
    let s1 = q.ext_oneapi_graph(&child_exec, &[]).unwrap();
    q.ext_oneapi_graph(&child_exec, &[]).unwrap();
    q.parallel_for(&env.kernel("scale"), 2, args![&x, &y, 10.0f32], &[]).unwrap();
    parent.end_recording();
    assert_eq!(node(&s1).get_type(), NodeType::Subgraph);
    let text = roundtrip(&parent);
    assert_eq!(text.matches(&format!("subgraph @{}", child.name())).count(), 2, "{text}");
    let exec = parent.finalize(FinalizeProps::none()).unwrap();
    q.ext_oneapi_graph(&exec, &[]).unwrap();
    assert_eq!(y.read::<f32>().unwrap(), vec![30.0, 40.0]);
}
