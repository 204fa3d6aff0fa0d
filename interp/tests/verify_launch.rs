//! Launch invariants and their agreement with the reference interpreter: a module the
//! verifier rejects for its launches (E0219, E0224, E0229) or its sub-graph nesting (E0268)
//! is one the interpreter refuses as `Invalid`, and each near miss verifies clean and runs.

#[path = "../../ir/tests/verify_support/mod.rs"]
mod verify_support;

use cmdgraph_interp::{FaultKind, InterpError, Interpreter, RunOptions};
use cmdgraph_ir::kernel::{Builtin, OpKind, ParamType};
use cmdgraph_ir::types::{Access, Type};
use cmdgraph_ir::{MemRef, Module};
use std::time::{Duration, Instant};
use verify_support::{codes, expect_clean, expect_error, parse, usm, GraphBuilder, KernelBuilder, U32};

/// A kernel whose op on line 4 is `{op}`, launched by node `%n` on line 10 with `{launch}`.
fn launch_src(op: &str, launch: &str) -> String {
    format!(
        "kernel @k(%x: buf<u32, read_write>) {{
  %i = global_id 0
  %v = load %x[%i]
  {op}
  store %x[%i], %v
}}
usm @x : u32[64]
graph @g {{
  %ok = kernel @k nd_range(global(64), local(16)) args(@x)
  %n = kernel @k {launch} args(@x) after(%ok)
}}
"
    )
}

/// The launch of `%n` starts at column 18 of line 10 (for a one-line op).
const LAUNCH_AT: (usize, usize) = (10, 18);

/// What the interpreter says about running graph `@g` once: `Ok`, or the error.
fn interpret(m: &Module, fuel: Option<u64>) -> Result<(), InterpError> {
    let mut interp = Interpreter::new(m)?;
    let exec = interp.finalize("g")?;
    interp.run_with(exec, &RunOptions { fuel, ..RunOptions::default() }).map(|_| ())
}

/// Asserts that the interpreter refuses `src` as `Invalid`.
fn interpreter_refuses(src: &str) {
    match interpret(&parse(src), None) {
        Err(InterpError::Invalid { .. }) => {}
        other => panic!("expected the interpreter to refuse the module as invalid, got {other:?}\n{src}"),
    }
}

/// Asserts that the interpreter runs `src` to the end.
fn interpreter_runs(src: &str) {
    if let Err(e) = interpret(&parse(src), None) {
        panic!("expected the interpreter to run the module, got {e}\n{src}");
    }
}

/// Every work-group op: its keyword, the op lines (some nest it in a region), and the line
/// of the op in [`launch_src`].
const GROUP_OPS: [(&str, &str, usize); 8] = [
    ("group_barrier", "group_barrier", 4),
    ("local", "%t = local u32[16]", 4),
    ("local_id", "%w = local_id 0", 4),
    ("group_id", "%w = group_id 1", 4),
    ("local_range", "%w = local_range 2", 4),
    ("group_range", "%w = group_range 0", 4),
    ("group_barrier", "%c = eq %i, %i\n  if %c {\n    group_barrier\n  }", 6),
    (
        "local_id",
        "%one = const 1 : u32\n  %end = add %i, %one\n  for %j = %i to %end step %one {\n    %w = local_id 0\n  }",
        7,
    ),
];

#[test]
fn work_group_ops_need_an_nd_range_launch() {
    for (keyword, op, op_line) in GROUP_OPS {
        for launch in ["range(64)", "range(8, 8)", "single_task"] {
            let bad = launch_src(op, launch);
            // Ops of several lines move the node down.
            expect_error(&bad, "E0229", LAUNCH_AT.0 + op.matches('\n').count(), LAUNCH_AT.1);
            let diags = cmdgraph_ir::verify::verify(&parse(&bad)).unwrap_err();
            let kind = launch.split('(').next().unwrap_or(launch);
            assert_eq!(
                diags[0].message,
                format!("kernel @k uses `{keyword}` but is launched with {kind}, which has no work-groups")
            );
            // The secondary location is the op.
            let (span, label) = &diags[0].secondary[0];
            assert_eq!(bad[..span.start as usize].matches('\n').count() + 1, op_line, "{bad}");
            assert_eq!(*label, format!("`{keyword}` needs a work-group"));
            interpreter_refuses(&bad);
        }
        // The near miss: the same kernel under an nd_range.
        let good = launch_src(op, "nd_range(global(8, 8), local(4, 2))");
        expect_clean(&good);
        interpreter_runs(&good);
    }
}

#[test]
fn global_builtins_need_no_work_group() {
    for op in ["%w = global_id 2", "%w = global_range 1"] {
        for launch in ["range(64)", "single_task"] {
            let src = launch_src(op, launch);
            expect_clean(&src);
            interpreter_runs(&src);
        }
    }
}

