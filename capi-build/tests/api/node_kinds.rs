//! Every node kind through the C functions (called from Rust through the rlib): kernels
//! (range and nd-range), memcpy, memset, fill, a C host task, empty, barrier (recorded),
//! sub-graph, graph-owned allocations, explicit dependencies and `make_edge`, dynamic
//! parameters and command groups with executable-graph update. The same program runs on the
//! reference interpreter and on the default Vulkan device with validation on; both must give
//! the values computed here in Rust, bit for bit (the kernels are exact: one rounding each).
use crate::support::*;
use cmdgraph_build::{cg::*, context::*, dynamic::*, exec::*, graph::*, host::*, queue::*, usm::*};
use std::ffi::c_void;
use std::ptr::{null, null_mut};

const N: usize = 256;

const KERNELS: &str = r#"
kernel @scale(%x: buf<f32, read>, %y: buf<f32, write>, %s: f32) {
  %i = global_id 0
  %v = load %x[%i]
  %r = mul %s, %v
  store %y[%i], %r
}
"#;

/// y[i] = x[i] * x[i] + 1, as a GLSL shader.
const SQUARE_GLSL: &str = r#"#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) buffer Y { float y[]; };
void main() {
  uint i = gl_GlobalInvocationID.x;
  y[i] = x[i] * x[i] + 1.0;
}
"#;

struct Ctx {
    ctx: *mut cmdgraph_sycl_context,
}

impl Ctx {
    fn new(backend: cmdgraph_sycl_backend) -> Ctx {
        let mut options = cmdgraph_sycl_context_options_default();
        options.backend = backend as i32;
        options.validation = backend == cmdgraph_sycl_backend::CMDGRAPH_SYCL_BACKEND_VULKAN;
        let mut ctx = null_mut();
        ok(c!(cmdgraph_sycl_context_create(&options, &mut ctx)));
        ok(c!(cmdgraph_sycl_context_register_kernels(ctx, cs(KERNELS).as_ptr())));
        ok(c!(cmdgraph_sycl_context_register_shader(
            ctx,
            cmdgraph_sycl_shader_lang::CMDGRAPH_SYCL_GLSL as i32,
            cs(SQUARE_GLSL).as_ptr(),
            cs("main").as_ptr(),
            cs("square").as_ptr()
        )));
        Ctx { ctx }
    }

    fn malloc(&self, n: usize) -> *mut c_void {
        let mut p = null_mut();
        ok(c!(cmdgraph_sycl_malloc(self.ctx, 0, cmdgraph_sycl_type::CMDGRAPH_SYCL_F32 as i32, n as u64, &mut p)));
        p
    }

    fn write(&self, dst: *mut c_void, v: &[f32]) {
        ok(c!(cmdgraph_sycl_memcpy(self.ctx, dst, v.as_ptr().cast(), (v.len() * 4) as u64)));
    }

    fn read(&self, src: *mut c_void, n: usize) -> Vec<f32> {
        let mut v = vec![0f32; n];
        ok(c!(cmdgraph_sycl_memcpy(self.ctx, v.as_mut_ptr().cast(), src, (n * 4) as u64)));
        v
    }

    fn cg(&self) -> *mut cmdgraph_sycl_cg {
        let mut cg = null_mut();
        ok(c!(cmdgraph_sycl_cg_create(self.ctx, &mut cg)));
        cg
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        c!(cmdgraph_sycl_context_destroy(self.ctx));
    }
}

fn kernel(cg: *mut cmdgraph_sycl_cg, name: &str, global: &[u64], local: Option<&[u64]>, args: &[cmdgraph_sycl_arg]) {
    let k = cs(name);
    match local {
        None => ok(c!(cmdgraph_sycl_cg_parallel_for(
            cg,
            k.as_ptr(),
            global.len(),
            global.as_ptr(),
            args.as_ptr(),
            args.len()
        ))),
        Some(l) => ok(c!(cmdgraph_sycl_cg_parallel_for_nd(
            cg,
            k.as_ptr(),
            global.len(),
            global.as_ptr(),
            l.as_ptr(),
            args.as_ptr(),
            args.len()
        ))),
    }
}

fn node_type(n: *mut cmdgraph_sycl_node) -> String {
    message(c!(cmdgraph_sycl_node_type(n)))
}

