//! The code samples of the specifications, rebuilt with the builder API. Each graph
//! round-trips through the text format, verifies, and runs on the reference interpreter;
//! expected numbers are computed here independently.

mod common;

use cmdgraph_ir::{EdgeKind, NodeType, Type};
use cmdgraph_sycl::*;
use common::*;

/// 000 §7.2 / 002 §6.2: the explicit API cannot change a graph while a queue records into
/// it.
#[test]
fn sample_7_2_add_while_recording_is_invalid() {
    let env = Env::new();
    let queue = env.queue(QueueProps::none());
    let graph = env.graph(GraphProps::none());
    graph.begin_recording(&queue, RecordingProps::default()).unwrap();
    let k = env.kernel("increment");
    let x = env.usm_f32(&[1.0; 4]);
    let msg = expect_err(graph.add(|h| h.parallel_for(&k, 4, args![&x]), NodeProps::none()), Errc::Invalid, 5);
    assert!(msg.contains("end_recording"), "{msg}");
    graph.end_recording();
    assert_eq!(queue.ext_oneapi_get_state(), QueueState::Executing);
    // After recording ends the same call is fine.
    graph.add(|h| h.parallel_for(&k, 4, args![&x]), NodeProps::none()).unwrap();
    roundtrip(&graph);
}

const ALLOC_BYTES: u64 = 1024;
const ALLOC_ELEMS: u64 = ALLOC_BYTES / 4;

fn input() -> Vec<f32> {
    (0..ALLOC_ELEMS).map(|i| i as f32 * 0.5 - 7.0).collect()
}

/// 000 §8.4.3, explicit graph building: `Ptr = async_malloc(CGH, usm::alloc::device,
/// AllocSize)` in one node and `async_free(CGH, Ptr)` in another. The sample leaves out
/// the nodes using the pointer and the edges; here a copy into it and a kernel reading it
/// sit between, ordered with `depends_on` (the spec makes unordered uses UB).
#[test]
fn sample_8_4_3_explicit_async_malloc() {
    let env = Env::new();
    let graph = env.graph(GraphProps::none());
    let x = env.usm_f32(&input());
    let out = env.usm_f32(&vec![0.0; ALLOC_ELEMS as usize]);
    let scale = env.kernel("scale");

    let mut ptr = None;
    let alloc =
        graph.add(|h| ptr = Some(h.async_malloc(UsmKind::Device, Type::F32, ALLOC_ELEMS)), NodeProps::none()).unwrap();
    let ptr = ptr.unwrap();
    let copy = graph.add(|h| h.memcpy(ptr.clone(), &x, ALLOC_BYTES), NodeProps::depends_on(&[&alloc])).unwrap();
    let k = graph
        .add(|h| h.parallel_for(&scale, ALLOC_ELEMS, args![&ptr, &out, 3.0f32]), NodeProps::depends_on(&[&copy]))
        .unwrap();
    let free = graph.add(|h| h.async_free(&ptr), NodeProps::depends_on(&[&k])).unwrap();

    assert_eq!(alloc.get_type(), NodeType::AsyncMalloc);
    assert_eq!(free.get_type(), NodeType::AsyncFree);
    let text = roundtrip(&graph);
    assert!(text.contains("async_malloc f32[256]"), "{text}");

    let exec = graph.finalize(FinalizeProps::none()).unwrap();
    assert_eq!(exec.get_required_mem_size(), ALLOC_BYTES);
    let q = env.queue(QueueProps::none());
    q.ext_oneapi_graph(&exec, &[]).unwrap().wait().unwrap();
    let expected: Vec<f32> = input().iter().map(|v| v * 3.0).collect();
    assert_eq!(out.read::<f32>().unwrap(), expected);
}

