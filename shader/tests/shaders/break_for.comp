#version 450
// `break` and `continue` nested in `if`s of counted `for` loops, and a loop whose bound
// changes in its body.
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) buffer X { float x[]; };
layout(std430, set = 0, binding = 1) buffer Y { float y[]; };

void main() {
    uint i = gl_GlobalInvocationID.x;
    float acc = 0.0;
    uint seen = 0u;
    for (uint k = 0u; k < 16u; k++) {
        float v = x[i * 16u + k];
        if (v < 0.0) {
            if (seen > 2u) {
                break;
            }
            acc -= 1.0;
            continue;
        }
        seen += 1u;
        if (v > 4.0) {
            continue;
        }
        acc += v;
    }
    uint n = 16u;
    float m = 0.0;
    for (uint k = 0u; k < n; k++) {
        float v = x[i * 16u + k];
        if (v < 1.0) {
            n -= 2u;
        }
        m = max(m, v);
    }
    y[2u * i] = acc;
    y[2u * i + 1u] = m + float(n);
}
