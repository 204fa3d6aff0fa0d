//! `SignedZeroInfNanPreserve` on every kernel's entry point, in the emitted SPIR-V words.
//!
//! Without it Vulkan lets a driver ignore the sign of zero and assume no infinity or NaN
//! (llvmpipe turned `-0.0` results into `+0.0`), while the kernel language has IEEE
//! semantics (docs/ir.md) and the interpreter keeps them. The mode needs SPIR-V 1.4 (the
//! backend emits 1.6) and the device property `shaderSignedZeroInfNanPreserveFloat32`
//! (`…Float16` for kernels using `f16`), which is not a feature to enable.

use crate::spirv_walk::instructions;

const OP_CAPABILITY: u32 = 17;
const OP_ENTRY_POINT: u32 = 15;
const OP_EXECUTION_MODE: u32 = 16;
const CAP_FLOAT16: u32 = 9;
const CAP_SIGNED_ZERO_INF_NAN_PRESERVE: u32 = 4466;
const MODE_SIGNED_ZERO_INF_NAN_PRESERVE: u32 = 4461;

/// The words with the capability and the execution mode (32-bit floats, and 16-bit when
/// the module declares `Float16`) added to the entry point; unchanged if malformed.
pub(crate) fn preserve_signed_zero_inf_nan(words: &[u32]) -> Vec<u32> {
    let Some(insts) = instructions(words) else { return words.to_vec() };
    let caps: Vec<&(usize, u32, usize)> = insts.iter().filter(|i| i.1 == OP_CAPABILITY).collect();
    if caps.iter().any(|&&(s, _, c)| c == 2 && words[s + 1] == CAP_SIGNED_ZERO_INF_NAN_PRESERVE) {
        return words.to_vec();
    }
    let float16 = caps.iter().any(|&&(s, _, c)| c == 2 && words[s + 1] == CAP_FLOAT16);
    let (Some(&&(cap_at, _, cap_len)), Some(&(ep_at, _, _))) =
        (caps.first(), insts.iter().find(|i| i.1 == OP_ENTRY_POINT))
    else {
        return words.to_vec();
    };
    let entry = words[ep_at + 2];
    // After the last execution mode (they follow the entry points).
    let Some(&(mode_at, _, mode_len)) = insts.iter().rev().find(|i| i.1 == OP_EXECUTION_MODE) else {
        return words.to_vec();
    };
    let mut modes = vec![(4 << 16) | OP_EXECUTION_MODE, entry, MODE_SIGNED_ZERO_INF_NAN_PRESERVE, 32];
    if float16 {
        modes.extend_from_slice(&[(4 << 16) | OP_EXECUTION_MODE, entry, MODE_SIGNED_ZERO_INF_NAN_PRESERVE, 16]);
    }
    let mut out = Vec::with_capacity(words.len() + 10);
    out.extend_from_slice(&words[..cap_at + cap_len]);
    out.extend_from_slice(&[(2 << 16) | OP_CAPABILITY, CAP_SIGNED_ZERO_INF_NAN_PRESERVE]);
    out.extend_from_slice(&words[cap_at + cap_len..mode_at + mode_len]);
    out.extend_from_slice(&modes);
    out.extend_from_slice(&words[mode_at + mode_len..]);
    out
}

const OP_DECORATE: u32 = 71;
const OP_EXT_INST: u32 = 12;
const OP_EXT_INST_IMPORT: u32 = 11;
const DECORATION_NO_CONTRACTION: u32 = 42;
const GLSL_FMA: u32 = 50;
/// `OpFAdd`, `OpFSub`, `OpFMul`, `OpFDiv`, `OpVectorTimesScalar`.
const CONTRACTIBLE: [u32; 5] = [129, 131, 133, 136, 142];
/// Opcodes of the sections before the types (SPIR-V 2.4 logical layout): capabilities,
/// extensions, imports, memory model, entry points, execution modes, debug and annotations.
const PREAMBLE: [u32; 22] = [17, 10, 11, 14, 15, 16, 331, 7, 4, 3, 2, 5, 6, 330, 71, 72, 73, 74, 75, 332, 5632, 5633];

