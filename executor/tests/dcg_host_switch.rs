//! Switching a dynamic command group whose alternatives are host tasks (issue 28): the
//! alternative active now is the callback a run calls, as on the interpreter, whichever was
//! active at finalize, and also after an individual update gave the node a command.

mod common;

use cmdgraph_executor::{ExecId, Executor, HostMemory};
use cmdgraph_interp::{HostError, Interpreter};
use common::*;

/// `@h` from `@a` by one of three host callbacks, then a kernel scales `@h` into `@out`; the
/// group starts on alternative `active`.
fn ir(active: u32) -> String {
    format!(
        "{KERNELS_IR}
usm @a : f32[256]
usm @h : f32[256]
usm @out : f32[256]

graph @g properties(updatable) {{
  dcg %pick active({active}) {{
    host_task \"negate\" access(@a read, @h write)
    host_task \"cube\" access(@a read, @h write)
    host_task \"recip\" access(@a read, @h write)
  }}
  %d = dynamic %pick
  %k = kernel @scale range(256) args(@h, @out, 1.7182817) after(%d)
}}
"
    )
}

/// What each alternative's callback makes of one element.
/// A host callback's effect on one element.
type OnElement = fn(f32) -> f32;

const CALLBACKS: [(&str, OnElement); 3] = [("negate", |v| -v), ("cube", |v| v * v * v), ("recip", |v| 1.0 / v)];

fn host_fn(f: fn(f32) -> f32) -> impl FnMut(&mut dyn HostMemory) -> Result<(), HostError> + Send + 'static {
    move |ctx: &mut dyn HostMemory| {
        let a: Vec<f32> = ctx.read_as("a")?;
        ctx.write_as("h", 0, &a.iter().map(|&v| f(v)).collect::<Vec<f32>>())
    }
}

fn setup(active: u32, a: &[f32]) -> (Executor, ExecId, Interpreter, cmdgraph_interp::ExecId) {
    let ir = ir(active);
    let module = cmdgraph_ir::text::parse(&ir).unwrap();
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    let mut it = Interpreter::new(&module).unwrap();
    for (name, f) in CALLBACKS {
        ex.register_callback(name, host_fn(f));
        it.register_callback(name, host_fn(f));
    }
    ex.bind_as("a", a).unwrap();
    it.bind_as("a", a).unwrap();
    let e = ex.finalize("g").unwrap();
    let ie = it.finalize("g").unwrap();
    (ex, e, it, ie)
}

/// `@out` after alternative `alt` ran, computed here.
fn expected(a: &[f32], alt: usize) -> Vec<f32> {
    a.iter().map(|&v| CALLBACKS[alt].1(v) * 1.718_281_7).collect()
}

#[test]
fn host_task_alternative_switches_run_the_active_callback_as_the_interpreter() {
    let a = random(256, 28);
    for start in [0u32, 2] {
        let (mut ex, e, mut it, ie) = setup(start, &a);
        for (step, alt) in [start, 1, 2, 0, 0, 1, start].into_iter().enumerate() {
            ex.set_active(e, "pick", alt).unwrap();
            it.set_active(ie, "pick", alt).unwrap();
            ex.run(e).unwrap();
            ex.wait(e).unwrap();
            it.run(ie).unwrap();
            let got: Vec<f32> = ex.read_as("out").unwrap();
            let want: Vec<f32> = it.read_as("out").unwrap();
            assert_eq!(
                got, want,
                "finalized on {start}, step {step}: alternative {alt}, Vulkan against the interpreter"
            );
            assert_eq!(got, expected(&a, alt as usize), "finalized on {start}, step {step}: alternative {alt}");
            no_messages(&ex);
        }
    }
}

/// A switch rebuilds the run plan (the host step names the new callback) and re-records no
/// command buffer; a refused switch changes nothing.
#[test]
fn host_task_switch_rebuilds_the_plan_only() {
    let a = random(256, 29);
    let (mut ex, e, _, _) = setup(0, &a);
    let (recorded, plans) = (ex.recorded(e).unwrap(), ex.plans_built(e).unwrap());
    ex.set_active(e, "pick", 2).unwrap();
    assert_eq!(ex.recorded(e).unwrap(), recorded, "a host-task switch re-records nothing");
    assert_eq!(ex.plans_built(e).unwrap(), plans + 1, "it rebuilds the run plan once");
    let err = ex.set_active(e, "pick", 3).unwrap_err();
    assert!(err.to_string().contains("3 alternatives"), "{err}");
    ex.run(e).unwrap();
    ex.wait(e).unwrap();
    assert_eq!(ex.read_as::<f32>("out").unwrap(), expected(&a, 2), "the refused switch left alternative 2 active");
    no_messages(&ex);
}

/// An individual update of the dynamic node from a source whose group is on alternative 1
/// gives the node that alternative's callback; a later switch still decides what runs.
#[test]
fn a_switch_after_an_individual_update_of_the_node_runs_the_new_alternative() {
    let a = random(256, 30);
    let (mut ex, e, _, _) = setup(0, &a);
    let source = cmdgraph_ir::text::parse(&ir(1)).unwrap();
    ex.update_nodes(e, &source, "g", &["d"]).unwrap();
    ex.run(e).unwrap();
    ex.wait(e).unwrap();
    assert_eq!(ex.read_as::<f32>("out").unwrap(), expected(&a, 1), "the update took alternative 1");
    for alt in [2u32, 0] {
        ex.set_active(e, "pick", alt).unwrap();
        ex.run(e).unwrap();
        ex.wait(e).unwrap();
        assert_eq!(ex.read_as::<f32>("out").unwrap(), expected(&a, alt as usize), "switched to {alt}");
    }
    no_messages(&ex);
}
