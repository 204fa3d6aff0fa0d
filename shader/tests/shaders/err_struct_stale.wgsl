struct Particle { pos: vec2<f32>, vel: vec2<f32> }
@group(0) @binding(0) var<storage, read_write> ps: array<Particle>;

@compute @workgroup_size(1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let p = ps[gid.x];
    ps[gid.x].pos = vec2<f32>(0.0);
    ps[gid.x].vel = p.pos;
}
