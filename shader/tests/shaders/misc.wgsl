// Vectors, shifts, integer division, float remainder, atomics and an inlined function
// returning from both branches of an `if`.
@group(0) @binding(0) var<storage, read> v: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> s: array<i32>;
@group(0) @binding(2) var<storage, read_write> out_v: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> out_i: array<i32>;
@group(0) @binding(4) var<storage, read_write> out_f: array<f32>;
@group(0) @binding(5) var<storage, read_write> hits: array<atomic<u32>>;

fn pick(a: f32, b: f32) -> f32 {
    if (a > b) {
        return a - b;
    } else {
        return b * 0.5;
    }
}

@compute @workgroup_size(8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
    let i = gid.x;
    var w = v[i];
    w.y = pick(w.x, w.z);
    out_v[i] = w.wzyx * 2.0 + vec4<f32>(w.x);
    let a = s[2u * i];
    let b = s[2u * i + 1u];
    out_i[3u * i] = a / b;
    out_i[3u * i + 1u] = a % b;
    out_i[3u * i + 2u] = (a << u32(b)) ^ (a >> 3u);
    out_f[i] = v[i].x % v[i].y;
    let old = atomicAdd(&hits[li % 4u], 1u);
    atomicMax(&hits[4], old);
}
