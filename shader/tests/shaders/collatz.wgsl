// A `while` loop with a data-dependent trip count, and a `loop` with `break if`.
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    var v = x[i];
    var steps = 0u;
    while (v != 1u) {
        if ((v & 1u) == 1u) {
            v = 3u * v + 1u;
        } else {
            v = v / 2u;
        }
        steps += 1u;
    }
    // Doubles until past 1000: `break if` in the continuing block.
    var d = x[i];
    var rounds = 0u;
    loop {
        d = d * 2u;
        continuing {
            rounds += 1u;
            break if d > 1000u;
        }
    }
    y[2u * i] = steps;
    y[2u * i + 1u] = rounds * 10000u + d;
}
