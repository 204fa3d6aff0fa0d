#version 450
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) buffer Y { float y[]; };
layout(set = 0, binding = 2) uniform Params { float a; uint n; };

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
