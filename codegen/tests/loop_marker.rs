//! Issue 28: each module records the most loop back-edges one invocation takes after the
//! unrolling (`OpModuleProcessed "cmdgraph loop_back_edges N"`, or `unbounded`; docs/abi.md,
//! "Loop back-edges"), so the executor can warn where llvmpipe's budget of 65535 may cut
//! loops short (codegen/src/lower/budget.rs). Checked on the emitted SPIR-V at -O0 and -O2.

use cmdgraph_codegen::{emit, module_variants, Emit, Options};

/// The kernel `@k` with a decaying sum over `x` by `body` (`%acc` its result), stored.
fn module(body: &str) -> String {
    format!(
        "kernel @k(%x: buf<f32, read>, %o: buf<f32, write>, %n: u32) {{
  %g = global_id 0
  %zero = const 0 : u32
  %one = const 1 : u32
  %f0 = const 0.0 : f32
  %d = const 0.99993 : f32
{body}
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

/// One loop from 0 to `hi` (a constant count, or `%n`).
fn single(hi: &str) -> String {
    module(&format!(
        "  %hi = {hi}
  %acc = for %j = %zero to %hi step %one carry(%a = %f0) {{
    %v = load %x[%j]
    %m = mul %a, %d
    %a2 = add %m, %v
    yield %a2
  }}"
    ))
}

/// An outer loop of `outer` iterations around an inner one of `inner`.
fn nested(outer: u32, inner: u32) -> String {
    module(&format!(
        "  %no = const {outer} : u32
  %ni = const {inner} : u32
  %acc = for %p = %zero to %no step %one carry(%b = %f0) {{
    %in = for %j = %zero to %ni step %one carry(%a = %b) {{
      %v = load %x[%j]
      %m = mul %a, %d
      %a2 = add %m, %v
      yield %a2
    }}
    yield %in
  }}"
    ))
}

/// The marker's value (`N` or `unbounded`) in the one kernel's SPIR-V at -O0 and -O2 (the
/// same at both: it comes from the IR).
fn marker(src: &str) -> String {
    let module = cmdgraph_ir::text::parse(src).unwrap_or_else(|d| panic!("parse: {d:?}\n{src}"));
    cmdgraph_ir::verify::verify(&module).unwrap_or_else(|d| panic!("verify: {d:?}"));
    let (k, v) = module_variants(&module).expect("variants").remove(0);
    let found: Vec<String> = [0, 2]
        .iter()
        .map(|&opt| {
            let asm = emit(&module, k, &v, &Options { opt_level: opt }, Emit::SpirvAsm)
                .unwrap_or_else(|e| panic!("-O{opt}: {e}"));
            let lines: Vec<&str> = asm.lines().filter(|l| l.contains("cmdgraph loop_back_edges")).collect();
            assert_eq!(lines.len(), 1, "-O{opt}: one marker\n{asm}");
            let line = lines[0].trim();
            let rest = line.strip_prefix("OpModuleProcessed \"cmdgraph loop_back_edges ").expect(line);
            rest.trim_end_matches('"').to_string()
        })
        .collect();
    assert_eq!(found[0], found[1], "-O0 and -O2 disagree");
    found[0].clone()
}

#[test]
fn a_short_constant_loop_records_its_iterations() {
    // Within the budget: not unrolled, one back-edge per iteration.
    assert_eq!(marker(&single("const 37 : u32")), "37");
}

#[test]
fn an_unrolled_loop_records_one_back_edge_per_eight_iterations() {
    assert_eq!(marker(&single("const 100000 : u32")), "12500");
    assert_eq!(marker(&single("const 1000000 : u32")), "125000");
    // 100007 iterations: the tail of 7 guarded copies after the last full round takes no
    // back-edge.
    assert_eq!(marker(&single("const 100007 : u32")), "12500");
    assert_eq!(marker(&single("const 100008 : u32")), "12501");
}

#[test]
fn nested_loops_add_up() {
    // 1000 * (100 + 1) passes the budget: the inner loop is unrolled (12 rounds of 8 and a
    // tail of 4 per run), the outer one is not (it holds a loop): 1000 + 1000 * 12.
    assert_eq!(marker(&nested(1000, 100)), "13000");
    // Within the budget: as written, 20 * (30 + 1).
    assert_eq!(marker(&nested(20, 30)), "620");
    // A 4-iteration inner loop becomes straight-line code and the outer one is unrolled.
    assert_eq!(marker(&nested(100000, 4)), "12500");
}

#[test]
fn a_data_dependent_bound_is_unbounded() {
    assert_eq!(marker(&single("add %n, %zero")), "unbounded");
}

#[test]
fn a_kernel_without_loops_records_zero() {
    assert_eq!(marker(&module("  %acc = load %x[%g]")), "0");
}

#[test]
fn a_loop_around_a_barrier_counts_its_last_partial_round() {
    // A body whose lanes must meet keeps a test after each copy (codegen/src/lower/control.rs,
    // `tested_for`), so its last, partial, round of 8 copies is a back-edge too:
    // ceil(100001 / 8), where the rounds-and-tail shape takes floor(100001 / 8) = 12500.
    let src = "kernel @k(%x: buf<f32, read>, %o: buf<f32, write>) {
  %g = global_id 0
  %zero = const 0 : u32
  %one = const 1 : u32
  %hi = const 100001 : u32
  %f0 = const 0.0 : f32
  %acc = for %j = %zero to %hi step %one carry(%a = %f0) {
    %v = load %x[%zero]
    group_barrier
    %a2 = add %a, %v
    yield %a2
  }
  store %o[%g], %acc
}
usm @x : f32[1024]
usm @o : f32[64]
graph @g {
  %k = kernel @k nd_range(global(64), local(64)) args(@x, @o)
}
";
    assert_eq!(marker(src), "12501");
}
