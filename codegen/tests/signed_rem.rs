//! Issue 29: NVIDIA's driver (H200, 580.159.04) computes `OpSRem` on the unsigned-typed
//! operands LLVM's SPIR-V backend gives every integer as the unsigned remainder (`-1 rem 6`
//! gave 3, `-7 rem 15` gave 9, on every lane of scripts/h200-probes; docs/reliability.md,
//! "On the H200"). Signed `rem` is emitted as the remainder of the magnitudes with the
//! dividend's sign, so no `OpSRem` reaches a driver at any -O level (LLVM must not fold the
//! pattern back). The values are checked on Vulkan against the interpreter by the kernel
//! fuzzer and cli/tests/vulkan_kernels.rs; on the H200 by scripts/gpu-fuzz.sh.

use cmdgraph_codegen::{emit, module_variants, Emit, Options};

fn module(ty: &str) -> String {
    format!(
        "kernel @k(%x: buf<{ty}, read>, %y: buf<{ty}, read>, %o: buf<{ty}, write>) {{
  %g = global_id 0
  %a = load %x[%g]
  %b = load %y[%g]
  %r = rem %a, %b
  store %o[%g], %r
}}
usm @x : {ty}[64]
usm @y : {ty}[64]
usm @o : {ty}[64]
graph @g {{
  %k = kernel @k range(64) args(@x, @y, @o)
}}
"
    )
}

/// The SPIR-V of the module's one kernel at -O`opt`, as assembly.
fn asm(src: &str, opt: u8) -> String {
    let module = cmdgraph_ir::text::parse(src).unwrap_or_else(|d| panic!("parse: {d:?}\n{src}"));
    cmdgraph_ir::verify::verify(&module).unwrap_or_else(|d| panic!("verify: {d:?}"));
    let (k, v) = module_variants(&module).expect("variants").remove(0);
    emit(&module, k, &v, &Options { opt_level: opt }, Emit::SpirvAsm).unwrap_or_else(|e| panic!("-O{opt}: {e}"))
}

fn count(asm: &str, op: &str) -> usize {
    asm.lines().filter(|l| l.split_whitespace().any(|w| w == op)).count()
}

#[test]
fn signed_rem_emits_no_op_srem_at_any_level() {
    for ty in ["i32", "i64"] {
        for opt in 0..=3 {
            let asm = asm(&module(ty), opt);
            assert_eq!(count(&asm, "OpSRem"), 0, "{ty} -O{opt}: OpSRem emitted\n{asm}");
            assert!(count(&asm, "OpUMod") >= 1, "{ty} -O{opt}: no OpUMod for the magnitudes\n{asm}");
        }
    }
}

#[test]
fn unsigned_rem_stays_op_umod() {
    for ty in ["u32", "u64"] {
        let asm = asm(&module(ty), 2);
        assert!(count(&asm, "OpUMod") >= 1, "{ty}\n{asm}");
        assert_eq!(count(&asm, "OpSRem") + count(&asm, "OpSMod"), 0, "{ty}\n{asm}");
    }
}
