//! Scale: large launches stay correct, and their timings are printed.
//!
//! `cargo test --release -p cmdgraph-ir --test interp_scale -- --nocapture` with
//! `INTERP_SCALE=16` runs 16x the default sizes (the figures in docs/interpreter.md).

mod interp_support;

use cmdgraph_interp::{Order, RunOptions};
use interp_support::*;
use std::time::Instant;

fn scale() -> u64 {
    std::env::var("INTERP_SCALE").ok().and_then(|v| v.parse().ok()).filter(|&s: &u64| s >= 1).unwrap_or(1)
}

/// Two chained saxpy launches over `65536 * scale` work-items, plain and race-checked.
#[test]
fn saxpy_at_scale() {
    let n = 65_536 * scale();
    let src = format!(
        r#"
kernel @saxpy(%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32) {{
  %i = global_id 0
  %xv = load %x[%i]
  %yv = load %y[%i]
  %ax = mul %a, %xv
  %r = add %ax, %yv
  store %y[%i], %r
}}
usm @x : f32[{n}]
usm @y : f32[{n}]
graph @g {{
  %k0 = kernel @saxpy range({n}) args(@x, @y, 2.0)
  %k1 = kernel @saxpy range({n}) args(@x, @y, 3.0) after(%k0)
}}
"#
    );
    let mut it = interp(&src);
    let x = inputs(n as usize, 11);
    it.bind_as("x", &x).unwrap();
    let e = it.finalize("g").unwrap();
    let t = Instant::now();
    let stats = it.run(e).unwrap();
    eprintln!("saxpy: {} work-items in {:?}", stats.work_items, t.elapsed());
    let t = Instant::now();
    let stats = it
        .run_with(e, &RunOptions { order: Order::Creation, check_races: true, fuel: None, ..RunOptions::default() })
        .unwrap();
    eprintln!("saxpy, race-checked: {} work-items in {:?}", stats.work_items, t.elapsed());
    assert!(stats.races.is_empty());
    let mut y = vec![0f32; n as usize];
    for _ in 0..2 {
        for a in [2.0f32, 3.0] {
            for (y, x) in y.iter_mut().zip(&x) {
                *y += a * x;
            }
        }
    }
    assert_eq!(it.read_as::<f32>("y").unwrap(), y);
}

/// A tiled matmul of side `64 * sqrt(scale)` with 16x16 work-groups.
#[test]
fn tiled_matmul_at_scale() {
    let m = 64 * (scale() as f64).sqrt() as u64 / 16 * 16;
    let tile = 16u64;
    let src = format!(
        r#"
kernel @mm(%a: buf<f32, read>, %b: buf<f32, read>, %c: buf<f32, write>) {{
  %row = global_id 0
  %col = global_id 1
  %lr = local_id 0
  %lc = local_id 1
  %as = local f32[{tt}]
  %bs = local f32[{tt}]
  %t = const {tile} : u32
  %n = const {m} : u32
  %zero = const 0 : u32
  %one = const 1 : u32
  %tiles = const {nt} : u32
  %fz = const 0.0 : f32
  %lrt = mul %lr, %t
  %slot = add %lrt, %lc
  %acc = for %k = %zero to %tiles step %one carry(%s = %fz) {{
    %kt = mul %k, %t
    %rn = mul %row, %n
    %ac = add %kt, %lc
    %ai = add %rn, %ac
    %av = load %a[%ai]
    store %as[%slot], %av
    %br = add %kt, %lr
    %brn = mul %br, %n
    %bi = add %brn, %col
    %bv = load %b[%bi]
    store %bs[%slot], %bv
    group_barrier
    %inner = for %j = %zero to %t step %one carry(%q = %s) {{
      %x1 = add %lrt, %j
      %jt = mul %j, %t
      %x2 = add %jt, %lc
      %u = load %as[%x1]
      %v = load %bs[%x2]
      %q2 = fma %u, %v, %q
      yield %q2
    }}
    group_barrier
    yield %inner
  }}
  %rn2 = mul %row, %n
  %ci = add %rn2, %col
  store %c[%ci], %acc
}}
usm @a : f32[{mm}]
usm @b : f32[{mm}]
usm @c : f32[{mm}]
graph @g {{
  %k = kernel @mm nd_range(global({m}, {m}), local({tile}, {tile})) args(@a, @b, @c)
}}
"#,
        tt = tile * tile,
        nt = m / tile,
        mm = m * m
    );
    let mut it = interp(&src);
    let (a, b) = (inputs((m * m) as usize, 12), inputs((m * m) as usize, 13));
    it.bind_as("a", &a).unwrap();
    it.bind_as("b", &b).unwrap();
    let e = it.finalize("g").unwrap();
    let t = Instant::now();
    it.run(e).unwrap();
    eprintln!("matmul {m}x{m}x{m}, 16x16 tiles: {:?}", t.elapsed());
    let m = m as usize;
    let mut c = vec![0f32; m * m];
    for i in 0..m {
        for j in 0..m {
            c[i * m + j] = (0..m).fold(0f32, |acc, k| a[i * m + k].mul_add(b[k * m + j], acc));
        }
    }
    assert_eq!(it.read_as::<f32>("c").unwrap(), c);
}
