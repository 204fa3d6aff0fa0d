//! GLSL and HLSL compute shaders as external kernels (issue 30, item 2).
//!
//! With the argument block: examples/kernels/gather.comp,
//! whose declarations are `cmdgraph abi`'s output pasted verbatim, compiled at test time by
//! `glslangValidator -V --target-env vulkan1.3` (so its work-group size is `LocalSizeId`),
//! checked and packed as `cmdgraph compile` does, and run on the default device with
//! validation on against its kernel-language twin (gather.twin.cgir) on the reference
//! interpreter; every output byte must match.
//!
//! With ordinary bindings (`spirv ... bindings`, docs/abi.md "Ordinary bindings"):
//! saxpy_push.comp (push constants) compiled by glslc for Vulkan 1.3 and for Vulkan 1.0 (SPIR-V
//! 1.0: BufferBlock storage buffers) and by glslangValidator, saxpy_push.hlsl (HLSL through
//! glslang), affine_uniform.comp (a uniform block, buffers in three sets out of order), each
//! against its kernel-language twin with pointers into the middle of allocations and scalar and
//! pointer updates; buffer lengths seen by the shader; every interface mismatch a located
//! error. glslang-tools and glslc are installed by scripts/setup.sh.

mod support;

use cmdgraph_codegen::bundle::compile_module;
use cmdgraph_codegen::bundle::Llvm;
use cmdgraph_codegen::external::{self, WithExternal};
use cmdgraph_codegen::Options;
use cmdgraph_ir::{ArgValue, LitValue, Literal, Pointer, ScalarType};
use std::path::{Path, PathBuf};
use std::process::Command;
use support::{passes, Both, Update};

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

/// Runs `tool` with `args` (the shader paths absolute), asserting it succeeds.
fn tool(tool: &str, args: &[&str]) {
    let run = Command::new(tool)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{tool}: {e} (install glslang-tools and glslc: scripts/setup.sh)"));
    assert!(
        run.status.success(),
        "{tool} {args:?}:\n{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
}

fn example(name: &str) -> String {
    kernels().join(name).to_string_lossy().into_owned()
}

const SAXPY: &str = "%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32, %n: u32";

/// y = a * x + y twice: through a dynamic pointer and a dynamic scalar over 1000 elements
/// (not a multiple of the work-group size), then through pointers 400 and 600 elements in
/// over 400 of them.
fn saxpy_graphs() -> &'static str {
    "usm @x : f32[1024]\nusm @y : f32[1024]\n\n\
     graph @g properties(updatable) {\n  \
     dyn %a = 1.5 : f32\n  \
     dyn %src = @x\n  \
     %k0 = kernel @saxpy range(1000) args(%src, @y, %a, 1000)\n  \
     %k1 = kernel @saxpy nd_range(global(448), local(64)) args(@x + 1600, @y + 2400, -0.75, 400) after(%k0)\n\
     }\n"
}

/// Compiles `text` (the shader in `dir`) as `cmdgraph compile` does, runs it on Vulkan and
/// `twin` on the interpreter: once, then twice more after moving `%src` 16 elements on and
/// changing `%a` (when the graph has them). Returns the objects compared.
fn against_twin(text: &str, twin: &str, dir: &Path, seed: u64) -> usize {
    let module = cmdgraph_ir::text::parse(text).unwrap_or_else(|d| panic!("{d:?}"));
    let ext = external::load(&module, dir)
        .unwrap_or_else(|d| panic!("{}", cmdgraph_ir::diag::render_all(&d, "m.cgir", text)));
    let twin = cmdgraph_ir::text::parse(twin).unwrap_or_else(|d| panic!("twin: {d:?}"));
    let g = twin.graphs.iter().next().expect("a graph").1;
    let mut updates = Vec::new();
    for (_, p) in g.dyn_params.iter() {
        match &p.value {
            ArgValue::Pointer(ptr) => {
                updates.push(Update::Param(p.name.clone(), ArgValue::Pointer(Pointer { base: ptr.base, offset: 64 })))
            }
            ArgValue::Scalar(_) => updates.push(Update::Param(
                p.name.clone(),
                ArgValue::Scalar(Literal { value: LitValue::Float(-2.384_185_8), ty: Some(ScalarType::F32) }),
            )),
            _ => {}
        }
    }
    let mut compared = 0;
    for pipeline in [None, Some("")] {
        let compiler = WithExternal { inner: &Llvm, external: &ext };
        let (bundle, _) = compile_module(&module, &passes(pipeline), &Options::default(), &compiler)
            .unwrap_or_else(|e| panic!("compile: {e}"));
        let bytes = bundle.to_bytes().expect("bundle bytes");
        let mut both = Both::new(&twin, &bytes, seed).unwrap_or_else(|e| panic!("{e}"));
        compared += both.run_updated("g", 3, &updates).unwrap_or_else(|e| panic!("pipeline {pipeline:?}: {e}"));
    }
    compared
}

