//! Barrier recording checked against DPC++'s own expectations (decision A4 in
//! docs/semantics.md). Each test rebuilds one case of intel/llvm
//! `sycl/unittests/Extensions/CommandGraph/Barrier.cpp` (the `TEST_F` named in its doc
//! comment) or of the Graph barrier end-to-end tests (`sycl/test-e2e/Graph/...`), and
//! checks the same roots, successors and predecessors. DPC++'s unit tests count them; these
//! name them, which is stricter.
//!
//! The rule DPC++ follows (`queue_impl`/`handler::finalize` recording a command group):
//! a submission to an in-order queue depends on the queue's previous node only, and a
//! barrier on an in-order queue is one more link of that chain; a submission to an
//! out-of-order queue depends on the queue's last barrier.

mod common;

use cmdgraph_ir::{EdgeKind, NodeType};
use cmdgraph_sycl::*;
use common::*;
use std::cell::Cell;

fn node(e: &Event) -> Node {
    Node::get_node_from_event(e).expect("recorded event")
}

/// Names of `nodes`, sorted: DPC++ keeps successor lists in an unspecified order.
fn names(nodes: Vec<Node>) -> Vec<String> {
    let mut v: Vec<String> = nodes.iter().map(Node::name).collect();
    v.sort();
    v
}

/// [`names`] of `nodes`.
fn of(nodes: &[&Node]) -> Vec<String> {
    names(nodes.iter().map(|n| (*n).clone()).collect())
}

/// A graph and single-task kernels that each touch an element of their own (USM pointers:
/// no inferred edges, so every edge comes from the queue and barrier rules under test).
struct Rec {
    env: Env,
    graph: ModifiableGraph,
    x: Usm,
    slot: Cell<u64>,
}

impl Rec {
    fn new() -> Rec {
        let env = Env::new();
        let graph = env.graph(GraphProps::none());
        let x = env.usm_f32(&[0.0; 32]);
        Rec { env, graph, x, slot: Cell::new(0) }
    }

    fn queue(&self, name: &str, in_order: bool) -> Queue {
        self.env.named_queue(name, if in_order { QueueProps::in_order() } else { QueueProps::none() })
    }

    /// `q.submit(single_task)` after `deps`.
    fn task(&self, q: &Queue, deps: &[&Event]) -> Event {
        let i = self.slot.get();
        self.slot.set(i + 1);
        q.single_task(&self.env.kernel("increment"), args![self.x.at(i)], deps).expect("recorded kernel")
    }

    fn record(&self, queues: &[&Queue]) {
        self.graph.begin_recording_queues(queues, RecordingProps::default()).unwrap();
    }

    fn roots(&self) -> Vec<String> {
        names(self.graph.get_root_nodes())
    }
}

/// `TEST_F(CommandGraphTest, EnqueueBarrier)`: three kernels, a barrier, two kernels on
/// one out-of-order queue: (1) (2) (3) -> (B) -> (4) (5).
#[test]
fn enqueue_barrier() {
    let r = Rec::new();
    let q = r.queue("q", false);
    r.record(&[&q]);
    let [n1, n2, n3] = [(); 3].map(|_| r.task(&q, &[]));
    let b = q.ext_oneapi_submit_barrier().unwrap();
    let [n4, n5] = [(); 2].map(|_| r.task(&q, &[]));
    r.graph.end_recording();
    let [n1, n2, n3, b, n4, n5] = [&n1, &n2, &n3, &b, &n4, &n5].map(node);
    assert_eq!(r.roots(), of(&[&n1, &n2, &n3]));
    for root in [&n1, &n2, &n3] {
        assert_eq!(names(root.get_successors()), of(&[&b]));
    }
    assert_eq!(b.get_type(), NodeType::Barrier);
    assert_eq!(names(b.get_predecessors()), of(&[&n1, &n2, &n3]));
    assert_eq!(names(b.get_successors()), of(&[&n4, &n5]));
    roundtrip(&r.graph);
}

