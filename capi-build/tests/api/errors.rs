//! Every class of error through the C functions: its status and its message, on the handle
//! and on the thread; NULL handles and pointers, strings that are not UTF-8, values out of
//! range, unknown names and pointers, kernel text and shaders that do not compile, SYCL's
//! `errc::invalid` rows (with the errc name and the §22 row), failed host tasks, short
//! buffers; destroying NULL does nothing.
use crate::support::*;
use cmdgraph_build::{cg::*, context::*, dynamic::*, exec::*, graph::*, host::*, queue::*, usm::*};
use std::ffi::c_void;
use std::ptr::{null, null_mut};

const KERNEL: &str = "kernel @copy(%x: buf<f32, read>, %y: buf<f32, write>) {\n  %i = global_id 0\n  %v = load %x[%i]\n  store %y[%i], %v\n}\n";

fn interpreter() -> *mut cmdgraph_sycl_context {
    let mut options = cmdgraph_sycl_context_options_default();
    options.backend = cmdgraph_sycl_backend::CMDGRAPH_SYCL_BACKEND_INTERPRETER as i32;
    let mut ctx = null_mut();
    ok(c!(cmdgraph_sycl_context_create(&options, &mut ctx)));
    ok(c!(cmdgraph_sycl_context_register_kernels(ctx, cs(KERNEL).as_ptr())));
    ctx
}

fn malloc(ctx: *mut cmdgraph_sycl_context, n: u64) -> *mut c_void {
    let mut p = null_mut();
    ok(c!(cmdgraph_sycl_malloc(ctx, 0, cmdgraph_sycl_type::CMDGRAPH_SYCL_F32 as i32, n, &mut p)));
    p
}

/// Asserts status `want` and that the thread's message contains `text`.
#[track_caller]
fn fails(st: cmdgraph_sycl_status, want: cmdgraph_sycl_status, text: &str) -> String {
    let m = last_error();
    assert_eq!(st, want, "{m}");
    assert!(m.contains(text), "message {m:?} lacks {text:?}");
    m
}

#[test]
fn null_handles_and_pointers_are_errors_and_destroying_null_does_nothing() {
    fails(c!(cmdgraph_sycl_queue_wait(null_mut())), CMDGRAPH_SYCL_ERROR_NULL_HANDLE, "the queue handle is NULL");
    fails(c!(cmdgraph_sycl_graph_make_edge(null_mut(), null(), null())), CMDGRAPH_SYCL_ERROR_NULL_HANDLE, "graph");
    fails(c!(cmdgraph_sycl_event_wait(null_mut())), CMDGRAPH_SYCL_ERROR_NULL_HANDLE, "event");
    fails(
        c!(cmdgraph_sycl_exec_update_nodes(null_mut(), null(), 0)),
        CMDGRAPH_SYCL_ERROR_NULL_HANDLE,
        "executable graph",
    );
    // The NULL handle's message is the thread's.
    assert_eq!(message(c!(cmdgraph_sycl_exec_last_error(null_mut()))), last_error());
    fails(
        c!(cmdgraph_sycl_context_create(null(), null_mut())),
        CMDGRAPH_SYCL_ERROR_INVALID_ARGUMENT,
        "out-pointer is NULL",
    );
    let ctx = interpreter();
    let mut g = null_mut();
    ok(c!(cmdgraph_sycl_graph_create(ctx, 0, &mut g)));
    fails(
        c!(cmdgraph_sycl_graph_make_edge(g, null(), null())),
        CMDGRAPH_SYCL_ERROR_NULL_HANDLE,
        "the source node handle is NULL",
    );
    fails(
        c!(cmdgraph_sycl_graph_finalize(g, 0, null_mut())),
        CMDGRAPH_SYCL_ERROR_INVALID_ARGUMENT,
        "out-pointer is NULL",
    );
    let mut cg = null_mut();
    ok(c!(cmdgraph_sycl_cg_create(ctx, &mut cg)));
    fails(
        c!(cmdgraph_sycl_cg_fill(cg, malloc(ctx, 4), null(), 4)),
        CMDGRAPH_SYCL_ERROR_INVALID_ARGUMENT,
        "pattern is NULL",
    );
    fails(
        c!(cmdgraph_sycl_cg_parallel_for(cg, null(), 1, null(), null(), 0)),
        CMDGRAPH_SYCL_ERROR_INVALID_ARGUMENT,
        "kernel name is NULL",
    );
    fails(
        c!(cmdgraph_sycl_cg_host_task(cg, None, null_mut(), null(), 0)),
        CMDGRAPH_SYCL_ERROR_INVALID_ARGUMENT,
        "host-task function is NULL",
    );
    fails(c!(cmdgraph_sycl_cg_memcpy(cg, null_mut(), null(), 4)), CMDGRAPH_SYCL_ERROR_INVALID_ARGUMENT, "NULL");
    // Every destroy takes NULL.
    c!(cmdgraph_sycl_context_destroy(null_mut()));
    c!(cmdgraph_sycl_queue_destroy(null_mut()));
    c!(cmdgraph_sycl_event_destroy(null_mut()));
    c!(cmdgraph_sycl_graph_destroy(null_mut()));
    c!(cmdgraph_sycl_node_destroy(null_mut()));
    c!(cmdgraph_sycl_exec_destroy(null_mut()));
    c!(cmdgraph_sycl_cg_destroy(null_mut()));
    c!(cmdgraph_sycl_dynparam_destroy(null_mut()));
    c!(cmdgraph_sycl_dcg_destroy(null_mut()));
    assert!(c!(cmdgraph_sycl_node_type(null())).is_null());
    assert!(c!(cmdgraph_sycl_context_device_name(null())).is_null());
    ok(c!(cmdgraph_sycl_free(ctx, null_mut())));
    c!(cmdgraph_sycl_cg_destroy(cg));
    c!(cmdgraph_sycl_graph_destroy(g));
    c!(cmdgraph_sycl_context_destroy(ctx));
}

