//! Runs have a deadline (issue 18): a kernel that runs far longer than
//! `ContextOptions::timeout` makes `wait` return `ExecError::Timeout` at the deadline instead
//! of blocking; waiting again returns once the work is done and the executor runs graphs
//! correctly afterwards; a run with host tasks times out the same way; an executor dropped
//! while its run is still going returns from `drop` (its device objects are leaked, not
//! destroyed under the running kernel).
//!
//! The long kernel is a loop of `n` dependent float operations per work-item (`acc = acc *
//! 0.5 + 1`, which reaches 2.0 exactly and stays there), every item storing to `x[i % 64]`.
//! llvmpipe stops a work-item's loops after 65535 iterations in all (one counter per
//! invocation, docs/executor.md), so the length comes from the number of
//! work-items: each test first times a short launch and picks the launch size for about
//! [`LONG`] on this machine.

mod common;

use cmdgraph_executor::{ContextOptions, ExecError, Executor};
use cmdgraph_ir::bundle::{ArgField, ArgFieldKind, ArgLayout, CompiledKernel, MemorySlot};
use common::*;
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The length the long run is calibrated to.
const LONG: Duration = Duration::from_secs(10);
/// The long run of the drop test: long enough that a `drop` waiting for it (about 18 s) is
/// told apart from one that gives up at the deadlines (about 4 s).
const LONGER: Duration = Duration::from_secs(20);
/// The deadline of the tests' contexts.
const DEADLINE: Duration = Duration::from_secs(2);

/// One test at a time: the long kernel occupies llvmpipe's threads, which would make the
/// other tests' calibration (and deadlines) meaningless.
static SERIAL: Mutex<()> = Mutex::new(());

const SPIN_ASM: &str = r#"OpCapability Shader
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main" %gid %args %b0
OpExecutionMode %main LocalSize 64 1 1
OpDecorate %gid BuiltIn GlobalInvocationId
OpDecorate %arr_u32 ArrayStride 4
OpDecorate %arr_f32 ArrayStride 4
OpDecorate %Args Block
OpMemberDecorate %Args 0 Offset 0
OpMemberDecorate %Args 0 NonWritable
OpDecorate %FBuf Block
OpMemberDecorate %FBuf 0 Offset 0
OpDecorate %args DescriptorSet 0
OpDecorate %args Binding 0
OpDecorate %b0 DescriptorSet 0
OpDecorate %b0 Binding 1
%void = OpTypeVoid
%fn = OpTypeFunction %void
%uint = OpTypeInt 32 0
%float = OpTypeFloat 32
%bool = OpTypeBool
%v3uint = OpTypeVector %uint 3
%ptr_in_v3 = OpTypePointer Input %v3uint
%gid = OpVariable %ptr_in_v3 Input
%arr_u32 = OpTypeRuntimeArray %uint
%arr_f32 = OpTypeRuntimeArray %float
%Args = OpTypeStruct %arr_u32
%FBuf = OpTypeStruct %arr_f32
%ptr_args = OpTypePointer StorageBuffer %Args
%ptr_fbuf = OpTypePointer StorageBuffer %FBuf
%ptr_u32 = OpTypePointer StorageBuffer %uint
%ptr_f32 = OpTypePointer StorageBuffer %float
%args = OpVariable %ptr_args StorageBuffer
%b0 = OpVariable %ptr_fbuf StorageBuffer
%c0 = OpConstant %uint 0
%c1 = OpConstant %uint 1
%uint_8 = OpConstant %uint 8
%uint_10 = OpConstant %uint 10
%uint_63 = OpConstant %uint 63
%half = OpConstant %float 0.5
%one = OpConstant %float 1
%main = OpFunction %void None %fn
%entry = OpLabel
%g = OpLoad %v3uint %gid
%i = OpCompositeExtract %uint %g 0
%psize = OpAccessChain %ptr_u32 %args %c0 %c0
%size = OpLoad %uint %psize
%pn = OpAccessChain %ptr_u32 %args %c0 %uint_10
%n = OpLoad %uint %pn
%inb = OpULessThan %bool %i %size
OpSelectionMerge %end None
OpBranchConditional %inb %body %end
%body = OpLabel
%fi = OpConvertUToF %float %i
OpBranch %header
%header = OpLabel
%k = OpPhi %uint %c0 %body %k1 %cont
%acc = OpPhi %float %fi %body %acc1 %cont
%more = OpULessThan %bool %k %n
OpLoopMerge %after %cont None
OpBranchConditional %more %loop %after
%loop = OpLabel
%m = OpFMul %float %acc %half
%acc1 = OpFAdd %float %m %one
OpBranch %cont
%cont = OpLabel
%k1 = OpIAdd %uint %k %c1
OpBranch %header
%after = OpLabel
%po = OpAccessChain %ptr_u32 %args %c0 %uint_8
%o = OpLoad %uint %po
%slot = OpBitwiseAnd %uint %i %uint_63
%x = OpIAdd %uint %o %slot
%pout = OpAccessChain %ptr_f32 %b0 %c0 %x
OpStore %pout %acc
OpBranch %end
%end = OpLabel
OpReturn
OpFunctionEnd
"#;

