@group(0) @binding(0) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    for (var k = 0u; k < 4u; k++) {
        if (y[k] > 1.0) {
            return;
        }
        y[k] = 2.0;
    }
}
