//! `cmdgraph-codegen`: kernel IR → LLVM IR (inkwell) → Vulkan SPIR-V, and the bundle writer.
//!
//! No inkwell type appears in a public signature. The kernel interface every module follows is
//! docs/abi.md; the artifact is [`cmdgraph_ir::bundle::Bundle`].

mod barrier;
pub mod bundle;
mod cmpxchg;
pub mod coop_gemm;
mod error;
pub mod external;
mod float_controls;
mod layout;
mod legalize;
mod loop_marker;
mod lower;
pub mod schedule;
mod spirv_walk;
mod subgroup;
pub mod support;
mod target;
mod validate;
mod variant;
mod vectorize;

pub use error::CodegenError;
pub use loop_marker::{marked_loop_back_edges, LOOP_BACK_EDGES_MARKER};
pub use variant::{choose_variant, choose_workgroup_size, module_variants, resolve_args, MAX_WORKGROUP_INVOCATIONS};
pub use vectorize::ITEMS_PER_INVOCATION;

use cmdgraph_ir::bundle::CompiledKernel;
use cmdgraph_ir::{Handle, Kernel, KernelBody, Module};

/// Code generation options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// LLVM optimization level, 0 to 3.
    pub opt_level: u8,
}

impl Default for Options {
    fn default() -> Self {
        Options { opt_level: 2 }
    }
}

/// Which variant of a kernel to compile: what Vulkan fixes at pipeline creation.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Variant {
    /// Work-group size (`nd_range` local size; for `range` launches, codegen's choice from
    /// [`choose_workgroup_size`]).
    pub workgroup_size: [u32; 3],
    /// Launch dimensions (0 for `single_task`, else 1 to 3).
    pub dims: u8,
    /// Per `local<T>` parameter, in parameter order: element capacity.
    pub local_capacity: Vec<u64>,
    /// A launch inside a conditional node's body: the kernel tests a predicate word first
    /// and returns at once when it says not to run (`MemorySlot::Predicate`, docs/abi.md
    /// "Predicated variants").
    pub predicated: bool,
    /// A predicated launch that is the one kernel of a `while` body: the buffer parameter
    /// whose memory holds the loop's condition. The variant then also has mode 3, in which
    /// its first invocation writes the next round's predicate after the kernel's work
    /// (`MemorySlot::LoopPredicate`, docs/abi.md "Loop predicates").
    pub loop_tail: Option<u32>,
}

/// What `compile --emit` can print for one kernel variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emit {
    /// Textual LLVM IR after the optimization pipeline.
    LlvmIr,
    /// Disassembled SPIR-V (`spirv-dis` syntax).
    SpirvAsm,
}

/// Everything one compilation produces.
struct Compiled {
    kernel: CompiledKernel,
    llvm_ir: String,
}

