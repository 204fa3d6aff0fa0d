//! External SPIR-V kernels: `external::load` accepts examples/kernels/scale.spv for its
//! signature and packs it as the ABI says, and rejects each kind of mismatch with a
//! diagnostic at the kernel (or the launch) whose text says what the module has and what
//! the IR declares. Broken modules are made from scale.spvasm by text edits and assembled
//! with spirv-as.

use cmdgraph_codegen::external::{load, reflect};
use cmdgraph_ir::bundle::{ArgFieldKind, MemorySlot};
use cmdgraph_ir::diag::{render_all, Diagnostic};
use std::path::Path;
use std::process::Command;

/// A fresh directory under cargo's scratch space for the test at `line`.
fn scratch(line: u32) -> Scratch {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("external-{line}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    Scratch(dir)
}

struct Scratch(std::path::PathBuf);

impl Scratch {
    fn path(&self) -> &Path {
        &self.0
    }
}

const SIGNATURE: &str = "%x: buf<f32, read>, %y: buf<f32, write>, %a: f32";

fn asm_source() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/kernels/scale.spvasm")).expect("spvasm")
}

/// Assembles `text` to `dir/k.spv`.
fn assemble(dir: &Path, text: &str) {
    std::fs::write(dir.join("k.spvasm"), text).expect("write");
    let out = Command::new("spirv-as")
        .args(["--target-env", "vulkan1.3", "-o"])
        .arg(dir.join("k.spv"))
        .arg(dir.join("k.spvasm"))
        .output()
        .expect("spirv-as runs");
    assert!(out.status.success(), "spirv-as: {}", String::from_utf8_lossy(&out.stderr));
}

/// A module launching `@scale(signature)` from `k.spv` with entry `entry` and `launch`.
fn module_text(signature: &str, entry: &str, launch: &str) -> String {
    format!(
        "kernel @scale({signature}) spirv \"k.spv\" entry \"{entry}\"\n\n\
         usm @x : f32[1024]\nusm @y : f32[1024]\nusm @w : f32[1024]\n\n\
         graph @g {{\n  %n = kernel @scale {launch} args({})\n}}\n",
        if signature.contains("%w") { "@x, @y, 2.0, @w" } else { "@x, @y, 2.0" }
    )
}

/// Loads the external kernels of `text` from `dir`; the rendered diagnostics on failure.
fn run(dir: &Path, text: &str) -> Result<cmdgraph_codegen::external::Externals, (Vec<Diagnostic>, String)> {
    let module = cmdgraph_ir::text::parse(text).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
    load(&module, dir).map_err(|d| {
        let rendered = render_all(&d, "m.cgir", text);
        (d, rendered)
    })
}

/// Expects rejection with `code` and every piece of `expect` in the rendered diagnostics.
fn rejected(dir: &Path, text: &str, code: &str, expect: &[&str]) -> String {
    let (d, rendered) = run(dir, text).err().unwrap_or_else(|| panic!("accepted:\n{text}"));
    assert!(d.iter().any(|d| d.code == code), "expected {code}:\n{rendered}");
    for e in expect {
        assert!(rendered.contains(e), "missing `{e}` in:\n{rendered}");
    }
    // Located at the kernel (line 1) or the launch (line 8), with a help line.
    assert!(rendered.contains("m.cgir:1:1") || rendered.contains("m.cgir:8:3"), "{rendered}");
    assert!(rendered.contains("= help:"), "{rendered}");
    rendered
}

#[test]
fn the_example_module_is_accepted_and_packed_as_the_abi_says() {
    let dir = scratch(line!());
    assemble(dir.path(), &asm_source());
    let ext = run(dir.path(), &module_text(SIGNATURE, "main", "range(1000)")).expect("accepted");
    let k = ext.get("scale").expect("packed");
    assert_eq!(k.entry, "main");
    assert_eq!(k.workgroup_size, [64, 1, 1]);
    assert_eq!(k.items_per_invocation, 1);
    let bytes = std::fs::read(dir.path().join("k.spv")).expect("spv");
    assert_eq!(k.spirv, reflect::words_of(&bytes).expect("words"), "the words are the file's");
    let offsets: Vec<u32> = k.layout.fields.iter().map(|f| f.offset).collect();
    assert_eq!(offsets, vec![32, 40, 48]);
    assert_eq!(k.layout.block_size, 64);
    assert!(matches!(k.layout.fields[2].kind, ArgFieldKind::Value { bytes: 4 }));
    assert_eq!(
        k.layout.slots,
        vec![MemorySlot::Param { param: 0, writes: false }, MemorySlot::Param { param: 1, writes: true }]
    );
    // An nd_range launch with the module's work-group size is fine too.
    run(dir.path(), &module_text(SIGNATURE, "main", "nd_range(global(1024), local(64))")).expect("accepted");
}

