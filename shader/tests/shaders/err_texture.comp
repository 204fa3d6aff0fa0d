#version 450
layout(local_size_x = 8, local_size_y = 8) in;
layout(set = 0, binding = 0, rgba8) uniform writeonly image2D img;

void main() {
    imageStore(img, ivec2(gl_GlobalInvocationID.xy), vec4(1.0));
}
