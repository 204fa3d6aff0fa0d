#version 450
// A buffer block of several members (a scalar, a vec3, then a runtime array of vec4): one
// flat buffer, the array starting at word 8 (std430 aligns vec3 and vec4 to 16 bytes).
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) buffer B { float scale; vec3 axis; vec4 data[]; };
layout(std430, set = 0, binding = 1) buffer O { float outv[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    outv[i] = dot(data[i].xyz, axis) * scale + data[i].w;
    data[i].y = axis[i % 3u];
}