/// `@spin(%x, %n)`: the loop above, `%n` iterations per work-item (at most 65535 on
/// llvmpipe, all loops of the work-item together), 64 items per group, storing to `%x[i % 64]`.
fn spin() -> CompiledKernel {
    CompiledKernel {
        kernel: "spin".into(),
        entry: "main".into(),
        workgroup_size: [64, 1, 1],
        items_per_invocation: 1,
        spirv: assemble(SPIN_ASM),
        layout: ArgLayout {
            block_size: 44,
            fields: vec![
                ArgField { offset: 32, kind: ArgFieldKind::Buffer { slot: 0, elem_bytes: 4 } },
                ArgField { offset: 40, kind: ArgFieldKind::Value { bytes: 4 } },
            ],
            slots: vec![MemorySlot::Param { param: 0, writes: true }],
        },
    }
}

/// The IR: `@long` spins 65535 iterations on each of `items` work-items, `@quick` one
/// iteration on 64, and `@hosted`, `@quick_hosted` are those followed by a host task.
fn ir(items: u64) -> String {
    format!(
        "{KERNELS_IR}
kernel @spin(%x: buf<f32, write>, %n: u32) {{
  %i = global_id 0
  %c = const 64 : u32
  %m = rem %i, %c
  %f = cast %m to f32
  store %x[%m], %f
}}

usm @x : f32[64]
usm @y : f32[64]

graph @long {{
  %k = kernel @spin range({items}) args(@x, 65535)
}}

graph @quick {{
  %k = kernel @spin range(64) args(@y, 1)
}}

graph @hosted {{
  %k = kernel @spin range({items}) args(@x, 65535)
  %h = host_task \"seen\" access(@x read) after(%k)
}}

graph @quick_hosted {{
  %k = kernel @spin range(64) args(@y, 1)
  %h = host_task \"seen\" access(@y read) after(%k)
}}
"
    )
}

fn executor_with(items: u64, timeout: Option<Duration>) -> Executor {
    let loaded = cmdgraph_executor::load::check(bundle(&ir(items), vec![spin()], vec![])).expect("bundle loads");
    Executor::new(loaded, &ContextOptions { validation: true, timeout, ..Default::default() })
        .expect("Vulkan device (llvmpipe) with validation layers")
}

/// Work-items for a run of about `target`: times a short launch (no deadline).
fn calibrate(target: Duration) -> u64 {
    let probe = 64 * 64;
    let mut ex = executor_with(probe, None);
    let e = ex.finalize("long").unwrap();
    ex.run(e).unwrap();
    ex.wait(e).unwrap();
    // Twice: the first run includes the pipeline's first use.
    let t = Instant::now();
    ex.run(e).unwrap();
    ex.wait(e).unwrap();
    let per_item = t.elapsed().as_secs_f64() / probe as f64;
    // Whole groups, at most the 65535 groups of one dimension every device allows.
    let groups = (target.as_secs_f64() / per_item.max(1e-12) / 64.0).clamp(1.0, 65535.0);
    eprintln!("{probe} items: {:?}; {groups:.0} groups of 64 for {target:?}", t.elapsed());
    64 * groups as u64
}

/// `wait` of a run past the deadline.
fn expect_timeout(r: Result<(), ExecError>, started: Instant) {
    let waited = started.elapsed();
    match r {
        Err(ExecError::Timeout { what, after }) => {
            assert_eq!(after, DEADLINE);
            assert!(what.contains("graph run"), "{what}");
            let shown = ExecError::Timeout { what, after }.to_string();
            assert!(shown.starts_with("timed out after 2s waiting for"), "{shown}");
            assert!(shown.contains("--timeout"), "{shown}");
        }
        other => panic!("a run of {LONG:?} or more with a {DEADLINE:?} deadline: {other:?} after {waited:?}"),
    }
    assert!(waited >= DEADLINE - Duration::from_millis(50), "returned before the deadline: {waited:?}");
    assert!(waited < Duration::from_secs(30), "returned long after the deadline: {waited:?}");
}

