use super::*;

fn residual(m: u32, h: u32, tile: Tile) -> Gemm {
    Gemm { m, n: h, k: h, tile, epilogue: Epilogue::BiasGeluResidual }
}

/// The MLP suite's layers at both shapes, and a plain product with one K slice: each module
/// assembles and passes `spirv-val` for Vulkan 1.3 (in process).
#[test]
fn generated_products_are_valid_vulkan_spirv() {
    let small = Tile { bm: 16, bn: 64, bk: 64, wm: 1, wn: 2, ks: 2 };
    let cases = [
        residual(256, 1024, Tile::MEASURED),
        residual(8, 512, small),
        Gemm { m: 64, n: 128, k: 256, tile: Tile { ks: 1, ..Tile::MEASURED }, epilogue: Epilogue::Product },
        Gemm { m: 40, n: 64, k: 512, tile: Tile { bk: 32, ks: 4, ..small }, epilogue: Epilogue::Product },
    ];
    for g in cases {
        let words = module(&g).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(words.first(), Some(&0x0723_0203), "{g:?}: SPIR-V magic");
        let text = assembly(&g).unwrap_or_else(|e| panic!("{e}"));
        let mul_adds = text.matches("OpCooperativeMatrixMulAddKHR").count() as u32;
        let t = g.tile;
        assert_eq!(mul_adds, (t.bm / t.wm / 16) * (t.bn / t.wn / 16) * (t.bk / 16), "{g:?}: fragments per step");
        assert_eq!(text.contains("Tanh"), g.epilogue == Epilogue::BiasGeluResidual);
        assert_eq!(assembly(&g), Ok(text), "the same product gives the same text");
    }
}

#[test]
fn launch_and_memory_follow_the_tile() {
    let g = residual(256, 1024, Tile::MEASURED);
    assert_eq!(g.invocations(), 256);
    assert_eq!(g.launch(), (1024 / 64 * 256, 256 / 32));
    // Two slices of (32 rows x 18 + 64 rows x 18) v4half, and one slice's 32 x 64 f32 sums.
    assert_eq!(g.workgroup_memory(), 2 * (32 * 18 + 64 * 18) * 8 + 32 * 64 * 4);
    // Rows past M: 40 rows take two row tiles of 32.
    let g = Gemm { m: 40, ..g };
    assert_eq!(g.launch().1, 2);
}

#[test]
fn sizes_that_do_not_fit_the_tile_are_refused_with_the_rule() {
    let t = Tile::MEASURED;
    let refused = [
        (Gemm { n: 1000, k: 1000, ..residual(256, 1024, t) }, "N must be a positive multiple of bn"),
        (Gemm { k: 1088, epilogue: Epilogue::Product, ..residual(256, 1024, t) }, "K must be a positive multiple"),
        (Gemm { k: 2048, ..residual(256, 1024, t) }, "the residual epilogue needs N == K"),
        (residual(256, 1024, Tile { ks: 4, ..t }), "at most 48 KiB of work-group memory"),
        (residual(256, 1024, Tile { bm: 24, ..t }), "bm must be a positive multiple of 16 × wm"),
        (residual(0, 1024, t), "M must be positive"),
        (residual(256, 1024, Tile { bn: 0, ..t }), "between 1 and 1024"),
        (residual(1 << 20, 1 << 12, t), "at most 2^31 elements"),
        (residual(256, 1024, Tile { ks: 1 << 20, wm: 1 << 20, ..t }), "between 1 and 1024"),
        (residual(256, 1024, Tile { wm: 8, wn: 4, bm: 128, bn: 64, bk: 16, ks: 2 }), "at most 1024 invocations"),
    ];
    for (g, rule) in refused {
        let err = assembly(&g).err().unwrap_or_else(|| panic!("{g:?} was accepted"));
        assert!(err.contains(rule), "{g:?}: {err}");
        assert!(module(&g).is_err());
    }
}
