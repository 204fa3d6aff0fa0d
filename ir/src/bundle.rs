//! The compiled artifact: what `codegen` writes and `executor` loads (docs/abi.md).
//!
//! A bundle file is a binary header and the LZ4-compressed payload of [`Bundle`]
//! (docs/bundle.md, "Format"). The graph structure travels as canonical IR text
//! (`optimized`), which the loader parses and verifies, so the bundle never duplicates what
//! the IR already says; the rest is what the IR cannot say: SPIR-V per kernel variant, the
//! argument layout of each, the schedule, the memory plan and where each node came from.
//! Every collection is a `Vec` in a defined order, so the same input gives the same bytes.
//! [`Bundle::to_bytes`] writes it with the content hash filled in; [`Bundle::from_bytes`]
//! reads it, checking the format version first, then the hash (docs/bundle.md).

use serde::{Deserialize, Serialize};

mod codec;
mod io;
pub mod key;
pub mod signature;

pub use io::{BundleError, Framed, DECODE_BUDGET_FACTOR, HEADER_BYTES, MAGIC, MAX_EXPANSION};

/// Bumped whenever the bundle or the kernel ABI changes. 1: RON text (SPIR-V words as
/// decimal numbers); 2: binary header and LZ4-compressed payload; 3: predicated kernel
/// variants ([`MemorySlot::Predicate`], argument-block words 6 and 7); 4: loop predicates
/// ([`MemorySlot::LoopPredicate`], mode 3).
pub const FORMAT_VERSION: u32 = 4;

/// The debug string (`OpModuleProcessed`) by which a kernel variant's SPIR-V records how many
/// work-items one invocation handles: this prefix, then the number in decimal. Codegen writes
/// it; the loader refuses a variant whose marker differs from its `items_per_invocation`
/// (the code handles what it was compiled for, whatever the bundle says). A module without
/// one handles one work-item per invocation (docs/abi.md, "Items per invocation").
pub const ITEMS_PER_INVOCATION_MARKER: &str = "cmdgraph items_per_invocation ";

/// Largest `items_per_invocation` a bundle may give (the loader refuses more; the external
/// kernel check holds a module's marker to it): codegen emits 1 or 4; a power of two up to
/// this bound leaves room for wider vectorization without letting a group's span overflow.
pub const MAX_ITEMS_PER_INVOCATION: u32 = 64;

/// The debug string (`OpModuleProcessed`) by which a kernel variant's SPIR-V records the most
/// loop back-edges one invocation takes: this prefix, then the number in decimal or
/// `unbounded` (docs/abi.md, "Loop back-edges"). Codegen writes it; the executor reads it for
/// the llvmpipe warning. A module without one is not judged.
pub const LOOP_BACK_EDGES_MARKER: &str = "cmdgraph loop_back_edges ";

/// Loop back-edges past which Mesa's llvmpipe stops a shader invocation's loops, all of them
/// together (`LP_MAX_TGSI_LOOP_ITERATIONS`; docs/executor.md). Codegen unrolls to stay
/// within it; the executor warns about kernels that may not.
pub const LLVMPIPE_LOOP_BUDGET: u128 = 65535;

/// A compiled module.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bundle {
    /// [`FORMAT_VERSION`] of the writer.
    pub format_version: u32,
    /// SHA-256 (lower-case hex) of the magic, the version and the uncompressed payload
    /// (filled in when read; [`Bundle::to_bytes`] computes it, ignoring this value).
    pub content_hash: String,
    /// The module as the user wrote it, printed canonically.
    pub source: String,
    /// The module after the pass pipeline, printed canonically.
    pub optimized: String,
    /// The pass pipeline that produced `optimized` (comma-separated names).
    pub pipeline: String,
    /// One entry per (kernel, work-group size) variant, sorted by kernel name then size.
    pub kernels: Vec<CompiledKernel>,
    /// One entry per graph of `optimized`, in module order.
    pub graphs: Vec<GraphPlan>,
}

/// One SPIR-V module for one kernel at one work-group size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompiledKernel {
    /// The kernel's name in `optimized` (without `@`).
    pub kernel: String,
    /// Entry point name in the module.
    pub entry: String,
    /// `LocalSize` of the entry point.
    pub workgroup_size: [u32; 3],
    /// Consecutive work-items of dimension 0 one invocation handles (1 unless vectorized).
    pub items_per_invocation: u32,
    /// The SPIR-V words.
    pub spirv: Vec<u32>,
    /// Where each argument goes.
    pub layout: ArgLayout,
}

/// The argument block and memory slots of a kernel variant (docs/abi.md).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ArgLayout {
    /// Size of the argument block in bytes (header included).
    pub block_size: u32,
    /// One field per kernel parameter, in parameter order.
    pub fields: Vec<ArgField>,
    /// Memory slots (binding `1 + i`): parameter buffers, then device globals by name.
    pub slots: Vec<MemorySlot>,
}

