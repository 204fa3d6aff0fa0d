struct Want {
    cells: array<u32, 64>,
}

@group(0) @binding(0) var<storage, read> want: Want;
@group(0) @binding(1) var<storage, read_write> cells: array<atomic<u32>, 64>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
@group(0) @binding(3) var<storage, read_write> count: atomic<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    // A whole load that is never used costs nothing.
    let unused = want;
    let r = atomicCompareExchangeWeak(&cells[i], want.cells[i], i + 1000u);
    out[2u * i] = r.old_value;
    out[2u * i + 1u] = select(0u, 1u, r.exchanged);
    if (r.exchanged) {
        atomicAdd(&count, 1u);
    }
}
