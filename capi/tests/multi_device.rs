//! The C API on several devices (`cmdgraph_multi_executor_*`, docs/capi.md): a graph across
//! two logical Vulkan devices (llvmpipe in CI, validation on both), with a host task in C
//! beside device 1's memory and a parameter used on device 1, run, updated and run again;
//! every memory object equals the reference interpreter's byte for byte. Misuse returns
//! statuses with messages.
#![allow(unsafe_code)]

use cmdgraph::bundle::*;
use cmdgraph::executor::*;
use cmdgraph::host::*;
use cmdgraph::multi::*;
use cmdgraph::*;
use cmdgraph_interp::Interpreter;
use cmdgraph_ir::graph::ArgValue;
use cmdgraph_ir::types::{LitValue, Literal, ScalarType};
use cmdgraph_status::*;
use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr::{null, null_mut};

/// Separate multiply and add: one rounding each on every runtime, so bytes compare exactly.
const IR: &str = "kernel @saxpy(%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32) {
  %i = global_id 0
  %xv = load %x[%i]
  %yv = load %y[%i]
  %p = mul %a, %xv
  %r = add %p, %yv
  store %y[%i], %r
}

usm @w : f32[512] replicated
usm @a : f32[512]
usm @b : f32[512] home(1)
usm @out : f32[512]

graph @g properties(updatable) {
  dyn %s = 1.5 : f32
  %k0 = kernel @saxpy range(512) args(@w, @a, 1.25)
  %t = memcpy @b, @a, 2048 after(%k0)
  %k1 = kernel @saxpy range(512) args(@w, @b, %s) device(1) after(%t)
  %h = host_task \"halve_b\" access(@b read_write) after(%k1)
  %back = memcpy @out, @b, 2048 after(%h)
  %k2 = kernel @saxpy range(512) args(@a, @out, -0.5) after(%back)
}
";

const NAMES: [&str; 4] = ["w", "a", "b", "out"];

fn c(s: &str) -> CString {
    CString::new(s).expect("no NUL")
}

fn text(p: *const c_char) -> String {
    // SAFETY: the library returns NUL-terminated strings valid until the next call.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

fn random_bytes(seed: u32) -> Vec<u8> {
    let mut s = seed;
    (0..512)
        .flat_map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            ((s >> 8) as f32 / (1u32 << 24) as f32 * 2.0 - 1.0).to_le_bytes()
        })
        .collect()
}

/// `host_task "halve_b"` in C: `b[i] *= 0.5` (exact) through the host-memory calls.
unsafe extern "C" fn halve_b(mem: *mut cmdgraph_host_memory<'_>, _user: *mut c_void) -> cmdgraph_status {
    let mut buf = vec![0u8; 2048];
    let name = c("b");
    // SAFETY: the live host memory of this call; a buffer of its size.
    let st = unsafe { cmdgraph_host_memory_read(mem, name.as_ptr(), 0, buf.as_mut_ptr().cast(), buf.len()) };
    if st != CMDGRAPH_OK {
        return st;
    }
    for v in buf.chunks_exact_mut(4) {
        let x = f32::from_le_bytes([v[0], v[1], v[2], v[3]]) * 0.5;
        v.copy_from_slice(&x.to_le_bytes());
    }
    // SAFETY: as above.
    unsafe { cmdgraph_host_memory_write(mem, name.as_ptr(), 0, buf.as_ptr().cast(), buf.len()) }
}

fn compile() -> Vec<u8> {
    use cmdgraph_codegen::bundle::{compile_module, Llvm};
    let module = cmdgraph_ir::text::parse(IR).unwrap_or_else(|d| panic!("{d:?}"));
    let passes = cmdgraph_passes::with_place_devices(cmdgraph_passes::default_pipeline());
    let (bundle, _) = compile_module(&module, &passes, &cmdgraph_codegen::Options::default(), &Llvm)
        .unwrap_or_else(|e| panic!("{e}"));
    bundle.to_bytes().unwrap()
}

