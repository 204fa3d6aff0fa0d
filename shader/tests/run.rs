//! Translated shaders run on the reference interpreter and match a plain-Rust computation
//! of the same shader, element for element (bit-exact: the IR's float ops are IEEE 754 in
//! f32 and the math functions are Rust's, like the references below).

mod support;

use support::{assert_same, bytes_of, f32s, ir_max, ir_min, run, translated, u32s, Arg, Rng};

fn saxpy(file: &str) {
    let t = translated(file);
    assert!(t.text.contains("%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32, %n: u32"), "{}", t.text);
    let mut rng = Rng::new(1);
    let x = rng.f32s(256, -8.0, 8.0);
    let y = rng.f32s(256, -8.0, 8.0);
    let a = rng.f32_in(-3.0, 3.0);
    let n = 200;
    let out = run(file, &t, "range(256)", &[Arg::F32s(&x), Arg::F32s(&y), Arg::F32(a), Arg::U32(n)]);
    let want: Vec<f32> = (0..256).map(|i| if i < n as usize { a * x[i] + y[i] } else { y[i] }).collect();
    assert_same(file, &f32s(&out[1]), &want);
}

#[test]
fn saxpy_wgsl_matches_reference() {
    saxpy("saxpy.wgsl");
}

#[test]
fn saxpy_glsl_matches_reference() {
    saxpy("saxpy.comp");
}

fn chain_reference(v: f32) -> f32 {
    let a = v.abs().sqrt() + (-v * 0.25).exp();
    let b = v.sin() * v.cos() - (v.abs() + 1.0).ln();
    let c = ir_min(ir_max((v * 3.0).floor() + v.ceil(), -4.0), 6.0);
    let d = ir_min(a, b) + ir_max(b, c) + v.abs().powf(1.5) + 1.0 / (v.abs() + 2.0).sqrt();
    let e = a.mul_add(b, c) + d.tanh() * 0.5;
    let sel = if v < 0.0 { d - 1.0 } else { e };
    sel + (((v.abs() * 10.0) as u32) % 7) as f32
}

fn chain(file: &str) {
    let t = translated(file);
    let mut rng = Rng::new(2);
    let x = rng.f32s(128, -8.0, 8.0);
    let out = run(file, &t, "range(128)", &[Arg::F32s(&x), Arg::OutF32(128)]);
    let want: Vec<f32> = x.iter().map(|&v| chain_reference(v)).collect();
    assert_same(file, &f32s(&out[1]), &want);
}

#[test]
fn math_chain_wgsl_matches_reference() {
    chain("chain.wgsl");
}

#[test]
fn math_chain_glsl_matches_reference() {
    chain("chain.comp");
}

fn sum_loop(file: &str) {
    let t = translated(file);
    assert!(t.text.contains(" = for %"), "{}", t.text);
    let mut rng = Rng::new(3);
    let n = 13u32;
    let x = rng.f32s(64 * n as usize, -8.0, 8.0);
    let out = run(file, &t, "range(64)", &[Arg::F32s(&x), Arg::OutF32(64), Arg::U32(n)]);
    let want: Vec<f32> = (0..64)
        .map(|i| {
            let (mut acc, mut count) = (0.0f32, 0u32);
            for k in 0..n as usize {
                acc += x[i * n as usize + k];
                count += u32::from(x[i * n as usize + k] > 0.0);
            }
            acc + count as f32
        })
        .collect();
    assert_same(file, &f32s(&out[1]), &want);
}

#[test]
fn sum_loop_wgsl_matches_reference() {
    sum_loop("sum_loop.wgsl");
}

#[test]
fn sum_loop_glsl_matches_reference() {
    sum_loop("sum_loop.comp");
}

