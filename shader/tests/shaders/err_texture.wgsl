@group(0) @binding(0) var img: texture_storage_2d<rgba8unorm, write>;

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    textureStore(img, vec2<i32>(gid.xy), vec4<f32>(1.0));
}