/// `TEST_F(CommandGraphTest, EnqueueBarrierMultipleQueues)`: a barrier on a second queue
/// waiting for (2) only; only that queue's later kernels follow it.
#[test]
fn enqueue_barrier_multiple_queues() {
    let r = Rec::new();
    let (q, q2) = (r.queue("q", false), r.queue("q2", false));
    r.record(&[&q, &q2]);
    let [n1, n2, n3] = [(); 3].map(|_| r.task(&q, &[]));
    let b = q2.ext_oneapi_submit_barrier_with(&[&n2]).unwrap();
    let [n4, n5] = [(); 2].map(|_| r.task(&q2, &[]));
    r.graph.end_recording();
    let [n1, n2, n3, b, n4, n5] = [&n1, &n2, &n3, &b, &n4, &n5].map(node);
    assert_eq!(r.roots(), of(&[&n1, &n2, &n3]));
    assert_eq!(names(n2.get_successors()), of(&[&b]));
    assert!(n1.get_successors().is_empty() && n3.get_successors().is_empty());
    assert_eq!(names(b.get_predecessors()), of(&[&n2]));
    assert_eq!(names(b.get_successors()), of(&[&n4, &n5]));
    for n in [&n4, &n5] {
        assert_eq!(names(n.get_predecessors()), of(&[&b]));
        assert!(n.get_successors().is_empty());
    }
    roundtrip(&r.graph);
}

/// `TEST_F(CommandGraphTest, EnqueueBarrierWaitList)`: a barrier waiting for (1) and (2);
/// (5) depends on (3) by event and on the barrier as a later submission of its queue.
#[test]
fn enqueue_barrier_wait_list() {
    let r = Rec::new();
    let q = r.queue("q", false);
    r.record(&[&q]);
    let [n1, n2, n3] = [(); 3].map(|_| r.task(&q, &[]));
    let b = q.ext_oneapi_submit_barrier_with(&[&n1, &n2]).unwrap();
    let n4 = r.task(&q, &[]);
    let n5 = r.task(&q, &[&n3]);
    r.graph.end_recording();
    let [n1, n2, n3, b, n4, n5] = [&n1, &n2, &n3, &b, &n4, &n5].map(node);
    assert_eq!(r.roots(), of(&[&n1, &n2, &n3]));
    assert_eq!(names(b.get_predecessors()), of(&[&n1, &n2]));
    assert_eq!(names(b.get_successors()), of(&[&n4, &n5]));
    assert_eq!(names(n3.get_successors()), of(&[&n5]));
    assert_eq!(names(n5.get_predecessors()), of(&[&n3, &b]));
    roundtrip(&r.graph);
}

/// `TEST_F(CommandGraphTest, EnqueueBarrierWaitListMultipleQueues)`: a barrier of q waits
/// for nodes of q and q2; a second barrier on q2 waits for the first and two kernels.
#[test]
fn enqueue_barrier_wait_list_multiple_queues() {
    let r = Rec::new();
    let (q, q2) = (r.queue("q", false), r.queue("q2", false));
    r.record(&[&q, &q2]);
    let n1 = r.task(&q, &[]);
    let [n2, n3] = [(); 2].map(|_| r.task(&q2, &[]));
    let b = q.ext_oneapi_submit_barrier_with(&[&n1, &n2]).unwrap();
    let n4 = r.task(&q, &[]);
    let n5 = r.task(&q, &[&n3]);
    let b2 = q2.ext_oneapi_submit_barrier_with(&[&b, &n4, &n5]).unwrap();
    r.graph.end_recording();
    let [n1, n2, n3, b, n4, n5, b2] = [&n1, &n2, &n3, &b, &n4, &n5, &b2].map(node);
    assert_eq!(r.roots(), of(&[&n1, &n2, &n3]));
    assert_eq!(names(b.get_predecessors()), of(&[&n1, &n2]));
    assert_eq!(names(b.get_successors()), of(&[&n4, &n5, &b2]));
    assert_eq!(names(n5.get_predecessors()), of(&[&n3, &b]));
    assert_eq!(names(b2.get_predecessors()), of(&[&b, &n4, &n5]));
    assert!(b2.get_successors().is_empty());
    roundtrip(&r.graph);
}

