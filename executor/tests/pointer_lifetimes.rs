//! A pointer update to a graph allocation is refused unless the allocation is live at every
//! node using the parameter (issue 28): the verifier's rule (E0244–E0246), which the
//! interpreter enforces when the node runs. The pool plan here puts `%a` and `%b` on the same
//! bytes (`%a` is freed before `%b` is allocated), so a write through a freed `%a` would land
//! in `%b`: refused with `ExecError::AllocNotLive`, and nothing changes.

mod common;

use cmdgraph_executor::{ExecError, ExecId, Executor, NotLive};
use cmdgraph_interp::{AllocLayout, Interpreter, PoolLayout};
use cmdgraph_ir::bundle::{GraphPlan, PoolPlan};
use cmdgraph_ir::ArgValue;
use common::*;

const S_A: f32 = 2.371_904_1;
const S_B: f32 = 1.593_816_7;
const S_LATE: f32 = -0.618_447_3;

/// `%a` lives from `%a` to `%fa`, `%b` from `%b` (after `%fa`) to `%fb`. `%dst` is written by
/// `%late` (inside `%b`'s life, after `%a`'s); `%src` is read by `%early` (inside `%a`'s life,
/// ordered before `%b`'s malloc); `%side` only by the inactive alternative of `%dn`, which
/// is ordered after `%ka` and not before `%fa`.
fn ir() -> String {
    format!(
        "{KERNELS_IR}
usm @x : f32[256]
usm @w : f32[256]
usm @w2 : f32[256]
usm @y : f32[256]
usm @v : f32[256]
usm @out : f32[256]

graph @g properties(updatable) {{
  dyn %dst = @y
  dyn %src = @x
  dyn %side = @v
  dcg %pick active(0) {{
    kernel @scale range(256) args(@x, @v, 1.0)
    kernel @scale range(256) args(@x, %side, 7.0)
  }}
  %a = async_malloc f32[256]
  %ka = kernel @scale range(256) args(@x, %a, {S_A:?}) after(%a)
  %kb = kernel @scale range(256) args(%a, @w, 1.0) after(%ka)
  %early = kernel @scale range(256) args(%src, @w2, 0.5) after(%ka)
  %dn = dynamic %pick after(%ka)
  %fa = async_free %a after(%kb, %early)
  %b = async_malloc f32[256] after(%fa)
  %kc = kernel @scale range(256) args(@x, %b, {S_B:?}) after(%b)
  %late = kernel @scale range(256) args(@x, %dst, {S_LATE:?}) after(%kc)
  %kd = kernel @scale range(256) args(%b, @out, 1.0) after(%late)
  %fb = async_free %b after(%kd)
}}
"
    )
}

/// `%a` and `%b` share the pool's first 1024 bytes, as `plan-memory` places them.
fn plan() -> GraphPlan {
    GraphPlan {
        name: "g".into(),
        segments: vec![],
        memory: PoolPlan {
            size: 1024,
            alignment: 256,
            offsets: vec![("a".into(), 0), ("b".into(), 0)],
            report: String::new(),
        },
        origins: vec![],
        launches: vec![],
    }
}

fn setup(x: &[f32]) -> (Executor, ExecId, Interpreter, cmdgraph_interp::ExecId) {
    let ir = ir();
    let mut ex = executor(bundle(&ir, vec![], vec![plan()]));
    ex.bind_as("x", x).unwrap();
    let e = ex.finalize("g").unwrap();
    let module = cmdgraph_ir::text::parse(&ir).unwrap();
    let mut it = Interpreter::new(&module).unwrap();
    it.bind_as("x", x).unwrap();
    let g = &module.graphs[module.graph_by_name("g").unwrap()];
    let (a, b) = (g.node_by_name("a").unwrap(), g.node_by_name("b").unwrap());
    let layout = PoolLayout { size: 1024, offsets: [(a, 0), (b, 0)].into_iter().collect() };
    let ie = it.finalize_with("g", AllocLayout::Pool(layout)).unwrap();
    (ex, e, it, ie)
}

fn scaled(x: &[f32], s: f32) -> Vec<f32> {
    x.iter().map(|v| v * s).collect()
}

