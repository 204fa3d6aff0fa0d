@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> bits: array<u32>;
@group(0) @binding(2) var<storage, read_write> back: array<vec2<f32>>;

// The exponent field of each float, its bits with the sign cleared read back as a float
// (|x|), and a vec2 of two words read as floats.
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    let b = bitcast<u32>(x[i]);
    bits[i] = (b >> 23u) & 0xffu;
    let s = bitcast<i32>(b & 0x7fffffffu);
    back[i] = bitcast<vec2<f32>>(vec2<u32>(b & 0x7fffffffu, bitcast<u32>(s ^ 0x40000000)));
}
