@group(0) @binding(0) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let wide: f64 = f64(y[gid.x]) * 3.0lf;
    y[gid.x] = f32(wide);
}
