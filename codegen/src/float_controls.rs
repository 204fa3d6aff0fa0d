//! `SignedZeroInfNanPreserve` on every kernel's entry point, in the emitted SPIR-V words.
//!
//! Without it Vulkan lets a driver ignore the sign of zero and assume no infinity or NaN
//! (llvmpipe turned `-0.0` results into `+0.0`), while the kernel language has IEEE
//! semantics (docs/ir.md) and the interpreter keeps them. The mode needs SPIR-V 1.4 (the
//! backend emits 1.6) and the device property `shaderSignedZeroInfNanPreserveFloat32`
//! (`…Float16` for kernels using `f16`), which is not a feature to enable.

const OP_CAPABILITY: u32 = 17;
const OP_ENTRY_POINT: u32 = 15;
const OP_EXECUTION_MODE: u32 = 16;
const CAP_FLOAT16: u32 = 9;
const CAP_SIGNED_ZERO_INF_NAN_PRESERVE: u32 = 4466;
const MODE_SIGNED_ZERO_INF_NAN_PRESERVE: u32 = 4461;
const HEADER_WORDS: usize = 5;

/// The words with the capability and the execution mode (32-bit floats, and 16-bit when
/// the module declares `Float16`) added to the entry point; unchanged if malformed.
pub(crate) fn preserve_signed_zero_inf_nan(words: &[u32]) -> Vec<u32> {
    let mut insts = Vec::new();
    let mut at = HEADER_WORDS;
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        if count == 0 || at + count > words.len() {
            return words.to_vec();
        }
        insts.push((at, words[at] & 0xffff, count));
        at += count;
    }
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
