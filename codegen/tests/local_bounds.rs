//! Work-group memory accesses whose index provably stays inside the array carry no bounds
//! check (lower/ranges.rs), and those that may leave it keep theirs (docs/codegen.md,
//! "Bounds checks"). Counted in the LLVM IR of each variant: every check is a branch to an
//! `in_bounds` block. The values stay checked on Vulkan by
//! lit-tests/run/out_of_range_local_memory_stays_in_its_array.cgir and the tiled matmul
//! tests (cli/tests/vulkan_contractions.rs).

use cmdgraph_codegen::{emit, module_variants, Emit, Options};

/// A kernel of 16 × 8 work-groups over a 512-element work-group array: each work-item
/// stores at `16 · ty + tx`, then `inside` loads `%v` from it.
fn module(inside: &str) -> String {
    format!(
        "kernel @k(%o: buf<f32, write>) {{
  %t = local f32[512]
  %tx = local_id 0
  %ty = local_id 1
  %g = global_id 0
  %sixteen = const 16 : u32
  %row = mul %ty, %sixteen
  %i = add %row, %tx
  %f = cast %g to f32
  store %t[%i], %f
  group_barrier
  {inside}
  store %o[%g], %v
}}
usm @o : f32[4096]
graph @g {{
  %k = kernel @k nd_range(global(256, 16), local(16, 8)) args(@o)
}}
"
    )
}

fn llvm(src: &str) -> String {
    let module = cmdgraph_ir::text::parse(src).unwrap_or_else(|d| panic!("parse: {d:?}\n{src}"));
    cmdgraph_ir::verify::verify(&module).unwrap_or_else(|d| panic!("verify: {d:?}"));
    let (k, v) = module_variants(&module).expect("variants").remove(0);
    emit(&module, k, &v, &Options { opt_level: 2 }, Emit::LlvmIr).unwrap_or_else(|e| panic!("{e}"))
}

/// Bounds-check branches in `ir` (one `in_bounds` block each).
fn checks(ir: &str) -> usize {
    ir.lines().filter(|l| l.starts_with("in_bounds")).count()
}

#[test]
fn provably_inside_work_group_indices_are_not_checked() {
    // The store indexes 0..=127 and the load 300..=427, both below 512: no check; only the
    // buffer store to `@o` (its count is a run-time value) keeps one.
    let inside = "%c = const 300 : u32\n  %j = add %i, %c\n  %v = load %t[%j]";
    assert_eq!(checks(&llvm(&module(inside))), 1, "{}", llvm(&module(inside)));
}

#[test]
fn indices_that_may_leave_the_array_keep_their_check() {
    for (what, inside) in [
        // 384 + 127 = 511 is inside, 385 + 127 = 512 is not.
        ("one past the end", "%c = const 385 : u32\n  %j = add %i, %c\n  %v = load %t[%j]"),
        // `ty - 1` wraps for ty = 0.
        ("a subtraction that may wrap", "%one = const 1 : u32\n  %j = sub %ty, %one\n  %v = load %t[%j]"),
        // A global id has no bound here (the launch may be updated).
        ("a global id", "%v = load %t[%g]"),
    ] {
        assert_eq!(checks(&llvm(&module(inside))), 2, "{what}");
    }
    let last = "%c = const 384 : u32\n  %j = add %i, %c\n  %v = load %t[%j]";
    assert_eq!(checks(&llvm(&module(last))), 1, "the last element is inside");
}
