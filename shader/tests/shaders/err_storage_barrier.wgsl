@group(0) @binding(0) var<storage, read_write> x: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    x[gid.x] = 1.0;
    storageBarrier();
    x[gid.x] = x[gid.x ^ 1u] + 1.0;
}
