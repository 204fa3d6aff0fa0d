//! LLVM: the SPIR-V target, the optimization pipeline and emission.
//!
//! The lowering writes textual LLVM IR (see `lower`); this module parses it into an inkwell
//! module, verifies it, runs a curated pass pipeline for the `-O` level, turns any phi or
//! select of pointers the passes formed back into one of indices (legalize.rs: Vulkan's
//! logical addressing has no pointer merges) and asks the SPIR-V backend for a binary. Text is the interface because the Vulkan resource handles
//! are LLVM target-extension types, which inkwell's typed builder cannot represent.
//!
//! Why not `default<On>`: with LLVM 22, InstCombine retypes loads and GEPs through the
//! resource views (`load float` from a `u32` element, `getelementptr float` into a
//! work-group array) and SimplifyCFG reshapes selections, after which the SPIR-V backend
//! crashes (SPIRVLegalizePointerCast) or emits unstructured control flow. The passes below
//! (CSE, GVN, SCCP, ADCE, reassociation, LICM) keep types and the CFG shape. The backend
//! itself always runs at its `-O0` (its codegen-level optimizations break the structurizer
//! the same way); the Vulkan driver optimizes the SPIR-V again anyway.
//!
//! Why emission runs in a child `llc`: the SPIR-V backend keeps its module analysis in a
//! process-wide static (`SPIRVModuleAnalysis::MAI` in LLVM 22) whose entries are keyed by
//! machine-instruction and register addresses. A second module compiled in the same process
//! can find stale entries at reused addresses and emits duplicate result ids ("Id 1 is
//! defined more than once"), depending on the allocation pattern — so it came and went with
//! file-name lengths and thread timing. Parsing, verification and the optimization pipeline
//! stay in-process (inkwell); the optimized IR text goes to a fresh `llc` of the same LLVM 22
//! for every module, which has no state to share. `CMDGRAPH_LLC` overrides the tool's path.

use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{CodeModel, RelocMode, Target, TargetMachine, TargetTriple};
use inkwell::OptimizationLevel;
use std::sync::{Mutex, Once};

/// The Vulkan compute triple the SPIR-V backend understands.
pub(crate) const TRIPLE: &str = "spirv1.6-unknown-vulkan1.3-compute";

/// The SPIR-V backend's data layout for logical Vulkan SPIR-V.
pub(crate) const DATA_LAYOUT: &str =
    "e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-n8:16:32:64-G10";

// SAFETY: these are LLVM's C entry points for registering the SPIR-V target; they take no
// arguments, are linked from the same static LLVM as inkwell, and are called once (below).
#[allow(unsafe_code)]
unsafe extern "C" {
    fn LLVMInitializeSPIRVTargetInfo();
    fn LLVMInitializeSPIRVTarget();
    fn LLVMInitializeSPIRVTargetMC();
    fn LLVMInitializeSPIRVAsmPrinter();
    fn LLVMParseCommandLineOptions(argc: i32, argv: *const *const std::ffi::c_char, overview: *const std::ffi::c_char);
}

/// Backend options: the SPIR-V extensions `f32` atomics need (`atomicrmw fadd/fmin/fmax`).
const BACKEND_ARGS: [&std::ffi::CStr; 2] =
    [c"cmdgraph", c"--spirv-ext=+SPV_EXT_shader_atomic_float_add,+SPV_EXT_shader_atomic_float_min_max"];

static INIT: Once = Once::new();

/// Serializes the in-process LLVM work (parse, verify, the pass pipeline with the SPIR-V
/// target's cost model): conservative, as that target's in-process state is not documented
/// as thread-safe. Emission runs in a child process (module doc).
static BACKEND: Mutex<()> = Mutex::new(());

/// Registers the SPIR-V target with LLVM (once per process).
fn init() {
    INIT.call_once(|| {
        // SAFETY: registration functions without arguments, and the option parser with
        // `argv` pointing at static NUL-terminated strings that outlive the call; `Once` runs
        // them exactly once, before any use of the target, so no other thread is in LLVM.
        #[allow(unsafe_code)]
        unsafe {
            LLVMInitializeSPIRVTargetInfo();
            LLVMInitializeSPIRVTarget();
            LLVMInitializeSPIRVTargetMC();
            LLVMInitializeSPIRVAsmPrinter();
            let argv: Vec<*const std::ffi::c_char> = BACKEND_ARGS.iter().map(|a| a.as_ptr()).collect();
            LLVMParseCommandLineOptions(argv.len() as i32, argv.as_ptr(), c"".as_ptr());
        }
    });
}

/// What LLVM produced for one module.
pub(crate) struct Output {
    /// The LLVM IR after the optimization pipeline.
    pub ir: String,
    /// The SPIR-V binary.
    pub spirv: Vec<u8>,
}

