@group(0) @binding(0) var<storage, read_write> y: array<u32>;

@compute @workgroup_size(1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    switch (gid.x % 3u) {
        case 0u: { y[gid.x] = 1u; }
        default: { y[gid.x] = 2u; }
    }
}
