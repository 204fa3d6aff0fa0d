#version 450
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) buffer Bits { uint bits[]; };
layout(std430, set = 0, binding = 2) buffer Back { vec2 back[]; };

// The exponent field of each float, its bits with the sign cleared read back as a float
// (|x|), and a vec2 of two words read as floats.
void main() {
    uint i = gl_GlobalInvocationID.x;
    uint b = floatBitsToUint(x[i]);
    bits[i] = (b >> 23u) & 0xffu;
    int s = int(b & 0x7fffffffu);
    back[i] = vec2(uintBitsToFloat(b & 0x7fffffffu), intBitsToFloat(s ^ 0x40000000));
}
