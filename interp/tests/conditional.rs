//! Conditional nodes on the interpreter (docs/conditional.md): `while` with 0, 1 and many
//! rounds, `if` with and without `else`, `switch` in and past its cases, nesting, a
//! condition a kernel computes from data, the round limit, and what the verifier refuses.
//! Values are checked exactly against the same computation on the host.

use cmdgraph_interp::error::{FaultKind, InterpError};
use cmdgraph_interp::{Interpreter, RunOptions};
use cmdgraph_ir::Module;

/// Kernels and memory every test shares: `@x` (8 floats), `@flags` (4 words), `@rounds`
/// (a counter the bodies increment).
const COMMON: &str =
    "kernel @double_and_count_down(%x: buf<f32, read_write>, %c: buf<u32, read_write>, %r: buf<u32, read_write>) {
  %i = global_id 0
  %v = load %x[%i]
  %two = const 2.0 : f32
  %d = mul %v, %two
  store %x[%i], %d
  %zero = const 0 : u32
  %first = eq %i, %zero
  if %first {
    %one = const 1 : u32
    %n = load %c[%zero]
    %n1 = sub %n, %one
    store %c[%zero], %n1
    %k = load %r[%zero]
    %k1 = add %k, %one
    store %r[%zero], %k1
  }
}

kernel @add(%x: buf<f32, read_write>, %a: f32) {
  %i = global_id 0
  %v = load %x[%i]
  %s = add %v, %a
  store %x[%i], %s
}

kernel @halve_until_small(%x: buf<f32, read_write>, %c: buf<u32, write>) {
  %i = global_id 0
  %zero = const 0 : u32
  %first = eq %i, %zero
  if %first {
    %half = const 0.5 : f32
    %limit = const 1.0 : f32
    %eight = const 8 : u32
    %one = const 1 : u32
    %m = for %j = %zero to %eight step %one carry(%m0 = %zero) {
      %v = load %x[%j]
      %h = mul %v, %half
      store %x[%j], %h
      %big = gt %h, %limit
      %b = select %big, %one, %zero
      %m1 = max %m0, %b
      yield %m1
    }
    store %c[%zero], %m
  }
}

usm @x : f32[8]
usm @flags : u32[4]
usm @rounds : u32[1]

graph @loop_body {
  %k = kernel @double_and_count_down range(8) args(@x, @flags, @rounds)
}

graph @plus_one {
  %a = kernel @add range(8) args(@x, 1.0)
}

graph @plus_ten {
  %a = kernel @add range(8) args(@x, 10.0)
}

graph @nothing {
}
";

fn module(graphs: &str) -> Module {
    let text = format!("{COMMON}\n{graphs}");
    let m = cmdgraph_ir::text::parse(&text).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
    cmdgraph_ir::verify::verify(&m).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
    m
}

/// `@x` from `x0` and `@flags` from `flags` after one run of `@main`, and `@rounds`.
fn run(m: &Module, x0: &[f32], flags: [u32; 4], opts: &RunOptions) -> Result<(Vec<f32>, [u32; 4], u32), InterpError> {
    let mut it = Interpreter::new(m).expect("interpreter");
    it.bind_as::<f32>("x", x0).unwrap();
    it.bind_as::<u32>("flags", &flags).unwrap();
    let e = it.finalize("main").unwrap();
    it.run_with(e, opts)?;
    let x = it.read("x").unwrap().chunks(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let f: Vec<u32> =
        it.read("flags").unwrap().chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let r = it.read("rounds").unwrap();
    Ok((x, [f[0], f[1], f[2], f[3]], u32::from_le_bytes([r[0], r[1], r[2], r[3]])))
}

/// Full-precision floats in [1, 2) (not multiples of a power of two).
fn x0() -> Vec<f32> {
    (0..8).map(|i| 1.0 + (i as f32 * 0.618_034).fract() * 0.999_9 + 1e-7 * i as f32).collect()
}

#[test]
fn while_runs_zero_one_and_many_rounds_as_its_word_says() {
    let m = module(
        "graph @main {
  %w = while @flags do @loop_body
}",
    );
    for n in [0u32, 1, 7] {
        let (x, flags, rounds) = run(&m, &x0(), [n, 0, 0, 0], &RunOptions::default()).unwrap();
        let want: Vec<f32> = x0().iter().map(|v| v * 2f32.powi(n as i32)).collect();
        assert_eq!(x, want, "{n} rounds");
        assert_eq!((flags[0], rounds), (0, n), "{n} rounds: the word counts down, the body counts up");
    }
}

#[test]
fn if_takes_then_or_else_and_nothing_without_else() {
    let m = module(
        "graph @main {
  %i = if @flags + 4 then @plus_one else @plus_ten
  %j = if @flags + 8 then @plus_ten after(%i)
}",
    );
    // The additions each node makes, in order.
    for (flags, adds) in [
        ([0, 1, 0, 0], &[1.0f32][..]),
        ([0, 0, 0, 0], &[10.0][..]),
        ([0, 5, 3, 0], &[1.0, 10.0][..]),
        ([0, 0, 1, 0], &[10.0, 10.0][..]),
    ] {
        let (x, _, _) = run(&m, &x0(), flags, &RunOptions::default()).unwrap();
        let want: Vec<f32> = x0().iter().map(|&v| adds.iter().fold(v, |acc, a| acc + a)).collect();
        assert_eq!(x, want, "{flags:?}");
    }
}

