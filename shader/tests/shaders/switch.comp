#version 450
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer X { int x[]; };
layout(std430, set = 0, binding = 1) buffer Out { int outv[]; };
layout(std430, set = 0, binding = 2) buffer Tag { uint tag[]; };

int classify(int v) {
    switch (v) {
        case 0: return 10;
        case -1:
        case -2: return 20;
        default: return v >> 28;
    }
}

void main() {
    uint i = gl_GlobalInvocationID.x;
    int v = x[i];
    int r = v;
    uint t = 0u;
    switch (v & 7) {
        case 0: r = v * 2; break;
        case 1:
        case 2:
            r = v - 5;
            t = 1u;
            break;
        case 6:
        default: t = 9u; break;
        case 3: r = -v; break;
        case 4:
            if (v > 0) {
                t = 4u;
            }
            for (int k = 0; k < 3; k++) {
                r += k;
            }
            break;
    }
    switch (i % 3u) {
        case 0u: tag[i] = t; break;
        default: tag[i] = t + 100u; break;
    }
    outv[i] = r + classify(v >> 30);
}
