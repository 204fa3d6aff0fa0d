@group(0) @binding(0) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(1)
fn main() {
    for (var k = 0u; k < 8u; k++) {
        if (y[k] < 0.0) {
            continue;
        }
        y[k] = sqrt(y[k]);
    }
}
