@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;

// Each work-item writes its element, then reads its neighbour's (in the same work-group)
// after `storageBarrier()`, which orders the storage-buffer accesses of the work-group.
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    x[gid.x] = a[gid.x] * 3.0;
    storageBarrier();
    x[gid.x] = x[gid.x ^ 1u] + a[gid.x];
}
