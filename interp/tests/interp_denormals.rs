//! `RunOptions::denormals`: `Denormals::Flush` gives what a Vulkan device that flushes `f32`
//! subnormals computes (the NVIDIA H200 does, docs/ir.md "Float precision"), and
//! `Denormals::Preserve` (the default) the kernel language's IEEE results.

use cmdgraph_interp::{Denormals, Interpreter, RunOptions};

const N: usize = 512;

/// `p = a * b` (subnormal for most lanes), `s = p + c`, `neg` of a subnormal input,
/// `lt(tiny, 0)` as a `u32`, `abs` of it, and `x16 * x16` in `f16` (subnormal `f16`
/// products stay).
const MODULE: &str = r#"
kernel @k(%a: buf<f32, read>, %b: buf<f32, read>, %c: buf<f32, read>, %t: buf<f32, read>,
          %h: buf<f16, read>, %p: buf<f32, write>, %s: buf<f32, write>, %n: buf<f32, write>,
          %l: buf<u32, write>, %ph: buf<f16, write>, %ab: buf<f32, write>) {
  %i = global_id 0
  %x = load %a[%i]
  %y = load %b[%i]
  %z = load %c[%i]
  %prod = mul %x, %y
  store %p[%i], %prod
  %sum = add %prod, %z
  store %s[%i], %sum
  %tiny = load %t[%i]
  %ng = neg %tiny
  store %n[%i], %ng
  %mag = abs %tiny
  store %ab[%i], %mag
  %zero = const 0.0 : f32
  %below = lt %tiny, %zero
  %bu = cast %below to u32
  store %l[%i], %bu
  %hx = load %h[%i]
  %hp = mul %hx, %hx
  store %ph[%i], %hp
}
usm @a : f32[512]
usm @b : f32[512]
usm @c : f32[512]
usm @t : f32[512]
usm @h : f16[512]
usm @p : f32[512]
usm @s : f32[512]
usm @n : f32[512]
usm @l : u32[512]
usm @ph : f16[512]
usm @ab : f32[512]
graph @g {
  %k = kernel @k range(512) args(@a, @b, @c, @t, @h, @p, @s, @n, @l, @ph, @ab)
}
"#;

/// SplitMix64.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A full-precision `f32` with a random sign and mantissa, `2^e` for `e` in `lo..hi`.
fn float(state: &mut u64, lo: i32, hi: i32) -> f32 {
    let r = next(state);
    let e = lo + (r % (hi - lo) as u64) as i32;
    let m = 1.0 + ((r >> 8) as u32 & 0x7f_ffff) as f32 / (1u32 << 23) as f32;
    let s: f64 = if r >> 63 == 1 { -1.0 } else { 1.0 };
    // In f64: `2f32.powi(-149)` is 0 (it divides by an overflowed `2^149`).
    (s * m as f64 * 2f64.powi(e)) as f32
}

struct Inputs {
    a: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
    t: Vec<f32>,
    h: Vec<cmdgraph_interp::half::f16>,
}

fn inputs() -> Inputs {
    let mut st = 0x5eed_d3e0;
    let mut v = |lo, hi| (0..N).map(|_| float(&mut st, lo, hi)).collect::<Vec<f32>>();
    // Products 2^-150 .. 2^-118: mostly subnormal, some normal.
    let (a, b) = (v(-80, -60), v(-70, -58));
    let c = v(-135, -120);
    // Subnormal inputs (2^-149 .. 2^-127).
    let t: Vec<f32> = v(-149, -127);
    let h = v(-12, -4).iter().map(|&x| cmdgraph_interp::half::f16::from_f32(x)).collect();
    Inputs { a, b, c, t, h }
}

struct Outputs {
    p: Vec<f32>,
    s: Vec<f32>,
    n: Vec<f32>,
    l: Vec<u32>,
    ph: Vec<cmdgraph_interp::half::f16>,
    ab: Vec<f32>,
}