/// `global_id 2` and `global_range 1` in launches of fewer dimensions: defined as id 0 and
/// size 1, in the verifier and the interpreter alike.
#[test]
fn builtin_dimensions_past_the_launch_read_as_id_zero_and_size_one() {
    let src = "kernel @dims(%x: buf<u32, write>) {
  %i = global_id 0
  %z = global_id 2
  %r = global_range 1
  %l = local_id 2
  %s = add %z, %r
  %t = add %s, %l
  store %x[%i], %t
}
usm @x : u32[4]
graph @g {
  %one = kernel @dims nd_range(global(2), local(1)) args(@x)
  %two = kernel @dims nd_range(global(4), local(2), offset(0)) args(@x) after(%one)
}
";
    expect_clean(src);
    let m = parse(src);
    let mut interp = Interpreter::new(&m).unwrap();
    let exec = interp.finalize("g").unwrap();
    interp.run(exec).unwrap();
    assert_eq!(interp.read_as::<u32>("x").unwrap(), vec![1, 1, 1, 1]);
    let single = src.replace("%z = global_id 2", "%z = global_id 1").replace("%l = local_id 2\n", "");
    let single = single.replace("%t = add %s, %l", "%t = add %s, %z");
    let single = single.replace("nd_range(global(2), local(1))", "single_task");
    let single = single.replace("nd_range(global(4), local(2), offset(0))", "range(4)");
    expect_clean(&single);
    let m = parse(&single);
    let mut interp = Interpreter::new(&m).unwrap();
    let exec = interp.finalize("g").unwrap();
    interp.run(exec).unwrap();
    assert_eq!(interp.read_as::<u32>("x").unwrap(), vec![1, 1, 1, 1]);
}

#[test]
fn command_group_alternatives_are_checked_like_nodes() {
    let src = |launch: &str| {
        format!(
            "kernel @k(%x: buf<u32, read_write>) {{
  %l = local_id 0
  %v = load %x[%l]
  store %x[%l], %v
}}
usm @x : u32[64]
graph @g {{
  dcg %d active(0) {{
    kernel @k {launch} args(@x)
    kernel @k nd_range(global(64), local(64)) args(@x)
  }}
  %n = dynamic %d
}}
"
        )
    };
    // The alternative's span is the whole command.
    expect_error(&src("single_task"), "E0229", 9, 5);
    interpreter_refuses(&src("single_task"));
    expect_clean(&src("nd_range(global(64), local(32))"));
    interpreter_runs(&src("nd_range(global(64), local(32))"));
}

#[test]
fn work_group_memory_parameters_hide_the_op_error() {
    let src = |launch: &str| {
        format!(
            "kernel @tile(%x: buf<f32, read_write>, %t: local<f32>) {{
  %i = local_id 0
  %v = load %x[%i]
  store %t[%i], %v
}}
usm @x : f32[64]
graph @g {{
  %k = kernel @tile {launch} args(@x, local f32[16])
}}
"
        )
    };
    let bad = src("range(16)");
    expect_error(&bad, "E0219", 8, 21);
    let diags = cmdgraph_ir::verify::verify(&parse(&bad)).unwrap_err();
    let (span, label) = &diags[0].secondary[0];
    assert_eq!(&bad[span.start as usize..span.end as usize], "%t: local<f32>");
    assert_eq!(label, "work-group memory parameter declared here");
    interpreter_refuses(&bad);
    let good = src("nd_range(global(16), local(16))");
    expect_clean(&good);
    interpreter_runs(&good);
}

#[test]
fn launch_ids_and_sizes_fit_the_u32_builtins() {
    let cases = [
        // (bad launch, near miss); the near misses are too big to run, but must verify.
        ("range(4294967296)", "range(4294967295)"),
        ("range(1, 4294967296)", "range(1, 65536)"),
        ("nd_range(global(4294967295), local(5), offset(2))", "nd_range(global(4294967295), local(5), offset(1))"),
        (
            "nd_range(global(8, 8), local(8, 8), offset(0, 4294967289))",
            "nd_range(global(8, 8), local(8, 8), offset(0, 4294967288))",
        ),
    ];
    for (bad, good) in cases {
        let bad_src = launch_src("%w = global_range 0", bad);
        expect_error(&bad_src, "E0224", LAUNCH_AT.0, LAUNCH_AT.1);
        expect_clean(&launch_src("%w = global_range 0", good));
    }
    // The interpreter refuses ids past u32 and work-item counts past 64 bits up front, and
    // starts the near misses: the fuel covers `%ok` (64 work-items x 4 ops) and a few groups
    // of `%n`, so the run stops for fuel before `%n` indexes past `@x`.
    for bad in ["nd_range(global(4294967295), local(5), offset(2))", "range(4294967295, 4294967295, 2)"] {
        interpreter_refuses(&launch_src("%w = global_range 0", bad));
    }
    let good = parse(&launch_src("%w = global_range 0", "nd_range(global(4294967295), local(5), offset(1))"));
    match interpret(&good, Some(400)) {
        Err(InterpError::Fault(f)) => assert_eq!(f.kind, FaultKind::OutOfFuel),
        other => panic!("expected the run to start and run out of fuel, got {other:?}"),
    }
}

