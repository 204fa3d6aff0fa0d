//! Communication nodes through the C functions (docs/mpi.md): two ranks, each a thread of
//! this process with its own context, build a graph with `cmdgraph_sycl_cg_send`, `_recv` and
//! `_allreduce`, given their rank by `cmdgraph_sycl_context_set_communicator` as C functions
//! over mailboxes (as an application's functions over MPI would be). On the reference
//! interpreter and on the default Vulkan device with validation on, two runs each; every
//! output is computed here (the all-reduce in rank order) and must match bit for bit. Bad
//! communicators and reductions are refused with their messages.
use crate::support::*;
use cmdgraph_build::{cg::*, comm::*, context::*, exec::*, graph::*, queue::*, usm::*};
use std::collections::{BTreeMap, VecDeque};
use std::ffi::{c_int, c_void};
use std::ptr::{null, null_mut};
use std::sync::{Arc, Barrier, Condvar, Mutex};
use std::time::Duration;

const N: usize = 256;

const KERNELS: &str = r#"
kernel @scale(%x: buf<f32, read>, %y: buf<f32, write>, %s: f32) {
  %i = global_id 0
  %v = load %x[%i]
  %r = mul %s, %v
  store %y[%i], %r
}

kernel @add(%a: buf<f32, read>, %b: buf<f32, read_write>) {
  %i = global_id 0
  %va = load %a[%i]
  %vb = load %b[%i]
  %r = add %vb, %va
  store %b[%i], %r
}
"#;

/// Messages by (from, to, tag), in the order sent.
type Boxes = BTreeMap<(u32, u32, u32), VecDeque<Vec<u8>>>;

/// Mailboxes, and an all-gather's parts.
struct Mail {
    boxes: Mutex<Boxes>,
    arrived: Condvar,
    parts: Mutex<Vec<Vec<u8>>>,
    barrier: Barrier,
}

struct Rank {
    mail: Arc<Mail>,
    rank: u32,
}

unsafe extern "C" fn send(user: *mut c_void, to: u32, tag: u32, bytes: *const c_void, len: u64) -> c_int {
    // SAFETY: `user` is the test's live `Rank`; `bytes` is readable for `len` bytes.
    let (r, data) = unsafe { (&*user.cast::<Rank>(), std::slice::from_raw_parts(bytes.cast::<u8>(), len as usize)) };
    r.mail.boxes.lock().unwrap().entry((r.rank, to, tag)).or_default().push_back(data.to_vec());
    r.mail.arrived.notify_all();
    0
}

unsafe extern "C" fn recv(user: *mut c_void, from: u32, tag: u32, out: *mut c_void, len: u64) -> c_int {
    // SAFETY: as in `send`; `out` is writable for `len` bytes.
    let (r, out) = unsafe { (&*user.cast::<Rank>(), std::slice::from_raw_parts_mut(out.cast::<u8>(), len as usize)) };
    let key = (from, r.rank, tag);
    let boxes = r.mail.boxes.lock().unwrap();
    let (mut boxes, _) = r
        .mail
        .arrived
        .wait_timeout_while(boxes, Duration::from_secs(30), |b| b.get(&key).is_none_or(|q| q.is_empty()))
        .unwrap();
    match boxes.get_mut(&key).and_then(|q| q.pop_front()) {
        Some(m) if m.len() == out.len() => {
            out.copy_from_slice(&m);
            0
        }
        Some(_) => 2,
        None => 1,
    }
}

unsafe extern "C" fn allgather(user: *mut c_void, mine: *const c_void, len: u64, all: *mut c_void) -> c_int {
    // SAFETY: as in `send`; `all` is writable for 2 * `len` bytes.
    let r = unsafe { &*user.cast::<Rank>() };
    // SAFETY: as above.
    let mine = unsafe { std::slice::from_raw_parts(mine.cast::<u8>(), len as usize) };
    r.mail.parts.lock().unwrap()[r.rank as usize] = mine.to_vec();
    r.mail.barrier.wait();
    let joined: Vec<u8> = r.mail.parts.lock().unwrap().concat();
    r.mail.barrier.wait();
    // SAFETY: as above.
    unsafe { std::ptr::copy_nonoverlapping(joined.as_ptr(), all.cast::<u8>(), joined.len()) };
    0
}

