//! Communication nodes through the C API (`cmdgraph_executor_set_communicator`, docs/capi.md
//! "Ranks"): two ranks, each a thread with its own executor (llvmpipe in CI, validation on),
//! whose communicator is three C functions over the application's transport (here the
//! simulated ranks of `cmdgraph_ir::comm::local`, as an application would wrap its MPI). They
//! exchange and all-reduce full-precision random floats three runs in a row, and every memory
//! object equals the interpreter's multi-rank simulation byte for byte. Bad communicators and a
//! failing transport are errors with messages.
#![allow(unsafe_code)]

mod support;

use cmdgraph::bundle::*;
use cmdgraph::comm::*;
use cmdgraph::exec::*;
use cmdgraph::executor::*;
use cmdgraph::*;
use cmdgraph_ir::comm::{local, Communicator, ReduceOp};
use cmdgraph_ir::types::ScalarType;
use cmdgraph_status::*;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ptr::null_mut;
use std::time::Duration;

const N: usize = 256;

/// Separate multiply and add (one rounding each on every runtime): `b = 0.5 a + b` after
/// receiving the peer's `a` into `b`, then `b` all-reduced with `sum`.
fn ir() -> String {
    let mut s = String::from(
        "kernel @saxpy(%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32) {
  %i = global_id 0
  %xv = load %x[%i]
  %yv = load %y[%i]
  %p = mul %a, %xv
  %r = add %p, %yv
  store %y[%i], %r
}

usm @x : f32[256]
usm @a : f32[256]
usm @b : f32[256]
",
    );
    for r in 0..2 {
        let p = 1 - r;
        s.push_str(&format!(
            "
graph @g.r{r} {{
  %k0 = kernel @saxpy range(256) args(@x, @a, 1.7)
  %s = send @a, 1024 to({p}) tag(3) after(%k0)
  %r = recv @b, 1024 from({p}) tag(3)
  %k1 = kernel @saxpy range(256) args(@a, @b, 0.5) after(%s, %r)
  %all = allreduce sum @b, 1024 after(%k1)
}}
"
        ));
    }
    s
}

fn c(s: &str) -> CString {
    CString::new(s).expect("no NUL")
}

