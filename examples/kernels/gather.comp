// gather.comp: an external kernel written in GLSL, its declarations pasted verbatim from
//   cmdgraph abi FILE --kernel gather
// for the signature below (cli/tests/vulkan_glsl.rs checks they are still what it prints).
// y[i] += a * x[idx[i]] in lanes 0..2, y[i].w = idx[i] + s, every i below the global size.
// Compile: glslangValidator -V --target-env vulkan1.3 gather.comp -o gather.spv
// (Vulkan 1.3 makes glslang declare the work-group size with LocalSizeId.)
// Its kernel-language twin is gather.twin.cgir.
// cmdgraph kernel @gather(%x: buf<f32, read>, %idx: buf<u32, read>, %y: buf<vec4<f32>, read_write>, %a: f32, %s: u32): its argument block and buffers
// (docs/abi.md, "External SPIR-V kernels"; block size 64 bytes).
#version 450
// The work-group size is the shader's: every launch uses it (an nd_range launch must ask for it).
layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(std430, set = 0, binding = 0) readonly buffer Args {
    layout(offset = 0) uint global_size_x;
    layout(offset = 4) uint global_size_y;
    layout(offset = 8) uint global_size_z;
    layout(offset = 12) uint global_offset_x;
    layout(offset = 16) uint global_offset_y;
    layout(offset = 20) uint global_offset_z;
    layout(offset = 32) uint x_offset; // %x: element offset of the pointer in x[]
    layout(offset = 36) uint x_count; // elements from the pointer on
    layout(offset = 40) uint idx_offset; // %idx: element offset of the pointer in idx[]
    layout(offset = 44) uint idx_count; // elements from the pointer on
    layout(offset = 48) uint y_offset; // %y: element offset of the pointer in y[]
    layout(offset = 52) uint y_count; // elements from the pointer on
    layout(offset = 56) float a; // %a: f32
    layout(offset = 60) uint s; // %s: u32
};

layout(std430, set = 0, binding = 1) readonly buffer Buf_x { float x[]; }; // %x: buf<f32, read>
layout(std430, set = 0, binding = 2) readonly buffer Buf_idx { uint idx[]; }; // %idx: buf<u32, read>
layout(std430, set = 0, binding = 3) buffer Buf_y { vec4 y[]; }; // %y: buf<vec4<f32>, read_write>

// Work-items at or past the global size must do nothing (a range is rounded up to whole
// work-groups): `uint i = gl_GlobalInvocationID.x; if (i >= global_size_x) return;`.
// Element i of a buffer parameter is at its offset: `x[x_offset + i]`.

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= global_size_x) return;
    uint j = idx[idx_offset + i];
    // `precise`: a rounded product, then a rounded sum, as the kernel language's mul and
    // add (no fused multiply-add).
    precise float p = a * x[x_offset + j];
    precise vec4 r = y[y_offset + i] + vec4(p);
    r.w = float(j + s);
    y[y_offset + i] = r;
}
