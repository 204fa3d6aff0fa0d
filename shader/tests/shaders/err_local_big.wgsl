@group(0) @binding(0) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    var big: array<f32, 300>;
    big[gid.x % 300u] = 1.0;
    out[gid.x] = big[(gid.x + 1u) % 300u];
}
