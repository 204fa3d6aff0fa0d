// `break` and `continue` nested in `if`s of counted `for` loops, and a loop whose bound
// changes in its body.
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    // Sum of x[i*16 + k] up to the first negative element, skipping those above 4.
    var acc = 0.0;
    var seen = 0u;
    for (var k = 0u; k < 16u; k++) {
        let v = x[i * 16u + k];
        if (v < 0.0) {
            if (seen > 2u) {
                break;
            }
            acc -= 1.0;
            continue;
        }
        seen += 1u;
        if (v > 4.0) {
            continue;
        }
        acc += v;
    }
    // The bound shrinks as elements below 1 are met.
    var n = 16u;
    var m = 0.0;
    for (var k = 0u; k < n; k++) {
        let v = x[i * 16u + k];
        if (v < 1.0) {
            n -= 2u;
        }
        m = max(m, v);
    }
    y[2u * i] = acc;
    y[2u * i + 1u] = m + f32(n);
}
