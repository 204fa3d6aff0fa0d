//! Struct, array and matrix values in local and private variables (taken apart into their
//! leaves, docs/kernels.md): the translated kernels run on the interpreter and match plain
//! Rust doing the same arithmetic in the same order, bit for bit. Matrix products are written
//! as the SPIR-V definitions spell them, each `mul` and `add` rounded on its own.

mod support;

use support::{assert_same, f32s, run, translated, Arg, Rng};

const TABLE: [f32; 5] = [0.5, -1.25, 2.0, 0.75, -3.5];
const BIAS: [f32; 4] = [0.125, -0.375, 1.5, -2.25];

/// `M * v` for a 2x2 matrix given by columns.
fn mat_vec(m: [[f32; 2]; 2], v: [f32; 2]) -> [f32; 2] {
    [m[0][0] * v[0] + m[1][0] * v[1], m[0][1] * v[0] + m[1][1] * v[1]]
}

fn aggregates_wgsl_item(x: &[f32], i: usize) -> [f32; 8] {
    let mut w: Vec<f32> = (0..6).map(|k| x[i * 6 + k] * TABLE[(i + k) % 5]).collect();
    for k in 0..5 {
        if w[k] > w[k + 1] {
            w.swap(k, k + 1);
        }
    }
    // make(window[0]), then bump() for the rest.
    let (mut lo, mut hi, mut hits) = ([w[0], 0.0f32], w[0], [0u32; 3]);
    for (k, &v) in w.iter().enumerate().skip(1) {
        hits[(k + i) % 3] += 1;
        if v > hi {
            hi = v;
        }
        lo = [lo[0] + v, lo[1] + v * v];
    }
    let rot = [[w[1], w[2]], [-w[2], w[1]]];
    let m = [[lo[0], 0.5], [w[3], hi]];
    let p = mat_vec(rot, lo);
    let q = [lo[0] * m[0][0] + lo[1] * m[0][1], lo[0] * m[1][0] + lo[1] * m[1][1]];
    let rm = [mat_vec(rot, m[0]), mat_vec(rot, m[1])];
    let r = [
        [(rm[0][0] + m[0][0]) * 0.5, (rm[0][1] + m[0][1]) * 0.5],
        [(rm[1][0] + m[1][0]) * 0.5, (rm[1][1] + m[1][1]) * 0.5],
    ];
    let s = mat_vec(r, [BIAS[i % 4], w[5]]);
    [
        p[0],
        p[1],
        q[0] + q[1],
        s[0] - s[1],
        (hits[0] * 100 + hits[1] * 10 + hits[2]) as f32,
        hi,
        w[i % 6] + BIAS[(i + 1) % 4],
        r[1][i % 2],
    ]
}

#[test]
fn local_structs_arrays_and_matrices_in_wgsl_match_reference() {
    let file = "aggregates.wgsl";
    let t = translated(file);
    // The sort pass writes `window[k]` at a computed index: a `select` per element.
    assert!(t.text.matches(" = select ").count() >= 12, "{}", t.text);
    assert!(!t.text.contains(" local "), "no work-group memory stands in for a local array\n{}", t.text);
    let mut rng = Rng::new(77);
    let items = 128;
    let x = rng.f32s(items * 6, -4.0, 4.0);
    let out = run(file, &t, "range(128)", &[Arg::F32s(&x), Arg::OutF32(items * 8)]);
    let want: Vec<f32> = (0..items).flat_map(|i| aggregates_wgsl_item(&x, i)).collect();
    assert_same(file, &f32s(&out[1]), &want);
}

const W: [f32; 4] = [0.25, -0.5, 1.75, -1.0];

fn aggregates_glsl_item(x: &[f32], i: usize) -> [f32; 6] {
    let v: Vec<f32> = (0..4).map(|k| x[i * 4 + k] + W[(i + k) % 4]).collect();
    let (mut sum, mut top, mut count) = ([0.0f32; 3], -1e30f32, [0i32; 2]);
    for &e in &v {
        sum = [sum[0] + e, sum[1] + e * 0.5, sum[2] + -e];
        top = if top < e { e } else { top };
        count[usize::from(e > 0.0)] += 1;
    }
    // mat3(v0, v1, v2, v3, 1, 0.5, sum): columns of three.
    let m = [[v[0], v[1], v[2]], [v[3], 1.0, 0.5], sum];
    let u = [v[1], v[2], v[3]];
    let a: Vec<f32> = (0..3).map(|r| m[0][r] * u[0] + m[1][r] * u[1] + m[2][r] * u[2]).collect();
    let bv = [v[0], -v[1], top];
    let b: Vec<f32> = (0..3).map(|c| bv[0] * m[c][0] + bv[1] * m[c][1] + bv[2] * m[c][2]).collect();
    [a[0], a[1] + a[2], b[0] - b[2], b[1], (count[0] * 10 + count[1]) as f32, v[i % 4]]
}

#[test]
fn local_structs_arrays_and_matrices_in_glsl_match_reference() {
    let file = "aggregates.comp";
    let t = translated(file);
    let mut rng = Rng::new(78);
    let items = 128;
    let x = rng.f32s(items * 4, -4.0, 4.0);
    let out = run(file, &t, "range(128)", &[Arg::F32s(&x), Arg::OutF32(items * 6)]);
    let want: Vec<f32> = (0..items).flat_map(|i| aggregates_glsl_item(&x, i)).collect();
    assert_same(file, &f32s(&out[1]), &want);
}
