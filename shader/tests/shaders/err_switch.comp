#version 450
layout(local_size_x = 1) in;
layout(std430, set = 0, binding = 0) buffer Y { uint y[]; };

void main() {
    uint i = gl_GlobalInvocationID.x;
    uint v = 0u;
    switch (i % 3u) {
        case 0u: v = 1u;
        case 1u: v += 2u; break;
        default: v = 7u; break;
    }
    y[i] = v;
}
