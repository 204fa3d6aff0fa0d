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
//! compiler's own output is held to (codegen validates every module it writes with the same
//! library), it is continuously fuzzed upstream, and a partial copy would accept what it
//! rejects. The library is built by the `spirv-tools-sys` crate from the SPIRV-Tools source
//! it vendors (about four minutes of C++ on a clean build, on two cores), not taken from
//! Debian's `spirv-tools` package as before: bookworm's 2023.1 predates
//! `SPV_KHR_cooperative_matrix` and refuses its capability, so no cooperative-matrix kernel
//! could pass it. The shim (src/spirv_val.cpp) stays ours: the crate's own wrapper lets a C++
//! exception unwind into Rust.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void, CStr};
// Only for its static library, which the functions below come from.
use spirv_tools_sys as _;

/// `SPV_ENV_VULKAN_1_3` of `spv_target_env` (libspirv.h): Vulkan 1.3, SPIR-V up to 1.6.
const ENV_VULKAN_1_3: c_int = 25;
/// `SPV_SUCCESS` of `spv_result_t`.
const SUCCESS: c_int = 0;

/// Largest module validated, in words (16 Mi words, 64 MiB): a kernel of this project is a
/// few KiB, and the validator preallocates per word (10^8 `OpNop`s, valid SPIR-V, made it
/// throw in its allocation), so a larger module is refused before it reaches the library.
pub const MAX_MODULE_WORDS: usize = 1 << 24;

/// Bytes of the message buffer the shim fills when the validator throws.
const MESSAGE_BYTES: usize = 256;

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
    /// `spvValidateBinary` inside a C++ `try` (src/spirv_val.cpp): an exception becomes a
    /// result code, `*threw` = 1 and its `what()` in `message`, instead of unwinding into Rust.
    fn cmdgraph_spv_validate_binary(
        context: *const c_void,
        words: *const u32,
        num_words: usize,
        diagnostic: *mut *mut Diagnostic,
        threw: *mut c_int,
        message: *mut c_char,
        message_cap: usize,
    ) -> c_int;
    fn spvDiagnosticDestroy(diagnostic: *mut Diagnostic);
    fn spvTargetEnvDescription(env: c_int) -> *const c_char;
}

/// Validates `words` as a SPIR-V module for Vulkan 1.3 (what `spirv-val --target-env
/// vulkan1.3` checks). `Err` holds the validator's message, with the word index of the
/// offending instruction where it gives one. A module over [`MAX_MODULE_WORDS`] is refused
/// without being validated; an exception inside the validator is an `Err` too.
pub fn validate(words: &[u32]) -> Result<(), String> {
    if words.len() > MAX_MODULE_WORDS {
        return Err(format!(
            "the module has {} words, more than the {MAX_MODULE_WORDS} (64 MiB) a kernel variant may have",
            words.len()
        ));
    }
    validate_unbounded(words)
}