/// 000 §8.4.3, queue recording: the same allocation recorded through `Queue.submit`, on
/// an out-of-order queue; the events order the uses.
#[test]
fn sample_8_4_3_recorded_async_malloc() {
    let env = Env::new();
    let graph = env.graph(GraphProps::none());
    let queue = env.queue(QueueProps::none());
    let x = env.usm_f32(&input());
    let out = env.usm_f32(&vec![0.0; ALLOC_ELEMS as usize]);
    let scale = env.kernel("scale");

    graph.begin_recording(&queue, RecordingProps::default()).unwrap();
    let mut ptr = None;
    let e0 = queue.submit(|h| ptr = Some(h.async_malloc(UsmKind::Device, Type::F32, ALLOC_ELEMS))).unwrap();
    let ptr = ptr.unwrap();
    let e1 = queue.memcpy(ptr.clone(), &x, ALLOC_BYTES, &[&e0]).unwrap();
    let e2 = queue.parallel_for(&scale, ALLOC_ELEMS, args![&ptr, &out, -2.0f32], &[&e1]).unwrap();
    queue
        .submit(|h| {
            h.depends_on(&e2);
            h.async_free(&ptr)
        })
        .unwrap();
    graph.end_recording_queue(&queue).unwrap();

    let expected_edges = [
        edge(&Node::get_node_from_event(&e0).unwrap(), &Node::get_node_from_event(&e1).unwrap(), EdgeKind::Event),
        edge(&Node::get_node_from_event(&e1).unwrap(), &Node::get_node_from_event(&e2).unwrap(), EdgeKind::Event),
    ];
    assert_eq!(edges(&graph)[..2], expected_edges[..]);
    let text = roundtrip(&graph);
    assert!(text.contains(&format!("queue @{}", queue.name())), "{text}");

    let exec = graph.finalize(FinalizeProps::none()).unwrap();
    queue.ext_oneapi_graph(&exec, &[]).unwrap();
    let expected: Vec<f32> = input().iter().map(|v| v * -2.0).collect();
    assert_eq!(out.read::<f32>().unwrap(), expected);
}

/// 000 §8.4.3, in-order queue: `Ptr = async_malloc(Queue, usm::alloc::device, AllocSize);
/// async_free(Queue, Ptr);` with no events: the in-order edges order everything.
#[test]
fn sample_8_4_3_in_order_queue_async_malloc() {
    let env = Env::new();
    let graph = env.graph(GraphProps::none());
    let queue = env.queue(QueueProps::in_order());
    let x = env.usm_f32(&input());
    let out = env.usm_f32(&vec![0.0; ALLOC_ELEMS as usize]);
    let scale = env.kernel("scale");

    graph.begin_recording(&queue, RecordingProps::default()).unwrap();
    let ptr = queue.async_malloc(UsmKind::Device, Type::F32, ALLOC_ELEMS).unwrap();
    queue.memcpy(ptr.clone(), &x, ALLOC_BYTES, &[]).unwrap();
    queue.parallel_for(&scale, ALLOC_ELEMS, args![&ptr, &out, 0.25f32], &[]).unwrap();
    queue.async_free(&ptr).unwrap();
    graph.end_recording_queue(&queue).unwrap();

    let kinds: Vec<EdgeKind> = edges(&graph).into_iter().map(|e| e.2).collect();
    assert_eq!(kinds, vec![EdgeKind::InOrder; 3]);
    roundtrip(&graph);
    let exec = graph.finalize(FinalizeProps::none()).unwrap();
    queue.ext_oneapi_graph(&exec, &[]).unwrap();
    let expected: Vec<f32> = input().iter().map(|v| v * 0.25).collect();
    assert_eq!(out.read::<f32>().unwrap(), expected);
}

