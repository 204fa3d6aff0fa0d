#version 450
layout(local_size_x = 4, local_size_y = 4) in;
layout(std430, set = 0, binding = 0) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { float b[]; };
layout(std430, set = 0, binding = 2) buffer C { float c[]; };
layout(set = 1, binding = 0) uniform Dims { uint m; uint n; uint k; };

void main() {
    uint col = gl_GlobalInvocationID.x;
    uint row = gl_GlobalInvocationID.y;
    if (row < m && col < n) {
        float acc = 0.0;
        for (uint j = 0u; j < k; j += 1u) {
            acc = acc + a[row * k + j] * b[j * n + col];
        }
        c[row * n + col] = acc;
    }
}