/// The interpreter's memory after two runs, and after an update of `%s` and one more run.
fn reference(inputs: &[(String, Vec<u8>)], s: f32) -> [Vec<Vec<u8>>; 2] {
    let module = cmdgraph_ir::text::parse(IR).unwrap();
    let mut it = Interpreter::new(&module).unwrap();
    for (n, b) in inputs {
        it.bind(n, b).unwrap();
    }
    it.register_callback("halve_b", |mem| {
        let v: Vec<f32> = mem.read_as("b")?;
        mem.write_as("b", 0, &v.iter().map(|x| x * 0.5).collect::<Vec<f32>>())
    });
    let e = it.finalize("g").unwrap();
    it.run(e).unwrap();
    it.run(e).unwrap();
    let first: Vec<Vec<u8>> = NAMES.iter().map(|n| it.read(n).unwrap().to_vec()).collect();
    let value = ArgValue::Scalar(Literal { value: LitValue::Float(f64::from(s)), ty: Some(ScalarType::F32) });
    it.update_param(e, "s", value).unwrap();
    it.run(e).unwrap();
    [first, NAMES.iter().map(|n| it.read(n).unwrap().to_vec()).collect()]
}

fn read_all(mx: *mut cmdgraph_multi_executor) -> Vec<Vec<u8>> {
    NAMES
        .iter()
        .map(|n| {
            let mut out = vec![0u8; 2048];
            let mut size = 0usize;
            // SAFETY: live executor, a buffer of `out.len()` bytes, a writable size.
            let st = unsafe {
                cmdgraph_multi_executor_read(mx, c(n).as_ptr(), out.as_mut_ptr().cast(), out.len(), &mut size)
            };
            assert_eq!(st, CMDGRAPH_OK, "{}", text(unsafe { cmdgraph_multi_executor_last_error(mx) }));
            assert_eq!(size, 2048);
            out
        })
        .collect()
}

#[test]
fn a_graph_across_two_devices_runs_through_the_c_api_as_on_the_interpreter() {
    let bytes = compile();
    let mut bundle = null_mut();
    // SAFETY: valid bytes and out-pointer.
    assert_eq!(unsafe { cmdgraph_bundle_from_memory(bytes.as_ptr().cast(), bytes.len(), &mut bundle) }, CMDGRAPH_OK);
    let mut opts = cmdgraph_executor_options_default();
    opts.validation = true;
    let devices = [opts, opts];
    let mut mx = null_mut();
    // SAFETY: live bundle, two readable options, a writable out-pointer.
    let st = unsafe { cmdgraph_multi_executor_create(bundle, devices.as_ptr(), devices.len(), &mut mx) };
    // SAFETY: live bundle.
    assert_eq!(st, CMDGRAPH_OK, "{}", text(unsafe { cmdgraph_bundle_last_error(bundle) }));
    // SAFETY: live bundle, not used afterwards (the executor copied it).
    unsafe { cmdgraph_bundle_destroy(bundle) };
    let err = |st: cmdgraph_status| {
        // SAFETY: live executor.
        (st, text(unsafe { cmdgraph_multi_executor_last_error(mx) }))
    };
    let inputs: Vec<(String, Vec<u8>)> =
        NAMES.iter().zip(1..).map(|(n, seed)| (n.to_string(), random_bytes(seed * 7919))).collect();
    for (n, b) in &inputs {
        // SAFETY: live executor, `b.len()` readable bytes.
        let st = unsafe { cmdgraph_multi_executor_bind(mx, c(n).as_ptr(), b.as_ptr().cast(), b.len()) };
        assert_eq!(st, CMDGRAPH_OK, "{:?}", err(st));
    }
    // SAFETY: live executor; `halve_b` follows the callback contract and needs no user data.
    let st = unsafe { cmdgraph_multi_executor_register_callback(mx, c("halve_b").as_ptr(), Some(halve_b), null_mut()) };
    assert_eq!(st, CMDGRAPH_OK, "{:?}", err(st));
    let mut exec = u32::MAX;
    // SAFETY: live executor, a writable number.
    let st = unsafe { cmdgraph_multi_executor_finalize(mx, c("g").as_ptr(), &mut exec) };
    assert_eq!(st, CMDGRAPH_OK, "{:?}", err(st));
    assert_eq!(exec, 0);
    for _ in 0..2 {
        // SAFETY: live executor.
        assert_eq!(unsafe { cmdgraph_multi_executor_run(mx, exec) }, CMDGRAPH_OK);
    }
    // SAFETY: live executor.
    let st = unsafe { cmdgraph_multi_executor_wait(mx, exec) };
    assert_eq!(st, CMDGRAPH_OK, "{:?}", err(st));
    let want = reference(&inputs, -0.8125);
    let got = read_all(mx);
    for ((n, g), w) in NAMES.iter().zip(&got).zip(&want[0]) {
        assert!(g == w, "@{n} differs from the interpreter after two runs");
    }
    // SAFETY: live executor, a string name.
    let st = unsafe { cmdgraph_multi_executor_update_f32(mx, exec, c("s").as_ptr(), -0.8125) };
    assert_eq!(st, CMDGRAPH_OK, "{:?}", err(st));
    // SAFETY: live executor.
    assert_eq!(unsafe { cmdgraph_multi_executor_run(mx, exec) }, CMDGRAPH_OK);
    // SAFETY: live executor.
    assert_eq!(unsafe { cmdgraph_multi_executor_wait(mx, exec) }, CMDGRAPH_OK);
    let got = read_all(mx);
    for ((n, g), w) in NAMES.iter().zip(&got).zip(&want[1]) {
        assert!(g == w, "@{n} differs from the interpreter after the update");
    }
    // Misuse: statuses and messages, nothing changed.
    // SAFETY: live executor; a string name.
    let st = unsafe { cmdgraph_multi_executor_update_int(mx, exec, c("s").as_ptr(), 3) };
    assert_eq!(
        err(st),
        (CMDGRAPH_ERROR_INVALID_ARGUMENT, "%s is not an integer parameter; use the update of its type".into())
    );
    // SAFETY: live executor.
    let st = unsafe { cmdgraph_multi_executor_run(mx, 7) };
    assert_eq!(st, CMDGRAPH_ERROR_INVALID_ARGUMENT);
    assert!(err(st).1.contains("no executable 7"), "{:?}", err(st));
    // SAFETY: live executor; a string name.
    let st = unsafe { cmdgraph_multi_executor_update_f32(mx, exec, c("nope").as_ptr(), 1.0) };
    assert_eq!(st, CMDGRAPH_ERROR_NOT_FOUND, "{:?}", err(st));
    // SAFETY: live executor, a NULL name (refused).
    assert_eq!(unsafe { cmdgraph_multi_executor_bind(mx, null(), null(), 0) }, CMDGRAPH_ERROR_INVALID_ARGUMENT);
    // SAFETY: NULL handles are refused, never dereferenced.
    assert_eq!(unsafe { cmdgraph_multi_executor_wait(null_mut(), 0) }, CMDGRAPH_ERROR_NULL_HANDLE);
    assert_eq!(read_all(mx), got);
    let mut count = usize::MAX;
    // SAFETY: live executor, a writable count.
    assert_eq!(unsafe { cmdgraph_multi_executor_take_messages(mx, &mut count) }, CMDGRAPH_OK);
    // SAFETY: live executor.
    let first = unsafe { cmdgraph_multi_executor_message(mx, 0) };
    assert_eq!(count, 0, "validation: {}", if first.is_null() { String::new() } else { text(first) });
    // SAFETY: live executor, not used afterwards.
    unsafe { cmdgraph_multi_executor_destroy(mx) };
}

