//! Executable-graph updates on Vulkan mirror the interpreter's, and count re-recorded
//! command buffers: scalar updates and range updates re-record nothing.

mod common;

use cmdgraph_interp::Interpreter;
use cmdgraph_ir::{ArgValue, Launch, MemRef, Pointer};
use common::*;

fn ir() -> String {
    format!(
        "{KERNELS_IR}
usm @a : f32[1000]
usm @b : f32[1000]
usm @out : f32[1000]
usm @out2 : f32[1000]

graph @g properties(updatable) {{
  dyn %s = 2.0 : f32
  dyn %src = @a
  dcg %pick active(0) {{
    kernel @scale range(1000) args(@out, @out2, 3.0)
    kernel @add2 range(1000) args(@out, @a, @out2)
  }}
  %fa = kernel @ramp range(1000) args(@a)
  %k = kernel @scale range(1000) args(%src, @out, %s) after(%fa)
  %d = dynamic %pick after(%k)
}}
"
    )
}

fn scalar(v: f64) -> ArgValue {
    ArgValue::Scalar(cmdgraph_ir::types::Literal {
        value: cmdgraph_ir::types::LitValue::Float(v),
        ty: Some(cmdgraph_ir::types::ScalarType::F32),
    })
}

#[test]
fn updates_match_interpreter_and_rerecord_only_pipeline_changes() {
    let ir = ir();
    let module = cmdgraph_ir::text::parse(&ir).unwrap();
    let b_ptr = ArgValue::Pointer(Pointer { base: MemRef::Memory(module.memory_by_name("b").unwrap()), offset: 0 });
    let bvals: Vec<f32> = (0..1000).map(|i| 1000.0 - i as f32).collect();

    let mut ex = executor(bundle(&ir, vec![], vec![]));
    let mut it = Interpreter::new(&module).unwrap();
    ex.bind_as("b", &bvals).unwrap();
    it.bind_as("b", &bvals).unwrap();
    let e = ex.finalize("g").unwrap();
    let ie = it.finalize("g").unwrap();
    let check = |ex: &cmdgraph_executor::Executor, it: &Interpreter, what: &str| {
        for name in ["out", "out2"] {
            let got: Vec<f32> = ex.read_as(name).unwrap();
            let want: Vec<f32> = it.read_as(name).unwrap();
            assert_eq!(got, want, "@{name} after {what}");
        }
        no_messages(ex);
    };
    ex.run(e).unwrap();
    it.run(ie).unwrap();
    check(&ex, &it, "first run");
    let base = ex.recorded(e).unwrap();

    ex.update_param(e, "s", scalar(5.0)).unwrap();
    it.update_param(ie, "s", scalar(5.0)).unwrap();
    ex.run(e).unwrap();
    it.run(ie).unwrap();
    check(&ex, &it, "scalar update");
    assert_eq!(ex.recorded(e).unwrap(), base, "a scalar update re-records nothing");

    ex.update_param(e, "src", b_ptr.clone()).unwrap();
    it.update_param(ie, "src", b_ptr).unwrap();
    ex.run(e).unwrap();
    it.run(ie).unwrap();
    check(&ex, &it, "pointer update");
    let after_ptr = ex.recorded(e).unwrap();
    let expect_ptr = if ex.context().update_after_bind() { base } else { base + 1 };
    assert_eq!(after_ptr, expect_ptr, "a pointer to another buffer re-records only without UPDATE_AFTER_BIND");

    ex.set_active(e, "pick", 1).unwrap();
    it.set_active(ie, "pick", 1).unwrap();
    ex.run(e).unwrap();
    it.run(ie).unwrap();
    check(&ex, &it, "dynamic command group switch");
    assert_eq!(ex.recorded(e).unwrap(), after_ptr, "a kernel-alternative switch re-records nothing");

    // Range update: only the first 500 items of %k run; the indirect command changes.
    let before: Vec<f32> = ex.read_as("out").unwrap();
    ex.update_param(e, "s", scalar(7.0)).unwrap();
    ex.update_launch(e, "k", Launch::Range(vec![500])).unwrap();
    ex.run(e).unwrap();
    let out: Vec<f32> = ex.read_as("out").unwrap();
    for i in 0..1000 {
        let want = if i < 500 { 7.0 * bvals[i] } else { before[i] };
        assert_eq!(out[i], want, "item {i} after the range update");
    }
    assert_eq!(ex.recorded(e).unwrap(), after_ptr, "a range update re-records nothing");
    no_messages(&ex);
}

