//! `merge-branches` checked semantically: an `if` or a `switch` whose bodies are one kernel
//! each becomes one kernel node (counted), and the merged bundle gives, on Vulkan (validation
//! and synchronization validation on), the bytes the interpreter computes for the source's
//! node, for every condition word that picks a body and some that pick none, over
//! full-precision random floats.
//! Bodies with barriers, work-group memory and subgroup operations merge (the branch is
//! uniform). What is refused (a body that may write the condition, bodies launched
//! differently, bodies whose work-group memory together passes 16 KiB, a body of two nodes,
//! an `updatable` graph) is left as it was, with a remark.

mod support;

use cmdgraph_interp::Interpreter;
use cmdgraph_ir::{Module, NodeKind};
use support::{compile, executor, random_bytes, run_passes, Rng};

const KERNELS: &str = "kernel @add_one(%x: buf<f32, read_write>) {
  %i = global_id 0
  %v = load %x[%i]
  %one = const 1.0 : f32
  %r = add %v, %one
  store %x[%i], %r
}

kernel @scale(%x: buf<f32, read>, %y: buf<f32, read_write>, %s: f32) {
  %i = global_id 0
  %v = load %x[%i]
  %w = load %y[%i]
  %p = mul %v, %s
  %r = add %p, %w
  store %y[%i], %r
}

kernel @set(%c: buf<u32, write>) {
  %zero = const 0 : u32
  store %c[%zero], %zero
}

kernel @rot(%x: buf<f32, read_write>) {
  %t = local f32[2560]
  %g = global_id 0
  %l = local_id 0
  %one = const 1 : u32
  %size = const 50 : u32
  %n = add %l, %one
  %j = rem %n, %size
  %v = load %x[%g]
  store %t[%l], %v
  group_barrier
  %w = load %t[%j]
  %m = subgroup_reduce max %w
  %r = add %w, %m
  store %x[%g], %r
}

kernel @rev(%x: buf<f32, read_write>) {
  %t = local f32[64]
  %g = global_id 0
  %l = local_id 0
  %last = const 49 : u32
  %v = load %x[%g]
  store %t[%l], %v
  group_barrier
  %j = sub %last, %l
  %w = load %t[%j]
  %half = const 0.5 : f32
  %h = mul %w, %half
  store %x[%g], %h
}

kernel @big(%x: buf<f32, read_write>) {
  %t = local f32[2560]
  %l = local_id 0
  %v = load %x[%l]
  store %t[%l], %v
  group_barrier
  %w = load %t[%l]
  %two = const 2.0 : f32
  %r = mul %w, %two
  store %x[%l], %r
}

usm @x : f32[1000]
usm @y : f32[1000]
usm @arm : u32[2]
";

fn parse(text: &str) -> Module {
    let text = format!("{KERNELS}\n{text}");
    let m =
        cmdgraph_ir::text::parse(&text).unwrap_or_else(|d| panic!("{}", cmdgraph_ir::diag::render_all(&d, "t", &text)));
    cmdgraph_ir::verify::verify(&m).unwrap_or_else(|d| panic!("{}", cmdgraph_ir::diag::render_all(&d, "t", &text)));
    m
}

/// `@main`'s kernel nodes after `merge-branches`, and its remarks.
fn merged(m: &Module) -> (u64, Vec<String>, Module) {
    let mut out = m.clone();
    let ctx = run_passes(&mut out, &["merge-branches"], 1, 1);
    (ctx.stats.get("branches-merged").copied().unwrap_or(0), ctx.remarks, out)
}

/// Runs `m` (on the interpreter) and `bundle` (on Vulkan) twice per word, the condition word
/// at `@arm + 4` and word 0 set to something else, and compares every memory; returns, per
/// word, whether `@x` and `@y` changed on the interpreter.
fn both_agree(m: &Module, bundle: &[u8], words: &[u32], rng: &mut Rng) -> Vec<(bool, bool)> {
    let mut changed = Vec::new();
    for &word in words {
        let mut ex = executor(bundle).unwrap_or_else(|e| panic!("{e}"));
        let mut it = Interpreter::new(m).expect("interpreter");
        let x = random_bytes(cmdgraph_ir::types::Type::F32, 1000, rng);
        let y = random_bytes(cmdgraph_ir::types::Type::F32, 1000, rng);
        // Word 0 is not the condition (`@arm + 4` is): a merged kernel reading the wrong
        // word takes another branch.
        let arm: Vec<u8> = [word ^ 1, word].iter().flat_map(|w| w.to_le_bytes()).collect();
        for (name, bytes) in [("x", &x), ("y", &y), ("arm", &arm)] {
            ex.bind(name, bytes).unwrap();
            it.bind(name, bytes).unwrap();
        }
        let (ee, ie) = (ex.finalize("main").unwrap(), it.finalize("main").unwrap());
        for run in 0..2 {
            ex.run(ee).unwrap();
            ex.wait(ee).unwrap();
            it.run(ie).unwrap();
            for name in ["x", "y", "arm"] {
                assert!(ex.read(name).unwrap() == it.read(name).unwrap(), "word {word:#x}, run {run}: @{name} differs");
            }
        }
        changed.push((it.read("x").unwrap() != x, it.read("y").unwrap() != y));
        let msgs = ex.context().take_messages();
        assert!(msgs.is_empty(), "validation: {msgs:?}");
    }
    changed
}