fn saxpy_twin() -> String {
    let twin = std::fs::read_to_string(kernels().join("saxpy_push.twin.cgir")).expect("twin");
    format!("{twin}\n{}", saxpy_graphs())
}

#[test]
fn push_constant_glsl_from_glslc_and_glslang_matches_its_twin() {
    let dir = scratch(line!());
    let spv = dir.join("saxpy.spv").to_string_lossy().into_owned();
    let src = example("saxpy_push.comp");
    let compilers: [(&str, Vec<&str>); 3] = [
        ("glslc", vec!["--target-env=vulkan1.3", &src, "-o", &spv]),
        // Vulkan 1.0: SPIR-V 1.0, storage buffers as Uniform BufferBlocks.
        ("glslc", vec![&src, "-o", &spv]),
        ("glslangValidator", vec!["-V", "--target-env", "vulkan1.3", &src, "-o", &spv]),
    ];
    for (i, (compiler, args)) in compilers.iter().enumerate() {
        tool(compiler, args);
        let text = format!("kernel @saxpy({SAXPY}) spirv \"saxpy.spv\" entry \"main\" bindings\n\n{}", saxpy_graphs());
        // @x and @y after each of 3 runs, with two pipelines.
        assert_eq!(against_twin(&text, &saxpy_twin(), &dir, 20 + i as u64), 12, "{compiler} {args:?}");
    }
}

#[test]
fn push_constant_hlsl_through_glslang_matches_its_twin() {
    let dir = scratch(line!());
    let spv = dir.join("saxpy.spv").to_string_lossy().into_owned();
    let src = example("saxpy_push.hlsl");
    tool("glslangValidator", &["-D", "-V", "-e", "main", "-S", "comp", "--target-env", "vulkan1.1", &src, "-o", &spv]);
    let text = format!("kernel @saxpy({SAXPY}) spirv \"saxpy.spv\" entry \"main\" bindings\n\n{}", saxpy_graphs());
    assert_eq!(against_twin(&text, &saxpy_twin(), &dir, 31), 12);
}

#[test]
fn a_uniform_block_and_buffers_in_three_sets_match_the_twin() {
    let dir = scratch(line!());
    let spv = dir.join("affine.spv").to_string_lossy().into_owned();
    tool("glslc", &["--target-env=vulkan1.3", &example("affine_uniform.comp"), "-o", &spv]);
    let sig = "%in: buf<f32, read>, %out: buf<f32, write>, %a: f32, %b: f32, %n: u32";
    let graphs = "usm @u : f32[700]\nusm @v : f32[700]\n\n\
                  graph @g properties(updatable) {\n  \
                  dyn %b = 0.1 : f32\n  \
                  %k0 = kernel @affine range(650) args(@u + 200, @v, 3.3333333, %b, 600)\n\
                  }\n";
    let text = format!("kernel @affine({sig}) spirv \"affine.spv\" entry \"main\" bindings\n\n{graphs}");
    let twin = std::fs::read_to_string(kernels().join("affine_uniform.twin.cgir")).expect("twin");
    assert_eq!(against_twin(&text, &format!("{twin}\n{graphs}"), &dir, 41), 12);
}

