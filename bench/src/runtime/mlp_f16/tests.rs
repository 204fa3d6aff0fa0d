use super::*;
use cmdgraph_interp::Interpreter;

fn shape(s: &str) -> Shape {
    Shape::parse(s).unwrap_or_else(|e| panic!("{e}"))
}

/// The generated module is valid IR with two kernel nodes per layer, and its bundle compiles
/// (the product kernel passes the external-kernel contract against `@layer`'s signature).
/// On a device without cooperative matrices or 48 KiB of work-group memory (llvmpipe) the
/// suite reports the refusal; on one with them, the output must match the host reference.
#[test]
fn the_bundle_compiles_and_runs_or_is_refused_for_cooperative_matrices() {
    let s = shape("32x128x2");
    let text = module_text(s);
    let module = cmdgraph_ir::text::parse(&text)
        .unwrap_or_else(|d| panic!("{}", cmdgraph_ir::diag::render_all(&d, "mlp_f16.cgir", &text)));
    let kernels = module
        .graphs
        .iter()
        .flat_map(|(_, g)| g.nodes.iter())
        .filter(|(_, n)| matches!(n.kind, cmdgraph_ir::graph::NodeKind::Kernel(_)))
        .count();
    assert_eq!(kernels, 4);
    let dir = std::env::temp_dir().join(format!("cmdgraph-mlp-f16-{}", std::process::id()));
    prepare(&dir, &[s]).unwrap_or_else(|e| panic!("{e}"));
    let torch = Torch::load(None).unwrap_or_else(|e| panic!("{e}"));
    let result = run_from(&dir, None, 2, &torch);
    let _ = std::fs::remove_dir_all(&dir);
    let (rows, _) = result.unwrap_or_else(|e| panic!("{e}"));
    match &rows[0].result {
        Ok(m) => assert!(m.err_host <= TOLERANCE, "{}", m.err_host),
        Err(e) => assert!(refused_by_device(e), "refused for another reason: {e}"),
    }
}

/// The layer norm kernel on the reference interpreter against the host's formula, on random
/// full-precision f16 rows (each output within one f16 rounding of the f64 value).
#[test]
fn the_f16_layer_norm_matches_the_host() {
    let (rows, h) = (3usize, 512usize);
    let text = format!(
        "{LAYERNORM}\nusm @r : vec4<f16>[{n4}]\nusm @y : vec4<f16>[{n4}]\ngraph @g {{\n  %ln = kernel @layernorm nd_range(global({g}), local(128)) args(@r, @y, local f32[128], local f32[128], {q})\n}}\n",
        n4 = rows * h / 4,
        g = rows * 128,
        q = h / 4
    );
    let module = cmdgraph_ir::text::parse(&text)
        .unwrap_or_else(|d| panic!("{}", cmdgraph_ir::diag::render_all(&d, "ln.cgir", &text)));
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let r: Vec<f16> = (0..rows * h)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            f16::from_f64((state >> 11) as f64 / (1u64 << 53) as f64 * 6.0 - 2.5)
        })
        .collect();
    let mut interp = Interpreter::new(&module).unwrap_or_else(|e| panic!("{e}"));
    interp.bind_as("r", &r).unwrap_or_else(|e| panic!("{e}"));
    let id = interp.finalize("g").unwrap_or_else(|e| panic!("{e}"));
    interp.run(id).unwrap_or_else(|e| panic!("{e}"));
    let y: Vec<f32> = interp.read_as::<f16>("y").unwrap_or_else(|e| panic!("{e}")).iter().map(|v| v.to_f32()).collect();
    for (row, out) in r.chunks(h).zip(y.chunks(h)) {
        let v: Vec<f64> = row.iter().map(|x| x.to_f64()).collect();
        let mean = v.iter().sum::<f64>() / h as f64;
        let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / h as f64;
        for (x, got) in v.iter().zip(out) {
            let want = (x - mean) / (var + 1e-5).sqrt();
            let ulp = f16::from_f64(want).to_f64().abs().max(1.0 / 1024.0) / 1024.0;
            assert!((f64::from(*got) - want).abs() <= 1.5 * ulp, "{got} vs {want}");
        }
    }
}

#[test]
fn small_batches_take_the_half_height_tile_and_every_shape_fits_it() {
    assert_eq!(gemm(shape("8x512x4")).tile.bm, 16);
    assert_eq!(gemm(shape("256x1024x4")).tile, Tile::MEASURED);
    for s in ["8x512x4", "256x1024x4", "32x128x2"] {
        assert_eq!(gemm(shape(s)).check(), Ok(()), "{s}");
    }
}