/// The host task: out[i] = in[i] + 1 over the declared USM (user: [in, out]).
unsafe extern "C" fn plus_one(mem: *mut cmdgraph_sycl_host_memory<'_>, user: *mut c_void) -> cmdgraph_sycl_status {
    // SAFETY: `user` is the test's `[*mut c_void; 2]`, alive while the graph runs.
    let [src, dst] = unsafe { *(user as *const [*mut c_void; 2]) };
    let mut v = vec![0f32; N];
    // SAFETY: `mem` is the callback's live host memory; `v` holds N floats.
    let st = unsafe { cmdgraph_sycl_host_memory_read(mem, src, v.as_mut_ptr().cast(), N * 4) };
    if st != CMDGRAPH_SYCL_OK {
        return st;
    }
    let w: Vec<f32> = v.iter().map(|x| x + 1.0).collect();
    // SAFETY: as above.
    unsafe { cmdgraph_sycl_host_memory_write(mem, dst, w.as_ptr().cast(), N * 4) }
}

/// What every output holds after each of the two runs.
#[derive(Debug, PartialEq)]
struct Outputs {
    runs: Vec<Vec<Vec<f32>>>,
    types: Vec<String>,
}

fn program(backend: cmdgraph_sycl_backend, x: &[f32], s1: f32, s2: f32) -> Outputs {
    let c = Ctx::new(backend);
    let names = ["a", "b", "c", "d", "e", "f", "g", "k", "sub", "xin"];
    let m: Vec<*mut c_void> = names.iter().map(|_| c.malloc(N)).collect();
    let [a, b, cc, d, e, f, gout, k, sub, xin] = m[..] else { unreachable!() };
    c.write(xin, x);

    // A sub-graph: sub = square(xin).
    let mut sg = null_mut();
    ok(c!(cmdgraph_sycl_graph_create(c.ctx, 0, &mut sg)));
    let cg = c.cg();
    kernel(cg, "square", &[N as u64], None, &[cmdgraph_sycl_arg_pointer(xin), cmdgraph_sycl_arg_pointer(sub)]);
    let sq = add(sg, cg, &[]);
    let mut sub_exec = null_mut();
    ok(c!(cmdgraph_sycl_graph_finalize(sg, 0, &mut sub_exec)));

    let mut g = null_mut();
    ok(c!(cmdgraph_sycl_graph_create(c.ctx, 0, &mut g)));
    let mut s = null_mut();
    ok(c!(cmdgraph_sycl_dynparam_create(g, &cmdgraph_sycl_arg_f32(s1), &mut s)));

    let cg = c.cg();
    ok(c!(cmdgraph_sycl_cg_memcpy(cg, a, xin, (N * 4) as u64)));
    let n_copy = add(g, cg, &[]);
    let cg = c.cg();
    kernel(
        cg,
        "scale",
        &[N as u64],
        None,
        &[cmdgraph_sycl_arg_pointer(a), cmdgraph_sycl_arg_pointer(b), cmdgraph_sycl_arg_dynamic(s)],
    );
    let n_scale = add(g, cg, &[n_copy]);
    let cg = c.cg();
    kernel(
        cg,
        "scale",
        &[N as u64],
        Some(&[64]),
        &[cmdgraph_sycl_arg_pointer(b), cmdgraph_sycl_arg_pointer(cc), cmdgraph_sycl_arg_f32(-3.0)],
    );
    let n_nd = add(g, cg, &[]);
    ok(c!(cmdgraph_sycl_graph_make_edge(g, n_scale, n_nd)));
    let cg = c.cg();
    ok(c!(cmdgraph_sycl_cg_memset(cg, d, 0x3f, (N * 4) as u64)));
    let n_memset = add(g, cg, &[]);
    let cg = c.cg();
    ok(c!(cmdgraph_sycl_cg_fill(cg, e, &cmdgraph_sycl_arg_f32(s2), N as u64)));
    let n_fill = add(g, cg, &[]);
    let n_empty = add(g, null_mut(), &[n_nd, n_memset, n_fill]);
    let user: [*mut c_void; 2] = [cc, f];
    let access = [
        cmdgraph_sycl_access { pointer: cc, mode: cmdgraph_sycl_access_mode::CMDGRAPH_SYCL_READ as i32 },
        cmdgraph_sycl_access { pointer: f, mode: cmdgraph_sycl_access_mode::CMDGRAPH_SYCL_WRITE as i32 },
    ];
    let cg = c.cg();
    ok(c!(cmdgraph_sycl_cg_host_task(cg, Some(plus_one), user.as_ptr() as *mut c_void, access.as_ptr(), 2)));
    let n_host = add(g, cg, &[n_empty]);
    // A graph allocation t: t = 2 * f; g = t; free t.
    let cg = c.cg();
    let mut t = null_mut();
    ok(c!(cmdgraph_sycl_cg_async_malloc(cg, 0, cmdgraph_sycl_type::CMDGRAPH_SYCL_F32 as i32, N as u64, &mut t)));
    let n_alloc = add(g, cg, &[n_host]);
    let cg = c.cg();
    kernel(
        cg,
        "scale",
        &[N as u64],
        None,
        &[cmdgraph_sycl_arg_pointer(f), cmdgraph_sycl_arg_pointer(t), cmdgraph_sycl_arg_f32(2.0)],
    );
    let n_t = add(g, cg, &[n_alloc]);
    let cg = c.cg();
    ok(c!(cmdgraph_sycl_cg_memcpy(cg, gout, t, (N * 4) as u64)));
    let n_tcopy = add(g, cg, &[n_t]);
    let cg = c.cg();
    ok(c!(cmdgraph_sycl_cg_async_free(cg, t)));
    let n_free = add(g, cg, &[n_tcopy]);
    let cg = c.cg();
    ok(c!(cmdgraph_sycl_cg_graph(cg, sub_exec)));
    let n_sub = add(g, cg, &[]);
    // A dynamic command group: k = 0.5 * xin, or k = square(xin).
    let (alt0, alt1) = (c.cg(), c.cg());
    kernel(
        alt0,
        "scale",
        &[N as u64],
        None,
        &[cmdgraph_sycl_arg_pointer(xin), cmdgraph_sycl_arg_pointer(k), cmdgraph_sycl_arg_f32(0.5)],
    );
    kernel(alt1, "square", &[N as u64], None, &[cmdgraph_sycl_arg_pointer(xin), cmdgraph_sycl_arg_pointer(k)]);
    let alts = [alt0.cast_const(), alt1.cast_const()];
    let mut dcg = null_mut();
    ok(c!(cmdgraph_sycl_dcg_create(g, alts.as_ptr(), 2, &mut dcg)));
    c!(cmdgraph_sycl_cg_destroy(alt0));
    c!(cmdgraph_sycl_cg_destroy(alt1));
    let mut n_dcg = null_mut();
    ok(c!(cmdgraph_sycl_graph_add_dynamic(g, dcg, null(), 0, 0, &mut n_dcg)));

    let nodes = [n_copy, n_scale, n_nd, n_memset, n_fill, n_empty, n_host, n_alloc, n_t, n_tcopy, n_free, n_sub, n_dcg];
    let types: Vec<String> = nodes.iter().map(|&n| node_type(n)).collect();
    let mut count = 0;
    ok(c!(cmdgraph_sycl_graph_node_count(g, &mut count)));
    assert_eq!(count, nodes.len());
    let (mut preds, mut succs) = (0, 0);
    ok(c!(cmdgraph_sycl_node_degree(n_empty, &mut preds, &mut succs)));
    assert_eq!((preds, succs), (3, 1), "the empty node's edges");

    let mut exec = null_mut();
    ok(c!(cmdgraph_sycl_graph_finalize(g, CMDGRAPH_SYCL_FINALIZE_UPDATABLE, &mut exec)));
    let mut q = null_mut();
    ok(c!(cmdgraph_sycl_queue_create(c.ctx, 0, &mut q)));
    let outputs = [a, b, cc, d, e, f, gout, k, sub];
    let mut runs = Vec::new();
    for run in 0..2 {
        if run == 1 {
            ok(c!(cmdgraph_sycl_dynparam_update(s, &cmdgraph_sycl_arg_f32(s2))));
            ok(c!(cmdgraph_sycl_dcg_set_active(dcg, 1)));
            let mut active = 0;
            ok(c!(cmdgraph_sycl_dcg_get_active(dcg, &mut active)));
            assert_eq!(active, 1);
            let updated = [n_scale.cast_const(), n_dcg.cast_const()];
            ok(c!(cmdgraph_sycl_exec_update_nodes(exec, updated.as_ptr(), 2)));
        }
        let mut ev = null_mut();
        ok(c!(cmdgraph_sycl_queue_graph(q, exec, null(), 0, &mut ev)));
        ok(c!(cmdgraph_sycl_event_wait(ev)));
        let mut done = false;
        ok(c!(cmdgraph_sycl_event_is_complete(ev, &mut done)));
        assert!(done);
        c!(cmdgraph_sycl_event_destroy(ev));
        runs.push(outputs.iter().map(|&p| c.read(p, N)).collect());
    }
    let mut runtime = vec![0u8; 256];
    let mut size = 0;
    ok(c!(cmdgraph_sycl_exec_runtime(exec, runtime.as_mut_ptr().cast(), runtime.len(), &mut size)));
    runtime.truncate(size);
    let runtime = String::from_utf8(runtime).expect("UTF-8");
    let vulkan = backend == cmdgraph_sycl_backend::CMDGRAPH_SYCL_BACKEND_VULKAN;
    assert_eq!(runtime.contains("Vulkan"), vulkan, "ran on {runtime}");
    for n in nodes.into_iter().chain([sq]) {
        c!(cmdgraph_sycl_node_destroy(n));
    }
    c!(cmdgraph_sycl_dcg_destroy(dcg));
    c!(cmdgraph_sycl_dynparam_destroy(s));
    c!(cmdgraph_sycl_exec_destroy(exec));
    c!(cmdgraph_sycl_exec_destroy(sub_exec));
    c!(cmdgraph_sycl_graph_destroy(g));
    c!(cmdgraph_sycl_graph_destroy(sg));
    c!(cmdgraph_sycl_queue_destroy(q));
    Outputs { runs, types }
}

