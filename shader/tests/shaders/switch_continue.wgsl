// `continue` inside a `switch` inside a loop restarts the loop; `break` ending a case
// leaves only the `switch`.
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    var acc = 0u;
    for (var k = 0u; k < 8u; k++) {
        switch (x[i * 8u + k] % 3u) {
            case 0u: {
                continue;
            }
            case 1u: {
                acc += 1u;
                break;
            }
            default: {
                acc += 10u;
            }
        }
        acc += 100u;
    }
    y[i] = acc;
}
