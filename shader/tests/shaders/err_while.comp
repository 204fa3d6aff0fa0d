#version 450
layout(local_size_x = 1) in;
layout(std430, set = 0, binding = 0) buffer Y { uint y[]; };

void main() {
    uint v = gl_GlobalInvocationID.x;
    uint steps = 0u;
    while (v != 1u) {
        v = v / 2u;
        steps += 1u;
    }
    y[gl_GlobalInvocationID.x] = steps;
}
