//! docs/ir.md's "Float precision" rules, shown on the default Vulkan device (llvmpipe on CI,
//! the GPU where there is one) with full-precision random inputs:
//!
//! - `fma` may round once (IEEE fusedMultiplyAdd) or twice (the product rounded, then the
//!   sum). The two differ on most random `f32` inputs; the device must match one of them
//!   for every element, the same one everywhere; the harness (support::Both) accepts it, and
//!   a comparison with the once-rounded result alone rejects a device that rounds twice.
//! - `f16` `fma` is computed by an `f32` `fma` and rounded to `f16` (docs/codegen.md,
//!   "Deviations"): the device's result is round16(round32(a·b + c)) on every device, since
//!   an `f16` product is exact in `f32`.

mod support;

use cmdgraph_interp::{FmaRounding, Interpreter, RunOptions};
use cmdgraph_ir::data::half::f16;
use support::{compile, random_bytes, same, Both, Rng};

const N: usize = 4096;

const F32_MODULE: &str = "
kernel @fma32(%a: buf<f32, read>, %b: buf<f32, read>, %c: buf<f32, read>, %o: buf<f32, write>) {
  %i = global_id 0
  %x = load %a[%i]
  %y = load %b[%i]
  %z = load %c[%i]
  %r = fma %x, %y, %z
  store %o[%i], %r
}
kernel @fma4(%a: buf<vec4<f32>, read>, %o: buf<vec4<f32>, write>) {
  %i = global_id 0
  %x = load %a[%i]
  %r = fma %x, %x, %x
  store %o[%i], %r
}
usm @a : f32[4096]
usm @b : f32[4096]
usm @c : f32[4096]
usm @o : f32[4096]
usm @va : vec4<f32>[1024]
usm @vo : vec4<f32>[1024]
graph @g {
  %k = kernel @fma32 range(4096) args(@a, @b, @c, @o)
  %v = kernel @fma4 range(1024) args(@va, @vo)
}
";

