//! SPIR-V validation in process: SPIRV-Tools' validator (the library `spirv-val` is built
//! from), called through its C API and linked statically by build.rs.
//!
//! The loader's own walk ([`crate::spirv::check_variant`]) checks what the bundle and the
//! pipeline layout say a module must be; this checks that it is valid SPIR-V for Vulkan 1.3
//! at all: every id defined before use and of the right type, structured control flow,
//! decorations, storage classes, the universal limits. Drivers assume both: a module with an
//! operand id of 0 in an `OpAccessChain` (found by the `run_bundle` fuzz target) passes the
//! walk and crashes llvmpipe in `vkCreateComputePipelines`.
//!
//! Why the library and not a Rust reimplementation: the validator is the reference the
//! compiler's own output is held to (`spirv-val --target-env vulkan1.3` on every module it
//! writes), it is continuously fuzzed upstream, and a partial copy would accept what it
//! rejects. Why not the `spirv-tools` crate: it builds SPIRV-Tools from source (minutes of
//! C++ on every clean build) or runs the `spirv-val` binary as a child process; Debian's
//! `spirv-tools` package, which scripts/setup.sh installs for `spirv-val` already, ships
//! the static library.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void, CStr};

/// `SPV_ENV_VULKAN_1_3` of `spv_target_env` (libspirv.h): Vulkan 1.3, SPIR-V up to 1.6.
const ENV_VULKAN_1_3: c_int = 25;
/// `SPV_SUCCESS` of `spv_result_t`.
const SUCCESS: c_int = 0;

/// `spv_position_t`.
#[repr(C)]
struct Position {
    line: usize,
    column: usize,
    index: usize,
}

/// `spv_diagnostic_t`.
#[repr(C)]
struct Diagnostic {
    position: Position,
    error: *mut c_char,
    is_text_source: bool,
}

// Linked by build.rs (the static library and the C++ runtime it needs).
unsafe extern "C" {
    fn spvContextCreate(env: c_int) -> *mut c_void;
    fn spvContextDestroy(context: *mut c_void);
    fn spvValidateBinary(
        context: *const c_void,
        words: *const u32,
        num_words: usize,
        diagnostic: *mut *mut Diagnostic,
    ) -> c_int;
    fn spvDiagnosticDestroy(diagnostic: *mut Diagnostic);
    fn spvTargetEnvDescription(env: c_int) -> *const c_char;
}

/// Validates `words` as a SPIR-V module for Vulkan 1.3 (what `spirv-val --target-env
/// vulkan1.3` checks). `Err` holds the validator's message, with the word index of the
/// offending instruction where it gives one.
pub fn validate(words: &[u32]) -> Result<(), String> {
    // SAFETY: spvContextCreate takes an enum value and returns an owned context or null.
    let context = unsafe { spvContextCreate(ENV_VULKAN_1_3) };
    if context.is_null() {
        return Err("SPIRV-Tools could not create a Vulkan 1.3 context".into());
    }
    let mut diagnostic: *mut Diagnostic = std::ptr::null_mut();
    // SAFETY: `context` is live; `words` is a valid slice for `len` words that the validator
    // only reads; `diagnostic` is a valid out-pointer it may set to an owned diagnostic.
    let result = unsafe { spvValidateBinary(context, words.as_ptr(), words.len(), &mut diagnostic) };
    let message = if diagnostic.is_null() {
        None
    } else {
        // SAFETY: a non-null diagnostic from spvValidateBinary points to a live
        // spv_diagnostic_t whose `error` is null or a nul-terminated string it owns.
        let (text, index) = unsafe {
            let d = &*diagnostic;
            let text =
                if d.error.is_null() { String::new() } else { CStr::from_ptr(d.error).to_string_lossy().into_owned() };
            (text, d.position.index)
        };
        // SAFETY: the diagnostic came from spvValidateBinary and is destroyed once, here.
        unsafe { spvDiagnosticDestroy(diagnostic) };
        Some((text, index))
    };
    // SAFETY: the context came from spvContextCreate and is destroyed once, here.
    unsafe { spvContextDestroy(context) };
    if result == SUCCESS {
        return Ok(());
    }
    Err(match message {
        Some((text, index)) => format!("SPIR-V validation (Vulkan 1.3): {} (word {index})", text.trim_end()),
        None => format!("SPIR-V validation (Vulkan 1.3) failed with result {result}"),
    })
}

/// The validator's description of the environment it checks against (`"SPIR-V 1.6 (under
/// Vulkan 1.3 semantics)"`): a test holds [`ENV_VULKAN_1_3`] to the library's enum.
pub fn environment() -> String {
    // SAFETY: spvTargetEnvDescription returns a static nul-terminated string (or null for an
    // unknown value).
    let text = unsafe { spvTargetEnvDescription(ENV_VULKAN_1_3) };
    if text.is_null() {
        return String::new();
    }
    // SAFETY: non-null: a static nul-terminated string owned by the library.
    unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_is_vulkan_1_3() {
        assert_eq!(environment(), "SPIR-V 1.6 (under Vulkan 1.3 semantics)");
    }

    #[test]
    fn a_header_alone_is_refused_and_garbage_does_not_crash() {
        let header = [0x0723_0203, 0x0001_0300, 0, 8, 0];
        let e = validate(&header).unwrap_err();
        assert!(e.contains("SPIR-V validation"), "{e}");
        assert!(validate(&[]).is_err());
        assert!(validate(&[0xdead_beef; 7]).is_err());
    }
}