/// The outputs computed in Rust.
fn expected(x: &[f32], s1: f32, s2: f32) -> Vec<Vec<Vec<f32>>> {
    let run = |s: f32, second: bool| {
        let a = x.to_vec();
        let b: Vec<f32> = a.iter().map(|v| s * v).collect();
        let c: Vec<f32> = b.iter().map(|v| -3.0 * v).collect();
        let d = vec![f32::from_le_bytes([0x3f; 4]); N];
        let e = vec![s2; N];
        let f: Vec<f32> = c.iter().map(|v| v + 1.0).collect();
        let g: Vec<f32> = f.iter().map(|v| 2.0 * v).collect();
        let square: Vec<f32> = x.iter().map(|v| v * v + 1.0).collect();
        let k: Vec<f32> = if second { square.clone() } else { x.iter().map(|v| 0.5 * v).collect() };
        vec![a, b, c, d, e, f, g, k, square]
    };
    vec![run(s1, false), run(s2, true)]
}

const TYPES: [&str; 13] = [
    "memcpy",
    "kernel",
    "kernel",
    "memset",
    "memfill",
    "empty",
    "host_task",
    "async_malloc",
    "kernel",
    "memcpy",
    "async_free",
    "subgraph",
    "kernel",
];

#[test]
fn every_node_kind_on_the_interpreter_matches_rust() {
    let x = random_floats(1, N);
    let (s1, s2) = (random_floats(2, 1)[0], random_floats(3, 1)[0]);
    let got = program(cmdgraph_sycl_backend::CMDGRAPH_SYCL_BACKEND_INTERPRETER, &x, s1, s2);
    assert_eq!(got.types, TYPES);
    let want = expected(&x, s1, s2);
    for (run, (g, w)) in got.runs.iter().zip(&want).enumerate() {
        for (i, (gv, wv)) in g.iter().zip(w).enumerate() {
            assert_eq!(f32_bytes(gv), f32_bytes(wv), "run {run}, output {i}");
        }
    }
}