#[test]
fn a_missing_file_is_reported_at_the_kernel() {
    let dir = scratch(line!());
    rejected(
        dir.path(),
        &module_text(SIGNATURE, "main", "range(8)"),
        "E0501",
        &["cannot read \"k.spv\"", "relative to the .cgir file"],
    );
}

#[test]
fn a_truncated_or_garbage_file_is_not_spirv() {
    let dir = scratch(line!());
    assemble(dir.path(), &asm_source());
    let bytes = std::fs::read(dir.path().join("k.spv")).expect("spv");
    let text = module_text(SIGNATURE, "main", "range(8)");
    std::fs::write(dir.path().join("k.spv"), &bytes[..bytes.len() - 12]).expect("write");
    rejected(dir.path(), &text, "E0502", &["is not a SPIR-V module", "runs past the end", "truncated?"]);
    std::fs::write(dir.path().join("k.spv"), &bytes[..bytes.len() - 3]).expect("write");
    rejected(dir.path(), &text, "E0502", &["not a whole number of 32-bit words"]);
    std::fs::write(dir.path().join("k.spv"), b"not spir-v at all").expect("write");
    rejected(dir.path(), &text, "E0502", &["not a whole number"]);
    // Every prefix, and garbage words in every position: never a panic, always E0502 or E0503.
    for cut in (0..bytes.len()).step_by(4) {
        std::fs::write(dir.path().join("k.spv"), &bytes[..cut]).expect("write");
        let err = run(dir.path(), &text).expect_err("a prefix is rejected");
        assert!(err.0.iter().all(|d| d.code == "E0502"), "{}", err.1);
    }
}

#[test]
fn spirv_val_failures_are_reported_with_its_message() {
    let dir = scratch(line!());
    // Structurally fine words that spirv-val rejects: the selection merge is dropped.
    assemble(dir.path(), &asm_source().replace("               OpSelectionMerge %end None\n", ""));
    rejected(
        dir.path(),
        &module_text(SIGNATURE, "main", "range(8)"),
        "E0502",
        &["does not pass spirv-val --target-env vulkan1.3"],
    );
}

#[test]
fn a_missing_entry_point_names_the_ones_there_are() {
    let dir = scratch(line!());
    assemble(dir.path(), &asm_source());
    rejected(
        dir.path(),
        &module_text(SIGNATURE, "scale", "range(8)"),
        "E0503",
        &[
            "no GLCompute entry point named `scale`",
            "the module has `main` (GLCompute); the IR declares entry \"scale\"",
        ],
    );
}

#[test]
fn a_buffer_parameter_without_a_binding_is_an_error() {
    let dir = scratch(line!());
    assemble(dir.path(), &asm_source());
    let sig = format!("{SIGNATURE}, %w: buf<f32, read>");
    rejected(
        dir.path(),
        &module_text(&sig, "main", "range(8)"),
        "E0503",
        &["the module has no binding 3 for %w: buf<f32, read>", "the IR declares 3 buffer parameters, bound at 1 to 3"],
    );
}

#[test]
fn a_binding_without_a_parameter_is_an_error() {
    let dir = scratch(line!());
    let extra = asm_source()
        .replace("OpName %ybuf \"y\"\n", "OpName %ybuf \"y\"\n               OpName %zbuf \"z\"\n")
        .replace(
            "OpDecorate %ybuf Binding 2\n",
            "OpDecorate %ybuf Binding 2\n               OpDecorate %zbuf DescriptorSet 0\n               OpDecorate %zbuf Binding 3\n",
        )
        .replace(
            "%ybuf = OpVariable %ptr_buf StorageBuffer\n",
            "%ybuf = OpVariable %ptr_buf StorageBuffer\n       %zbuf = OpVariable %ptr_buf StorageBuffer\n",
        )
        .replace("%xbuf %ybuf\n", "%xbuf %ybuf %zbuf\n");
    assemble(dir.path(), &extra);
    rejected(
        dir.path(),
        &module_text(SIGNATURE, "main", "range(8)"),
        "E0503",
        &["binding 3 (`z`) has no parameter", "the IR declares 2 buffer parameters (bindings 1 to 2)"],
    );
}

