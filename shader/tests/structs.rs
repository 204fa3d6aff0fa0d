//! Storage buffers of structs: translated to buffers of their one scalar type, laid out as the
//! shader lays them out, run on the interpreter and compared with plain Rust working on the
//! same bytes (bit-exact).

mod support;

use support::{assert_same, bytes_of, f32s, run, translated, u32s, Arg, Rng};

/// Words per `Particle { pos: vec2<f32>, vel: vec2<f32> }`.
const BOID: usize = 4;

#[test]
fn boids_struct_array_matches_reference() {
    let file = "boids.wgsl";
    let t = translated(file);
    assert!(t.text.contains("%src: buf<f32, read>, %dst: buf<f32, read_write>, %dt: f32, %n: u32"), "{}", t.text);
    let mut rng = Rng::new(41);
    let (count, n) = (128usize, 100usize);
    let src = rng.f32s(count * BOID, -4.0, 4.0);
    let dst = rng.f32s(count * BOID, -4.0, 4.0);
    let dt = rng.f32_in(0.01, 0.1);
    let out = run(file, &t, "range(128)", &[Arg::F32s(&src), Arg::F32s(&dst), Arg::F32(dt), Arg::U32(n as u32)]);
    let mut want = dst.clone();
    for i in 0..n {
        let next = (i + 1) % n;
        let p = |k: usize, w: usize| src[k * BOID + w];
        let mut vel = [p(i, 2), p(i, 3)];
        let d = [p(next, 0) - p(i, 0), p(next, 1) - p(i, 1)];
        vel = [vel[0] + d[0] * 0.125, vel[1] + d[1] * 0.125];
        vel[1] -= p(i, 0) * 0.5;
        want[i * BOID + 2] = vel[0];
        want[i * BOID + 3] = vel[1];
        want[i * BOID] = p(i, 0) + vel[0] * dt;
        want[i * BOID + 1] = p(i, 1) + vel[1] * dt;
        want[i * BOID] += (i as i32 - 3) as f32;
    }
    assert_same(file, &f32s(&out[1]), &want);
    assert_same(file, &f32s(&out[0]), &src);
}

#[test]
fn glsl_buffer_block_of_structs_matches_reference() {
    // std430: `Particle { vec2 pos; vec2 vel; float mass[2]; }` is 6 words.
    let file = "particles.comp";
    let t = translated(file);
    assert!(t.text.contains("%particles: buf<f32, read_write>, %energy: buf<f32, read_write>"), "{}", t.text);
    let mut rng = Rng::new(42);
    let count = 64;
    let ps = rng.f32s(count * 6, -3.0, 3.0);
    let out = run(file, &t, "range(64)", &[Arg::F32s(&ps), Arg::OutF32(count)]);
    let mut want = ps.clone();
    let mut energy = vec![0.0f32; count];
    for i in 0..count {
        let e = &mut want[i * 6..i * 6 + 6];
        let m = e[4] + e[5];
        let v = [e[2], e[3]];
        energy[i] = 0.5 * m * (v[0] * v[0] + v[1] * v[1]);
        e[0] += v[0];
        e[1] += v[1];
        e[4 + (i & 1)] = m;
    }
    assert_same(file, &f32s(&out[1]), &energy);
    assert_same(file, &f32s(&out[0]), &want);
}

#[test]
fn padded_struct_keeps_the_shader_layout() {
    // `LightData { position: vec4, color: vec3, radius: f32, dir: vec3 }`: 48 bytes, radius in
    // word 7 (next to color), dir in words 8..11, word 11 padding.
    let file = "padded.wgsl";
    let t = translated(file);
    assert!(t.text.contains("const 12 : u32"), "{}", t.text);
    let mut rng = Rng::new(43);
    let count = 32;
    let lights = rng.f32s(count * 12, -2.0, 2.0);
    let out = run(file, &t, "range(32)", &[Arg::F32s(&lights), Arg::Bytes("vec4<f32>", count, vec![0; count * 16])]);
    let mut want = lights.clone();
    let mut sums = vec![0.0f32; count * 4];
    for i in 0..count {
        let e = &mut want[i * 12..i * 12 + 12];
        let l = [e[0], e[1], e[2], e[3]];
        let (c, r) = ([e[4], e[5], e[6]], e[7]);
        sums[i * 4..i * 4 + 4].copy_from_slice(&[c[0] * r, c[1] * r, c[2] * r, l[3] + l[0]]);
        let c = [c[2] + l[1], c[0] + l[1], c[1] + l[1]];
        e[4..7].copy_from_slice(&c);
        e[7] = r * 2.0;
        e[1] = c[i % 3];
        for d in &mut e[8..11] {
            *d *= l[2];
        }
    }
    assert_same(file, &f32s(&out[1]), &sums);
    // The padding words come back as they went in.
    assert_same(file, &f32s(&out[0]), &want);
}