/// `TEST_F(CommandGraphTest, EnqueueMultipleBarrier)`: a second barrier with an empty wait
/// list depends on the queue's leaves (4) and (5) and on the queue's previous barrier; the
/// three kernels after it depend on it alone.
#[test]
fn enqueue_multiple_barrier() {
    let r = Rec::new();
    let q = r.queue("q", false);
    r.record(&[&q]);
    let [n1, n2, n3] = [(); 3].map(|_| r.task(&q, &[]));
    let b1 = q.ext_oneapi_submit_barrier_with(&[&n1, &n2]).unwrap();
    let n4 = r.task(&q, &[]);
    let n5 = r.task(&q, &[&n3]);
    let b2 = q.ext_oneapi_submit_barrier().unwrap();
    let [n6, n7, n8] = [(); 3].map(|_| r.task(&q, &[]));
    r.graph.end_recording();
    let [n1, n2, n3, b1, n4, n5, b2, n6, n7, n8] = [&n1, &n2, &n3, &b1, &n4, &n5, &b2, &n6, &n7, &n8].map(node);
    assert_eq!(r.roots(), of(&[&n1, &n2, &n3]));
    assert_eq!(names(b1.get_predecessors()), of(&[&n1, &n2]));
    assert_eq!(names(b1.get_successors()), of(&[&n4, &n5, &b2]));
    assert_eq!(names(b2.get_predecessors()), of(&[&n4, &n5, &b1]));
    assert_eq!(names(b2.get_successors()), of(&[&n6, &n7, &n8]));
    assert_eq!(names(n4.get_successors()), of(&[&b2]));
    assert_eq!(names(n5.get_predecessors()), of(&[&n3, &b1]));
    for n in [&n6, &n7, &n8] {
        assert_eq!(names(n.get_predecessors()), of(&[&b2]));
        assert!(n.get_successors().is_empty());
    }
    roundtrip(&r.graph);
}

/// `TEST_F(CommandGraphTest, InOrderQueueWithPreviousCommand)`: a barrier on a recording
/// in-order queue may not wait for an event of work submitted before recording
/// (`errc::invalid`); a barrier without a wait list is then the graph's only node.
#[test]
fn in_order_queue_with_previous_command() {
    let r = Rec::new();
    let q = r.queue("iq", true);
    let before = q.single_task(&r.env.kernel("increment"), args![r.x.at(0)], &[]).unwrap();
    r.record(&[&q]);
    expect_err(q.ext_oneapi_submit_barrier_with(&[&before]), Errc::Invalid, 47);
    let b = node(&q.ext_oneapi_submit_barrier().unwrap());
    r.graph.end_recording();
    assert_eq!(r.roots(), of(&[&b]));
    assert_eq!(r.graph.get_nodes().len(), 1);
    assert!(b.get_successors().is_empty());
    assert_eq!(b.get_type(), NodeType::Barrier);
    roundtrip(&r.graph);
}

/// `TEST_F(CommandGraphTest, InOrderQueuesWithBarrier)`: a barrier on a third in-order
/// queue waiting for (1): (1) -> (B), (2) alone.
#[test]
fn in_order_queues_with_barrier() {
    let r = Rec::new();
    let [q1, q2, q3] = ["iq1", "iq2", "iq3"].map(|n| r.queue(n, true));
    r.record(&[&q1, &q2, &q3]);
    let n1 = r.task(&q1, &[]);
    let n2 = r.task(&q2, &[]);
    let b = q3.ext_oneapi_submit_barrier_with(&[&n1]).unwrap();
    r.graph.end_recording();
    let [n1, n2, b] = [&n1, &n2, &b].map(node);
    assert_eq!(r.roots(), of(&[&n1, &n2]));
    assert_eq!(names(n1.get_successors()), of(&[&b]));
    assert_eq!(names(b.get_predecessors()), of(&[&n1]));
    assert!(b.get_successors().is_empty() && n2.get_successors().is_empty());
    roundtrip(&r.graph);
}

/// `TEST_F(CommandGraphTest, InOrderQueuesWithBarrierWaitList)`: a barrier on iq2 waiting
/// for (1) of iq1 also follows iq2's previous node (2).
#[test]
fn in_order_queues_with_barrier_wait_list() {
    let r = Rec::new();
    let [q1, q2] = ["iq1", "iq2"].map(|n| r.queue(n, true));
    r.record(&[&q1, &q2]);
    let n1 = r.task(&q1, &[]);
    let n2 = r.task(&q2, &[]);
    let b = q2.ext_oneapi_submit_barrier_with(&[&n1]).unwrap();
    r.graph.end_recording();
    let [n1, n2, b] = [&n1, &n2, &b].map(node);
    assert_eq!(r.roots(), of(&[&n1, &n2]));
    assert_eq!(names(n1.get_successors()), of(&[&b]));
    assert_eq!(names(n2.get_successors()), of(&[&b]));
    assert_eq!(names(b.get_predecessors()), of(&[&n1, &n2]));
    assert!(b.get_successors().is_empty());
    roundtrip(&r.graph);
}

