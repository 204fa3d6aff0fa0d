//! Graph execution on the reference interpreter: host tasks and native commands, sub-graph
//! ordering, dynamic parameters and dynamic command groups, schedules, structural errors.

mod interp_support;

use cmdgraph_interp::{FaultKind, HostError, InterpError, Order, RunOptions};
use cmdgraph_ir::types::{LitValue, Literal};
use cmdgraph_ir::{ArgValue, MemRef, Pointer};
use interp_support::*;
use std::sync::{Arc, Mutex};

const KERNELS: &str = r#"
kernel @scale(%x: buf<f32, read>, %y: buf<f32, write>, %a: f32) {
  %i = global_id 0
  %v = load %x[%i]
  %r = mul %v, %a
  store %y[%i], %r
}
kernel @addc(%x: buf<f32, read>, %y: buf<f32, write>, %a: f32) {
  %i = global_id 0
  %v = load %x[%i]
  %r = add %v, %a
  store %y[%i], %r
}
usm @x : f32[4]
usm @y : f32[4]
usm @z : f32[4]
usm @w : f32[4]
"#;

fn with_kernels(graphs: &str) -> String {
    format!("{KERNELS}{graphs}")
}

const X: [f32; 4] = [1.0, -2.0, 0.5, 8.0];

/// A host task sees the data its predecessors wrote, writes what it declared, and later
/// nodes see its writes; a native command works the same way.
#[test]
fn host_task_sees_and_produces_data() {
    let mut interp = interp(&with_kernels(
        r#"
graph @g {
  %k = kernel @scale range(4) args(@x, @y, 2.0)
  %h = host_task "negate" access(@y read, @z write) after(%k)
  %k2 = kernel @addc range(4) args(@z, @w, 1.0) after(%h)
  %n = native "halve" access(@w read_write) after(%k2)
}
"#,
    ));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen_in = seen.clone();
    interp.register_callback("negate", move |ctx| {
        assert_eq!(ctx.node(), "h");
        assert_eq!(ctx.declared(), vec!["@y", "@z"]);
        let y: Vec<f32> = ctx.read_as("y")?;
        seen_in.lock().unwrap().extend_from_slice(&y);
        let neg: Vec<f32> = y.iter().map(|v| -v).collect();
        ctx.write_as("@z", 0, &neg)
    });
    interp.register_callback("halve", |ctx| {
        let w: Vec<f32> = ctx.read_as("w")?;
        let half: Vec<f32> = w.iter().map(|v| v / 2.0).collect();
        ctx.write_as("w", 0, &half)
    });
    interp.bind_as("x", &X).unwrap();
    let exec = interp.finalize("g").unwrap();
    interp.run(exec).unwrap();
    let y: Vec<f32> = X.iter().map(|v| v * 2.0).collect();
    assert_eq!(*seen.lock().unwrap(), y);
    let w: Vec<f32> = y.iter().map(|v| (-v + 1.0) / 2.0).collect();
    assert_eq!(interp.read_as::<f32>("w").unwrap(), w);
}

