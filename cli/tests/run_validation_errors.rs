//! `cmdgraph run --validation` and a module the driver must not see. Before issue 18 this
//! bundle (an operand id nothing defines) reached the driver: `ERROR_UNKNOWN` was printed and
//! the validation layer's "has not been defined" lost, which is why `run` now prints the
//! layer's messages after an error (`with_layer_messages`, unit-tested in
//! cli/src/cmd/run.rs; the layer's channel itself by executor/tests/sync_validation_control.rs).
//! Now the loader validates SPIR-V in process and the module never reaches Vulkan: the error
//! is the validator's, naming the kernel, and the layer has nothing to say.

#[path = "../../executor/tests/common/mod.rs"]
mod common;

use common::*;
use std::process::Command;

const IR: &str = "
usm @a : f32[256]
usm @out : f32[256]

graph @g {
  %k = kernel @scale range(256) args(@a, @out, 2.0)
}
";

/// SPIR-V opcode of `OpFMul`.
const OP_FMUL: u32 = 133;

/// `words` with the second operand of its `OpFMul` replaced by an id that nothing defines
/// (the old bound, the bound raised past it): well-formed as a word stream, so the loader's
/// structural walk passes; only SPIR-V validation can refuse it.
fn undefined_operand(mut words: Vec<u32>) -> Vec<u32> {
    let fresh = words[3];
    words[3] += 1;
    let mut at = 5;
    while at < words.len() {
        let (count, opcode) = ((words[at] >> 16) as usize, words[at] & 0xffff);
        if opcode == OP_FMUL {
            words[at + 4] = fresh;
            return words;
        }
        at += count;
    }
    panic!("no OpFMul in the kernel");
}

#[test]
fn a_module_with_an_undefined_id_is_refused_by_the_loader_before_vulkan() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = bundle(&format!("{KERNELS_IR}{IR}"), vec![], vec![]);
    let scale = b.kernels.iter_mut().find(|k| k.kernel == "scale").unwrap();
    scale.spirv = undefined_operand(std::mem::take(&mut scale.spirv));
    let path = dir.path().join("undefined_id.cgb");
    std::fs::write(&path, b.to_bytes().unwrap()).unwrap();
    for validation in [false, true] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_cmdgraph"));
        cmd.args(["run", path.to_str().unwrap()]);
        if validation {
            cmd.arg("--validation");
        }
        let o = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{stderr}");
        for part in ["@scale", "SPIR-V validation (Vulkan 1.3)", "has not been defined"] {
            assert!(stderr.contains(part), "validation {validation}: no {part:?} in:\n{stderr}");
        }
        assert!(!stderr.contains("vulkan:"), "a Vulkan call failed, so the module reached the driver:\n{stderr}");
        assert!(!stderr.contains("the validation layer reported"), "{stderr}");
    }
}
