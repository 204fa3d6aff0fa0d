//! One runtime interface, two implementations (`cmdgraph_ir::runtime::Runtime`, issue 19):
//! the same driver code, holding only a `&mut dyn Runtime`, runs one module on the reference
//! interpreter and on the Vulkan executor (llvmpipe in CI, validation on), and every user
//! memory object ends byte-identical. The driver binds full-precision random inputs, runs a
//! graph with a host task, a dynamic parameter and a dynamic command group, updates both
//! between submissions, and checks that an update never reaches a run submitted before it.

mod common;

use cmdgraph_interp::Interpreter;
use cmdgraph_ir::data::{from_bytes, to_bytes};
use cmdgraph_ir::runtime::{host_task, Runtime};
use cmdgraph_ir::types::{LitValue, Literal, ScalarType};
use cmdgraph_ir::ArgValue;
use common::*;

fn ir() -> String {
    format!(
        "{KERNELS_IR}
usm @x : f32[1000]
usm @y : f32[1000]
usm @z : f32[1000]
usm @h : f32[1000]

graph @g properties(updatable) {{
  dyn %s = 2.0 : f32
  dcg %pick active(0) {{
    kernel @scale range(1000) args(@x, @y, %s)
    kernel @add2 range(1000) args(@x, @h, @y)
  }}
  %host = host_task \"fold\" access(@x read, @y read, @h read_write)
  %d = dynamic %pick after(%host)
  %k = kernel @add2 range(1000) args(@y, @x, @z) after(%d)
}}
"
    )
}

fn scalar(v: f32) -> ArgValue {
    ArgValue::Scalar(Literal { ty: Some(ScalarType::F32), value: LitValue::Float(f64::from(v)) })
}

/// Deterministic full-precision floats (xorshift; not multiples of a power of two).
fn random(n: usize, mut seed: u64) -> Vec<f32> {
    (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 40) as f32 / (1u64 << 24) as f32 * 4.0 - 2.0
        })
        .collect()
}

/// Everything a caller does, through the trait only: returns the user memory after each of
/// the two waits (in declaration order) and `y[7]` as each run's host task saw it, i.e. the
/// previous run's result.
fn drive(rt: &mut dyn Runtime) -> (Vec<Vec<Vec<u8>>>, Vec<f32>) {
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log_in = std::sync::Arc::clone(&log);
    rt.bind("x", &to_bytes(&random(1000, 0x9e37_79b9_7f4a_7c15))).unwrap();
    rt.bind("h", &to_bytes(&random(1000, 0x2545_f491_4f6c_dd1d))).unwrap();
    // The host task adds x into h each run, so each run's result depends on how many ran.
    rt.register_host_task(
        "fold",
        host_task(move |ctx| {
            let y: Vec<f32> = ctx.read_as("@y")?;
            log_in.lock().unwrap().push(y[7]);
            let x: Vec<f32> = ctx.read_as("@x")?;
            let h: Vec<f32> = ctx.read_as("@h")?;
            let sum: Vec<f32> = h.iter().zip(&x).map(|(a, b)| a + b).collect();
            ctx.write_as("@h", 0, &sum)
        }),
    );
    let e = rt.finalize("g").unwrap();
    let snapshot = |rt: &mut dyn Runtime| ["x", "y", "z", "h"].map(|m| rt.read(m).unwrap()).to_vec();
    let mut seen = Vec::new();
    rt.submit(e).unwrap();
    // Updates after a submission: the run already submitted keeps s = 2 and alternative 0.
    rt.update_param(e, "s", scalar(0.737_512_3)).unwrap();
    rt.submit(e).unwrap();
    rt.set_active(e, "pick", 1).unwrap();
    rt.submit(e).unwrap();
    rt.wait(e).unwrap();
    seen.push(snapshot(rt));
    rt.update_param(e, "s", scalar(-1.25)).unwrap();
    rt.set_active(e, "pick", 0).unwrap();
    rt.submit(e).unwrap();
    rt.wait(e).unwrap();
    seen.push(snapshot(rt));
    rt.drop_exec(e).unwrap();
    let log = log.lock().unwrap().clone();
    (seen, log)
}

#[test]
fn one_driver_gives_identical_memory_on_both_runtimes() {
    let ir = ir();
    let module = cmdgraph_ir::text::parse(&ir).unwrap();
    let mut interp = Interpreter::new(&module).unwrap();
    let mut device = executor(bundle(&ir, vec![], vec![]));
    assert_eq!(Runtime::describe(&interp), "reference interpreter");
    assert!(Runtime::describe(&device).ends_with("(Vulkan)"));
    let (want, want_log) = drive(&mut interp);
    let (got, log) = drive(&mut device);
    no_messages(&device);
    assert_eq!(got, want, "memory differs between the executor and the interpreter");
    assert_eq!(log, want_log);
    // Each run saw exactly the updates made before its submission: run 1 s = 2, run 2
    // s = 0.7375123 (updated after run 1 was submitted), run 3 alternative 1, run 4 s = -1.25
    // (seen by nobody: no fifth run).
    let x7 = from_bytes::<f32>(&got[0][0])[7];
    let h1 = random(1000, 0x2545_f491_4f6c_dd1d)[7] + x7;
    let h3 = h1 + x7 + x7;
    assert_eq!(log, [0.0, x7 * 2.0, x7 * 0.737_512_3, x7 + h3]);
    // The updates took effect where the driver says: after the fourth run `@y` is x * -1.25
    // (alternative 0 with the last value), not x * 2 or x * 0.7375123.
    let x: Vec<f32> = from_bytes(&got[1][0]);
    let y: Vec<f32> = from_bytes(&got[1][1]);
    assert_eq!(y[7], x[7] * -1.25);
    // After the third run `@y` was alternative 1 (x + h after three folds).
    let h3: Vec<f32> = from_bytes(&got[0][3]);
    let y3: Vec<f32> = from_bytes(&got[0][1]);
    assert_eq!(y3[9], x[9] + h3[9]);
}

#[test]
fn a_failing_run_is_reported_by_wait_on_both_runtimes() {
    let ir = ir();
    let module = cmdgraph_ir::text::parse(&ir).unwrap();
    let mut interp = Interpreter::new(&module).unwrap();
    let mut device = executor(bundle(&ir, vec![], vec![]));
    for rt in [&mut interp as &mut dyn Runtime, &mut device] {
        rt.register_host_task("fold", host_task(|ctx| ctx.write("@x", 0, &[0; 4])));
        let e = rt.finalize("g").unwrap();
        rt.submit(e).unwrap();
        let err = rt.wait(e).unwrap_err().to_string();
        assert!(err.contains("declared `read`") && err.contains(&rt.describe()), "{err}");
        // Reported once: the next wait is clean, and the executable runs again.
        rt.wait(e).unwrap();
    }
}
