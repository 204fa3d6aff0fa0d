// Compare-exchange retry loops: every work-item adds its value to one of 4 cells with a
// `loop` that breaks once its exchange succeeds, and increments a counter with a `while`.
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> cells: array<atomic<u32>, 4>;
@group(0) @binding(2) var<storage, read_write> count: atomic<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    let c = i % 4u;
    loop {
        let old = atomicLoad(&cells[c]);
        let r = atomicCompareExchangeWeak(&cells[c], old, old + x[i]);
        if (r.exchanged) {
            break;
        }
    }
    var done = false;
    while (!done) {
        let old = atomicLoad(&count);
        done = atomicCompareExchangeWeak(&count, old, old + 1u).exchanged;
    }
}
