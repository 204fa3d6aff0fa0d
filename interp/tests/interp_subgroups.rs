//! Subgroup ops against a direct computation on the host, for subgroup sizes 4, 8 and 32:
//! work-groups of 64 (whole subgroups) and 36 (a partial last subgroup for 8 and 32), every
//! collective on `f32`, `i32` and `u32` with random data, the builtins, broadcast, shuffle,
//! ballot and the votes, over all lanes and under a data-dependent `if` (docs/ir.md,
//! "Subgroups").

use cmdgraph_interp::{Interpreter, RunOptions, SubgroupSize};

const N: usize = 144;
/// Results per work-item: 7 ops x 3 collectives, broadcast, broadcast_first, shuffle, the
/// same reduce-add under the `if`.
const PER: usize = 25;
/// Integer results per work-item: ballot (4 words), elect, all, any, size, id, lane, count.
const BITS: usize = 11;

const OPS: [&str; 7] = ["add", "mul", "min", "max", "and", "or", "xor"];
const COLLECTIVES: [&str; 3] = ["reduce", "inclusive_scan", "exclusive_scan"];

fn module(ty: &str, local: usize) -> String {
    let ops: &[&str] = if ty == "f32" { &OPS[..4] } else { &OPS };
    let zero = if ty == "f32" { "0.0" } else { "0" };
    let mut k = format!(
        "kernel @k(%x: buf<{ty}, read>, %out: buf<{ty}, write>, %bits: buf<u32, write>) {{\n  %i = global_id 0\n  \
         %v = load %x[%i]\n  %per = const {PER} : u32\n  %base = mul %i, %per\n"
    );
    let mut j = 0;
    let mut put = |k: &mut String, v: &str| {
        k.push_str(&format!("  %o{j} = const {j} : u32\n  %p{j} = add %base, %o{j}\n  store %out[%p{j}], {v}\n"));
        j += 1;
    };
    for op in ops {
        for c in COLLECTIVES {
            k.push_str(&format!("  %r_{op}_{c} = subgroup_{c} {op} %v\n"));
            put(&mut k, &format!("%r_{op}_{c}"));
        }
    }
    k.push_str(
        "  %sid = subgroup_id\n  %lid = subgroup_local_id\n  %one = const 1 : u32\n  %three = const 3 : u32\n  \
         %from = and %sid, %three\n  %bc = subgroup_broadcast %v, %from\n  %bf = subgroup_broadcast_first %v\n  \
         %pair = xor %lid, %one\n  %sh = subgroup_shuffle %v, %pair\n",
    );
    put(&mut k, "%bc");
    put(&mut k, "%bf");
    put(&mut k, "%sh");
    k.push_str(&format!(
        "  %zero = const {zero} : {ty}\n  %pos = gt %v, %zero\n  %d = if %pos -> {ty} {{\n    \
         %dr = subgroup_reduce add %v\n    yield %dr\n  }} else {{\n    yield %zero\n  }}\n"
    ));
    put(&mut k, "%d");
    k.push_str(&format!(
        "  %bw = const {BITS} : u32\n  %bb = mul %i, %bw\n  %ballot = subgroup_ballot %pos\n  %e = subgroup_elect\n  \
         %all = subgroup_all %pos\n  %any = subgroup_any %pos\n  %eu = cast %e to u32\n  %au = cast %all to u32\n  \
         %nu = cast %any to u32\n  %size = subgroup_size\n  %count = num_subgroups\n"
    ));
    let words = ["%b0", "%b1", "%b2", "%b3", "%eu", "%au", "%nu", "%size", "%sid", "%lid", "%count"];
    for w in 0..4 {
        k.push_str(&format!("  %b{w} = extract %ballot, {w}\n"));
    }
    for (w, v) in words.iter().enumerate() {
        k.push_str(&format!("  %q{w} = const {w} : u32\n  %qa{w} = add %bb, %q{w}\n  store %bits[%qa{w}], {v}\n"));
    }
    k.push_str("}\n");
    format!(
        "{k}usm @x : {ty}[{N}]\nusm @out : {ty}[{}]\nusm @bits : u32[{}]\ngraph @g {{\n  \
         %k = kernel @k nd_range(global({N}), local({local})) args(@x, @out, @bits)\n}}\n",
        N * PER,
        N * BITS
    )
}

/// SplitMix64.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A value type the test runs, as bits, with the host's operations on it.
trait Elem: Copy + PartialEq + std::fmt::Debug + cmdgraph_ir::data::Element {
    const NAME: &'static str;
    fn random(state: &mut u64) -> Self;
    fn op(op: &str, a: Self, b: Self) -> Self;
    fn identity(op: &str) -> Self;
    fn positive(self) -> bool;
    fn zero() -> Self;
}

impl Elem for f32 {
    const NAME: &'static str = "f32";
    fn random(state: &mut u64) -> f32 {
        // Every significand bit random, magnitudes 2^-8 .. 2^8, either sign.
        let r = next(state);
        let bits = (r as u32 & 0x807f_ffff) | ((119 + (r >> 40) % 17) as u32) << 23;
        f32::from_bits(bits)
    }
    fn op(op: &str, a: f32, b: f32) -> f32 {
        match op {
            "add" => a + b,
            "mul" => a * b,
            "min" => a.min(b),
            _ => a.max(b),
        }
    }
    fn identity(op: &str) -> f32 {
        match op {
            "add" => 0.0,
            "mul" => 1.0,
            "min" => f32::INFINITY,
            _ => f32::NEG_INFINITY,
        }
    }
    fn positive(self) -> bool {
        self > 0.0
    }
    fn zero() -> f32 {
        0.0
    }
}