/// Callbacks are held to their access lists; unregistered and failing callbacks are errors
/// naming the node.
#[test]
fn host_task_access_violations() {
    let mut interp = interp(&with_kernels(
        r#"
graph @write_read_only {
  %h = host_task "write_y" access(@y read)
}
graph @undeclared {
  %h = host_task "read_z" access(@y read)
}
graph @swallowed {
  %h = host_task "swallow" access(@y read)
}
graph @write_only {
  %h = host_task "read_y" access(@y write)
}
graph @missing {
  %h = native "nobody"
}
graph @fails {
  %h = host_task "fail"
}
graph @too_far {
  %h = host_task "far" access(@y write)
}
"#,
    ));
    interp.register_callback("write_y", |ctx| ctx.write("y", 0, &[0; 4]));
    interp.register_callback("read_z", |ctx| ctx.read("z").map(|_| ()));
    interp.register_callback("swallow", |ctx| {
        let _ = ctx.write("y", 0, &[1]);
        Ok(())
    });
    interp.register_callback("read_y", |ctx| ctx.read("y").map(|_| ()));
    interp.register_callback("fail", |_| Err(HostError::failed("disk full")));
    interp.register_callback("far", |ctx| ctx.write("y", 12, &[0; 8]));
    let mut run = |g: &str| {
        let exec = interp.finalize(g).unwrap();
        let err = interp.run(exec).unwrap_err();
        let f = err.as_fault().cloned().unwrap();
        assert_eq!(f.node, "h");
        f.kind
    };
    let host = |kind: FaultKind| match kind {
        FaultKind::Host { error, .. } => error,
        k => panic!("{k:?}"),
    };
    use cmdgraph_ir::types::Access;
    let mode = |attempted, declared| HostError::Mode { memory: "@y".into(), attempted, declared };
    assert_eq!(host(run("write_read_only")), mode("write", Access::Read));
    assert_eq!(host(run("undeclared")), HostError::NotDeclared { memory: "z".into() });
    assert_eq!(host(run("swallowed")), mode("write", Access::Read));
    assert_eq!(host(run("write_only")), mode("read", Access::Write));
    assert_eq!(run("missing"), FaultKind::UnregisteredCallback { callback: "nobody".into() });
    assert_eq!(host(run("fails")), HostError::Failed("disk full".into()));
    assert_eq!(host(run("too_far")), HostError::OutOfBounds { memory: "@y".into(), start: 12, len: 8, size: 16 });
}

/// Registers a callback per name that appends the name to a shared log.
fn loggers(interp: &mut cmdgraph_interp::Interpreter, names: &[&str]) -> Arc<Mutex<Vec<String>>> {
    let log = Arc::new(Mutex::new(Vec::new()));
    for &name in names {
        let log = log.clone();
        let owned = name.to_string();
        interp.register_callback(name, move |_| {
            log.lock().unwrap().push(owned.clone());
            Ok(())
        });
    }
    log
}

const SUBGRAPHS: &str = r#"
graph @child {
  %c1 = host_task "c1"
  %c2 = host_task "c2" after(%c1)
  %c3 = kernel @scale range(4) args(@x, @y, 3.0)
}
graph @parent {
  %p1 = memfill @x, 2.0 : f32, 4
  %p2 = host_task "p2"
  %sg = subgraph @child after(%p1)
  %p3 = kernel @addc range(4) args(@y, @z, 1.0) after(%sg)
  %p4 = host_task "p4"
  %p5 = host_task "p5" after(%p3)
}
"#;

/// A sub-graph runs after the sub-graph node's predecessors and before its successors, in
/// every valid schedule; its nodes appear as `sg/...`.
#[test]
fn subgraph_ordering() {
    let mut interp = interp(&with_kernels(SUBGRAPHS));
    let log = loggers(&mut interp, &["c1", "c2", "p2", "p4", "p5"]);
    let exec = interp.finalize("parent").unwrap();
    let stats = interp.run(exec).unwrap();
    assert_eq!(stats.order, vec!["p1", "p2", "sg/c1", "sg/c2", "sg/c3", "p3", "p4", "p5"]);
    assert_eq!(interp.read_as::<f32>("z").unwrap(), vec![7.0; 4]);
    assert_eq!(*log.lock().unwrap(), vec!["p2", "c1", "c2", "p4", "p5"]);

    let mut orders = std::collections::BTreeSet::new();
    for seed in 0..64 {
        interp.bind_as("z", &[0f32; 4]).unwrap();
        interp.bind_as("y", &[0f32; 4]).unwrap();
        let stats = interp
            .run_with(
                exec,
                &RunOptions { order: Order::Random(seed), check_races: true, fuel: None, ..RunOptions::default() },
            )
            .unwrap();
        let pos = |n: &str| stats.order.iter().position(|x| x == n).unwrap();
        assert!(pos("p1") < pos("sg/c1") && pos("p1") < pos("sg/c3"), "{:?}", stats.order);
        assert!(pos("sg/c1") < pos("sg/c2"));
        for c in ["sg/c1", "sg/c2", "sg/c3"] {
            assert!(pos(c) < pos("p3"), "{:?}", stats.order);
        }
        assert!(pos("p3") < pos("p5"));
        assert_eq!(interp.read_as::<f32>("z").unwrap(), vec![7.0; 4]);
        assert!(stats.races.is_empty(), "{:?}", stats.races);
        orders.insert(stats.order);
    }
    assert!(orders.len() > 10, "random schedules should differ: {}", orders.len());
}

