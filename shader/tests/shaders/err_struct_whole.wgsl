struct Particle { pos: vec2<f32>, vel: vec2<f32> }
@group(0) @binding(0) var<storage, read_write> ps: array<Particle>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

fn speed(p: Particle) -> f32 {
    return length(p.vel);
}

@compute @workgroup_size(1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    out[gid.x] = speed(ps[gid.x]);
}
