//! `tile-contractions`: which nodes it tiles, and that the tiled kernels compute the same
//! bits as the one-work-item-per-output loop on the interpreter (full-precision random
//! inputs, sizes that leave partial work-groups and a short last stage).

mod support;

use cmdgraph_interp::Interpreter;
use cmdgraph_ir::graph::NodeKind;
use cmdgraph_ir::Module;

/// How the contraction is written.
#[derive(Clone, Copy)]
struct Form {
    /// `a` stored transposed (`a[t * rows + row]`).
    a_transposed: bool,
    /// `mul` then `add` instead of `fma`.
    mul_add: bool,
    /// The running value starts at 0.25 instead of 0.
    init: &'static str,
    /// The row is `global_id 0` (and the column `global_id 1`).
    swapped: bool,
    /// The loop and the store inside `if row < rows and col < n`, as WGSL and GLSL matmuls
    /// guard the tail of their launch (the shader translator's form).
    guard: bool,
    /// Launched as `nd_range` with a local size (how a translated shader is launched).
    nd: bool,
}

const PLAIN: Form = Form { a_transposed: false, mul_add: false, init: "0.0", swapped: false, guard: false, nd: false };

fn text(rows: u64, cols: u64, steps: u64, f: Form, properties: &str) -> String {
    let (col_dim, row_dim) = if f.swapped { (1, 0) } else { (0, 1) };
    let a_index = if f.a_transposed {
        "%ar = mul %j, %rows\n    %ai = add %ar, %row"
    } else {
        "%ar = mul %row, %k\n    %ai = add %ar, %j"
    };
    let step = if f.mul_add { "%p = mul %av, %bv\n    %s2 = add %s, %p" } else { "%s2 = fma %av, %bv, %s" };
    let range = if f.swapped { format!("{rows}, {cols}") } else { format!("{cols}, {rows}") };
    let launch = if f.nd { format!("nd_range(global({range}), local(1, 1))") } else { format!("range({range})") };
    let contraction = format!(
        "%acc = for %j = %zero to %k step %one carry(%s = %init) {{
    {a_index}
    %av = load %a[%ai]
    %br = mul %j, %n
    %bi = add %br, %col
    %bv = load %b[%bi]
    {step}
    yield %s2
  }}
  %cr = mul %row, %n
  %ci = add %cr, %col
  store %c[%ci], %acc"
    );
    let body = if f.guard {
        format!(
            "%rowok = lt %row, %rows
  %colok = lt %col, %n
  %ok = and %rowok, %colok
  if %ok {{
  {contraction}
  }}"
        )
    } else {
        contraction
    };
    format!(
        "kernel @mm(%a: buf<f32, read>, %b: buf<f32, read>, %c: buf<f32, write>, %n: u32, %k: u32, %rows: u32) {{
  %col = global_id {col_dim}
  %row = global_id {row_dim}
  %zero = const 0 : u32
  %one = const 1 : u32
  %init = const {init} : f32
  {body}
}}

usm @a : f32[{asz}]
usm @b : f32[{bsz}]
usm @c : f32[{csz}]

graph @g{properties} {{
  %mm = kernel @mm {launch} args(@a, @b, @c, {cols}, {steps}, {rows})
}}
",
        init = f.init,
        asz = rows * steps,
        bsz = steps * cols,
        csz = rows * cols,
    )
}

/// Full-precision random floats in [-2, 2) (SplitMix64).
fn random(n: u64, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            (z >> 40) as f32 / (1u64 << 24) as f32 * 4.0 - 2.0
        })
        .collect()
}

fn run(m: &Module, rows: u64, cols: u64, steps: u64) -> Vec<u8> {
    let mut interp = Interpreter::new(m).expect("interpreter");
    interp.bind_as::<f32>("a", &random(rows * steps, 1)).unwrap();
    interp.bind_as::<f32>("b", &random(steps * cols, 2)).unwrap();
    interp.bind_as::<f32>("c", &random(rows * cols, 3)).unwrap();
    let exec = interp.finalize("g").unwrap();
    interp.run(exec).unwrap_or_else(|e| panic!("{e}"));
    interp.read("c").unwrap().to_vec()
}

/// Nodes the pass tiled (one remark each).
fn tiled(ctx: &cmdgraph_passes::PassContext) -> usize {
    ctx.remarks.iter().filter(|r| r.starts_with("tile-contractions:")).count()
}

