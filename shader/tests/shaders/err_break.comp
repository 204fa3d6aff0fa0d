#version 450
layout(local_size_x = 1) in;
layout(std430, set = 0, binding = 0) buffer Y { float y[]; };

void main() {
    float acc = 0.0;
    for (uint k = 0u; k < 16u; k++) {
        if (y[k] < 0.0) {
            break;
        }
        acc += y[k];
    }
    y[gl_GlobalInvocationID.x] = acc;
}
