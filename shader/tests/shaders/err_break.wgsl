@group(0) @binding(0) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    var acc = 0.0;
    for (var k = 0u; k < 16u; k++) {
        if (y[k] < 0.0) {
            break;
        }
        acc += y[k];
    }
    y[gid.x] = acc;
}