#[test]
fn a_run_past_the_deadline_times_out_and_the_executor_stays_usable() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let n = calibrate(LONG);
    let mut ex = executor_with(n, Some(DEADLINE));
    let long = ex.finalize("long").unwrap();
    let quick = ex.finalize("quick").unwrap();
    let started = Instant::now();
    ex.run(long).unwrap();
    expect_timeout(ex.wait(long), started);
    // Waiting again: once the run is done (about LONG), `wait` returns Ok.
    let mut tries = 0;
    while let Err(e) = ex.wait(long) {
        assert!(matches!(e, ExecError::Timeout { .. }), "{e}");
        tries += 1;
        assert!(tries < 60, "the run did not end in {:?}", started.elapsed());
    }
    let x: Vec<f32> = ex.read_as("x").unwrap();
    assert!(x.iter().all(|&v| v == 2.0), "{x:?}");
    // The device is usable: another graph runs and gives its results.
    ex.run(quick).unwrap();
    ex.wait(quick).unwrap();
    let y: Vec<f32> = ex.read_as("y").unwrap();
    let want: Vec<f32> = (0..64).map(|i| i as f32 * 0.5 + 1.0).collect();
    assert_eq!(y, want);
    no_messages(&ex);
}

#[test]
fn a_run_with_a_host_task_times_out_and_skips_the_host_task() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let n = calibrate(LONG);
    let mut ex = executor_with(n, Some(DEADLINE));
    let (tx, rx) = channel::<()>();
    let tx = Mutex::new(tx);
    ex.register_callback("seen", move |_| {
        let _ = tx.lock().map(|t| t.send(()));
        Ok(())
    });
    let hosted = ex.finalize("hosted").unwrap();
    let quick = ex.finalize("quick_hosted").unwrap();
    let started = Instant::now();
    ex.run(hosted).unwrap();
    // The worker gives up on the kernel at the deadline; `wait` first waits for the worker
    // and then for the timeline, which the queue releases only after the kernel.
    let r = ex.wait(hosted);
    assert!(matches!(r, Err(ExecError::Timeout { .. })), "{r:?} after {:?}", started.elapsed());
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
    let mut tries = 0;
    while let Err(e) = ex.wait(hosted) {
        assert!(matches!(e, ExecError::Timeout { .. }), "{e}");
        tries += 1;
        assert!(tries < 60, "the run did not end in {:?}", started.elapsed());
    }
    assert!(rx.try_recv().is_err(), "the host task of a run that timed out was called");
    // The worker is usable: a short run reaches its host task.
    ex.run(quick).unwrap();
    ex.wait(quick).unwrap();
    assert!(rx.recv_timeout(Duration::from_secs(5)).is_ok(), "the host task did not run");
    let y: Vec<f32> = ex.read_as("y").unwrap();
    assert_eq!(y[63], 63.0 * 0.5 + 1.0);
    no_messages(&ex);
}

#[test]
fn an_executor_dropped_during_a_run_past_the_deadline_returns_from_drop() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let n = calibrate(LONGER);
    let started = Instant::now();
    // On another thread (the executor is not `Send`, so all of it), so a hang in `drop`
    // fails the test instead of blocking it.
    let (tx, rx) = channel();
    let worker = std::thread::spawn(move || {
        let mut ex = executor_with(n, Some(DEADLINE));
        let long = ex.finalize("long").unwrap();
        let run_started = Instant::now();
        ex.run(long).unwrap();
        expect_timeout(ex.wait(long), run_started);
        let t = Instant::now();
        drop(ex);
        let _ = tx.send(t.elapsed());
    });
    let took = match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(took) => took,
        Err(RecvTimeoutError::Disconnected) => match worker.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("the thread sends before it ends"),
        },
        Err(RecvTimeoutError::Timeout) => panic!("no timeout, or drop did not return, within 60 s"),
    };
    // Bounded waits for idle in the executor and the context, then the leak.
    assert!(took < Duration::from_secs(8), "drop took {took:?}");
    // Let the leaked kernel end before the next test calibrates.
    std::thread::sleep(LONGER.saturating_sub(started.elapsed()) + Duration::from_secs(1));
}
