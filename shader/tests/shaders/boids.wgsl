// A boids-like step: an array of structs of vec2 members, read from one buffer and written to
// another, plus a member written in place.
struct Particle {
    pos: vec2<f32>,
    vel: vec2<f32>,
}

struct Params {
    dt: f32,
    n: u32,
}

@group(0) @binding(0) var<storage, read> src: array<Particle>;
@group(0) @binding(1) var<storage, read_write> dst: array<Particle>;
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= params.n {
        return;
    }
    let next = (i + 1u) % params.n;
    var vel = src[i].vel;
    let d = src[next].pos - src[i].pos;
    vel = vel + d * 0.125;
    vel.y = vel.y - src[i].pos.x * 0.5;
    dst[i].vel = vel;
    dst[i].pos = src[i].pos + vel * params.dt;
    dst[i].pos.x += f32(i32(i) - 3);
}
