@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

fn squash(v: f32) -> f32 {
    return tanh(v) * 0.5;
}

@compute @workgroup_size(32)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    let v = x[i];
    let a = sqrt(abs(v)) + exp(-v * 0.25);
    let b = sin(v) * cos(v) - log(abs(v) + 1.0);
    let c = clamp(floor(v * 3.0) + ceil(v), -4.0, 6.0);
    let d = min(a, b) + max(b, c) + pow(abs(v), 1.5) + inverseSqrt(abs(v) + 2.0);
    let e = fma(a, b, c) + squash(d);
    let w = vec2<f32>(e, d);
    out[i] = select(w.x, w.y - 1.0, v < 0.0) + f32(u32(abs(v) * 10.0) % 7u);
}