/// `TEST_F(CommandGraphTest, InOrderQueuesWithEmptyBarrierWaitList)`: (1) -> (B) on iq1,
/// (2) -> (3) on iq2.
#[test]
fn in_order_queues_with_empty_barrier_wait_list() {
    let r = Rec::new();
    let [q1, q2] = ["iq1", "iq2"].map(|n| r.queue(n, true));
    r.record(&[&q1, &q2]);
    let n1 = r.task(&q1, &[]);
    let n2 = r.task(&q2, &[]);
    let b = q1.ext_oneapi_submit_barrier().unwrap();
    let n3 = r.task(&q2, &[]);
    r.graph.end_recording();
    let [n1, n2, b, n3] = [&n1, &n2, &b, &n3].map(node);
    assert_eq!(r.roots(), of(&[&n1, &n2]));
    assert_eq!(names(n1.get_successors()), of(&[&b]));
    assert_eq!(names(b.get_predecessors()), of(&[&n1]));
    assert!(b.get_successors().is_empty());
    assert_eq!(names(n2.get_successors()), of(&[&n3]));
    assert_eq!(names(n3.get_predecessors()), of(&[&n2]));
    roundtrip(&r.graph);
}

/// `TEST_F(CommandGraphTest, BarrierMixedQueueTypes)`: a barrier on an in-order queue
/// waiting for two kernels of an out-of-order queue; (3) of that queue depends on (2) only.
#[test]
fn barrier_mixed_queue_types() {
    let r = Rec::new();
    let (iq, oq) = (r.queue("iq", true), r.queue("oq", false));
    r.record(&[&iq, &oq]);
    let n1 = r.task(&oq, &[]);
    let n2 = r.task(&oq, &[]);
    let b = iq.ext_oneapi_submit_barrier_with(&[&n1, &n2]).unwrap();
    let n3 = r.task(&oq, &[&n2]);
    r.graph.end_recording();
    let [n1, n2, b, n3] = [&n1, &n2, &b, &n3].map(node);
    assert_eq!(r.roots(), of(&[&n1, &n2]));
    assert_eq!(names(n1.get_successors()), of(&[&b]));
    assert_eq!(names(n2.get_successors()), of(&[&b, &n3]));
    assert_eq!(names(b.get_predecessors()), of(&[&n1, &n2]));
    assert!(b.get_successors().is_empty());
    assert_eq!(names(n3.get_predecessors()), of(&[&n2]));
    roundtrip(&r.graph);
}

/// `TEST_F(CommandGraphTest, BarrierBetweenExplicitNodes)`: a recorded barrier between two
/// explicit nodes depends on neither: (B) alone, (1) -> (2).
#[test]
fn barrier_between_explicit_nodes() {
    let r = Rec::new();
    let iq = r.queue("iq", true);
    let inc = r.env.kernel("increment");
    let n1 = r.graph.add(|h| h.single_task(&inc, args![r.x.at(0)]), NodeProps::none()).unwrap();
    r.record(&[&iq]);
    let b = node(&iq.ext_oneapi_submit_barrier().unwrap());
    r.graph.end_recording();
    let n2 = r.graph.add(|h| h.single_task(&inc, args![r.x.at(1)]), NodeProps::depends_on(&[&n1])).unwrap();
    assert_eq!(r.roots(), of(&[&b, &n1]));
    assert!(b.get_successors().is_empty() && b.get_predecessors().is_empty());
    assert_eq!(names(n1.get_successors()), of(&[&n2]));
    roundtrip(&r.graph);
}

