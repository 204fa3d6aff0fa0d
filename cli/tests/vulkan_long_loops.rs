//! Loops longer than llvmpipe's loop budget (docs/executor.md, "llvmpipe ends every loop
//! after 65535 iterations"; codegen/src/lower/budget.rs) give the interpreter's results on
//! the default Vulkan device, at every -O level, with validation on (issue 28, item 1.1).
//!
//! Mesa's counter of 65535 iterations is per shader invocation and shared by all its loops,
//! so the kernels here exceed it with one loop (100,000 and 200,003 iterations), a strided
//! signed loop, two loops in a row, an outer loop around a long inner one, a long outer
//! loop around a short constant one, and constant loops of 0 to 9 iterations (some at the
//! limits of `u32` and `i32`) inside a long one. Carried values
//! are full-precision float recurrences (every iteration changes the bits) and wrapping sums
//! of the induction variable; work-items of one SIMD batch have different trip counts. The
//! second test runs trip counts around the unroll factor and bounds near the limits of every
//! integer type.

mod support;

use cmdgraph_codegen::bundle::{compile_module, Llvm};
use cmdgraph_codegen::Options;
use support::{passes, Both};

const LONG: &str = "
// Every work-item g runs j = g .. n: a decaying sum of x[j] and the wrapping sum of j.
kernel @long(%x: buf<f32, read>, %o: buf<f32, write>, %c: buf<u32, write>, %n: u32) {
  %g = global_id 0
  %zero = const 0 : u32
  %one = const 1 : u32
  %f0 = const 0.0 : f32
  %decay = const 0.99993 : f32
  %acc, %sum = for %j = %g to %n step %one carry(%a = %f0, %k = %zero) {
    %v = load %x[%j]
    %d = mul %a, %decay
    %a2 = add %d, %v
    %k2 = add %k, %j
    yield %a2, %k2
  }
  store %o[%g], %acc
  store %c[%g], %sum
}

// A signed loop with step 3 from a negative start: (hi - lo) / 3 iterations, about 116,667.
kernel @strided(%x: buf<f32, read>, %o: buf<f32, write>, %c: buf<i32, write>, %lo: i32, %hi: i32, %st: i32) {
  %g = global_id 0
  %gi = cast %g to i32
  %start = add %lo, %gi
  %zero = const 0 : i32
  %f0 = const 0.0 : f32
  %half = const 0.4999 : f32
  %acc, %sum = for %j = %start to %hi step %st carry(%a = %f0, %k = %zero) {
    %idx = sub %j, %lo
    %v = load %x[%idx]
    %d = mul %a, %half
    %a2 = sub %v, %d
    %k2 = add %k, %j
    yield %a2, %k2
  }
  store %o[%g], %acc
  store %c[%g], %sum
}

// Two 50,000-iteration loops in a row (the budget is shared), then `outer` times an inner
// loop of `inner` iterations.
kernel @shared(%x: buf<f32, read>, %o: buf<f32, write>, %n: u32, %outer: u32, %inner: u32) {
  %g = global_id 0
  %zero = const 0 : u32
  %one = const 1 : u32
  %f0 = const 0.0 : f32
  %decay = const 0.9999 : f32
  %a1 = for %j = %g to %n step %one carry(%a = %f0) {
    %v = load %x[%j]
    %d = mul %a, %decay
    %a2 = add %d, %v
    yield %a2
  }
  %a3 = for %j2 = %zero to %n step %one carry(%b = %a1) {
    %v2 = load %x[%j2]
    %e = mul %b, %decay
    %b2 = sub %e, %v2
    yield %b2
  }
  %a4 = for %p = %zero to %outer step %one carry(%c = %a3) {
    %a5 = for %q = %p to %inner step %one carry(%e2 = %c) {
      %v3 = load %x[%q]
      %f = mul %e2, %decay
      %e3 = add %f, %v3
      yield %e3
    }
    yield %a5
  }
  store %o[%g], %a4
}

