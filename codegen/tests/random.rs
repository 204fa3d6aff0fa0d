//! Generated expression kernels: random chains of unary, binary, comparison, select and
//! cast ops over every scalar type, vectorized (range) and not (nd_range), compile to
//! SPIR-V that `spirv-val` accepts (compile_kernel validates before returning).

use cmdgraph_codegen::{compile_kernel, module_variants, Options};

/// A small deterministic generator (xorshift), so failures reproduce from the seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[(self.next() % xs.len() as u64) as usize]
    }
}

const TYPES: [&str; 6] = ["f32", "i32", "u32", "i64", "u64", "f16"];

fn kernel(rng: &mut Rng) -> String {
    let ty = rng.pick(&TYPES);
    let float = ty.starts_with('f');
    let mut body =
        vec!["  %i = global_id 0".to_string(), "  %v0 = load %a[%i]".to_string(), "  %v1 = load %b[%i]".into()];
    let mut n = 2;
    for _ in 0..(4 + rng.next() % 8) {
        let x = format!("%v{}", rng.next() % n);
        let y = format!("%v{}", rng.next() % n);
        let line = match rng.next() % 5 {
            0 => {
                let ops: &[&str] =
                    if float { &["neg", "abs", "sqrt", "exp", "sin", "floor", "tanh"] } else { &["neg", "not", "abs"] };
                format!("  %v{n} = {} {x}", rng.pick(ops))
            }
            1 | 2 => {
                let ops: &[&str] = if float {
                    &["add", "sub", "mul", "div", "rem", "min", "max", "pow"]
                } else {
                    &["add", "sub", "mul", "div", "rem", "min", "max", "and", "or", "xor", "shl", "shr"]
                };
                format!("  %v{n} = {} {x}, {y}", rng.pick(ops))
            }
            3 => {
                let c = rng.pick(&["eq", "ne", "lt", "le", "gt", "ge"]);
                format!("  %c{n} = {c} {x}, {y}\n  %v{n} = select %c{n}, {x}, {y}")
            }
            _ => {
                let via = rng.pick(&TYPES);
                format!("  %w{n} = cast {x} to {via}\n  %v{n} = cast %w{n} to {ty}")
            }
        };
        body.push(line);
        n += 1;
    }
    let launch = if rng.next().is_multiple_of(2) { "range(1000)" } else { "nd_range(global(1024), local(128))" };
    format!(
        "kernel @k(%o: buf<{ty}, write>, %a: buf<{ty}, read>, %b: buf<{ty}, read>) {{\n{}\n  store %o[%i], %v{}\n}}\n\
         usm @o : {ty}[1024]\nusm @a : {ty}[1024]\nusm @b : {ty}[1024]\n\
         graph @g {{\n  %n = kernel @k {launch} args(@o, @a, @b)\n}}\n",
        body.join("\n"),
        n - 1
    )
}

#[test]
fn random_expression_kernels_validate() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for case in 0..40 {
        let src = kernel(&mut rng);
        let module = cmdgraph_ir::text::parse(&src).unwrap_or_else(|d| panic!("case {case}: {d:?}\n{src}"));
        cmdgraph_ir::verify::verify(&module).unwrap_or_else(|d| panic!("case {case}: {d:?}\n{src}"));
        for (k, v) in module_variants(&module).unwrap() {
            let opt = (case % 4) as u8;
            let c = compile_kernel(&module, k, &v, &Options { opt_level: opt })
                .unwrap_or_else(|e| panic!("case {case} -O{opt}: {e}\n{src}"));
            let vectorizable = !src.contains("f16") && !src.contains("64");
            if vectorizable && v.dims == 1 {
                assert_eq!(c.items_per_invocation, 4, "case {case}: element-wise kernel not vectorized\n{src}");
            }
        }
    }
}