/// Nodes of the stress graph: a chain, so a run lasts as long as all of them.
const STRESS_NODES: usize = 24;
/// Elements each node writes (its own slice of `@sout`).
const STRESS_ELEMS: usize = 1 << 16;

/// A chain of `STRESS_NODES` `scale` kernels, node `j` writing `@sin[i] * %s` into slice `j`
/// of `@sout`: each element of a run's output names the value of `%s` its node saw, so a
/// run whose nodes saw different updates (a torn update) shows two generations in one output.
fn stress_ir() -> String {
    let n = STRESS_NODES * STRESS_ELEMS;
    let mut g = String::new();
    for j in 0..STRESS_NODES {
        let after = if j == 0 { String::new() } else { format!(" after(%k{})", j - 1) };
        g += &format!(
            "  %k{j} = kernel @scale range({STRESS_ELEMS}) args(@sin, @sout + {}, %s){after}\n",
            j * STRESS_ELEMS * 4
        );
    }
    format!(
        "{KERNELS_IR}\nusm @sin : f32[{STRESS_ELEMS}]\nusm @sout : f32[{n}]\n\ngraph @g properties(updatable) {{\n  dyn %s = 0.0 : f32\n{g}}}\n"
    )
}

/// Updates issued while the previous run is still executing never tear it. Each iteration
/// runs generation `k`, updates `%s` to `k + 1` at once (while run `k` is in flight: the
/// update must wait for it), and only then reads the output, which must be generation `k` in
/// every element of every node. Every fourth iteration submits two runs back to back (both
/// command-buffer copies pending) with an update between them. Generations read are
/// non-decreasing. The test also shows the overlap happened: most updates took far longer
/// than an update of an idle executable, i.e. they were issued while a run was executing
/// (if the executor stopped waiting, the torn outputs fail the test instead).
#[test]
fn updates_interleaved_with_runs_never_tear() {
    let ir = stress_ir();
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    // 1..=5: small integers, so every product is exact and `out / in` recovers the generation.
    let input: Vec<f32> = (0..STRESS_ELEMS).map(|i| (1 + i % 5) as f32).collect();
    ex.bind_as("sin", &input).unwrap();
    let e = ex.finalize("g").unwrap();
    let recorded = ex.recorded(e).unwrap();

    // An update of an idle executable: what an update costs when it need not wait.
    ex.run(e).unwrap();
    ex.wait(e).unwrap();
    let t = std::time::Instant::now();
    ex.update_param(e, "s", scalar(0.0)).unwrap();
    let idle_update = t.elapsed();
    // How long one run takes on this device.
    let t = std::time::Instant::now();
    ex.run(e).unwrap();
    ex.wait(e).unwrap();
    let run_time = t.elapsed();

    // The generation of every element of the last run's output, checked to be one.
    let generation = |ex: &cmdgraph_executor::Executor, what: &str| -> u32 {
        let out: Vec<f32> = ex.read_as("sout").unwrap();
        let g = out[0] / input[0];
        for (x, v) in out.iter().enumerate() {
            let (node, i) = (x / STRESS_ELEMS, x % STRESS_ELEMS);
            assert_eq!(
                *v,
                g * input[i],
                "{what}: node %k{node} item {i} saw s = {} where node %k0 saw {g}: a torn update",
                v / input[i]
            );
        }
        g as u32
    };

    let (mut overlapped, mut updates) = (0, 0);
    let mut last = 0;
    let mut timed_update = |ex: &mut cmdgraph_executor::Executor, k: u32| {
        let t = std::time::Instant::now();
        ex.update_param(e, "s", scalar(f64::from(k))).unwrap();
        let took = t.elapsed();
        updates += 1;
        // A quarter of a run's time spent waiting: the run was executing when it began.
        if took > run_time / 4 && took > idle_update * 10 {
            overlapped += 1;
        }
    };
    let mut k = 1u32;
    timed_update(&mut ex, k);
    for it in 0..24 {
        ex.run(e).unwrap();
        if it % 4 == 3 {
            k += 1;
            timed_update(&mut ex, k);
            ex.run(e).unwrap();
        }
        // Run `k` is in flight: the update to `k + 1` must not reach it.
        timed_update(&mut ex, k + 1);
        let g = generation(&ex, &format!("iteration {it}"));
        assert_eq!(g, k, "iteration {it}: the run submitted with s = {k} read s = {g}");
        assert!(g >= last, "generations went back from {last} to {g}");
        last = g;
        k += 1;
    }
    assert!(
        overlapped * 2 >= updates,
        "only {overlapped} of {updates} updates waited for a run in flight (a run takes {run_time:?}, an idle update {idle_update:?}): the runs are too short to overlap updates"
    );
    eprintln!(
        "{overlapped} of {updates} updates overlapped a run ({run_time:?} a run, {idle_update:?} an idle update)"
    );
    assert_eq!(ex.recorded(e).unwrap(), recorded, "scalar updates re-record nothing");
    no_messages(&ex);
}

