//! The subnormal rule of docs/ir.md ("Float precision") in the shared harness
//! (support::Both): a device may flush `f32` subnormals (the H200 does), so the harness runs
//! a third interpreter with `Denormals::Flush` and accepts outputs equal to its. llvmpipe
//! keeps subnormals, so the flushing device is stood in for by writing the flushed result
//! into the executor's memory before a comparison.

mod support;

use cmdgraph_interp::{Denormals, Interpreter, RunOptions};
use support::{compile, Both};

const N: usize = 1024;

/// `t * t` is 9e-40 (subnormal), `t * t * x` subnormal or zero, `x + t*t` normal.
const MODULE: &str = "
kernel @k(%a: buf<f32, read>, %o: buf<f32, write>, %p: buf<f32, write>) {
  %i = global_id 0
  %x = load %a[%i]
  %t = const 3e-20 : f32
  %tt = mul %t, %t
  %r = mul %tt, %x
  store %o[%i], %r
  %s = add %x, %tt
  store %p[%i], %s
}
usm @a : f32[1024]
usm @o : f32[1024]
usm @p : f32[1024]
graph @g {
  %k = kernel @k range(1024) args(@a, @o, @p)
}
";

/// The outputs an interpreter with `denormals` gives for the bound input `a`.
fn outputs(module: &cmdgraph_ir::Module, a: &[u8], denormals: Denormals) -> (Vec<u8>, Vec<u8>) {
    let mut it = Interpreter::new(module).unwrap();
    it.bind("a", a).unwrap();
    let e = it.finalize("g").unwrap();
    it.run_with(e, &RunOptions { denormals, ..RunOptions::default() }).unwrap();
    (it.read("o").unwrap().to_vec(), it.read("p").unwrap().to_vec())
}

#[test]
fn the_harness_accepts_f32_subnormals_flushed_and_nothing_else() {
    let module = cmdgraph_ir::text::parse(MODULE).unwrap_or_else(|d| panic!("{d:?}"));
    let bundle = compile(&module, Some("")).unwrap_or_else(|e| panic!("{e}"));
    let mut both = Both::new(&module, &bundle, 5).unwrap_or_else(|e| panic!("{e}"));
    assert!(both.flush.is_some(), "a module with f32 arithmetic gets the flushing interpreter");
    let a = both.interp.read("a").unwrap().to_vec();
    // llvmpipe keeps subnormals: the plain comparison matches.
    both.run("g", 1).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(both.flush_matched, 0);
    let (kept, _) = outputs(&module, &a, Denormals::Preserve);
    let (flushed, flushed_p) = outputs(&module, &a, Denormals::Flush);
    let differ = kept.chunks(4).zip(flushed.chunks(4)).filter(|(x, y)| x != y).count();
    assert!(differ > N / 2, "only {differ} of {N} outputs have a subnormal to flush");
    // A device that flushes: its bytes in the executor and in the flushing interpreter.
    let stand_in = |both: &mut Both, o: &[u8]| {
        both.ex.bind("o", o).unwrap();
        both.ex.bind("p", &flushed_p).unwrap();
        let f = both.flush.as_mut().unwrap();
        f.bind("o", &flushed).unwrap();
        f.bind("p", &flushed_p).unwrap();
    };
    stand_in(&mut both, &flushed);
    both.compare().unwrap_or_else(|e| panic!("flushed outputs rejected: {e}"));
    assert_eq!(both.flush_matched, 1, "@o matched only with subnormals flushed (@p either way)");
    // One flipped bit is still a mismatch, reported under every rule.
    let mut wrong = flushed.clone();
    wrong[4 * (N / 3)] ^= 1;
    stand_in(&mut both, &wrong);
    let e = both.compare().expect_err("a wrong output must fail");
    assert!(e.contains("with f32 subnormals flushed"), "{e}");
}