fn branch(file: &str, tag_of: impl Fn(u32) -> u32) {
    let t = translated(file);
    assert!(t.text.contains(" = if %"), "{}", t.text);
    let mut rng = Rng::new(4);
    let x = rng.f32s(64, -1.5, 1.5);
    let out = run(file, &t, "range(64)", &[Arg::F32s(&x), Arg::OutF32(64), Arg::OutU32(64)]);
    let mut want_r = Vec::new();
    let mut want_t = Vec::new();
    for (i, &v) in x.iter().enumerate() {
        let i = i as u32;
        let (r, t) = if v > 0.5 {
            (v * 2.0, i)
        } else if v < -0.5 {
            (1.0 - v, 7)
        } else {
            (v / 3.0, tag_of(i))
        };
        want_r.push(r);
        want_t.push(t);
    }
    assert_same(file, &f32s(&out[1]), &want_r);
    assert_eq!(u32s(&out[2]), want_t, "{file}: tags");
}

#[test]
fn if_else_wgsl_matches_reference() {
    // WGSL: an integer divided by zero is the dividend.
    branch("branch.wgsl", |i| (i * 3).checked_div(i % 4).unwrap_or(i * 3));
}

#[test]
fn if_else_glsl_matches_reference() {
    branch("branch.comp", |i| i * 3 + i % 4);
}

fn reduce(file: &str) {
    let t = translated(file);
    assert!(t.text.contains("local f32[64]") && t.text.contains("group_barrier"), "{}", t.text);
    let mut rng = Rng::new(5);
    let x = rng.f32s(512, -8.0, 8.0);
    let out = run(file, &t, "nd_range(global(512), local(64))", &[Arg::F32s(&x), Arg::OutF32(8)]);
    let want: Vec<f32> = x
        .chunks(64)
        .map(|g| {
            let mut tile = g.to_vec();
            for level in 0..6 {
                let stride = 32 >> level;
                for l in 0..stride {
                    tile[l] += tile[l + stride];
                }
            }
            tile[0]
        })
        .collect();
    assert_same(file, &f32s(&out[1]), &want);
}

#[test]
fn workgroup_reduction_wgsl_matches_reference() {
    reduce("reduce.wgsl");
}

#[test]
fn workgroup_reduction_glsl_matches_reference() {
    reduce("reduce.comp");
}

fn matmul(file: &str) {
    let t = translated(file);
    assert_eq!(t.workgroup_size, [4, 4, 1]);
    let (m, n, k) = (6usize, 7usize, 9usize);
    let mut rng = Rng::new(6);
    let a = rng.f32s(m * k, -4.0, 4.0);
    let b = rng.f32s(k * n, -4.0, 4.0);
    let args =
        [Arg::F32s(&a), Arg::F32s(&b), Arg::OutF32(m * n), Arg::U32(m as u32), Arg::U32(n as u32), Arg::U32(k as u32)];
    // The launch covers more than the matrix: the guard must keep the extra items out.
    let out = run(file, &t, "nd_range(global(8, 8), local(4, 4))", &args);
    let mut want = vec![0.0f32; m * n];
    for r in 0..m {
        for c in 0..n {
            let mut acc = 0.0f32;
            for j in 0..k {
                acc += a[r * k + j] * b[j * n + c];
            }
            want[r * n + c] = acc;
        }
    }
    assert_same(file, &f32s(&out[2]), &want);
}

#[test]
fn matmul_wgsl_matches_reference() {
    matmul("matmul.wgsl");
}

#[test]
fn matmul_glsl_matches_reference() {
    matmul("matmul.comp");
}

/// WGSL `%` on floats: e1 - e2 * trunc(e1 / e2), each step rounded.
fn wgsl_frem(a: f32, b: f32) -> f32 {
    a - b * (a / b).trunc()
}

