@group(0) @binding(0) var<storage, read> x: array<i32>;
@group(0) @binding(1) var<storage, read_write> out: array<i32>;
@group(0) @binding(2) var<storage, read_write> tag: array<u32>;

fn classify(v: i32) -> i32 {
    switch v {
        case 0: { return 10; }
        case -1, -2: { return 20; }
        default: { return v >> 28; }
    }
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    let v = x[i];
    var r = v;
    var t = 0u;
    switch v & 7 {
        case 0: { r = v * 2; }
        case 1, 2: {
            r = v - 5;
            t = 1u;
        }
        case default, 6: { t = 9u; }
        case 3: {
            r = -v;
            break;
        }
        case 4: {
            if (v > 0) {
                t = 4u;
            }
            for (var k = 0; k < 3; k++) {
                r += k;
            }
        }
    }
    switch i % 3u {
        case 0u: { tag[i] = t; }
        default: { tag[i] = t + 100u; }
    }
    out[i] = r + classify(v >> 30);
}
