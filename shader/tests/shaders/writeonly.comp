#version 450
// A `writeonly` storage buffer (Kompute's test shaders declare their outputs so): a `write`
// buffer parameter.
layout(local_size_x = 64) in;

layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };

void main() {
    uint i = gl_GlobalInvocationID.x;
    y[i] = x[i] * 3.0 - float(i);
}
