//! The interpreter never panics, whatever module it is given: corrupted example text that
//! still parses (so is unverified), and modules broken through the API (dangling handles,
//! ill-typed ops, self-nesting regions, absurd sizes).

mod interp_support;
#[path = "../../ir/tests/corrupt/mutations.rs"]
mod mutations;

use cmdgraph_interp::{FaultKind, InterpError, Interpreter, Order, RunOptions};
use cmdgraph_ir::arena::Handle;
use cmdgraph_ir::types::{ScalarType, Type};
use cmdgraph_ir::{Alternative, Arg, Launch, MemRef, Module, NodeKind, OpKind};
use mutations::{mutants, Budget};
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;

/// Runs every graph of `m` (fuel-limited, race-checked); returns how many runs finished
/// without error. Panics propagate.
fn run_all(m: &Module) -> usize {
    let Ok(mut interp) = Interpreter::new(m) else { return 0 };
    for (_, g) in m.graphs.iter() {
        for (_, n) in g.nodes.iter() {
            if let NodeKind::HostTask(c) | NodeKind::Native(c) = &n.kind {
                interp.register_callback(&c.callback, |ctx| {
                    for mem in ctx.declared() {
                        let _ = ctx.read(&mem);
                        let _ = ctx.write(&mem, 0, &[1, 2, 3]);
                    }
                    Ok(())
                });
            }
        }
    }
    let opts = RunOptions { order: Order::Random(3), check_races: true, fuel: Some(50_000), ..RunOptions::default() };
    let mut ok = 0;
    for (_, g) in m.graphs.iter() {
        if let Ok(exec) = interp.finalize(&g.name) {
            if interp.run_with(exec, &opts).is_ok() {
                ok += 1;
            }
            let _ = interp.drop_exec(exec);
        }
    }
    ok
}

#[test]
fn corrupted_examples_never_panic() {
    panic::set_hook(Box::new(|_| {}));
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut paths: Vec<_> = std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.retain(|p| p.extension().is_some_and(|x| x == "cgir"));
    paths.sort();
    let budget = Budget { truncations: 0, line_deletions: 16, line_duplications: 8, byte_flips: 16, splices: 8 };
    let (mut parsed, mut panics) = (0, Vec::new());
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        for mutant in mutants(&text, 0xBAD_5EED, budget) {
            let Ok(source) = String::from_utf8(mutant.bytes) else { continue };
            let Ok(module) = cmdgraph_ir::text::parse(&source) else { continue };
            parsed += 1;
            if panic::catch_unwind(AssertUnwindSafe(|| run_all(&module))).is_err() {
                panics.push(format!("{}: {}", path.display(), mutant.what));
            }
        }
    }
    let _ = panic::take_hook();
    assert!(panics.is_empty(), "the interpreter panicked on:\n{}", panics.join("\n"));
    assert!(parsed > 50, "only {parsed} mutants parsed");
}

const BASE: &str = r#"
usm @x : f32[16]
usm @y : f32[16]
kernel @k(%x: buf<f32, read>, %y: buf<f32, write>) {
  %i = global_id 0
  %zero = const 0 : u32
  %one = const 1 : u32
  %four = const 4 : u32
  %v = load %x[%i]
  %s = for %j = %zero to %four step %one carry(%a = %v) {
    %b = add %a, %v
    yield %b
  }
  store %y[%i], %s
}
graph @g {
  %t = async_malloc f32[16]
  %n = kernel @k range(16) args(@x, @y) after(%t)
  %c = memcpy %t, @y, 64 after(%n)
  %f = async_free %t after(%c)
}
"#;

fn base() -> Module {
    interp_support::parse(BASE)
}

fn bad<T>(i: usize) -> Handle<T> {
    Handle::from_usize(i).unwrap()
}

