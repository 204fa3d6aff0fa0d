//! The two offline paths of an executable graph: its IR text (parses, verifies, prints back
//! to itself) and its bundle compiled in process, byte for byte what `cmdgraph compile`
//! writes for that text, as bytes and as a file; for a graph with a WGSL kernel, a
//! graph-owned allocation, a dynamic parameter and a dynamic command group.
use crate::support::*;
use cmdgraph_build::{cg::*, context::*, dynamic::*, exec::*, graph::*, queue::*, usm::*};
use std::ffi::c_void;
use std::process::Command;
use std::ptr::{null, null_mut};

const WGSL: &str = "@group(0) @binding(0) var<storage, read> x: array<f32>;\n\
@group(0) @binding(1) var<storage, read_write> y: array<f32>;\n\
@group(0) @binding(2) var<uniform> a: f32;\n\
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3<u32>) { y[id.x] = a * x[id.x] + y[id.x]; }\n";

fn add_kernel(
    ctx: *mut cmdgraph_sycl_context,
    g: *mut cmdgraph_sycl_graph,
    args: &[cmdgraph_sycl_arg],
    deps: &[*const cmdgraph_sycl_node],
) -> *mut cmdgraph_sycl_node {
    let mut cg = null_mut();
    ok(c!(cmdgraph_sycl_cg_create(ctx, &mut cg)));
    let global = [256u64];
    ok(c!(cmdgraph_sycl_cg_parallel_for(cg, c"axpy".as_ptr(), 1, global.as_ptr(), args.as_ptr(), args.len())));
    let mut node = null_mut();
    ok(c!(cmdgraph_sycl_graph_add(g, cg, deps.as_ptr(), deps.len(), 0, &mut node)));
    c!(cmdgraph_sycl_cg_destroy(cg));
    node
}

