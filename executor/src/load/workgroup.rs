//! How much work-group memory a SPIR-V module declares: the bytes of its `Workgroup`
//! variables, which a pipeline must keep within the device's `maxComputeSharedMemorySize`
//! (Vulkan's "Workgroup" storage limit; beyond it pipeline creation is undefined
//! behaviour). The SPIR-V, not the argument layout, is counted: it is what the driver
//! allocates, and a hostile bundle's layout may say anything. The sizing itself is
//! `spirv::sizes`, shared with the per-invocation bound (`spirv::check_variant`).

use crate::spirv::sizes::{variables, STORAGE_WORKGROUP};

/// The bytes of every `Workgroup` variable of `words`, each rounded up to its alignment, as
/// std430 would lay them out (scalars their width, bools 4 bytes, 3-vectors aligned as
/// 4-vectors, explicit `Offset`/`ArrayStride` decorations taken where they make a type
/// larger). Variables the entry point never uses count too, and aliased blocks
/// (`WorkgroupMemoryExplicitLayoutKHR`) once each, so a driver that packs them allocates
/// no more than this, give or take the padding between variables.
/// An error names a variable whose type cannot be sized (a runtime array, a length that is
/// not a constant) or a total past 64 bits; the words are assumed structurally checked
/// (`spirv::check_variant`), but a malformed module gives an error, never a panic.
pub fn workgroup_bytes(words: &[u32]) -> Result<u64, String> {
    let mut total = 0u64;
    for v in variables(words, &[STORAGE_WORKGROUP])? {
        total = total
            .checked_next_multiple_of(v.align.max(1))
            .and_then(|t| t.checked_add(v.bytes))
            .ok_or_else(|| "its work-group memory passes 2^64 bytes".to_string())?;
    }
    Ok(total)
}
