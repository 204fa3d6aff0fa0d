// Whole structs stored: a copy from another buffer, a constructor (with a nested array
// constructor) and a zero value, each written scalar by scalar.
struct Particle {
    pos: vec2<f32>,
    vel: vec2<f32>,
    w: array<f32, 2>,
}

@group(0) @binding(0) var<storage, read> src: array<Particle>;
@group(0) @binding(1) var<storage, read_write> dst: array<Particle>;

@compute @workgroup_size(32)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i % 3u == 0u {
        dst[i] = src[i + 1u];
    } else if i % 3u == 1u {
        dst[i] = Particle(src[i].vel, src[i].pos * 2.0, array<f32, 2>(src[i].w[1], 1.5));
    } else {
        dst[i] = Particle();
    }
}
