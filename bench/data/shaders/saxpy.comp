// y = a * x + y over n elements (cmdgraph-bench shader-run, the bandwidth workload).
#version 450
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) buffer Y { float y[]; };
layout(std140, set = 0, binding = 2) uniform Params { float a; uint n; };

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
