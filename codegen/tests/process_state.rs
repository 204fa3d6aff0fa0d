//! Compiling many kernels in one process, in different orders, gives each kernel the same
//! valid SPIR-V. LLVM 22's SPIR-V backend keeps process-wide state keyed by addresses
//! (docs/codegen.md), which once made results depend on what was compiled before; emission
//! in a fresh `llc` per module is what this checks.

use cmdgraph_codegen::{compile_kernel, module_variants, Options};
use std::collections::BTreeMap;
use std::path::Path;

#[test]
fn kernels_compile_to_the_same_spirv_in_any_order() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cgir"))
        .collect();
    files.sort();
    let modules: Vec<_> =
        files.iter().map(|f| cmdgraph_ir::text::parse(&std::fs::read_to_string(f).unwrap()).unwrap()).collect();
    let mut jobs = Vec::new();
    for (m, module) in modules.iter().enumerate() {
        for (k, variant) in module_variants(module).unwrap() {
            jobs.push((m, k, variant));
        }
    }
    assert!(jobs.len() >= 15, "only {} kernel variants", jobs.len());
    // Forward, reverse, and odd-then-even: each kernel is preceded by different ones.
    let forward: Vec<usize> = (0..jobs.len()).collect();
    let reverse: Vec<usize> = forward.iter().rev().copied().collect();
    let shuffled: Vec<usize> =
        forward.iter().copied().filter(|i| i % 2 == 1).chain(forward.iter().copied().filter(|i| i % 2 == 0)).collect();
    let mut first: BTreeMap<usize, Vec<u32>> = BTreeMap::new();
    for order in [forward, reverse, shuffled] {
        for i in order {
            let (m, k, variant) = &jobs[i];
            let compiled = compile_kernel(&modules[*m], *k, variant, &Options::default())
                .unwrap_or_else(|e| panic!("{}: {e}", files[*m].display()));
            let words = first.entry(i).or_insert_with(|| compiled.spirv.clone());
            assert_eq!(
                *words,
                compiled.spirv,
                "{}: kernel variant {i} changed with compile order",
                files[*m].display()
            );
        }
    }
}