#[test]
fn creating_without_devices_or_out_pointer_is_refused() {
    let bytes = compile();
    let mut bundle = null_mut();
    // SAFETY: valid bytes and out-pointer.
    assert_eq!(unsafe { cmdgraph_bundle_from_memory(bytes.as_ptr().cast(), bytes.len(), &mut bundle) }, CMDGRAPH_OK);
    let mut mx = null_mut();
    // SAFETY: live bundle; no options (refused).
    let st = unsafe { cmdgraph_multi_executor_create(bundle, null(), 0, &mut mx) };
    assert_eq!(st, CMDGRAPH_ERROR_INVALID_ARGUMENT);
    assert!(mx.is_null());
    assert!(text(cmdgraph_last_error()).contains("at least one device"), "{}", text(cmdgraph_last_error()));
    // A graph naming device 1 on one device: refused at finalize, naming the node.
    let opts = [cmdgraph_executor_options_default()];
    // SAFETY: live bundle, one readable option, a writable out-pointer.
    assert_eq!(unsafe { cmdgraph_multi_executor_create(bundle, opts.as_ptr(), 1, &mut mx) }, CMDGRAPH_OK);
    let mut exec = 0;
    // SAFETY: live executor, a writable number.
    let st = unsafe { cmdgraph_multi_executor_finalize(mx, c("g").as_ptr(), &mut exec) };
    assert_eq!(st, CMDGRAPH_ERROR_INVALID_ARGUMENT);
    // SAFETY: live executor.
    let why = text(unsafe { cmdgraph_multi_executor_last_error(mx) });
    assert!(why.contains("device 1") && why.contains("1 device(s)"), "{why}");
    // SAFETY: live handles, not used afterwards.
    unsafe {
        cmdgraph_multi_executor_destroy(mx);
        cmdgraph_bundle_destroy(bundle);
    }
}

