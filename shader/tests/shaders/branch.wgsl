@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read_write> tag: array<u32>;

@compute @workgroup_size(8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    let v = x[i];
    var r: f32;
    var t = 7u;
    if (v > 0.5) {
        r = v * 2.0;
        t = i;
    } else if (v < -0.5) {
        r = 1.0 - v;
    } else {
        r = v / 3.0;
        t = i * 3u / (i % 4u);
    }
    out[i] = r;
    tag[i] = t;
}