/// `TEST_F(CommandGraphTest, BarrierMultipleOOOQueue)`: a barrier of q after (1) (2), then
/// (5) of q2 after (3) (4) by events and (6) of q after the barrier.
#[test]
fn barrier_multiple_ooo_queue() {
    let r = Rec::new();
    let (q, q2) = (r.queue("q", false), r.queue("q2", false));
    r.record(&[&q, &q2]);
    let [n1, n2] = [(); 2].map(|_| r.task(&q, &[]));
    let [n3, n4] = [(); 2].map(|_| r.task(&q2, &[]));
    let b = q.ext_oneapi_submit_barrier().unwrap();
    let n5 = r.task(&q2, &[&n3, &n4]);
    let n6 = r.task(&q, &[]);
    r.graph.end_recording();
    let [n1, n2, n3, n4, b, n5, n6] = [&n1, &n2, &n3, &n4, &b, &n5, &n6].map(node);
    assert_eq!(r.roots(), of(&[&n1, &n2, &n3, &n4]));
    assert_eq!(names(b.get_predecessors()), of(&[&n1, &n2]));
    assert_eq!(names(b.get_successors()), of(&[&n6]));
    assert_eq!(names(n6.get_predecessors()), of(&[&b]));
    assert_eq!(names(n5.get_predecessors()), of(&[&n3, &n4]));
    assert!(n5.get_successors().is_empty() && n6.get_successors().is_empty());
    roundtrip(&r.graph);
}

/// `TEST_F(CommandGraphTest, BarrierMultipleInOrderQueue)` and
/// `TEST_F(CommandGraphTest, BarrierMultipleMixedOrderQueues)`: (1) -> (B) on the first
/// queue (in-order, or out-of-order), (2) -> (3) on an in-order second queue.
#[test]
fn barrier_multiple_in_order_and_mixed_order_queues() {
    for first_in_order in [true, false] {
        let r = Rec::new();
        let (q1, q2) = (r.queue("q1", first_in_order), r.queue("iq2", true));
        r.record(&[&q1, &q2]);
        let n1 = r.task(&q1, &[]);
        let n2 = r.task(&q2, &[]);
        let b = q1.ext_oneapi_submit_barrier().unwrap();
        let n3 = r.task(&q2, &[]);
        r.graph.end_recording();
        let [n1, n2, b, n3] = [&n1, &n2, &b, &n3].map(node);
        assert_eq!(r.roots(), of(&[&n1, &n2]), "first queue in order: {first_in_order}");
        assert_eq!(names(b.get_predecessors()), of(&[&n1]));
        assert!(b.get_successors().is_empty());
        assert_eq!(names(n3.get_predecessors()), of(&[&n2]));
        assert!(n3.get_successors().is_empty());
        roundtrip(&r.graph);
    }
}

/// `TEST_F(CommandGraphTest, BarrierMultipleQueuesMultipleBarriers)`: barriers alone on an
/// out-of-order and an in-order queue, interleaved: (B1) -> (B4), (B2) -> (B3).
#[test]
fn barrier_multiple_queues_multiple_barriers() {
    let r = Rec::new();
    let (q, iq) = (r.queue("q", false), r.queue("iq", true));
    r.record(&[&q, &iq]);
    let b1 = q.ext_oneapi_submit_barrier().unwrap();
    let b2 = iq.ext_oneapi_submit_barrier().unwrap();
    let b3 = iq.ext_oneapi_submit_barrier().unwrap();
    let b4 = q.ext_oneapi_submit_barrier().unwrap();
    r.graph.end_recording();
    let [b1, b2, b3, b4] = [&b1, &b2, &b3, &b4].map(node);
    assert_eq!(r.roots(), of(&[&b1, &b2]));
    assert_eq!(names(b1.get_successors()), of(&[&b4]));
    assert_eq!(names(b4.get_predecessors()), of(&[&b1]));
    assert_eq!(names(b2.get_successors()), of(&[&b3]));
    assert_eq!(names(b3.get_predecessors()), of(&[&b2]));
    assert!(b3.get_successors().is_empty() && b4.get_successors().is_empty());
    roundtrip(&r.graph);
}

