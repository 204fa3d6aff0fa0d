//! The loader's SPIR-V check (`spirv::check_variant`) takes the work-group size from
//! `OpExecutionModeId LocalSizeId` of `OpConstant`s as from `LocalSize` (glslang's output for
//! `--target-env vulkan1.3`, docs/abi.md "External SPIR-V kernels"), compares it with the
//! bundle's, and refuses an operand that is not a plain constant. Modules are
//! examples/kernels/scale.spvasm edited as text and assembled with spirv-as.

use cmdgraph_executor::spirv::check_variant;
use std::path::Path;
use std::process::Command;

/// scale.spvasm with its size as `LocalSizeId %uint_64 %uint_1 %uint_1`, `%uint_64` defined
/// by `x_def`, assembled (test `line`'s scratch file).
fn module(x_def: &str, line: u32) -> Vec<u32> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/kernels/scale.spvasm"))
        .expect("scale.spvasm")
        .replace(
            "OpExecutionMode %main LocalSize 64 1 1",
            "OpExecutionModeId %main LocalSizeId %uint_64 %uint_1 %uint_1",
        )
        .replace("     %uint_0 = OpConstant %uint 0", &format!("%uint_64 = {x_def}\n%uint_0 = OpConstant %uint 0"));
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let (src, out) = (dir.join(format!("lsid-{line}.spvasm")), dir.join(format!("lsid-{line}.spv")));
    std::fs::write(&src, text).expect("write");
    let status = Command::new("spirv-as")
        .args(["--target-env", "vulkan1.3", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .expect("spirv-as runs");
    assert!(status.success());
    let bytes = std::fs::read(&out).expect("assembled");
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

#[test]
fn local_size_id_of_constants_is_checked_like_local_size() {
    let words = module("OpConstant %uint 64", line!());
    check_variant("scale", &words, "main", [64, 1, 1], Some(3), Some(1)).expect("accepted at (64, 1, 1)");
    let other = check_variant("scale", &words, "main", [32, 1, 1], Some(3), Some(1)).expect_err("another size");
    assert!(other.to_string().contains("the bundle says [32, 1, 1]"), "{other}");
}

#[test]
fn local_size_id_of_a_specialization_constant_is_refused() {
    let words = module("OpSpecConstant %uint 64", line!());
    let e = check_variant("scale", &words, "main", [64, 1, 1], Some(3), Some(1)).expect_err("refused");
    assert!(e.to_string().contains("LocalSizeId operand %") && e.to_string().contains("not an OpConstant"), "{e}");
}
