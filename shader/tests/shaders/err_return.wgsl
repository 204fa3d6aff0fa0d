@group(0) @binding(0) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (y[0] > 0.0) {
        if (y[1] > 1.0) {
            return;
        }
        y[2] = 2.0;
    }
    y[3] = 3.0;
}
