//! A GLSL compute shader as an external kernel (issue 30, item 2): examples/kernels/gather.comp,
//! whose declarations are `cmdgraph abi`'s output pasted verbatim, compiled at test time by
//! `glslangValidator -V --target-env vulkan1.3` (so its work-group size is `LocalSizeId`),
//! checked and packed as `cmdgraph compile` does, and run on the default device with
//! validation on against its kernel-language twin (gather.twin.cgir) on the reference
//! interpreter; every output byte must match. glslang-tools is installed by scripts/setup.sh.

mod support;

use cmdgraph_codegen::bundle::compile_module;
use cmdgraph_codegen::bundle::Llvm;
use cmdgraph_codegen::external::{self, WithExternal};
use cmdgraph_codegen::Options;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::{passes, Both};

const SIGNATURE: &str = "%x: buf<f32, read>, %idx: buf<u32, read>, %y: buf<vec4<f32>, read_write>, %a: f32, %s: u32";

fn kernels() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/kernels")
}

/// A scratch directory for the test at `line`.
fn scratch(line: u32) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("vulkan-glsl-{line}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// The graphs: a whole-range launch, then an `nd_range` one at the shader's work-group size
/// through pointers 400 elements in.
fn graphs() -> &'static str {
    "usm @x : f32[1024]\nusm @idx : u32[1000]\nusm @y : vec4<f32>[1000]\n\n\
     graph @g {\n  \
     %k0 = kernel @gather range(1000) args(@x, @idx, @y, 1.7182817, 5)\n  \
     %k1 = kernel @gather nd_range(global(576), local(64)) args(@x, @idx + 1600, @y + 6400, -0.31830987, 77) after(%k0)\n\
     }\n"
}

/// Compiles gather.comp into `dir/gather.spv` with glslang for Vulkan 1.3.
fn glslang(dir: &Path) -> Vec<u32> {
    let out = dir.join("gather.spv");
    let run = Command::new("glslangValidator")
        .args(["-V", "--target-env", "vulkan1.3", "-o"])
        .arg(&out)
        .arg(kernels().join("gather.comp"))
        .output()
        .unwrap_or_else(|e| panic!("glslangValidator: {e} (install glslang-tools: scripts/setup.sh)"));
    assert!(run.status.success(), "glslangValidator:\n{}", String::from_utf8_lossy(&run.stdout));
    external::reflect::words_of(&std::fs::read(&out).expect("spv")).expect("words")
}

#[test]
fn the_pasted_declarations_are_what_cmdgraph_abi_prints() {
    let dir = scratch(line!());
    let module = dir.join("m.cgir");
    std::fs::write(&module, format!("kernel @gather({SIGNATURE}) spirv \"gather.spv\" entry \"main\"\n"))
        .expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_cmdgraph"))
        .args(["abi", "--kernel", "gather"])
        .arg(&module)
        .output()
        .expect("cmdgraph runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed = String::from_utf8(out.stdout).expect("utf-8");
    let comp = std::fs::read_to_string(kernels().join("gather.comp")).expect("gather.comp");
    assert!(comp.contains(&printed), "gather.comp no longer holds `cmdgraph abi`'s output:\n{printed}");
}

#[test]
fn a_glsl_kernel_compiled_for_vulkan_1_3_matches_its_twin_bit_for_bit() {
    let dir = scratch(line!());
    let words = glslang(&dir);
    // glslang's Vulkan 1.3 output: OpExecutionModeId (331) %main LocalSizeId (38), no LocalSize.
    let mut at = 5;
    let (mut size_id, mut size) = (false, false);
    while at < words.len() {
        let (count, opcode) = ((words[at] >> 16) as usize, words[at] & 0xffff);
        size_id |= opcode == 331 && words.get(at + 2) == Some(&38);
        size |= opcode == 16 && words.get(at + 2) == Some(&17);
        at += count.max(1);
    }
    assert!(size_id && !size, "glslang did not declare the work-group size with LocalSizeId");

    let text = format!("kernel @gather({SIGNATURE}) spirv \"gather.spv\" entry \"main\"\n\n{}", graphs());
    let module = cmdgraph_ir::text::parse(&text).unwrap_or_else(|d| panic!("{d:?}"));
    let ext = external::load(&module, &dir)
        .unwrap_or_else(|d| panic!("{}", cmdgraph_ir::diag::render_all(&d, "m.cgir", &text)));
    assert_eq!(ext.get("gather").expect("packed").workgroup_size, [64, 1, 1]);
    let twin_kernel = std::fs::read_to_string(kernels().join("gather.twin.cgir")).expect("twin");
    let twin = cmdgraph_ir::text::parse(&format!("{twin_kernel}\n{}", graphs())).unwrap_or_else(|d| panic!("{d:?}"));
    // The layout the declarations follow is the one codegen gives the twin (field offsets and
    // block size), so the GLSL reads what the executor writes for either kernel.
    let twin_bundle = support::compile(&twin, Some("")).unwrap_or_else(|e| panic!("twin: {e}"));
    let twin_bundle = cmdgraph_ir::bundle::Bundle::from_bytes(&twin_bundle).expect("twin bundle");
    let twin_layout = &twin_bundle.kernels.iter().find(|k| k.kernel == "gather").expect("twin kernel").layout;
    let ext_layout = &ext.get("gather").expect("packed").layout;
    assert_eq!(ext_layout.fields, twin_layout.fields);
    assert_eq!(ext_layout.block_size, twin_layout.block_size);
    for pipeline in [None, Some("")] {
        let compiler = WithExternal { inner: &Llvm, external: &ext };
        let (bundle, _) = compile_module(&module, &passes(pipeline), &Options::default(), &compiler)
            .unwrap_or_else(|e| panic!("compile: {e}"));
        let bytes = bundle.to_bytes().expect("bundle bytes");
        let mut both = Both::new(&twin, &bytes, 11).unwrap_or_else(|e| panic!("{e}"));
        let compared = both.run("g", 2).unwrap_or_else(|e| panic!("pipeline {pipeline:?}: {e}"));
        // @x, @idx and @y, after each of two runs.
        assert_eq!(compared, 6, "pipeline {pipeline:?}");
    }
}