#[test]
fn switch_takes_the_case_its_word_names_and_none_past_the_last() {
    let m = module(
        "graph @main {
  %s = switch @flags + 12 cases(@nothing, @plus_one, @plus_ten)
}",
    );
    for (word, add) in [(0u32, 0.0f32), (1, 1.0), (2, 10.0), (3, 0.0), (u32::MAX, 0.0)] {
        let (x, _, _) = run(&m, &x0(), [0, 0, 0, word], &RunOptions::default()).unwrap();
        let want: Vec<f32> = x0().iter().map(|v| v + add).collect();
        assert_eq!(x, want, "case {word}");
    }
}

#[test]
fn nested_conditionals_run_in_every_round() {
    // Each round of the loop doubles `@x`, then adds 1 when `@flags[1]` is set.
    let m = module(
        "graph @round {
  %k = kernel @double_and_count_down range(8) args(@x, @flags, @rounds)
  %i = if @flags + 4 then @plus_one after(%k)
}

graph @main {
  %w = while @flags do @round
}",
    );
    let (x, _, rounds) = run(&m, &x0(), [3, 1, 0, 0], &RunOptions::default()).unwrap();
    let want: Vec<f32> = x0().iter().map(|&v| ((v * 2.0 + 1.0) * 2.0 + 1.0) * 2.0 + 1.0).collect();
    assert_eq!((x, rounds), (want, 3));
}

#[test]
fn a_kernel_sets_the_condition_from_data() {
    // Halve every element while any is above 1: the count depends on the largest input.
    let m = module(
        "graph @halve {
  %h = kernel @halve_until_small single_task args(@x, @flags)
}

graph @main {
  %init = memfill @flags, 1 : u32, 1
  %w = while @flags do @halve after(%init)
}",
    );
    let start: Vec<f32> = x0().iter().enumerate().map(|(i, v)| v * (1u32 << (2 * i)) as f32).collect();
    let (x, flags, _) = run(&m, &start, [0, 0, 0, 0], &RunOptions::default()).unwrap();
    // The host: halve all until none is above 1 (the kernel halves, then tests).
    let mut want = start.clone();
    loop {
        want.iter_mut().for_each(|v| *v *= 0.5);
        if !want.iter().any(|&v| v > 1.0) {
            break;
        }
    }
    assert_eq!(x, want);
    assert_eq!(flags[0], 0);
    assert!(start.iter().any(|&v| v > 1000.0), "the inputs need many rounds");
}

#[test]
fn a_loop_that_never_ends_fails_at_the_round_limit_naming_the_node() {
    // The body adds 1 to @x and never touches @flags[0], set by a host-side bind.
    // The verifier refuses this loop (E0286); the interpreter still must not hang on a module
    // that skipped verification.
    let text = format!("{COMMON}\ngraph @main {{\n  %w = while @flags do @plus_one\n}}\n");
    let unverified = cmdgraph_ir::text::parse(&text).unwrap();
    let errors = cmdgraph_ir::verify::verify(&unverified).expect_err("E0286");
    assert_eq!(errors[0].code, "E0286", "{errors:?}");
    let m = unverified;
    let opts = RunOptions { loop_rounds: Some(100), ..RunOptions::default() };
    let err = run(&m, &x0(), [1, 0, 0, 0], &opts).expect_err("runs forever");
    match err {
        InterpError::Fault(f) => {
            assert_eq!(f.kind, FaultKind::LoopNeverEnds { rounds: 100 });
            assert_eq!(f.node, "w");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_fault_inside_a_body_names_the_path_through_it() {
    let text = "kernel @oob(%x: buf<f32, read_write>) {
  %i = global_id 0
  %big = const 100 : u32
  %j = add %i, %big
  %v = load %x[%j]
  store %x[%i], %v
}

usm @x : f32[8]
usm @flags : u32[1]

graph @bad {
  %o = kernel @oob range(8) args(@x)
}

graph @main {
  %i = if @flags then @bad
}
";
    let m = cmdgraph_ir::text::parse(text).unwrap();
    let mut it = Interpreter::new(&m).unwrap();
    it.bind_as::<u32>("flags", &[1]).unwrap();
    let e = it.finalize("main").unwrap();
    match it.run(e).expect_err("out of bounds") {
        InterpError::Fault(f) => assert_eq!(f.node, "i/bad:0/o"),
        other => panic!("{other:?}"),
    }
}

/// A module that contains itself through a body (which the verifier refuses, E0265) fails on
/// the interpreter at the nesting bound, never overflowing the stack.
#[test]
fn a_graph_that_runs_itself_through_a_body_fails_at_the_nesting_bound() {
    let text = "usm @flags : u32[1]

graph @g {
  %i = if @flags then @g
}
";
    let m = cmdgraph_ir::text::parse(text).unwrap();
    assert!(cmdgraph_ir::verify::verify(&m).is_err(), "E0265");
    let mut it = Interpreter::new(&m).unwrap();
    it.bind_as::<u32>("flags", &[1]).unwrap();
    let e = it.finalize("g").unwrap();
    let err = it.run(e).expect_err("recursion");
    assert!(err.to_string().contains("nest deeper than 32"), "{err}");
}
