//! LLVM: the SPIR-V target, the optimization pipeline and emission.
//!
//! The lowering writes textual LLVM IR (see `lower`); this module parses it into an inkwell
//! module, verifies it, runs a curated pass pipeline for the `-O` level and asks the
//! SPIR-V backend for a binary. Text is the interface because the Vulkan resource handles
//! are LLVM target-extension types, which inkwell's typed builder cannot represent.
//!
//! Why not `default<On>`: with LLVM 22, InstCombine retypes loads and GEPs through the
//! resource views (`load float` from a `u32` element, `getelementptr float` into a
//! work-group array) and SimplifyCFG reshapes selections, after which the SPIR-V backend
//! crashes (SPIRVLegalizePointerCast) or emits unstructured control flow. The passes below
//! (CSE, GVN, SCCP, ADCE, reassociation, LICM) keep types and the CFG shape. The backend
//! itself always runs at its `-O0` (its codegen-level optimizations break the structurizer
//! the same way); the Vulkan driver optimizes the SPIR-V again anyway.

use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{CodeModel, FileType, RelocMode, Target, TargetMachine, TargetTriple};
use inkwell::OptimizationLevel;
use std::sync::Once;

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

/// Parses, verifies, optimizes (`default<O{opt}>`) and compiles `ir` to SPIR-V.
pub(crate) fn compile(ir: &str, opt: u8) -> Result<Output, String> {
    init();
    // Contexts and modules are leaked on purpose: LLVM 22's SPIR-V backend keeps state
    // keyed by IR object addresses across runs (its module analysis), so an address reused
    // by a later module's block or function aliases a stale entry and yields duplicate ids
    // ("Id 1 is defined more than once"). Never freeing IR objects rules that out, for a
    // few hundred kilobytes per compiled kernel.
    let context: &'static Context = Box::leak(Box::new(Context::create()));
    let buffer = MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "kernel");
    let module = std::mem::ManuallyDrop::new(
        context.create_module_from_ir(buffer).map_err(|e| format!("parse: {}", e.to_string()))?,
    );
    module.verify().map_err(|e| format!("verify: {}", e.to_string()))?;
    let machine = machine()?;
    if let Some(passes) = pipeline(opt) {
        module
            .run_passes(passes, &machine, PassBuilderOptions::create())
            .map_err(|e| format!("pass pipeline: {}", e.to_string()))?;
    }
    let ir_text = module.print_to_string().to_string();
    let spirv = machine
        .write_to_memory_buffer(&module, FileType::Object)
        .map_err(|e| format!("SPIR-V emission: {}", e.to_string()))?
        .as_slice()
        .to_vec();
    Ok(Output { ir: ir_text, spirv })
}

fn machine() -> Result<TargetMachine, String> {
    let triple = TargetTriple::create(TRIPLE);
    let target = Target::from_triple(&triple).map_err(|e| format!("target: {}", e.to_string()))?;
    target
        .create_target_machine(&triple, "", "", OptimizationLevel::None, RelocMode::Default, CodeModel::Default)
        .ok_or_else(|| "cannot create a SPIR-V target machine".to_string())
}
