//! A host task waits only for the device work it needs (docs/executor.md, "Host tasks and
//! overlap"): device work that does not lead to it is scheduled in a segment of its own,
//! submitted before it, and keeps running while it runs; work that touches memory it
//! declares is waited for. Checked on the default device with validation (synchronization
//! validation included): which segments each host task waits for, the results against a
//! host computation, and that the overlap shows in the wall time. The host task reads and
//! writes `host` USM, through its mapping (device memory would be staged through a transfer
//! on the queue, behind the running kernel).

mod support;

use cmdgraph_executor::HostMemory;
use std::time::{Duration, Instant};

/// Work-items of the slow kernel (each one runs `iters` dependent multiply-adds).
const ITEMS: u32 = 1 << 15;

fn module(iters: u32) -> String {
    format!(
        "
kernel @ramp(%x: buf<f32, write>) {{
  %i = global_id 0
  %f = cast %i to f32
  %third = const 0.3333333 : f32
  %v = mul %f, %third
  store %x[%i], %v
}}

kernel @spin(%x: buf<f32, read_write>, %n: u32) {{
  %i = global_id 0
  %zero = const 0 : u32
  %one = const 1 : u32
  %a = const 0.99971 : f32
  %b = const 0.0137 : f32
  %v = load %x[%i]
  %r = for %k = %zero to %n step %one carry(%s = %v) {{
    %m = mul %s, %a
    %s2 = add %m, %b
    yield %s2
  }}
  store %x[%i], %r
}}

kernel @twice(%x: buf<f32, read>, %y: buf<f32, write>) {{
  %i = global_id 0
  %v = load %x[%i]
  %r = add %v, %v
  store %y[%i], %r
}}

usm @edge : f32[64] host
usm @got : f32[64] host
usm @out : f32[64]
usm @big : f32[{ITEMS}]

graph @overlap {{
  %e = kernel @ramp range(64) args(@edge)
  %slow = kernel @spin range({ITEMS}) args(@big, {iters})
  %h = host_task \"negate\" access(@edge read, @got write) after(%e)
  %use = kernel @twice range(64) args(@got, @out) after(%h)
}}

graph @conflict {{
  %e = kernel @ramp range(64) args(@edge)
  %slow = kernel @spin range({ITEMS}) args(@big, {iters})
  %h = host_task \"negate\" access(@edge read, @got write, @big read) after(%e)
  %use = kernel @twice range(64) args(@got, @out) after(%h)
}}

graph @alone {{
  %slow = kernel @spin range({ITEMS}) args(@big, {iters})
}}
"
    )
}

/// The host task: `@got = -@edge`, after sleeping `nap` (the time the slow kernel takes).
fn register(ex: &mut cmdgraph_executor::Executor, nap: Duration) {
    ex.register_callback("negate", move |ctx: &mut dyn HostMemory| {
        std::thread::sleep(nap);
        let edge: Vec<f32> = ctx.read_as("edge")?;
        ctx.write_as("got", 0, &edge.iter().map(|v| -v).collect::<Vec<_>>())
    });
}

fn spin(mut s: f32, iters: u32) -> f32 {
    for _ in 0..iters {
        s = s * 0.99971 + 0.0137;
    }
    s
}

fn timed(ex: &mut cmdgraph_executor::Executor, id: cmdgraph_executor::ExecId) -> Duration {
    let t = Instant::now();
    ex.run(id).expect("runs");
    ex.wait(id).expect("waits");
    t.elapsed()
}

#[test]
fn a_host_task_runs_beside_device_work_it_does_not_need() {
    // Long enough on llvmpipe that the overlap is far above the noise of a 2-core machine.
    let mut iters = 2000u32;
    let (mut ex, kernel) = loop {
        let m = cmdgraph_ir::text::parse(&module(iters)).expect("parses");
        let bundle = support::compile(&m, None).expect("compiles");
        let mut ex = support::executor(&bundle).expect("executor");
        let alone = ex.finalize("alone").expect("finalizes");
        timed(&mut ex, alone);
        let kernel = (0..3).map(|_| timed(&mut ex, alone)).min().unwrap_or_default();
        if kernel >= Duration::from_millis(150) || iters >= 64_000 {
            break (ex, kernel);
        }
        iters *= 4;
    };
    register(&mut ex, kernel);
    let overlap = ex.finalize("overlap").expect("finalizes");
    let conflict = ex.finalize("conflict").expect("finalizes");

    // Which segments each host task waits for: `%e`'s only, then both.
    let waits = ex.host_task_waits(overlap).expect("waits");
    assert_eq!(waits.len(), 1);
    assert_eq!((waits[0].submitted_before, waits[0].waits_for), (2, 1), "{waits:?}");
    let waits = ex.host_task_waits(conflict).expect("waits");
    assert_eq!((waits[0].submitted_before, waits[0].waits_for), (2, 2), "{waits:?}");

    let bytes = support::random_bytes(
        cmdgraph_ir::Type::scalar(cmdgraph_ir::ScalarType::F32),
        u64::from(ITEMS),
        &mut support::Rng(7),
    );
    let start: Vec<f32> = bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    ex.bind("big", &bytes).expect("binds");
    let wall = timed(&mut ex, overlap);
    let big: Vec<f32> = ex.read_as("big").expect("reads");
    let out: Vec<f32> = ex.read_as("out").expect("reads");
    for i in [0usize, 1, 777, ITEMS as usize - 1] {
        assert_eq!(big[i].to_bits(), spin(start[i], iters).to_bits(), "big[{i}]");
    }
    for (i, o) in out.iter().enumerate() {
        let edge = i as f32 * 0.3333333;
        assert_eq!(o.to_bits(), (-edge - edge).to_bits(), "out[{i}]");
    }
    // Sequential would be the kernel, then the host task's nap of the same length.
    let serial = kernel * 2;
    assert!(
        wall.as_secs_f64() < 0.8 * serial.as_secs_f64(),
        "no overlap: {wall:?} against {kernel:?} of kernel and {kernel:?} of host task"
    );

    // Declaring the memory the slow kernel writes makes the host task wait for it.
    ex.bind("big", &bytes).expect("binds");
    let waited = timed(&mut ex, conflict);
    let big: Vec<f32> = ex.read_as("big").expect("reads");
    assert_eq!(big[777].to_bits(), spin(start[777], iters).to_bits());
    assert!(waited > kernel, "{waited:?} for a host task that waits for a {kernel:?} kernel");
    let messages = ex.context().take_messages();
    assert!(messages.is_empty(), "validation messages:\n{}", messages.join("\n"));
}
