//! Host tasks split a run into segments ordered by a timeline semaphore; their callbacks
//! see the device's results and their writes reach later kernels.

mod common;

use cmdgraph_interp::{HostError, HostMemory, Interpreter};
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

/// One host callback, written once against `cmdgraph_ir::host::HostMemory`, registered
/// unchanged with both runtimes (issue 19: each used to have its own context type, so a
/// host task had to be written twice). It reads every declared readable object through the
/// trait (names, modes and sizes from the context, not hard-coded) and writes a checksum
/// per run into `@h`.
fn checksum_task(
    seen: std::sync::Arc<std::sync::Mutex<Vec<Vec<String>>>>,
) -> impl FnMut(&mut dyn HostMemory) -> Result<(), HostError> + Send {
    let mut run = 0u32;
    move |ctx| {
        run += 1;
        let declared = ctx.declared();
        seen.lock().unwrap().push(declared.clone());
        let mut sum = 0f32;
        for name in &declared {
            if ctx.mode(name).is_some_and(|m| m.reads()) {
                let bytes = ctx.size(name)?;
                let values: Vec<f32> = ctx.read_as(name)?;
                assert_eq!(values.len() as u64 * 4, bytes);
                sum += values.iter().sum::<f32>();
            }
        }
        ctx.write_as("@h", 0, &vec![sum + run as f32; 256])
    }
}

#[test]
fn one_callback_runs_on_the_interpreter_and_the_executor() {
    let ir = ir();
    let (on_device, on_interp) = (Default::default(), Default::default());
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    ex.register_callback("negate", checksum_task(std::sync::Arc::clone(&on_device)));
    let e = ex.finalize("g").unwrap();
    ex.run(e).unwrap();
    ex.run(e).unwrap();
    let got: Vec<f32> = ex.read_as("out").unwrap();
    no_messages(&ex);

    let module = cmdgraph_ir::text::parse(&ir).unwrap();
    let mut it = Interpreter::new(&module).unwrap();
    it.register_callback("negate", checksum_task(std::sync::Arc::clone(&on_interp)));
    let ie = it.finalize("g").unwrap();
    it.run(ie).unwrap();
    it.run(ie).unwrap();
    let want: Vec<f32> = it.read_as("out").unwrap();
    assert_eq!(got, want);
    // ramp writes i, so the sum is 0 + ... + 255 = 32640; the second run adds 2.
    assert_eq!(got[0], (32640.0 + 2.0) * 3.0);
    // Both contexts list the same declared memory, with sigils, in list order.
    let (d, i) = (on_device.lock().unwrap().clone(), on_interp.lock().unwrap().clone());
    assert_eq!(d, i);
    assert_eq!(d[0], ["@a", "@h"]);
}

/// An access outside the node's list fails the run on the executor even when the callback
/// swallows the error, as it does on the interpreter: both report the same violation.
#[test]
fn a_swallowed_violation_fails_the_run_on_both_runtimes() {
    let ir = ir();
    fn sneaky(ctx: &mut dyn HostMemory) -> Result<(), HostError> {
        let _ = ctx.read("out"); // not declared: the error is ignored
        let _ = ctx.write("a", 0, &[0; 4]); // declared read-only: ignored too
        Ok(())
    }
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    ex.register_callback("negate", sneaky);
    let e = ex.finalize("g").unwrap();
    ex.run(e).unwrap();
    let device = ex.wait(e).expect_err("the executor reports the violation at wait").to_string();

    let module = cmdgraph_ir::text::parse(&ir).unwrap();
    let mut it = Interpreter::new(&module).unwrap();
    it.register_callback("negate", sneaky);
    let ie = it.finalize("g").unwrap();
    let interp = it.run(ie).expect_err("the interpreter refuses the run").to_string();
    for m in [&device, &interp] {
        assert!(m.contains("out is not in the node's access list"), "{m}");
        assert!(!m.contains("declared `read`"), "the first violation is the one reported: {m}");
    }
}

