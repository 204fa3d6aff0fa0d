//! Threads: executables of one executor driven from two threads at once take turns on the
//! executor's lock (every run lands); a host-task callback calling into its own executor is
//! refused with a message instead of waiting for itself.
#![allow(unsafe_code)]

mod support;

use cmdgraph::exec::*;
use cmdgraph::executor::*;
use cmdgraph::host::*;
use cmdgraph::*;
use cmdgraph_status::*;
use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr::{null, null_mut};

const IR: &str = "
kernel @inc(%x: buf<f32, read_write>) {
  %i = global_id 0
  %v = load %x[%i]
  %one = const 1.0 : f32
  %r = add %v, %one
  store %x[%i], %r
}

usm @a : f32[256]
usm @b : f32[256]

graph @ga {
  %k = kernel @inc range(256) args(@a)
}

graph @gb {
  %k = kernel @inc range(256) args(@b)
}

graph @gh {
  %h = host_task \"reenter\" access(@a read)
}
";

fn text(p: *const c_char) -> String {
    // SAFETY: the library returns NUL-terminated strings.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

fn setup() -> (*mut cmdgraph::cmdgraph_bundle, *mut cmdgraph_executor) {
    let bytes = support::compile(IR);
    let mut b = null_mut();
    // SAFETY: valid bytes and out-pointer.
    assert_eq!(unsafe { bundle::cmdgraph_bundle_from_memory(bytes.as_ptr().cast(), bytes.len(), &mut b) }, CMDGRAPH_OK);
    let mut opts = cmdgraph_executor_options_default();
    opts.validation = true;
    let mut ex = null_mut();
    // SAFETY: live bundle, options and out-pointer.
    assert_eq!(unsafe { cmdgraph_executor_create(b, &opts, &mut ex) }, CMDGRAPH_OK);
    (b, ex)
}

fn finalize(ex: *mut cmdgraph_executor, graph: &str) -> *mut cmdgraph_exec {
    let mut e = null_mut();
    let g = CString::new(graph).unwrap();
    // SAFETY: live executor, valid name and out-pointer.
    let st = unsafe { cmdgraph_executor_finalize(ex, g.as_ptr(), null(), &mut e) };
    // SAFETY: live executor.
    assert_eq!(st, CMDGRAPH_OK, "{}", text(unsafe { cmdgraph_executor_last_error(ex) }));
    e
}

fn read_f32(ex: *mut cmdgraph_executor, name: &str) -> Vec<f32> {
    let mut out = vec![0f32; 256];
    let n = CString::new(name).unwrap();
    let mut size = 0usize;
    // SAFETY: `out` has 1024 bytes.
    let st = unsafe { cmdgraph_executor_read(ex, n.as_ptr(), out.as_mut_ptr().cast(), 1024, &mut size) };
    assert_eq!(st, CMDGRAPH_OK);
    out
}

/// An executable handle moved to another thread (one thread uses it at a time).
struct Exec(*mut cmdgraph_exec);
// SAFETY: each handle is used by exactly one thread; the executor behind both is locked.
unsafe impl Send for Exec {}

#[test]
fn executables_of_one_executor_run_from_two_threads_at_once() {
    let (b, ex) = setup();
    let (ga, gb) = (Exec(finalize(ex, "ga")), Exec(finalize(ex, "gb")));
    const RUNS: usize = 40;
    let drive = |e: Exec| {
        move || {
            let e = e;
            for _ in 0..RUNS {
                // SAFETY: this thread's handle.
                assert_eq!(
                    unsafe { cmdgraph_exec_run(e.0) },
                    CMDGRAPH_OK,
                    "{}",
                    text(unsafe { cmdgraph_exec_last_error(e.0) })
                );
            }
            // SAFETY: as above.
            assert_eq!(unsafe { cmdgraph_exec_wait(e.0) }, CMDGRAPH_OK);
            e
        }
    };
    let (ta, tb) = (std::thread::spawn(drive(ga)), std::thread::spawn(drive(gb)));
    let (ga, gb) = (ta.join().unwrap(), tb.join().unwrap());
    assert_eq!(read_f32(ex, "a"), vec![RUNS as f32; 256]);
    assert_eq!(read_f32(ex, "b"), vec![RUNS as f32; 256]);
    let mut n = 0;
    // SAFETY: live executor.
    assert_eq!(unsafe { cmdgraph_executor_take_messages(ex, &mut n) }, CMDGRAPH_OK);
    assert_eq!(n, 0, "validation messages");
    // SAFETY: live handles, not used afterwards.
    unsafe {
        cmdgraph_exec_destroy(ga.0);
        cmdgraph_exec_destroy(gb.0);
        cmdgraph_executor_destroy(ex);
        bundle::cmdgraph_bundle_destroy(b);
    }
}

unsafe extern "C" fn reenter(_mem: *mut cmdgraph_host_memory<'_>, user: *mut c_void) -> cmdgraph_status {
    // SAFETY: `user` is the live executable registered with the callback.
    unsafe { cmdgraph_exec_run(user.cast()) }
}

#[test]
fn a_callback_calling_its_own_executor_is_refused_not_deadlocked() {
    let (b, ex) = setup();
    let ga = finalize(ex, "ga");
    let name = CString::new("reenter").unwrap();
    // SAFETY: live executor; `ga` outlives every run of the callback.
    let st = unsafe { cmdgraph_executor_register_callback(ex, name.as_ptr(), Some(reenter), ga.cast()) };
    assert_eq!(st, CMDGRAPH_OK);
    let gh = finalize(ex, "gh");
    // SAFETY: live executable.
    assert_eq!(unsafe { cmdgraph_exec_run(gh) }, CMDGRAPH_OK);
    // SAFETY: live executable.
    let st = unsafe { cmdgraph_exec_wait(gh) };
    assert_eq!(st, CMDGRAPH_ERROR_HOST_TASK_FAILED);
    // SAFETY: live executable.
    let m = text(unsafe { cmdgraph_exec_last_error(gh) });
    assert!(m.contains("cannot call its executor"), "{m}");
    // The refused call ran nothing.
    assert_eq!(read_f32(ex, "a"), vec![0.0; 256]);
    // SAFETY: live handles, not used afterwards.
    unsafe {
        cmdgraph_exec_destroy(gh);
        cmdgraph_exec_destroy(ga);
        cmdgraph_executor_destroy(ex);
        bundle::cmdgraph_bundle_destroy(b);
    }
}
