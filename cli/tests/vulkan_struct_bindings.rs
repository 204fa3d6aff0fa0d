//! Storage buffers of structs through the direct path (`spirv ... bindings`, docs/abi.md
//! "Ordinary bindings"): a GLSL shader whose buffers are arrays of structs (vectors, a fixed
//! array, a nested struct with std430 padding, a struct of u32s) is compiled by
//! glslc and by glslangValidator, rebound (each struct buffer becomes a runtime array of its
//! one scalar type, its access chains word indices) and run on the default Vulkan device with
//! validation on, against the same shader translated into the kernel language
//! (cmdgraph-shader) on the reference interpreter: one signature, the same bytes. A WGSL
//! shader (boids-like vec2 members, webgpu-samples' padded `LightData`, atomics on u32 struct
//! members) takes the same way compiled by naga's SPIR-V back end. Pointers into
//! the middle of allocations and a pointer update check that the element offset is added to
//! the word index. glslang-tools and glslc are installed by scripts/setup.sh.

mod support;

use cmdgraph_codegen::bundle::{compile_module, Llvm};
use cmdgraph_codegen::external::{self, WithExternal};
use cmdgraph_codegen::Options;
use cmdgraph_ir::{ArgValue, Pointer};
use cmdgraph_shader::{translate, Lang};
use std::path::{Path, PathBuf};
use std::process::Command;
use support::{passes, Both, Update};

/// std430: `Light` is 32 bytes (color at 0, radius at 12, dir at 16, 4 bytes of padding),
/// `Particle` 64 (pos 0, vel 8, mass 16 and 20, light at 32 after 8 bytes of padding).
const SHADER: &str = r#"#version 450
layout(local_size_x = 64) in;

struct Light { vec3 color; float radius; vec3 dir; };
struct Particle { vec2 pos; vec2 vel; float mass[2]; Light light; };
struct Bin { uint count; uint top; };

layout(std430, set = 0, binding = 0) buffer Particles { Particle particles[]; };
layout(std430, set = 0, binding = 1) buffer Out { float energy[]; };
layout(std430, set = 0, binding = 2) buffer Bins { Bin bins[]; };
layout(push_constant) uniform Push { uint n; };

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < n) {
        float m = particles[i].mass[0] + particles[i].mass[1];
        vec2 v = particles[i].vel;
        energy[i] = 0.5 * m * dot(v, v) + particles[i].light.radius;
        particles[i].pos += v;
        particles[i].mass[i & 1u] = m;
        particles[i].light.color = particles[i].light.color.zxy * particles[i].light.radius;
        particles[i].light.dir.y = m;
        bins[i].count = bins[i].count * 3u + 1u;
        bins[i].top = m > 0.0 ? i : bins[i].top;
    }
}
"#;

const SIGNATURE: &str =
    "%particles: buf<f32, read_write>, %energy: buf<f32, read_write>, %bins: buf<u32, read_write>, %n: u32";

/// A whole launch over 200 particles (not a multiple of the work-group size), then one through
/// pointers 7 particles and 100 floats in, with the particles as a dynamic pointer.
const GRAPHS: &str = "usm @p : f32[4096]\nusm @e : f32[512]\nusm @b : u32[512]\n\n\
     graph @g properties(updatable) {\n  \
     dyn %src = @p\n  \
     %k0 = kernel @particles range(200) args(%src, @e, @b, 200)\n  \
     %k1 = kernel @particles nd_range(global(128), local(64)) args(@p + 1792, @e + 400, @b + 16, 120) after(%k0)\n\
     }\n";