/// A callback that holds past the deadline: `wait` (and what waits for the host-task thread,
/// such as `read`) returns `ExecError::Timeout` at the deadline instead of blocking; once
/// the callback returns, waiting again completes and the results are the callback's.
#[test]
fn a_callback_holding_past_the_deadline_ends_the_wait_there() {
    const DEADLINE: std::time::Duration = std::time::Duration::from_millis(500);
    let ir = ir();
    let loaded = cmdgraph_executor::load::check(bundle(&ir, vec![], vec![])).unwrap();
    let opts = cmdgraph_executor::ContextOptions { validation: true, timeout: Some(DEADLINE), ..Default::default() };
    let mut ex = cmdgraph_executor::Executor::new(loaded, &opts).unwrap();
    let (go, held) = std::sync::mpsc::channel::<()>();
    let held = std::sync::Mutex::new(held);
    ex.register_callback("negate", move |ctx| {
        // Never forever: a test that fails before letting go still ends.
        let _ = held.lock().unwrap().recv_timeout(std::time::Duration::from_secs(60));
        let a: Vec<f32> = ctx.read_as("a")?;
        let neg: Vec<f32> = a.iter().map(|v| -v).collect();
        ctx.write_as("h", 0, &neg)
    });
    let e = ex.finalize("g").unwrap();
    ex.run(e).unwrap();
    let started = std::time::Instant::now();
    let err = ex.wait(e).expect_err("a held callback let the wait finish");
    assert!(matches!(err, cmdgraph_executor::ExecError::Timeout { after, .. } if after == DEADLINE), "{err}");
    assert!(err.to_string().contains("host-task thread"), "{err}");
    assert!(started.elapsed() < DEADLINE * 8, "{:?}", started.elapsed());
    assert!(ex.read("out").is_err(), "a read waits for the host-task thread too");
    go.send(()).unwrap();
    ex.wait(e).unwrap();
    let got: Vec<f32> = ex.read_as("out").unwrap();
    assert_eq!(got[5], -15.0);
    no_messages(&ex);
}

/// Runs submitted straight to the queue wait for nothing on the timeline (queue order and each
/// segment's opening barrier order them), while a run that follows one made by the host-task
/// thread (whose end may be signalled from the host) waits for it: an executable run back to
/// back, then through the busy host-task thread, then straight again, accumulates exactly what
/// the interpreter does, under synchronization validation.
#[test]
fn back_to_back_runs_around_the_host_task_thread_accumulate_in_order() {
    use std::sync::mpsc::channel;
    use std::time::Duration;
    let ir = format!(
        "{KERNELS_IR}
usm @acc : f32[256]
usm @step : f32[256]
usm @tmp : f32[256]
usm @h : f32[256]

graph @add {{
  %k1 = kernel @add2 range(256) args(@acc, @step, @tmp)
  %k2 = kernel @scale range(256) args(@tmp, @acc, 1.0) after(%k1)
}}

graph @hold {{
  %host = host_task \"hold\" access(@h write)
}}
"
    );
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    let (go_tx, go_rx) = channel::<()>();
    ex.register_callback("hold", move |ctx| {
        go_rx.recv_timeout(Duration::from_secs(20)).map_err(|e| format!("never released: {e}"))?;
        ctx.write_as("h", 0, &[1.0f32])
    });
    let module = cmdgraph_ir::text::parse(&ir).unwrap();
    let mut it = Interpreter::new(&module).unwrap();
    let (acc, step) = (random(256, 11), random(256, 12));
    for (name, v) in [("acc", &acc), ("step", &step)] {
        ex.bind_as(name, v).unwrap();
        it.bind_as(name, v).unwrap();
    }
    let (add, hold, iadd) = (ex.finalize("add").unwrap(), ex.finalize("hold").unwrap(), it.finalize("add").unwrap());
    for _ in 0..4 {
        ex.run(add).unwrap();
    }
    ex.run(hold).unwrap();
    // The host-task thread is busy: these runs go through it, after the held one.
    for _ in 0..3 {
        ex.run(add).unwrap();
    }
    go_tx.send(()).unwrap();
    ex.wait(hold).unwrap();
    ex.wait(add).unwrap();
    // Straight to the queue again; the first waits for the thread's last run on the timeline.
    for _ in 0..5 {
        ex.run(add).unwrap();
    }
    ex.wait(add).unwrap();
    for _ in 0..12 {
        it.run(iadd).unwrap();
    }
    let (got, want): (Vec<f32>, Vec<f32>) = (ex.read_as("acc").unwrap(), it.read_as("acc").unwrap());
    assert_eq!(
        got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    assert_ne!(got, acc, "the runs changed the accumulator");
    no_messages(&ex);
}