// An outer loop of 100,000 - g iterations around a constant 3-iteration one (it becomes
// straight-line code, and the outer loop is unrolled).
kernel @small_inner(%x: buf<f32, read>, %o: buf<f32, write>, %n: u32) {
  %g = global_id 0
  %zero = const 0 : u32
  %one = const 1 : u32
  %three = const 3 : u32
  %f0 = const 0.0 : f32
  %decay = const 0.99991 : f32
  %acc = for %p = %g to %n step %one carry(%a = %f0) {
    %in = for %q = %zero to %three step %one carry(%b = %a) {
      %i = add %p, %q
      %v = load %x[%i]
      %m = mul %b, %decay
      %b2 = add %m, %v
      yield %b2
    }
    yield %in
  }
  store %o[%g], %acc
}

// Constant loops inside a 20,000-iteration one: 5 iterations ending at u32::MAX, 7 from -5
// by 2, 3 ending at i32::MAX by 3, none (7 to 3), 8 (straight-line code) and 9 (a loop of
// 8 copies per back-edge, so the outer loop keeps one copy: 20,000 * (1 + 2) back-edges).
kernel @constants(%x: buf<f32, read>, %o: buf<f32, write>, %c: buf<u32, write>, %n: u32) {
  %g = global_id 0
  %zero = const 0 : u32
  %one = const 1 : u32
  %three = const 3 : u32
  %seven = const 7 : u32
  %eight = const 8 : u32
  %nine = const 9 : u32
  %ulo = const 4294967290 : u32
  %uhi = const 4294967295 : u32
  %zi = const 0 : i32
  %ilo = const -5 : i32
  %ihi = const 9 : i32
  %two_i = const 2 : i32
  %three_i = const 3 : i32
  %mlo = const 2147483640 : i32
  %mhi = const 2147483647 : i32
  %f0 = const 0.0 : f32
  %decay = const 0.99991 : f32
  %acc, %tot = for %p = %g to %n step %one carry(%a = %f0, %t = %zero) {
    %t1 = for %j = %ulo to %uhi step %one carry(%s = %t) {
      %s2 = add %s, %j
      yield %s2
    }
    %t2 = for %j2 = %ilo to %ihi step %two_i carry(%s3 = %zi) {
      %s4 = add %s3, %j2
      yield %s4
    }
    %t3 = for %j3 = %mlo to %mhi step %three_i carry(%s5 = %t2) {
      %s6 = add %s5, %j3
      yield %s6
    }
    %t4 = for %j4 = %seven to %three step %one carry(%s7 = %t1) {
      %s8 = mul %s7, %seven
      yield %s8
    }
    %f8 = for %j5 = %zero to %eight step %one carry(%b = %a) {
      %i5 = add %p, %j5
      %v5 = load %x[%i5]
      %m5 = mul %b, %decay
      %b2 = add %m5, %v5
      yield %b2
    }
    %f9 = for %j6 = %zero to %nine step %one carry(%b3 = %f8) {
      %i6 = add %p, %j6
      %v6 = load %x[%i6]
      %m6 = mul %b3, %decay
      %b4 = sub %v6, %m6
      yield %b4
    }
    %u = cast %t3 to u32
    %t5 = add %t4, %u
    yield %f9, %t5
  }
  store %o[%g], %acc
  store %c[%g], %tot
}

usm @x : f32[360000]
usm @o1 : f32[16]
usm @c1 : u32[16]
usm @o2 : f32[16]
usm @c2 : u32[16]
usm @o3 : f32[16]
usm @c3 : i32[16]
usm @o4 : f32[16]
usm @o5 : f32[16]
usm @o6 : f32[16]
usm @c6 : u32[16]

graph @g {
  %a = kernel @long range(16) args(@x, @o1, @c1, 100000 : u32)
  %b = kernel @long range(16) args(@x, @o2, @c2, 200003 : u32)
  %s = kernel @strided range(16) args(@x, @o3, @c3, -150000 : i32, 200000 : i32, 3 : i32)
  %t = kernel @shared range(16) args(@x, @o4, 50000 : u32, 4 : u32, 30000 : u32)
  %u = kernel @small_inner range(16) args(@x, @o5, 100000 : u32)
  %v = kernel @constants range(16) args(@x, @o6, @c6, 20000 : u32)
}
";

