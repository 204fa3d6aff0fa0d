//! The generated expression kernels of codegen/tests/random.rs (random chains of unary,
//! binary, comparison, select and cast ops over every scalar type; vectorized `range`
//! launches and `nd_range` ones) run as one-node graphs on Vulkan with validation on and on
//! the reference interpreter, with the same inputs: integer results bit-exact, float results
//! bit-exact unless the kernel uses a math function (docs/codegen.md's tolerance). 40 cases
//! in CI; `CMDGRAPH_RANDOM_KERNELS=N` runs N.

mod support;

use support::{compile, Both, Rng};

const TYPES: [&str; 6] = ["f32", "i32", "u32", "i64", "u64", "f16"];

fn pick<'a>(rng: &mut Rng, xs: &[&'a str]) -> &'a str {
    xs[rng.below(xs.len() as u64) as usize]
}

/// The generator of codegen/tests/random.rs, with the float ops whose device precision
/// differs kept (they select the tolerance) except `pow` (undefined for negative bases in
/// GLSL) and float `rem` and `div` results compared with the same tolerance.
fn kernel(rng: &mut Rng) -> String {
    let ty = pick(rng, &TYPES);
    let float = ty.starts_with('f');
    let mut body =
        vec!["  %i = global_id 0".to_string(), "  %v0 = load %a[%i]".to_string(), "  %v1 = load %b[%i]".into()];
    let mut n = 2;
    for _ in 0..(4 + rng.below(8)) {
        let x = format!("%v{}", rng.below(n));
        let y = format!("%v{}", rng.below(n));
        let line = match rng.below(5) {
            0 => {
                let ops: &[&str] =
                    if float { &["neg", "abs", "sqrt", "exp", "sin", "floor", "tanh"] } else { &["neg", "not", "abs"] };
                format!("  %v{n} = {} {x}", pick(rng, ops))
            }
            1 | 2 => {
                let ops: &[&str] = if float {
                    &["add", "sub", "mul", "div", "rem", "min", "max"]
                } else {
                    &["add", "sub", "mul", "div", "rem", "min", "max", "and", "or", "xor", "shl", "shr"]
                };
                format!("  %v{n} = {} {x}, {y}", pick(rng, ops))
            }
            3 => {
                let c = pick(rng, &["eq", "ne", "lt", "le", "gt", "ge"]);
                format!("  %c{n} = {c} {x}, {y}\n  %v{n} = select %c{n}, {x}, {y}")
            }
            _ => {
                let via = pick(rng, &TYPES);
                format!("  %w{n} = cast {x} to {via}\n  %v{n} = cast %w{n} to {ty}")
            }
        };
        body.push(line);
        n += 1;
    }
    let launch = if rng.below(2) == 0 { "range(1000)" } else { "nd_range(global(1024), local(128))" };
    format!(
        "kernel @k(%o: buf<{ty}, write>, %a: buf<{ty}, read>, %b: buf<{ty}, read>) {{\n{}\n  store %o[%i], %v{}\n}}\n\
         usm @o : {ty}[1024]\nusm @a : {ty}[1024]\nusm @b : {ty}[1024]\n\
         graph @g {{\n  %n = kernel @k {launch} args(@o, @a, @b)\n}}\n",
        body.join("\n"),
        n - 1
    )
}

#[test]
fn random_expression_kernels_match_the_interpreter_on_vulkan() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut failures = Vec::new();
    let cases: u64 = std::env::var("CMDGRAPH_RANDOM_KERNELS").ok().and_then(|v| v.parse().ok()).unwrap_or(40);
    for case in 0..cases {
        let src = kernel(&mut rng);
        let module = cmdgraph_ir::text::parse(&src).unwrap_or_else(|d| panic!("case {case}: {d:?}\n{src}"));
        let result = compile(&module, Some("")).and_then(|bundle| {
            let mut both = Both::new(&module, &bundle, case)?;
            // Float division and remainder are not correctly rounded on Vulkan either.
            both.float_tol |= src.contains(" div ") || src.contains(" rem ");
            both.run("g", 1)
        });
        if let Err(e) = result {
            failures.push(format!("case {case}: {e}\n{src}"));
        }
    }
    assert!(failures.is_empty(), "{} of {cases} failed:\n{}", failures.len(), failures.join("\n"));
}

/// Loops whose carried values and trip counts differ per work-item (`local id % 5` and
/// `% 3` iterations, an `if` inside and around them, a compare-and-swap counter on
/// work-group memory retried inside a counted loop with a carried "done" flag) against
/// the interpreter, unoptimized and through the default pipeline: the lowering of carried
/// values and phis of codegen/src/lower/control.rs.
/// docs/codegen.md records the llvmpipe fault these kernels were cut down from (it needs
/// an `f32` min/max compare-and-swap loop before the loop, which this test leaves out).
#[test]
fn divergent_loops_with_carried_values_match_the_interpreter() {
    let src = "
kernel @carried(%o: buf<u32, write>, %p: buf<u32, write>, %q: buf<u32, write>) {
  %gid = global_id 0
  %lid = local_id 0
  %u0 = const 0 : u32
  %u1 = const 1 : u32
  %u3 = const 3 : u32
  %u5 = const 5 : u32
  %n1 = rem %lid, %u5
  %n2 = rem %lid, %u3
  %a = for %t1 = %u0 to %n1 step %u1 carry(%s1 = %lid) {
    %a2 = add %s1, %t1
    yield %a2
  }
  store %o[%gid], %a
  %odd = rem %gid, %u3
  %go = ne %odd, %u0
  %b = if %go -> u32 {
    %b1 = for %t2 = %u0 to %n2 step %u1 carry(%s2 = %a) {
      %big = lt %s2, %u5
      %b3 = if %big -> u32 {
        %b4 = mul %s2, %u3
        yield %b4
      } else {
        %b5 = sub %s2, %u1
        yield %b5
      }
      yield %b3
    }
    yield %b1
  } else {
    yield %u0
  }
  store %p[%gid], %b
  %lc = local u32[1]
  %leader = eq %lid, %u0
  if %leader {
    store %lc[%u0], %u0
  }
  group_barrier
  %tries = const 1024 : u32
  %ok = for %t = %u0 to %tries step %u1 carry(%flag = %u0) {
    %need = eq %flag, %u0
    %nf = if %need -> u32 {
      %now = atomic or %lc[%u0], %u0
      %next = add %now, %u1
      %seen = atomic cmpxchg %lc[%u0], %now, %next
      %hit = eq %seen, %now
      %t3 = add %t, %u1
      %fl = select %hit, %t3, %u0
      yield %fl
    } else {
      yield %flag
    }
    yield %nf
  }
  %some = ne %ok, %u0
  %done = select %some, %u1, %u0
  store %q[%gid], %done
}
usm @o : u32[256]
usm @p : u32[256]
usm @q : u32[256]
graph @g {
  %k = kernel @carried nd_range(global(256), local(64)) args(@o, @p, @q)
}
";
    let module = cmdgraph_ir::text::parse(src).unwrap_or_else(|d| panic!("{d:?}"));
    for pipeline in [Some(""), None] {
        let bundle = compile(&module, pipeline).unwrap_or_else(|e| panic!("{e}"));
        let mut both = Both::new(&module, &bundle, 3).unwrap_or_else(|e| panic!("{e}"));
        let compared = both.run("g", 1).unwrap_or_else(|e| panic!("{pipeline:?}: {e}"));
        assert_eq!(compared, 3, "{pipeline:?}");
        let q = both.ex.read("q").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(q, [1u32; 256].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>(), "every item got in");
    }
}