fn run(inp: &Inputs, denormals: Denormals) -> Outputs {
    let module = cmdgraph_ir::text::parse(MODULE).expect("the module parses");
    cmdgraph_ir::verify::verify(&module).expect("the module verifies");
    let mut it = Interpreter::new(&module).unwrap();
    it.bind_as("a", &inp.a).unwrap();
    it.bind_as("b", &inp.b).unwrap();
    it.bind_as("c", &inp.c).unwrap();
    it.bind_as("t", &inp.t).unwrap();
    it.bind_as("h", &inp.h).unwrap();
    let id = it.finalize("g").unwrap();
    it.run_with(id, &RunOptions { denormals, ..RunOptions::default() }).unwrap();
    Outputs {
        p: it.read_as("p").unwrap(),
        s: it.read_as("s").unwrap(),
        n: it.read_as("n").unwrap(),
        l: it.read_as("l").unwrap(),
        ph: it.read_as("ph").unwrap(),
        ab: it.read_as("ab").unwrap(),
    }
}

fn flushed(x: f32) -> f32 {
    if x.is_subnormal() {
        0.0f32.copysign(x)
    } else {
        x
    }
}

#[test]
fn preserve_is_ieee() {
    let inp = inputs();
    let out = run(&inp, Denormals::Preserve);
    let mut subnormal = 0;
    for i in 0..N {
        let p = inp.a[i] * inp.b[i];
        subnormal += p.is_subnormal() as usize;
        assert_eq!(out.p[i].to_bits(), p.to_bits(), "lane {i}");
        assert_eq!(out.s[i].to_bits(), (p + inp.c[i]).to_bits(), "lane {i}");
        assert_eq!(out.n[i].to_bits(), (-inp.t[i]).to_bits(), "lane {i}");
        assert_eq!(out.l[i], (inp.t[i] < 0.0) as u32, "lane {i}");
        assert_eq!(out.ab[i].to_bits(), inp.t[i].abs().to_bits(), "lane {i}");
    }
    assert!(subnormal > N / 2, "{subnormal} subnormal products: the test needs most lanes subnormal");
    let tiny = inp.t.iter().filter(|t| t.is_subnormal()).count();
    assert!(tiny > N / 2, "{tiny} subnormal inputs `t`: the test needs most lanes subnormal");
}

#[test]
fn flush_zeroes_f32_subnormal_operands_and_results_keeping_the_sign() {
    let inp = inputs();
    let out = run(&inp, Denormals::Flush);
    let keep = run(&inp, Denormals::Preserve);
    let (mut differ, mut kept_abs) = (0, 0);
    for i in 0..N {
        // Operands are normal here; the subnormal product becomes a zero of its sign, and the
        // sum then sees that zero (and flushes its operand `c` and its result too).
        let p = flushed(inp.a[i] * inp.b[i]);
        assert_eq!(out.p[i].to_bits(), p.to_bits(), "lane {i}: {} * {}", inp.a[i], inp.b[i]);
        let s = flushed(p + flushed(inp.c[i]));
        assert_eq!(out.s[i].to_bits(), s.to_bits(), "lane {i}");
        differ += (out.p[i].to_bits() != keep.p[i].to_bits()) as usize;
        // `neg` flushes its operand (a zero of the opposite sign); `lt` sees the flushed
        // operand: `-0 < 0` is false.
        assert_eq!(out.n[i].to_bits(), (-flushed(inp.t[i])).to_bits(), "lane {i}");
        assert_eq!(out.n[i], 0.0, "lane {i}");
        assert_eq!(out.l[i], 0, "lane {i}: {} < 0 with the operand flushed", inp.t[i]);
        // `abs` keeps a subnormal: codegen's `abs` is a select around `FAbs` (a driver
        // workaround, docs/codegen.md), which the H200 computes without flushing
        // (scripts/h200-probes: 4096 of 4096 subnormals kept).
        assert_eq!(out.ab[i].to_bits(), inp.t[i].abs().to_bits(), "lane {i}");
        kept_abs += usize::from(out.ab[i].is_subnormal());
        // `f16` subnormals are kept.
        assert_eq!(out.ph[i].to_bits(), keep.ph[i].to_bits(), "lane {i}");
    }
    assert!(differ > N / 2, "only {differ} lanes differ from the IEEE results");
    assert!(kept_abs > N / 2, "only {kept_abs} subnormal `abs` results");
    assert!(
        keep.ph.iter().any(|h| h.to_bits() & 0x7c00 == 0 && h.to_bits() & 0x3ff != 0),
        "some f16 products are subnormal"
    );
}