fn kernel_of_node(m: &Module) -> String {
    let g = m.graphs.iter().next().unwrap().1;
    let NodeKind::Kernel(cmd) = &g.nodes.iter().next().unwrap().1.kind else { panic!("not a kernel") };
    m.kernels[cmd.kernel].name.clone()
}

fn check(rows: u64, cols: u64, steps: u64, f: Form) {
    let source = text(rows, cols, steps, f, "");
    let before = support::module(&source);
    let (after, ctx) = support::optimize(&before, "tile-contractions");
    assert_eq!(tiled(&ctx), 1, "{rows}x{cols}x{steps}: not tiled");
    assert!(kernel_of_node(&after).starts_with("mm.tiled."), "{}", kernel_of_node(&after));
    let (want, got) = (run(&before, rows, cols, steps), run(&after, rows, cols, steps));
    // Count differences rather than comparing the whole image, so a failure says how bad.
    let diff = want.chunks(4).zip(got.chunks(4)).filter(|(a, b)| a != b).count();
    assert_eq!(diff, 0, "{rows}x{cols}x{steps}: {diff} of {} outputs differ", rows * cols);
    // The inputs really exercise rounding: a different summation order changes the bits.
    let want_f: Vec<f32> = want.chunks(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    assert!(want_f.iter().all(|x| x.is_finite()) && want_f.iter().any(|x| x.fract() != 0.0));
}

#[test]
fn tiled_matmul_equals_the_loop_bit_for_bit() {
    // Whole work-groups and stages, partial ones, a short last stage, few rows; several
    // full stages (the pipelined loop) with and without a last short one and partial groups.
    for (rows, cols, steps) in [
        (64, 64, 64),
        (8, 96, 48),
        (33, 70, 17),
        (5, 100, 33),
        (20, 16, 40),
        (40, 72, 80),
        (36, 70, 70),
        (8, 64, 300),
        (6, 50, 260),
    ] {
        check(rows, cols, steps, PLAIN);
    }
}

#[test]
fn every_written_form_is_tiled_and_keeps_its_rounding() {
    check(24, 40, 37, Form { mul_add: true, ..PLAIN });
    check(24, 40, 37, Form { a_transposed: true, ..PLAIN });
    check(24, 40, 37, Form { init: "0.25", ..PLAIN });
    check(40, 24, 37, Form { swapped: true, ..PLAIN });
    check(33, 70, 17, Form { guard: true, ..PLAIN });
    check(33, 70, 17, Form { guard: true, nd: true, ..PLAIN });
    check(40, 24, 37, Form { guard: true, swapped: true, mul_add: true, ..PLAIN });
}

#[test]
fn what_is_not_a_contraction_stays() {
    let plain = text(32, 32, 32, PLAIN, "");
    let cases = [
        // A second store.
        plain.replace("store %c[%ci], %acc", "store %c[%ci], %acc\n  store %c[%row], %acc"),
        // A non-affine index.
        plain.replace("%bi = add %br, %col", "%bx = mul %col, %col\n    %bi = add %br, %bx"),
        // The product feeds the running value through something else.
        plain.replace("%s2 = fma %av, %bv, %s", "%q = fma %av, %bv, %s\n    %s2 = min %q, %s"),
        // Too few steps to gain.
        text(32, 32, 8, PLAIN, ""),
        // A guard that cuts the launch (rows 30 of a 32-row range) is not dead code.
        text(32, 32, 32, Form { guard: true, ..PLAIN }, "")
            .replace("args(@a, @b, @c, 32, 32, 32)", "args(@a, @b, @c, 32, 32, 30)"),
        // An nd_range with a global offset.
        text(32, 32, 32, Form { nd: true, ..PLAIN }, "").replace("local(1, 1))", "local(1, 1), offset(0, 1))"),
    ];
    for (i, source) in cases.iter().enumerate() {
        let m = support::module(source);
        let (after, ctx) = support::optimize(&m, "tile-contractions");
        assert_eq!(tiled(&ctx), 0, "case {i} was tiled");
        assert_eq!(kernel_of_node(&after), "mm", "case {i}");
    }
}

#[test]
fn identical_contractions_share_one_kernel() {
    let one = text(16, 64, 32, PLAIN, "");
    let two = one.replace(
        "  %mm = kernel @mm range(64, 16) args(@a, @b, @c, 64, 32, 16)\n",
        "  %mm = kernel @mm range(64, 16) args(@a, @b, @c, 64, 32, 16)\n  %mm2 = kernel @mm range(64, 16) args(@a, @b, @c, 64, 32, 16) after(%mm)\n",
    );
    let (after, ctx) = support::optimize(&support::module(&two), "tile-contractions");
    assert_eq!(tiled(&ctx), 2);
    assert_eq!(after.kernels.len(), 2);
}

/// The module of `text(rows, cols, steps, f)` with its node running the `vec4` tiling
/// (16 × 8 work-items of 4 × 4 outputs) of its contraction, written by the pass's generator.
fn vec4_module(rows: u64, cols: u64, steps: u64, f: Form) -> Module {
    use cmdgraph_passes::tile_contractions::{recognise, tiled};
    let m = support::module(&text(rows, cols, steps, f, ""));
    let g = m.graphs.iter().next().unwrap().1;
    let NodeKind::Kernel(cmd) = &g.nodes.iter().next().unwrap().1.kind else { panic!("not a kernel") };
    let c = recognise::recognise(&m.kernels[cmd.kernel], cmd).expect("a contraction");
    let t = tiled::Tiling { lx: 16, ly: 8, rm: 4, rn: 4, tk: 32, vec4: true };
    assert!(c.n0.is_multiple_of(t.bn()) && c.n1.is_multiple_of(t.bm()), "whole tiles only");
    // The tiled kernel takes the loop kernel's parameters, so the node keeps its arguments.
    let params: Vec<_> = m.kernels[cmd.kernel].params.iter().map(|p| p.ty).collect();
    let kernel = tiled::kernel_text("mm4", &c, &t, &params);
    let (g0, g1) = t.groups(&c);
    support::module(&format!(
        "{kernel}\nusm @a : f32[{}]\nusm @b : f32[{}]\nusm @c : f32[{}]\n\ngraph @g {{\n  %mm = kernel @mm4 \
         nd_range(global({}, {}), local(16, 8)) args(@a, @b, @c, {cols}, {steps}, {rows})\n}}\n",
        rows * steps,
        steps * cols,
        rows * cols,
        g0 * 16,
        g1 * 8,
    ))
}

#[test]
fn vec4_tiling_equals_the_loop_bit_for_bit() {
    // Several full stages, one full stage and a short one, a short one alone; every form.
    let forms = [
        PLAIN,
        Form { a_transposed: true, ..PLAIN },
        Form { mul_add: true, init: "0.25", ..PLAIN },
        Form { swapped: true, ..PLAIN },
    ];
    for (rows, cols, steps) in [(32, 64, 64), (64, 128, 40), (32, 64, 20), (64, 64, 96)] {
        for f in forms {
            let (rows, cols) = if f.swapped { (cols, rows) } else { (rows, cols) };
            let before = support::module(&text(rows, cols, steps, f, ""));
            let after = vec4_module(rows, cols, steps, f);
            let (want, got) = (run(&before, rows, cols, steps), run(&after, rows, cols, steps));
            let diff = want.chunks(4).zip(got.chunks(4)).filter(|(a, b)| a != b).count();
            assert_eq!(diff, 0, "{rows}x{cols}x{steps}: {diff} of {} outputs differ", rows * cols);
        }
    }
}

#[test]
fn large_whole_tiles_choose_the_vec4_tiling() {
    use cmdgraph_passes::tile_contractions::{recognise, tiled};
    for (rows, cols, vec4) in [(256, 1024, true), (256, 1000, false), (64, 64, false)] {
        let m = support::module(&text(rows, cols, 64, PLAIN, ""));
        let g = m.graphs.iter().next().unwrap().1;
        let NodeKind::Kernel(cmd) = &g.nodes.iter().next().unwrap().1.kind else { panic!("not a kernel") };
        let c = recognise::recognise(&m.kernels[cmd.kernel], cmd).expect("a contraction");
        let t = tiled::Tiling::choose(&c).expect("tiled");
        assert_eq!(t.vec4, vec4, "{rows}x{cols}: {t:?}");
    }
}

/// In an `updatable` graph the contraction is tiled too, and the node keeps its arguments
/// (the tiled kernel takes the loop kernel's parameters), so an update can rebind its
/// buffers; its results are still the loop's bits.
#[test]
fn updatable_graphs_are_tiled_and_keep_the_arguments() {
    let (rows, cols, steps) = (36, 70, 70);
    let before = support::module(&text(rows, cols, steps, PLAIN, " properties(updatable)"));
    let (after, ctx) = support::optimize(&before, "tile-contractions");
    assert_eq!(tiled(&ctx), 1, "not tiled");
    assert!(kernel_of_node(&after).starts_with("mm.tiled."));
    let cmd = |m: &Module| {
        let g = m.graphs.iter().next().unwrap().1;
        let NodeKind::Kernel(cmd) = &g.nodes.iter().next().unwrap().1.kind else { panic!("not a kernel") };
        cmd.clone()
    };
    let (was, now) = (cmd(&before), cmd(&after));
    assert_eq!(was.args, now.args, "the arguments changed");
    let params = |m: &Module, c: &cmdgraph_ir::KernelCommand| {
        m.kernels[c.kernel].params.iter().map(|p| p.ty).collect::<Vec<_>>()
    };
    assert_eq!(params(&before, &was), params(&after, &now), "the parameter types changed");
    let (want, got) = (run(&before, rows, cols, steps), run(&after, rows, cols, steps));
    assert_eq!(want, got);
}

/// A matmul into a graph-owned temporary, then a bias add (a gather of the bias by column)
/// into a second temporary, then an activation with a residual input into `@y`: the shape
/// of an MLP layer. `extra` is added inside the graph; `act_out` is the activation's output.
fn chain_text(rows: u64, cols: u64, steps: u64, extra: &str, act_out: &str) -> String {
    let plain = text(rows, cols, steps, PLAIN, "");
    let kernels = &plain[..plain.find("usm @a").unwrap()];
    let n = rows * cols;
    format!(
        "{kernels}kernel @bias(%h: buf<f32, read>, %b: buf<f32, read>, %out: buf<f32, write>, %n: u32) {{
  %i = global_id 0
  %col = rem %i, %n
  %hv = load %h[%i]
  %bv = load %b[%col]
  %r = add %hv, %bv
  store %out[%i], %r
}}

kernel @act(%in: buf<f32, read>, %x: buf<f32, read>, %out: buf<f32, write>) {{
  %i = global_id 0
  %v = load %in[%i]
  %t = tanh %v
  %xv = load %x[%i]
  %r = fma %t, %xv, %v
  store %out[%i], %r
}}

usm @a : f32[{asz}]
usm @b : f32[{bsz}]
usm @c : f32[{n}]
usm @bv : f32[{cols}]
usm @y : f32[{n}]

graph @g {{
  %h = async_malloc f32[{n}]
  %mm = kernel @mm range({cols}, {rows}) args(@a, @b, %h, {cols}, {steps}, {rows}) after(%h)
  %z = async_malloc f32[{n}]
  %ba = kernel @bias range({n}) args(%h, @bv, %z, {cols}) after(%mm, %z)
  %fh = async_free %h after(%ba)
{extra}  %ac = kernel @act range({n}) args(%z, @c, {act_out}) after(%ba)
  %fz = async_free %z after(%ac)
}}
",
        asz = rows * steps,
        bsz = steps * cols,
    )
}