#[test]
fn a_merged_branch_gives_the_if_nodes_bytes_for_either_word() {
    let m = parse(
        "graph @then_arm {\n  %a = kernel @add_one range(1000) args(@x)\n}\n
graph @else_arm {\n  %b = kernel @scale range(1000) args(@x, @y, 0.7310585786300049)\n}\n
graph @main {\n  %i = if @arm + 4 then @then_arm else @else_arm\n  %after = kernel @add_one range(1000) args(@y) after(%i)\n}",
    );
    let (count, remarks, after) = merged(&m);
    assert_eq!(count, 1, "{remarks:?}");
    let main = &after.graphs[after.graph_by_name("main").expect("main")];
    assert!(main.nodes.iter().all(|(_, n)| matches!(n.kind, NodeKind::Kernel(_))), "no conditional node is left");
    let bundle = compile(&m, Some("merge-branches")).unwrap_or_else(|e| panic!("{e}"));
    let changed = both_agree(&m, &bundle, &[0, 1, 0x8000_0000], &mut Rng(71));
    // The then body writes @x exactly when the word is non-zero.
    assert_eq!(changed.iter().map(|&(x, _)| x).collect::<Vec<_>>(), [false, true, true]);
}

#[test]
fn a_merged_switch_gives_the_switch_nodes_bytes_for_every_case_and_past_the_last() {
    let m = parse(
        "graph @c0 {\n  %a = kernel @add_one range(1000) args(@x)\n}\n
graph @c1 {\n  %b = kernel @scale range(1000) args(@x, @y, 0.7310585786300049)\n}\n
graph @c2 {\n  %c = kernel @add_one range(1000) args(@y)\n}\n
graph @main {\n  %s = switch @arm + 4 cases(@c0, @c1, @c2)\n}",
    );
    let (count, remarks, after) = merged(&m);
    assert_eq!(count, 1, "{remarks:?}");
    let main = &after.graphs[after.graph_by_name("main").expect("main")];
    assert!(main.nodes.iter().all(|(_, n)| matches!(n.kind, NodeKind::Kernel(_))), "no conditional node is left");
    let bundle = compile(&m, Some("merge-branches")).unwrap_or_else(|e| panic!("{e}"));
    // Words 0, 1, 2 pick a case; 3 and 2^31 none. Case 0 writes @x, case 1 and 2 @y: which
    // memory changed on the interpreter says which case ran there.
    let changed = both_agree(&m, &bundle, &[0, 1, 2, 3, 0x8000_0000], &mut Rng(73));
    assert_eq!(changed, [(true, false), (false, true), (false, true), (false, false), (false, false)]);
}

/// The branch is uniform (every work-item reads the same word, which no body writes), so
/// bodies with barriers, work-group memory and subgroup operations merge too.
#[test]
fn bodies_with_barriers_local_memory_and_subgroup_ops_merge() {
    let m = parse(
        "graph @then_arm {\n  %a = kernel @rot nd_range(global(1000), local(50)) args(@x)\n}\n
graph @else_arm {\n  %b = kernel @rev nd_range(global(1000), local(50)) args(@y)\n}\n
graph @main {\n  %i = if @arm + 4 then @then_arm else @else_arm\n}",
    );
    let (count, remarks, _) = merged(&m);
    assert_eq!(count, 1, "{remarks:?}");
    let bundle = compile(&m, Some("merge-branches")).unwrap_or_else(|e| panic!("{e}"));
    let changed = both_agree(&m, &bundle, &[0, 1, 0x8000_0000], &mut Rng(79));
    assert_eq!(changed, [(false, true), (true, false), (true, false)]);
}

#[test]
fn refused_branches_stay_as_they_were_and_say_why() {
    let cases = [
        (
            "graph @then_arm {\n  %a = kernel @set single_task args(@arm)\n}\n
graph @else_arm {\n  %b = kernel @set single_task args(@arm + 4)\n}\n
graph @main {\n  %i = if @arm then @then_arm else @else_arm\n}",
            "@set may write the condition's memory",
        ),
        (
            "graph @then_arm {\n  %a = kernel @add_one range(1000) args(@x)\n}\n
graph @else_arm {\n  %b = kernel @add_one range(500) args(@x)\n}\n
graph @main {\n  %i = if @arm then @then_arm else @else_arm\n}",
            "the bodies launch differently",
        ),
        (
            "graph @then_arm {\n  %a = kernel @rot nd_range(global(64), local(64)) args(@x)\n}\n
graph @else_arm {\n  %b = kernel @big nd_range(global(64), local(64)) args(@x)\n}\n
graph @main {\n  %i = if @arm then @then_arm else @else_arm\n}",
            "together the bodies would use 20480 bytes of work-group memory",
        ),
        (
            "graph @then_arm {\n  %a = kernel @add_one range(1000) args(@x)\n  %b = kernel @add_one range(1000) args(@x) after(%a)\n}\n
graph @main {\n  %i = if @arm then @then_arm\n}",
            "@then_arm does not hold exactly one node",
        ),
    ];
    for (text, why) in cases {
        let m = parse(text);
        let (count, remarks, after) = merged(&m);
        assert_eq!(count, 0, "{why}");
        assert!(remarks.concat().contains(why), "{why}: {remarks:?}");
        assert_eq!(cmdgraph_ir::text::print(&after), cmdgraph_ir::text::print(&m), "{why}");
    }
    let m = parse(
        "graph @then_arm {\n  %a = kernel @add_one range(1000) args(@x)\n}\n
graph @main properties(updatable) {\n  %i = if @arm then @then_arm\n}",
    );
    assert_eq!(merged(&m).0, 0, "an updatable graph is left alone");
}