#[test]
fn vectors_shifts_division_atomics_and_calls_wgsl_match_reference() {
    let file = "misc.wgsl";
    let t = translated(file);
    let n = 32usize;
    let mut rng = Rng::new(8);
    let v = rng.f32s(4 * n, -8.0, 8.0);
    let mut s: Vec<i32> = (0..2 * n).map(|_| rng.next() as i32 >> (rng.next() % 31)).collect();
    // Edge cases: division by zero, MIN / -1, negative shift amounts.
    s[0..6].copy_from_slice(&[17, 0, i32::MIN, -1, -9, -3]);
    let args = [
        Arg::Bytes("vec4<f32>", n, bytes_of(&v, f32::to_le_bytes)),
        Arg::Bytes("i32", 2 * n, bytes_of(&s, i32::to_le_bytes)),
        Arg::Bytes("vec4<f32>", n, vec![0; 16 * n]),
        Arg::Bytes("i32", 3 * n, vec![0; 12 * n]),
        Arg::OutF32(n),
        Arg::OutU32(5),
    ];
    let out = run(file, &t, &format!("nd_range(global({n}), local(8))"), &args);
    let mut want_v = Vec::new();
    let mut want_i = Vec::new();
    let mut want_f = Vec::new();
    for i in 0..n {
        let mut w = [v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]];
        w[1] = if w[0] > w[2] { w[0] - w[2] } else { w[2] * 0.5 };
        for src in [3, 2, 1, 0] {
            want_v.push(w[src] * 2.0 + w[0]);
        }
        let (a, b) = (s[2 * i], s[2 * i + 1]);
        // WGSL: x / 0 = x, MIN / -1 = MIN, x % 0 = 0, MIN % -1 = 0.
        want_i.push(if b == 0 { a } else { a.wrapping_div(b) } as u32);
        want_i.push(if b == 0 { 0 } else { a.wrapping_rem(b) } as u32);
        want_i.push((a.wrapping_shl(b as u32) ^ (a >> 3)) as u32);
        want_f.push(wgsl_frem(v[4 * i], v[4 * i + 1]));
    }
    assert_same(file, &f32s(&out[2]), &want_v);
    assert_eq!(u32s(&out[3]), want_i, "{file}: integers");
    assert_same(file, &f32s(&out[4]), &want_f);
    // Each work-group of 8 adds 2 to each of hits[0..4]; hits[4] is the max old value seen.
    let hits = u32s(&out[5]);
    assert_eq!(&hits[..4], &[(n / 4) as u32; 4], "{file}: atomic adds");
    assert_eq!(hits[4], (n / 4) as u32 - 1, "{file}: atomic max");
}

#[test]
fn nested_loops_vectors_and_a_workgroup_scalar_glsl_match_reference() {
    let file = "misc.comp";
    let t = translated(file);
    let (n, rows, cols, bias) = (16usize, 3usize, 7usize, 5i32);
    let mut rng = Rng::new(9);
    let x = rng.f32s(n * rows * cols, -8.0, 8.0);
    let args = [
        Arg::F32s(&x),
        Arg::Bytes("vec2<f32>", n, vec![0; 8 * n]),
        Arg::OutU32(n),
        Arg::U32(rows as u32),
        Arg::U32(cols as u32),
        Arg::I32(bias),
    ];
    let out = run(file, &t, &format!("nd_range(global({n}), local(8))"), &args);
    let mut want_o = Vec::new();
    let q_of = |i: usize| ((i as i32 - bias) / 3 + (i as i32 * 7) % 5) & 3;
    let mut want_c = Vec::new();
    for i in 0..n {
        let (mut sx, mut my) = (0.0f32, -1e30f32);
        for r in 0..rows {
            for c in (1..cols).step_by(2) {
                let v = x[(i * rows + r) * cols + c];
                sx += v;
                my = ir_max(my, v);
            }
        }
        want_o.extend([sx, my]);
        let leader = i / 8 * 8;
        want_c.push(q_of(leader) as u32 + 100 * (i / 8) as u32 + q_of(i) as u32);
    }
    assert_same(file, &f32s(&out[1]), &want_o);
    assert_eq!(u32s(&out[2]), want_c, "{file}: counts");
}

