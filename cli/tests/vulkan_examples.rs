//! Every example, compiled with the default pipeline and with no pass, runs on the default
//! Vulkan device (llvmpipe on CI) with validation and synchronization validation on and
//! matches the reference interpreter running its source, over two runs of every graph
//! (persistence: device globals kept, `zero_init` only at finalize, decision A9). Inputs
//! are full-precision random floats (support::random_bytes); results must be bit-exact
//! except `fma`, which may round once or twice (docs/ir.md, "Float precision"), in the same
//! way for every memory object of every example on one device.

mod support;

use std::time::Instant;
use support::{compile, Both};

#[test]
fn every_example_matches_the_interpreter_on_vulkan() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples");
    let mut files: Vec<_> = std::fs::read_dir(dir).expect("examples").map(|e| e.expect("entry").path()).collect();
    files.sort();
    let mut failures = Vec::new();
    let (mut graphs, mut compared) = (0, 0);
    // Memory objects by the fma rule they matched: once only, twice only, both.
    let mut fma = [0usize; 3];
    for path in files.iter().filter(|p| p.extension().is_some_and(|e| e == "cgir")) {
        let text = std::fs::read_to_string(path).expect("read");
        let module = cmdgraph_ir::text::parse(&text).expect("parses");
        // The interpreter runs no SPIR-V: cli/tests/vulkan_external.rs runs a module with an
        // external kernel against a copy whose kernel is written in the kernel language.
        if module.kernels.iter().any(|(_, k)| matches!(k.body, cmdgraph_ir::KernelBody::Spirv { .. })) {
            continue;
        }
        // The executor runs sub-graphs only inlined (docs/executor.md): with no pass, a
        // module with sub-graph nodes gets `inline-subgraphs` alone.
        let none = if text.contains("= subgraph @") { "inline-subgraphs" } else { "" };
        for pipeline in [None, Some(none)] {
            let what =
                format!("{} ({})", path.display(), if pipeline.is_none() { "default pipeline" } else { "no pass" });
            let t = Instant::now();
            let result = compile(&module, pipeline).and_then(|bundle| {
                let mut both = Both::new(&module, &bundle, 7)?;
                let mut n = 0;
                for (_, g) in module.graphs.iter() {
                    n += both.run(&g.name, 2)?;
                    graphs += 1;
                }
                for (total, seen) in fma.iter_mut().zip(both.fma_matched) {
                    *total += seen;
                }
                if both.fma_matched[..2] != [0, 0] {
                    eprintln!("  fma: {:?} memory objects matched [once only, twice only]", &both.fma_matched[..2]);
                }
                Ok(n)
            });
            match result {
                Ok(n) => {
                    compared += n;
                    eprintln!("{what}: {n} comparisons in {:.2?}", t.elapsed());
                }
                Err(e) => failures.push(format!("{what}: {e}")),
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    assert!(graphs >= 16, "graphs run: {graphs}");
    eprintln!("{graphs} graphs, {compared} memory objects compared");
    eprintln!("fma: {} matched rounding once only, {} twice only, {} either", fma[0], fma[1], fma[2]);
    // A device rounds fma one way: no example may need the other.
    assert!(fma[0] == 0 || fma[1] == 0, "fma rounded once for {} objects and twice for {}", fma[0], fma[1]);
}
