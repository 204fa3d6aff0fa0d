//! The bundle writer with the real code generator: every example compiles to a bundle whose
//! every variant is SPIR-V (validated inside codegen), twice to the same bytes, and reads back.

use cmdgraph_codegen::bundle::{compile_module, Llvm};
use cmdgraph_codegen::Options;
use cmdgraph_ir::bundle::Bundle;
use cmdgraph_passes::{lookup, PassInfo, DEFAULT_PIPELINE};

#[test]
fn every_example_compiles_twice_to_identical_bytes() {
    let passes: Vec<&'static PassInfo> = DEFAULT_PIPELINE.iter().filter_map(|n| lookup(n)).collect();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples");
    let mut files: Vec<_> = std::fs::read_dir(dir).expect("examples").map(|e| e.expect("entry").path()).collect();
    files.sort();
    let mut compiled = 0;
    for path in files.iter().filter(|p| p.extension().is_some_and(|e| e == "cgir")) {
        let text = std::fs::read_to_string(path).expect("read");
        let m = cmdgraph_ir::text::parse(&text).expect("parses");
        // External SPIR-V kernels (examples/kernels/) are packed from their files.
        let external = cmdgraph_codegen::external::load(&m, std::path::Path::new(dir)).expect("external kernels load");
        let compiler = cmdgraph_codegen::external::WithExternal { inner: &Llvm, external: &external };
        let (a, _) = compile_module(&m, &passes, &Options::default(), &compiler)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let (b, _) = compile_module(&m, &passes, &Options::default(), &compiler).expect("again");
        let ron = a.to_bytes().expect("ron");
        assert_eq!(ron, b.to_bytes().expect("ron"), "{}: two compiles differ", path.display());
        assert_eq!(Bundle::from_bytes(&ron).expect("reads back"), a);
        assert!(!a.kernels.is_empty(), "{}: every example has kernels", path.display());
        for k in &a.kernels {
            assert_eq!(k.spirv.first(), Some(&0x0723_0203), "{}: @{} is not SPIR-V", path.display(), k.kernel);
        }
        compiled += 1;
    }
    assert!(compiled >= 8, "examples found: {compiled}");
}