#[test]
fn a_wrong_element_type_names_both_types() {
    let dir = scratch(line!());
    assemble(dir.path(), &asm_source());
    rejected(
        dir.path(),
        &module_text("%x: buf<i32, read>, %y: buf<f32, write>, %a: f32", "main", "range(8)"),
        "E0503",
        &["binding 1 (`x`) holds float32, the IR declares i32", "the IR declares %x: buf<i32, read>"],
    );
    // A value parameter read with another type: %a is an i32 in the IR, a float in the module.
    rejected(
        dir.path(),
        &module_text("%x: buf<f32, read>, %y: buf<f32, write>, %a: i32", "main", "range(8)"),
        "E0503",
        &["argument-block member 3 (float32 at offset 48) reads %a: i32 as float32", "%a: i32 at byte 48"],
    );
}

#[test]
fn writes_to_a_read_buffer_are_an_error() {
    let dir = scratch(line!());
    // The module also stores the result into %x (and no longer declares it NonWritable).
    let writes = asm_source().replace("               OpDecorate %xbuf NonWritable\n", "").replace(
        "               OpStore %y_p %r\n",
        "               OpStore %y_p %r\n               OpStore %x_p %r\n",
    );
    assemble(dir.path(), &writes);
    rejected(
        dir.path(),
        &module_text(SIGNATURE, "main", "range(8)"),
        "E0503",
        &["the module writes binding 1 (`x`), a read-only parameter", "the IR declares %x: buf<f32, read>"],
    );
    // The other way round: the IR writes a buffer the module declares NonWritable.
    assemble(dir.path(), &asm_source());
    rejected(
        dir.path(),
        &module_text("%x: buf<f32, read_write>, %y: buf<f32, write>, %a: f32", "main", "range(8)"),
        "E0503",
        &["binding 1 (`x`) is NonWritable but the IR says the kernel writes it"],
    );
}

#[test]
fn push_constants_and_other_sets_are_refused() {
    let dir = scratch(line!());
    let set1 = asm_source().replace("OpDecorate %ybuf DescriptorSet 0", "OpDecorate %ybuf DescriptorSet 1");
    assemble(dir.path(), &set1);
    rejected(
        dir.path(),
        &module_text(SIGNATURE, "main", "range(8)"),
        "E0503",
        &["binding 2 (`y`) is in set 1", "the executor binds set 0 only"],
    );
}

#[test]
fn an_nd_range_with_another_local_size_is_an_error_at_the_launch() {
    let dir = scratch(line!());
    assemble(dir.path(), &asm_source());
    let r = rejected(
        dir.path(),
        &module_text(SIGNATURE, "main", "nd_range(global(1024), local(128))"),
        "E0504",
        &["runs with work-group size (128, 1, 1), its module's LocalSize is (64, 1, 1)", "launch it with local(64)"],
    );
    assert!(r.contains("m.cgir:8:3"), "{r}");
}

/// scale.spvasm with its work-group size as `OpExecutionModeId LocalSizeId` of constants
/// (what glslang emits for `--target-env vulkan1.3`), the x size defined by `x_def`.
fn local_size_id_source(x_def: &str) -> String {
    asm_source()
        .replace(
            "OpExecutionMode %main LocalSize 64 1 1",
            "OpExecutionModeId %main LocalSizeId %uint_64 %uint_1 %uint_1",
        )
        .replace("     %uint_0 = OpConstant %uint 0", &format!("%uint_64 = {x_def}\n%uint_0 = OpConstant %uint 0"))
}

#[test]
fn local_size_id_of_constants_is_the_work_group_size() {
    let dir = scratch(line!());
    assemble(dir.path(), &local_size_id_source("OpConstant %uint 64"));
    let words = reflect::words_of(&std::fs::read(dir.path().join("k.spv")).expect("spv")).expect("words");
    let r = reflect::reflect(&words).expect("reflects");
    let e = &r.entry_points[0];
    assert_eq!(e.local_size, None);
    assert_eq!(e.local_size_id, Some([64, 1, 1].map(reflect::SizeOperand::Constant)));
    let ext = run(dir.path(), &module_text(SIGNATURE, "main", "nd_range(global(1024), local(64))")).expect("accepted");
    assert_eq!(ext.get("scale").expect("packed").workgroup_size, [64, 1, 1]);
    // And a launch at another size is refused against it, as for LocalSize.
    rejected(
        dir.path(),
        &module_text(SIGNATURE, "main", "nd_range(global(1024), local(32))"),
        "E0504",
        &["its module's LocalSize is (64, 1, 1)"],
    );
}

#[test]
fn local_size_id_of_a_specialization_constant_is_refused_naming_it() {
    let dir = scratch(line!());
    assemble(dir.path(), &local_size_id_source("OpSpecConstant %uint 64"));
    rejected(
        dir.path(),
        &module_text(SIGNATURE, "main", "range(1000)"),
        "E0503",
        &["LocalSizeId operand 0 is %", "a specialization constant (default 64)", "not `local_size_x_id`"],
    );
}
