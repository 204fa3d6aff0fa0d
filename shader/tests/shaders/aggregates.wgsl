// Struct, array and matrix values in function-local and private variables (taken apart into
// their leaves by the translator): computed indices read and written in loops and branches,
// a constant lookup table, a private array with an initializer, pointers to aggregates passed
// to functions, a struct returned by a function, matrix products.

struct Acc {
    lo: vec2<f32>,
    hi: f32,
    hits: array<u32, 3>,
}

const TABLE = array<f32, 5>(0.5, -1.25, 2.0, 0.75, -3.5);

var<private> bias: array<f32, 4> = array<f32, 4>(0.125, -0.375, 1.5, -2.25);

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;

fn bump(a: ptr<function, Acc>, v: f32, k: u32) {
    (*a).hits[k % 3u] += 1u;
    if v > (*a).hi {
        (*a).hi = v;
    }
    (*a).lo = (*a).lo + vec2<f32>(v, v * v);
}

fn make(v: f32) -> Acc {
    var a: Acc;
    a.hi = v;
    a.lo = vec2<f32>(v, 0.0);
    return a;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    var window: array<f32, 6>;
    for (var k = 0u; k < 6u; k++) {
        window[k] = x[i * 6u + k] * TABLE[(i + k) % 5u];
    }
    // A computed write and an exchange: one bubble-sort pass.
    for (var k = 0u; k < 5u; k++) {
        if window[k] > window[k + 1u] {
            let t = window[k];
            window[k] = window[k + 1u];
            window[k + 1u] = t;
        }
    }
    var acc = make(window[0]);
    for (var k = 1u; k < 6u; k++) {
        bump(&acc, window[k], k + i);
    }
    let rot = mat2x2<f32>(window[1], window[2], -window[2], window[1]);
    let m = mat2x2<f32>(vec2<f32>(acc.lo.x, 0.5), vec2<f32>(window[3], acc.hi));
    let p = rot * acc.lo;
    let q = acc.lo * m;
    let r = (rot * m + m) * 0.5;
    let s = r * vec2<f32>(bias[i % 4u], window[5]);
    y[i * 8u] = p.x;
    y[i * 8u + 1u] = p.y;
    y[i * 8u + 2u] = q.x + q.y;
    y[i * 8u + 3u] = s.x - s.y;
    y[i * 8u + 4u] = f32(acc.hits[0] * 100u + acc.hits[1] * 10u + acc.hits[2]);
    y[i * 8u + 5u] = acc.hi;
    y[i * 8u + 6u] = window[i % 6u] + bias[(i + 1u) % 4u];
    y[i * 8u + 7u] = r[1][i % 2u];
}