/// The refusal `update_param(param, pointer to alloc)` must give.
fn refused(ex: &mut Executor, e: ExecId, param: &str, alloc: &str) -> (String, NotLive, String) {
    let p = ex.pointer_to(e, &format!("%{alloc}"), 0).unwrap();
    match ex.update_param(e, param, ArgValue::Pointer(p)) {
        Err(err @ ExecError::AllocNotLive { .. }) => {
            let message = err.to_string();
            let ExecError::AllocNotLive { param: p, alloc: a, node, when } = err else { unreachable!() };
            assert_eq!((p.as_str(), a.as_str()), (param, alloc), "{message}");
            (node, when, message)
        }
        other => panic!("%{param} -> %{alloc}: expected AllocNotLive, got {other:?}"),
    }
}

#[test]
fn a_pointer_to_a_freed_allocation_is_refused_and_changes_nothing() {
    let x = random(256, 41);
    let (mut ex, e, mut it, ie) = setup(&x);
    let (node, when, message) = refused(&mut ex, e, "dst", "a");
    assert_eq!(node, "late");
    assert_eq!(when, NotLive::AfterFree { free: "fa".into() });
    for part in ["%dst", "graph allocation %a", "node %late", "freed by %fa"] {
        assert!(message.contains(part), "{part:?} missing from: {message}");
    }
    // The interpreter refuses the same update when the node runs.
    let a = it.module().graphs[it.module().graph_by_name("g").unwrap()].node_by_name("a").unwrap();
    let to_a = ArgValue::Pointer(cmdgraph_ir::Pointer { base: cmdgraph_ir::MemRef::Alloc(a), offset: 0 });
    it.update_param(ie, "dst", to_a).unwrap();
    let err = it.run(ie).unwrap_err().to_string();
    assert!(err.contains("after it was freed by %fa"), "{err}");
    // Nothing changed: %late still writes @y, and %b (on %a's bytes) reaches @out intact.
    ex.run(e).unwrap();
    assert_eq!(ex.read_as::<f32>("out").unwrap(), scaled(&x, S_B), "%b's data");
    assert_eq!(ex.read_as::<f32>("y").unwrap(), scaled(&x, S_LATE), "%dst is still @y");
    assert_eq!(ex.read_as::<f32>("w").unwrap(), scaled(&x, S_A), "%a's data while it was live");
    no_messages(&ex);
}

#[test]
fn a_pointer_to_an_allocation_not_yet_made_is_refused() {
    let x = random(256, 42);
    let (mut ex, e, _, _) = setup(&x);
    let (node, when, message) = refused(&mut ex, e, "src", "b");
    assert_eq!((node.as_str(), when), ("early", NotLive::BeforeMalloc));
    assert!(message.contains("node %early") && message.contains("not yet allocated"), "{message}");
    // Only an inactive alternative uses %side, and it is not ordered before %fa or after %b.
    let (node, when, _) = refused(&mut ex, e, "side", "a");
    assert_eq!((node.as_str(), when), ("dn", NotLive::NotBeforeFree { free: "fa".into() }));
    let (node, when, message) = refused(&mut ex, e, "side", "b");
    assert_eq!((node.as_str(), when), ("dn", NotLive::NotAfterMalloc));
    assert!(message.contains("may not be allocated yet"), "{message}");
    ex.run(e).unwrap();
    assert_eq!(ex.read_as::<f32>("w2").unwrap(), scaled(&x, 0.5), "%src is still @x");
    assert_eq!(ex.read_as::<f32>("out").unwrap(), scaled(&x, S_B));
    no_messages(&ex);
}

/// The live case is accepted, and runs as on the interpreter.
#[test]
fn a_pointer_to_a_live_allocation_is_taken_as_on_the_interpreter() {
    let x = random(256, 43);
    let (mut ex, e, mut it, ie) = setup(&x);
    let to_b = ex.pointer_to(e, "%b", 0).unwrap();
    ex.update_param(e, "dst", ArgValue::Pointer(to_b)).unwrap();
    it.update_param(ie, "dst", ArgValue::Pointer(to_b)).unwrap();
    ex.run(e).unwrap();
    it.run(ie).unwrap();
    let out: Vec<f32> = ex.read_as("out").unwrap();
    assert_eq!(out, it.read_as::<f32>("out").unwrap());
    assert_eq!(out, scaled(&x, S_LATE), "%late wrote %b, which %kd copied");
    // %a is live at %early: reading it there is accepted too.
    let to_a = ex.pointer_to(e, "%a", 0).unwrap();
    ex.update_param(e, "src", ArgValue::Pointer(to_a)).unwrap();
    ex.run(e).unwrap();
    assert_eq!(ex.read_as::<f32>("w2").unwrap(), scaled(&scaled(&x, S_A), 0.5));
    no_messages(&ex);
}
