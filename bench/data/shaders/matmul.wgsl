// c = a · b, one output per invocation, the tail guarded (cmdgraph-bench shader-run).
struct Dims { m: u32, n: u32, k: u32 }
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> dims: Dims;

@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let col = gid.x;
    let row = gid.y;
    if (row >= dims.m || col >= dims.n) {
        return;
    }
    var acc = 0.0;
    for (var k = 0u; k < dims.k; k += 1u) {
        acc = acc + a[row * dims.k + k] * b[k * dims.n + col];
    }
    c[row * dims.n + col] = acc;
}