/// A pointer parameter of a node on device 1 and that node's range, updated through the C
/// API, and a profile per stage graph.
const POINTER_IR: &str = "kernel @saxpy(%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32) {
  %i = global_id 0
  %xv = load %x[%i]
  %yv = load %y[%i]
  %p = mul %a, %xv
  %r = add %p, %yv
  store %y[%i], %r
}

usm @w : f32[512] replicated
usm @a : f32[512]
usm @b : f32[512] home(1)
usm @c : f32[512] home(1)
usm @d : f32[512] home(1)
usm @out : f32[512]

graph @g properties(updatable, enable_profiling) {
  dyn %src = @b
  %k0 = kernel @saxpy range(512) args(@w, @a, 1.25)
  %t = memcpy @b, @a, 2048 after(%k0)
  %k1 = kernel @saxpy range(512) args(%src, @d, 0.5) device(1) after(%t)
  %back = memcpy @out, @d, 2048 after(%k1)
}
";

const POINTER_NAMES: [&str; 6] = ["w", "a", "b", "c", "d", "out"];

/// One run of `text` on the interpreter from `inputs` with `%src` pointing at `src`.
fn reference_once(text: &str, inputs: &[(String, Vec<u8>)], src: &str) -> Vec<Vec<u8>> {
    let module = cmdgraph_ir::text::parse(text).unwrap();
    let mut it = Interpreter::new(&module).unwrap();
    for (n, b) in inputs {
        it.bind(n, b).unwrap();
    }
    let e = it.finalize("g").unwrap();
    let base = cmdgraph_ir::graph::MemRef::Memory(module.memory_by_name(src).unwrap());
    it.update_param(e, "src", ArgValue::Pointer(cmdgraph_ir::graph::Pointer { base, offset: 0 })).unwrap();
    it.run(e).unwrap();
    POINTER_NAMES.iter().map(|n| it.read(n).unwrap().to_vec()).collect()
}

