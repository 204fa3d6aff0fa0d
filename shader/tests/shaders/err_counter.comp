#version 450
layout(local_size_x = 1) in;
layout(std430, set = 0, binding = 0) buffer Y { uint y[]; };

void main() {
    uint k;
    for (k = 0u; k < 5u; k++) {
        y[k] = k;
    }
    y[5] = k;
}