fn switch(file: &str) {
    let t = translated(file);
    assert!(t.text.contains(" = if %"), "{}", t.text);
    let mut rng = Rng::new(10);
    let n = 256usize;
    let mut x: Vec<i32> = (0..n).map(|_| rng.next() as i32).collect();
    // Every case, with both signs, and the values `classify` picks out.
    for (k, v) in (-8..8).enumerate() {
        x[k] = v;
    }
    let args =
        [Arg::Bytes("i32", n, bytes_of(&x, i32::to_le_bytes)), Arg::Bytes("i32", n, vec![0; 4 * n]), Arg::OutU32(n)];
    let out = run(file, &t, &format!("range({n})"), &args);
    let classify = |v: i32| match v {
        0 => 10,
        -1 | -2 => 20,
        _ => v >> 28,
    };
    let mut want_r = Vec::new();
    let mut want_t = Vec::new();
    for (i, &v) in x.iter().enumerate() {
        let (mut r, mut t) = (v, 0u32);
        match v & 7 {
            0 => r = v.wrapping_mul(2),
            1 | 2 => {
                r = v.wrapping_sub(5);
                t = 1;
            }
            3 => r = v.wrapping_neg(),
            4 => {
                if v > 0 {
                    t = 4;
                }
                r = r.wrapping_add(3);
            }
            _ => t = 9,
        }
        want_t.push(if i % 3 == 0 { t } else { t + 100 });
        want_r.push(r.wrapping_add(classify(v >> 30)) as u32);
    }
    assert_eq!(u32s(&out[1]), want_r, "{file}: results");
    assert_eq!(u32s(&out[2]), want_t, "{file}: tags");
}

#[test]
fn switch_wgsl_matches_reference() {
    switch("switch.wgsl");
}

#[test]
fn switch_glsl_matches_reference() {
    switch("switch.comp");
}

fn lanes4(v: &[f32], i: usize) -> [f32; 4] {
    [v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]]
}

fn dot_ref(x: &[f32], y: &[f32]) -> f32 {
    let mut acc = x[0] * y[0];
    for j in 1..x.len() {
        acc += x[j] * y[j];
    }
    acc
}

#[test]
fn math_functions_written_out_wgsl_match_reference() {
    let file = "math.wgsl";
    let t = translated(file);
    let n = 128usize;
    let mut rng = Rng::new(11);
    let mut a = rng.f32s(4 * n, -4.0, 4.0);
    let b = rng.f32s(4 * n, -4.0, 4.0);
    // Ties of round (to even), signed zeros, values past 2^23, infinities and NaN.
    let special = [
        0.5,
        1.5,
        2.5,
        -0.5,
        -1.5,
        -2.5,
        -0.3,
        0.3,
        -0.0,
        0.0,
        8388607.5,
        -8388609.0,
        1e30,
        -1e30,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        0.49999997,
        -0.49999997,
        4.5,
        1.0,
        0.99999994,
        -7.5,
        3.5,
    ];
    a[..special.len()].copy_from_slice(&special);
    let mut s: Vec<i32> = (0..4 * n).map(|_| rng.next() as i32).collect();
    s[..8].copy_from_slice(&[i32::MIN, -1, 0, 1, i32::MAX, -7, 7, i32::MIN + 1]);
    let args = [
        Arg::Bytes("vec4<f32>", n, bytes_of(&a, f32::to_le_bytes)),
        Arg::Bytes("vec4<f32>", n, bytes_of(&b, f32::to_le_bytes)),
        Arg::Bytes("vec4<i32>", n, bytes_of(&s, i32::to_le_bytes)),
        Arg::Bytes("vec4<f32>", 12 * n, vec![0; 16 * 12 * n]),
        Arg::Bytes("vec4<i32>", 4 * n, vec![0; 16 * 4 * n]),
    ];
    let out = run(file, &t, &format!("range({n})"), &args);
    let mut want = Vec::new();
    let mut want_i = Vec::new();
    for i in 0..n {
        let x = lanes4(&a, i);
        let y = lanes4(&b, i);
        let per = |g: &dyn Fn(usize) -> f32| [g(0), g(1), g(2), g(3)];
        let mix = |l: usize, e3: f32| x[l] * (1.0 - e3) + y[l] * e3;
        want.extend(per(&|l| mix(l, y[3])));
        let e3 = [0.25, 0.5, y[2], -y[0]];
        want.extend(per(&|l| mix(l, e3[l])));
        let d: Vec<f32> = (0..4).map(|l| x[l] - y[l]).collect();
        let len = dot_ref(&x, &x).sqrt();
        want.extend([dot_ref(&x, &y), len, dot_ref(&d, &d).sqrt(), x[0].abs()]);
        want.extend(per(&|l| x[l] / len));
        let cross = |p: usize, q: usize| x[p] * y[q] - x[q] * y[p];
        want.extend([cross(1, 2), cross(2, 0), cross(0, 1), dot_ref(&x[..2], &y[2..])]);
        want.extend(per(&|l| {
            if x[l] > 0.0 {
                1.0
            } else if x[l] < 0.0 {
                -1.0
            } else {
                x[l]
            }
        }));
        want.extend(per(&|l| if y[l] <= x[l] { 1.0 } else { 0.0 }));
        want.extend(per(&|l| {
            let c = ir_min(ir_max((0.1 - y[l]) / (x[l] - y[l]), 0.0), 1.0);
            c * c * (3.0 - 2.0 * c)
        }));
        want.extend(per(&|l| x[l] - x[l].floor()));
        want.extend(per(&|l| x[l].trunc()));
        want.extend(per(&|l| x[l].round_ties_even()));
        want.extend(per(&|l| ir_min(ir_max(x[l], 0.0), 1.0)));
        let k = [s[4 * i], s[4 * i + 1], s[4 * i + 2], s[4 * i + 3]];
        want_i.extend(k.map(i32::wrapping_abs));
        want_i.extend(k.map(i32::signum));
        want_i.extend(k.map(|v| v.count_ones() as i32));
        let idot =
            |p: &[i32], q: &[i32]| p.iter().zip(q).fold(0i32, |acc, (u, v)| acc.wrapping_add(u.wrapping_mul(*v)));
        let rev = [k[3], k[2], k[1], k[0]];
        want_i.extend([idot(&k, &rev), k[0].count_ones() as i32, idot(&k[..2], &k[2..]), 0]);
    }
    assert_same(file, &f32s(&out[3]), &want);
    let got_i: Vec<i32> = u32s(&out[4]).into_iter().map(|v| v as i32).collect();
    assert_eq!(got_i, want_i, "{file}: integers");
}