/// Graphs `@l{levels}` down to `@l1`, each `@lN` running `@l{N+1}` as a sub-graph.
fn chain(levels: usize) -> String {
    let mut src = format!("kernel @k(%x: buf<u32, read_write>) {{\n  %i = global_id 0\n  %v = load %x[%i]\n  store %x[%i], %v\n}}\nusm @x : u32[1]\ngraph @l{levels} {{ %n = kernel @k single_task args(@x) }}\n");
    for i in (1..levels).rev() {
        src.push_str(&format!("graph @l{i} {{ %s = subgraph @l{} }}\n", i + 1));
    }
    src
}

#[test]
fn sub_graphs_nest_at_most_256_levels() {
    let deepest = chain(256);
    expect_clean(&deepest);
    let m = parse(&deepest);
    let mut interp = Interpreter::new(&m).unwrap();
    let exec = interp.finalize("l1").unwrap();
    interp.run(exec).unwrap();

    let too_deep = chain(257);
    // Line 8 holds `graph @l256 { %s = subgraph @l257 }`; the node starts at column 15.
    expect_error(&too_deep, "E0268", 8, 15);
    let m = parse(&too_deep);
    let mut interp = Interpreter::new(&m).unwrap();
    assert!(matches!(interp.finalize("l1"), Err(InterpError::Invalid { .. })));
    // @l2 and the graphs it contains are 256 levels: fine on their own.
    assert!(interp.finalize("l2").is_ok());
}

#[test]
fn a_too_deep_chain_is_reported_once_from_its_outermost_graph() {
    let mut src = chain(257);
    src.push_str("graph @top { %a = subgraph @l1\n %b = subgraph @l200 }\n");
    let m = parse(&src);
    let errors = cmdgraph_ir::verify::check(&m);
    assert_eq!(codes(&m), ["E0268"], "{errors:#?}");
    let cmdgraph_ir::verify::VerifyError::SubgraphNestingTooDeep { chain, .. } = &errors[0] else {
        panic!("{errors:#?}")
    };
    assert_eq!(chain.len(), 258);
    assert_eq!((chain[0].as_str(), chain[1].as_str(), chain[257].as_str()), ("@top", "@l1", "@l257"));
}

#[test]
fn deep_nesting_and_recursion_together_do_not_loop() {
    // @l300 runs @l1 again: a loop (E0265) under a chain that is too deep without it.
    let src =
        chain(300).replace("graph @l300 { %n = kernel @k single_task args(@x) }", "graph @l300 { %s = subgraph @l1 }");
    let m = parse(&src);
    assert_eq!(codes(&m), ["E0265", "E0268"]);
}

/// Each kernel body is scanned once, not once per launch: 10^5 launches of a kernel of
/// 2 * 10^4 ops whose work-group op comes last take a scan per kernel (a per-launch scan
/// would visit 2 * 10^9 ops).
#[test]
fn many_launches_of_a_large_kernel_are_checked_in_linear_time() {
    let mut m = Module::default();
    let x = usm(&mut m, "x", 64);
    let (mut k, _) =
        KernelBuilder::new("big", &[("x", ParamType::Buffer { elem: Type::F32, access: Access::ReadWrite })]);
    for i in 0..20_000 {
        k.op(OpKind::Builtin(Builtin::GlobalId, 0), &[(&format!("i{i}"), U32)]);
    }
    k.op(OpKind::GroupBarrier, &[]);
    let kh = k.finish(&mut m);
    let mut g = GraphBuilder::new("g");
    for n in 0..100_000 {
        g.node(&format!("n{n}"), verify_support::launch(kh, 64, vec![verify_support::ptr(MemRef::Memory(x))]));
    }
    g.finish(&mut m);
    let start = Instant::now();
    let errors = cmdgraph_ir::verify::check(&m);
    let elapsed = start.elapsed();
    assert_eq!(errors.len(), 100_000);
    assert!(errors.iter().all(|e| e.code() == "E0229"));
    assert!(elapsed < Duration::from_secs(60), "verification took {elapsed:?}");
}