/// Each corruption must give an error (never a panic, never silent success).
#[test]
fn api_corruptions_are_errors() {
    type Corruption = (&'static str, fn(&mut Module));
    let cases: Vec<Corruption> = vec![
        ("dangling kernel", |m| {
            let g = &mut m.graphs[bad(0)];
            if let NodeKind::Kernel(k) = &mut g.nodes[bad(1)].kind {
                k.kernel = bad(40);
            }
        }),
        ("dangling memory", |m| {
            let g = &mut m.graphs[bad(0)];
            if let NodeKind::Kernel(k) = &mut g.nodes[bad(1)].kind {
                k.args[0] = interp_support::ptr(bad(40));
            }
        }),
        ("dangling dynamic parameter", |m| {
            let g = &mut m.graphs[bad(0)];
            if let NodeKind::Kernel(k) = &mut g.nodes[bad(1)].kind {
                k.args[0] = Arg::Dyn(bad(3));
            }
        }),
        ("dangling op in a region", |m| {
            if let cmdgraph_ir::KernelBody::Ir(b) = &mut m.kernels[bad(0)].body {
                b.entry.ops.insert(0, bad(500));
            }
        }),
        ("use before definition", |m| {
            if let cmdgraph_ir::KernelBody::Ir(b) = &mut m.kernels[bad(0)].body {
                b.entry.ops.swap(0, 4);
            }
        }),
        ("loop containing itself", |m| {
            if let cmdgraph_ir::KernelBody::Ir(b) = &mut m.kernels[bad(0)].body {
                let for_op = b.entry.ops[5];
                if let OpKind::For { body, .. } = &mut b.ops[for_op].kind {
                    body.ops.insert(0, for_op);
                }
            }
        }),
        ("general loop whose yield has no condition", |m| {
            if let cmdgraph_ir::KernelBody::Ir(b) = &mut m.kernels[bad(0)].body {
                let for_op = b.entry.ops[5];
                if let OpKind::For { carried, body, .. } = b.ops[for_op].kind.clone() {
                    b.ops[for_op].kind = OpKind::Loop { carried, body };
                }
            }
        }),
        ("general loop whose condition is a float", |m| {
            if let cmdgraph_ir::KernelBody::Ir(b) = &mut m.kernels[bad(0)].body {
                let for_op = b.entry.ops[5];
                if let OpKind::For { carried, body, .. } = b.ops[for_op].kind.clone() {
                    let y = *body.ops.last().unwrap();
                    if let OpKind::Yield(vs) = &mut b.ops[y].kind {
                        vs.insert(0, vs[0]);
                    }
                    b.ops[for_op].kind = OpKind::Loop { carried, body };
                }
            }
        }),
        ("ill-typed add", |m| {
            if let cmdgraph_ir::KernelBody::Ir(b) = &mut m.kernels[bad(0)].body {
                let for_op = b.entry.ops[5];
                let OpKind::For { body, .. } = &b.ops[for_op].kind else { return };
                let add = body.ops[0];
                if let OpKind::Binary(_, _, rhs) = &mut b.ops[add].kind {
                    *rhs = bad(2); // %zero : u32 added to an f32
                }
            }
        }),
        ("zero-lane constant", |m| {
            if let cmdgraph_ir::KernelBody::Ir(b) = &mut m.kernels[bad(0)].body {
                let op = b.entry.ops[1];
                b.ops[op].kind = OpKind::Const(
                    cmdgraph_ir::types::Literal { value: cmdgraph_ir::types::LitValue::Int(0), ty: None },
                    Type { scalar: ScalarType::U32, lanes: 0 },
                );
            }
        }),
        ("store to a value that is not memory", |m| {
            if let cmdgraph_ir::KernelBody::Ir(b) = &mut m.kernels[bad(0)].body {
                let store = *b.entry.ops.last().unwrap();
                if let OpKind::Store { mem, .. } = &mut b.ops[store].kind {
                    *mem = cmdgraph_ir::kernel::MemBase::Value(bad(2));
                }
            }
        }),
        ("dangling edge", |m| {
            let g = &mut m.graphs[bad(0)];
            g.edges.append(
                cmdgraph_ir::Edge { from: bad(0), to: bad(77), kind: cmdgraph_ir::EdgeKind::MakeEdge },
                cmdgraph_ir::Span::UNDEFINED,
            );
        }),
        ("free of a node that is not an allocation", |m| {
            let g = &mut m.graphs[bad(0)];
            g.nodes[bad(3)].kind = NodeKind::AsyncFree { alloc: bad(1) };
        }),
        ("pointer to a node that is not an allocation", |m| {
            let g = &mut m.graphs[bad(0)];
            if let NodeKind::Memcpy { dst, .. } = &mut g.nodes[bad(2)].kind {
                dst.base = MemRef::Alloc(bad(1));
            }
        }),
        ("dynamic node with a dangling group", |m| {
            let g = &mut m.graphs[bad(0)];
            g.nodes[bad(1)].kind = NodeKind::Dynamic { dcg: bad(9) };
        }),
        ("dynamic group whose active alternative is missing", |m| {
            let g = &mut m.graphs[bad(0)];
            let NodeKind::Kernel(k) = g.nodes[bad(1)].kind.clone() else { return };
            let d = g.dcgs.append(
                cmdgraph_ir::DynCommandGroup {
                    name: "d".into(),
                    active: 4,
                    alternatives: vec![Alternative::Kernel(k)],
                    comments: Default::default(),
                },
                cmdgraph_ir::Span::UNDEFINED,
            );
            g.nodes[bad(1)].kind = NodeKind::Dynamic { dcg: d };
        }),
        ("zero local size", |m| {
            let g = &mut m.graphs[bad(0)];
            if let NodeKind::Kernel(k) = &mut g.nodes[bad(1)].kind {
                k.launch = Launch::NdRange { global: vec![16], local: vec![0], offset: vec![] };
            }
        }),
        ("launch overflowing u64", |m| {
            let g = &mut m.graphs[bad(0)];
            if let NodeKind::Kernel(k) = &mut g.nodes[bad(1)].kind {
                k.launch = Launch::Range(vec![1 << 32, 1 << 32, 1 << 32]);
            }
        }),
        ("absurd memory size", |m| {
            m.memories[bad(0)].count = u64::MAX;
        }),
        ("absurd allocation size", |m| {
            let g = &mut m.graphs[bad(0)];
            if let NodeKind::AsyncMalloc { count, .. } = &mut g.nodes[bad(0)].kind {
                *count = 1 << 60;
            }
        }),
        ("too few arguments", |m| {
            let g = &mut m.graphs[bad(0)];
            if let NodeKind::Kernel(k) = &mut g.nodes[bad(1)].kind {
                k.args.pop();
            }
        }),
    ];
    let run = |m: &Module| -> Result<(), InterpError> {
        let mut interp = Interpreter::new(m)?;
        let exec = interp.finalize("g")?;
        interp.run_with(exec, &RunOptions { fuel: Some(1_000_000), ..RunOptions::default() }).map(|_| ())
    };
    run(&base()).expect("the uncorrupted module runs");
    for (what, corrupt) in cases {
        let mut m = base();
        corrupt(&mut m);
        let result = panic::catch_unwind(AssertUnwindSafe(|| run(&m)));
        match result {
            Err(_) => panic!("{what}: the interpreter panicked"),
            Ok(Ok(())) => panic!("{what}: the corrupted module ran without error"),
            Ok(Err(e)) => assert!(!e.to_string().is_empty(), "{what}"),
        }
    }
}

/// Fuel bounds a runaway loop.
#[test]
fn fuel_stops_runaway_loops() {
    let mut interp = interp_support::interp(
        r#"
kernel @spin(%y: buf<u32, read_write>) {
  %zero = const 0 : u32
  %one = const 1 : u32
  %max = const 4294967295 : u32
  %n = for %i = %zero to %max step %one carry(%a = %zero) {
    %b = add %a, %one
    yield %b
  }
  store %y[%zero], %n
}
usm @y : u32[1]
graph @g {
  %s = kernel @spin single_task args(@y)
}
"#,
    );
    let exec = interp.finalize("g").unwrap();
    let err = interp.run_with(exec, &RunOptions { fuel: Some(10_000), ..RunOptions::default() }).unwrap_err();
    let fault = err.as_fault().unwrap();
    assert_eq!((fault.node.as_str(), &fault.kind), ("s", &FaultKind::OutOfFuel));
}
