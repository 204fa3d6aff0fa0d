// out = a * in + b, with the scalars in a uniform block (std140) and the buffers in other
// descriptor sets, bound out of order: with ordinary bindings, buffer parameters take the
// storage buffers in (set, binding) order, so %in is set 0 binding 7 and %out set 2
// binding 0; value parameters take the block's members in offset order.
//
//   kernel @affine(%in: buf<f32, read>, %out: buf<f32, write>, %a: f32, %b: f32, %n: u32)
//       spirv "affine_uniform.spv" entry "main" bindings
#version 450
layout(local_size_x = 32) in;

layout(set = 2, binding = 0) writeonly buffer Out { float result[]; };
layout(set = 0, binding = 7) readonly buffer In { float source[]; };
layout(set = 1, binding = 4) uniform Params {
    float a;
    float b;
    uint n;
};

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= n) return;
    precise float r = a * source[i] + b;
    result[i] = r;
}