#[test]
fn bad_strings_values_names_and_pointers() {
    let ctx = interpreter();
    let bad = [0x66u8, 0xff, 0xfe, 0];
    fails(
        c!(cmdgraph_sycl_context_register_kernels(ctx, bad.as_ptr().cast())),
        CMDGRAPH_SYCL_ERROR_INVALID_ARGUMENT,
        "kernel text is not UTF-8",
    );
    let mut p = null_mut();
    fails(
        c!(cmdgraph_sycl_malloc(ctx, 0, 99, 4, &mut p)),
        CMDGRAPH_SYCL_ERROR_INVALID_ARGUMENT,
        "99 is not a cmdgraph_sycl_type",
    );
    assert!(p.is_null(), "out-pointers are NULL on error");
    fails(
        c!(cmdgraph_sycl_malloc(ctx, 5, 10, 4, &mut p)),
        CMDGRAPH_SYCL_ERROR_INVALID_ARGUMENT,
        "5 is not a cmdgraph_sycl_usm_kind",
    );
    let f32_type = cmdgraph_sycl_type::CMDGRAPH_SYCL_F32 as i32;
    fails(
        c!(cmdgraph_sycl_malloc(ctx, 0, f32_type, u64::MAX / 2, &mut p)),
        CMDGRAPH_SYCL_ERROR_INVALID_ARGUMENT,
        "overflows",
    );
    fails(
        c!(cmdgraph_sycl_malloc(ctx, 0, f32_type, 1 << 50, &mut p)),
        CMDGRAPH_SYCL_ERROR_INVALID_ARGUMENT,
        "cannot reserve",
    );
    let mut q = null_mut();
    fails(c!(cmdgraph_sycl_queue_create(ctx, 0x80, &mut q)), CMDGRAPH_SYCL_ERROR_INVALID_ARGUMENT, "queue flags 0x80");
    let mut options = cmdgraph_sycl_context_options_default();
    options.bundle_dir = bad.as_ptr().cast();
    let mut other = null_mut();
    fails(
        c!(cmdgraph_sycl_context_create(&options, &mut other)),
        CMDGRAPH_SYCL_ERROR_INVALID_ARGUMENT,
        "bundle directory is not UTF-8",
    );
    assert!(other.is_null());
    let mut options = cmdgraph_sycl_context_options_default();
    options.backend = 7;
    fails(
        c!(cmdgraph_sycl_context_create(&options, &mut other)),
        CMDGRAPH_SYCL_ERROR_INVALID_ARGUMENT,
        "7 is not a cmdgraph_sycl_backend",
    );

    let (x, y) = (malloc(ctx, 16), malloc(ctx, 16));
    let mut cg = null_mut();
    ok(c!(cmdgraph_sycl_cg_create(ctx, &mut cg)));
    let global = [16u64];
    let args = [cmdgraph_sycl_arg_pointer(x), cmdgraph_sycl_arg_pointer(y)];
    fails(
        c!(cmdgraph_sycl_cg_parallel_for(cg, bad.as_ptr().cast(), 1, global.as_ptr(), args.as_ptr(), 2)),
        CMDGRAPH_SYCL_ERROR_INVALID_ARGUMENT,
        "kernel name is not UTF-8",
    );
    fails(
        c!(cmdgraph_sycl_cg_parallel_for(cg, cs("nope").as_ptr(), 1, global.as_ptr(), args.as_ptr(), 2)),
        CMDGRAPH_SYCL_ERROR_NOT_FOUND,
        "no kernel `@nope`",
    );
    let host = [0f32; 16];
    let host_args = [cmdgraph_sycl_arg_pointer(host.as_ptr().cast()), cmdgraph_sycl_arg_pointer(y)];
    fails(
        c!(cmdgraph_sycl_cg_parallel_for(cg, cs("copy").as_ptr(), 1, global.as_ptr(), host_args.as_ptr(), 2)),
        CMDGRAPH_SYCL_ERROR_NOT_FOUND,
        "argument 0 of `@copy`",
    );
    let bad_kind = [cmdgraph_sycl_arg { kind: 9, ..cmdgraph_sycl_arg_pointer(x) }, cmdgraph_sycl_arg_pointer(y)];
    fails(
        c!(cmdgraph_sycl_cg_parallel_for(cg, cs("copy").as_ptr(), 1, global.as_ptr(), bad_kind.as_ptr(), 2)),
        CMDGRAPH_SYCL_ERROR_INVALID_ARGUMENT,
        "9 is not a cmdgraph_sycl_arg_kind",
    );
    ok(c!(cmdgraph_sycl_cg_parallel_for(cg, cs("@copy").as_ptr(), 1, global.as_ptr(), args.as_ptr(), 2)));
    fails(c!(cmdgraph_sycl_cg_memset(cg, y, 0, 64)), CMDGRAPH_SYCL_ERROR_INVALID, "a command group holds one command");
    // The command group keeps its message while another handle's call clears the thread's.
    ok(c!(cmdgraph_sycl_free(ctx, null_mut())));
    assert_eq!(last_error(), "");
    assert!(message(c!(cmdgraph_sycl_cg_last_error(cg))).contains("one command"));
    fails(
        c!(cmdgraph_sycl_free(ctx, host.as_ptr() as *mut c_void)),
        CMDGRAPH_SYCL_ERROR_NOT_FOUND,
        "not the start of an allocation",
    );
    // Host copies: into USM past its end.
    fails(c!(cmdgraph_sycl_memcpy(ctx, x, host.as_ptr().cast(), 64 * 4)), CMDGRAPH_SYCL_ERROR_INVALID, "invalid");
    c!(cmdgraph_sycl_cg_destroy(cg));
    c!(cmdgraph_sycl_context_destroy(ctx));
}

