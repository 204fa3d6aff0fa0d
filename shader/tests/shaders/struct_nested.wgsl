// Nested structs with a vec3 array inside (WGSL layout: `Outer` is 80 bytes, `inner` at
// byte 16, `k` at 32 with stride 16, `b` at 64), indexed with computed indices.
struct Inner { dir: vec3<f32>, k: array<vec3<f32>, 2> }
struct Outer { a: f32, inner: Inner, b: vec2<f32> }
@group(0) @binding(0) var<storage, read_write> os: array<Outer>;
@group(0) @binding(1) var<storage, read> idx: array<u32>;
@compute @workgroup_size(32)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    let j = idx[i] % 2u;
    os[i].inner.k[j] = os[i].inner.dir * os[i].a + os[i].inner.k[1u - j];
    os[i].b = os[i].inner.k[j].zx;
    os[i].inner.dir[j] = os[i].b.y;
}