#[test]
fn compare_exchange_fixed_size_and_scalar_storage_buffers_wgsl_match_reference() {
    let file = "cmpxchg.wgsl";
    let t = translated(file);
    assert!(t.text.contains("atomic cmpxchg"), "{}", t.text);
    let n = 64usize;
    let mut rng = Rng::new(12);
    let cells: Vec<u32> = (0..n).map(|_| (rng.next() % 4) as u32).collect();
    let want: Vec<u32> = (0..n).map(|_| (rng.next() % 4) as u32).collect();
    let args = [Arg::U32s(&want), Arg::U32s(&cells), Arg::OutU32(2 * n), Arg::OutU32(1)];
    let out = run(file, &t, &format!("nd_range(global({n}), local({n}))"), &args);
    let mut want_cells = cells.clone();
    let mut want_out = Vec::new();
    for i in 0..n {
        let hit = cells[i] == want[i];
        if hit {
            want_cells[i] = i as u32 + 1000;
        }
        want_out.extend([cells[i], u32::from(hit)]);
    }
    assert_eq!(u32s(&out[1]), want_cells, "{file}: cells");
    assert_eq!(u32s(&out[2]), want_out, "{file}: results");
    assert_eq!(u32s(&out[3]), vec![want_out.iter().skip(1).step_by(2).sum::<u32>()], "{file}: count");
}

/// WGSL's `storageBarrier()` is the IR's `group_barrier` (a work-group barrier with a fence
/// over all memory): after it, each work-item reads what its neighbour in the work-group
/// wrote before it.
#[test]
fn storage_barrier_orders_buffer_accesses_within_the_work_group_wgsl() {
    let file = "storage_barrier.wgsl";
    let t = translated(file);
    assert!(t.text.contains("group_barrier"), "{}", t.text);
    let mut rng = Rng::new(5);
    let a = rng.f32s(256, -8.0, 8.0);
    let x = vec![0.0f32; 256];
    let out = run(file, &t, "nd_range(global(256), local(64))", &[Arg::F32s(&a), Arg::F32s(&x)]);
    let want: Vec<f32> = (0..256).map(|i| a[i ^ 1] * 3.0 + a[i]).collect();
    assert_same(file, &f32s(&out[1]), &want);
}

