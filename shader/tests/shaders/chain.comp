#version 450
layout(local_size_x = 32) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) buffer O { float o[]; };

float squash(float v) {
    return tanh(v) * 0.5;
}

void main() {
    uint i = gl_GlobalInvocationID.x;
    float v = x[i];
    float a = sqrt(abs(v)) + exp(-v * 0.25);
    float b = sin(v) * cos(v) - log(abs(v) + 1.0);
    float c = clamp(floor(v * 3.0) + ceil(v), -4.0, 6.0);
    float d = min(a, b) + max(b, c) + pow(abs(v), 1.5) + inversesqrt(abs(v) + 2.0);
    float e = fma(a, b, c) + squash(d);
    vec2 w = vec2(e, d);
    o[i] = (v < 0.0 ? w.y - 1.0 : w.x) + float(uint(abs(v) * 10.0) % 7u);
}
