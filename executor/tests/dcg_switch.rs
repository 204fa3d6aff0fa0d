//! Switching a dynamic command group between kernel alternatives re-records nothing (every
//! kernel alternative is recorded at finalize; the inactive ones dispatch (0, 0, 0) groups),
//! and the outputs after any sequence of switches and parameter updates are the
//! interpreter's. `run` walks a plan built at finalize: its work does not grow with N.

mod common;

use cmdgraph_interp::Interpreter;
use cmdgraph_ir::{ArgValue, Launch, MemRef, Pointer};
use common::*;
use std::fmt::Write as _;

fn ir() -> String {
    format!(
        "{KERNELS_IR}
usm @a : f32[1000]
usm @b : f32[1000]
usm @c : f32[1000]
usm @out : f32[1000]
usm @out2 : f32[1000]

graph @g properties(updatable) {{
  dyn %s = 2.0 : f32
  dyn %t = 3.0 : f32
  dyn %src = @a
  dcg %pick active(0) {{
    kernel @scale range(1000) args(@a, @out, %s)
    kernel @add2 range(1000) args(%src, @b, @out)
    kernel @scale range(500) args(@b, @out, %t)
  }}
  dcg %two active(1) {{
    kernel @scale range(1000) args(@out, @out2, %t)
    kernel @add2 range(1000) args(@out, @a, @out2)
  }}
  %fa = kernel @ramp range(1000) args(@a)
  %fb = kernel @scale range(1000) args(@a, @b, %t) after(%fa)
  %d = dynamic %pick after(%fb)
  %e = dynamic %two after(%d)
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

/// One change made to both the executor and the interpreter.
enum Op {
    Switch(&'static str, u32),
    Param(&'static str, ArgValue),
}

#[test]
fn kernel_alternative_switches_rerecord_nothing_and_match_interpreter() {
    let ir = ir();
    let module = cmdgraph_ir::text::parse(&ir).unwrap();
    let c_ptr = ArgValue::Pointer(Pointer { base: MemRef::Memory(module.memory_by_name("c").unwrap()), offset: 0 });
    let cvals: Vec<f32> = (0..1000).map(|i| 0.5 * i as f32 - 7.0).collect();
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    let mut it = Interpreter::new(&module).unwrap();
    ex.bind_as("c", &cvals).unwrap();
    it.bind_as("c", &cvals).unwrap();
    let e = ex.finalize("g").unwrap();
    let ie = it.finalize("g").unwrap();
    let base = ex.recorded(e).unwrap();
    let ops = [
        Op::Switch("pick", 1),
        Op::Switch("two", 0),
        // %t changes while %pick's third alternative is inactive: it must see the value.
        Op::Param("t", scalar(-1.5)),
        Op::Switch("pick", 2),
        Op::Switch("two", 1),
        Op::Switch("pick", 0),
        Op::Param("s", scalar(4.0)),
        Op::Switch("pick", 0),
        Op::Switch("pick", 2),
        Op::Switch("pick", 1),
        Op::Switch("two", 0),
    ];
    for (step, op) in ops.iter().enumerate() {
        match op {
            Op::Switch(g, i) => {
                ex.set_active(e, g, *i).unwrap();
                it.set_active(ie, g, *i).unwrap();
            }
            Op::Param(p, v) => {
                ex.update_param(e, p, v.clone()).unwrap();
                it.update_param(ie, p, v.clone()).unwrap();
            }
        }
        ex.run(e).unwrap();
        it.run(ie).unwrap();
        for name in ["out", "out2"] {
            let got: Vec<f32> = ex.read_as(name).unwrap();
            let want: Vec<f32> = it.read_as(name).unwrap();
            assert_eq!(got, want, "@{name} after step {step}");
        }
        assert_eq!(ex.recorded(e).unwrap(), base, "step {step} re-recorded a command buffer");
        no_messages(&ex);
    }
    // A pointer to another buffer for an inactive alternative: its descriptor changes, so
    // only a device without UPDATE_AFTER_BIND re-records (the segment binding it), once.
    ex.set_active(e, "pick", 0).unwrap();
    it.set_active(ie, "pick", 0).unwrap();
    ex.update_param(e, "src", c_ptr.clone()).unwrap();
    it.update_param(ie, "src", c_ptr).unwrap();
    let want = if ex.context().update_after_bind() { base } else { base + 1 };
    assert_eq!(ex.recorded(e).unwrap(), want);
    ex.set_active(e, "pick", 1).unwrap();
    it.set_active(ie, "pick", 1).unwrap();
    assert_eq!(ex.recorded(e).unwrap(), want, "the switch itself re-records nothing");
    ex.run(e).unwrap();
    it.run(ie).unwrap();
    let got: Vec<f32> = ex.read_as("out").unwrap();
    assert_eq!(got, it.read_as::<f32>("out").unwrap(), "@out after the pointer update");
    assert_eq!(got[10], cvals[10] - 1.5 * 10.0, "@c + @b, @b = %t · ramp with %t = -1.5");
    no_messages(&ex);
}

/// An alternative becomes active with its recorded command: a launch update made while it
/// was active does not survive switching away and back (as before), and none of it
/// re-records.
#[test]
fn an_alternative_comes_back_with_its_recorded_launch() {
    let ir = ir();
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    let e = ex.finalize("g").unwrap();
    let base = ex.recorded(e).unwrap();
    ex.update_launch(e, "d", Launch::Range(vec![100])).unwrap();
    ex.bind_as("out", &vec![-1f32; 1000]).unwrap();
    ex.run(e).unwrap();
    let out: Vec<f32> = ex.read_as("out").unwrap();
    assert_eq!((out[99], out[100]), (99.0 * 2.0, -1.0), "the range update reaches the active alternative");
    ex.set_active(e, "pick", 2).unwrap();
    ex.set_active(e, "pick", 0).unwrap();
    ex.run(e).unwrap();
    let out: Vec<f32> = ex.read_as("out").unwrap();
    assert_eq!(out[999], 999.0 * 2.0, "alternative 0 runs its recorded range(1000) again");
    assert_eq!(ex.recorded(e).unwrap(), base);
    no_messages(&ex);
}

/// A chain of `n` kernels.
fn chain(n: usize) -> String {
    let mut s = format!("{KERNELS_IR}\nusm @a : f32[64]\nusm @out : f32[64]\n\ngraph @g {{\n");
    s.push_str("  %k0 = kernel @ramp range(64) args(@a)\n");
    for i in 1..n {
        let _ = writeln!(s, "  %k{i} = kernel @scale range(64) args(@a, @a, 1.0) after(%k{})", i - 1);
    }
    s.push_str("}\n");
    s
}

#[test]
fn run_walks_a_plan_built_once_whatever_the_size() {
    for n in [3usize, 300] {
        let ir = chain(n);
        let mut ex = executor(bundle(&ir, vec![], vec![]));
        let e = ex.finalize("g").unwrap();
        assert_eq!(ex.plans_built(e).unwrap(), 1, "N = {n}: the plan is built at finalize");
        for _ in 0..4 {
            ex.run(e).unwrap();
        }
        assert_eq!(ex.plans_built(e).unwrap(), 1, "N = {n}: run builds nothing");
        assert_eq!(ex.last_run_steps(e).unwrap(), 1, "N = {n}: one segment walked, not N nodes");
        let a: Vec<f32> = ex.read_as("a").unwrap();
        assert_eq!(a[63], 63.0, "N = {n}");
        no_messages(&ex);
    }
}

#[test]
fn host_task_runs_walk_segments_and_a_host_update_rebuilds_the_plan() {
    let ir = format!(
        "{KERNELS_IR}
usm @a : f32[256]
usm @h : f32[256]
usm @out : f32[256]

graph @g properties(updatable) {{
  %fa = kernel @ramp range(256) args(@a)
  %host = host_task \"negate\" access(@a read, @h write) after(%fa)
  %k = kernel @scale range(256) args(@h, @out, 3.0) after(%host)
}}
"
    );
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    let neg = |ctx: &mut dyn cmdgraph_executor::HostMemory| {
        let a: Vec<f32> = ctx.read_as("a")?;
        ctx.write_as("h", 0, &a.iter().map(|v| -v).collect::<Vec<f32>>())
    };
    ex.register_callback("negate", neg);
    ex.register_callback("double", |ctx| {
        let a: Vec<f32> = ctx.read_as("a")?;
        ctx.write_as("h", 0, &a.iter().map(|v| 2.0 * v).collect::<Vec<f32>>())
    });
    let e = ex.finalize("g").unwrap();
    ex.run(e).unwrap();
    ex.wait(e).unwrap();
    assert_eq!(ex.last_run_steps(e).unwrap(), 3, "device, host, device");
    assert_eq!(ex.read_as::<f32>("out").unwrap()[5], -15.0);
    let swapped = cmdgraph_ir::text::parse(&ir.replace("\"negate\"", "\"double\"")).unwrap();
    ex.update_graph(e, &swapped, "g").unwrap();
    assert_eq!(ex.plans_built(e).unwrap(), 2, "a host-task update rebuilds the plan");
    ex.run(e).unwrap();
    ex.wait(e).unwrap();
    assert_eq!(ex.read_as::<f32>("out").unwrap()[5], 30.0);
    assert_eq!(ex.plans_built(e).unwrap(), 2);
    no_messages(&ex);
}
