// Atomics on a u32 struct member, next to plain u32 members.
struct Bin {
    count: atomic<u32>,
    max: atomic<u32>,
    tag: u32,
}

@group(0) @binding(0) var<storage, read> keys: array<u32>;
@group(0) @binding(1) var<storage, read_write> bins: array<Bin, 8>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let k = keys[gid.x];
    let b = k % 8u;
    atomicAdd(&bins[b].count, 1u);
    atomicMax(&bins[b].max, k);
    if gid.x < 8u {
        bins[gid.x].tag = gid.x * 3u + 1u;
    }
}
