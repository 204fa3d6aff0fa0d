// y = a * x + y over the first n elements, written the way Vulkan programs write compute
// shaders: one storage buffer per buffer, the scalars in a push-constant block. A cmdgraph
// kernel takes it with ordinary bindings (docs/kernels.md, "SPIR-V from GLSL and HLSL"):
//
//   kernel @saxpy(%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32, %n: u32)
//       spirv "saxpy_push.spv" entry "main" bindings
//
// compiled with `glslc --target-env=vulkan1.3 saxpy_push.comp -o saxpy_push.spv` (or
// `glslangValidator -V --target-env vulkan1.3`). cli/tests/vulkan_bindings.rs runs it against
// its kernel-language twin, saxpy_push.twin.cgir.
#version 450
layout(local_size_x = 64) in;

layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform Params {
    float a;
    uint n;
} p;

void main() {
    uint i = gl_GlobalInvocationID.x;
    // A launch covers whole work-groups: the shader guards with its own count, and with the
    // buffer's length (cmdgraph makes it the elements from the pointer on).
    if (i >= p.n || i >= uint(y.length())) return;
    // `precise`: a rounded product, then a rounded sum (no fused multiply-add), as the
    // kernel language's mul and add.
    precise float r = p.a * x[i] + y[i];
    y[i] = r;
}