macro_rules! int_elem {
    ($t:ty, $name:literal) => {
        impl Elem for $t {
            const NAME: &'static str = $name;
            fn random(state: &mut u64) -> $t {
                next(state) as $t
            }
            fn op(op: &str, a: $t, b: $t) -> $t {
                match op {
                    "add" => a.wrapping_add(b),
                    "mul" => a.wrapping_mul(b),
                    "min" => a.min(b),
                    "max" => a.max(b),
                    "and" => a & b,
                    "or" => a | b,
                    _ => a ^ b,
                }
            }
            fn identity(op: &str) -> $t {
                match op {
                    "add" | "or" | "xor" => 0,
                    "mul" => 1,
                    "min" => <$t>::MAX,
                    "max" => <$t>::MIN,
                    _ => !0,
                }
            }
            fn positive(self) -> bool {
                self > 0
            }
            fn zero() -> $t {
                0
            }
        }
    };
}
int_elem!(i32, "i32");
int_elem!(u32, "u32");

/// Runs the module for `T` at `size` and checks every result against the host.
fn check<T: Elem>(size: u32, local: usize, seed: u64) {
    let text = module(T::NAME, local);
    let m = cmdgraph_ir::text::parse(&text).expect("the module parses");
    cmdgraph_ir::verify::verify(&m).expect("the module verifies");
    let mut st = seed;
    let x: Vec<T> = (0..N).map(|_| T::random(&mut st)).collect();
    let mut it = Interpreter::new(&m).unwrap();
    it.bind_as("x", &x).unwrap();
    let id = it.finalize("g").unwrap();
    it.run_with(id, &RunOptions { subgroup_size: SubgroupSize(size), ..RunOptions::default() }).unwrap();
    let out: Vec<T> = it.read_as("out").unwrap();
    let bits: Vec<u32> = it.read_as("bits").unwrap();
    let ops: &[&str] = if T::NAME == "f32" { &OPS[..4] } else { &OPS };
    let size = size as usize;
    let ctx = |i: usize, what: &str| format!("{} size {size} group {local}: work-item {i}, {what}", T::NAME);
    for group in (0..N).step_by(local) {
        let count = local.div_ceil(size);
        for s in 0..count {
            let lanes: Vec<usize> = (group + s * size..(group + (s + 1) * size).min(group + local)).collect();
            let at = |i: usize, j: usize| out[i * PER + j];
            for (k, &i) in lanes.iter().enumerate() {
                let mut j = 0;
                for op in ops {
                    // A left fold from the identity in lane order (what llvmpipe computes).
                    let fold = |upto: usize| lanes[..upto].iter().fold(T::identity(op), |acc, &l| T::op(op, acc, x[l]));
                    for (c, want) in [fold(lanes.len()), fold(k + 1), fold(k)].into_iter().enumerate() {
                        assert_eq!(at(i, j), want, "{}", ctx(i, &format!("{op} {}", COLLECTIVES[c])));
                        j += 1;
                    }
                }
                assert_eq!(at(i, j), x[lanes[s & 3]], "{}", ctx(i, "broadcast from lane id & 3"));
                assert_eq!(at(i, j + 1), x[lanes[0]], "{}", ctx(i, "broadcast_first"));
                assert_eq!(at(i, j + 2), x[lanes[k ^ 1]], "{}", ctx(i, "shuffle from lane ^ 1"));
                let active: Vec<usize> = lanes.iter().copied().filter(|&l| x[l].positive()).collect();
                let under_if = if x[i].positive() {
                    active.iter().fold(T::identity("add"), |a, &l| T::op("add", a, x[l]))
                } else {
                    T::zero()
                };
                assert_eq!(at(i, j + 3), under_if, "{}", ctx(i, "reduce add of the lanes taking the if"));
                let b = &bits[i * BITS..(i + 1) * BITS];
                let mut ballot = [0u32; 4];
                for (l, &lane) in lanes.iter().enumerate() {
                    if x[lane].positive() {
                        ballot[l / 32] |= 1 << (l % 32);
                    }
                }
                assert_eq!(&b[..4], &ballot, "{}", ctx(i, "ballot"));
                let all = lanes.iter().all(|&l| x[l].positive());
                let any = lanes.iter().any(|&l| x[l].positive());
                let want = [u32::from(k == 0), u32::from(all), u32::from(any), size as u32, s as u32, k as u32];
                assert_eq!(&b[4..10], &want, "{}", ctx(i, "elect, all, any, size, id, lane"));
                assert_eq!(b[10], count as u32, "{}", ctx(i, "num_subgroups"));
            }
        }
    }
}

#[test]
fn every_subgroup_op_matches_the_host_for_subgroup_sizes_4_8_and_32() {
    for size in [4, 8, 32] {
        for local in [36, 72] {
            check::<f32>(size, local, 0x5ab6_0000 + size as u64);
            check::<i32>(size, local, 0x5ab6_1000 + size as u64);
            check::<u32>(size, local, 0x5ab6_2000 + size as u64);
        }
    }
}

#[test]
fn subgroup_sizes_that_no_device_has_are_refused() {
    let m = cmdgraph_ir::text::parse(&module("u32", 36)).unwrap();
    let mut it = Interpreter::new(&m).unwrap();
    let id = it.finalize("g").unwrap();
    for bad in [0, 3, 12, 256] {
        let err =
            it.run_with(id, &RunOptions { subgroup_size: SubgroupSize(bad), ..RunOptions::default() }).unwrap_err();
        assert!(err.to_string().contains(&format!("subgroup size {bad} is not a power of two")), "{err}");
    }
}