/// Every user memory after one run on the interpreter, full-precision random inputs.
fn run_all(m: &Module) -> Vec<(String, Vec<u8>)> {
    let mut interp = Interpreter::new(m).expect("interpreter");
    let names: Vec<String> = m.memories.iter().map(|(_, x)| x.name.clone()).collect();
    for (i, name) in names.iter().enumerate() {
        let count = m.memories.iter().find(|(_, x)| &x.name == name).unwrap().1.count;
        interp.bind_as::<f32>(name, &random(count, 10 + i as u64)).unwrap();
    }
    let exec = interp.finalize("g").unwrap();
    interp.run(exec).unwrap_or_else(|e| panic!("{e}"));
    names.iter().map(|n| (n.clone(), interp.read(n).unwrap().to_vec())).collect()
}

fn kernel_nodes(m: &Module) -> usize {
    let g = m.graphs.iter().next().unwrap().1;
    g.nodes.iter().filter(|(_, n)| matches!(n.kind, NodeKind::Kernel(_))).count()
}

/// The bias add and the activation run on each output of the tiled kernel: one kernel node
/// is left, the temporaries are gone, and every memory keeps its bits; partial work-groups
/// put the epilogue under the launch guard, whole ones do not.
#[test]
fn epilogues_run_inside_the_tiled_kernel_with_the_same_bits() {
    for (rows, cols, steps) in [(36, 70, 70), (64, 64, 40), (8, 96, 48)] {
        let before = support::module(&chain_text(rows, cols, steps, "", "@y"));
        let (after, stats) = support::optimize_stats(&before, "tile-contractions");
        assert_eq!(stats.get("contractions-tiled"), Some(&1));
        assert_eq!(stats.get("epilogue-kernels"), Some(&2), "{rows}x{cols}x{steps}");
        assert_eq!(kernel_nodes(&after), 1, "{rows}x{cols}x{steps}");
        let g = after.graphs.iter().next().unwrap().1;
        assert!(g.nodes.iter().all(|(_, n)| !matches!(n.kind, NodeKind::AsyncMalloc { .. })), "a temporary is left");
        assert_eq!(g.nodes.iter().next().unwrap().1.name, "ac");
        cmdgraph_ir::verify::verify(&after).unwrap_or_else(|d| panic!("{d:?}"));
        let (want, got) = (run_all(&before), run_all(&after));
        for ((name, w), (_, g)) in want.iter().zip(&got) {
            let diff = w.chunks(4).zip(g.chunks(4)).filter(|(a, b)| a != b).count();
            assert_eq!(diff, 0, "{rows}x{cols}x{steps}: @{name}: {diff} elements differ");
        }
    }
}

