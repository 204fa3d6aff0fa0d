//! Issue 29: the shapes codegen gives three ops so that two drivers compute them right,
//! checked in the emitted SPIR-V at every -O level (LLVM must not fold them back). The
//! values are checked on Vulkan against the interpreter by lit-tests/run (f16 rounding,
//! 64-bit orderings), the kernel fuzzer, and on the H200 by scripts/gpu-fuzz.sh.
//!
//! - NVIDIA (H200, 580.159.04) drops an `f32` → `f16` → `f32` conversion pair: every
//!   `OpFConvert` to `f16` converts a value already rounded to `f16` in integer operations.
//! - NVIDIA folds `FAbs(x) > c` to true for a negative constant, NaN `x` included: no `FAbs`
//!   result reaches a comparison except through the select that passes NaN unchanged.
//! - llvmpipe (Mesa 22.3.6) orders a sign-extended 32-bit value against a constant wrongly
//!   with the signed 64-bit comparisons: none is emitted on 64-bit operands.

use cmdgraph_codegen::{emit, module_variants, Emit, Options};
use std::collections::HashMap;

/// The SPIR-V of the module's one kernel at -O`opt`, as assembly.
fn asm(src: &str, opt: u8) -> String {
    let module = cmdgraph_ir::text::parse(src).unwrap_or_else(|d| panic!("parse: {d:?}\n{src}"));
    cmdgraph_ir::verify::verify(&module).unwrap_or_else(|d| panic!("verify: {d:?}"));
    let (k, v) = module_variants(&module).expect("variants").remove(0);
    emit(&module, k, &v, &Options { opt_level: opt }, Emit::SpirvAsm).unwrap_or_else(|e| panic!("-O{opt}: {e}"))
}

/// `%id = Op...` lines by result id: (opcode, the words after it).
fn defs(asm: &str) -> HashMap<String, (String, Vec<String>)> {
    let mut out = HashMap::new();
    for line in asm.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.len() >= 3 && w[1] == "=" {
            out.insert(w[0].to_string(), (w[2].to_string(), w[3..].iter().map(|s| s.to_string()).collect()));
        }
    }
    out
}

fn wrap(kernel: &str, bufs: &[(&str, &str)]) -> String {
    let mut s = kernel.to_string();
    let mut args = Vec::new();
    for (name, ty) in bufs {
        s.push_str(&format!("usm @{name} : {ty}[64]\n"));
        args.push(format!("@{name}"));
    }
    s.push_str(&format!("graph @g {{\n  %k = kernel @k range(64) args({})\n}}\n", args.join(", ")));
    s
}

#[test]
fn every_conversion_to_f16_takes_a_value_rounded_in_integers() {
    let src = wrap(
        "kernel @k(%x: buf<f32, read>, %h: buf<f16, read>, %o: buf<f16, write>, %p: buf<f32, write>) {
  %i = global_id 0
  %v = load %x[%i]
  %vh = cast %v to f16
  %b = cast %vh to f32
  store %p[%i], %b
  %w = load %h[%i]
  %m = mul %vh, %w
  %s = add %m, %w
  %e = exp %s
  store %o[%i], %e
}
",
        &[("x", "f32"), ("h", "f16"), ("o", "f16"), ("p", "f32")],
    );
    for opt in 0..=3 {
        let asm = asm(&src, opt);
        let d = defs(&asm);
        let half_types: Vec<&String> = d
            .iter()
            .filter(|(_, (op, a))| op == "OpTypeFloat" && a.first().map(String::as_str) == Some("16"))
            .map(|(k, _)| k)
            .collect();
        let mut narrowing = 0;
        for (id, (op, args)) in &d {
            if op != "OpFConvert" || !half_types.contains(&&args[0]) {
                continue;
            }
            narrowing += 1;
            let (src_op, src_args) = &d[&args[1]];
            assert_eq!(
                src_op, "OpBitcast",
                "-O{opt}: {id} converts {} ({src_op}), not a rounded value\n{asm}",
                args[1]
            );
            let (bits_op, _) = &d[&src_args[1]];
            assert_eq!(bits_op, "OpBitwiseOr", "-O{opt}: {id}: the rounding's last step is the sign's `or`\n{asm}");
        }
        // The cast, `mul`, `add` and `exp` each narrow once (scalar or vector body).
        assert!(narrowing >= 4, "-O{opt}: {narrowing} conversions to f16\n{asm}");
    }
}

#[test]
fn no_fabs_result_reaches_a_comparison_directly() {
    let src = wrap(
        "kernel @k(%x: buf<f32, read>, %o: buf<f32, write>, %c: buf<u32, write>) {
  %i = global_id 0
  %v = load %x[%i]
  %a = abs %v
  %lo = const -1000000.0 : f32
  %m = max %a, %lo
  store %o[%i], %m
  %g = gt %a, %lo
  %u = cast %g to u32
  store %c[%i], %u
}
",
        &[("x", "f32"), ("o", "f32"), ("c", "u32")],
    );
    for opt in 0..=3 {
        let asm = asm(&src, opt);
        let d = defs(&asm);
        let fabs: Vec<&String> = d
            .iter()
            .filter(|(_, (op, a))| op == "OpExtInst" && a.iter().any(|w| w == "FAbs"))
            .map(|(k, _)| k)
            .collect();
        assert!(!fabs.is_empty(), "-O{opt}: no FAbs\n{asm}");
        for (id, (op, args)) in &d {
            for f in &fabs {
                if args.iter().skip(1).any(|a| a == *f) {
                    assert_eq!(op, "OpSelect", "-O{opt}: {id} = {op} uses FAbs {f} directly\n{asm}");
                }
            }
        }
    }
}

#[test]
fn no_signed_ordering_on_64_bit_operands() {
    let src = wrap(
        "kernel @k(%x: buf<i32, read>, %o: buf<i64, write>, %c: buf<u32, write>) {
  %i = global_id 0
  %v = load %x[%i]
  %w = cast %v to i64
  %z = const 0 : i64
  %l = lt %w, %z
  %lu = cast %l to u32
  store %c[%i], %lu
  %m = min %w, %z
  %a = abs %m
  %d = const 7 : i64
  %r = rem %a, %d
  %one = const 1 : i64
  %s = for %j = %z to %w step %one carry(%t = %r) {
    %t2 = add %t, %j
    yield %t2
  }
  store %o[%i], %s
}
",
        &[("x", "i32"), ("o", "i64"), ("c", "u32")],
    );
    let signed = ["OpSLessThan", "OpSLessThanEqual", "OpSGreaterThan", "OpSGreaterThanEqual"];
    for opt in 0..=3 {
        let asm = asm(&src, opt);
        let d = defs(&asm);
        let wide: Vec<&String> = d
            .iter()
            .filter(|(_, (op, a))| op == "OpTypeInt" && a.first().map(String::as_str) == Some("64"))
            .map(|(k, _)| k)
            .collect();
        let mut unsigned = 0;
        for (id, (op, args)) in &d {
            let operand_wide =
                |a: &String| d.get(a).is_some_and(|(_, aa)| aa.first().is_some_and(|t| wide.contains(&t)));
            if args.len() >= 3 && operand_wide(&args[1]) {
                assert!(!signed.contains(&op.as_str()), "-O{opt}: {id} = {op} on 64-bit operands\n{asm}");
                unsigned += usize::from(op.starts_with("OpULess") || op.starts_with("OpUGreater"));
            }
        }
        assert!(unsigned >= 3, "-O{opt}: {unsigned} unsigned 64-bit orderings (lt, min, loop bounds)\n{asm}");
    }
}