fn communicator(rank: &Rank, size: u32) -> cmdgraph_sycl_communicator {
    cmdgraph_sycl_communicator {
        rank: rank.rank,
        size,
        send: Some(send),
        recv: Some(recv),
        allgather: Some(allgather),
        user: (rank as *const Rank).cast_mut().cast(),
    }
}

/// One rank's program: a = 1.75 x; send a, receive b; b += a; all-reduce b. Returns b after
/// each of two runs.
fn rank_program(backend: cmdgraph_sycl_backend, me: &Rank, x: &[f32]) -> Vec<Vec<f32>> {
    let mut options = cmdgraph_sycl_context_options_default();
    options.backend = backend as i32;
    options.validation = backend == cmdgraph_sycl_backend::CMDGRAPH_SYCL_BACKEND_VULKAN;
    let mut ctx = null_mut();
    ok(c!(cmdgraph_sycl_context_create(&options, &mut ctx)));
    ok(c!(cmdgraph_sycl_context_register_kernels(ctx, cs(KERNELS).as_ptr())));
    ok(c!(cmdgraph_sycl_context_set_communicator(ctx, &communicator(me, 2))));
    let malloc = || {
        let mut p = null_mut();
        ok(c!(cmdgraph_sycl_malloc(ctx, 0, cmdgraph_sycl_type::CMDGRAPH_SYCL_F32 as i32, N as u64, &mut p)));
        p
    };
    let (xp, a, b) = (malloc(), malloc(), malloc());
    ok(c!(cmdgraph_sycl_memcpy(ctx, xp, x.as_ptr().cast(), (N * 4) as u64)));
    let cg = || {
        let mut cg = null_mut();
        ok(c!(cmdgraph_sycl_cg_create(ctx, &mut cg)));
        cg
    };
    let launch = |name: &str, args: &[cmdgraph_sycl_arg]| {
        let c = cg();
        let global = [N as u64];
        ok(c!(cmdgraph_sycl_cg_parallel_for(c, cs(name).as_ptr(), 1, global.as_ptr(), args.as_ptr(), args.len())));
        c
    };
    let peer = 1 - me.rank;
    let bytes = (N * 4) as u64;
    let mut g = null_mut();
    ok(c!(cmdgraph_sycl_graph_create(ctx, 0, &mut g)));
    let scaled = add(
        g,
        launch("scale", &[cmdgraph_sycl_arg_pointer(xp), cmdgraph_sycl_arg_pointer(a), cmdgraph_sycl_arg_f32(1.75)]),
        &[],
    );
    let c = cg();
    ok(c!(cmdgraph_sycl_cg_send(c, a, bytes, peer, 5)));
    let sent = add(g, c, &[scaled]);
    let c = cg();
    ok(c!(cmdgraph_sycl_cg_recv(c, b, bytes, peer, 5)));
    let got = add(g, c, &[]);
    let added = add(g, launch("add", &[cmdgraph_sycl_arg_pointer(a), cmdgraph_sycl_arg_pointer(b)]), &[sent, got]);
    let c = cg();
    ok(c!(cmdgraph_sycl_cg_allreduce(c, cmdgraph_sycl_reduce_op::CMDGRAPH_SYCL_REDUCE_SUM as i32, b, bytes)));
    let summed = add(g, c, &[added]);
    let mut exec = null_mut();
    ok(c!(cmdgraph_sycl_graph_finalize(g, 0, &mut exec)));
    let mut q = null_mut();
    ok(c!(cmdgraph_sycl_queue_create(ctx, 0, &mut q)));
    let mut runs = Vec::new();
    for _ in 0..2 {
        let mut ev = null_mut();
        ok(c!(cmdgraph_sycl_queue_graph(q, exec, null(), 0, &mut ev)));
        ok(c!(cmdgraph_sycl_event_wait(ev)));
        c!(cmdgraph_sycl_event_destroy(ev));
        let mut v = vec![0f32; N];
        ok(c!(cmdgraph_sycl_memcpy(ctx, v.as_mut_ptr().cast(), b, bytes)));
        runs.push(v);
    }
    let mut runtime = vec![0u8; 256];
    let mut size = 0;
    ok(c!(cmdgraph_sycl_exec_runtime(exec, runtime.as_mut_ptr().cast(), runtime.len(), &mut size)));
    let runtime = String::from_utf8_lossy(&runtime[..size]).to_string();
    let vulkan = backend == cmdgraph_sycl_backend::CMDGRAPH_SYCL_BACKEND_VULKAN;
    assert_eq!(runtime.contains("Vulkan"), vulkan, "ran on {runtime}");
    for n in [scaled, sent, got, added, summed] {
        c!(cmdgraph_sycl_node_destroy(n));
    }
    c!(cmdgraph_sycl_exec_destroy(exec));
    c!(cmdgraph_sycl_graph_destroy(g));
    c!(cmdgraph_sycl_queue_destroy(q));
    c!(cmdgraph_sycl_context_destroy(ctx));
    runs
}