/// Where running the epilogue on each output would change what some node sees, the
/// contraction is tiled alone and the other nodes stay.
#[test]
fn epilogues_that_would_change_results_stay_apart() {
    let (rows, cols, steps) = (32, 64, 64);
    let cases = [
        // The activation writes the matmul's input: other work-groups still read it.
        ("the contraction reads", chain_text(rows, cols, steps, "", "@a")),
        // A node between the bias add and the activation on a path (contracting makes a cycle).
        (
            "lies on a path between",
            chain_text(rows, cols, steps, "  %cp = memcpy @c, @bv, 64 after(%ba)\n", "@y")
                .replace("args(%z, @c, @y) after(%ba)", "args(%z, @c, @y) after(%ba, %cp)"),
        ),
        // The temporary is read by a second node.
        (
            "reads its result alone",
            chain_text(rows, cols, steps, "", "@y")
                .replace(
                    "%fh = async_free %h after(%ba)",
                    "%cp = memcpy @y, %h, 64 after(%mm)\n  %fh = async_free %h after(%ba, %cp)",
                )
                .replace("args(%z, @c, @y) after(%ba)", "args(%z, @c, @y) after(%ba, %cp)"),
        ),
    ];
    for (what, source) in cases {
        let before = support::module(&source);
        let (after, stats) = support::optimize_stats(&before, "tile-contractions");
        let (_, ctx) = support::optimize(&before, "tile-contractions");
        assert!(ctx.remarks.iter().any(|r| r.contains(what)), "{what}: {:?}", ctx.remarks);
        assert_eq!(stats.get("contractions-tiled"), Some(&1), "{what}");
        assert_eq!(stats.get("epilogue-kernels"), None, "{what}");
        assert_eq!(kernel_nodes(&after), 3, "{what}");
        let (want, got) = (run_all(&before), run_all(&after));
        assert_eq!(want, got, "{what}");
    }
}

