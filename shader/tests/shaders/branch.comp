#version 450
layout(local_size_x = 8) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) buffer O { float o[]; };
layout(std430, set = 0, binding = 2) buffer T { uint tag[]; };

void main() {
    uint i = gl_GlobalInvocationID.x;
    float v = x[i];
    float r;
    uint t = 7u;
    if (v > 0.5) {
        r = v * 2.0;
        t = i;
    } else if (v < -0.5) {
        r = 1.0 - v;
    } else {
        r = v / 3.0;
        t = i * 3u + (i % 4u);
    }
    o[i] = r;
    tag[i] = t;
}
