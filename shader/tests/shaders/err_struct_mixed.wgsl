struct Particle { pos: vec2<f32>, id: u32 }
@group(0) @binding(0) var<storage, read_write> ps: array<Particle>;

@compute @workgroup_size(1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    ps[gid.x].pos += vec2<f32>(1.0);
}
