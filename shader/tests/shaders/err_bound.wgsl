@group(0) @binding(0) var<storage, read_write> y: array<u32>;

@compute @workgroup_size(1)
fn main() {
    var n = 4u;
    for (var k = 0u; k < n; k++) {
        n = y[k];
    }
    y[0] = n;
}
