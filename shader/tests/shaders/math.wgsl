@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> s: array<vec4<i32>>;
@group(0) @binding(3) var<storage, read_write> o: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> oi: array<vec4<i32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    let x = a[i];
    let y = b[i];
    let k = s[i];
    let at = 12u * i;
    o[at] = mix(x, y, y.w);
    o[at + 1u] = mix(x, y, vec4<f32>(0.25, 0.5, y.z, -y.x));
    o[at + 2u] = vec4<f32>(dot(x, y), length(x), distance(x, y), length(x.x));
    o[at + 3u] = normalize(x);
    o[at + 4u] = vec4<f32>(cross(x.xyz, y.xyz), dot(x.xy, y.zw));
    o[at + 5u] = sign(x);
    o[at + 6u] = step(y, x);
    o[at + 7u] = smoothstep(y, x, vec4<f32>(0.1));
    o[at + 8u] = fract(x);
    o[at + 9u] = trunc(x);
    o[at + 10u] = round(x);
    o[at + 11u] = saturate(x);
    let ai = 4u * i;
    oi[ai] = abs(k);
    oi[ai + 1u] = sign(k);
    oi[ai + 2u] = countOneBits(k);
    oi[ai + 3u] = vec4<i32>(dot(k, k.wzyx), i32(countOneBits(u32(k.x))), dot(k.xy, k.zw), 0);
}
