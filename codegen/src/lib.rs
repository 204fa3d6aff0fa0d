//! `cmdgraph-codegen`: kernel IR → LLVM IR (inkwell) → Vulkan SPIR-V, and the bundle writer.
//!
//! No inkwell type appears in a public signature. The kernel interface every module follows is
//! docs/abi.md; the artifact is [`cmdgraph_ir::bundle::Bundle`].

pub mod bundle;
pub mod schedule;

use cmdgraph_ir::bundle::CompiledKernel;
use cmdgraph_ir::{Handle, Kernel, Module};

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
}

/// What `compile --emit` can print for one kernel variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emit {
    /// Textual LLVM IR after the optimization pipeline.
    LlvmIr,
    /// Disassembled SPIR-V (`spirv-dis` syntax).
    SpirvAsm,
}