/// 000 §8.5.2: `e1 = q1.single_task(...)` on a recording queue, then
/// `q2.single_task(e1, ...)` on an executing queue puts q2 into recording with an edge
/// e1 -> e2; `graph.end_recording()` ends both.
#[test]
fn sample_8_5_2_transitive_recording() {
    let env = Env::new();
    let graph = env.graph(GraphProps::none());
    let q1 = env.queue(QueueProps::none());
    let q2 = env.queue(QueueProps::none());
    let counter = Usm::device::<u32>(&env.ctx, 1).unwrap();
    let bump = env.kernel("bump");

    let props = RecordingProps { assume_data_outlives_buffer: true };
    graph.begin_recording(&q1, props).unwrap();
    let e1 = q1.single_task(&bump, args![&counter], &[]).unwrap();
    assert_eq!(q2.ext_oneapi_get_state(), QueueState::Executing);
    let e2 = q2.single_task(&bump, args![&counter], &[&e1]).unwrap();
    assert_eq!(q2.ext_oneapi_get_state(), QueueState::Recording);
    assert_eq!(q2.recording_props(), Some(props), "q2 inherits q1's recording properties");
    assert!(q2.ext_oneapi_get_graph().unwrap().same(&graph));
    graph.end_recording();
    assert_eq!(q1.ext_oneapi_get_state(), QueueState::Executing);
    assert_eq!(q2.ext_oneapi_get_state(), QueueState::Executing);

    let n1 = Node::get_node_from_event(&e1).unwrap();
    let n2 = Node::get_node_from_event(&e2).unwrap();
    assert_eq!(edges(&graph), vec![edge(&n1, &n2, EdgeKind::Transitive)]);
    let text = roundtrip(&graph);
    assert!(text.contains("via transitive"), "{text}");
    assert!(text.contains(&format!("on @{}", q2.name())), "{text}");

    // Nothing ran while recording.
    assert_eq!(counter.read::<u32>().unwrap(), vec![0]);
    let exec = graph.finalize(FinalizeProps::none()).unwrap();
    q1.ext_oneapi_graph(&exec, &[]).unwrap();
    q1.ext_oneapi_graph(&exec, &[]).unwrap();
    assert_eq!(counter.read::<u32>().unwrap(), vec![4]);
}

/// 000 §8.9: `graph.add([&](handler& cgh) { cgh.host_task([=]() { ... }); })`: code in the
/// command-group function runs at `add`, the host task at each execution.
#[test]
fn sample_8_9_host_task() {
    let env = Env::new();
    let graph = env.graph(GraphProps::none());
    let data = env.usm_f32(&[1.0, 2.0, 3.0, 4.0]);
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let seen = runs.clone();
    let name = format!("@{}", data.name());
    env.ctx.register_host_task("double_on_host", move |hc| {
        seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let v: Vec<f32> = hc.read_as(&name)?;
        let doubled: Vec<f32> = v.iter().map(|x| x * 2.0).collect();
        hc.write_as(&name, 0, &doubled)
    });
    let mut cgf_runs = 0;
    let node = graph
        .add(
            |h| {
                cgf_runs += 1; // host code: evaluated during add()
                h.host_task_with_access("double_on_host", &[(data.ptr(), Access::ReadWrite)]);
            },
            NodeProps::none(),
        )
        .unwrap();
    assert_eq!(cgf_runs, 1);
    assert_eq!(node.get_type(), NodeType::HostTask);
    roundtrip(&graph);
    assert_eq!(runs.load(std::sync::atomic::Ordering::Relaxed), 0, "the host task does not run at add");
    let exec = graph.finalize(FinalizeProps::none()).unwrap();
    let q = env.queue(QueueProps::none());
    q.ext_oneapi_graph(&exec, &[]).unwrap();
    q.ext_oneapi_graph(&exec, &[]).unwrap();
    // On a device the runs are asynchronous: the host task has run twice once they are waited for.
    q.wait().unwrap();
    assert_eq!(runs.load(std::sync::atomic::Ordering::Relaxed), 2);
    assert_eq!(cgf_runs, 1);
    assert_eq!(data.read::<f32>().unwrap(), vec![4.0, 8.0, 12.0, 16.0]);
}

/// 000 §10.1.1 / 002 §9.1.1: a buffer over host data used by a recorded command
/// (`accessor acc{buf, cgh, read_only}` in a `single_task`). Here the kernel copies the
/// buffer into USM so the result can be checked.
#[test]
fn sample_10_1_1_buffer_over_host_data() {
    let env = Env::new();
    let data: Vec<f32> = vec![3.0, 1.0, 4.0, 1.0, 5.0];
    let buf = Buffer::from_host(&env.ctx, None, &data).unwrap();
    let out = env.usm_f32(&[0.0; 5]);
    let scale = env.kernel("scale");
    let q = env.queue(QueueProps::none());
    let graph = env.graph(GraphProps::buffers());
    graph.begin_recording(&q, RecordingProps::default()).unwrap();
    q.submit(|h| {
        let acc = h.access(&buf, Access::Read);
        h.parallel_for(&scale, 5, args![&acc, &out, 1.0f32]);
    })
    .unwrap();
    graph.end_recording();
    let text = roundtrip(&graph);
    assert!(text.contains(&format!("acc(@{}, read)", buf.name())), "{text}");
    let exec = graph.finalize(FinalizeProps::none()).unwrap();
    q.ext_oneapi_graph(&exec, &[]).unwrap();
    assert_eq!(out.read::<f32>().unwrap(), data);
}

