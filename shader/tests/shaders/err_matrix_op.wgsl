@group(0) @binding(0) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let m = mat2x2<f32>(out[0], out[1], out[2], out[3]);
    let t = transpose(m);
    out[gid.x] = t[0].y;
}