#[test]
fn bad_updates_are_errors() {
    let ir = ir();
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    let e = ex.finalize("g").unwrap();
    assert!(ex.update_param(e, "nope", scalar(1.0)).is_err());
    assert!(ex.update_param(e, "s", ArgValue::Bytes(vec![1, 2, 3, 4])).is_err());
    assert!(ex.set_active(e, "pick", 7).is_err());
    assert!(ex.update_launch(e, "k", Launch::Range(vec![10, 10])).is_err());
    assert!(ex
        .update_launch(e, "fa", Launch::NdRange { global: vec![1000], local: vec![100], offset: vec![] })
        .is_err());
    // The executable still runs correctly after rejected updates.
    ex.run(e).unwrap();
    let out: Vec<f32> = ex.read_as("out").unwrap();
    assert_eq!(out[10], 20.0);
    no_messages(&ex);
}

/// A graph without `updatable` records direct dispatches (no indirect command to rewrite):
/// the same range update still takes effect, by re-recording the node's segment once, and
/// a scalar update still re-records nothing.
#[test]
fn a_range_update_of_a_direct_dispatch_rerecords_its_segment() {
    let ir = ir().replace("graph @g properties(updatable) {", "graph @g {");
    let module = cmdgraph_ir::text::parse(&ir).unwrap();
    let bvals: Vec<f32> = (0..1000).map(|i| 0.37 * i as f32 - 11.3).collect();
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    let b_ptr = ArgValue::Pointer(Pointer { base: MemRef::Memory(module.memory_by_name("b").unwrap()), offset: 0 });
    ex.bind_as("b", &bvals).unwrap();
    let e = ex.finalize("g").unwrap();
    ex.update_param(e, "src", b_ptr).unwrap();
    ex.run(e).unwrap();
    let base = ex.recorded(e).unwrap();
    ex.update_param(e, "s", scalar(3.0)).unwrap();
    assert_eq!(ex.recorded(e).unwrap(), base, "a scalar update re-records nothing");
    let before: Vec<f32> = ex.read_as("out").unwrap();
    ex.update_launch(e, "k", Launch::Range(vec![500])).unwrap();
    assert_eq!(ex.recorded(e).unwrap(), base + 1, "the direct dispatch's segment is re-recorded");
    ex.run(e).unwrap();
    let out: Vec<f32> = ex.read_as("out").unwrap();
    for i in 0..1000 {
        let want = if i < 500 { 3.0 * bvals[i] } else { before[i] };
        assert_eq!(out[i], want, "item {i} after the range update");
    }
    // The same launch again changes no group count: nothing re-recorded.
    ex.update_launch(e, "k", Launch::Range(vec![500])).unwrap();
    assert_eq!(ex.recorded(e).unwrap(), base + 1);
    no_messages(&ex);
}