#[test]
fn exported_ir_round_trips_and_the_in_process_bundle_is_the_clis() {
    let mut options = cmdgraph_sycl_context_options_default();
    options.backend = cmdgraph_sycl_backend::CMDGRAPH_SYCL_BACKEND_INTERPRETER as i32;
    let mut ctx = null_mut();
    ok(c!(cmdgraph_sycl_context_create(&options, &mut ctx)));
    ok(c!(cmdgraph_sycl_context_register_shader(ctx, 0, cs(WGSL).as_ptr(), c"main".as_ptr(), c"axpy".as_ptr())));
    let mut ptrs = [null_mut::<c_void>(); 2];
    for p in &mut ptrs {
        ok(c!(cmdgraph_sycl_malloc(ctx, 0, cmdgraph_sycl_type::CMDGRAPH_SYCL_F32 as i32, 256, p)));
    }
    let [x, y] = ptrs;
    let mut g = null_mut();
    ok(c!(cmdgraph_sycl_graph_create(ctx, 0, &mut g)));
    let mut a = null_mut();
    ok(c!(cmdgraph_sycl_dynparam_create(g, &cmdgraph_sycl_arg_f32(random_floats(9, 1)[0]), &mut a)));
    let mut cg = null_mut();
    ok(c!(cmdgraph_sycl_cg_create(ctx, &mut cg)));
    let mut t = null_mut();
    ok(c!(cmdgraph_sycl_cg_async_malloc(cg, 0, cmdgraph_sycl_type::CMDGRAPH_SYCL_F32 as i32, 256, &mut t)));
    let mut alloc = null_mut();
    ok(c!(cmdgraph_sycl_graph_add(g, cg, null(), 0, 0, &mut alloc)));
    c!(cmdgraph_sycl_cg_destroy(cg));
    let k1 = add_kernel(
        ctx,
        g,
        &[cmdgraph_sycl_arg_pointer(x), cmdgraph_sycl_arg_pointer(t), cmdgraph_sycl_arg_dynamic(a)],
        &[alloc],
    );
    let k2 = add_kernel(
        ctx,
        g,
        &[cmdgraph_sycl_arg_pointer(t), cmdgraph_sycl_arg_pointer(y), cmdgraph_sycl_arg_f32(0.75)],
        &[k1],
    );
    ok(c!(cmdgraph_sycl_cg_create(ctx, &mut cg)));
    ok(c!(cmdgraph_sycl_cg_async_free(cg, t)));
    ok(c!(cmdgraph_sycl_graph_add(g, cg, null(), 0, CMDGRAPH_SYCL_NODE_DEPENDS_ON_ALL_LEAVES, null_mut())));
    c!(cmdgraph_sycl_cg_destroy(cg));
    let mut exec = null_mut();
    ok(c!(cmdgraph_sycl_graph_finalize(g, 0, &mut exec)));

    let mut size = 0;
    ok(c!(cmdgraph_sycl_exec_ir(exec, null_mut(), 0, &mut size)));
    let mut text = vec![0u8; size];
    ok(c!(cmdgraph_sycl_exec_ir(exec, text.as_mut_ptr().cast(), size, &mut size)));
    let text = String::from_utf8(text).expect("UTF-8");
    assert!(text.contains("async_malloc") && text.contains("kernel @axpy"), "{text}");
    let module = cmdgraph_ir::text::parse(&text).expect("the exported IR parses");
    cmdgraph_ir::verify::verify(&module).expect("the exported IR verifies");
    assert_eq!(cmdgraph_ir::text::print(&module), text, "print(parse(text)) is the text");

    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("graph.cgir");
    ok(c!(cmdgraph_sycl_exec_export_ir(exec, cs(path.to_str().expect("UTF-8 path")).as_ptr())));
    assert_eq!(std::fs::read_to_string(&path).expect("exported"), text);
    let cli_bundle = dir.path().join("cli.cgb");
    run(Command::new(cli()).arg("compile").arg(&path).arg("-o").arg(&cli_bundle));
    let cli_bytes = std::fs::read(&cli_bundle).expect("cli.cgb");

    ok(c!(cmdgraph_sycl_exec_compile(exec, null_mut(), 0, &mut size)));
    let mut bytes = vec![0u8; size];
    ok(c!(cmdgraph_sycl_exec_compile(exec, bytes.as_mut_ptr(), size, &mut size)));
    assert!(
        bytes == cli_bytes,
        "in-process bundle ({} bytes) differs from `cmdgraph compile`'s ({} bytes)",
        bytes.len(),
        cli_bytes.len()
    );
    let file = dir.path().join("ours.cgb");
    ok(c!(cmdgraph_sycl_exec_compile_to_file(exec, cs(file.to_str().expect("UTF-8 path")).as_ptr())));
    assert!(std::fs::read(&file).expect("ours.cgb") == cli_bytes);
    // An unwritable path is an I/O error.
    let st = c!(cmdgraph_sycl_exec_export_ir(exec, c"/nonexistent-dir/x.cgir".as_ptr()));
    assert_eq!(st, CMDGRAPH_SYCL_ERROR_IO, "{}", last_error());

    for n in [alloc, k1, k2] {
        c!(cmdgraph_sycl_node_destroy(n));
    }
    c!(cmdgraph_sycl_dynparam_destroy(a));
    c!(cmdgraph_sycl_exec_destroy(exec));
    c!(cmdgraph_sycl_graph_destroy(g));
    c!(cmdgraph_sycl_context_destroy(ctx));
}