/// The shader sees a buffer's length as the elements from the pointer on (docs/abi.md), and
/// its pointer's element offset added to every index: both read back through `cmdgraph run`.
#[test]
fn lengths_and_offsets_are_the_pointers() {
    let dir = scratch(line!());
    std::fs::write(
        dir.join("lengths.comp"),
        "#version 450\nlayout(local_size_x = 1) in;\n\
         layout(set = 0, binding = 0) readonly buffer A { uint a[]; };\n\
         layout(set = 0, binding = 1) buffer B { uint b[]; };\n\
         void main() { b[0] = uint(a.length()); b[1] = uint(b.length()); b[2] = a[0]; b[3] = a[5]; }\n",
    )
    .expect("write");
    let spv = dir.join("lengths.spv").to_string_lossy().into_owned();
    tool("glslc", &["--target-env=vulkan1.3", &dir.join("lengths.comp").to_string_lossy(), "-o", &spv]);
    std::fs::write(
        dir.join("m.cgir"),
        "kernel @lengths(%a: buf<u32, read>, %b: buf<u32, read_write>) spirv \"lengths.spv\" entry \"main\" bindings\n\
         usm @a : u32[100]\nusm @b : u32[64]\n\
         graph @g {\n  %k = kernel @lengths single_task args(@a + 40, @b + 128)\n}\n",
    )
    .expect("write");
    let a: Vec<u8> = (0..100u32).flat_map(|i| (i * 7 + 3).to_le_bytes()).collect();
    std::fs::write(dir.join("a.bin"), a).expect("write");
    let cmdgraph = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_cmdgraph")).current_dir(&dir).args(args).output().expect("runs");
        assert!(out.status.success(), "cmdgraph {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    cmdgraph(&["compile", "m.cgir", "-o", "m.cgb"]);
    cmdgraph(&["run", "m.cgb", "--validation", "--input", "a=a.bin", "--output", "b=b.bin"]);
    let b: Vec<u32> = std::fs::read(dir.join("b.bin"))
        .expect("output")
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    // @a + 40 bytes is element 10 of 100: 90 elements; @b + 128 bytes is element 32 of 64.
    assert_eq!(&b[32..36], &[90, 32, 10 * 7 + 3, 15 * 7 + 3]);
}

/// Compiles `text` with `cmdgraph compile` in `dir`; returns its exit code and stderr.
fn rejected(dir: &Path, text: &str) -> (Option<i32>, String) {
    std::fs::write(dir.join("bad.cgir"), text).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_cmdgraph"))
        .current_dir(dir)
        .args(["compile", "bad.cgir", "-o", "bad.cgb"])
        .output()
        .expect("runs");
    assert!(!dir.join("bad.cgb").exists(), "nothing written for a rejected module");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn interface_mismatches_are_located_errors() {
    let dir = scratch(line!());
    let spv = dir.join("saxpy.spv").to_string_lossy().into_owned();
    tool("glslc", &["--target-env=vulkan1.3", &example("saxpy_push.comp"), "-o", &spv]);
    std::fs::write(
        dir.join("image.comp"),
        "#version 450\nlayout(local_size_x = 8) in;\n\
         layout(set = 0, binding = 0, r32f) uniform image2D img;\n\
         layout(set = 0, binding = 1) buffer B { float b[]; };\n\
         void main() { b[0] = imageLoad(img, ivec2(0)).x; }\n",
    )
    .expect("write");
    let image = dir.join("image.spv").to_string_lossy().into_owned();
    tool("glslc", &["--target-env=vulkan1.3", &dir.join("image.comp").to_string_lossy(), "-o", &image]);
    let graph =
        "usm @x : XTY[64]\nusm @y : f32[64]\nusm @z : f32[64]\ngraph @g {\n  %k = kernel @k range(64) args(ARGS)\n}\n";
    let cases = [
        (
            "%x: buf<f32, read>, %y: buf<f32, read_write>, %z: buf<f32, read>, %a: f32, %n: u32",
            "@x, @y, @z, 1.0, 64",
            "saxpy.spv",
            "the module binds 2 storage buffers, the IR declares 3 buffer parameters",
        ),
        (
            "%x: buf<f32, read>, %y: buf<f32, read_write>, %a: u32, %n: u32",
            "@x, @y, 1, 64",
            "saxpy.spv",
            "member 0 of `p` is float32, the IR declares %a: u32",
        ),
        (
            "%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32",
            "@x, @y, 1.0",
            "saxpy.spv",
            "have 2 members, the IR declares 1 value parameters",
        ),
        (
            "%x: buf<i32, read>, %y: buf<f32, read_write>, %a: f32, %n: u32",
            "@x, @y, 1.0, 64",
            "saxpy.spv",
            "set 0, binding 0 (`",
        ),
        ("%y: buf<f32, read_write>", "@y", "image.spv", "cannot be bound"),
        ("%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32, %n: u32", "@x, @y, 1.0, 64", "missing.spv", "E0501"),
    ];
    for (sig, args, file, expected) in cases {
        let text = format!(
            "kernel @k({sig}) spirv \"{file}\" entry \"main\" bindings\n{}",
            graph.replace("ARGS", args).replace("XTY", if sig.contains("buf<i32") { "i32" } else { "f32" })
        );
        let (code, stderr) = rejected(&dir, &text);
        assert_eq!(code, Some(1), "{stderr}");
        assert!(stderr.contains(expected), "expected `{expected}` in:\n{stderr}");
        assert!(stderr.contains("bad.cgir:1:"), "located at the kernel:\n{stderr}");
    }
    // A global offset is invisible to an ordinary shader: an error at the launch.
    let text = format!(
        "kernel @saxpy({SAXPY}) spirv \"saxpy.spv\" entry \"main\" bindings\nusm @x : f32[64]\nusm @y : f32[64]\n\
         graph @g {{\n  %k = kernel @saxpy nd_range(global(64), local(64), offset(64)) args(@x, @y, 1.0, 64)\n}}\n"
    );
    let (code, stderr) = rejected(&dir, &text);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("E0504") && stderr.contains("global offset") && stderr.contains("bad.cgir:5:"), "{stderr}");
}

/// What `cmdgraph abi --bindings` and `--lang hlsl` print compiles (with a `main` that uses
/// every declaration) and passes the interface check of `compile`, in both interfaces.
#[test]
fn printed_glsl_and_hlsl_declarations_compile_and_pass_the_check() {
    let dir = scratch(line!());
    let sig =
        "%x: buf<f32, read>, %idx: buf<u32, read>, %y: buf<vec4<f32>, read_write>, %a: f32, %s: u32, %b: bool, %h: f16";
    let glsl_main = "void main() { uint i = gl_GlobalInvocationID.x; if (i >= uint(x.length())) return;\n\
                     y[i] = vec4(x[i] * push.a + float(idx[i] + push.s + push.b) + float(push.h)); }\n";
    let hlsl_main = "[numthreads(64, 1, 1)] void main(uint3 id : SV_DispatchThreadID) { uint i = id.x;\n\
                     if (i >= global_size_x()) return;\n\
                     y[y_offset() + i] = float4(x[x_offset() + i] * a() + float(idx[idx_offset() + i] + s() + (b() ? 1u : 0u)) + h(), 0, 0, 0); }\n";
    let hlsl_bindings_main = "[numthreads(64, 1, 1)] void main(uint3 id : SV_DispatchThreadID) { uint i = id.x;\n\
                              y[i] = float4(x[i] * push.a + float(idx[i] + push.s + push.b) + push.h, 0, 0, 0); }\n";
    // (language, abi flags, main, shader file, compiler command)
    type Case<'a> = (&'a str, &'a [&'a str], &'a str, &'a str, &'a [&'a str]);
    let cases: [Case; 3] = [
        ("glsl", &["--bindings"], glsl_main, "k.comp", &["glslc", "--target-env=vulkan1.3"]),
        (
            "hlsl",
            &[],
            hlsl_main,
            "k.hlsl",
            &["glslangValidator", "-D", "-V", "-e", "main", "-S", "comp", "--target-env", "vulkan1.1"],
        ),
        (
            "hlsl",
            &["--bindings"],
            hlsl_bindings_main,
            "k.hlsl",
            &[
                "glslangValidator",
                "-D",
                "-V",
                "-e",
                "main",
                "-S",
                "comp",
                "--target-env",
                "vulkan1.1",
                "--hlsl-enable-16bit-types",
            ],
        ),
    ];
    for (lang, flags, main, file, compiler) in cases {
        let bindings = if flags.contains(&"--bindings") { " bindings" } else { "" };
        let module = format!(
            "kernel @k({sig}) spirv \"k.spv\" entry \"main\"{bindings}\n\
             usm @x : f32[100]\nusm @i : u32[100]\nusm @y : vec4<f32>[100]\n\
             graph @g {{\n  %k = kernel @k range(100) args(@x, @i, @y, 1.5, 2, true, 0.5)\n}}\n"
        );
        std::fs::write(dir.join("m.cgir"), &module).expect("write");
        let out = Command::new(env!("CARGO_BIN_EXE_cmdgraph"))
            .current_dir(&dir)
            .args(["abi", "m.cgir", "--kernel", "k", "--lang", lang])
            .args(flags)
            .output()
            .expect("runs");
        assert!(out.status.success(), "abi {lang} {flags:?}: {}", String::from_utf8_lossy(&out.stderr));
        let decls = String::from_utf8(out.stdout).expect("utf-8");
        std::fs::write(dir.join(file), format!("{decls}\n{main}")).expect("write");
        let (tool_name, args) = compiler.split_first().expect("a compiler");
        let mut args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        args.extend([
            dir.join(file).to_string_lossy().into_owned(),
            "-o".into(),
            dir.join("k.spv").to_string_lossy().into_owned(),
        ]);
        tool(tool_name, &args.iter().map(String::as_str).collect::<Vec<_>>());
        let out = Command::new(env!("CARGO_BIN_EXE_cmdgraph"))
            .current_dir(&dir)
            .args(["compile", "m.cgir", "-o", "m.cgb"])
            .output()
            .expect("runs");
        assert!(out.status.success(), "{lang} {flags:?}:\n{decls}\n{}", String::from_utf8_lossy(&out.stderr));
    }
}