/// A temporary of the chain that the contraction also takes as another argument (an extra,
/// unused buffer parameter here) would dangle once its allocation goes: no epilogue, and the
/// same memory. Passed twice to a member, the chain stops before that member.
#[test]
fn a_temporary_passed_twice_keeps_the_chain_apart() {
    let (rows, cols, steps) = (32, 64, 64);
    let extra = chain_text(rows, cols, steps, "", "@y")
        .replace("%rows: u32) {", "%rows: u32, %spare: buf<f32, read>) {")
        .replace(&format!("{steps}, {rows}) after(%h)"), &format!("{steps}, {rows}, %h) after(%h)"));
    let twice = chain_text(rows, cols, steps, "", "@y").replace("args(%z, @c, @y)", "args(%z, %z, @y)");
    let (_, ctx) = support::optimize(&support::module(&extra), "tile-contractions");
    assert!(ctx.remarks.iter().any(|r| r.contains("also passed as another argument")), "{:?}", ctx.remarks);
    for (what, source, want) in [("the contraction", extra, None), ("a member", twice, Some(&1))] {
        let before = support::module(&source);
        let (after, stats) = support::optimize_stats(&before, "tile-contractions");
        assert_eq!(stats.get("contractions-tiled"), Some(&1), "{what}");
        assert_eq!(stats.get("epilogue-kernels"), want, "{what}");
        assert_eq!(run_all(&before), run_all(&after), "{what}");
    }
}