#[test]
fn two_ranks_exchange_and_all_reduce_on_both_backends() {
    let x: Vec<Vec<f32>> = (0..2).map(|r| random_floats(40 + r, N)).collect();
    let a: Vec<Vec<f32>> = x.iter().map(|x| x.iter().map(|v| 1.75 * v).collect()).collect();
    // b_r = a_peer + a_r, then b_0 + b_1 in rank order.
    let b = |r: usize| -> Vec<f32> { a[1 - r].iter().zip(&a[r]).map(|(p, m)| p + m).collect() };
    let want: Vec<u32> = b(0).iter().zip(b(1)).map(|(p, q)| (p + q).to_bits()).collect();
    for backend in
        [cmdgraph_sycl_backend::CMDGRAPH_SYCL_BACKEND_INTERPRETER, cmdgraph_sycl_backend::CMDGRAPH_SYCL_BACKEND_VULKAN]
    {
        let mail = Arc::new(Mail {
            boxes: Mutex::new(BTreeMap::new()),
            arrived: Condvar::new(),
            parts: Mutex::new(vec![Vec::new(); 2]),
            barrier: Barrier::new(2),
        });
        let outs: Vec<Vec<Vec<f32>>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..2u32)
                .map(|r| {
                    let (mail, x) = (mail.clone(), &x[r as usize]);
                    s.spawn(move || rank_program(backend, &Rank { mail, rank: r }, x))
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("rank thread")).collect()
        });
        for (r, runs) in outs.iter().enumerate() {
            for run in runs {
                assert_eq!(run.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want, "{backend:?}, rank {r}");
            }
        }
    }
}

#[test]
fn bad_communicators_and_reductions_are_refused() {
    let options = cmdgraph_sycl_context_options {
        backend: cmdgraph_sycl_backend::CMDGRAPH_SYCL_BACKEND_INTERPRETER as i32,
        ..cmdgraph_sycl_context_options_default()
    };
    let mut ctx = null_mut();
    ok(c!(cmdgraph_sycl_context_create(&options, &mut ctx)));
    let mail = Arc::new(Mail {
        boxes: Mutex::new(BTreeMap::new()),
        arrived: Condvar::new(),
        parts: Mutex::new(vec![Vec::new(); 2]),
        barrier: Barrier::new(2),
    });
    let me = Rank { mail, rank: 2 };
    assert_ne!(
        c!(cmdgraph_sycl_context_set_communicator(ctx, &communicator(&me, 2))),
        cmdgraph_sycl_status::CMDGRAPH_SYCL_OK
    );
    assert!(last_error().contains("rank 2 is not below its size 2"), "{}", last_error());
    let mut no_recv = communicator(&Rank { mail: me.mail.clone(), rank: 0 }, 2);
    no_recv.recv = None;
    assert_ne!(c!(cmdgraph_sycl_context_set_communicator(ctx, &no_recv)), cmdgraph_sycl_status::CMDGRAPH_SYCL_OK);
    assert!(last_error().contains("send, recv and allgather"), "{}", last_error());
    assert_ne!(c!(cmdgraph_sycl_context_set_communicator(ctx, null())), cmdgraph_sycl_status::CMDGRAPH_SYCL_OK);
    let mut p = null_mut();
    ok(c!(cmdgraph_sycl_malloc(ctx, 0, cmdgraph_sycl_type::CMDGRAPH_SYCL_F32 as i32, 4, &mut p)));
    let mut cg = null_mut();
    ok(c!(cmdgraph_sycl_cg_create(ctx, &mut cg)));
    assert_ne!(c!(cmdgraph_sycl_cg_allreduce(cg, 7, p, 16)), cmdgraph_sycl_status::CMDGRAPH_SYCL_OK);
    assert!(last_error().contains("7 is not a cmdgraph_sycl_reduce_op"), "{}", last_error());
    c!(cmdgraph_sycl_cg_destroy(cg));
    c!(cmdgraph_sycl_context_destroy(ctx));
}
