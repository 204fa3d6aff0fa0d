#version 450
// A `while` loop with a data-dependent trip count, and a `do`-`while`.
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) buffer X { uint x[]; };
layout(std430, set = 0, binding = 1) buffer Y { uint y[]; };

void main() {
    uint i = gl_GlobalInvocationID.x;
    uint v = x[i];
    uint steps = 0u;
    while (v != 1u) {
        if ((v & 1u) == 1u) {
            v = 3u * v + 1u;
        } else {
            v = v / 2u;
        }
        steps += 1u;
    }
    uint d = x[i];
    uint rounds = 0u;
    do {
        d = d * 2u;
        rounds += 1u;
    } while (d <= 1000u);
    y[2u * i] = steps;
    y[2u * i + 1u] = rounds * 10000u + d;
}