#[test]
fn pointer_and_range_updates_and_profiles_reach_the_second_device() {
    use cmdgraph_codegen::bundle::{compile_module, Llvm};
    let module = cmdgraph_ir::text::parse(POINTER_IR).unwrap();
    let passes = cmdgraph_passes::with_place_devices(cmdgraph_passes::default_pipeline());
    let (bundle, _) = compile_module(&module, &passes, &cmdgraph_codegen::Options::default(), &Llvm).unwrap();
    let bytes = bundle.to_bytes().unwrap();
    let mut b = null_mut();
    // SAFETY: valid bytes and out-pointer.
    assert_eq!(unsafe { cmdgraph_bundle_from_memory(bytes.as_ptr().cast(), bytes.len(), &mut b) }, CMDGRAPH_OK);
    let mut opts = cmdgraph_executor_options_default();
    opts.validation = true;
    let devices = [opts, opts];
    let mut mx = null_mut();
    // SAFETY: live bundle, two options, a writable out-pointer.
    assert_eq!(unsafe { cmdgraph_multi_executor_create(b, devices.as_ptr(), 2, &mut mx) }, CMDGRAPH_OK);
    // SAFETY: live bundle, not used afterwards.
    unsafe { cmdgraph_bundle_destroy(b) };
    // SAFETY: live executor.
    let err = |st: cmdgraph_status| (st, text(unsafe { cmdgraph_multi_executor_last_error(mx) }));
    let inputs: Vec<(String, Vec<u8>)> =
        POINTER_NAMES.iter().zip(11..).map(|(n, seed)| (n.to_string(), random_bytes(seed * 104729))).collect();
    let bind_all = || {
        for (n, bytes) in &inputs {
            // SAFETY: live executor, `bytes.len()` readable bytes.
            let st = unsafe { cmdgraph_multi_executor_bind(mx, c(n).as_ptr(), bytes.as_ptr().cast(), bytes.len()) };
            assert_eq!(st, CMDGRAPH_OK, "{:?}", err(st));
        }
    };
    let read = || -> Vec<Vec<u8>> {
        POINTER_NAMES
            .iter()
            .map(|n| {
                let mut out = vec![0u8; 2048];
                // SAFETY: live executor, a buffer of 2048 bytes.
                let st = unsafe {
                    cmdgraph_multi_executor_read(mx, c(n).as_ptr(), out.as_mut_ptr().cast(), out.len(), null_mut())
                };
                assert_eq!(st, CMDGRAPH_OK);
                out
            })
            .collect()
    };
    let run_once = || {
        // SAFETY: live executor.
        assert_eq!(unsafe { cmdgraph_multi_executor_run(mx, 0) }, CMDGRAPH_OK);
        // SAFETY: live executor.
        let st = unsafe { cmdgraph_multi_executor_wait(mx, 0) };
        assert_eq!(st, CMDGRAPH_OK, "{:?}", err(st));
    };
    bind_all();
    let mut exec = 9;
    // SAFETY: live executor, a writable number.
    assert_eq!(unsafe { cmdgraph_multi_executor_finalize(mx, c("g").as_ptr(), &mut exec) }, CMDGRAPH_OK);
    // `%src` to other memory of device 1.
    // SAFETY: live executor, string names.
    let st = unsafe { cmdgraph_multi_executor_update_pointer(mx, exec, c("src").as_ptr(), c("@c").as_ptr(), 0) };
    assert_eq!(st, CMDGRAPH_OK, "{:?}", err(st));
    run_once();
    assert!(
        read() == reference_once(POINTER_IR, &inputs, "c"),
        "differs from the interpreter after the pointer update"
    );
    // Memory of device 0 for a node on device 1: refused, naming the node.
    // SAFETY: live executor, string names.
    let st = unsafe { cmdgraph_multi_executor_update_pointer(mx, exec, c("src").as_ptr(), c("a").as_ptr(), 0) };
    let (st, why) = err(st);
    assert_eq!(st, CMDGRAPH_ERROR_INVALID_ARGUMENT, "{why}");
    assert!(why.contains("%k1 runs on device 1") && why.contains("@a lives on device 0"), "{why}");
    // Half the range on device 1, from fresh inputs.
    bind_all();
    let global = [256u64];
    // SAFETY: live executor, a string name, one readable size.
    let st = unsafe { cmdgraph_multi_executor_update_range(mx, exec, c("k1").as_ptr(), global.as_ptr(), 1) };
    assert_eq!(st, CMDGRAPH_OK, "{:?}", err(st));
    run_once();
    let halved = POINTER_IR.replace("%k1 = kernel @saxpy range(512)", "%k1 = kernel @saxpy range(256)");
    assert!(read() == reference_once(&halved, &inputs, "c"), "differs from the interpreter after the range update");
    // One profile entry per stage graph, each on the device its name says.
    let mut count = 0usize;
    // SAFETY: live executor, a writable count.
    let st = unsafe { cmdgraph_multi_executor_profile(mx, exec, &mut count) };
    assert_eq!(st, CMDGRAPH_OK, "{:?}", err(st));
    assert_eq!(count, 3, "stage graphs @g.s0.d0, @g.s1.d1, @g.s2.d0");
    for i in 0..count {
        let mut p = cmdgraph_stage_profile { stage: 9, device: 9, graph: null(), start_ns: 0, end_ns: 0 };
        // SAFETY: live executor, a writable profile.
        assert_eq!(unsafe { cmdgraph_multi_executor_stage_profile(mx, i, &mut p) }, CMDGRAPH_OK);
        assert_eq!(text(p.graph), format!("g.s{}.d{}", p.stage, p.device));
        assert_eq!(p.stage as usize, i);
        assert!(p.end_ns > p.start_ns, "{i}: {} .. {}", p.start_ns, p.end_ns);
    }
    let mut p = cmdgraph_stage_profile { stage: 0, device: 0, graph: null(), start_ns: 0, end_ns: 0 };
    // SAFETY: live executor, a writable profile.
    assert_eq!(unsafe { cmdgraph_multi_executor_stage_profile(mx, 3, &mut p) }, CMDGRAPH_ERROR_INVALID_ARGUMENT);
    let mut n = usize::MAX;
    // SAFETY: live executor, a writable count.
    assert_eq!(unsafe { cmdgraph_multi_executor_take_messages(mx, &mut n) }, CMDGRAPH_OK);
    assert_eq!(n, 0);
    // SAFETY: live executor, not used afterwards.
    unsafe { cmdgraph_multi_executor_destroy(mx) };
}
