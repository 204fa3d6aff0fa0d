// `let c = a;` of a fixed-size storage array, then elements of it, at constant and computed
// indices, before any store.
@group(0) @binding(0) var<storage, read> a: array<f32, 4>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let c = a;
    y[gid.x] = c[1] * 2.0 + c[gid.x % 4u];
}