/// The words with `NoContraction` on every float add, subtract, multiply, divide and
/// `Fma` result; unchanged if malformed.
///
/// The kernel language rounds `mul` and `add` separately (docs/ir.md) and the interpreter
/// does; Vulkan lets a driver fuse `OpFMul` and `OpFAdd` into one rounding unless the
/// result is decorated `NoContraction`, and NVIDIA's compiler does fuse. On `Fma` the
/// decoration makes every `fma` round the same way (SPIR-V's GLSL.std.450 `Fma`).
pub(crate) fn no_contraction(words: &[u32]) -> Vec<u32> {
    let Some(insts) = instructions(words) else { return words.to_vec() };
    let glsl: Vec<u32> = insts
        .iter()
        .filter(|&&(s, op, c)| op == OP_EXT_INST_IMPORT && c >= 3 && ext_name(&words[s + 2..s + c]) == "GLSL.std.450")
        .map(|&(s, _, _)| words[s + 1])
        .collect();
    let already: std::collections::BTreeSet<u32> = insts
        .iter()
        .filter(|&&(s, op, c)| op == OP_DECORATE && c == 3 && words[s + 2] == DECORATION_NO_CONTRACTION)
        .map(|&(s, _, _)| words[s + 1])
        .collect();
    let mut ids = Vec::new();
    for &(s, op, c) in &insts {
        let fma = op == OP_EXT_INST && c >= 5 && glsl.contains(&words[s + 3]) && words[s + 4] == GLSL_FMA;
        if (CONTRACTIBLE.contains(&op) && c >= 3 || fma) && !already.contains(&words[s + 2]) {
            ids.push(words[s + 2]);
        }
    }
    let Some(&(body_at, _, _)) = insts.iter().find(|i| !PREAMBLE.contains(&i.1)) else {
        return words.to_vec();
    };
    if ids.is_empty() {
        return words.to_vec();
    }
    let mut out = Vec::with_capacity(words.len() + 3 * ids.len());
    out.extend_from_slice(&words[..body_at]);
    for id in ids {
        out.extend_from_slice(&[(3 << 16) | OP_DECORATE, id, DECORATION_NO_CONTRACTION]);
    }
    out.extend_from_slice(&words[body_at..]);
    out
}

/// A literal string operand (nul-terminated, little-endian bytes in words).
fn ext_name(words: &[u32]) -> String {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).take_while(|&b| b != 0).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod no_contraction_tests {
    use super::*;

    /// A module skeleton: header, `OpCapability Shader`, a GLSL import (id 1), one
    /// `OpDecorate`, then a type and the given body instructions.
    fn module(body: &[u32]) -> Vec<u32> {
        let mut w = vec![0x0723_0203, 0x0001_0600, 0, 100, 0];
        w.extend_from_slice(&[(2 << 16) | OP_CAPABILITY, 1]);
        let name = b"GLSL.std.450\0\0\0\0";
        w.push((6 << 16) | OP_EXT_INST_IMPORT);
        w.push(1);
        w.extend(name.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])));
        w.extend_from_slice(&[(3 << 16) | OP_DECORATE, 9, 6]);
        w.extend_from_slice(&[(3 << 16) | 22, 2, 32]); // OpTypeFloat %2 32
        w.extend_from_slice(body);
        w
    }

    #[test]
    fn decorates_float_arithmetic_and_fma_before_the_types() {
        let body = [
            (5 << 16) | 133,
            2,
            10,
            3,
            4, // %10 = OpFMul
            (5 << 16) | 129,
            2,
            11,
            10,
            4, // %11 = OpFAdd
            (5 << 16) | 128,
            2,
            12,
            3,
            4, // %12 = OpIAdd: not a float op
            (8 << 16) | OP_EXT_INST,
            2,
            13,
            1,
            GLSL_FMA,
            3,
            4,
            5, // %13 = Fma
        ];
        let w = module(&body);
        let out = no_contraction(&w);
        assert_eq!(out.len(), w.len() + 9);
        let types_at = w.iter().position(|&x| x == (3 << 16) | 22).unwrap();
        let added = &out[types_at..types_at + 9];
        let ids: Vec<u32> = added.chunks(3).map(|c| c[1]).collect();
        assert_eq!(ids, [10, 11, 13]);
        assert!(added.chunks(3).all(|c| c[0] == (3 << 16) | OP_DECORATE && c[2] == DECORATION_NO_CONTRACTION));
        // Applying it twice changes nothing more.
        assert_eq!(no_contraction(&out), out);
    }

    #[test]
    fn malformed_words_come_back_unchanged() {
        let mut w = module(&[(5 << 16) | 133, 2, 10, 3]);
        assert_eq!(no_contraction(&w), w);
        w.truncate(3);
        assert_eq!(no_contraction(&w), w);
    }
}
