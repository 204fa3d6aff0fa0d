//! The executor inside the application's Vulkan: on a device, queue and buffers the test
//! created itself (with its own validation messenger, synchronization validation on), runs
//! ordered by the test's timeline semaphores, results read through the test's own mapping
//! and compared with the reference interpreter.
#![allow(unsafe_code)]

mod common;

use cmdgraph_executor::ash::vk;
use cmdgraph_executor::{ContextOptions, ExecError, Executor, RunSync, SemaphoreValue};
use cmdgraph_interp::Interpreter;
use common::app_vulkan::{AppBuffer, AppVulkan};
use common::*;
use std::time::Duration;

const N: usize = 1000;
const BYTES: u64 = (N * 4) as u64;
const GUARD: u8 = 0xA5;

fn ir() -> String {
    format!(
        "{KERNELS_IR}
usm @x : f32[1000]
usm @y : f32[1000]
usm @z : f32[1000]
usm @out : f32[1000]

graph @main {{
  %s = kernel @scale range(1000) args(@x, @z, 1.71828174)
  %a = kernel @add2 range(1000) args(@z, @y, @out) after(%s)
}}

graph @switch properties(updatable) {{
  dcg %pick active(0) {{
    kernel @scale range(1000) args(@x, @out, 2.5)
    kernel @add2 range(1000) args(@x, @y, @out)
  }}
  %d = dynamic %pick
}}

graph @with_host {{
  %s = kernel @scale range(1000) args(@out, @z, -0.3183099)
  %h = host_task \"square\" access(@z read, @y write) after(%s)
  %a = kernel @add2 range(1000) args(@z, @y, @out) after(%h)
}}
"
    )
}

/// Full-precision pseudo-random floats in [-1, 1) (24 random mantissa bits).
fn random(seed: u64, n: usize) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|f| f.to_le_bytes()).collect()
}

