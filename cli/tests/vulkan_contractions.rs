//! `tile-contractions` on Vulkan (validation on): the tiled kernels the pass writes compile,
//! pass spirv-val, and give the same bits on the device as the one-work-item-per-output
//! loop they replace, and as the interpreter running the source (under the `fma` rule the
//! device shows). Shapes leave partial work-groups, short last stages and, for few rows,
//! the 128-step stages; inputs are full-precision random floats.

mod support;

use support::{compile, executor, Both, Rng};

fn text(rows: u64, cols: u64, steps: u64) -> String {
    format!(
        "kernel @mm(%a: buf<f32, read>, %b: buf<f32, read>, %c: buf<f32, write>, %n: u32, %k: u32) {{
  %col = global_id 0
  %row = global_id 1
  %zero = const 0 : u32
  %one = const 1 : u32
  %init = const 0.0 : f32
  %acc = for %j = %zero to %k step %one carry(%s = %init) {{
    %ar = mul %row, %k
    %ai = add %ar, %j
    %av = load %a[%ai]
    %br = mul %j, %n
    %bi = add %br, %col
    %bv = load %b[%bi]
    %s2 = fma %av, %bv, %s
    yield %s2
  }}
  %cr = mul %row, %n
  %ci = add %cr, %col
  store %c[%ci], %acc
}}

usm @a : f32[{}]
usm @b : f32[{}]
usm @c : f32[{}]

graph @g {{
  %mm = kernel @mm range({cols}, {rows}) args(@a, @b, @c, {cols}, {steps})
}}
",
        rows * steps,
        steps * cols,
        rows * cols
    )
}

/// `c` after one run of `bundle` on Vulkan with the given inputs.
fn device_c(bundle: &[u8], a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut ex = executor(bundle).unwrap_or_else(|e| panic!("{e}"));
    ex.bind("a", a).unwrap();
    ex.bind("b", b).unwrap();
    let id = ex.finalize("g").unwrap();
    ex.run(id).unwrap();
    ex.wait(id).unwrap();
    let msgs = ex.context().take_messages();
    assert!(msgs.is_empty(), "validation: {msgs:?}");
    ex.read("c").unwrap()
}

#[test]
fn tiled_contractions_give_the_loops_bits_on_vulkan() {
    let mut rng = Rng(16);
    // (rows, cols, steps): many rows with a pipelined loop, partial groups and a short last
    // stage; few rows (128-step stages) with and without a short last stage.
    for (rows, cols, steps) in [(64, 128, 96), (36, 70, 70), (8, 64, 300), (6, 50, 128)] {
        let source = cmdgraph_ir::text::parse(&text(rows, cols, steps)).expect("parses");
        let tiled = compile(&source, Some("tile-contractions")).unwrap_or_else(|e| panic!("{e}"));
        let naive = compile(&source, Some("")).unwrap_or_else(|e| panic!("{e}"));
        let has_tiled = |b: &[u8]| {
            let read = cmdgraph_ir::bundle::Bundle::from_bytes(b).expect("reads");
            read.kernels.iter().any(|k| k.kernel.contains("mm.tiled."))
        };
        assert!(has_tiled(&tiled), "{rows}x{cols}x{steps}: the pass did not fire");
        assert!(!has_tiled(&naive));
        let f32s = support::random_bytes(cmdgraph_ir::Type::F32, rows * steps + steps * cols, &mut rng);
        let (a, b) = f32s.split_at((rows * steps * 4) as usize);
        let (want, got) = (device_c(&naive, a, b), device_c(&tiled, a, b));
        let differ = want.chunks(4).zip(got.chunks(4)).filter(|(x, y)| x != y).count();
        assert_eq!(differ, 0, "{rows}x{cols}x{steps}: {differ} of {} outputs differ on the device", rows * cols);
        // And the tiled bundle against the interpreter running the source.
        let mut both = Both::new(&source, &tiled, rows + cols).unwrap_or_else(|e| panic!("{e}"));
        let compared = both.run("g", 1).unwrap_or_else(|e| panic!("{rows}x{cols}x{steps}: {e}"));
        assert_eq!(compared, 3, "@a, @b and @c");
    }
}