#[test]
fn kernel_text_and_shaders_that_do_not_compile_are_compile_errors() {
    let ctx = interpreter();
    let m = fails(
        c!(cmdgraph_sycl_context_register_kernels(
            ctx,
            cs("kernel @k(%x: buf<f32, read>) {\n  %i = bogus 0\n}\n").as_ptr()
        )),
        CMDGRAPH_SYCL_ERROR_COMPILE,
        "kernel text does not parse",
    );
    assert!(m.contains("<kernels>:2"), "the diagnostic names the line: {m}");
    // A name already used is SYCL's errc::invalid.
    fails(
        c!(cmdgraph_sycl_context_register_kernels(ctx, cs(KERNEL).as_ptr())),
        CMDGRAPH_SYCL_ERROR_INVALID,
        "invalid: the name `@copy` is already used",
    );
    let wgsl = "@compute @workgroup_size(1) fn main() { let x = undefined_thing; }";
    fails(
        c!(cmdgraph_sycl_context_register_shader(ctx, 0, cs(wgsl).as_ptr(), cs("main").as_ptr(), cs("w").as_ptr())),
        CMDGRAPH_SYCL_ERROR_COMPILE,
        "shader `main` (line 1)",
    );
    let ok_wgsl = "@group(0) @binding(0) var<storage, read_write> a: array<f32>;\n@compute @workgroup_size(1) fn main() { a[0] = 1.0; }";
    fails(
        c!(cmdgraph_sycl_context_register_shader(ctx, 0, cs(ok_wgsl).as_ptr(), cs("other").as_ptr(), cs("w").as_ptr())),
        CMDGRAPH_SYCL_ERROR_COMPILE,
        "no entry point `other`",
    );
    fails(
        c!(cmdgraph_sycl_context_register_shader(ctx, 4, cs(ok_wgsl).as_ptr(), cs("main").as_ptr(), cs("w").as_ptr())),
        CMDGRAPH_SYCL_ERROR_INVALID_ARGUMENT,
        "4 is not a cmdgraph_sycl_shader_lang",
    );
    ok(c!(cmdgraph_sycl_context_register_shader(ctx, 0, cs(ok_wgsl).as_ptr(), cs("main").as_ptr(), cs("w").as_ptr())));
    c!(cmdgraph_sycl_context_destroy(ctx));
}