/// [`validate`] without the size bound (the tests give the shim a module the validator
/// throws on).
fn validate_unbounded(words: &[u32]) -> Result<(), String> {
    // SAFETY: spvContextCreate takes an enum value and returns an owned context or null.
    let context = unsafe { spvContextCreate(ENV_VULKAN_1_3) };
    if context.is_null() {
        return Err("SPIRV-Tools could not create a Vulkan 1.3 context".into());
    }
    let mut diagnostic: *mut Diagnostic = std::ptr::null_mut();
    let mut threw: c_int = 0;
    let mut thrown = [0 as c_char; MESSAGE_BYTES];
    // SAFETY: `context` is live; `words` is a valid slice for `len` words that the validator
    // only reads; `diagnostic` is a valid out-pointer it may set to an owned diagnostic;
    // `threw` and `thrown` (with its length) are valid for writes, and the shim catches
    // every exception, so none unwinds through this frame.
    let result = unsafe {
        cmdgraph_spv_validate_binary(
            context,
            words.as_ptr(),
            words.len(),
            &mut diagnostic,
            &mut threw,
            thrown.as_mut_ptr(),
            thrown.len(),
        )
    };
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
    if threw != 0 {
        // SAFETY: the shim wrote a nul-terminated string within the buffer's length.
        let what = unsafe { CStr::from_ptr(thrown.as_ptr()) }.to_string_lossy().into_owned();
        return Err(format!(
            "SPIR-V validation (Vulkan 1.3) could not complete: the validator threw ({what}) on a module of {} words",
            words.len()
        ));
    }
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

    /// A valid module (header, `OpCapability Shader`, `OpMemoryModel`) followed by `nops`
    /// `OpNop`s.
    fn nops(nops: usize) -> Vec<u32> {
        let mut w = vec![0x0723_0203, 0x0001_0300, 0, 8, 0, (2 << 16) | 17, 1, (3 << 16) | 14, 0, 1];
        w.resize(w.len() + nops, 1 << 16);
        w
    }

    /// 10^8 `OpNop`s made the validator throw while preallocating (where memory is short),
    /// and the exception aborted the process ("Rust cannot catch foreign exceptions"). Here
    /// this test runs itself again in a child limited to 1 GiB of address space
    /// (`ulimit -v`), where the validator's allocation fails: the child must end normally,
    /// having got an error, not abort.
    #[test]
    fn an_exception_in_the_validator_is_an_error_not_an_abort() {
        const CHILD: &str = "CMDGRAPH_SPIRV_VAL_CHILD";
        if std::env::var_os(CHILD).is_some() {
            let e = validate_unbounded(&nops(100_000_000)).unwrap_err();
            assert!(e.contains("could not complete: the validator threw"), "{e}");
            return;
        }
        let exe = std::env::current_exe().expect("test binary");
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg("ulimit -v 1048576 && exec \"$0\" \"$@\"")
            .arg(exe)
            .args(["--exact", "spirv_val::tests::an_exception_in_the_validator_is_an_error_not_an_abort"])
            .env(CHILD, "1")
            .output()
            .expect("runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "the child failed ({:?}):\n{text}", out.status);
        assert!(text.contains("1 passed"), "{text}");
    }

    /// The size bound refuses such a module before the library sees it; under it, the same
    /// kind of module is judged by the validator itself.
    #[test]
    fn a_module_over_the_size_bound_is_refused_before_validation() {
        let e = validate(&nops(MAX_MODULE_WORDS)).unwrap_err();
        assert!(e.contains("more than the 16777216 (64 MiB)"), "{e}");
        let e = validate(&nops(1000)).unwrap_err();
        assert!(e.contains("SPIR-V validation (Vulkan 1.3):"), "{e}");
    }

    /// The validator knows `SPV_KHR_cooperative_matrix` (Debian's SPIRV-Tools 2023.1 refused
    /// its capability): a valid f16 multiply-add passes, and the same module with the
    /// `OpCooperativeMatrixMulAddKHR`'s A and B operands swapped (a B-use matrix where an
    /// A-use one must be) is refused by the cooperative-matrix rules.
    #[test]
    fn cooperative_matrices_are_validated_by_their_rules() {
        const OP_COOPERATIVE_MATRIX_MUL_ADD: u32 = 4459;
        let words = crate::spirv::cooperative::test_module();
        validate(&words).expect("the cooperative-matrix module is valid");
        let (mul_add, ..) = crate::spirv::instructions(&words)
            .find(|(_, opcode, _)| *opcode == OP_COOPERATIVE_MATRIX_MUL_ADD)
            .expect("the module has a multiply-add");
        let mut bad = words.clone();
        // Words: opcode and count, result type, result, A, B, C.
        bad.swap(mul_add + 3, mul_add + 4);
        let e = validate(&bad).unwrap_err();
        assert!(e.contains("Cooperative matrix type must be A Type"), "{e}");
    }
}
