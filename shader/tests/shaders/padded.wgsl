// Structs with padding: vec3 then f32 pack into 16 bytes, a vec3 after them starts a new
// 16-byte slot, leaving word 11 of each 48-byte element as padding (webgpu-samples' LightData
// with a direction).
struct LightData {
    position: vec4<f32>,
    color: vec3<f32>,
    radius: f32,
    dir: vec3<f32>,
}

@group(0) @binding(0) var<storage, read_write> lights: array<LightData>;
@group(0) @binding(1) var<storage, read_write> sums: array<vec4<f32>>;

@compute @workgroup_size(16)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    let l = lights[i].position;
    sums[i] = vec4<f32>(lights[i].color * lights[i].radius, l.w + l.x);
    lights[i].color = lights[i].color.zxy + vec3<f32>(l.y);
    lights[i].radius = lights[i].radius * 2.0;
    lights[i].position.y = lights[i].color[i % 3u];
    lights[i].dir = lights[i].dir * l.z;
}
