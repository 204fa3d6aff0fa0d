// A work-group struct (one `local` per member: an array, an array of arrays, an atomic, a
// scalar) and a whole fixed-size array copied from work-group memory to a storage buffer.

struct Shared {
    sums: array<f32, 64>,
    grid: array<array<u32, 4>, 8>,
    count: atomic<u32>,
    lens: array<u32, 4>,
}

var<workgroup> sh: Shared;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<storage, read_write> lens: array<u32, 4>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wg: vec3<u32>,
        @builtin(global_invocation_id) gid: vec3<u32>) {
    sh.sums[li] = x[gid.x] * 2.0;
    if li % 2u == 0u {
        atomicAdd(&sh.count, 1u);
    }
    if li < 32u {
        sh.grid[li / 4u][li % 4u] = li * 3u + wg.x;
    }
    if li < 4u {
        sh.lens[li] = li + 10u * wg.x;
    }
    workgroupBarrier();
    y[gid.x] = sh.sums[63u - li] + f32(sh.grid[(li / 4u) % 8u][li % 4u]) + f32(atomicLoad(&sh.count));
    if wg.x == 1u {
        lens = sh.lens;
    }
}
