//! The C API called directly: status codes and messages of every kind of misuse (NULL handles
//! and pointers, unknown names, non-UTF-8 names, damaged bundles, small buffers, wrong
//! values), every scalar type of dynamic parameter, whole-graph update, host-task callbacks
//! that fail, lifetimes (an executable outliving its executor handle), and the demo run with
//! validation on compared with the reference interpreter.
#![allow(unsafe_code)]

mod support;

use cmdgraph::bundle::*;
use cmdgraph::device_global::*;
use cmdgraph::exec::*;
use cmdgraph::executor::*;
use cmdgraph::host::*;
use cmdgraph::update::*;
use cmdgraph::*;
use cmdgraph_status::*;
use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr::{null, null_mut};

fn c(s: &str) -> CString {
    CString::new(s).expect("no NUL")
}

fn text(p: *const c_char) -> String {
    assert!(!p.is_null(), "a message pointer is never NULL");
    // SAFETY: the library returns NUL-terminated strings valid until the next call.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

fn bundle_of(bytes: &[u8]) -> *mut cmdgraph_bundle {
    let mut b = null_mut();
    // SAFETY: valid bytes and out-pointer.
    let st = unsafe { cmdgraph_bundle_from_memory(bytes.as_ptr().cast(), bytes.len(), &mut b) };
    assert_eq!(st, CMDGRAPH_OK, "{}", text(cmdgraph_last_error()));
    b
}

/// An executor with validation on for `bytes`, and its bundle.
fn executor_of(bytes: &[u8]) -> (*mut cmdgraph_bundle, *mut cmdgraph_executor) {
    let b = bundle_of(bytes);
    let mut opts = cmdgraph_executor_options_default();
    opts.validation = true;
    let mut ex = null_mut();
    // SAFETY: live bundle, valid options and out-pointer.
    let st = unsafe { cmdgraph_executor_create(b, &opts, &mut ex) };
    // SAFETY: live bundle.
    assert_eq!(st, CMDGRAPH_OK, "{}", text(unsafe { cmdgraph_bundle_last_error(b) }));
    (b, ex)
}

fn finalize(ex: *mut cmdgraph_executor, graph: &str) -> *mut cmdgraph_exec {
    let mut e = null_mut();
    // SAFETY: live executor, valid name and out-pointer.
    let st = unsafe { cmdgraph_executor_finalize(ex, c(graph).as_ptr(), null(), &mut e) };
    // SAFETY: live executor.
    assert_eq!(st, CMDGRAPH_OK, "{}", text(unsafe { cmdgraph_executor_last_error(ex) }));
    e
}

/// Asserts the executor's validation layer said nothing.
fn no_messages(ex: *mut cmdgraph_executor) {
    let mut n = usize::MAX;
    // SAFETY: live executor, valid out-pointer.
    assert_eq!(unsafe { cmdgraph_executor_take_messages(ex, &mut n) }, CMDGRAPH_OK);
    // SAFETY: live executor; index checked by the library.
    let all: Vec<String> = (0..n).map(|i| text(unsafe { cmdgraph_executor_message(ex, i) })).collect();
    assert!(all.is_empty(), "validation messages: {all:#?}");
}

fn read(ex: *mut cmdgraph_executor, name: &str) -> Vec<u8> {
    let mut size = 0usize;
    // SAFETY: live executor; a size query with no buffer.
    let st = unsafe { cmdgraph_executor_read(ex, c(name).as_ptr(), null_mut(), 0, &mut size) };
    assert!(st == CMDGRAPH_ERROR_BUFFER_TOO_SMALL || (st == CMDGRAPH_OK && size == 0), "{st:?}");
    let mut out = vec![0u8; size];
    // SAFETY: `out` has `size` bytes.
    let st = unsafe { cmdgraph_executor_read(ex, c(name).as_ptr(), out.as_mut_ptr().cast(), size, &mut size) };
    // SAFETY: live executor.
    assert_eq!(st, CMDGRAPH_OK, "{}", text(unsafe { cmdgraph_executor_last_error(ex) }));
    out
}

fn ok_exec(e: *mut cmdgraph_exec, st: cmdgraph_status) {
    // SAFETY: live executable.
    assert_eq!(st, CMDGRAPH_OK, "{}", text(unsafe { cmdgraph_exec_last_error(e) }));
}

#[test]
fn null_handles_and_pointers_are_errors_with_messages() {
    // SAFETY: every handle below is NULL, which the API accepts.
    unsafe {
        assert_eq!(cmdgraph_executor_bind(null_mut(), c("x").as_ptr(), null(), 0), CMDGRAPH_ERROR_NULL_HANDLE);
        assert!(text(cmdgraph_last_error()).contains("executor handle is NULL"));
        assert_eq!(text(cmdgraph_executor_last_error(null_mut())), text(cmdgraph_last_error()));
        assert_eq!(cmdgraph_exec_run(null_mut()), CMDGRAPH_ERROR_NULL_HANDLE);
        assert!(text(cmdgraph_exec_last_error(null_mut())).contains("executable handle is NULL"));
        assert_eq!(cmdgraph_exec_update_f32(null_mut(), c("a").as_ptr(), 1.0), CMDGRAPH_ERROR_NULL_HANDLE);
        assert_eq!(cmdgraph_bundle_memory_count(null_mut(), null_mut()), CMDGRAPH_ERROR_NULL_HANDLE);
        assert_eq!(cmdgraph_host_memory_size(null_mut(), null(), null_mut()), CMDGRAPH_ERROR_NULL_HANDLE);
        let mut ex = null_mut();
        assert_eq!(cmdgraph_executor_create(null_mut(), null(), &mut ex), CMDGRAPH_ERROR_NULL_HANDLE);
        assert!(ex.is_null());
        assert!(cmdgraph_executor_device_name(null_mut()).is_null());
        assert!(cmdgraph_executor_message(null_mut(), 0).is_null());
        // Destroying NULL, twice, does nothing.
        for _ in 0..2 {
            cmdgraph_bundle_destroy(null_mut());
            cmdgraph_executor_destroy(null_mut());
            cmdgraph_exec_destroy(null_mut());
        }
        // A NULL path, a NULL out-pointer, NULL data with a length.
        let mut b = null_mut();
        assert_eq!(cmdgraph_bundle_open(null(), &mut b), CMDGRAPH_ERROR_INVALID_ARGUMENT);
        assert!(text(cmdgraph_last_error()).contains("bundle path is NULL"));
        assert_eq!(cmdgraph_bundle_open(c("x.cgb").as_ptr(), null_mut()), CMDGRAPH_ERROR_INVALID_ARGUMENT);
        assert_eq!(cmdgraph_bundle_from_memory(null(), 16, &mut b), CMDGRAPH_ERROR_INVALID_ARGUMENT);
        assert!(b.is_null());
        assert_eq!(text(cmdgraph_status_name(CMDGRAPH_ERROR_TIMEOUT)), "CMDGRAPH_ERROR_TIMEOUT");
        assert_eq!(text(cmdgraph_version()), env!("CARGO_PKG_VERSION"));
    }
}

#[test]
fn damaged_bundles_and_missing_files_are_refused() {
    let good = support::compile(&support::demo_text());
    let mut b = null_mut();
    // SAFETY: valid pointers throughout.
    unsafe {
        assert_eq!(
            cmdgraph_bundle_from_memory(b"not a bundle".as_ptr().cast(), 12, &mut b),
            CMDGRAPH_ERROR_BUNDLE_INVALID
        );
        assert!(b.is_null());
        assert!(!text(cmdgraph_last_error()).is_empty());
        let mut damaged = good.clone();
        let mid = damaged.len() / 2;
        damaged[mid] ^= 0x40;
        assert_eq!(
            cmdgraph_bundle_from_memory(damaged.as_ptr().cast(), damaged.len(), &mut b),
            CMDGRAPH_ERROR_BUNDLE_INVALID
        );
        assert_eq!(cmdgraph_bundle_open(c("/nonexistent/demo.cgb").as_ptr(), &mut b), CMDGRAPH_ERROR_IO);
        assert!(text(cmdgraph_last_error()).contains("/nonexistent/demo.cgb"));
        let not_utf8 = CString::new(vec![b'x', 0xff, b'y']).expect("no NUL");
        assert_eq!(cmdgraph_bundle_open(not_utf8.as_ptr(), &mut b), CMDGRAPH_ERROR_INVALID_ARGUMENT);
        assert!(text(cmdgraph_last_error()).contains("not UTF-8"));
        // The good bundle from a file, and its memory listing.
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("demo.cgb");
        std::fs::write(&path, &good).expect("write");
        assert_eq!(cmdgraph_bundle_open(c(path.to_str().expect("UTF-8")).as_ptr(), &mut b), CMDGRAPH_OK);
        assert_eq!(text(cmdgraph_last_error()), "", "a success clears the thread's message");
        let mut n = 0;
        assert_eq!(cmdgraph_bundle_memory_count(b, &mut n), CMDGRAPH_OK);
        assert_eq!(n, 6);
        let (mut name, mut size) = (null(), 0u64);
        assert_eq!(cmdgraph_bundle_memory(b, 5, &mut name, &mut size), CMDGRAPH_OK);
        assert_eq!((text(name).as_str(), size), ("stats", 16));
        assert_eq!(cmdgraph_bundle_memory(b, 6, &mut name, &mut size), CMDGRAPH_ERROR_INVALID_ARGUMENT);
        assert!(text(cmdgraph_bundle_last_error(b)).contains("6 user memory objects"));
        cmdgraph_bundle_destroy(b);
    }
}

/// The demo's host task through a Rust `extern "C"` callback; `user` is the tag.
unsafe extern "C" fn stats_cb(memory: *mut cmdgraph_host_memory<'_>, user: *mut c_void) -> cmdgraph_status {
    // SAFETY: the test registers a live `(u32, u32)` (tag, calls) that outlives the executor.
    let (tag, calls) = unsafe { &mut *user.cast::<(u32, u32)>() };
    let mut act = vec![0u8; 4096];
    // SAFETY: the callback's live memory; `act` has 4096 bytes.
    let st = unsafe { cmdgraph_host_memory_read(memory, c"act".as_ptr(), 0, act.as_mut_ptr().cast(), 4096) };
    if st != CMDGRAPH_OK {
        return st;
    }
    let act: Vec<f32> = act.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    let (mut pos, mut hi, mut lo) = (0u32, act[0], act[0]);
    for &v in &act {
        pos += u32::from(v > 0.0);
        hi = if v > hi { v } else { hi };
        lo = if v < lo { v } else { lo };
    }
    *calls += 1;
    let out: Vec<u8> = [pos, hi.to_bits(), lo.to_bits(), *tag + *calls].iter().flat_map(|v| v.to_le_bytes()).collect();
    // SAFETY: the callback's live memory; `out` has 16 bytes.
    unsafe { cmdgraph_host_memory_write(memory, c"@stats".as_ptr(), 0, out.as_ptr().cast(), out.len()) }
}

#[test]
fn the_demo_through_the_c_functions_matches_the_interpreter_with_validation_on() {
    let (b, ex) = executor_of(&support::compile(&support::demo_text()));
    let mut user = (1000u32, 0u32);
    // SAFETY: live handles, valid pointers; `user` outlives the executor (destroyed below).
    unsafe {
        assert!(!text(cmdgraph_executor_device_name(ex)).is_empty());
        for (name, seed) in [("@in", 1), ("in_alt", 2), ("y", 3)] {
            let data = support::f32_bytes(&support::random_floats(seed, 1024));
            let st = cmdgraph_executor_bind(ex, c(name).as_ptr(), data.as_ptr().cast(), data.len());
            assert_eq!(st, CMDGRAPH_OK, "{}", text(cmdgraph_executor_last_error(ex)));
        }
        let st = cmdgraph_executor_register_callback(ex, c"stats".as_ptr(), Some(stats_cb), (&raw mut user).cast());
        assert_eq!(st, CMDGRAPH_OK);
        let e = finalize(ex, "demo");
        let expected = support::demo_reference();
        ok_exec(e, cmdgraph_exec_run(e));
        ok_exec(e, cmdgraph_exec_wait(e));
        for n in ["in", "in_alt", "y", "act", "out", "stats"] {
            assert_eq!(read(ex, n), expected[&(1, n.to_string())], "run 1 @{n}");
        }
        ok_exec(e, cmdgraph_exec_update_f32(e, c"%alpha".as_ptr(), -0.75));
        ok_exec(e, cmdgraph_exec_update_f32(e, c"slope".as_ptr(), 0.3));
        ok_exec(e, cmdgraph_exec_update_pointer(e, c"src".as_ptr(), c"@in_alt".as_ptr(), 0));
        ok_exec(e, cmdgraph_exec_set_active(e, c"activation".as_ptr(), 1));
        let gain = 0.5f32.to_le_bytes();
        ok_exec(e, cmdgraph_exec_update_bytes(e, c"gain".as_ptr(), gain.as_ptr().cast(), 4));
        ok_exec(e, cmdgraph_exec_run(e));
        ok_exec(e, cmdgraph_executor_wait_idle(ex));
        ok_exec(e, cmdgraph_exec_wait(e));
        for n in ["in", "in_alt", "y", "act", "out", "stats"] {
            assert_eq!(read(ex, n), expected[&(2, n.to_string())], "run 2 @{n}");
        }
        assert_eq!(user.1, 2, "the callback ran once per run");
        // Finalized without node profiling: the run's times, no nodes.
        let mut p = cmdgraph_profile::default();
        ok_exec(e, cmdgraph_exec_profile(e, &mut p));
        assert!(p.end_ns >= p.start_ns);
        assert_eq!(p.node_count, 0);
        let mut node = cmdgraph_node_profile { name: null(), start_ns: 0, end_ns: 0 };
        assert_eq!(cmdgraph_exec_profile_node(e, 0, &mut node), CMDGRAPH_ERROR_INVALID_ARGUMENT);
        // With node profiling: every kernel node.
        let mut e2 = null_mut();
        let opts = cmdgraph_finalize_options { node_profiling: true };
        assert_eq!(cmdgraph_executor_finalize(ex, c"@demo".as_ptr(), &opts, &mut e2), CMDGRAPH_OK);
        ok_exec(e2, cmdgraph_exec_run(e2));
        ok_exec(e2, cmdgraph_exec_profile(e2, &mut p));
        let names: Vec<String> = (0..p.node_count)
            .map(|i| {
                ok_exec(e2, cmdgraph_exec_profile_node(e2, i, &mut node));
                assert!(node.end_ns >= node.start_ns);
                text(node.name)
            })
            .collect();
        assert_eq!(names, ["k_axpy", "k_act", "k_scale"]);
        assert_eq!(user.1, 3);
        cmdgraph_exec_destroy(e2);
        cmdgraph_exec_destroy(e);
        no_messages(ex);
        cmdgraph_executor_destroy(ex);
        cmdgraph_bundle_destroy(b);
    }
}

#[test]
fn misuse_of_an_executor_reports_the_right_status_and_message() {
    let (b, ex) = executor_of(&support::compile(&support::demo_text()));
    // SAFETY: live handles, valid pointers unless the test says otherwise.
    unsafe {
        let data = [0u8; 16];
        assert_eq!(cmdgraph_executor_bind(ex, c"nope".as_ptr(), data.as_ptr().cast(), 16), CMDGRAPH_ERROR_NOT_FOUND);
        assert!(text(cmdgraph_executor_last_error(ex)).contains("@nope"), "{}", text(cmdgraph_executor_last_error(ex)));
        assert_eq!(
            cmdgraph_executor_bind(ex, c"stats".as_ptr(), data.as_ptr().cast(), 12),
            CMDGRAPH_ERROR_INVALID_ARGUMENT
        );
        assert!(text(cmdgraph_executor_last_error(ex)).contains("16 bytes"));
        let not_utf8 = CString::new(vec![0xc3, 0x28]).expect("no NUL");
        assert_eq!(cmdgraph_executor_bind(ex, not_utf8.as_ptr(), null(), 0), CMDGRAPH_ERROR_INVALID_ARGUMENT);
        let mut small = [0u8; 8];
        let mut size = 0usize;
        let st = cmdgraph_executor_read(ex, c"stats".as_ptr(), small.as_mut_ptr().cast(), 8, &mut size);
        assert_eq!((st, size), (CMDGRAPH_ERROR_BUFFER_TOO_SMALL, 16));
        assert_eq!(small, [0; 8], "nothing copied");
        let mut msize = 0u64;
        assert_eq!(cmdgraph_executor_memory_size(ex, c"@y".as_ptr(), &mut msize), CMDGRAPH_OK);
        assert_eq!(msize, 4096);
        // A success clears the handle's message.
        assert_eq!(text(cmdgraph_executor_last_error(ex)), "");
        let mut e = null_mut();
        assert_eq!(cmdgraph_executor_finalize(ex, c"@nope".as_ptr(), null(), &mut e), CMDGRAPH_ERROR_NOT_FOUND);
        assert!(e.is_null());
        assert_eq!(
            cmdgraph_executor_register_callback(ex, c"stats".as_ptr(), None, null_mut()),
            CMDGRAPH_ERROR_INVALID_ARGUMENT
        );
        let e = finalize(ex, "demo");
        // No callback registered for the host task: the run itself fails.
        assert_eq!(cmdgraph_exec_run(e), CMDGRAPH_ERROR_HOST_TASK_FAILED);
        assert!(text(cmdgraph_exec_last_error(e)).contains("not registered"));
        assert_eq!(cmdgraph_exec_update_f32(e, c"nope".as_ptr(), 1.0), CMDGRAPH_ERROR_NOT_FOUND);
        assert_eq!(cmdgraph_exec_update_f32(e, null(), 1.0), CMDGRAPH_ERROR_INVALID_ARGUMENT);
        // A pointer for a scalar parameter, a scalar for a pointer, an unknown memory.
        let st = cmdgraph_exec_update_pointer(e, c"alpha".as_ptr(), c"y".as_ptr(), 0);
        assert_eq!(st, CMDGRAPH_ERROR_INVALID_ARGUMENT, "{}", text(cmdgraph_exec_last_error(e)));
        assert_eq!(cmdgraph_exec_update_u32(e, c"src".as_ptr(), 3), CMDGRAPH_ERROR_INVALID_ARGUMENT);
        assert_eq!(cmdgraph_exec_update_pointer(e, c"src".as_ptr(), c"nope".as_ptr(), 0), CMDGRAPH_ERROR_NOT_FOUND);
        assert_eq!(cmdgraph_exec_set_active(e, c"activation".as_ptr(), 2), CMDGRAPH_ERROR_INVALID_ARGUMENT);
        assert!(text(cmdgraph_exec_last_error(e)).contains("2 alternatives"));
        assert_eq!(cmdgraph_exec_set_active(e, c"nope".as_ptr(), 0), CMDGRAPH_ERROR_NOT_FOUND);
        let mut p = cmdgraph_profile::default();
        assert_eq!(cmdgraph_exec_profile(e, &mut p), CMDGRAPH_ERROR_INVALID_ARGUMENT, "no run yet");
        assert_eq!(cmdgraph_exec_profile(e, null_mut()), CMDGRAPH_ERROR_INVALID_ARGUMENT);
        assert_eq!(cmdgraph_exec_update_graph(e, null_mut(), c"demo".as_ptr()), CMDGRAPH_ERROR_NULL_HANDLE);
        // The executor handle goes first; the executable keeps the executor alive.
        cmdgraph_executor_destroy(ex);
        assert_eq!(cmdgraph_exec_update_f32(e, c"alpha".as_ptr(), 4.0), CMDGRAPH_OK);
        cmdgraph_exec_destroy(e);
        cmdgraph_bundle_destroy(b);
    }
}

/// A failing callback: sets a message and returns an error.
unsafe extern "C" fn failing_cb(memory: *mut cmdgraph_host_memory<'_>, _user: *mut c_void) -> cmdgraph_status {
    // SAFETY: the callback's live memory and static strings.
    unsafe {
        assert_eq!(text(cmdgraph_host_memory_node(memory)), "h_stats");
        // Memory the node does not declare, and a write to memory declared read.
        let mut size = 0;
        assert_eq!(cmdgraph_host_memory_size(memory, c"@y".as_ptr(), &mut size), CMDGRAPH_ERROR_NOT_FOUND);
        assert!(text(cmdgraph_host_memory_last_error(memory)).contains("@y"));
        let bytes = [0u8; 4];
        let st = cmdgraph_host_memory_write(memory, c"@act".as_ptr(), 0, bytes.as_ptr().cast(), 4);
        assert_eq!(st, CMDGRAPH_ERROR_INVALID_ARGUMENT);
        cmdgraph_host_memory_set_error(memory, c"the statistics are unavailable".as_ptr());
    }
    CMDGRAPH_ERROR_HOST_TASK_FAILED
}

#[test]
fn a_failing_callback_fails_the_run_with_its_message() {
    let (b, ex) = executor_of(&support::compile(&support::demo_text()));
    // SAFETY: live handles, valid pointers.
    unsafe {
        assert_eq!(
            cmdgraph_executor_register_callback(ex, c"stats".as_ptr(), Some(failing_cb), null_mut()),
            CMDGRAPH_OK
        );
        let e = finalize(ex, "demo");
        ok_exec(e, cmdgraph_exec_run(e));
        assert_eq!(cmdgraph_exec_wait(e), CMDGRAPH_ERROR_HOST_TASK_FAILED);
        let m = text(cmdgraph_exec_last_error(e));
        assert!(m.contains("h_stats") && m.contains("the statistics are unavailable"), "{m}");
        // Reported once: the executable is usable again.
        ok_exec(e, cmdgraph_exec_wait(e));
        cmdgraph_exec_destroy(e);
        cmdgraph_executor_destroy(ex);
        cmdgraph_bundle_destroy(b);
    }
}

const SCALARS: &str = r#"
kernel @put_i32(%o: buf<i32, write>, %v: i32) { %i = global_id 0
  store %o[%i], %v }
kernel @put_u32(%o: buf<u32, write>, %v: u32) { %i = global_id 0
  store %o[%i], %v }
kernel @put_i64(%o: buf<i64, write>, %v: i64) { %i = global_id 0
  store %o[%i], %v }
kernel @put_u64(%o: buf<u64, write>, %v: u64) { %i = global_id 0
  store %o[%i], %v }
kernel @put_f16(%o: buf<f16, write>, %v: f16) { %i = global_id 0
  store %o[%i], %v }
kernel @put_f64(%o: buf<f64, write>, %v: f64) { %i = global_id 0
  store %o[%i], %v }
kernel @put_i8(%o: buf<i8, write>, %v: i8) { %i = global_id 0
  store %o[%i], %v }
kernel @put_u8(%o: buf<u8, write>, %v: u8) { %i = global_id 0
  store %o[%i], %v }
kernel @put_i16(%o: buf<i16, write>, %v: i16) { %i = global_id 0
  store %o[%i], %v }
kernel @put_u16(%o: buf<u16, write>, %v: u16) { %i = global_id 0
  store %o[%i], %v }
kernel @put_bool(%o: buf<u32, write>, %v: bool) { %i = global_id 0
  %one = const 1 : u32
  %zero = const 0 : u32
  %r = select %v, %one, %zero
  store %o[%i], %r }
kernel @scale(%x: buf<f32, read>, %y: buf<f32, write>, %a: f32) { %i = global_id 0
  %v = load %x[%i]
  %r = mul %v, %a
  store %y[%i], %r }
usm @oi32 : i32[4]
usm @ou32 : u32[4]
usm @oi64 : i64[4]
usm @ou64 : u64[4]
usm @of16 : f16[4]
usm @of64 : f64[4]
usm @oi8 : i8[4]
usm @ou8 : u8[4]
usm @oi16 : i16[4]
usm @ou16 : u16[4]
usm @obool : u32[4]
usm @x : f32[4]
usm @y : f32[4]
graph @g properties(updatable) {
  dyn %vi32 = 1 : i32
  dyn %vu32 = 1 : u32
  dyn %vi64 = 1 : i64
  dyn %vu64 = 1 : u64
  dyn %vf16 = 1.0 : f16
  dyn %vf64 = 1.0 : f64
  dyn %vi8 = 1 : i8
  dyn %vu8 = 1 : u8
  dyn %vi16 = 1 : i16
  dyn %vu16 = 1 : u16
  dyn %vbool = false : bool
  %a = kernel @put_i32 range(4) args(@oi32, %vi32)
  %b = kernel @put_u32 range(4) args(@ou32, %vu32)
  %c = kernel @put_i64 range(4) args(@oi64, %vi64)
  %d = kernel @put_u64 range(4) args(@ou64, %vu64)
  %e = kernel @put_f16 range(4) args(@of16, %vf16)
  %f = kernel @put_bool range(4) args(@obool, %vbool)
  %f64 = kernel @put_f64 range(4) args(@of64, %vf64)
  %i8 = kernel @put_i8 range(4) args(@oi8, %vi8)
  %u8 = kernel @put_u8 range(4) args(@ou8, %vu8)
  %i16 = kernel @put_i16 range(4) args(@oi16, %vi16)
  %u16 = kernel @put_u16 range(4) args(@ou16, %vu16)
  %s = kernel @scale range(4) args(@x, @y, SCALE)
}
"#;

fn repeat(bytes: &[u8]) -> Vec<u8> {
    bytes.repeat(4)
}

#[test]
fn every_scalar_type_updates_and_a_whole_graph_update_takes_new_arguments() {
    let first = support::compile(&SCALARS.replace("SCALE", "2.0"));
    let (b, ex) = executor_of(&first);
    let second = bundle_of(&support::compile(&SCALARS.replace("SCALE", "3.0")));
    // SAFETY: live handles, valid pointers.
    unsafe {
        let x = support::f32_bytes(&[1.5, -2.25, 0.1, 7.0]);
        assert_eq!(cmdgraph_executor_bind(ex, c"x".as_ptr(), x.as_ptr().cast(), 16), CMDGRAPH_OK);
        let e = finalize(ex, "g");
        ok_exec(e, cmdgraph_exec_update_i32(e, c"vi32".as_ptr(), -123_456));
        ok_exec(e, cmdgraph_exec_update_u32(e, c"vu32".as_ptr(), 0xdead_beef));
        ok_exec(e, cmdgraph_exec_update_i64(e, c"vi64".as_ptr(), -(1 << 40) - 5));
        ok_exec(e, cmdgraph_exec_update_u64(e, c"vu64".as_ptr(), u64::MAX - 7));
        ok_exec(e, cmdgraph_exec_update_f16(e, c"vf16".as_ptr(), 0x3555)); // 0.33325195
        ok_exec(e, cmdgraph_exec_update_bool(e, c"vbool".as_ptr(), true));
        ok_exec(e, cmdgraph_exec_update_f64(e, c"vf64".as_ptr(), 0.1));
        ok_exec(e, cmdgraph_exec_update_i8(e, c"vi8".as_ptr(), -128));
        ok_exec(e, cmdgraph_exec_update_u8(e, c"vu8".as_ptr(), 0xfe));
        ok_exec(e, cmdgraph_exec_update_i16(e, c"vi16".as_ptr(), -12_345));
        ok_exec(e, cmdgraph_exec_update_u16(e, c"vu16".as_ptr(), 0xbeef));
        // Each type is its own: an i8 value for a u8 parameter is refused.
        assert_eq!(cmdgraph_exec_update_i8(e, c"vu8".as_ptr(), -1), CMDGRAPH_ERROR_INVALID_ARGUMENT);
        // A value that does not fit the parameter's type is refused.
        assert_eq!(cmdgraph_exec_update_f32(e, c"vi32".as_ptr(), 0.5), CMDGRAPH_ERROR_INVALID_ARGUMENT);
        ok_exec(e, cmdgraph_exec_run(e));
        ok_exec(e, cmdgraph_exec_wait(e));
        assert_eq!(read(ex, "oi32"), repeat(&(-123_456i32).to_le_bytes()));
        assert_eq!(read(ex, "ou32"), repeat(&0xdead_beefu32.to_le_bytes()));
        assert_eq!(read(ex, "oi64"), repeat(&(-(1i64 << 40) - 5).to_le_bytes()));
        assert_eq!(read(ex, "ou64"), repeat(&(u64::MAX - 7).to_le_bytes()));
        assert_eq!(read(ex, "of16"), repeat(&0x3555u16.to_le_bytes()));
        assert_eq!(read(ex, "obool"), repeat(&1u32.to_le_bytes()));
        assert_eq!(read(ex, "of64"), repeat(&0.1f64.to_le_bytes()));
        assert_eq!(read(ex, "oi8"), repeat(&(-128i8).to_le_bytes()));
        assert_eq!(read(ex, "ou8"), repeat(&[0xfe]));
        assert_eq!(read(ex, "oi16"), repeat(&(-12_345i16).to_le_bytes()));
        assert_eq!(read(ex, "ou16"), repeat(&0xbeefu16.to_le_bytes()));
        assert_eq!(read(ex, "y"), support::f32_bytes(&[3.0, -4.5, 0.2, 14.0]));
        // Whole-graph update from the other bundle's source: @y = 3 x.
        ok_exec(e, cmdgraph_exec_update_graph(e, second, c"@g".as_ptr()));
        ok_exec(e, cmdgraph_exec_run(e));
        ok_exec(e, cmdgraph_exec_wait(e));
        assert_eq!(read(ex, "y"), support::f32_bytes(&[1.5 * 3.0, -2.25 * 3.0, 0.1 * 3.0, 21.0]));
        assert_eq!(cmdgraph_exec_update_graph(e, second, c"@nope".as_ptr()), CMDGRAPH_ERROR_NOT_FOUND);
        // A bundle whose graph differs in topology is refused.
        let other = bundle_of(&support::compile(&support::demo_text()));
        assert_ne!(cmdgraph_exec_update_graph(e, other, c"@demo".as_ptr()), CMDGRAPH_OK);
        assert!(!text(cmdgraph_exec_last_error(e)).is_empty());
        cmdgraph_bundle_destroy(other);
        cmdgraph_exec_destroy(e);
        no_messages(ex);
        cmdgraph_executor_destroy(ex);
        cmdgraph_bundle_destroy(second);
        cmdgraph_bundle_destroy(b);
    }
}

const LAUNCHES: &str = r#"
kernel @scale(%x: buf<f32, read>, %y: buf<f32, write>, %a: f32) { %i = global_id 0
  %v = load %x[%i]
  %r = mul %v, %a
  store %y[%i], %r }
kernel @copy(%x: buf<f32, read>, %y: buf<f32, write>) { %i = global_id 0
  %v = load %x[%i]
  store %y[%i], %v }
usm @x : f32[64]
usm @y : f32[64]
usm @z : f32[64]
usm @w : f32[64]
graph @g properties(updatable) {
  dyn %a = SCALE : f32
  dyn %dst = @z
  %t = async_malloc f32[64] zero_init
  %k = kernel @scale range(RANGE) args(@x, @y, %a)
  %n = kernel @scale nd_range(global(64), local(16)) args(@x, %dst, 2.5) after(%t)
  %c = kernel @copy range(64) args(%t, @w) after(%n)
  %f = async_free %t after(%c)
}
"#;

fn launches(scale: f32, range: u32) -> Vec<u8> {
    support::compile(&LAUNCHES.replace("SCALE", &format!("{scale:?}")).replace("RANGE", &range.to_string()))
}

/// Graph allocation `node` of `e`, through a size query and a copy.
fn read_alloc(e: *mut cmdgraph_exec, node: &str) -> Vec<u8> {
    let mut size = 0usize;
    // SAFETY: live executable; a size query, then a buffer of that size.
    unsafe {
        let st = cmdgraph_exec_read_alloc(e, c(node).as_ptr(), null_mut(), 0, &mut size);
        assert_eq!(st, CMDGRAPH_ERROR_BUFFER_TOO_SMALL, "{}", text(cmdgraph_exec_last_error(e)));
        let mut out = vec![0u8; size];
        ok_exec(e, cmdgraph_exec_read_alloc(e, c(node).as_ptr(), out.as_mut_ptr().cast(), size, &mut size));
        out
    }
}

fn floats(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// `y[i] = x[i] * a` for `i` in `range`, the rest of `y` as it was.
fn scaled(y: &mut [f32], x: &[f32], a: f32, range: std::ops::Range<usize>) {
    for i in range {
        y[i] = x[i] * a;
    }
}

#[test]
fn range_nd_range_pointer_to_a_graph_allocation_and_node_updates() {
    let (a0, a1, a2) = (1.618_034_f32, -0.367_879_44_f32, 2.718_281_7_f32);
    let (b, ex) = executor_of(&launches(a0, 64));
    let later = bundle_of(&launches(a2, 16));
    let x = support::random_floats(21, 64);
    // SAFETY: live handles, valid pointers and lengths.
    unsafe {
        let xb = support::f32_bytes(&x);
        assert_eq!(cmdgraph_executor_bind(ex, c"x".as_ptr(), xb.as_ptr().cast(), xb.len()), CMDGRAPH_OK);
        let e = finalize(ex, "g");
        ok_exec(e, cmdgraph_exec_run(e));
        ok_exec(e, cmdgraph_exec_wait(e));
        let mut y = vec![0.0; 64];
        scaled(&mut y, &x, a0, 0..64);
        assert_eq!(floats(&read(ex, "y")), y);
        let mut z = vec![0.0; 64];
        scaled(&mut z, &x, 2.5, 0..64);
        assert_eq!(floats(&read(ex, "z")), z);
        assert_eq!(floats(&read(ex, "w")), vec![0.0; 64], "%t is zero until %n writes it");

        // %k: range(32) and a new %a; %n: 32 work-items in groups of 16, writing into %t + 64
        // bytes (elements 16..48), which %c copies to @w.
        ok_exec(e, cmdgraph_exec_update_range(e, c"%k".as_ptr(), 1, [32u64].as_ptr()));
        ok_exec(e, cmdgraph_exec_update_f32(e, c"a".as_ptr(), a1));
        ok_exec(e, cmdgraph_exec_update_nd_range(e, c"n".as_ptr(), 1, [32u64].as_ptr(), [16u64].as_ptr()));
        ok_exec(e, cmdgraph_exec_update_pointer(e, c"dst".as_ptr(), c"%t".as_ptr(), 64));
        ok_exec(e, cmdgraph_exec_run(e));
        ok_exec(e, cmdgraph_exec_wait(e));
        scaled(&mut y, &x, a1, 0..32);
        assert_eq!(floats(&read(ex, "y")), y, "range(32) with the new %a");
        assert_eq!(floats(&read(ex, "z")), z, "@z is no longer the target");
        let mut w = vec![0.0; 64];
        for i in 0..32 {
            w[16 + i] = x[i] * 2.5;
        }
        assert_eq!(floats(&read(ex, "w")), w, "%n wrote %t + 64 bytes");
        assert_eq!(floats(&read_alloc(e, "%t")), w, "and %t itself holds it");
        let mut size = 0usize;
        let mut small = [0u8; 4];
        assert_eq!(
            cmdgraph_exec_read_alloc(e, c"t".as_ptr(), small.as_mut_ptr().cast(), 4, &mut size),
            CMDGRAPH_ERROR_BUFFER_TOO_SMALL
        );
        assert_eq!((size, small), (256, [0; 4]), "the size, nothing copied");
        assert_eq!(cmdgraph_exec_read_alloc(e, c"%k".as_ptr(), null_mut(), 0, &mut size), CMDGRAPH_ERROR_NOT_FOUND);

        // Refused, and nothing changes: dimensions, sizes, a work-group size without a
        // compiled variant, a global size not a multiple of the local one, NULLs, names.
        let invalid = [
            cmdgraph_exec_update_range(e, c"k".as_ptr(), 2, [8u64, 8].as_ptr()),
            cmdgraph_exec_update_range(e, c"k".as_ptr(), 0, [8u64].as_ptr()),
            cmdgraph_exec_update_range(e, c"k".as_ptr(), 1, null()),
            cmdgraph_exec_update_range(e, c"c".as_ptr(), 4, [8u64; 4].as_ptr()),
            cmdgraph_exec_update_nd_range(e, c"n".as_ptr(), 1, [64u64].as_ptr(), [8u64].as_ptr()),
            cmdgraph_exec_update_nd_range(e, c"n".as_ptr(), 1, [40u64].as_ptr(), [16u64].as_ptr()),
            cmdgraph_exec_update_nd_range(e, c"n".as_ptr(), 1, [64u64].as_ptr(), [0u64].as_ptr()),
            cmdgraph_exec_update_nd_range(e, c"n".as_ptr(), 1, [64u64].as_ptr(), null()),
            cmdgraph_exec_update_range(e, c"f".as_ptr(), 1, [8u64].as_ptr()),
        ];
        for (i, st) in invalid.into_iter().enumerate() {
            assert_eq!(st, CMDGRAPH_ERROR_INVALID_ARGUMENT, "refusal {i}");
        }
        assert_eq!(cmdgraph_exec_update_range(e, c"nope".as_ptr(), 1, [8u64].as_ptr()), CMDGRAPH_ERROR_NOT_FOUND);
        assert_eq!(cmdgraph_exec_update_range(e, null(), 1, [8u64].as_ptr()), CMDGRAPH_ERROR_INVALID_ARGUMENT);
        assert_eq!(
            cmdgraph_exec_update_pointer(e, c"dst".as_ptr(), c"%k".as_ptr(), 0),
            CMDGRAPH_ERROR_NOT_FOUND,
            "%k is not a graph allocation"
        );
        assert_eq!(cmdgraph_exec_update_pointer(e, c"dst".as_ptr(), c"%nope".as_ptr(), 0), CMDGRAPH_ERROR_NOT_FOUND);
        ok_exec(e, cmdgraph_exec_run(e));
        ok_exec(e, cmdgraph_exec_wait(e));
        assert_eq!(floats(&read(ex, "y")), y, "the refused updates changed nothing");
        assert_eq!(floats(&read(ex, "w")), w, "the refused updates changed nothing");

        // Individual update of %k from the modifiable graph as it is now (compiled into
        // `later`: %a = a2, %k over 16 items); %n keeps its updated launch and pointer.
        ok_exec(e, cmdgraph_exec_update_nodes(e, later, c"g".as_ptr(), [c"%k".as_ptr()].as_ptr(), 1));
        ok_exec(e, cmdgraph_exec_run(e));
        ok_exec(e, cmdgraph_exec_wait(e));
        scaled(&mut y, &x, a2, 0..16);
        assert_eq!(floats(&read(ex, "y")), y, "%k took range(16) and %a = a2");
        assert_eq!(floats(&read(ex, "w")), w);
        assert_eq!(
            cmdgraph_exec_update_nodes(e, later, c"g".as_ptr(), [c"%nope".as_ptr()].as_ptr(), 1),
            CMDGRAPH_ERROR_NOT_FOUND
        );
        assert_eq!(cmdgraph_exec_update_nodes(e, later, c"g".as_ptr(), null(), 2), CMDGRAPH_ERROR_INVALID_ARGUMENT);
        assert_eq!(
            cmdgraph_exec_update_nodes(e, later, c"g".as_ptr(), [null()].as_ptr(), 1),
            CMDGRAPH_ERROR_INVALID_ARGUMENT
        );
        assert_eq!(
            cmdgraph_exec_update_nodes(e, null_mut(), c"g".as_ptr(), [c"%k".as_ptr()].as_ptr(), 1),
            CMDGRAPH_ERROR_NULL_HANDLE
        );
        assert!(!text(cmdgraph_exec_last_error(e)).is_empty());
        cmdgraph_exec_destroy(e);
        no_messages(ex);
        cmdgraph_executor_destroy(ex);
        cmdgraph_bundle_destroy(later);
        cmdgraph_bundle_destroy(b);
    }
}

#[test]
fn trusted_loads_take_only_bundles_signed_by_a_trusted_key() {
    use cmdgraph_ir::bundle::signature::SigningKey;
    use cmdgraph_ir::bundle::Bundle;
    let plain = support::compile(&support::demo_text());
    let key = |n: u8| SigningKey::from_seed(&[n; 32]);
    let signed = Bundle::from_bytes(&plain).unwrap().to_bytes_signed(&key(1)).unwrap();
    let pub_text = |n: u8| c(&key(n).public_key().to_file_text());
    let (k1, k2) = (pub_text(1), pub_text(2));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("signed.cgb");
    std::fs::write(&path, &signed).unwrap();
    let path = c(path.to_str().unwrap());
    let from_memory = |bytes: &[u8], keys: &[*const c_char]| {
        let mut b = null_mut();
        // SAFETY: valid bytes, key strings and out-pointer.
        let st = unsafe {
            cmdgraph_bundle_from_memory_trusted(bytes.as_ptr().cast(), bytes.len(), keys.as_ptr(), keys.len(), &mut b)
        };
        // SAFETY: NULL or a live bundle.
        unsafe { cmdgraph_bundle_destroy(b) };
        assert_eq!(st == CMDGRAPH_OK, !b.is_null(), "a bundle exactly on success");
        (st, text(cmdgraph_last_error()))
    };
    // SAFETY: valid strings, key lists and out-pointers.
    unsafe {
        let mut b = null_mut();
        assert_eq!(
            cmdgraph_bundle_open_trusted(path.as_ptr(), [k2.as_ptr(), k1.as_ptr()].as_ptr(), 2, &mut b),
            CMDGRAPH_OK
        );
        let mut n = 0usize;
        assert_eq!(cmdgraph_bundle_memory_count(b, &mut n), CMDGRAPH_OK);
        assert_eq!(n, 6, "the demo's user memory objects");
        cmdgraph_bundle_destroy(b);
        assert_eq!(
            cmdgraph_bundle_open_trusted(path.as_ptr(), [k2.as_ptr()].as_ptr(), 1, &mut b),
            CMDGRAPH_ERROR_UNTRUSTED
        );
        assert!(b.is_null());
        let m = text(cmdgraph_last_error());
        assert!(
            m.contains(&key(1).public_key().fingerprint()) && m.contains(&key(2).public_key().fingerprint()),
            "{m}"
        );
        assert!(m.contains("signed.cgb"), "the path is named: {m}");
    }
    assert_eq!(from_memory(&signed, &[k1.as_ptr()]).0, CMDGRAPH_OK);
    let (st, m) = from_memory(&plain, &[k1.as_ptr()]);
    assert_eq!(st, CMDGRAPH_ERROR_UNTRUSTED);
    assert!(m.contains("not signed"), "{m}");
    assert_eq!(from_memory(&signed, &[]).0, CMDGRAPH_ERROR_UNTRUSTED, "no keys trusts no one");
    let seed = c(&cmdgraph_ir::bundle::signature::seed_file_text(&[1; 32]));
    let (st, m) = from_memory(&signed, &[seed.as_ptr()]);
    assert_eq!(st, CMDGRAPH_ERROR_INVALID_ARGUMENT);
    assert!(m.contains("key 0") && m.contains("secret seed"), "{m}");
    let (st, m) = from_memory(&signed, &[k1.as_ptr(), c"cmdgraph-ed25519-public:00".as_ptr()]);
    assert_eq!(st, CMDGRAPH_ERROR_INVALID_ARGUMENT, "{m}");
    assert!(m.contains("key 1"), "{m}");
    assert_eq!(from_memory(&signed, &[null()]).0, CMDGRAPH_ERROR_INVALID_ARGUMENT);
    let mut b = null_mut();
    // SAFETY: a NULL list with a count is refused before it is read.
    let st = unsafe { cmdgraph_bundle_from_memory_trusted(signed.as_ptr().cast(), signed.len(), null(), 3, &mut b) };
    assert_eq!(st, CMDGRAPH_ERROR_INVALID_ARGUMENT);
    // Without trusted keys a signed bundle loads as any other, and its signature still
    // has to verify: one flipped byte of the signature refuses it.
    let plain_load = bundle_of(&signed);
    // SAFETY: a live bundle.
    unsafe { cmdgraph_bundle_destroy(plain_load) };
    let mut forged = signed.clone();
    let last = forged.len() - 1;
    forged[last] ^= 0x40;
    // SAFETY: valid bytes and out-pointer.
    let st = unsafe { cmdgraph_bundle_from_memory(forged.as_ptr().cast(), forged.len(), &mut b) };
    assert_eq!(st, CMDGRAPH_ERROR_UNTRUSTED, "a forged signature");
    assert!(text(cmdgraph_last_error()).contains("does not verify"));
    // SAFETY: the status names are static strings.
    assert_eq!(text(cmdgraph_status_name(CMDGRAPH_ERROR_UNTRUSTED)), "CMDGRAPH_ERROR_UNTRUSTED");
}

const GLOBALS: &str = r#"
device_global @counter : u32[4] = [7, 8]
device_global @weights : f32[8] properties(host_access(write))
device_global @table : u32[2] = [5, 9] properties(host_access(read))
device_global @hidden : u32[1] properties(host_access(none))
kernel @tick(%seen: buf<u32, write>) { %i = global_id 0
  %v = load @counter[%i]
  %one = const 1 : u32
  %n = add %v, %one
  store @counter[%i], %n
  %zero = const 0 : u32
  %t = load @table[%zero]
  %h = load @hidden[%zero]
  %s = add %n, %t
  %r = add %s, %h
  store %seen[%i], %r }
kernel @weigh(%x: buf<f32, read>, %y: buf<f32, write>) { %i = global_id 0
  %v = load %x[%i]
  %w = load @weights[%i]
  %r = mul %v, %w
  store %y[%i], %r }
usm @seen : u32[4]
usm @x : f32[8]
usm @y : f32[8]
graph @g {
  %t = kernel @tick range(4) args(@seen)
  %w = kernel @weigh range(8) args(@x, @y)
}
"#;

/// Reads device global `name` on device 0 through a size query and a copy.
fn read_global(ex: *mut cmdgraph_executor, name: &str) -> Result<Vec<u8>, (cmdgraph_status, String)> {
    let mut size = 0usize;
    // SAFETY: live executor; a size query, then a buffer of that size.
    unsafe {
        let st = cmdgraph_executor_read_device_global(ex, c(name).as_ptr(), 0, null_mut(), 0, &mut size);
        if st != CMDGRAPH_ERROR_BUFFER_TOO_SMALL {
            return Err((st, text(cmdgraph_executor_last_error(ex))));
        }
        let mut out = vec![0u8; size];
        let st =
            cmdgraph_executor_read_device_global(ex, c(name).as_ptr(), 0, out.as_mut_ptr().cast(), size, &mut size);
        assert_eq!(st, CMDGRAPH_OK, "{}", text(cmdgraph_executor_last_error(ex)));
        Ok(out)
    }
}

fn u32s(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

#[test]
fn device_globals_are_read_and_written_within_their_host_access() {
    let (b, ex) = executor_of(&support::compile(GLOBALS));
    let x = support::random_floats(5, 8);
    let w = support::random_floats(6, 8);
    let write = |name: &str, device: u32, bytes: &[u8]| {
        // SAFETY: live executor, `bytes` readable.
        let st = unsafe {
            cmdgraph_executor_write_device_global(ex, c(name).as_ptr(), device, bytes.as_ptr().cast(), bytes.len())
        };
        // SAFETY: live executor.
        (st, text(unsafe { cmdgraph_executor_last_error(ex) }))
    };
    // The initial images, before any run.
    assert_eq!(u32s(&read_global(ex, "counter").unwrap()), [7, 8, 0, 0]);
    assert_eq!(u32s(&read_global(ex, "@table").unwrap()), [5, 9]);
    // SAFETY: live handles, valid pointers.
    unsafe {
        let xb = support::f32_bytes(&x);
        assert_eq!(cmdgraph_executor_bind(ex, c"x".as_ptr(), xb.as_ptr().cast(), xb.len()), CMDGRAPH_OK);
        assert_eq!(write("weights", 0, &support::f32_bytes(&w)), (CMDGRAPH_OK, String::new()));
        assert_eq!(write("@counter", 0, &support::f32_bytes(&[0.0; 0])).0, CMDGRAPH_ERROR_INVALID_ARGUMENT);
        let counter: Vec<u8> = [100u32, 200, 300, 400].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(write("counter", 0, &counter).0, CMDGRAPH_OK);
        let e = finalize(ex, "g");
        for _ in 0..2 {
            ok_exec(e, cmdgraph_exec_run(e));
        }
        ok_exec(e, cmdgraph_exec_wait(e));
        // Two runs counted from the written values; each saw @table[0] = 5, @hidden = 0.
        assert_eq!(u32s(&read_global(ex, "counter").unwrap()), [102, 202, 302, 402]);
        assert_eq!(u32s(&read(ex, "seen")), [107, 207, 307, 407]);
        let y: Vec<f32> = x.iter().zip(&w).map(|(a, b)| a * b).collect();
        assert_eq!(floats(&read(ex, "y")), y, "the kernel read the weights written from the host");
        cmdgraph_exec_destroy(e);
    }
    // host_access refusals, each naming the property.
    let (st, m) = read_global(ex, "weights").unwrap_err();
    assert_eq!(st, CMDGRAPH_ERROR_INVALID_ARGUMENT);
    assert!(m.contains("host_access(write)") && m.contains("may not read"), "{m}");
    let (st, m) = write("table", 0, &[0; 8]);
    assert_eq!(st, CMDGRAPH_ERROR_INVALID_ARGUMENT);
    assert!(m.contains("host_access(read)") && m.contains("may not write"), "{m}");
    assert!(read_global(ex, "hidden").unwrap_err().1.contains("host_access(none)"));
    assert_eq!(write("hidden", 0, &[0; 4]).0, CMDGRAPH_ERROR_INVALID_ARGUMENT);
    // Not a device global, unknown, another device, a short buffer.
    let (st, m) = read_global(ex, "x").unwrap_err();
    assert_eq!(st, CMDGRAPH_ERROR_INVALID_ARGUMENT);
    assert!(m.contains("not a device_global"), "{m}");
    assert_eq!(read_global(ex, "nope").unwrap_err().0, CMDGRAPH_ERROR_NOT_FOUND);
    assert_eq!(write("counter", 3, &[0; 16]).0, CMDGRAPH_ERROR_INVALID_ARGUMENT);
    let mut small = [0u8; 8];
    let mut size = 0usize;
    // SAFETY: `small` has 8 writable bytes.
    let st = unsafe {
        cmdgraph_executor_read_device_global(ex, c"counter".as_ptr(), 0, small.as_mut_ptr().cast(), 8, &mut size)
    };
    assert_eq!((st, size, small), (CMDGRAPH_ERROR_BUFFER_TOO_SMALL, 16, [0; 8]), "nothing copied");
    assert_eq!(u32s(&read_global(ex, "counter").unwrap()), [102, 202, 302, 402], "the refusals changed nothing");
    no_messages(ex);
    // SAFETY: live handles.
    unsafe {
        cmdgraph_executor_destroy(ex);
        cmdgraph_bundle_destroy(b);
    }
}
