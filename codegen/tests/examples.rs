//! Every kernel variant of every example compiles to SPIR-V that `spirv-val` accepts.

use cmdgraph_codegen::{compile_kernel, module_variants, Options};
use std::path::Path;

#[test]
fn every_example_kernel_compiles_and_validates() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cgir"))
        .collect();
    files.sort();
    let mut compiled = 0;
    let mut failures = Vec::new();
    for file in &files {
        let src = std::fs::read_to_string(file).unwrap();
        let module = cmdgraph_ir::text::parse(&src).unwrap_or_else(|_| panic!("{} parses", file.display()));
        for (k, variant) in module_variants(&module).unwrap() {
            for opt in [0u8, 2] {
                match compile_kernel(&module, k, &variant, &Options { opt_level: opt }) {
                    Ok(c) => {
                        assert_eq!(c.spirv.first(), Some(&0x0723_0203), "SPIR-V magic");
                        assert_eq!(c.workgroup_size, variant.workgroup_size);
                        compiled += 1;
                    }
                    Err(e) => failures.push(format!("{} -O{opt}: {e}", file.display())),
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(compiled >= 2 * 20, "only {compiled} variants compiled");
}