/// 001 §Example Usage: increment, then add and subtract, then decrement, recorded on one
/// queue with buffer accessors; the accessors give the diamond.
#[test]
fn sample_001_diamond_from_accessors() {
    let env = Env::new();
    let n = 8u64;
    let a0: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let b0: Vec<f32> = (0..n).map(|i| 10.0 * i as f32).collect();
    let c0: Vec<f32> = (0..n).map(|i| 100.0 - i as f32).collect();
    let a = Buffer::new(&env.ctx, Some("bufferA"), Type::F32, n).unwrap();
    let b = Buffer::new(&env.ctx, Some("bufferB"), Type::F32, n).unwrap();
    let c = Buffer::new(&env.ctx, Some("bufferC"), Type::F32, n).unwrap();
    let q = env.queue(QueueProps::none());
    // Initial contents through an executing queue: plain kernels on the buffers.
    let fill = |buf: &Buffer, v: &[f32]| {
        let src = env.usm_f32(v);
        q.submit(|h| {
            let acc = h.access(buf, Access::Write);
            h.parallel_for(&env.kernel("scale"), n, args![&src, &acc, 1.0f32]);
        })
        .unwrap();
    };
    fill(&a, &a0);
    fill(&b, &b0);
    fill(&c, &c0);

    let graph = env.graph(GraphProps::buffers());
    graph.begin_recording(&q, RecordingProps::default()).unwrap();
    let inc = q
        .submit(|h| {
            let p = h.access(&a, Access::ReadWrite);
            h.parallel_for(&env.kernel("increment"), n, args![&p]);
        })
        .unwrap();
    let add = q
        .submit(|h| {
            let p1 = h.access(&a, Access::Read);
            let p2 = h.access(&b, Access::ReadWrite);
            h.parallel_for(&env.kernel("add"), n, args![&p1, &p2]);
        })
        .unwrap();
    let sub = q
        .submit(|h| {
            let p1 = h.access(&a, Access::Read);
            let p2 = h.access(&c, Access::ReadWrite);
            h.parallel_for(&env.kernel("subtract"), n, args![&p1, &p2]);
        })
        .unwrap();
    let dec = q
        .submit(|h| {
            let p1 = h.access(&b, Access::ReadWrite);
            let p2 = h.access(&c, Access::ReadWrite);
            h.parallel_for(&env.kernel("decrement"), n, args![&p1, &p2]);
        })
        .unwrap();
    graph.end_recording_queue(&q).unwrap();

    let [inc, add, sub, dec] = [inc, add, sub, dec].map(|e| Node::get_node_from_event(&e).unwrap());
    assert_eq!(
        edges(&graph),
        vec![
            edge(&inc, &add, EdgeKind::Accessor),
            edge(&inc, &sub, EdgeKind::Accessor),
            edge(&add, &dec, EdgeKind::Accessor),
            edge(&sub, &dec, EdgeKind::Accessor),
        ]
    );
    assert_eq!(graph.get_root_nodes(), vec![inc.clone()]);
    roundtrip(&graph);

    let exec = graph.finalize(FinalizeProps::none()).unwrap();
    q.ext_oneapi_graph(&exec, &[]).unwrap();
    let a1: Vec<f32> = a0.iter().map(|v| v + 1.0).collect();
    let b1: Vec<f32> = b0.iter().zip(&a1).map(|(b, a)| b + a - 1.0).collect();
    let c1: Vec<f32> = c0.iter().zip(&a1).map(|(c, a)| c - a - 1.0).collect();
    assert_eq!(a.host_access::<f32>().unwrap(), a1);
    assert_eq!(b.host_access::<f32>().unwrap(), b1);
    assert_eq!(c.host_access::<f32>().unwrap(), c1);
}