/// `TEST_F(CommandGraphTest, BarrierWithInOrderCommands)`: two in-order queues alternate
/// kernels and barriers over six recording sessions, then a barrier on iq1 waits for (5)
/// and (6). Each queue is a straight chain, every node with one successor: the barriers are
/// links of the chain, so (B3) has no edge to (B5) besides the chain's (5).
#[test]
fn barrier_with_in_order_commands() {
    let r = Rec::new();
    let [q1, q2] = ["iq1", "iq2"].map(|n| r.queue(n, true));
    let session = |f: &dyn Fn() -> [Event; 2]| {
        r.record(&[&q1, &q2]);
        let out = f();
        r.graph.end_recording();
        out
    };
    let [n1, n2] = session(&|| [r.task(&q1, &[]), r.task(&q2, &[])]);
    let [b1, b2] = session(&|| [q1.ext_oneapi_submit_barrier().unwrap(), q2.ext_oneapi_submit_barrier().unwrap()]);
    let [n3, n4] = session(&|| [r.task(&q1, &[]), r.task(&q2, &[])]);
    let [b3, b4] = session(&|| [q1.ext_oneapi_submit_barrier().unwrap(), q2.ext_oneapi_submit_barrier().unwrap()]);
    let [n5, n6] = session(&|| [r.task(&q1, &[]), r.task(&q2, &[])]);
    r.record(&[&q1, &q2]);
    let b5 = q1.ext_oneapi_submit_barrier_with(&[&n5, &n6]).unwrap();
    r.graph.end_recording();
    let odd = [&n1, &b1, &n3, &b3, &n5].map(node);
    let even = [&n2, &b2, &n4, &b4, &n6].map(node);
    let b5 = node(&b5);
    assert_eq!(r.roots(), of(&[&odd[0], &even[0]]));
    for path in [&odd, &even] {
        for pair in path.windows(2) {
            assert_eq!(names(pair[0].get_successors()), of(&[&pair[1]]), "{} has one successor", pair[0].name());
            assert_eq!(names(pair[1].get_predecessors()), of(&[&pair[0]]), "{} has one predecessor", pair[1].name());
        }
        assert_eq!(names(path[4].get_successors()), of(&[&b5]));
    }
    assert_eq!(names(b5.get_predecessors()), of(&[&odd[4], &even[4]]));
    assert!(b5.get_successors().is_empty());
    roundtrip(&r.graph);
}

/// A barrier between kernels on one in-order queue is one link of the chain, as in
/// DPC++'s in-order recording (the in-order branch never adds the queue's last barrier):
/// `get_successors()` of the barrier is the next kernel only, the edges are the chain's,
/// and the DOT of `print_graph` draws exactly those three edges.
#[test]
fn barrier_on_in_order_queue_is_one_link_of_the_chain() {
    let r = Rec::new();
    let q = r.queue("iq", true);
    r.record(&[&q]);
    let a = r.task(&q, &[]);
    let b = q.ext_oneapi_submit_barrier().unwrap();
    let c = r.task(&q, &[]);
    let d = r.task(&q, &[]);
    r.graph.end_recording();
    let [a, b, c, d] = [&a, &b, &c, &d].map(node);
    assert_eq!(
        edges(&r.graph),
        vec![edge(&a, &b, EdgeKind::InOrder), edge(&b, &c, EdgeKind::InOrder), edge(&c, &d, EdgeKind::InOrder)]
    );
    assert_eq!(names(b.get_successors()), of(&[&c]));
    assert_eq!(names(d.get_predecessors()), of(&[&c]));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chain.dot");
    r.graph.print_graph(path.to_str().unwrap(), false).unwrap();
    let dot = std::fs::read_to_string(&path).unwrap();
    assert_eq!(dot.matches(" -> ").count(), 3, "{dot}");
    let text = roundtrip(&r.graph);
    assert!(!text.contains("via barrier"), "{text}");
}