/// Nested sub-graphs get nested path names; a graph that contains itself, or a sub-graph
/// with allocations, is rejected at finalize.
#[test]
fn nested_and_invalid_subgraphs() {
    let mut interp = interp(&with_kernels(
        r#"
graph @leaf {
  %k = kernel @scale range(4) args(@x, @y, 2.0)
}
graph @mid {
  %inner = subgraph @leaf
}
graph @top {
  %outer = subgraph @mid
  %after = kernel @addc range(4) args(@y, @z, 0.5) after(%outer)
}
graph @owns {
  %t = async_malloc f32[4]
  %f = async_free %t after(%t)
}
graph @uses_owner {
  %s = subgraph @owns
}
"#,
    ));
    interp.bind_as("x", &X).unwrap();
    let exec = interp.finalize("top").unwrap();
    let stats = interp.run(exec).unwrap();
    assert_eq!(stats.order, vec!["outer/inner/k", "after"]);
    let z: Vec<f32> = X.iter().map(|v| v * 2.0 + 0.5).collect();
    assert_eq!(interp.read_as::<f32>("z").unwrap(), z);
    match interp.finalize("uses_owner") {
        Err(InterpError::Invalid { node: Some(n), message, .. }) => {
            assert_eq!(n, "s");
            assert!(message.contains("allocations"), "{message}");
        }
        other => panic!("{other:?}"),
    }

    // Self-containment cannot be written in text (names resolve), so build it.
    let mut m = parse(&with_kernels("graph @selfish {\n  %k = kernel @scale range(4) args(@x, @y, 1.0)\n}\n"));
    let g = m.graph_by_name("selfish").unwrap();
    let mut gb = GB { g: m.graphs[g].clone() };
    gb.node("again", cmdgraph_ir::NodeKind::Subgraph { graph: g }, &[]);
    m.graphs[g] = gb.finish();
    let mut interp = cmdgraph_interp::Interpreter::new(&m).unwrap();
    match interp.finalize("selfish") {
        Err(InterpError::Invalid { node: Some(n), message, .. }) => {
            assert_eq!(n, "again");
            assert!(message.contains("contains itself"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

/// Dynamic parameters: the executable captures values at finalize; updates change later
/// runs; a value of another kind is refused.
#[test]
fn dynamic_parameter_updates() {
    let mut interp = interp(&with_kernels(
        r#"
graph @g {
  dyn %alpha = 2.0 : f32
  dyn %src = @x
  %k = kernel @scale range(4) args(%src, @y, %alpha)
}
"#,
    ));
    interp.bind_as("x", &X).unwrap();
    let zv = [10.0f32, 20.0, 30.0, 40.0];
    interp.bind_as("z", &zv).unwrap();
    let exec = interp.finalize("g").unwrap();
    interp.run(exec).unwrap();
    assert_eq!(interp.read_as::<f32>("y").unwrap(), X.map(|v| v * 2.0).to_vec());

    let three = ArgValue::Scalar(Literal { value: LitValue::Float(3.0), ty: None });
    interp.update_param(exec, "alpha", three).unwrap();
    interp.run(exec).unwrap();
    assert_eq!(interp.read_as::<f32>("y").unwrap(), X.map(|v| v * 3.0).to_vec());

    let z = interp.module().memory_by_name("z").unwrap();
    interp.update_param(exec, "%src", ArgValue::Pointer(Pointer { base: MemRef::Memory(z), offset: 0 })).unwrap();
    interp.run(exec).unwrap();
    assert_eq!(interp.read_as::<f32>("y").unwrap(), zv.map(|v| v * 3.0).to_vec());

    let wrong = ArgValue::Pointer(Pointer { base: MemRef::Memory(z), offset: 0 });
    assert!(matches!(interp.update_param(exec, "alpha", wrong), Err(InterpError::Api { .. })));
    let int = ArgValue::Scalar(Literal { value: LitValue::Int(4), ty: Some(cmdgraph_ir::types::ScalarType::I32) });
    assert!(matches!(interp.update_param(exec, "alpha", int), Err(InterpError::Api { .. })));
    assert!(matches!(interp.update_param(exec, "nope", ArgValue::Bytes(vec![])), Err(InterpError::Api { .. })));

    // A new executable starts from the modifiable graph's values.
    let fresh = interp.finalize("g").unwrap();
    interp.run(fresh).unwrap();
    assert_eq!(interp.read_as::<f32>("y").unwrap(), X.map(|v| v * 2.0).to_vec());
}

/// Dynamic command groups: the node runs the active alternative; switching the index
/// switches the work; dynamic parameters inside alternatives follow updates; host-task
/// alternatives too.
#[test]
fn dynamic_command_group_switching() {
    let mut interp = interp(&with_kernels(
        r#"
graph @g {
  dyn %alpha = 4.0 : f32
  dcg %act active(1) {
    kernel @scale range(4) args(@x, @y, %alpha)
    kernel @addc range(4) args(@x, @y, 10.0)
  }
  %n = dynamic %act
  dcg %hosts active(0) {
    host_task "first"
    host_task "second"
  }
  %h = dynamic %hosts after(%n)
}
"#,
    ));
    let log = loggers(&mut interp, &["first", "second"]);
    interp.bind_as("x", &X).unwrap();
    let exec = interp.finalize("g").unwrap();
    interp.run(exec).unwrap();
    assert_eq!(interp.read_as::<f32>("y").unwrap(), X.map(|v| v + 10.0).to_vec());
    interp.set_active(exec, "act", 0).unwrap();
    interp.set_active(exec, "hosts", 1).unwrap();
    interp.run(exec).unwrap();
    assert_eq!(interp.read_as::<f32>("y").unwrap(), X.map(|v| v * 4.0).to_vec());
    interp.update_param(exec, "alpha", ArgValue::Scalar(Literal { value: LitValue::Float(-1.0), ty: None })).unwrap();
    interp.run(exec).unwrap();
    assert_eq!(interp.read_as::<f32>("y").unwrap(), X.map(|v| -v).to_vec());
    assert_eq!(*log.lock().unwrap(), vec!["first", "second", "second"]);
    assert!(matches!(interp.set_active(exec, "act", 2), Err(InterpError::Api { .. })));
}

/// A cycle (possible under no_cycle_check) is reported at finalize with a node on it; a
/// SPIR-V kernel cannot be interpreted.
#[test]
fn cycles_and_spirv_kernels_are_errors() {
    let mut interp = interp(&with_kernels(
        r#"
kernel @ext(%x: buf<f32, read>) spirv "ext.spv" entry "main"
graph @cyclic properties(no_cycle_check) {
  %root = empty
  %a = empty after(%root)
  %b = empty after(%a)
  %c = empty after(%b)
  edge %c -> %a
}
graph @spirv {
  %k = kernel @ext range(4) args(@x)
}
"#,
    ));
    match interp.finalize("cyclic") {
        Err(InterpError::Invalid { node: Some(n), message, .. }) => {
            assert!(["a", "b", "c"].contains(&n.as_str()), "{n}");
            assert!(message.contains("cycle"));
        }
        other => panic!("{other:?}"),
    }
    let exec = interp.finalize("spirv").unwrap();
    match interp.run(exec) {
        Err(InterpError::Invalid { node: Some(n), message, .. }) => {
            assert_eq!(n, "k");
            assert!(message.contains("SPIR-V"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

/// `Order::Random` picks uniformly among ready nodes: with three independent nodes each
/// comes first about a third of the time.
#[test]
fn random_order_is_uniform_among_ready_nodes() {
    let mut interp = interp(
        r#"
graph @g {
  %a = empty
  %b = empty
  %c = empty
  %d = empty after(%a, %b, %c)
}
"#,
    );
    let exec = interp.finalize("g").unwrap();
    let mut first = std::collections::BTreeMap::new();
    for seed in 0..3000 {
        let stats = interp
            .run_with(
                exec,
                &RunOptions { order: Order::Random(seed), check_races: false, fuel: None, ..RunOptions::default() },
            )
            .unwrap();
        assert_eq!(stats.order.last().map(String::as_str), Some("d"));
        *first.entry(stats.order[0].clone()).or_insert(0) += 1;
    }
    assert_eq!(first.len(), 3);
    for (name, count) in first {
        assert!((850..1150).contains(&count), "{name} first {count} times out of 3000");
    }
}