fn text(p: *const c_char) -> String {
    // SAFETY: the library returns NUL-terminated strings valid until the next call.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// The application's transport: one rank of the simulated communicator.
struct App(local::LocalCommunicator);

unsafe extern "C" fn send(user: *mut c_void, to: u32, tag: u32, bytes: *const c_void, len: u64) -> c_int {
    // SAFETY: `user` is this rank's `App`, used by one thread at a time; `bytes` readable.
    let (app, data) =
        unsafe { (&mut *user.cast::<App>(), std::slice::from_raw_parts(bytes.cast::<u8>(), len as usize)) };
    app.0.send("c", to, tag, data).map_or(1, |_| 0)
}

unsafe extern "C" fn recv(user: *mut c_void, from: u32, tag: u32, out: *mut c_void, len: u64) -> c_int {
    // SAFETY: as above; `out` writable.
    let (app, data) =
        unsafe { (&mut *user.cast::<App>(), std::slice::from_raw_parts_mut(out.cast::<u8>(), len as usize)) };
    app.0.recv("c", from, tag, data).map_or(2, |_| 0)
}

/// All-gather through the simulated ranks: each rank all-reduces a buffer of `size * len`
/// bytes holding its own bytes at its place and zeros elsewhere, with `max` over `u8`
/// (every other rank's bytes are 0 there), which is every rank's bytes in rank order.
unsafe extern "C" fn allgather(user: *mut c_void, mine: *const c_void, len: u64, all: *mut c_void) -> c_int {
    // SAFETY: as above; `mine` readable, `all` writable for `size * len` bytes.
    let app = unsafe { &mut *user.cast::<App>() };
    let (rank, size, n) = (app.0.rank() as usize, app.0.size() as usize, len as usize);
    let out = unsafe { std::slice::from_raw_parts_mut(all.cast::<u8>(), size * n) };
    out.fill(0);
    // SAFETY: `mine` readable for `len` bytes.
    out[rank * n..(rank + 1) * n].copy_from_slice(unsafe { std::slice::from_raw_parts(mine.cast::<u8>(), n) });
    app.0.allreduce("c", ReduceOp::Max, ScalarType::U8, out).map_or(3, |_| 0)
}

unsafe extern "C" fn failing(_: *mut c_void, _: u32, _: u32, _: *const c_void, _: u64) -> c_int {
    7
}

fn inputs(rank: u32) -> Vec<(&'static str, Vec<u8>)> {
    let x = support::random_floats(11 + rank, N);
    let a = support::random_floats(21 + rank, N);
    vec![("x", support::f32_bytes(&x)), ("a", support::f32_bytes(&a)), ("b", vec![0; 4 * N])]
}

/// Rank `rank` through the C API: `x`, `a`, `b` after each of three runs.
fn rank(rank: u32, bytes: &[u8], app: &mut App) -> Vec<Vec<Vec<u8>>> {
    let mut bundle = null_mut();
    // SAFETY: valid bytes and out-pointer.
    assert_eq!(unsafe { cmdgraph_bundle_from_memory(bytes.as_ptr().cast(), bytes.len(), &mut bundle) }, CMDGRAPH_OK);
    let mut opts = cmdgraph_executor_options_default();
    opts.validation = true;
    let mut ex = null_mut();
    // SAFETY: live bundle, readable options, writable out-pointer.
    assert_eq!(unsafe { cmdgraph_executor_create(bundle, &opts, &mut ex) }, CMDGRAPH_OK);
    // SAFETY: live bundle, not used afterwards.
    unsafe { cmdgraph_bundle_destroy(bundle) };
    let comm = cmdgraph_communicator {
        rank,
        size: 2,
        send: Some(send),
        recv: Some(recv),
        allgather: Some(allgather),
        user: (app as *mut App).cast(),
    };
    // SAFETY: live executor; the functions follow the contracts and `app` outlives `ex`.
    let st = unsafe { cmdgraph_executor_set_communicator(ex, &comm) };
    // SAFETY: live executor.
    assert_eq!(st, CMDGRAPH_OK, "{}", text(unsafe { cmdgraph_executor_last_error(ex) }));
    for (n, b) in inputs(rank) {
        // SAFETY: live executor, readable bytes.
        assert_eq!(unsafe { cmdgraph_executor_bind(ex, c(n).as_ptr(), b.as_ptr().cast(), b.len()) }, CMDGRAPH_OK);
    }
    let mut exec = null_mut();
    // SAFETY: live executor, NULL options, writable out-pointer.
    let st = unsafe { cmdgraph_executor_finalize(ex, c(&format!("g.r{rank}")).as_ptr(), std::ptr::null(), &mut exec) };
    // SAFETY: live executor.
    assert_eq!(st, CMDGRAPH_OK, "{}", text(unsafe { cmdgraph_executor_last_error(ex) }));
    let mut out = Vec::new();
    for _ in 0..3 {
        // SAFETY: live executable.
        assert_eq!(unsafe { cmdgraph_exec_run(exec) }, CMDGRAPH_OK);
        // SAFETY: live executable.
        let st = unsafe { cmdgraph_exec_wait(exec) };
        // SAFETY: live executor.
        assert_eq!(st, CMDGRAPH_OK, "{}", text(unsafe { cmdgraph_executor_last_error(ex) }));
        let mut phase = Vec::new();
        for n in ["x", "a", "b"] {
            let mut buf = vec![0u8; 4 * N];
            let mut size = 0;
            // SAFETY: live executor, a buffer of `buf.len()` bytes, a writable size.
            let st =
                unsafe { cmdgraph_executor_read(ex, c(n).as_ptr(), buf.as_mut_ptr().cast(), buf.len(), &mut size) };
            assert_eq!(st, CMDGRAPH_OK);
            phase.push(buf);
        }
        out.push(phase);
    }
    // SAFETY: live objects, destroyed once, the executable first.
    unsafe {
        cmdgraph_exec_destroy(exec);
        cmdgraph_executor_destroy(ex);
    }
    out
}

#[test]
fn two_ranks_through_c_functions_match_the_interpreters_simulation() {
    let text_ir = ir();
    let bytes = support::compile(&text_ir);
    let comms = local::ranks(2, Duration::from_secs(120));
    let got: Vec<Vec<Vec<Vec<u8>>>> = std::thread::scope(|s| {
        let hs: Vec<_> = comms
            .into_iter()
            .enumerate()
            .map(|(r, cm)| {
                let bytes = &bytes;
                s.spawn(move || {
                    let mut app = App(cm);
                    let out = rank(r as u32, bytes, &mut app);
                    app.0.end();
                    out
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let module = cmdgraph_ir::text::parse(&text_ir).unwrap();
    let sim = cmdgraph_interp::ranks::Simulation {
        module: &module,
        graph: "g",
        size: 2,
        runs: 3,
        options: Default::default(),
        timeout: Duration::from_secs(60),
    };
    let setup = |r: u32, i: &mut cmdgraph_interp::Interpreter| {
        for (n, b) in inputs(r) {
            i.bind(n, &b)?;
        }
        Ok(())
    };
    for (r, i) in cmdgraph_interp::ranks::simulate(&sim, &setup).into_iter().enumerate() {
        let i = i.unwrap();
        for (k, n) in ["x", "a", "b"].iter().enumerate() {
            assert!(got[r][2][k] == i.read(n).unwrap(), "rank {r}: @{n} differs from the simulation");
        }
    }
    assert_eq!(got[0][2][2], got[1][2][2], "the all-reduced b is every rank's");
    assert_ne!(got[0][0][1], got[0][1][1], "runs change a");
}

#[test]
fn bad_communicators_and_a_failing_transport_are_errors_with_messages() {
    let bytes = support::compile(&ir());
    let mut bundle = null_mut();
    // SAFETY: valid bytes and out-pointer.
    assert_eq!(unsafe { cmdgraph_bundle_from_memory(bytes.as_ptr().cast(), bytes.len(), &mut bundle) }, CMDGRAPH_OK);
    let mut ex = null_mut();
    // SAFETY: live bundle, default options, writable out-pointer.
    assert_eq!(unsafe { cmdgraph_executor_create(bundle, std::ptr::null(), &mut ex) }, CMDGRAPH_OK);
    // SAFETY: live bundle.
    unsafe { cmdgraph_bundle_destroy(bundle) };
    let err = || text(unsafe { cmdgraph_executor_last_error(ex) });
    // SAFETY: live executor, NULL communicator.
    assert_eq!(unsafe { cmdgraph_executor_set_communicator(ex, std::ptr::null()) }, CMDGRAPH_ERROR_INVALID_ARGUMENT);
    assert!(err().contains("NULL"), "{}", err());
    let mut comm = cmdgraph_communicator {
        rank: 2,
        size: 2,
        send: Some(failing),
        recv: Some(recv),
        allgather: Some(allgather),
        user: null_mut(),
    };
    // SAFETY: live executor, readable communicator.
    assert_eq!(unsafe { cmdgraph_executor_set_communicator(ex, &comm) }, CMDGRAPH_ERROR_INVALID_ARGUMENT);
    assert!(err().contains("rank 2 is not below its size 2"), "{}", err());
    comm.rank = 0;
    comm.allgather = None;
    // SAFETY: as above.
    assert_eq!(unsafe { cmdgraph_executor_set_communicator(ex, &comm) }, CMDGRAPH_ERROR_INVALID_ARGUMENT);
    assert!(err().contains("send, recv and allgather"), "{}", err());
    // A send that fails fails the run, naming the node and the value.
    comm.allgather = Some(allgather);
    // SAFETY: as above; `failing` never touches `user`.
    assert_eq!(unsafe { cmdgraph_executor_set_communicator(ex, &comm) }, CMDGRAPH_OK);
    let mut exec = null_mut();
    // SAFETY: live executor, NULL options, writable out-pointer.
    assert_eq!(unsafe { cmdgraph_executor_finalize(ex, c("g.r0").as_ptr(), std::ptr::null(), &mut exec) }, CMDGRAPH_OK);
    // SAFETY: live executable.
    assert_eq!(unsafe { cmdgraph_exec_run(exec) }, CMDGRAPH_OK);
    // SAFETY: live executable.
    let st = unsafe { cmdgraph_exec_wait(exec) };
    assert_ne!(st, CMDGRAPH_OK);
    // SAFETY: live executable.
    let why = text(unsafe { cmdgraph_exec_last_error(exec) });
    assert!(why.contains("%s") && why.contains("send function returned 7"), "{why}");
    // SAFETY: live objects, destroyed once.
    unsafe {
        cmdgraph_exec_destroy(exec);
        cmdgraph_executor_destroy(ex);
    }
}
