// `return` from inside loops: a Collatz count that gives up past a limit (wgpu's
// hello_compute), a search returning from a nested loop, and the entry point returning
// from a loop.
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;

fn collatz_iterations(n_base: u32) -> u32 {
    var n = n_base;
    var i = 0u;
    loop {
        if (n <= 1u) {
            break;
        }
        if (n % 2u == 0u) {
            n = n / 2u;
        } else {
            if (n >= 1000u) {
                return 4294967295u;
            }
            n = 3u * n + 1u;
        }
        i = i + 1u;
    }
    return i;
}

// The first (a, b) with a * b == t, as a * 100 + b, searching a, b in 1..10; 0 if none.
fn factor(t: u32) -> u32 {
    for (var a = 1u; a < 10u; a++) {
        for (var b = 1u; b < 10u; b++) {
            if (a * b == t) {
                return a * 100u + b;
            }
        }
    }
    return 0u;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    y[3u * i] = collatz_iterations(x[i]);
    y[3u * i + 1u] = factor(x[i] % 90u);
    var k = 0u;
    loop {
        if (k == x[i] % 7u) {
            y[3u * i + 2u] = k + 100u;
            return;
        }
        k += 1u;
    }
}
