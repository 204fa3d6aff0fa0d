//! `cmdgraph_executor_warning_count` / `cmdgraph_executor_warning`: on llvmpipe, a kernel
//! with a 1,000,000-iteration loop (past llvmpipe's budget of 65535 iterations per
//! invocation, docs/executor.md) is named; a 1000-iteration one is not; NULL is safe.
#![allow(unsafe_code)]

mod support;

use cmdgraph::bundle::*;
use cmdgraph::cmdgraph_status::*;
use cmdgraph::executor::*;
use std::ffi::{c_char, CStr};
use std::ptr::null_mut;

fn text(p: *const c_char) -> String {
    // SAFETY: the library returns NUL-terminated strings valid as long as the executor.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// The executor's warnings for a kernel of `trips` loop iterations, and its device's name.
fn warnings(trips: u32) -> (Vec<String>, String) {
    let src = format!(
        "kernel @k(%o: buf<f32, write>) {{
  %g = global_id 0
  %zero = const 0 : u32
  %n = const {trips} : u32
  %one = const 1 : u32
  %f0 = const 0.0 : f32
  %d = const 0.99993 : f32
  %acc = for %j = %zero to %n step %one carry(%a = %f0) {{
    %jf = cast %j to f32
    %m = mul %a, %d
    %a2 = add %m, %jf
    yield %a2
  }}
  store %o[%g], %acc
}}
usm @o : f32[4]
graph @g {{
  %k = kernel @k range(4) args(@o)
}}
"
    );
    let bytes = support::compile(&src);
    let (mut b, mut ex) = (null_mut(), null_mut());
    let mut opts = cmdgraph_executor_options_default();
    opts.validation = true;
    // SAFETY: valid bytes, options and out-pointers; the handles are destroyed once, below.
    unsafe {
        assert_eq!(cmdgraph_bundle_from_memory(bytes.as_ptr().cast(), bytes.len(), &mut b), CMDGRAPH_OK);
        assert_eq!(cmdgraph_executor_create(b, &opts, &mut ex), CMDGRAPH_OK, "{}", text(cmdgraph_bundle_last_error(b)));
        let n = cmdgraph_executor_warning_count(ex);
        let w: Vec<String> = (0..n).map(|i| text(cmdgraph_executor_warning(ex, i))).collect();
        assert!(cmdgraph_executor_warning(ex, n).is_null());
        let device = text(cmdgraph_executor_device_name(ex));
        cmdgraph_executor_destroy(ex);
        cmdgraph_bundle_destroy(b);
        (w, device)
    }
}

#[test]
fn a_long_loop_is_named_on_llvmpipe_and_a_short_one_is_not() {
    let (w, device) = warnings(1_000_000);
    if device.to_ascii_lowercase().starts_with("llvmpipe") {
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with("kernel @k may take more than 65,535 loop iterations"), "{}", w[0]);
    } else {
        assert!(w.is_empty(), "{device}: {w:?}");
    }
    let (w, _) = warnings(1000);
    assert!(w.is_empty(), "{w:?}");
}

#[test]
fn null_has_no_warnings() {
    // SAFETY: NULL is allowed.
    unsafe {
        assert_eq!(cmdgraph_executor_warning_count(null_mut()), 0);
        assert!(cmdgraph_executor_warning(null_mut(), 0).is_null());
    }
}
