@group(0) @binding(0) var<storage, read_write> a: array<f32, 4>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(1)
fn main() {
    let c = a;
    a[1] = 5.0;
    y[0] = c[1];
}
