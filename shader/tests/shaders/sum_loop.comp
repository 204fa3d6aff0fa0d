#version 450
layout(local_size_x = 16) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) buffer O { float o[]; };
layout(push_constant) uniform P { uint n; };

void main() {
    uint i = gl_GlobalInvocationID.x;
    float acc = 0.0;
    uint count = 0u;
    for (uint k = 0u; k < n; k++) {
        acc += x[i * n + k];
        if (x[i * n + k] > 0.0) {
            count += 1u;
        }
    }
    o[i] = acc + float(count);
}
