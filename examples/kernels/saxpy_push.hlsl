// saxpy_push.comp in HLSL: a push-constant buffer and structured buffers, compiled with
// `glslangValidator -D -V -e main -S comp --target-env vulkan1.1 saxpy_push.hlsl -o saxpy_push_hlsl.spv`
// (glslang's HLSL front end declares storage buffers as SPIR-V 1.3's BufferBlocks, which
// its Vulkan 1.2 and 1.3 output would carry into SPIR-V versions that no longer allow them).
struct Params {
    float a;
    uint n;
};
[[vk::push_constant]] ConstantBuffer<Params> p;
[[vk::binding(0, 0)]] StructuredBuffer<float> x;
[[vk::binding(1, 0)]] RWStructuredBuffer<float> y;

[numthreads(64, 1, 1)]
void main(uint3 id : SV_DispatchThreadID) {
    uint i = id.x;
    if (i >= p.n) return;
    precise float r = p.a * x[i] + y[i];
    y[i] = r;
}