fn words(b: &[u8]) -> Vec<u32> {
    b.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

#[test]
fn fma_on_the_device_rounds_once_or_twice_and_the_rule_decides_the_comparison() {
    let module = cmdgraph_ir::text::parse(F32_MODULE).unwrap_or_else(|d| panic!("{d:?}"));
    let bundle = compile(&module, Some("")).unwrap_or_else(|e| panic!("{e}"));
    let mut both = Both::new(&module, &bundle, 11).unwrap_or_else(|e| panic!("{e}"));
    assert!(both.twice.is_some(), "the harness runs the interpreter both ways for a module with fma");
    // Inputs as bound (before the run): full precision, so products are inexact.
    let a = words(both.interp.read("a").unwrap_or_else(|e| panic!("{e}")));
    assert!(a.iter().filter(|w| *w & 0xff != 0).count() > N / 2, "inputs use every significand bit");
    // Run through the harness: it must accept the device under the fma rule.
    let compared = both.run("g", 1).unwrap_or_else(|e| panic!("the harness rejects the device: {e}"));
    assert_eq!(compared, 6);
    let seen = both.fma_matched;
    eprintln!("memory objects matching fma [once only, twice only, both]: {seen:?}");
    assert!(seen[0] == 0 || seen[1] == 0, "the device rounds fma one way: {seen:?}");

    // Element by element, in a fresh pair of interpreter runs from the same inputs.
    let mut rng = Rng(99);
    let inputs: Vec<(&str, Vec<u8>)> = ["a", "b", "c", "va"]
        .iter()
        .map(|&m| {
            let ty = module.memories.iter().find(|(_, x)| x.name == m).map(|(_, x)| (x.elem, x.count)).unwrap();
            (m, random_bytes(ty.0, ty.1, &mut rng))
        })
        .collect();
    let mut ex = support::executor(&bundle).unwrap_or_else(|e| panic!("{e}"));
    let mut results = Vec::new();
    for rule in FmaRounding::ALL {
        let mut it = Interpreter::new(&module).unwrap_or_else(|e| panic!("{e}"));
        for (m, bytes) in &inputs {
            it.bind(m, bytes).unwrap_or_else(|e| panic!("{e}"));
        }
        let e = it.finalize("g").unwrap_or_else(|e| panic!("{e}"));
        it.run_with(e, &RunOptions { fma: rule, ..RunOptions::default() }).unwrap_or_else(|e| panic!("{e}"));
        results.push([it.read("o").unwrap().to_vec(), it.read("vo").unwrap().to_vec()]);
    }
    for (m, bytes) in &inputs {
        ex.bind(m, bytes).unwrap_or_else(|e| panic!("{e}"));
    }
    let ee = ex.finalize("g").unwrap_or_else(|e| panic!("{e}"));
    ex.run(ee).unwrap_or_else(|e| panic!("{e}"));
    ex.wait_idle().unwrap_or_else(|e| panic!("{e}"));
    let device = [ex.read("o").unwrap(), ex.read("vo").unwrap()];
    let msgs = ex.context().take_messages();
    assert!(msgs.is_empty(), "validation: {msgs:?}");

    let mut counts = [0usize; 4]; // differ once/twice, device = once, device = twice, neither
    for k in 0..2 {
        let (once, twice, dev) = (words(&results[0][k]), words(&results[1][k]), words(&device[k]));
        for i in 0..once.len() {
            counts[0] += usize::from(once[i] != twice[i]);
            if once[i] != twice[i] {
                counts[1] += usize::from(dev[i] == once[i]);
                counts[2] += usize::from(dev[i] == twice[i]);
                counts[3] += usize::from(dev[i] != once[i] && dev[i] != twice[i]);
            }
        }
    }
    let total = 2 * N;
    eprintln!(
        "fma on {total} random f32 lanes: the two roundings differ in {}; where they do, the device gave the \
         once-rounded result {} times, the twice-rounded {} times, neither {} times",
        counts[0], counts[1], counts[2], counts[3]
    );
    assert!(counts[0] > total / 10, "full-precision inputs make the roundings differ often: {counts:?}");
    assert_eq!(counts[3], 0, "every device result is one of the two roundings");
    let twice = counts[2] > 0;
    assert!(counts[1] == 0 || !twice, "one rule for every element: {counts:?}");
    eprintln!("this device rounds fma {}", if twice { "twice (mul then add)" } else { "once" });
    // An exact comparison with the once-rounded result accepts the device exactly when it
    // rounds once; under the rule (once or twice) it is always accepted.
    let f32t = cmdgraph_ir::Type::scalar(cmdgraph_ir::ScalarType::F32);
    let exact_once = same("@o", f32t, &device[0], &results[0][0], false);
    assert_eq!(exact_once.is_err(), twice, "{exact_once:?}");
    let under_rule = same("@o", f32t, &device[0], &results[0][0], false)
        .or_else(|_| same("@o", f32t, &device[0], &results[1][0], false));
    assert!(under_rule.is_ok(), "{under_rule:?}");
}

const F16_MODULE: &str = "
kernel @fma16(%a: buf<f16, read>, %b: buf<f16, read>, %c: buf<f16, read>, %o: buf<f16, write>) {
  %i = global_id 0
  %x = load %a[%i]
  %y = load %b[%i]
  %z = load %c[%i]
  %r = fma %x, %y, %z
  store %o[%i], %r
}
usm @a : f16[65536]
usm @b : f16[65536]
usm @c : f16[65536]
usm @o : f16[65536]
graph @g {
  %k = kernel @fma16 range(65536) args(@a, @b, @c, @o)
}
";

#[test]
fn f16_fma_is_an_f32_fma_rounded_to_f16_on_the_device() {
    let module = cmdgraph_ir::text::parse(F16_MODULE).unwrap_or_else(|d| panic!("{d:?}"));
    let bundle = compile(&module, Some("")).unwrap_or_else(|e| panic!("{e}"));
    let mut rng = Rng(5);
    let t = cmdgraph_ir::Type::scalar(cmdgraph_ir::ScalarType::F16);
    let n = 65536;
    let inputs: Vec<Vec<u8>> = (0..3).map(|_| random_bytes(t, n, &mut rng)).collect();
    let mut ex = support::executor(&bundle).unwrap_or_else(|e| panic!("{e}"));
    let mut interp = Vec::new();
    for rule in FmaRounding::ALL {
        let mut it = Interpreter::new(&module).unwrap_or_else(|e| panic!("{e}"));
        for (m, bytes) in ["a", "b", "c"].iter().zip(&inputs) {
            it.bind(m, bytes).unwrap_or_else(|e| panic!("{e}"));
        }
        let e = it.finalize("g").unwrap_or_else(|e| panic!("{e}"));
        it.run_with(e, &RunOptions { fma: rule, ..RunOptions::default() }).unwrap_or_else(|e| panic!("{e}"));
        interp.push(it.read_as::<f16>("o").unwrap_or_else(|e| panic!("{e}")));
    }
    for (m, bytes) in ["a", "b", "c"].iter().zip(&inputs) {
        ex.bind(m, bytes).unwrap_or_else(|e| panic!("{e}"));
    }
    let ee = ex.finalize("g").unwrap_or_else(|e| panic!("{e}"));
    ex.run(ee).unwrap_or_else(|e| panic!("{e}"));
    ex.wait_idle().unwrap_or_else(|e| panic!("{e}"));
    let dev: Vec<u16> =
        ex.read("o").unwrap_or_else(|e| panic!("{e}")).chunks(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
    assert!(ex.context().take_messages().is_empty());
    let h = |b: &[u8], i: usize| f16::from_le_bytes([b[2 * i], b[2 * i + 1]]).to_f32();
    let (mut via_f32, mut once, mut twice, mut once_twice_differ) = (0, 0, 0, 0);
    for i in 0..n as usize {
        let (a, b, c) = (h(&inputs[0], i), h(&inputs[1], i), h(&inputs[2], i));
        // The product of two f16 is exact in f32, so this is round16(round32(a·b + c)).
        let model = f16::from_f32(a * b + c).to_bits();
        via_f32 += usize::from(dev[i] == model);
        once += usize::from(dev[i] == interp[0][i].to_bits());
        twice += usize::from(dev[i] == interp[1][i].to_bits());
        once_twice_differ += usize::from(interp[0][i] != interp[1][i]);
    }
    eprintln!(
        "f16 fma on {n} random inputs: device = round16(round32(a*b+c)) for {via_f32}, = rounded once for \
         {once}, = rounded twice in f16 for {twice}; once and twice differ for {once_twice_differ}"
    );
    assert_eq!(via_f32, n as usize, "the device computes f16 fma in f32");
    assert!(once_twice_differ > 0);
}