/// A context on Vulkan (validation on) with a bundle directory of the application's: finalize
/// compiles the graph's bundle into it under the graph's key (the bytes
/// `cmdgraph_sycl_exec_compile` gives), and a second context on the same directory finds it
/// there and compiles nothing; both run it and compute the same.
#[test]
fn finalize_keeps_its_bundles_in_the_bundle_directory_and_reuses_them() {
    let dir = tempfile::tempdir().expect("temp dir");
    let x0 = random_floats(21, 256);
    let run_once = || -> (Vec<f32>, Vec<u8>) {
        let mut options = cmdgraph_sycl_context_options_default();
        options.validation = true;
        let dir_c = cs(dir.path().to_str().expect("UTF-8 path"));
        options.bundle_dir = dir_c.as_ptr();
        let mut ctx = null_mut();
        ok(c!(cmdgraph_sycl_context_create(&options, &mut ctx)));
        ok(c!(cmdgraph_sycl_context_register_shader(ctx, 0, cs(WGSL).as_ptr(), c"main".as_ptr(), c"axpy".as_ptr())));
        let mut ptrs = [null_mut::<c_void>(); 2];
        for p in &mut ptrs {
            ok(c!(cmdgraph_sycl_malloc(ctx, 0, cmdgraph_sycl_type::CMDGRAPH_SYCL_F32 as i32, 256, p)));
        }
        let [x, y] = ptrs;
        ok(c!(cmdgraph_sycl_memcpy(ctx, x, x0.as_ptr().cast(), 1024)));
        let mut g = null_mut();
        ok(c!(cmdgraph_sycl_graph_create(ctx, 0, &mut g)));
        let k = add_kernel(
            ctx,
            g,
            &[cmdgraph_sycl_arg_pointer(x), cmdgraph_sycl_arg_pointer(y), cmdgraph_sycl_arg_f32(-1.25)],
            &[],
        );
        let mut exec = null_mut();
        ok(c!(cmdgraph_sycl_graph_finalize(g, 0, &mut exec)));
        let mut q = null_mut();
        ok(c!(cmdgraph_sycl_queue_create(ctx, 0, &mut q)));
        ok(c!(cmdgraph_sycl_queue_graph(q, exec, null(), 0, null_mut())));
        ok(c!(cmdgraph_sycl_queue_wait(q)));
        let mut y_host = vec![0f32; 256];
        ok(c!(cmdgraph_sycl_memcpy(ctx, y_host.as_mut_ptr().cast(), y, 1024)));
        let mut size = 0;
        ok(c!(cmdgraph_sycl_exec_compile(exec, null_mut(), 0, &mut size)));
        let mut bytes = vec![0u8; size];
        ok(c!(cmdgraph_sycl_exec_compile(exec, bytes.as_mut_ptr(), size, &mut size)));
        c!(cmdgraph_sycl_node_destroy(k));
        c!(cmdgraph_sycl_exec_destroy(exec));
        c!(cmdgraph_sycl_graph_destroy(g));
        c!(cmdgraph_sycl_queue_destroy(q));
        c!(cmdgraph_sycl_context_destroy(ctx));
        (y_host, bytes)
    };
    let bundles = || -> Vec<(std::path::PathBuf, std::time::SystemTime)> {
        let mut v: Vec<_> = std::fs::read_dir(dir.path())
            .expect("bundle directory")
            .map(|e| e.expect("entry").path())
            .map(|p| (p.clone(), std::fs::metadata(&p).and_then(|m| m.modified()).expect("mtime")))
            .collect();
        v.sort();
        v
    };
    let (first, bytes) = run_once();
    let after_first = bundles();
    assert_eq!(after_first.len(), 1, "one bundle: {after_first:?}");
    let name = after_first[0].0.file_name().expect("name").to_string_lossy().into_owned();
    assert!(name.starts_with("cgk1-") && name.ends_with(".cgb"), "{name}");
    assert!(std::fs::read(&after_first[0].0).expect("bundle") == bytes, "the stored bundle is the compiled one");
    let (second, _) = run_once();
    assert_eq!(bundles(), after_first, "the second context found the bundle and wrote nothing");
    let want: Vec<f32> = x0.iter().map(|v| -1.25 * v).collect();
    assert_eq!(f32_bytes(&first), f32_bytes(&want));
    assert_eq!(f32_bytes(&second), f32_bytes(&want));
}
