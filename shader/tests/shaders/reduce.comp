#version 450
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) buffer S { float sums[]; };
shared float tile[64];

void main() {
    uint lid = gl_LocalInvocationID.x;
    tile[lid] = x[gl_GlobalInvocationID.x];
    barrier();
    for (uint level = 0u; level < 6u; level++) {
        uint stride = 32u >> level;
        if (lid < stride) {
            tile[lid] = tile[lid] + tile[lid + stride];
        }
        barrier();
    }
    if (lid == 0u) {
        sums[gl_WorkGroupID.x] = tile[0];
    }
}
