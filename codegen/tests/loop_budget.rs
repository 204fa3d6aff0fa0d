//! Issue 28, item 1.1: llvmpipe runs at most 65535 loop iterations per shader invocation,
//! all loops together (codegen/src/lower/budget.rs). A kernel whose loops may exceed that
//! gets [`UNROLL`] copies of each innermost loop body per back-edge; one that provably
//! stays within it is emitted unchanged. Checked on the emitted SPIR-V at -O0 to -O3 (the
//! LLVM pipeline must not fold the copies back into one): the body's `OpFMul` (one per copy)
//! and the loops (`OpLoopMerge`). cli/tests/vulkan_long_loops.rs runs such loops on llvmpipe.

use cmdgraph_codegen::{emit, module_variants, Emit, Options};

/// Body copies per back-edge (codegen/src/lower/budget.rs).
const UNROLL: usize = 8;

/// A decaying sum over `x[lo .. hi]` with the given bound values (`%n` is a parameter).
fn module(lo: &str, hi: &str) -> String {
    format!(
        "kernel @k(%x: buf<f32, read>, %o: buf<f32, write>, %n: u32) {{
  %g = global_id 0
  %lo = {lo}
  %hi = {hi}
  %one = const 1 : u32
  %f0 = const 0.0 : f32
  %d = const 0.99993 : f32
  %acc = for %j = %lo to %hi step %one carry(%a = %f0) {{
    %v = load %x[%j]
    %m = mul %a, %d
    %a2 = add %m, %v
    yield %a2
  }}
  store %o[%g], %acc
}}
usm @x : f32[1024]
usm @o : f32[64]
graph @g {{
  %k = kernel @k range(64) args(@x, @o, 100000 : u32)
}}
"
    )
}

/// An outer loop of `outer` iterations around an inner one of `inner` (constants, or `%n`
/// for a parameter).
fn nested(outer: &str, inner: u32) -> String {
    format!(
        "kernel @k(%x: buf<f32, read>, %o: buf<f32, write>, %n: u32) {{
  %g = global_id 0
  %zero = const 0 : u32
  %no = {outer}
  %ni = const {inner} : u32
  %one = const 1 : u32
  %f0 = const 0.0 : f32
  %d = const 0.99993 : f32
  %acc = for %p = %zero to %no step %one carry(%b = %f0) {{
    %in = for %j = %zero to %ni step %one carry(%a = %b) {{
      %v = load %x[%j]
      %m = mul %a, %d
      %a2 = add %m, %v
      yield %a2
    }}
    yield %in
  }}
  store %o[%g], %acc
}}
usm @x : f32[1024]
usm @o : f32[64]
graph @g {{
  %k = kernel @k range(64) args(@x, @o, 100000 : u32)
}}
"
    )
}

/// `(OpFMul, OpLoopMerge)` counts in the SPIR-V of the one kernel at each -O level.
fn counts(src: &str) -> Vec<(usize, usize)> {
    let module = cmdgraph_ir::text::parse(src).unwrap_or_else(|d| panic!("parse: {d:?}\n{src}"));
    cmdgraph_ir::verify::verify(&module).unwrap_or_else(|d| panic!("verify: {d:?}"));
    let (k, v) = module_variants(&module).expect("variants").remove(0);
    (0..=3)
        .map(|opt| {
            let asm = emit(&module, k, &v, &Options { opt_level: opt }, Emit::SpirvAsm)
                .unwrap_or_else(|e| panic!("-O{opt}: {e}"));
            let n = |op: &str| asm.lines().filter(|l| l.split_whitespace().any(|w| w == op)).count();
            (n("OpFMul"), n("OpLoopMerge"))
        })
        .collect()
}

#[test]
fn a_loop_bounded_by_a_parameter_keeps_its_copies_at_every_level() {
    for (opt, (muls, loops)) in counts(&module("const 0 : u32", "add %n, %g")).into_iter().enumerate() {
        assert!(muls >= UNROLL, "-O{opt}: {muls} OpFMul, want at least {UNROLL}");
        assert_eq!(loops, 1, "-O{opt}: one loop");
    }
}

#[test]
fn a_constant_loop_within_the_budget_is_not_unrolled() {
    for (opt, (muls, loops)) in counts(&module("const 0 : u32", "const 65535 : u32")).into_iter().enumerate() {
        assert_eq!((muls, loops), (1, 1), "-O{opt}");
    }
}

#[test]
fn a_constant_loop_past_the_budget_is_unrolled() {
    for (opt, (muls, loops)) in counts(&module("const 0 : u32", "const 65536 : u32")).into_iter().enumerate() {
        assert!(muls >= UNROLL, "-O{opt}: {muls} OpFMul");
        assert_eq!(loops, 1, "-O{opt}");
    }
}

#[test]
fn nested_loops_count_against_one_budget() {
    // 2 * (30000 + 1) = 60002 back-edges fit; 3 * (30000 + 1) = 90003 do not: the inner loop
    // is unrolled, the outer one keeps one copy of its body.
    for (opt, (muls, loops)) in counts(&nested("const 2 : u32", 30000)).into_iter().enumerate() {
        assert_eq!((muls, loops), (1, 2), "-O{opt}");
    }
    for (opt, (muls, loops)) in counts(&nested("const 3 : u32", 30000)).into_iter().enumerate() {
        assert!(muls >= UNROLL, "-O{opt}: {muls} OpFMul");
        assert_eq!(loops, 2, "-O{opt}");
    }
}

#[test]
fn a_short_constant_loop_in_a_long_loop_is_straight_line_and_the_long_one_unrolled() {
    // 3 iterations in a row per copy, 8 copies of the outer body, one loop left.
    for (opt, (muls, loops)) in counts(&nested("add %n, %g", 3)).into_iter().enumerate() {
        assert!(muls >= 3 * UNROLL, "-O{opt}: {muls} OpFMul, want at least {}", 3 * UNROLL);
        assert_eq!(loops, 1, "-O{opt}");
    }
}

/// The most `OpFMul`s in one basic block of the kernel's SPIR-V at each -O level.
fn muls_per_block(src: &str) -> Vec<usize> {
    let module = cmdgraph_ir::text::parse(src).unwrap_or_else(|d| panic!("parse: {d:?}\n{src}"));
    let (k, v) = module_variants(&module).expect("variants").remove(0);
    (0..=3)
        .map(|opt| {
            let asm = emit(&module, k, &v, &Options { opt_level: opt }, Emit::SpirvAsm)
                .unwrap_or_else(|e| panic!("-O{opt}: {e}"));
            asm.split("OpLabel")
                .map(|block| block.lines().filter(|l| l.split_whitespace().any(|w| w == "OpFMul")).count())
                .max()
                .unwrap_or(0)
        })
        .collect()
}

#[test]
fn a_round_of_copies_has_no_test_between_them() {
    // The unrolled loop's rounds are straight-line code (codegen/src/lower/control.rs), so
    // a driver may issue every copy's load before the first returns; a test after each
    // copy would put each copy in a block of its own.
    // (The body reads no memory: a load is a bounds-check diamond of its own.)
    let src = module("const 0 : u32", "add %n, %g").replace("%v = load %x[%j]", "%v = cast %j to f32");
    for (opt, most) in muls_per_block(&src).into_iter().enumerate() {
        assert_eq!(most, UNROLL, "-O{opt}: the most OpFMul in one block");
    }
}
