#version 450
// Local arrays and structs, a constant table, mat3 products: the GLSL side of aggregates.wgsl.
layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) buffer Y { float y[]; };

struct Stat { vec3 sum; float top; int count[2]; };

const float W[4] = float[4](0.25, -0.5, 1.75, -1.0);

void add(inout Stat s, float v) {
    s.sum += vec3(v, v * 0.5, -v);
    s.top = max(s.top, v);
    s.count[v > 0.0 ? 1 : 0] += 1;
}

void main() {
    uint i = gl_GlobalInvocationID.x;
    float v[4];
    for (int k = 0; k < 4; k++) {
        v[k] = x[i * 4u + uint(k)] + W[(int(i) + k) % 4];
    }
    Stat s;
    s.sum = vec3(0.0);
    s.top = -1e30;
    s.count[0] = 0;
    s.count[1] = 0;
    for (int k = 0; k < 4; k++) {
        add(s, v[k]);
    }
    mat3 m = mat3(v[0], v[1], v[2], v[3], 1.0, 0.5, s.sum);
    vec3 a = m * vec3(v[1], v[2], v[3]);
    vec3 b = vec3(v[0], -v[1], s.top) * m;
    y[i * 6u] = a.x;
    y[i * 6u + 1u] = a.y + a.z;
    y[i * 6u + 2u] = b.x - b.z;
    y[i * 6u + 3u] = b.y;
    y[i * 6u + 4u] = float(s.count[0] * 10 + s.count[1]);
    y[i * 6u + 5u] = v[i % 4u];
}