fn scratch(line: u32) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("vulkan-struct-bindings-{line}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

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

/// Compiles the `bindings` module (kernel `name` of `lang` source `src`, `p.spv` in `dir`) as
/// `cmdgraph compile` does and runs it on Vulkan against the translated twin on the
/// interpreter, three runs each (the dynamic pointer moved 64 bytes on between runs), with and
/// without the default passes; returns the objects compared.
fn against_twin(name: &str, lang: Lang, src: &str, sig: &str, graphs: &str, dir: &Path, seed: u64) -> usize {
    let text = format!("kernel @{name}({sig}) spirv \"p.spv\" entry \"main\" bindings\n\n{graphs}");
    let module = cmdgraph_ir::text::parse(&text).unwrap_or_else(|d| panic!("{d:?}"));
    let ext = external::load(&module, dir)
        .unwrap_or_else(|d| panic!("{}", cmdgraph_ir::diag::render_all(&d, "m.cgir", &text)));
    let translated = translate(lang, src, "main", name).unwrap_or_else(|e| panic!("{e}"));
    assert!(translated.text.starts_with(&format!("kernel @{name}({sig})")), "{}", translated.text);
    let twin_text = format!("{}\n{graphs}", translated.text);
    let twin = cmdgraph_ir::text::parse(&twin_text).unwrap_or_else(|d| panic!("twin: {d:?}\n{twin_text}"));
    let g = twin.graphs.iter().next().expect("a graph").1;
    let updates: Vec<Update> = g
        .dyn_params
        .iter()
        .filter_map(|(_, p)| match &p.value {
            ArgValue::Pointer(ptr) => {
                Some(Update::Param(p.name.clone(), ArgValue::Pointer(Pointer { base: ptr.base, offset: 64 })))
            }
            _ => None,
        })
        .collect();
    assert_eq!(updates.len(), 1);
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

#[test]
fn struct_buffers_from_glslc_and_glslang_match_the_translated_twin() {
    let dir = scratch(line!());
    std::fs::write(dir.join("p.comp"), SHADER).expect("write shader");
    let (src, spv) = (dir.join("p.comp"), dir.join("p.spv"));
    let (src, spv) = (src.to_string_lossy(), spv.to_string_lossy());
    let compilers: [(&str, Vec<&str>); 3] = [
        ("glslc", vec!["--target-env=vulkan1.3", &src, "-o", &spv]),
        // Vulkan 1.0: SPIR-V 1.0, storage buffers as Uniform BufferBlocks.
        ("glslc", vec![&src, "-o", &spv]),
        ("glslangValidator", vec!["-V", "--target-env", "vulkan1.3", &src, "-o", &spv]),
    ];
    for (i, (compiler, args)) in compilers.iter().enumerate() {
        tool(compiler, args);
        // @p, @e and @b after each of 3 runs, with two pipelines.
        let compared = against_twin("particles", Lang::Glsl, SHADER, SIGNATURE, GRAPHS, &dir, 50 + i as u64);
        assert_eq!(compared, 18, "{compiler} {args:?}");
    }
}

/// `Particle { pos, vel: vec2<f32> }` (4 words), `LightData { position: vec4, color: vec3,
/// radius: f32, dir: vec3 }` (12 words, word 11 padding), `Bin { count, top: atomic<u32>,
/// tag: u32 }` (3 words).
const WGSL: &str = r#"
struct Particle { pos: vec2<f32>, vel: vec2<f32> }
struct LightData { position: vec4<f32>, color: vec3<f32>, radius: f32, dir: vec3<f32> }
struct Bin { count: atomic<u32>, top: atomic<u32>, tag: u32 }
struct Params { dt: f32, n: u32 }

@group(0) @binding(0) var<storage, read_write> particles: array<Particle>;
@group(0) @binding(1) var<storage, read_write> lights: array<LightData>;
@group(0) @binding(2) var<storage, read_write> bins: array<Bin, 8>;
@group(0) @binding(3) var<uniform> params: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i < params.n {
        let v = particles[i].vel + particles[i].pos.yx * 0.125;
        particles[i].vel = v;
        particles[i].pos += v * params.dt;
        let l = lights[i].position;
        lights[i].color = lights[i].color.zxy * lights[i].radius + vec3<f32>(l.y);
        lights[i].position.y = lights[i].color[i % 3u];
        lights[i].dir = lights[i].dir * l.z;
        atomicAdd(&bins[i % 8u].count, 1u);
        atomicMax(&bins[i % 8u].top, i);
        if i < 8u {
            bins[i].tag = i * 3u + 1u;
        }
    }
}
"#;

const WGSL_SIGNATURE: &str =
    "%particles: buf<f32, read_write>, %lights: buf<f32, read_write>, %bins: buf<u32, read_write>, %dt: f32, %n: u32";

/// 150 particles (not a multiple of the work-group size), then 60 through pointers into the
/// middle of the allocations, with the lights as a dynamic pointer.
const WGSL_GRAPHS: &str = "usm @p : f32[2048]\nusm @l : f32[4096]\nusm @b : u32[64]\n\n\
     graph @g properties(updatable) {\n  \
     dyn %lights = @l\n  \
     %k0 = kernel @boids range(150) args(@p, %lights, @b, 0.015625, 150)\n  \
     %k1 = kernel @boids nd_range(global(64), local(64)) args(@p + 1024, @l + 2400, @b + 24, 0.03125, 60) after(%k0)\n\
     }\n";

#[test]
fn wgsl_struct_buffers_from_naga_spirv_match_the_translated_twin() {
    let dir = scratch(line!());
    naga_spirv(WGSL, &dir);
    // @p, @l and @b after each of 3 runs, with two pipelines.
    assert_eq!(against_twin("boids", Lang::Wgsl, WGSL, WGSL_SIGNATURE, WGSL_GRAPHS, &dir, 60), 18);
}

/// WGSL `src` compiled by naga's SPIR-V back end (SPIR-V 1.3, entry `main`) into `dir/p.spv`.
fn naga_spirv(src: &str, dir: &Path) {
    let module = naga::front::wgsl::parse_str(src).unwrap_or_else(|e| panic!("{e}"));
    let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
        .validate(&module)
        .unwrap_or_else(|e| panic!("{e:?}"));
    let options = naga::back::spv::Options { lang_version: (1, 3), ..Default::default() };
    let pipeline =
        naga::back::spv::PipelineOptions { shader_stage: naga::ShaderStage::Compute, entry_point: "main".into() };
    let words = naga::back::spv::write_vec(&module, &info, &options, Some(&pipeline)).unwrap_or_else(|e| panic!("{e}"));
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::write(dir.join("p.spv"), bytes).expect("write p.spv");
}

/// `cmdgraph compile` of `text` in `dir`: its exit status and stderr.
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
fn struct_buffers_the_rewrite_cannot_take_are_located_errors() {
    let dir = scratch(line!());
    let cases = [
        // Two scalar types in one struct: no one runtime array stands for it.
        (
            "struct P { vec2 pos; uint id; };\n\
             layout(set = 0, binding = 0) buffer B { P p[]; };\n\
             void main() { p[gl_GlobalInvocationID.x].pos += vec2(1.0); }\n",
            "set 0, binding 0 (`",
            "holds a struct",
        ),
    ];
    for (i, (body, what, why)) in cases.iter().enumerate() {
        let src = dir.join(format!("bad{i}.comp"));
        std::fs::write(&src, format!("#version 450\nlayout(local_size_x = 64) in;\n{body}")).expect("write");
        let spv = format!("bad{i}.spv");
        tool("glslc", &["--target-env=vulkan1.3", &src.to_string_lossy(), "-o", &dir.join(&spv).to_string_lossy()]);
        let text = format!(
            "kernel @k(%p: buf<f32, read_write>) spirv \"{spv}\" entry \"main\" bindings\n\n\
             usm @p : f32[256]\ngraph @g {{\n  %k = kernel @k range(64) args(@p)\n}}\n"
        );
        let (code, err) = rejected(&dir, &text);
        assert_eq!(code, Some(1), "{err}");
        assert!(err.contains("E0503") && err.contains(what) && err.contains(why), "case {i}: {err}");
        // Located at the kernel.
        assert!(err.contains("bad.cgir:1:"), "case {i}: {err}");
    }
    // The length of a runtime array of structs is followed (the words past the array over
    // its stride, as the translator's `arrayLength`): the module compiles.
    let src = dir.join("len.comp");
    let body = "struct P { vec2 pos; vec2 vel; };\n\
                layout(set = 0, binding = 0) buffer B { P p[]; };\n\
                void main() { p[gl_GlobalInvocationID.x].pos = vec2(float(p.length())); }\n";
    std::fs::write(&src, format!("#version 450\nlayout(local_size_x = 64) in;\n{body}")).expect("write");
    tool("glslc", &["--target-env=vulkan1.3", &src.to_string_lossy(), "-o", &dir.join("len.spv").to_string_lossy()]);
    let text = "kernel @k(%p: buf<f32, read_write>) spirv \"len.spv\" entry \"main\" bindings\n\n\
                usm @p : f32[256]\ngraph @g {\n  %k = kernel @k range(64) args(@p)\n}\n";
    std::fs::write(dir.join("len.cgir"), text).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_cmdgraph"))
        .current_dir(&dir)
        .args(["compile", "len.cgir", "-o", "len.cgb"])
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A uniform block with vector members (std140: `lo` at 0, `hi` at 16, `n` at 28 inside
/// `hi`'s 16-byte slot, `scale` at 32): each member is a value parameter of its own type, in
/// the translator and in the rebound module alike.
const WGSL_UNIFORM_VECTORS: &str = r#"
struct Extent { lo: vec4<f32>, hi: vec3<f32>, n: u32, scale: vec2<f32> }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<vec4<f32>>;
@group(0) @binding(2) var<uniform> ext: Extent;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i < ext.n {
        let v = vec4<f32>(x[i]) * ext.lo.wzyx + vec4<f32>(ext.hi, ext.scale.y);
        y[i] = clamp(v, vec4<f32>(ext.lo.x), vec4<f32>(ext.hi.z)) * ext.scale.x + y[i];
    }
}
"#;

/// Little-endian bytes of `lanes` full-precision floats in [-2, 2), as IR raw bytes.
fn raw_f32s(seed: u64, lanes: usize) -> String {
    let mut s = seed;
    let mut hex = String::new();
    for _ in 0..lanes {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let v = (s >> 40) as f32 / (1u64 << 22) as f32 - 2.0;
        hex.extend(v.to_le_bytes().iter().map(|b| format!("{b:02x}")));
    }
    format!("x\"{hex}\"")
}

#[test]
fn a_uniform_block_of_vectors_from_naga_spirv_matches_the_translated_twin() {
    let dir = scratch(line!());
    naga_spirv(WGSL_UNIFORM_VECTORS, &dir);
    let sig = "%x: buf<f32, read>, %y: buf<vec4<f32>, read_write>, %lo: vec4<f32>, %hi: vec3<f32>, %n: u32, \
               %scale: vec2<f32>";
    let graphs = format!(
        "usm @x : f32[512]\nusm @y : vec4<f32>[512]\n\n\
         graph @g properties(updatable) {{\n  \
         dyn %y = @y\n  \
         %k0 = kernel @ext range(150) args(@x, %y, {}, {}, 150, {})\n  \
         %k1 = kernel @ext range(64) args(@x + 400, @y + 1600, {}, {}, 40, {}) after(%k0)\n\
         }}\n",
        raw_f32s(1, 4),
        raw_f32s(2, 4),
        raw_f32s(3, 2),
        raw_f32s(4, 4),
        raw_f32s(5, 4),
        raw_f32s(6, 2),
    );
    // @x and @y after each of 3 runs, with two pipelines.
    assert_eq!(against_twin("ext", Lang::Wgsl, WGSL_UNIFORM_VECTORS, sig, &graphs, &dir, 61), 12);
}

#[test]
fn a_whole_array_copied_from_work_group_memory_by_naga_spirv_is_refused_naming_the_vulkan_rule() {
    // naga 28 writes `lens = sh.lens;` as one `OpStore` of the whole array, so one array type
    // serves work-group and buffer memory and keeps its `ArrayStride`. Vulkan forbids explicit
    // layouts on work-group types (VUID-StandaloneSpirv-None-10684, which SPIRV-Tools enforces
    // since 2025); the external-kernel path removes them only from types that buffer memory does
    // not also reach (codegen/src/external/layouts.rs), so this module is refused, naming the
    // rule, at the kernel. The rest of the file's naga and glslang modules with work-group
    // memory compile and run.
    let src = include_str!("../../shader/tests/shaders/workgroup_struct.wgsl");
    let dir = scratch(line!());
    naga_spirv(src, &dir);
    let sig = "%x: buf<f32, read>, %y: buf<f32, read_write>, %lens: buf<u32, read_write>";
    let text = format!(
        "kernel @shared({sig}) spirv \"p.spv\" entry \"main\" bindings\n\nusm @x : f32[512]\nusm @y : f32[512]\n\
         usm @lens : u32[16]\n\ngraph @g {{\n  %k0 = kernel @shared nd_range(global(192), local(64)) args(@x, @y, @lens)\n}}\n"
    );
    let (code, err) = rejected(&dir, &text);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("E0502") && err.contains("VUID-StandaloneSpirv-None-10684"), "{err}");
    assert!(err.contains("bad.cgir:1:"), "{err}");
    // A work-group array no buffer shares: naga decorates its type with a stride too, which
    // is removed, and the module compiles and runs as its translated twin does.
    let src = include_str!("../../shader/tests/shaders/reduce.wgsl");
    let dir = scratch(line!());
    naga_spirv(src, &dir);
    let words: Vec<u32> = std::fs::read(dir.join("p.spv"))
        .unwrap()
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let strides = words.windows(4).filter(|w| w[0] == (4 << 16) | 71 && w[2] == 6).count();
    assert!(strides >= 1, "naga no longer writes the stride: the test lost its point");
    let sig = "%x: buf<f32, read>, %sums: buf<f32, read_write>";
    let graphs = "usm @x : f32[256]\nusm @sums : f32[64]\n\ngraph @g properties(updatable) {\n  \
         dyn %s = @sums\n  \
         %k = kernel @reduce nd_range(global(256), local(64)) args(@x, %s)\n}\n";
    assert_eq!(against_twin("reduce", Lang::Wgsl, src, sig, graphs, &dir, 63), 12);
}