/// `sycl/test-e2e/Graph/RecordReplay/barrier_with_work.cpp`: increment A; barrier; B += A
/// and C -= A; barrier; B -= 1 and C -= 1; USM, so only the barriers (or the in-order
/// chain) order the kernels. Run three times on an out-of-order queue and on an in-order
/// one, against the same arithmetic done here. On the in-order queue the graph is a
/// straight chain of six nodes; on the out-of-order one each barrier fans out.
#[test]
fn barrier_with_work_runs_on_both_queue_kinds() {
    let n = 64usize;
    for in_order in [false, true] {
        let env = Env::new();
        let (a0, b0, c0) = (
            common::random_f32(n, 7, -8.0, 16.0),
            common::random_f32(n, 11, -8.0, 16.0),
            common::random_f32(n, 13, -8.0, 16.0),
        );
        let (a, b, c) = (env.usm_f32(&a0), env.usm_f32(&b0), env.usm_f32(&c0));
        let q = env.queue(if in_order { QueueProps::in_order() } else { QueueProps::none() });
        let graph = env.graph(GraphProps::none());
        graph.begin_recording(&q, RecordingProps::default()).unwrap();
        let ka = q.parallel_for(&env.kernel("increment"), n as u64, args![&a], &[]).unwrap();
        let bar1 = q.ext_oneapi_submit_barrier().unwrap();
        let kb = q.parallel_for(&env.kernel("add"), n as u64, args![&a, &b], &[]).unwrap();
        let kc = q.parallel_for(&env.kernel("subtract"), n as u64, args![&a, &c], &[]).unwrap();
        let bar2 = q.ext_oneapi_submit_barrier().unwrap();
        let exit = q.parallel_for(&env.kernel("decrement"), n as u64, args![&b, &c], &[]).unwrap();
        graph.end_recording();
        let [ka, bar1, kb, kc, bar2, exit] = [&ka, &bar1, &kb, &kc, &bar2, &exit].map(node);
        assert_eq!(names(ka.get_successors()), of(&[&bar1]));
        assert_eq!(names(exit.get_predecessors()), of(&[&bar2]));
        if in_order {
            assert_eq!(names(bar1.get_successors()), of(&[&kb]));
            assert_eq!(names(kb.get_successors()), of(&[&kc]));
            assert_eq!(names(bar2.get_predecessors()), of(&[&kc]));
        } else {
            assert_eq!(names(bar1.get_successors()), of(&[&kb, &kc, &bar2]));
            assert_eq!(names(bar2.get_predecessors()), of(&[&kb, &kc, &bar1]));
        }
        roundtrip(&graph);
        let exec = graph.finalize(FinalizeProps::none()).unwrap();
        let (mut ra, mut rb, mut rc) = (a0.clone(), b0.clone(), c0.clone());
        for _ in 0..3 {
            q.ext_oneapi_graph(&exec, &[]).unwrap();
            for i in 0..n {
                ra[i] += 1.0;
                rb[i] += ra[i];
                rc[i] -= ra[i];
                rb[i] -= 1.0;
                rc[i] -= 1.0;
            }
        }
        assert_eq!(a.read::<f32>().unwrap(), ra, "in order: {in_order}");
        assert_eq!(b.read::<f32>().unwrap(), rb, "in order: {in_order}");
        assert_eq!(c.read::<f32>().unwrap(), rc, "in order: {in_order}");
    }
}

/// `sycl/test-e2e/Graph/Inputs/barrier_multi_queue.cpp`: a kernel on in-order iq1 writes
/// A, a barrier on in-order iq2 waits for it, and a copy on iq2 moves A to B: the copy
/// follows the barrier by the chain and sees the kernel's values.
#[test]
fn barrier_multi_queue_orders_copy_after_kernel_of_other_queue() {
    let env = Env::new();
    let n = 48usize;
    let input = common::random_f32(n, 29, -8.0, 16.0);
    let src = env.usm_f32(&input);
    let (a, b) = (env.usm_f32(&vec![0.0; n]), env.usm_f32(&vec![0.0; n]));
    let [q1, q2] = ["iq1", "iq2"].map(|name| env.named_queue(name, QueueProps::in_order()));
    let graph = env.graph(GraphProps::none());
    graph.begin_recording_queues(&[&q1, &q2], RecordingProps::default()).unwrap();
    let s = 1.618_034_f32;
    let ka = q1.parallel_for(&env.kernel("scale"), n as u64, args![&src, &a, s], &[]).unwrap();
    let bar = q2.ext_oneapi_submit_barrier_with(&[&ka]).unwrap();
    let copy = q2.memcpy(&b, &a, (n * 4) as u64, &[]).unwrap();
    graph.end_recording();
    let [ka, bar, copy] = [&ka, &bar, &copy].map(node);
    assert_eq!(names(bar.get_predecessors()), of(&[&ka]));
    assert_eq!(names(copy.get_predecessors()), of(&[&bar]));
    roundtrip(&graph);
    let exec = graph.finalize(FinalizeProps::none()).unwrap();
    q1.ext_oneapi_graph(&exec, &[]).unwrap();
    let expected: Vec<f32> = input.iter().map(|v| v * s).collect();
    assert_eq!(b.read::<f32>().unwrap(), expected);
}
