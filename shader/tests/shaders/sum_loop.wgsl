@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> n: u32;

@compute @workgroup_size(16)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    var acc = 0.0;
    var count = 0u;
    for (var k = 0u; k < n; k++) {
        acc += x[i * n + k];
        if (x[i * n + k] > 0.0) {
            count += 1u;
        }
    }
    out[i] = acc + f32(count);
}