#[test]
fn every_node_kind_on_vulkan_with_validation_matches_the_interpreter() {
    let x = random_floats(4, N);
    let (s1, s2) = (random_floats(5, 1)[0], random_floats(6, 1)[0]);
    let vulkan = program(cmdgraph_sycl_backend::CMDGRAPH_SYCL_BACKEND_VULKAN, &x, s1, s2);
    let interp = program(cmdgraph_sycl_backend::CMDGRAPH_SYCL_BACKEND_INTERPRETER, &x, s1, s2);
    assert_eq!(vulkan.types, TYPES);
    for (run, (v, i)) in vulkan.runs.iter().zip(&interp.runs).enumerate() {
        for (o, (vv, iv)) in v.iter().zip(i).enumerate() {
            assert_eq!(f32_bytes(vv), f32_bytes(iv), "run {run}, output {o}: Vulkan and the interpreter differ");
        }
    }
    assert_eq!(interp.runs, expected(&x, s1, s2));
}

#[test]
fn recording_an_in_order_queue_with_a_barrier_makes_a_chain() {
    let c = Ctx::new(cmdgraph_sycl_backend::CMDGRAPH_SYCL_BACKEND_INTERPRETER);
    let x = random_floats(7, N);
    let (xin, y, z) = (c.malloc(N), c.malloc(N), c.malloc(N));
    c.write(xin, &x);
    let mut q = null_mut();
    ok(c!(cmdgraph_sycl_queue_create(c.ctx, CMDGRAPH_SYCL_QUEUE_IN_ORDER, &mut q)));
    let mut g = null_mut();
    ok(c!(cmdgraph_sycl_graph_create(c.ctx, 0, &mut g)));
    ok(c!(cmdgraph_sycl_graph_begin_recording(g, q)));
    let mut recording = false;
    ok(c!(cmdgraph_sycl_queue_is_recording(q, &mut recording)));
    assert!(recording);
    let cg = c.cg();
    kernel(
        cg,
        "scale",
        &[N as u64],
        None,
        &[cmdgraph_sycl_arg_pointer(xin), cmdgraph_sycl_arg_pointer(y), cmdgraph_sycl_arg_f32(1.5)],
    );
    let mut e1 = null_mut();
    ok(c!(cmdgraph_sycl_queue_submit(q, cg, &mut e1)));
    c!(cmdgraph_sycl_cg_destroy(cg));
    let cg = c.cg();
    ok(c!(cmdgraph_sycl_cg_barrier(cg, null(), 0)));
    let mut e2 = null_mut();
    ok(c!(cmdgraph_sycl_queue_submit(q, cg, &mut e2)));
    c!(cmdgraph_sycl_cg_destroy(cg));
    let mut e3 = null_mut();
    ok(c!(cmdgraph_sycl_queue_memcpy(q, z, y, (N * 4) as u64, &mut e3)));
    // A host end cannot be recorded.
    let host = [0f32; 4];
    let st = c!(cmdgraph_sycl_queue_memcpy(q, z, host.as_ptr().cast(), 16, null_mut()));
    assert_eq!(st, CMDGRAPH_SYCL_ERROR_INVALID);
    assert!(last_error().contains("recording queue"), "{}", last_error());
    ok(c!(cmdgraph_sycl_graph_end_recording(g, q)));
    let mut barrier = null_mut();
    ok(c!(cmdgraph_sycl_node_from_event(e2, &mut barrier)));
    assert_eq!(node_type(barrier), "ext_oneapi_barrier");
    let (mut preds, mut succs) = (0, 0);
    ok(c!(cmdgraph_sycl_node_degree(barrier, &mut preds, &mut succs)));
    assert_eq!((preds, succs), (1, 1), "kernel -> barrier -> memcpy");
    let mut exec = null_mut();
    ok(c!(cmdgraph_sycl_graph_finalize(g, 0, &mut exec)));
    ok(c!(cmdgraph_sycl_queue_graph(q, exec, null(), 0, null_mut())));
    ok(c!(cmdgraph_sycl_queue_wait(q)));
    let want: Vec<f32> = x.iter().map(|v| 1.5 * v).collect();
    assert_eq!(f32_bytes(&c.read(z, N)), f32_bytes(&want));
    for e in [e1, e2, e3] {
        c!(cmdgraph_sycl_event_destroy(e));
    }
    c!(cmdgraph_sycl_node_destroy(barrier));
    c!(cmdgraph_sycl_exec_destroy(exec));
    c!(cmdgraph_sycl_graph_destroy(g));
    c!(cmdgraph_sycl_queue_destroy(q));
}

