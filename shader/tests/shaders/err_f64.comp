#version 450
layout(local_size_x = 1) in;
layout(std430, set = 0, binding = 0) buffer Y { double y[]; };

void main() {
    y[gl_GlobalInvocationID.x] = double(gl_GlobalInvocationID.x);
}
