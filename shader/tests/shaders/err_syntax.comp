#version 450
layout(local_size_x = 1) in;
layout(std430, set = 0, binding = 0) buffer Y { float y[]; };

void main() {
    y[gl_GlobalInvocationID.x] = 1.0 +* 2.0;
}