const COUNTDOWN: &str = r#"
kernel @countdown(%c: buf<u32, read_write>) {
  %z = const 0 : u32
  %one = const 1 : u32
  %n = load %c[%z]
  %n1 = sub %n, %one
  store %c[%z], %n1
}
"#;

/// A `while` node through `cmdgraph_sycl_cg_conditional` (docs/conditional.md), on the
/// interpreter and on Vulkan (validation on): its body (y = 2 * y, then the word counts
/// down) runs as many rounds as the word says, the two runtimes bit for bit; a bad kind or
/// body count is an error.
#[test]
fn a_while_node_from_c_runs_its_body_as_many_rounds_as_its_word_says() {
    let x = random_floats(8, N);
    let interp = while_from_c(cmdgraph_sycl_backend::CMDGRAPH_SYCL_BACKEND_INTERPRETER, &x);
    let vulkan = while_from_c(cmdgraph_sycl_backend::CMDGRAPH_SYCL_BACKEND_VULKAN, &x);
    for (run, (v, i)) in vulkan.iter().zip(&interp).enumerate() {
        assert_eq!(f32_bytes(v), f32_bytes(i), "run {run}: Vulkan and the interpreter differ");
    }
}

/// The outputs of [`a_while_node_from_c_runs_its_body_as_many_rounds_as_its_word_says`]'s
/// runs on `backend`, each checked against the rounds its word asked for.
fn while_from_c(backend: cmdgraph_sycl_backend, x: &[f32]) -> Vec<Vec<f32>> {
    let c = Ctx::new(backend);
    ok(c!(cmdgraph_sycl_context_register_kernels(c.ctx, cs(COUNTDOWN).as_ptr())));
    let y = c.malloc(N);
    let mut word = null_mut();
    ok(c!(cmdgraph_sycl_malloc(c.ctx, 0, cmdgraph_sycl_type::CMDGRAPH_SYCL_U32 as i32, 1, &mut word)));
    let mut body = null_mut();
    ok(c!(cmdgraph_sycl_graph_create(c.ctx, 0, &mut body)));
    let cg = c.cg();
    kernel(
        cg,
        "scale",
        &[N as u64],
        None,
        &[cmdgraph_sycl_arg_pointer(y), cmdgraph_sycl_arg_pointer(y), cmdgraph_sycl_arg_f32(2.0)],
    );
    let n1 = add(body, cg, &[]);
    let cg = c.cg();
    kernel(cg, "countdown", &[1], None, &[cmdgraph_sycl_arg_pointer(word)]);
    let n2 = add(body, cg, &[n1]);
    let mut body_exec = null_mut();
    ok(c!(cmdgraph_sycl_graph_finalize(body, 0, &mut body_exec)));
    let mut g = null_mut();
    ok(c!(cmdgraph_sycl_graph_create(c.ctx, 0, &mut g)));
    let bodies = [body_exec.cast_const()];
    // Refused: an unknown kind, a `while` with two bodies.
    for (kind, count) in [(7u32, 1usize), (1, 2)] {
        let cg = c.cg();
        let st = c!(cmdgraph_sycl_cg_conditional(cg, kind, word, [body_exec.cast_const(); 2].as_ptr(), count));
        assert_ne!(st, CMDGRAPH_SYCL_OK, "kind {kind}, {count} bodies");
        c!(cmdgraph_sycl_cg_destroy(cg));
    }
    let cg = c.cg();
    ok(c!(cmdgraph_sycl_cg_conditional(cg, 1, word, bodies.as_ptr(), 1)));
    let w = add(g, cg, &[]);
    assert_eq!(node_type(w), "conditional");
    let mut exec = null_mut();
    ok(c!(cmdgraph_sycl_graph_finalize(g, 0, &mut exec)));
    let mut q = null_mut();
    ok(c!(cmdgraph_sycl_queue_create(c.ctx, 0, &mut q)));
    let mut outputs = Vec::new();
    for rounds in [0u32, 1, 5, 37] {
        c.write(y, x);
        ok(c!(cmdgraph_sycl_memcpy(c.ctx, word, (&rounds as *const u32).cast(), 4)));
        let mut ev = null_mut();
        ok(c!(cmdgraph_sycl_queue_graph(q, exec, null(), 0, &mut ev)));
        ok(c!(cmdgraph_sycl_event_wait(ev)));
        c!(cmdgraph_sycl_event_destroy(ev));
        let want: Vec<f32> = x.iter().map(|v| v * 2f32.powi(rounds as i32)).collect();
        let got = c.read(y, N);
        assert_eq!(f32_bytes(&got), f32_bytes(&want), "{rounds} rounds");
        outputs.push(got);
    }
    let mut runtime = vec![0u8; 256];
    let mut size = 0;
    ok(c!(cmdgraph_sycl_exec_runtime(exec, runtime.as_mut_ptr().cast(), runtime.len(), &mut size)));
    let vulkan = backend == cmdgraph_sycl_backend::CMDGRAPH_SYCL_BACKEND_VULKAN;
    assert_eq!(String::from_utf8_lossy(&runtime[..size]).contains("Vulkan"), vulkan);
    for n in [n1, n2, w] {
        c!(cmdgraph_sycl_node_destroy(n));
    }
    c!(cmdgraph_sycl_exec_destroy(exec));
    c!(cmdgraph_sycl_exec_destroy(body_exec));
    c!(cmdgraph_sycl_graph_destroy(g));
    c!(cmdgraph_sycl_graph_destroy(body));
    c!(cmdgraph_sycl_queue_destroy(q));
    outputs
}