/// Where one parameter's value goes in the argument block.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArgField {
    /// Byte offset in the argument block.
    pub offset: u32,
    /// What the field holds.
    pub kind: ArgFieldKind,
}

/// The kind of an argument-block field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ArgFieldKind {
    /// A scalar or vector value of `bytes` bytes.
    Value {
        /// Size in bytes.
        bytes: u32,
    },
    /// A buffer parameter: element offset and element count words; its memory is `slot`.
    Buffer {
        /// Index into [`ArgLayout::slots`].
        slot: u32,
        /// Element size in bytes.
        elem_bytes: u32,
    },
    /// Work-group memory: the element count word; compiled with room for `capacity`.
    Local {
        /// Elements the compiled kernel has room for.
        capacity: u64,
        /// Element size in bytes.
        elem_bytes: u32,
    },
}

/// What a memory slot is bound to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum MemorySlot {
    /// The memory the argument of parameter `param` points to (per node).
    Param {
        /// Parameter index.
        param: u32,
        /// Whether the kernel writes it.
        writes: bool,
    },
    /// A `device_global` (without `@`).
    DeviceGlobal {
        /// Its name.
        name: String,
        /// Whether the kernel writes it.
        writes: bool,
    },
    /// The predicate of a kernel that runs in a conditional node's body (the last slot of a
    /// predicated variant; docs/abi.md, "Predicated variants"): a buffer of `u32` words the
    /// kernel reads one of, as argument-block word 6 says (bits 0-1 the mode: 0 always run,
    /// 1 run when the word is non-zero, 2 run when it equals word 7; bits 2-31 the word's
    /// index), returning at once when it says not to run.
    Predicate,
    /// The predicate of the one kernel launch of a `while` body (docs/abi.md, "Loop
    /// predicates"): as [`MemorySlot::Predicate`], and mode 3 besides. In mode 3 the kernel
    /// runs when word `(word6 >> 2) & 0x7fff` is non-zero, and at its end, after a work-group
    /// barrier, its first invocation reads element `word7` of parameter `condition_param`'s
    /// memory (the loop's condition) and writes whether it is non-zero into word
    /// `word6 >> 17` (the next round's predicate), adding that to the word after it (the
    /// loop's tally of rounds). Mode 3 is for dispatches of one work-group.
    LoopPredicate {
        /// The buffer parameter whose memory holds the condition word (`u32` or `i32`
        /// elements).
        condition_param: u32,
    },
}

impl MemorySlot {
    /// Whether this is the predicate slot of a predicated variant (either kind).
    pub fn is_predicate(&self) -> bool {
        matches!(self, MemorySlot::Predicate | MemorySlot::LoopPredicate { .. })
    }
}

/// Everything about one graph that is not in its IR text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GraphPlan {
    /// Graph name (without `@`).
    pub name: String,
    /// Segments in execution order.
    pub segments: Vec<Segment>,
    /// Graph-owned memory: pool size and offsets.
    pub memory: PoolPlan,
    /// For optimized nodes whose name is not a source node's: the source nodes they stand
    /// for, as (graph, node) names. Sorted by node name.
    pub origins: Vec<NodeOrigin>,
    /// The compiled variant of every kernel launch: each kernel node, and each kernel
    /// alternative of each `dynamic` node. In node creation order, then alternative order.
    pub launches: Vec<LaunchVariant>,
}

/// Which entry of [`Bundle::kernels`] a kernel launch runs.
///
/// A `range` launch's work-group size is codegen's choice, which the executor cannot
/// recompute without codegen; this table says it, for every launch and every dynamic
/// command group alternative, so that switching the active alternative needs no lookup.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchVariant {
    /// The `kernel` or `dynamic` node (without `%`).
    pub node: String,
    /// For a `dynamic` node, the alternative index; `None` for a kernel node.
    pub alternative: Option<u32>,
    /// Index into [`Bundle::kernels`].
    pub kernel: u32,
}

/// A part of a run between host tasks (docs/abi.md, "Schedule").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Segment {
    /// Device work: stages of mutually independent nodes, by name.
    Device {
        /// Stages in order; a memory barrier separates consecutive stages.
        stages: Vec<Vec<String>>,
    },
    /// One host task (by node name).
    Host {
        /// The host-task node.
        node: String,
    },
}

/// Offsets of graph-owned allocations in one pool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolPlan {
    /// Pool size in bytes (`get_required_mem_size`).
    pub size: u64,
    /// Offset alignment the plan was made for.
    pub alignment: u64,
    /// (async_malloc node name, byte offset), in node creation order.
    pub offsets: Vec<(String, u64)>,
    /// The planner's report, as text (docs/memory.md).
    pub report: String,
}

/// Where an optimized node came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeOrigin {
    /// The node in `optimized`.
    pub node: String,
    /// (graph, node) names in `source`.
    pub sources: Vec<(String, String)>,
}
