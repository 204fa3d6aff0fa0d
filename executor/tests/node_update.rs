//! Individual-node update on Vulkan (`update_nodes`), as sycl/tests/update.rs checks it on
//! the interpreter: the given nodes take their current command and parameter values from
//! the modifiable graph; a node sharing a changed parameter keeps what it ran.

mod common;

use cmdgraph_interp::Interpreter;
use common::*;

fn module(s: f32, active: u32, n: u64, extra: &str) -> String {
    format!(
        "{KERNELS_IR}
usm @a : f32[1000]
usm @out : f32[1000]
usm @out2 : f32[1000]
usm @out3 : f32[1000]

graph @g properties(updatable) {{
  dyn %s = {s:?} : f32
  dcg %pick active({active}) {{
    kernel @scale range(1000) args(@out, @out2, 3.0)
    kernel @add2 range(1000) args(@out, @a, @out2)
  }}
  %fa = kernel @ramp range(1000) args(@a)
  %k1 = kernel @scale range({n}) args(@a, @out, %s) after(%fa)
  %k2 = kernel @scale range(1000) args(@a, @out3, %s) after(%k1)
  %d = dynamic %pick after(%k2)
  %e = empty after(%d)
{extra}}}
"
    )
}

fn parse(text: &str) -> cmdgraph_ir::Module {
    cmdgraph_ir::text::parse(text).unwrap()
}

fn at(ex: &cmdgraph_executor::Executor, name: &str, i: usize) -> f32 {
    ex.read_as::<f32>(name).unwrap()[i]
}

#[test]
fn dynamic_parameter_reaches_executable_only_after_update() {
    let ir = module(2.0, 0, 1000, "");
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    let e = ex.finalize("g").unwrap();
    let base = ex.recorded(e).unwrap();
    ex.run(e).unwrap();
    assert_eq!(at(&ex, "out", 10), 20.0);
    // The modifiable graph now holds %s = -1 and %k1 at 500 items; the executable does
    // not see it until the update.
    let now = parse(&module(-1.0, 0, 500, ""));
    ex.run(e).unwrap();
    assert_eq!(at(&ex, "out", 10), 20.0);
    ex.update_nodes(e, &now, "g", &["%k1", "%k2"]).unwrap();
    ex.run(e).unwrap();
    assert_eq!(at(&ex, "out", 10), -10.0);
    assert_eq!(at(&ex, "out", 700), 1400.0, "%k1 covers 500 items only");
    assert_eq!(at(&ex, "out2", 10), -10.0 * 3.0, "the dynamic node scales %k1's result");
    assert_eq!(at(&ex, "out3", 10), -10.0);
    assert_eq!(ex.recorded(e).unwrap(), base, "parameter and range updates re-record nothing");
    // The same on the interpreter.
    let m = parse(&ir);
    let mut it = Interpreter::new(&m).unwrap();
    let ie = it.finalize("g").unwrap();
    it.run(ie).unwrap();
    it.update_param(ie, "s", cmdgraph_ir::ArgValue::Scalar(lit(-1.0))).unwrap();
    it.run(ie).unwrap();
    // The interpreter ran all 1000 items of %k1; the executor 500 of them.
    for name in ["out", "out2", "out3"] {
        let want: Vec<f32> = it.read_as(name).unwrap();
        let got: Vec<f32> = ex.read_as(name).unwrap();
        let n = if name == "out3" { 1000 } else { 500 };
        assert!(got[..n] == want[..n], "@{name} differs from the interpreter");
    }
    no_messages(&ex);
}

fn lit(v: f64) -> cmdgraph_ir::types::Literal {
    cmdgraph_ir::types::Literal {
        value: cmdgraph_ir::types::LitValue::Float(v),
        ty: Some(cmdgraph_ir::types::ScalarType::F32),
    }
}

/// A node sharing the parameter keeps the value it ran with until it is updated itself,
/// and gets its registration back then.
#[test]
fn shared_parameter_updates_only_the_nodes_given() {
    let mut ex = executor(bundle(&module(2.0, 0, 1000, ""), vec![], vec![]));
    let e = ex.finalize("g").unwrap();
    ex.update_nodes(e, &parse(&module(7.0, 0, 1000, "")), "g", &["k1"]).unwrap();
    ex.run(e).unwrap();
    assert_eq!(at(&ex, "out", 10), 70.0, "%k1 has the new value");
    assert_eq!(at(&ex, "out3", 10), 20.0, "%k2 keeps 2");
    ex.update_nodes(e, &parse(&module(7.0, 0, 1000, "")), "g", &["k2"]).unwrap();
    ex.run(e).unwrap();
    assert_eq!(at(&ex, "out3", 10), 70.0);
    // Both are registered again: a parameter update reaches both.
    ex.update_param(e, "s", cmdgraph_ir::ArgValue::Scalar(lit(1.0))).unwrap();
    ex.run(e).unwrap();
    assert_eq!((at(&ex, "out", 10), at(&ex, "out3", 10)), (10.0, 10.0));
    no_messages(&ex);
}

#[test]
fn dynamic_command_group_switches_kernel_after_update() {
    let mut ex = executor(bundle(&module(2.0, 0, 1000, ""), vec![], vec![]));
    let e = ex.finalize("g").unwrap();
    let base = ex.recorded(e).unwrap();
    ex.update_nodes(e, &parse(&module(2.0, 1, 1000, "")), "g", &["d"]).unwrap();
    assert_eq!(ex.recorded(e).unwrap(), base + 1, "a new pipeline re-records the node's segment");
    ex.run(e).unwrap();
    assert_eq!(at(&ex, "out2", 10), 20.0 + 10.0, "@add2 of @out and @a");
    no_messages(&ex);
}

/// Decision A2 and rows 25-26: nodes without updatable state are a no-op; allocation
/// nodes and nodes added after finalize are refused, and nothing changes.
#[test]
fn update_refusals_and_no_ops() {
    let ir = module(2.0, 0, 1000, "");
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    let e = ex.finalize("g").unwrap();
    let base = ex.recorded(e).unwrap();
    ex.update_nodes(e, &parse(&ir), "g", &["e", "fa"]).unwrap();
    let later = parse(&module(5.0, 0, 1000, "  %late = kernel @ramp range(10) args(@a) after(%e)\n"));
    let err = ex.update_nodes(e, &later, "g", &["k1", "late"]).unwrap_err().to_string();
    assert!(err.contains("%late") && err.contains("row 25"), "{err}");
    let alloc = parse(&module(5.0, 0, 1000, "").replace("%e = empty after(%d)", "%e = async_malloc f32[4] device"));
    let err = ex.update_nodes(e, &alloc, "g", &["k1", "e"]).unwrap_err().to_string();
    assert!(err.contains("%e") && err.contains("row 26"), "{err}");
    let kind = parse(
        &module(5.0, 0, 1000, "").replace("%k1 = kernel @scale range(1000)", "%k1 = kernel @scale range(10, 10)"),
    );
    let err = ex.update_nodes(e, &kind, "g", &["k1"]).unwrap_err().to_string();
    assert!(err.contains("%k1") && err.contains("launch"), "{err}");
    ex.run(e).unwrap();
    assert_eq!(at(&ex, "out", 10), 20.0, "refused updates change nothing");
    assert_eq!(ex.recorded(e).unwrap(), base);
    no_messages(&ex);
}