unsafe extern "C" fn failing_task(mem: *mut cmdgraph_sycl_host_memory<'_>, _user: *mut c_void) -> cmdgraph_sycl_status {
    // SAFETY: `mem` is the callback's live host memory.
    unsafe { cmdgraph_sycl_host_memory_set_error(mem, c"the sensor is unplugged".as_ptr()) };
    CMDGRAPH_SYCL_ERROR_INVALID
}

#[test]
fn sycl_errors_carry_the_errc_name_and_row_and_failed_host_tasks_fail_the_wait() {
    let ctx = interpreter();
    let mut g = null_mut();
    ok(c!(cmdgraph_sycl_graph_create(ctx, 0, &mut g)));
    let (mut a, mut b) = (null_mut(), null_mut());
    ok(c!(cmdgraph_sycl_graph_add(g, null(), null(), 0, 0, &mut a)));
    let deps = [a.cast_const()];
    ok(c!(cmdgraph_sycl_graph_add(g, null(), deps.as_ptr(), 1, 0, &mut b)));
    let m = fails(c!(cmdgraph_sycl_graph_make_edge(g, b, a)), CMDGRAPH_SYCL_ERROR_INVALID, "invalid (§22 row");
    assert!(m.contains("cycle"), "{m}");
    assert_eq!(message(c!(cmdgraph_sycl_graph_last_error(g))), m, "on the graph too");
    fails(
        c!(cmdgraph_sycl_graph_add(g, null(), null(), 0, 8, null_mut())),
        CMDGRAPH_SYCL_ERROR_INVALID_ARGUMENT,
        "node flags 0x8",
    );

    let mut p = null_mut();
    ok(c!(cmdgraph_sycl_dynparam_create(g, &cmdgraph_sycl_arg_f32(1.0), &mut p)));
    fails(c!(cmdgraph_sycl_dynparam_update(p, &cmdgraph_sycl_arg_u32(1))), CMDGRAPH_SYCL_ERROR_INVALID, "invalid");

    // A host task that fails: the event's wait reports it with the callback's message.
    let mut cg = null_mut();
    ok(c!(cmdgraph_sycl_cg_create(ctx, &mut cg)));
    ok(c!(cmdgraph_sycl_cg_host_task(cg, Some(failing_task), null_mut(), null(), 0)));
    ok(c!(cmdgraph_sycl_graph_add(g, cg, null(), 0, 0, null_mut())));
    let mut exec = null_mut();
    ok(c!(cmdgraph_sycl_graph_finalize(g, 0, &mut exec)));
    let updated = [a.cast_const()];
    fails(
        c!(cmdgraph_sycl_exec_update_nodes(exec, updated.as_ptr(), 1)),
        CMDGRAPH_SYCL_ERROR_INVALID,
        "invalid (§22 row 24)",
    );
    let mut q = null_mut();
    ok(c!(cmdgraph_sycl_queue_create(ctx, 0, &mut q)));
    // The interpreter runs at submission, so the submission reports it (a device: the wait).
    let mut ev = null_mut();
    let m = fails(
        c!(cmdgraph_sycl_queue_graph(q, exec, null(), 0, &mut ev)),
        CMDGRAPH_SYCL_ERROR_INVALID,
        "the sensor is unplugged",
    );
    assert!(ev.is_null());
    assert!(m.contains("execution failed") && m.contains("callback \"host_task_0\""), "{m}");
    assert!(m.contains("CMDGRAPH_SYCL_ERROR_INVALID"), "the callback's status is named: {m}");

    // Waiting on a recording queue is row 52.
    let mut g2 = null_mut();
    ok(c!(cmdgraph_sycl_graph_create(ctx, 0, &mut g2)));
    ok(c!(cmdgraph_sycl_graph_begin_recording(g2, q)));
    fails(c!(cmdgraph_sycl_queue_wait(q)), CMDGRAPH_SYCL_ERROR_INVALID, "invalid (§22 row 52)");
    ok(c!(cmdgraph_sycl_graph_end_recording(g2, null())));

    // A short buffer for the IR text: the size is reported, nothing copied.
    let mut size = 0;
    ok(c!(cmdgraph_sycl_exec_ir(exec, null_mut(), 0, &mut size)));
    assert!(size > 0);
    let mut buf = vec![0u8; size - 1];
    fails(
        c!(cmdgraph_sycl_exec_ir(exec, buf.as_mut_ptr().cast(), buf.len(), &mut size)),
        CMDGRAPH_SYCL_ERROR_BUFFER_TOO_SMALL,
        "are needed",
    );
    assert!(buf.iter().all(|&b| b == 0));

    for n in [a, b] {
        c!(cmdgraph_sycl_node_destroy(n));
    }
    c!(cmdgraph_sycl_event_destroy(ev));
    c!(cmdgraph_sycl_dynparam_destroy(p));
    c!(cmdgraph_sycl_cg_destroy(cg));
    c!(cmdgraph_sycl_exec_destroy(exec));
    c!(cmdgraph_sycl_graph_destroy(g));
    c!(cmdgraph_sycl_graph_destroy(g2));
    c!(cmdgraph_sycl_queue_destroy(q));
    c!(cmdgraph_sycl_context_destroy(ctx));
}