/// The `vec4` tiling (16 × 8 work-items of 4 × 4 consecutive outputs, slices read as
/// `vec4`s from work-group memory): what the pass chooses for large whole-tile contractions
/// (256 × 1024 here, through the pass), and written directly by the pass's generator for
/// small shapes, each against the loop's bundle on the device and against the interpreter.
#[test]
fn vec4_tiled_contractions_give_the_loops_bits_on_vulkan() {
    use cmdgraph_passes::tile_contractions::{recognise, tiled};
    let mut rng = Rng(32);
    let inputs = |rows: u64, cols: u64, steps: u64, rng: &mut Rng| {
        let f32s = support::random_bytes(cmdgraph_ir::Type::F32, rows * steps + steps * cols, rng);
        let (a, b) = f32s.split_at((rows * steps * 4) as usize);
        (a.to_vec(), b.to_vec())
    };
    // Through the pass: the shape the MLP suite's larger matmul has, with fewer steps.
    let (rows, cols, steps) = (256, 1024, 64);
    let source = cmdgraph_ir::text::parse(&text(rows, cols, steps)).expect("parses");
    let tiled_bundle = compile(&source, Some("tile-contractions")).unwrap_or_else(|e| panic!("{e}"));
    let naive = compile(&source, Some("")).unwrap_or_else(|e| panic!("{e}"));
    let read = cmdgraph_ir::bundle::Bundle::from_bytes(&tiled_bundle).expect("reads");
    assert!(read.optimized.contains("%as = local vec4<f32>"), "the pass did not choose the vec4 tiling");
    let (a, b) = inputs(rows, cols, steps, &mut rng);
    let (want, got) = (device_c(&naive, &a, &b), device_c(&tiled_bundle, &a, &b));
    let differ = want.chunks(4).zip(got.chunks(4)).filter(|(x, y)| x != y).count();
    assert_eq!(differ, 0, "{rows}x{cols}x{steps}: {differ} of {} outputs differ on the device", rows * cols);
    // Written directly, at sizes the interpreter checks too: stages full, full and short, short.
    for (rows, cols, steps) in [(32, 64, 64), (64, 128, 40), (32, 64, 20)] {
        let m = cmdgraph_ir::text::parse(&text(rows, cols, steps)).expect("parses");
        let g = m.graphs.iter().next().expect("a graph").1;
        let cmdgraph_ir::NodeKind::Kernel(cmd) = &g.nodes.iter().next().expect("a node").1.kind else {
            panic!("not a kernel")
        };
        let c = recognise::recognise(&m.kernels[cmd.kernel], cmd).expect("a contraction");
        let t = tiled::Tiling { lx: 16, ly: 8, rm: 4, rn: 4, tk: 32, vec4: true };
        let (g0, g1) = t.groups(&c);
        let arg = |p: u32| ["@a", "@b", "@c"][p as usize];
        let module_text = format!(
            "{}\nusm @a : f32[{}]\nusm @b : f32[{}]\nusm @c : f32[{}]\n\ngraph @g {{\n  %mm = kernel @mm4 \
             nd_range(global({}, {}), local(16, 8)) args({}, {}, {})\n}}\n",
            tiled::kernel_text("mm4", &c, &t, "write"),
            rows * steps,
            steps * cols,
            rows * cols,
            g0 * 16,
            g1 * 8,
            arg(c.a.param),
            arg(c.b.param),
            arg(c.c.param)
        );
        let direct = cmdgraph_ir::text::parse(&module_text).expect("the generated kernel parses");
        let bundle = compile(&direct, Some("")).unwrap_or_else(|e| panic!("{e}"));
        let naive = compile(&m, Some("")).unwrap_or_else(|e| panic!("{e}"));
        let (a, b) = inputs(rows, cols, steps, &mut rng);
        let (want, got) = (device_c(&naive, &a, &b), device_c(&bundle, &a, &b));
        let differ = want.chunks(4).zip(got.chunks(4)).filter(|(x, y)| x != y).count();
        assert_eq!(differ, 0, "{rows}x{cols}x{steps}: {differ} of {} outputs differ on the device", rows * cols);
        let mut both = Both::new(&m, &bundle, rows + cols).unwrap_or_else(|e| panic!("{e}"));
        let compared = both.run("g", 1).unwrap_or_else(|e| panic!("{rows}x{cols}x{steps}: {e}"));
        assert_eq!(compared, 3, "@a, @b and @c");
    }
}