fn floats(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn square(ctx: &mut dyn cmdgraph_interp::HostMemory) -> Result<(), cmdgraph_interp::HostError> {
    let z: Vec<f32> = ctx.read_as("z")?;
    let sq: Vec<f32> = z.iter().map(|v| v * v).collect();
    ctx.write_as("y", 0, &sq)
}

/// Where @x, @y and @out sit in the one application buffer: aligned, with guard bytes
/// between them and after the last.
fn layout(align: u64) -> ([u64; 3], u64) {
    let step = (BYTES + 64).next_multiple_of(align);
    ([0, step, 2 * step], 3 * step)
}

fn guards_intact(buf: &AppBuffer, offsets: &[u64; 3], total: u64) {
    let all = buf.read(0, total);
    for (i, b) in all.iter().enumerate() {
        let i = i as u64;
        let inside = offsets.iter().any(|&o| (o..o + BYTES).contains(&i));
        assert!(inside || *b == GUARD, "byte {i} outside the imported ranges changed to {b:#x}");
    }
}

fn assert_no_app_messages() {
    let m = AppVulkan::take_messages();
    assert!(m.is_empty(), "validation messages on the application's messenger:\n{}", m.join("\n"));
}

#[test]
fn runs_on_the_applications_device_buffers_and_semaphores() {
    let ir = ir();
    let app = AppVulkan::new();
    let (off, total) = layout(app.min_align);
    let buf = app.buffer(total);
    buf.write(0, &vec![GUARD; total as usize]);
    let info = app.create_info();
    let loaded = cmdgraph_executor::load::check(bundle(&ir, vec![], vec![])).unwrap();
    // SAFETY: the test's live instance, device and queue, kept until after the executor.
    let mut ex = unsafe { Executor::with_vulkan(loaded, &app.external(&info), &ContextOptions::default()) }.unwrap();
    assert!(ex.context().is_external());
    for (name, o) in ["x", "y", "out"].iter().zip(off) {
        // SAFETY: a live storage/transfer buffer of the device, alive past the executor.
        unsafe { ex.import_buffer(name, buf.buffer, o, BYTES) }.unwrap();
        assert!(ex.is_imported(name).unwrap());
    }
    assert!(!ex.is_imported("z").unwrap());
    let e = ex.finalize("main").unwrap();
    let (ready, done) = (app.timeline(), app.timeline());
    let sync = |v| RunSync {
        wait: vec![SemaphoreValue { semaphore: ready, value: v }],
        signal: vec![SemaphoreValue { semaphore: done, value: v }],
    };
    // SAFETY: timeline semaphores of the device; values above their current ones.
    unsafe { ex.run_with(e, &sync(1)) }.unwrap();
    // The run waits for the application: inputs written after the submission are the
    // ones the kernels read.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(app.value(done), 0, "the run did not wait for the application's semaphore");
    assert_eq!(ex.completed_runs(e).unwrap(), 0);
    let (x, y) = (random(1, N), random(2, N));
    buf.write(off[0], &bytes(&x));
    buf.write(off[1], &bytes(&y));
    app.signal(ready, 1);
    assert!(app.wait(done, 1), "the run never signalled the application's semaphore");
    let out = floats(&buf.read(off[2], BYTES));

    let module = cmdgraph_ir::text::parse(&ir).unwrap();
    let mut it = Interpreter::new(&module).unwrap();
    it.bind_as("x", &x).unwrap();
    it.bind_as("y", &y).unwrap();
    let ie = it.finalize("main").unwrap();
    it.run(ie).unwrap();
    let want: Vec<f32> = it.read_as("out").unwrap();
    assert_eq!(out, want);
    assert!(want.iter().any(|v| v.fract() != 0.0 && v.abs() > 0.01));
    // The executor reads the same bytes through the import.
    assert_eq!(ex.read_as::<f32>("out").unwrap(), want);
    guards_intact(&buf, &off, total);

    // A graph with a host task: the wait happens on the host-task thread, and the host
    // task writes @y in the application's buffer.
    ex.register_callback("square", square);
    it.register_callback("square", square);
    let h = ex.finalize("with_host").unwrap();
    // SAFETY: as above.
    unsafe { ex.run_with(h, &sync(2)) }.unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(app.value(done), 1, "the host-task run did not wait for the application's semaphore");
    app.signal(ready, 2);
    assert!(app.wait(done, 2));
    ex.wait(h).unwrap();
    let ih = it.finalize("with_host").unwrap();
    it.run(ih).unwrap();
    assert_eq!(floats(&buf.read(off[2], BYTES)), it.read_as::<f32>("out").unwrap());
    assert_eq!(floats(&buf.read(off[1], BYTES)), it.read_as::<f32>("y").unwrap());
    guards_intact(&buf, &off, total);

    // A host bind writes into the application's buffer.
    let x2 = random(3, N);
    ex.bind_as("x", &x2).unwrap();
    assert_eq!(floats(&buf.read(off[0], BYTES)), x2);

    // A graph with a dynamic command group, finalized before the rotation below: switching
    // to its other alternative after the import writes the new range.
    let sw = ex.finalize("switch").unwrap();
    let isw = it.finalize("switch").unwrap();

    // Rotation: @out moves to a second application buffer (at a non-zero offset) while both
    // executables exist. Their next runs write there; the first buffer keeps what the earlier
    // runs wrote; the bytes before the new range stay untouched.
    let before = buf.read(off[2], BYTES);
    let pad = app.min_align;
    let buf2 = app.buffer(pad + BYTES);
    buf2.write(0, &vec![GUARD; (pad + BYTES) as usize]);
    // SAFETY: the test's live storage/transfer buffer, alive past the executor.
    unsafe { ex.import_buffer("out", buf2.buffer, pad, BYTES) }.unwrap();
    ex.run(e).unwrap();
    ex.wait(e).unwrap();
    it.bind_as("x", &x2).unwrap();
    it.run(ie).unwrap();
    assert_eq!(floats(&buf2.read(pad, BYTES)), it.read_as::<f32>("out").unwrap());
    assert_eq!(buf.read(off[2], BYTES), before, "a run after the import wrote the old range");
    assert!(buf2.read(0, pad).iter().all(|&b| b == GUARD), "bytes before the new range changed");
    ex.run(h).unwrap();
    ex.wait(h).unwrap();
    it.run(ih).unwrap();
    assert_eq!(floats(&buf2.read(pad, BYTES)), it.read_as::<f32>("out").unwrap());
    assert_eq!(floats(&buf.read(off[1], BYTES)), it.read_as::<f32>("y").unwrap());
    // The alternative that was inactive at the import writes the new range as well.
    // (Activation re-prepares it anyway, so this does not isolate the re-pointing of spare
    // alternatives; it shows a switch after an import lands where it should.)
    ex.set_active(sw, "pick", 1).unwrap();
    it.set_active(isw, "pick", 1).unwrap();
    ex.run(sw).unwrap();
    ex.wait(sw).unwrap();
    it.run(isw).unwrap();
    assert_eq!(floats(&buf2.read(pad, BYTES)), it.read_as::<f32>("out").unwrap());
    assert_eq!(buf.read(off[2], BYTES), before, "a run after the import wrote the old range");

    drop(ex);
    // The executor destroyed nothing of the application's: the device, queue, buffer and
    // semaphores still work.
    app.signal(ready, 3);
    assert_eq!(app.value(ready), 3);
    // SAFETY: the test's live device.
    unsafe { app.device.device_wait_idle() }.unwrap();
    assert_eq!(floats(&buf.read(off[0], BYTES)), x2);
    app.free_semaphore(ready);
    app.free_semaphore(done);
    app.free(buf);
    app.free(buf2);
    assert_no_app_messages();
}

#[test]
fn refuses_what_it_cannot_use() {
    let ir = ir();
    let app = AppVulkan::new();
    let info = app.create_info();
    let load = || cmdgraph_executor::load::check(bundle(&ir, vec![], vec![])).unwrap();
    let opts = ContextOptions::default();

    // A device created without timeline semaphores and synchronization2 (as far as its
    // create info says) is refused before anything is created on it.
    let bare = vk::DeviceCreateInfo::default();
    let mut ext = app.external(&bare);
    // SAFETY: live handles; the executor is refused before it uses them.
    let e = unsafe { Executor::with_vulkan(load(), &ext, &opts) }.err().expect("refused");
    assert!(e.to_string().contains("timelineSemaphore"), "{e}");
    ext = app.external(&info);
    ext.queue_family = 99;
    // SAFETY: as above.
    let e = unsafe { Executor::with_vulkan(load(), &ext, &opts) }.err().expect("refused");
    assert!(e.to_string().contains("queue family 99"), "{e}");

    // SAFETY: live handles, kept until after the executor.
    let mut ex = unsafe { Executor::with_vulkan(load(), &app.external(&info), &opts) }.unwrap();
    let buf = app.buffer(4 * BYTES);
    let msg = |r: Result<(), ExecError>| r.unwrap_err().to_string();
    // SAFETY (all imports below): a live buffer of the device; every one is refused.
    let misaligned = unsafe { ex.import_buffer("x", buf.buffer, app.min_align + 4, BYTES) };
    assert!(msg(misaligned).contains("minStorageBufferOffsetAlignment"));
    let odd = unsafe { ex.import_buffer("x", buf.buffer, 2, BYTES) };
    assert!(msg(odd).contains("minStorageBufferOffsetAlignment"));
    let small = unsafe { ex.import_buffer("x", buf.buffer, 0, BYTES - 4) };
    assert!(msg(small).contains("needs 4000 bytes"));
    let unknown = unsafe { ex.import_buffer("nope", buf.buffer, 0, BYTES) };
    assert!(msg(unknown).contains("@nope"));
    let null = unsafe { ex.import_buffer("x", vk::Buffer::null(), 0, BYTES) };
    assert!(msg(null).contains("null buffer"));
    let e = ex.finalize("main").unwrap();
    let nulls = RunSync { wait: vec![SemaphoreValue { semaphore: vk::Semaphore::null(), value: 1 }], signal: vec![] };
    // SAFETY: refused before it reaches the queue.
    assert!(msg(unsafe { ex.run_with(e, &nulls) }).contains("null semaphore"));
    // Nothing was imported: the executor's own memory still serves the graph.
    assert!(!ex.is_imported("x").unwrap());
    ex.run(e).unwrap();
    ex.wait(e).unwrap();
    drop(ex);
    app.free(buf);
    assert_no_app_messages();
}
