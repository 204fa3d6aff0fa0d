//! Issue 28 through the C API, on bundles compiled with the default pipeline and an executor
//! with validation on: `cmdgraph_exec_set_active` on a dynamic command group of host tasks
//! runs the new alternative's callback; `cmdgraph_exec_update_pointer` to a graph allocation
//! not live at a node using the parameter is `CMDGRAPH_ERROR_INVALID_ARGUMENT` with a message
//! naming the allocation, the node and the free, and changes nothing.
#![allow(unsafe_code)]

mod support;

use cmdgraph::bundle::*;
use cmdgraph::exec::*;
use cmdgraph::executor::*;
use cmdgraph::host::*;
use cmdgraph::*;
use cmdgraph_status::*;
use std::ffi::{c_char, c_void, CStr};
use std::ptr::{null, null_mut};

fn text(p: *const c_char) -> String {
    assert!(!p.is_null(), "a message pointer is never NULL");
    // SAFETY: the library returns NUL-terminated strings valid until the next call.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// An executor with validation on for `bytes`, its bundle, and graph `g` finalized.
fn setup(bytes: &[u8]) -> (*mut cmdgraph_bundle, *mut cmdgraph_executor, *mut cmdgraph_exec) {
    let (mut b, mut ex, mut e) = (null_mut(), null_mut(), null_mut());
    let mut opts = cmdgraph_executor_options_default();
    opts.validation = true;
    // SAFETY: valid bytes, options and out-pointers.
    unsafe {
        assert_eq!(cmdgraph_bundle_from_memory(bytes.as_ptr().cast(), bytes.len(), &mut b), CMDGRAPH_OK);
        assert_eq!(cmdgraph_executor_create(b, &opts, &mut ex), CMDGRAPH_OK, "{}", text(cmdgraph_bundle_last_error(b)));
        let x = support::f32_bytes(&support::random_floats(28, 256));
        assert_eq!(cmdgraph_executor_bind(ex, c"x".as_ptr(), x.as_ptr().cast(), x.len()), CMDGRAPH_OK);
        for (name, user) in [(c"negate", 0usize), (c"cube", 1)] {
            let st = cmdgraph_executor_register_callback(ex, name.as_ptr(), Some(on_element), user as *mut c_void);
            assert_eq!(st, CMDGRAPH_OK);
        }
    }
    // SAFETY: live executor, valid name and out-pointer.
    let st = unsafe { cmdgraph_executor_finalize(ex, c"g".as_ptr(), null(), &mut e) };
    // SAFETY: live executor.
    assert_eq!(st, CMDGRAPH_OK, "{}", text(unsafe { cmdgraph_executor_last_error(ex) }));
    (b, ex, e)
}

fn teardown(b: *mut cmdgraph_bundle, ex: *mut cmdgraph_executor, e: *mut cmdgraph_exec) {
    let mut n = usize::MAX;
    // SAFETY: live handles, destroyed once.
    unsafe {
        assert_eq!(cmdgraph_executor_take_messages(ex, &mut n), CMDGRAPH_OK);
        assert_eq!(n, 0, "validation messages");
        cmdgraph_exec_destroy(e);
        cmdgraph_executor_destroy(ex);
        cmdgraph_bundle_destroy(b);
    }
}

fn ok(e: *mut cmdgraph_exec, st: cmdgraph_status) {
    // SAFETY: live executable.
    assert_eq!(st, CMDGRAPH_OK, "{}", text(unsafe { cmdgraph_exec_last_error(e) }));
}

fn run(e: *mut cmdgraph_exec) {
    // SAFETY: live executable.
    unsafe {
        ok(e, cmdgraph_exec_run(e));
        ok(e, cmdgraph_exec_wait(e));
    }
}

fn read(ex: *mut cmdgraph_executor, name: &CStr) -> Vec<f32> {
    let mut out = vec![0u8; 1024];
    let mut size = 0usize;
    // SAFETY: `out` has 1024 bytes.
    let st = unsafe { cmdgraph_executor_read(ex, name.as_ptr(), out.as_mut_ptr().cast(), 1024, &mut size) };
    assert_eq!((st, size), (CMDGRAPH_OK, 1024));
    out.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

/// What the callbacks make of one element: `user` 0 negates, 1 cubes.
fn element(user: usize, v: f32) -> f32 {
    if user == 0 {
        -v
    } else {
        v * v * v
    }
}

/// `@h[i] = f(@x[i])`, `f` chosen by `user`.
unsafe extern "C" fn on_element(memory: *mut cmdgraph_host_memory<'_>, user: *mut c_void) -> cmdgraph_status {
    let mut x = vec![0u8; 1024];
    // SAFETY: the callback's live memory; `x` has 1024 bytes.
    let st = unsafe { cmdgraph_host_memory_read(memory, c"@x".as_ptr(), 0, x.as_mut_ptr().cast(), 1024) };
    if st != CMDGRAPH_OK {
        return st;
    }
    let h: Vec<u8> = x
        .chunks_exact(4)
        .flat_map(|b| element(user as usize, f32::from_le_bytes([b[0], b[1], b[2], b[3]])).to_le_bytes())
        .collect();
    // SAFETY: the callback's live memory; `h` has 1024 bytes.
    unsafe { cmdgraph_host_memory_write(memory, c"@h".as_ptr(), 0, h.as_ptr().cast(), h.len()) }
}

const FACTOR: f32 = 1.718_281_7;

const HOST_SWITCH: &str = "
kernel @scale(%in: buf<f32, read>, %out: buf<f32, write>, %s: f32) {
  %i = global_id 0
  %v = load %in[%i]
  %r = mul %v, %s
  store %out[%i], %r
}
usm @x : f32[256]
usm @h : f32[256]
usm @out : f32[256]
graph @g properties(updatable) {
  dcg %pick active(0) {
    host_task \"negate\" access(@x read, @h write)
    host_task \"cube\" access(@x read, @h write)
  }
  %d = dynamic %pick
  %k = kernel @scale range(256) args(@h, @out, 1.7182817) after(%d)
}
";

#[test]
fn set_active_on_host_task_alternatives_runs_the_new_callback() {
    let (b, ex, e) = setup(&support::compile(HOST_SWITCH));
    let x = support::random_floats(28, 256);
    let want = |user: usize| x.iter().map(|&v| element(user, v) * FACTOR).collect::<Vec<f32>>();
    run(e);
    assert_eq!(read(ex, c"out"), want(0), "alternative 0 at finalize");
    for alt in [1u32, 0, 1] {
        // SAFETY: live executable, valid name.
        ok(e, unsafe { cmdgraph_exec_set_active(e, c"%pick".as_ptr(), alt) });
        run(e);
        assert_eq!(read(ex, c"out"), want(alt as usize), "after set_active({alt})");
    }
    // SAFETY: live executable, valid name.
    let st = unsafe { cmdgraph_exec_set_active(e, c"pick".as_ptr(), 2) };
    assert_eq!(st, CMDGRAPH_ERROR_INVALID_ARGUMENT);
    run(e);
    assert_eq!(read(ex, c"out"), want(1), "a refused switch changes nothing");
    teardown(b, ex, e);
}

const S_A: f32 = 2.371_904_1;
const S_B: f32 = 1.593_816_7;
const S_LATE: f32 = -0.618_447_3;

/// `%a` is freed before `%b` is made, so `plan-memory` puts them on the same bytes; `%late`
/// writes `%dst` inside `%b`'s life only. Copies out of the allocations keep `fuse-kernels`
/// from merging a kernel with its reader (which would leave no allocation to point at).
fn lifetimes_ir() -> String {
    format!(
        "
kernel @scale(%in: buf<f32, read>, %out: buf<f32, write>, %s: f32) {{
  %i = global_id 0
  %v = load %in[%i]
  %r = mul %v, %s
  store %out[%i], %r
}}
usm @x : f32[256]
usm @w : f32[256]
usm @y : f32[256]
usm @out : f32[256]
graph @g properties(updatable) {{
  dyn %dst = @y
  %a = async_malloc f32[256]
  %ka = kernel @scale range(256) args(@x, %a, {S_A:?}) after(%a)
  %kb = memcpy @w, %a, 1024 after(%ka)
  %fa = async_free %a after(%kb)
  %b = async_malloc f32[256] after(%fa)
  %kc = kernel @scale range(256) args(@x, %b, {S_B:?}) after(%b)
  %late = kernel @scale range(256) args(@x, %dst, {S_LATE:?}) after(%kc)
  %kd = memcpy @out, %b, 1024 after(%late)
  %fb = async_free %b after(%kd)
}}
"
    )
}

#[test]
fn update_pointer_to_a_freed_allocation_is_an_invalid_argument_naming_it() {
    let bytes = support::compile(&lifetimes_ir());
    // The premise: the plan puts the freed %a on %b's bytes, so a write through %a would
    // land in %b.
    let bundle = cmdgraph_ir::bundle::Bundle::from_bytes(&bytes).expect("bundle");
    let offsets = &bundle.graphs.iter().find(|p| p.name == "g").expect("plan of @g").memory.offsets;
    let at = |n: &str| offsets.iter().find(|(m, _)| m.trim_start_matches('%') == n).map(|o| o.1);
    assert_eq!((at("a"), at("b")), (Some(0), Some(0)), "{offsets:?}");
    let (b, ex, e) = setup(&bytes);
    let x = support::random_floats(28, 256);
    let scaled = |s: f32| x.iter().map(|v| v * s).collect::<Vec<f32>>();
    run(e);
    assert_eq!(read(ex, c"out"), scaled(S_B));
    // SAFETY: live executable, valid names.
    let st = unsafe { cmdgraph_exec_update_pointer(e, c"dst".as_ptr(), c"%a".as_ptr(), 0) };
    assert_eq!(st, CMDGRAPH_ERROR_INVALID_ARGUMENT);
    // SAFETY: live executable.
    let message = text(unsafe { cmdgraph_exec_last_error(e) });
    assert_eq!(message, text(cmdgraph_last_error()));
    for part in ["%dst", "graph allocation %a", "node %late", "freed by %fa"] {
        assert!(message.contains(part), "{part:?} missing from: {message}");
    }
    run(e);
    assert_eq!(read(ex, c"out"), scaled(S_B), "%b intact: the refused update changed nothing");
    assert_eq!(read(ex, c"y"), scaled(S_LATE), "%dst is still @y");
    // Inside %b's life the same call is taken: %late writes %b, which %kd copies.
    // SAFETY: live executable, valid names.
    ok(e, unsafe { cmdgraph_exec_update_pointer(e, c"dst".as_ptr(), c"%b".as_ptr(), 0) });
    run(e);
    assert_eq!(read(ex, c"out"), scaled(S_LATE));
    assert_eq!(read(ex, c"w"), scaled(S_A));
    teardown(b, ex, e);
}