fn compile(
    module: &Module,
    kernel: Handle<Kernel>,
    variant: &Variant,
    options: &Options,
) -> Result<Compiled, CodegenError> {
    let k = module.kernels.try_get(kernel).ok_or_else(|| CodegenError::launch("?", "kernel handle out of range"))?;
    let body = match &k.body {
        KernelBody::Ir(body) => body,
        KernelBody::Spirv { .. } => {
            return Err(CodegenError::unsupported(
                &k.name,
                "the kernel is external SPIR-V: codegen does not compile it, external::load packs it",
            ))
        }
        KernelBody::Shader { lang, .. } => {
            return Err(CodegenError::unsupported(
                &k.name,
                format!("the kernel is {} source that was not translated (cmdgraph_shader::resolve)", lang.keyword()),
            ))
        }
    };
    if variant.dims > 3 || variant.workgroup_size.contains(&0) {
        return Err(CodegenError::launch(&k.name, "invalid variant"));
    }
    // Calls are inlined (cmdgraph_ir::inline says why); the `inline` pass has usually done
    // it already.
    let inlined;
    let body = if cmdgraph_ir::inline::has_calls(body) {
        inlined = cmdgraph_ir::inline::inline_body(&module.functions, k, body)
            .map_err(|e| CodegenError::unsupported(&k.name, e.to_string()))?;
        &inlined
    } else {
        body
    };
    let layout = layout::layout(module, k, body, &variant.local_capacity, (variant.predicated, variant.loop_tail))?;
    let vectorize = vectorize::element_wise(body, &layout, variant);
    let plan = lower::Plan { kernel: k, body, variant, layout: &layout, vectorize };
    let text = lower::lower(&plan, &k.name)?;
    let opt = options.opt_level.min(3);
    let internal = |what: &str, message: String| {
        let [x, y, z] = variant.workgroup_size;
        CodegenError::Internal {
            kernel: k.name.clone(),
            span: module.kernels.span(kernel),
            what: format!("{what} at -O{opt} (work-group {x}x{y}x{z})"),
            message,
        }
    };
    let (words, llvm_ir) = to_spirv(&text, opt).map_err(|failure| match failure {
        Failure::Llvm(message) => internal("LLVM failed on the generated module", message),
        Failure::Invalid(message) => internal("spirv-val rejected the generated SPIR-V", message),
        Failure::Tool(e) => e,
    })?;
    // One figure for the bundle and the module's marker, which the loader compares.
    let items = if vectorize { ITEMS_PER_INVOCATION } else { 1 };
    let kernel = CompiledKernel {
        kernel: k.name.clone(),
        entry: k.name.clone(),
        workgroup_size: variant.workgroup_size,
        items_per_invocation: items,
        spirv: loop_marker::mark_loop_back_edges(
            &vectorize::mark_items_per_invocation(&words, items),
            lower::emitted_back_edges(body),
        ),
        layout: layout.abi,
    };
    Ok(Compiled { kernel, llvm_ir })
}

/// Why lowered LLVM IR did not become valid SPIR-V.
pub(crate) enum Failure {
    /// LLVM failed: parse, verify, the pass pipeline, the pointer legalization or emission.
    Llvm(String),
    /// `spirv-val` rejected the result (its output).
    Invalid(String),
    /// A tool could not be run at all (`llc`, `spirv-val`): the installation, not a bug.
    Tool(CodegenError),
}

/// Lowered LLVM IR text → optimized at `-O{opt}`, emitted, post-passed and validated SPIR-V
/// words, with the optimized IR. Emission runs in a fresh `llc` per module (target.rs says
/// why), so the words depend on the input alone; spirv-val checks them before anyone else
/// sees them.
pub(crate) fn to_spirv(text: &str, opt: u8) -> Result<(Vec<u32>, String), Failure> {
    let out = target::compile(text, opt).map_err(|e| match e {
        target::Error::Tool(message) => Failure::Tool(CodegenError::Tool { message }),
        target::Error::Failed(message) => Failure::Llvm(message),
    })?;
    let words = subgroup::lower_calls(&validate::words(&out.spirv));
    let words = cmpxchg::unpack_compare_exchange(&validate::strip_dead_names(&words));
    let words = float_controls::preserve_signed_zero_inf_nan(&barrier::fix_barrier_semantics(&words));
    let words = float_controls::no_contraction(&words);
    validate::validate(&words).map_err(Failure::Tool)?.map_err(Failure::Invalid)?;
    Ok((words, out.ir))
}

/// Compiles one variant of a kernel to validated Vulkan SPIR-V (docs/codegen.md).
pub fn compile_kernel(
    module: &Module,
    kernel: Handle<Kernel>,
    variant: &Variant,
    options: &Options,
) -> Result<CompiledKernel, CodegenError> {
    compile(module, kernel, variant, options).map(|c| c.kernel)
}

/// The LLVM IR or SPIR-V assembly of one variant of a kernel.
pub fn emit(
    module: &Module,
    kernel: Handle<Kernel>,
    variant: &Variant,
    options: &Options,
    what: Emit,
) -> Result<String, CodegenError> {
    let c = compile(module, kernel, variant, options)?;
    match what {
        Emit::LlvmIr => Ok(c.llvm_ir),
        Emit::SpirvAsm => validate::disassemble(&c.kernel.spirv),
    }
}

/// The SPIR-V binary (little-endian bytes) of compiled words, for `--emit=spirv`.
pub fn spirv_bytes(words: &[u32]) -> Vec<u8> {
    validate::bytes(words)
}
