@group(0) @binding(0) var<storage, read_write> y: array<u32>;

@compute @workgroup_size(1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    var v = gid.x;
    var steps = 0u;
    while (v != 1u) {
        v = v / 2u;
        steps += 1u;
    }
    y[gid.x] = steps;
}
