#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    y[i] = y[i + 1u] * 3.0;
}
