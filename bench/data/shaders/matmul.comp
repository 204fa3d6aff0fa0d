// c = a · b, one output per invocation, the tail guarded (cmdgraph-bench shader-run).
#version 450
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, set = 0, binding = 0) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { float b[]; };
layout(std430, set = 0, binding = 2) buffer C { float c[]; };
layout(std140, set = 0, binding = 3) uniform Dims { uint m; uint n; uint k; };

void main() {
    uint col = gl_GlobalInvocationID.x;
    uint row = gl_GlobalInvocationID.y;
    if (row >= m || col >= n) {
        return;
    }
    float acc = 0.0;
    for (uint t = 0u; t < k; t++) {
        acc = acc + a[row * k + t] * b[t * n + col];
    }
    c[row * n + col] = acc;
}