fn bundle(module: &cmdgraph_ir::Module, opt_level: u8) -> Vec<u8> {
    let (b, _) = compile_module(module, &passes(None), &Options { opt_level }, &Llvm)
        .unwrap_or_else(|e| panic!("-O{opt_level}: {e}"));
    b.to_bytes().unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn loops_past_llvmpipes_budget_match_the_interpreter_at_every_opt_level() {
    let module = cmdgraph_ir::text::parse(LONG).unwrap_or_else(|d| panic!("{d:?}"));
    for opt_level in 0..=3 {
        let b = bundle(&module, opt_level);
        let mut both = Both::new(&module, &b, 28).unwrap_or_else(|e| panic!("-O{opt_level}: {e}"));
        let compared = both.run("g", 1).unwrap_or_else(|e| panic!("-O{opt_level}: {e}"));
        assert_eq!(compared, 11, "-O{opt_level}");
    }
}

/// One kernel per integer type: work-item `w` runs `for j = lo[w] to hi[w] step st[w]`,
/// counting iterations and summing `j` (wrapping) and keeping the last `j`.
fn edge_module(ty: &str) -> String {
    format!(
        "
kernel @edges(%lo: buf<{ty}, read>, %hi: buf<{ty}, read>, %st: buf<{ty}, read>, %n: buf<u32, write>, %s: buf<{ty}, write>, %l: buf<{ty}, write>) {{
  %w = global_id 0
  %a = load %lo[%w]
  %b = load %hi[%w]
  %c = load %st[%w]
  %zero = const 0 : u32
  %one = const 1 : u32
  %z = const 0 : {ty}
  %cnt, %sum, %last = for %j = %a to %b step %c carry(%k = %zero, %t = %z, %p = %z) {{
    %k2 = add %k, %one
    %t2 = add %t, %j
    yield %k2, %t2, %j
  }}
  store %n[%w], %cnt
  store %s[%w], %sum
  store %l[%w], %last
}}
usm @lo : {ty}[{N}]
usm @hi : {ty}[{N}]
usm @st : {ty}[{N}]
usm @n : u32[{N}]
usm @s : {ty}[{N}]
usm @l : {ty}[{N}]
graph @g {{
  %k = kernel @edges range({N}) args(@lo, @hi, @st, @n, @s, @l)
}}
",
        N = EDGE_ITEMS
    )
}

const EDGE_ITEMS: usize = 64;

/// `(lo, hi, step)` triples for a type with bounds `min..=max` (as i128): trip counts 0 to 17
/// and 100 (every exit position in the unrolled body), empty and reversed ranges, steps past
/// the range, and ranges ending at or starting from the type's limits.
fn edge_cases(min: i128, max: i128) -> Vec<(i128, i128, i128)> {
    let mut v = Vec::new();
    for n in 0..=17 {
        v.push((5, 5 + n, 1));
    }
    v.push((0, 100, 1));
    v.push((7, 3, 1));
    v.push(((-3).max(min), 40, 7));
    v.push((0, 10, 11));
    v.push((0, 10, 10));
    v.push((0, 10, 9));
    for n in [1, 7, 8, 9, 16, 17] {
        v.push((max - n, max, 1));
        v.push((min, min + n, 1));
        v.push((max - 3 * n, max, 3));
    }
    v.push((max - 1, max, max));
    v.push((min, max, max));
    v.push((min, max, max / 4));
    v.push((max - 100, max, 13));
    v.push((min, min + 50, 2));
    v.push((max, max, 1));
    v.push((min, min, 1));
    v.push((max, min, 1));
    v
}

fn encode(ty: &str, values: &[i128]) -> Vec<u8> {
    let mut out = Vec::new();
    for &x in values {
        match ty {
            "i32" => out.extend_from_slice(&(x as i32).to_le_bytes()),
            "u32" => out.extend_from_slice(&(x as u32).to_le_bytes()),
            "i64" => out.extend_from_slice(&(x as i64).to_le_bytes()),
            _ => out.extend_from_slice(&(x as u64).to_le_bytes()),
        }
    }
    out
}

#[test]
fn edge_trip_counts_and_bounds_at_the_type_limits_match_the_interpreter() {
    let types: [(&str, i128, i128); 4] = [
        ("i32", i32::MIN.into(), i32::MAX.into()),
        ("u32", 0, u32::MAX.into()),
        ("i64", i64::MIN.into(), i64::MAX.into()),
        ("u64", 0, u64::MAX.into()),
    ];
    for (ty, min, max) in types {
        let module = cmdgraph_ir::text::parse(&edge_module(ty)).unwrap_or_else(|d| panic!("{d:?}"));
        let mut cases = edge_cases(min, max);
        assert!(cases.len() <= EDGE_ITEMS, "{} cases", cases.len());
        cases.resize(EDGE_ITEMS, (1, 0, 1));
        let column = |f: fn(&(i128, i128, i128)) -> i128| encode(ty, &cases.iter().map(f).collect::<Vec<_>>());
        let inputs = [("lo", column(|c| c.0)), ("hi", column(|c| c.1)), ("st", column(|c| c.2))];
        for opt_level in [0, 2] {
            let b = bundle(&module, opt_level);
            let mut both = Both::new(&module, &b, 5).unwrap_or_else(|e| panic!("{ty} -O{opt_level}: {e}"));
            for (name, bytes) in &inputs {
                both.interp.bind(name, bytes).unwrap_or_else(|e| panic!("{e}"));
                both.ex.bind(name, bytes).unwrap_or_else(|e| panic!("{e}"));
            }
            let compared = both.run("g", 1).unwrap_or_else(|e| panic!("{ty} -O{opt_level}: {e}"));
            assert_eq!(compared, 6, "{ty} -O{opt_level}");
        }
    }
}

/// A step that is not positive runs no iteration on the device (docs/codegen.md,
/// "Deviations": the interpreter faults instead, so there is nothing to compare with), in
/// the unrolled loop too: the count stays 0, the sum 0 and the last value the initial 0.
#[test]
fn a_non_positive_step_runs_no_iteration_on_the_device() {
    for (ty, steps) in [("i32", [0i128, -1, -7, i32::MIN.into()]), ("i64", [0, -1, -3, i64::MIN.into()])] {
        let module = cmdgraph_ir::text::parse(&edge_module(ty)).unwrap_or_else(|d| panic!("{d:?}"));
        let cases: Vec<(i128, i128, i128)> =
            (0..EDGE_ITEMS).map(|w| (-(w as i128) * 5, 1000 + w as i128, steps[w % steps.len()])).collect();
        let column = |f: fn(&(i128, i128, i128)) -> i128| encode(ty, &cases.iter().map(f).collect::<Vec<_>>());
        for opt_level in [0, 2] {
            let mut ex = support::executor(&bundle(&module, opt_level)).unwrap_or_else(|e| panic!("{e}"));
            for (name, bytes) in [("lo", column(|c| c.0)), ("hi", column(|c| c.1)), ("st", column(|c| c.2))] {
                ex.bind(name, &bytes).unwrap_or_else(|e| panic!("{e}"));
            }
            // Outputs start non-zero, so a store of zeros shows.
            for name in ["n", "s", "l"] {
                let len = if name == "n" { 4 } else { 8 } * EDGE_ITEMS;
                let len = if ty == "i32" && name != "n" { len / 2 } else { len };
                ex.bind(name, &vec![0xA5; len]).unwrap_or_else(|e| panic!("{e}"));
            }
            let e = ex.finalize("g").unwrap_or_else(|e| panic!("{e}"));
            ex.run(e).unwrap_or_else(|e| panic!("{e}"));
            ex.wait_idle().unwrap_or_else(|e| panic!("{e}"));
            for name in ["n", "s", "l"] {
                let got = ex.read(name).unwrap_or_else(|e| panic!("{e}"));
                assert!(got.iter().all(|&b| b == 0), "{ty} -O{opt_level} @{name}: {got:?}");
            }
            let msgs = ex.context().take_messages();
            assert!(msgs.is_empty(), "validation: {msgs:?}");
        }
    }
}