/// The IR pass pipeline of an `-O` level (`None` at `-O0`).
pub(crate) fn pipeline(opt: u8) -> Option<&'static str> {
    match opt {
        0 => None,
        1 => Some("function(early-cse<memssa>,sccp,adce)"),
        2 => Some("function(early-cse<memssa>,reassociate,gvn,sccp,adce),function(loop-mssa(licm))"),
        _ => Some(
            "function(early-cse<memssa>,reassociate,gvn,sccp,adce),function(loop-mssa(licm)),\
             function(early-cse<memssa>,gvn,adce)",
        ),
    }
}

/// Why [`compile`] failed.
#[derive(Debug)]
pub(crate) enum Error {
    /// `llc` could not be run: the installation (package `llvm-22`, `CMDGRAPH_LLC`).
    Tool(String),
    /// LLVM failed on the module: parse, verify, passes, legalization or emission.
    Failed(String),
}

/// Parses, verifies, optimizes (the `-O{opt}` pipeline), legalizes (legalize.rs) and
/// compiles `ir` to SPIR-V.
pub(crate) fn compile(ir: &str, opt: u8) -> Result<Output, Error> {
    init();
    // A poisoned lock only means another compilation panicked; the state it guards is
    // LLVM's, which a Rust panic did not touch.
    let _guard = BACKEND.lock().unwrap_or_else(|e| e.into_inner());
    let context = Context::create();
    let buffer = MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "kernel");
    let failed = |stage: &str, e: inkwell::support::LLVMString| Error::Failed(format!("{stage}: {}", e.to_string()));
    let module = context.create_module_from_ir(buffer).map_err(|e| failed("parse", e))?;
    module.verify().map_err(|e| failed("verify", e))?;
    let machine = machine().map_err(Error::Failed)?;
    if let Some(passes) = pipeline(opt) {
        module
            .run_passes(passes, &machine, PassBuilderOptions::create())
            .map_err(|e| Error::Failed(format!("pass pipeline: {}", e.to_string())))?;
    }
    // Logical addressing: undo any phi or select of pointers the pipeline formed
    // (legalize.rs); a module without one is left as it is.
    if crate::legalize::legalize(&module).map_err(Error::Failed)? > 0 {
        module.verify().map_err(|e| failed("verify after merging pointer indices", e))?;
    }
    // A `zext` of a `trunc` or `sext` the backend miscombines (legalize.rs).
    if crate::legalize::narrow_extensions(&module) > 0 {
        module.verify().map_err(|e| failed("verify after rewriting narrow extensions", e))?;
    }
    let ir_text = module.print_to_string().to_string();
    let spirv = emit_with_llc(&ir_text)?;
    Ok(Output { ir: ir_text, spirv })
}

/// The `llc` of LLVM 22: `CMDGRAPH_LLC`, else `$LLVM_SYS_221_PREFIX/bin/llc`, else
/// `/usr/lib/llvm-22/bin/llc` (Debian's `llvm-22` package), else `llc-22` on `PATH`.
fn llc_path() -> std::path::PathBuf {
    if let Some(path) = std::env::var_os("CMDGRAPH_LLC") {
        return path.into();
    }
    let prefix = std::env::var_os("LLVM_SYS_221_PREFIX").map(std::path::PathBuf::from);
    for dir in prefix.into_iter().chain([std::path::PathBuf::from("/usr/lib/llvm-22")]) {
        let llc = dir.join("bin").join("llc");
        if llc.is_file() {
            return llc;
        }
    }
    "llc-22".into()
}

/// Emits SPIR-V for optimized IR text in a fresh `llc` process (see the module doc).
fn emit_with_llc(ir: &str) -> Result<Vec<u8>, Error> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let llc = llc_path();
    let mut args = vec![format!("-mtriple={TRIPLE}"), "-O0".into(), "-filetype=obj".into(), "-o".into(), "-".into()];
    args.extend(BACKEND_ARGS.iter().skip(1).map(|a| a.to_string_lossy().into_owned()));
    args.push("-".into());
    let mut child = Command::new(&llc)
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::Tool(format!("cannot run {} (package llvm-22; set CMDGRAPH_LLC): {e}", llc.display())))?;
    // llc reads the whole module before it writes anything, so writing first cannot block.
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(ir.as_bytes()).map_err(|e| Error::Failed(format!("cannot write to {}: {e}", llc.display())))?;
    }
    let out = child.wait_with_output().map_err(|e| Error::Failed(format!("{}: {e}", llc.display())))?;
    if !out.status.success() {
        // A backend abort prints a stack dump after its message: the message is what helps.
        let stderr = String::from_utf8_lossy(&out.stderr);
        let message: Vec<&str> = stderr.lines().take_while(|l| !l.starts_with("PLEASE submit a bug report")).collect();
        return Err(Error::Failed(format!("SPIR-V emission ({}): {}", llc.display(), message.join("\n").trim())));
    }
    Ok(out.stdout)
}

fn machine() -> Result<TargetMachine, String> {
    let triple = TargetTriple::create(TRIPLE);
    let target = Target::from_triple(&triple).map_err(|e| format!("target: {}", e.to_string()))?;
    target
        .create_target_machine(&triple, "", "", OptimizationLevel::None, RelocMode::Default, CodeModel::Default)
        .ok_or_else(|| "cannot create a SPIR-V target machine".to_string())
}
