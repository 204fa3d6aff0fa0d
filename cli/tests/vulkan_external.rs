//! External SPIR-V kernels on Vulkan: examples/external_kernel.cgir (whose @scale is
//! examples/kernels/scale.spv) compiled as `cmdgraph compile` does and run on the default
//! device with validation on, against the reference interpreter running a twin module whose
//! @scale is the same computation in the kernel language; every output byte must match. Also
//! checks that the checked-in scale.spv is what its .spvasm assembles to.

mod support;

use cmdgraph_codegen::bundle::{compile_module, Llvm};
use cmdgraph_codegen::external::{self, WithExternal};
use cmdgraph_codegen::Options;
use std::path::{Path, PathBuf};
use support::{passes, Both};

const EXTERNAL: &str = r#"spirv "kernels/scale.spv" entry "main""#;
const TWIN_BODY: &str = "{\n  %i = global_id 0\n  %v = load %x[%i]\n  %r = mul %a, %v\n  store %y[%i], %r\n}";

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

/// Compiles `text` (kernel paths relative to examples/) to bundle text with `pipeline`.
fn compile(text: &str, pipeline: Option<&str>) -> Result<Vec<u8>, String> {
    let module = cmdgraph_ir::text::parse(text).map_err(|d| format!("{d:?}"))?;
    let ext = external::load(&module, &examples())
        .map_err(|d| cmdgraph_ir::diag::render_all(&d, "external_kernel.cgir", text))?;
    let compiler = WithExternal { inner: &Llvm, external: &ext };
    let (bundle, _) =
        compile_module(&module, &passes(pipeline), &Options::default(), &compiler).map_err(|e| e.to_string())?;
    bundle.to_bytes().map_err(|e| e.to_string())
}

/// Runs `text` on Vulkan and its twin (the external kernel replaced by `TWIN_BODY`) on the
/// interpreter, every graph twice; returns the objects compared.
fn both_ways(text: &str, pipeline: Option<&str>, seed: u64) -> Result<usize, String> {
    assert!(text.contains(EXTERNAL), "the module uses the external kernel");
    let twin = cmdgraph_ir::text::parse(&text.replace(EXTERNAL, TWIN_BODY)).map_err(|d| format!("twin: {d:?}"))?;
    let bundle = compile(text, pipeline)?;
    let read = cmdgraph_ir::bundle::Bundle::from_bytes(&bundle).map_err(|e| e.to_string())?;
    assert!(read.kernels.iter().any(|k| k.entry == "main"), "the bundle carries the external entry point");
    let mut both = Both::new(&twin, &bundle, seed)?;
    let mut compared = 0;
    for (_, g) in twin.graphs.iter() {
        compared += both.run(&g.name, 2)?;
    }
    Ok(compared)
}

#[test]
fn the_external_kernel_example_matches_its_kernel_language_twin() {
    let text = std::fs::read_to_string(examples().join("external_kernel.cgir")).expect("example");
    for pipeline in [None, Some("")] {
        let compared = both_ways(&text, pipeline, 3).unwrap_or_else(|e| panic!("pipeline {pipeline:?}: {e}"));
        // @x, @y and @z, after each of two runs.
        assert_eq!(compared, 6, "pipeline {pipeline:?}");
    }
}

#[test]
fn nd_range_launches_and_scalar_updates_reach_the_external_kernel() {
    // An nd_range at the module's LocalSize, with an offset-free tail-less range, launched
    // twice with different pointers and scalars.
    let text = format!(
        "kernel @scale(%x: buf<f32, read>, %y: buf<f32, write>, %a: f32) {EXTERNAL}\n\n\
         usm @x : f32[2048]\nusm @y : f32[1024]\nusm @z : f32[1024]\n\n\
         graph @g {{\n  \
         %k0 = kernel @scale nd_range(global(1024), local(64)) args(@x, @y, -2.5)\n  \
         %k1 = kernel @scale range(1000) args(@x + 4096, @z, 0.75)\n}}\n"
    );
    let compared = both_ways(&text, Some(""), 5).expect("matches");
    assert_eq!(compared, 6);
}

#[test]
fn the_checked_in_spv_is_what_its_spvasm_assembles_to() {
    let dir = examples().join("kernels");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("scale-reassembled.spv");
    let status = std::process::Command::new("spirv-as")
        .args(["--target-env", "vulkan1.3", "-o"])
        .arg(&out)
        .arg(dir.join("scale.spvasm"))
        .status()
        .expect("spirv-as runs");
    assert!(status.success());
    let mut built = std::fs::read(&out).expect("assembled");
    let mut committed = std::fs::read(dir.join("scale.spv")).expect("checked in");
    // Word 2 is the generator (the assembler's version); everything else must be equal.
    for bytes in [&mut built, &mut committed] {
        if let Some(w) = bytes.get_mut(8..12) {
            w.fill(0);
        }
    }
    assert!(built == committed, "examples/kernels/scale.spv is stale: reassemble it (see scale.spvasm)");
}