fn bitcast(file: &str) {
    let t = translated(file);
    assert!(t.text.contains("bitcast"), "{}", t.text);
    let mut rng = Rng::new(9);
    let x = rng.f32s(256, -1.0e30, 1.0e30);
    let out = run(
        file,
        &t,
        "nd_range(global(256), local(64))",
        &[Arg::F32s(&x), Arg::Bytes("u32", 256, vec![0; 4 * 256]), Arg::Bytes("vec2<f32>", 256, vec![0; 8 * 256])],
    );
    let b: Vec<u32> = x.iter().map(|v| v.to_bits()).collect();
    assert_eq!(u32s(&out[1]), b.iter().map(|b| (b >> 23) & 0xff).collect::<Vec<_>>(), "{file}: exponents");
    let got: Vec<u32> = u32s(&out[2]);
    let want: Vec<u32> = b.iter().flat_map(|b| [b & 0x7fff_ffff, (b & 0x7fff_ffff) ^ 0x4000_0000]).collect();
    assert_eq!(got, want, "{file}: bits read back as floats");
}

#[test]
fn bitcast_wgsl_matches_reference() {
    bitcast("bitcast.wgsl");
}

#[test]
fn bitcast_glsl_matches_reference() {
    bitcast("bitcast.comp");
}

#[test]
fn a_glsl_writeonly_buffer_is_a_write_parameter() {
    let file = "writeonly.comp";
    let t = translated(file);
    assert!(t.text.starts_with("kernel @k(%x: buf<f32, read>, %y: buf<f32, write>)"), "{}", t.text);
    let mut rng = Rng::new(31);
    let x = rng.f32s(128, -8.0, 8.0);
    let out = run(file, &t, "range(128)", &[Arg::F32s(&x), Arg::OutF32(128)]);
    let want: Vec<f32> = x.iter().enumerate().map(|(i, &v)| v * 3.0 - i as f32).collect();
    assert_same(file, &f32s(&out[1]), &want);
}

#[test]
fn a_work_group_struct_and_a_whole_array_copy_match_reference() {
    let file = "workgroup_struct.wgsl";
    let t = translated(file);
    // One `local` per member, the array of arrays as one of 32 elements.
    for decl in ["local f32[64]", "local u32[32]", "local u32[1]", "local u32[4]"] {
        assert!(t.text.contains(decl), "{decl}\n{}", t.text);
    }
    assert!(t.text.contains(" = for ") || t.text.contains("  for "), "the copy is a loop\n{}", t.text);
    let mut rng = Rng::new(33);
    let groups = 3;
    let x = rng.f32s(64 * groups, -8.0, 8.0);
    let lens = [7u32, 7, 7, 7];
    let out = run(
        file,
        &t,
        &format!("nd_range(global({}), local(64))", 64 * groups),
        &[Arg::F32s(&x), Arg::OutF32(64 * groups), Arg::U32s(&lens)],
    );
    let mut want = vec![0.0f32; 64 * groups];
    for g in 0..groups {
        for li in 0..64usize {
            let r = (li / 4) % 8;
            let c = li % 4;
            // grid[r][c] was written by the work-item r * 4 + c (< 32).
            let grid = (r * 4 + c) as u32 * 3 + g as u32;
            want[g * 64 + li] = x[g * 64 + 63 - li] * 2.0 + grid as f32 + 32.0;
        }
    }
    assert_same(file, &f32s(&out[1]), &want);
    assert_eq!(u32s(&out[2]), vec![10, 11, 12, 13], "group 1's lens");
}

#[test]
fn elements_of_a_whole_array_load_match_reference() {
    let file = "whole_array_load.wgsl";
    let t = translated(file);
    let mut rng = Rng::new(35);
    let a = rng.f32s(4, -8.0, 8.0);
    let out = run(file, &t, "range(64)", &[Arg::F32s(&a), Arg::OutF32(64)]);
    let want: Vec<f32> = (0..64).map(|i| a[1] * 2.0 + a[i % 4]).collect();
    assert_same(file, &f32s(&out[1]), &want);
}
