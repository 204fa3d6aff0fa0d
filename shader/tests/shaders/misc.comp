#version 450
// Nested counted loops carrying a vector, a helper function, integer ops and a work-group
// scalar (naga's GLSL front end has no atomics).
layout(local_size_x = 8) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) buffer O { vec2 o[]; };
layout(std430, set = 0, binding = 2) buffer C { uint counts[]; };
layout(push_constant) uniform P { uint rows; uint cols; int bias; };
shared uint seen;

vec2 accumulate(vec2 acc, float v) {
    return vec2(acc.x + v, max(acc.y, v));
}

void main() {
    uint i = gl_GlobalInvocationID.x;
    vec2 acc = vec2(0.0, -1e30);
    for (uint r = 0u; r < rows; r++) {
        for (uint c = 1u; c < cols; c += 2u) {
            acc = accumulate(acc, x[(i * rows + r) * cols + c]);
        }
    }
    o[i] = acc;
    int q = (int(i) - bias) / 3 + ((int(i) * 7) % 5);
    if (gl_LocalInvocationIndex == 0u) {
        seen = uint(q & 3) + 100u * gl_WorkGroupID.x;
    }
    barrier();
    counts[i] = seen + uint(q & 3);
}
