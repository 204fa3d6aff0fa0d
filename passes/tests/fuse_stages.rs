//! `fuse-stages` on the interpreter: which index forms the work-group window analysis
//! proves (and so fuses), which it must refuse, each fused module checked against the
//! source over every output in creation order and three random schedules.

mod support;

use support::{check_semantics, module, optimize};

/// A producer writing `y[gid]` over 4 groups of 64, then a consumer reading `y[INDEX]`.
fn pair(index_ops: &str) -> String {
    format!(
        "kernel @produce(%x: buf<f32, read>, %y: buf<f32, write>) {{
  %i = global_id 0
  %v = load %x[%i]
  %two = const 2.0 : f32
  %r = mul %v, %two
  store %y[%i], %r
}}

kernel @consume(%y: buf<f32, read>, %z: buf<f32, write>) {{
  %i = global_id 0
{index_ops}
  %v = load %y[%k]
  store %z[%i], %v
}}

usm @x : f32[256]
usm @y : f32[256]
usm @z : f32[256]

graph @g {{
  %p = kernel @produce nd_range(global(256), local(64)) args(@x, @y)
  %c = kernel @consume nd_range(global(256), local(64)) args(@y, @z) after(%p)
}}
"
    )
}

fn fused(text: &str) -> bool {
    let (after, _) = optimize(&module(text), "fuse-stages");
    let text = cmdgraph_ir::text::print(&after);
    text.contains("kernel @stages.")
}

#[test]
fn index_forms_inside_the_work_group_fuse_and_keep_every_output() {
    let inside = [
        // A neighbour pair: bit 0 flipped stays in the group.
        "  %one = const 1 : u32\n  %k = xor %i, %one",
        // The row reversed: group * 64 + (63 - local).
        "  %g = group_id 0\n  %l = local_id 0\n  %c64 = const 64 : u32\n  %b = mul %g, %c64\n  %t = const 63 : u32\n  %r = sub %t, %l\n  %k = add %b, %r",
        // Halving inside the group: (gid / 2) would leave it; group * 64 + local / 2 does not.
        "  %g = group_id 0\n  %l = local_id 0\n  %two = const 2 : u32\n  %h = div %l, %two\n  %c64 = const 64 : u32\n  %b = mul %g, %c64\n  %k = add %b, %h",
        // The row start through a shift: (gid >> 6) << 6, plus the local id.
        "  %six = const 6 : u32\n  %r = shr %i, %six\n  %b = shl %r, %six\n  %l = local_id 0\n  %k = add %b, %l",
        // A rotation inside the row through a remainder: group * 64 + (local + 5) % 64.
        "  %g = group_id 0\n  %l = local_id 0\n  %c64 = const 64 : u32\n  %b = mul %g, %c64\n  %five = const 5 : u32\n  %s = add %l, %five\n  %w = rem %s, %c64\n  %k = add %b, %w",
        // min/max clamps within the row.
        "  %g = group_id 0\n  %l = local_id 0\n  %c64 = const 64 : u32\n  %b = mul %g, %c64\n  %one = const 1 : u32\n  %s = add %l, %one\n  %top = const 63 : u32\n  %c = min %s, %top\n  %k = add %b, %c",
    ];
    for ops in inside {
        let text = pair(ops);
        assert!(fused(&text), "should fuse:\n{ops}");
        check_semantics(&text, "fuse-stages");
    }
}

#[test]
fn index_forms_that_leave_the_work_group_are_refused() {
    let outside = [
        // The next element: the last work-item reads the next group's first.
        "  %one = const 1 : u32\n  %s = add %i, %one\n  %n = const 255 : u32\n  %k = and %s, %n",
        // Half the index: group 1 reads group 0's second half.
        "  %two = const 2 : u32\n  %k = div %i, %two",
        // A reversed buffer.
        "  %t = const 255 : u32\n  %k = sub %t, %i",
        // A bit above the group stride flipped.
        "  %b = const 64 : u32\n  %k = xor %i, %b",
        // An index read from memory.
        "  %ki = load %y[%i]\n  %k = cast %ki to u32",
    ];
    for ops in outside {
        assert!(!fused(&pair(ops)), "must not fuse:\n{ops}");
    }
}