#[test]
fn atomics_on_struct_members_match_reference() {
    let file = "struct_atomic.wgsl";
    let t = translated(file);
    assert!(t.text.contains("atomic add %bins[") && t.text.contains("atomic max %bins["), "{}", t.text);
    let mut rng = Rng::new(44);
    let keys: Vec<u32> = (0..256).map(|_| rng.next() as u32).collect();
    let out = run(file, &t, "range(256)", &[Arg::U32s(&keys), Arg::Bytes("u32", 24, vec![0; 96])]);
    let mut want = vec![0u32; 24];
    for &k in &keys {
        let b = (k % 8) as usize;
        want[b * 3] += 1;
        want[b * 3 + 1] = want[b * 3 + 1].max(k);
    }
    for g in 0..8 {
        want[g * 3 + 2] = g as u32 * 3 + 1;
    }
    assert_eq!(u32s(&out[1]), want);
    assert_eq!(bytes_of(&keys, u32::to_le_bytes), out[0]);
}

#[test]
fn whole_structs_are_stored_scalar_by_scalar() {
    // `Particle { pos, vel: vec2<f32>, w: array<f32, 2> }`: 6 words.
    let file = "struct_copy.wgsl";
    let t = translated(file);
    let mut rng = Rng::new(45);
    let count = 96;
    let src = rng.f32s((count + 1) * 6, -3.0, 3.0);
    let dst = rng.f32s(count * 6, -3.0, 3.0);
    let out = run(file, &t, "range(96)", &[Arg::F32s(&src), Arg::F32s(&dst)]);
    let mut want = dst.clone();
    for i in 0..count {
        let s = &src[i * 6..i * 6 + 12];
        let e = &mut want[i * 6..i * 6 + 6];
        match i % 3 {
            0 => e.copy_from_slice(&s[6..12]),
            1 => e.copy_from_slice(&[s[2], s[3], s[0] * 2.0, s[1] * 2.0, s[5], 1.5]),
            _ => e.fill(0.0),
        }
    }
    assert_same(file, &f32s(&out[1]), &want);
}

#[test]
fn buffer_block_of_several_members_matches_reference() {
    // `{ float scale; vec3 axis; vec4 data[]; }`: scale word 0, axis 4..7, data from word 8.
    let file = "struct_members.comp";
    let t = translated(file);
    let mut rng = Rng::new(46);
    let count = 64;
    let b = rng.f32s(8 + count * 4, -2.0, 2.0);
    let out = run(file, &t, "range(64)", &[Arg::F32s(&b), Arg::OutF32(count)]);
    let (scale, axis) = (b[0], [b[4], b[5], b[6]]);
    let mut want = b.clone();
    let mut outv = vec![0.0f32; count];
    for i in 0..count {
        let d = &b[8 + i * 4..12 + i * 4];
        outv[i] = (d[0] * axis[0] + d[1] * axis[1] + d[2] * axis[2]) * scale + d[3];
        want[8 + i * 4 + 1] = axis[i % 3];
    }
    assert_same(file, &f32s(&out[1]), &outv);
    assert_same(file, &f32s(&out[0]), &want);
}

#[test]
fn nested_structs_with_vector_arrays_match_reference() {
    // `Outer { a, inner: Inner { dir: vec3, k: array<vec3, 2> }, b: vec2 }`: 20 words, a at 0,
    // dir at 4, k at 8 and 12, b at 16.
    let file = "struct_nested.wgsl";
    let t = translated(file);
    let mut rng = Rng::new(47);
    let count = 64;
    let os = rng.f32s(count * 20, -2.0, 2.0);
    let idx: Vec<u32> = (0..count).map(|_| rng.next() as u32).collect();
    let out = run(file, &t, "range(64)", &[Arg::F32s(&os), Arg::U32s(&idx)]);
    let mut want = os.clone();
    for i in 0..count {
        let e = &mut want[i * 20..i * 20 + 20];
        let j = (idx[i] % 2) as usize;
        let (kj, kn) = (8 + 4 * j, 8 + 4 * (1 - j));
        for l in 0..3 {
            e[kj + l] = e[4 + l] * e[0] + e[kn + l];
        }
        e[16] = e[kj + 2];
        e[17] = e[kj];
        e[4 + j] = e[17];
    }
    assert_same(file, &f32s(&out[0]), &want);
}
