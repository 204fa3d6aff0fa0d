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
        // The tiled kernel takes the loop kernel's parameters, so the node keeps its arguments.
        let params: Vec<_> = m.kernels[cmd.kernel].params.iter().map(|p| p.ty).collect();
        let module_text = format!(
            "{}\nusm @a : f32[{}]\nusm @b : f32[{}]\nusm @c : f32[{}]\n\ngraph @g {{\n  %mm = kernel @mm4 \
             nd_range(global({}, {}), local(16, 8)) args(@a, @b, @c, {cols}, {steps})\n}}\n",
            tiled::kernel_text("mm4", &c, &t, &params),
            rows * steps,
            steps * cols,
            rows * cols,
            g0 * 16,
            g1 * 8,
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

/// In an `updatable` graph the contraction is tiled and keeps its arguments: a whole-graph
/// update and an individual update rebind its buffers, and the device gives the loop's
/// bits for the new buffers; a new launch or size argument is refused naming the node, and
/// a refused update changes nothing.
#[test]
fn updates_rebind_the_buffers_of_a_tiled_contraction() {
    let (rows, cols, steps) = (36, 70, 70);
    let with = |args: &str, launch: &str| {
        let t = text(rows, cols, steps).replace("graph @g {", "graph @g properties(updatable) {").replace(
            &format!("range({cols}, {rows}) args(@a, @b, @c, {cols}, {steps})"),
            &format!("{launch} args({args})"),
        );
        let t = format!("{t}\nusm @b2 : f32[{}]\nusm @c2 : f32[{}]\n", steps * cols, rows * cols);
        cmdgraph_ir::text::parse(&t).expect("parses")
    };
    let range = format!("range({cols}, {rows})");
    let source = with(&format!("@a, @b, @c, {cols}, {steps}"), &range);
    let bundle = compile(&source, None).unwrap_or_else(|e| panic!("{e}"));
    let read = cmdgraph_ir::bundle::Bundle::from_bytes(&bundle).expect("reads");
    assert!(read.kernels.iter().any(|k| k.kernel.contains("mm.tiled.")), "the pass did not fire");
    let naive = compile(&source, Some("")).unwrap_or_else(|e| panic!("{e}"));
    let mut rng = Rng(48);
    let f32s = support::random_bytes(cmdgraph_ir::Type::F32, rows * steps + 2 * steps * cols, &mut rng);
    let (a, rest) = f32s.split_at((rows * steps * 4) as usize);
    let (b, b2) = rest.split_at((steps * cols * 4) as usize);
    let mut ex = executor(&bundle).unwrap_or_else(|e| panic!("{e}"));
    for (name, bytes) in [("a", a), ("b", b), ("b2", b2)] {
        ex.bind(name, bytes).unwrap();
    }
    let id = ex.finalize("g").unwrap();
    let step = |ex: &mut cmdgraph_executor::Executor| {
        ex.run(id).unwrap();
        ex.wait(id).unwrap();
    };
    step(&mut ex);
    assert_eq!(ex.read("c").unwrap(), device_c(&naive, a, b), "before the update");
    // Whole-graph update: the second operand and the result move to @b2 and @c2.
    let moved = with(&format!("@a, @b2, @c2, {cols}, {steps}"), &range);
    ex.update_graph(id, &moved, "g").unwrap_or_else(|e| panic!("{e}"));
    step(&mut ex);
    let want = device_c(&naive, a, b2);
    assert_eq!(ex.read("c2").unwrap(), want, "after the whole-graph update");
    // Refused: a new launch, a new size argument (whole-graph and individual), a launch
    // update; each names the node, and the executable keeps running what it ran.
    let smaller = with(&format!("@a, @b, @c, {cols}, {steps}"), &format!("range({cols}, {})", rows - 4));
    let resized = with(&format!("@a, @b, @c, {cols}, {}", steps - 1), &range);
    for (what, bad) in [("launch", &smaller), ("size argument", &resized)] {
        let e = ex.update_graph(id, bad, "g").expect_err(what).to_string();
        assert!(e.contains("%mm") && e.contains("specialised"), "{what}: {e}");
        let e = ex.update_nodes(id, bad, "g", &["mm"]).expect_err(what).to_string();
        assert!(e.contains("%mm") && e.contains("specialised"), "{what}: {e}");
    }
    let launch = cmdgraph_ir::Launch::Range(vec![cols, rows - 4]);
    let e = ex.update_launch(id, "mm", launch).expect_err("launch update").to_string();
    assert!(e.contains("%mm") && e.contains("specialised"), "{e}");
    ex.bind("c2", &vec![0u8; (rows * cols * 4) as usize]).unwrap();
    step(&mut ex);
    assert_eq!(ex.read("c2").unwrap(), want, "a refused update changed the executable");
    // Individual update back to @b and @c.
    ex.update_nodes(id, &source, "g", &["mm"]).unwrap_or_else(|e| panic!("{e}"));
    ex.bind("c", &vec![0u8; (rows * cols * 4) as usize]).unwrap();
    step(&mut ex);
    assert_eq!(ex.read("c").unwrap(), device_c(&naive, a, b), "after the individual update");
    let msgs = ex.context().take_messages();
    assert!(msgs.is_empty(), "validation: {msgs:?}");
}

/// A matmul into a graph-owned temporary, a bias add (gathering the bias by column) into a
/// second one, then a scaled residual into `@y`: `tile-contractions` runs both element-wise
/// kernels on each output of the tiled kernel. On Vulkan the one remaining node gives the
/// unoptimized bundle's bits and the interpreter's (running the source), with partial
/// work-groups (the strided tiling, the epilogue under the launch guard) and with whole
/// 256 × 1024 tiles (the `vec4` tiling).
#[test]
fn epilogues_in_tiled_contractions_give_the_same_bits_on_vulkan() {
    let mut rng = Rng(64);
    for (rows, cols, steps) in [(36, 70, 70), (256, 1024, 32)] {
        let plain = text(rows, cols, steps);
        let n = rows * cols;
        let t = format!(
            "{}kernel @bias(%h: buf<f32, read>, %b: buf<f32, read>, %out: buf<f32, write>, %n: u32) {{
  %i = global_id 0
  %col = rem %i, %n
  %hv = load %h[%i]
  %bv = load %b[%col]
  %r = add %hv, %bv
  store %out[%i], %r
}}

kernel @res(%in: buf<f32, read>, %x: buf<f32, read>, %out: buf<f32, write>) {{
  %i = global_id 0
  %v = load %in[%i]
  %xv = load %x[%i]
  %m = mul %v, %xv
  %r = add %m, %v
  store %out[%i], %r
}}

usm @a : f32[{}]
usm @b : f32[{}]
usm @x : f32[{n}]
usm @bv : f32[{cols}]
usm @y : f32[{n}]

graph @g {{
  %h = async_malloc f32[{n}]
  %mm = kernel @mm range({cols}, {rows}) args(@a, @b, %h, {cols}, {steps}) after(%h)
  %z = async_malloc f32[{n}]
  %ba = kernel @bias range({n}) args(%h, @bv, %z, {cols}) after(%mm, %z)
  %fh = async_free %h after(%ba)
  %rs = kernel @res range({n}) args(%z, @x, @y) after(%ba)
  %fz = async_free %z after(%rs)
}}
",
            &plain[..plain.find("usm @a").expect("memories")],
            rows * steps,
            steps * cols,
        );
        let source = cmdgraph_ir::text::parse(&t).expect("parses");
        let fused = compile(&source, Some("tile-contractions")).unwrap_or_else(|e| panic!("{e}"));
        let naive = compile(&source, Some("")).unwrap_or_else(|e| panic!("{e}"));
        let read = cmdgraph_ir::bundle::Bundle::from_bytes(&fused).expect("reads");
        assert!(read.optimized.contains(".then.bias.then.res"), "{rows}x{cols}: no epilogue");
        assert_eq!(read.optimized.matches(" = kernel @").count(), 1, "{rows}x{cols}: one kernel node");
        assert_eq!(read.optimized.contains("%as = local vec4<f32>"), rows == 256, "{rows}x{cols}: tiling");
        let inputs: Vec<(&str, Vec<u8>)> = [("a", rows * steps), ("b", steps * cols), ("x", n), ("bv", cols)]
            .into_iter()
            .map(|(name, count)| (name, support::random_bytes(cmdgraph_ir::Type::F32, count, &mut rng)))
            .collect();
        let y = |bundle: &[u8]| {
            let mut ex = executor(bundle).unwrap_or_else(|e| panic!("{e}"));
            for (name, bytes) in &inputs {
                ex.bind(name, bytes).unwrap();
            }
            let id = ex.finalize("g").unwrap();
            ex.run(id).unwrap();
            ex.wait(id).unwrap();
            let msgs = ex.context().take_messages();
            assert!(msgs.is_empty(), "validation: {msgs:?}");
            ex.read("y").unwrap()
        };
        let (want, got) = (y(&naive), y(&fused));
        let differ = want.chunks(4).zip(got.chunks(4)).filter(|(p, q)| p != q).count();
        assert_eq!(differ, 0, "{rows}x{cols}x{steps}: {differ} of {n} outputs differ on the device");
        if rows < 256 {
            let mut both = Both::new(&source, &fused, rows + cols).unwrap_or_else(|e| panic!("{e}"));
            let compared = both.run("g", 1).unwrap_or_else(|e| panic!("{rows}x{cols}x{steps}: {e}"));
            assert_eq!(compared, 5, "every memory");
        }
    }
}
