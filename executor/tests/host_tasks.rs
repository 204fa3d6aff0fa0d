//! Host tasks split a run into segments ordered by a timeline semaphore; their callbacks
//! see the device's results and their writes reach later kernels.

mod common;

use cmdgraph_interp::{HostError, Interpreter};
use common::*;

fn ir() -> String {
    format!(
        "{KERNELS_IR}
usm @a : f32[256]
usm @h : f32[256]
usm @out : f32[256]

graph @g {{
  %fa = kernel @ramp range(256) args(@a)
  %host = host_task \"negate\" access(@a read, @h write) after(%fa)
  %k = kernel @scale range(256) args(@h, @out, 3.0) after(%host)
}}
"
    )
}

#[test]
fn host_task_between_device_segments_matches_interpreter() {
    let ir = ir();
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    ex.register_callback("negate", |ctx| {
        let a: Vec<f32> = ctx.read_as("a")?;
        let neg: Vec<f32> = a.iter().map(|v| -v).collect();
        ctx.write_as("h", 0, &neg)
    });
    let e = ex.finalize("g").unwrap();
    // Two device segments around the host task: two command buffers.
    assert_eq!(ex.recorded(e).unwrap(), 2);
    ex.run(e).unwrap();
    ex.run(e).unwrap();
    let got: Vec<f32> = ex.read_as("out").unwrap();
    no_messages(&ex);

    let module = cmdgraph_ir::text::parse(&ir).unwrap();
    let mut it = Interpreter::new(&module).unwrap();
    it.register_callback("negate", |ctx| {
        let a: Vec<f32> = ctx.read_as("a")?;
        let neg: Vec<f32> = a.iter().map(|v| -v).collect();
        ctx.write_as("h", 0, &neg).map_err(|e: HostError| e)
    });
    let ie = it.finalize("g").unwrap();
    it.run(ie).unwrap();
    it.run(ie).unwrap();
    let want: Vec<f32> = it.read_as("out").unwrap();
    assert_eq!(got, want);
    assert_eq!(got[5], -15.0);
}

#[test]
fn host_task_errors_name_the_node() {
    let ir = ir();
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    let e = ex.finalize("g").unwrap();
    let err = ex.run(e).unwrap_err().to_string();
    assert!(err.contains("%host") && err.contains("negate"), "{err}");
    ex.register_callback("negate", |ctx| ctx.write_as("a", 0, &[1.0f32]));
    // The host task runs on the host-task thread: its failure is reported by `wait`, once,
    // and the executable runs again afterwards.
    ex.run(e).unwrap();
    let err = ex.wait(e).unwrap_err().to_string();
    assert!(err.contains("declared") && err.contains("%host"), "{err}");
    ex.wait(e).unwrap();
    ex.register_callback("negate", |ctx| ctx.write_as("h", 0, &[1.0f32]));
    ex.run(e).unwrap();
    ex.wait(e).unwrap();
    assert_eq!(ex.read_as::<f32>("out").unwrap()[0], 3.0);
    no_messages(&ex);
}

/// `run` returns while the host task is still running; later work waits for it: the device
/// segment after it (timeline), the next run of the same executable (one queue of runs), and
/// reads (which wait for the host-task thread).
#[test]
fn run_returns_before_the_host_task_finishes() {
    use std::sync::mpsc::channel;
    use std::time::Duration;
    let ir = ir();
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    let (go_tx, go_rx) = channel::<()>();
    let (started_tx, started_rx) = channel::<u32>();
    let mut calls = 0u32;
    ex.register_callback("negate", move |ctx| {
        calls += 1;
        started_tx.send(calls).map_err(|e| e.to_string())?;
        // Blocks until the test lets it go (bounded, so a bug fails instead of hanging).
        go_rx.recv_timeout(Duration::from_secs(20)).map_err(|e| format!("never released: {e}"))?;
        let a: Vec<f32> = ctx.read_as("a")?;
        ctx.write_as("h", 0, &a.iter().map(|v| -v * calls as f32).collect::<Vec<_>>())
    });
    let e = ex.finalize("g").unwrap();
    ex.run(e).unwrap();
    ex.run(e).unwrap();
    // Both runs were submitted while the first host task is blocked.
    assert_eq!(started_rx.recv_timeout(Duration::from_secs(20)).unwrap(), 1);
    assert!(started_rx.try_recv().is_err(), "the second run's host task waits for the first");
    go_tx.send(()).unwrap();
    assert_eq!(started_rx.recv_timeout(Duration::from_secs(20)).unwrap(), 2);
    go_tx.send(()).unwrap();
    ex.wait(e).unwrap();
    let out: Vec<f32> = ex.read_as("out").unwrap();
    // The second run's host task (calls = 2) fed the last kernel: out = 3 · (-2 · i).
    assert_eq!(out[5], -30.0);
    no_messages(&ex);
}