#[test]
fn status_names_are_static_and_distinct() {
    let names: Vec<String> = [
        CMDGRAPH_SYCL_OK,
        CMDGRAPH_SYCL_ERROR_INVALID_ARGUMENT,
        CMDGRAPH_SYCL_ERROR_NULL_HANDLE,
        CMDGRAPH_SYCL_ERROR_NOT_FOUND,
        CMDGRAPH_SYCL_ERROR_PANIC,
        CMDGRAPH_SYCL_ERROR_BUFFER_TOO_SMALL,
        CMDGRAPH_SYCL_ERROR_IO,
        CMDGRAPH_SYCL_ERROR_INVALID,
        CMDGRAPH_SYCL_ERROR_FEATURE_NOT_SUPPORTED,
        CMDGRAPH_SYCL_ERROR_KERNEL_NOT_SUPPORTED,
        CMDGRAPH_SYCL_ERROR_COMPILE,
    ]
    .iter()
    .map(|&s| message(cmdgraph_build::cmdgraph_sycl_status_name(s)))
    .collect();
    assert_eq!(names[7], "CMDGRAPH_SYCL_ERROR_INVALID");
    let unique: std::collections::BTreeSet<_> = names.iter().collect();
    assert_eq!(unique.len(), names.len());
    assert_eq!(message(cmdgraph_build::cmdgraph_sycl_version()), env!("CARGO_PKG_VERSION"));
}
