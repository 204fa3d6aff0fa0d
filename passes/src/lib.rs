//! `cmdgraph-passes`: the pass registry, the pipeline runner and the optimization passes.
//!
//! A pass is a plain function `fn(&mut Module, &mut PassContext) -> Result<(), PassError>`
//! listed in [`REGISTRY`] with MLIR-style metadata. Every pass keeps the happens-before
//! relation among the commands that remain and leaves a module the verifier accepts; the
//! runner ([`pipeline`]) checks the latter after every pass under `verify_each`.
//!
//! Provenance: passes never rename a node they keep. A node that a pass creates from another
//! graph's node (`inline-subgraphs`) is named `<subgraph node>.<child node>`, so its origin
//! stays readable in the text, the DOT and `cmdgraph diff`; [`PassContext::origins`] records
//! the same mapping for the bundle.

pub mod analysis;
pub mod bypass;
pub mod dead_kernels;
pub mod dead_nodes;
pub mod eliminate_barriers;
pub mod eliminate_empty;
pub mod fuse;
pub mod fuse_stages;
pub mod inline_calls;
pub mod inline_subgraphs;
pub mod iterate_in_kernel;
pub mod memory;
pub mod merge_branches;
pub mod pipeline;
pub mod place_devices;
pub mod reduce;
pub mod split_devices;
pub mod split_ranks;
pub mod tile_contractions;
pub mod transitive_reduction;
pub mod work;

use cmdgraph_ir::Module;
use std::collections::BTreeMap;
use std::fmt;

/// The signature every pass has.
pub type PassFn = fn(&mut Module, &mut PassContext) -> Result<(), PassError>;

/// One registry entry.
#[derive(Clone, Copy, Debug)]
pub struct PassInfo {
    /// Kebab-case name used by `--passes`.
    pub name: &'static str,
    /// One-line summary for `cmdgraph opt --list-passes`.
    pub summary: &'static str,
    /// The statistics it reports: (name, meaning).
    pub statistics: &'static [(&'static str, &'static str)],
    /// What it keeps so that `enable_profiling` timestamps and executable update still work.
    pub preserves: &'static str,
    /// The pass.
    pub run: PassFn,
}

/// Every pass, in the order `--list-passes` shows them.
pub static REGISTRY: &[PassInfo] = &[
    inline_calls::INFO,
    inline_subgraphs::INFO,
    eliminate_empty::INFO,
    eliminate_barriers::INFO,
    transitive_reduction::INFO,
    dead_nodes::INFO,
    fuse::INFO,
    fuse_stages::INFO,
    dead_kernels::INFO,
    tile_contractions::INFO,
    merge_branches::INFO,
    iterate_in_kernel::INFO,
    place_devices::INFO,
    split_devices::INFO,
    split_ranks::INFO,
    memory::INFO,
];

/// The pipeline `compile` runs when no `--passes` is given.
pub const DEFAULT_PIPELINE: &[&str] = &[
    "inline-calls",
    "inline-subgraphs",
    "eliminate-empty-nodes",
    "eliminate-barriers",
    "dead-node-elimination",
    "fuse-kernels",
    "tile-contractions",
    "transitive-reduction",
    "fuse-stages",
    "iterate-in-kernel",
    "dead-kernel-elimination",
    "plan-memory",
];

/// The passes of [`DEFAULT_PIPELINE`], in order.
pub fn default_pipeline() -> Vec<&'static PassInfo> {
    DEFAULT_PIPELINE.iter().filter_map(|n| lookup(n)).collect()
}

/// `passes` with `place-devices` and then `split-devices` in it (each unless it is there
/// already): before `plan-memory`, so that each stage graph gets its pool, else at the end.
pub fn with_place_devices(mut passes: Vec<&'static PassInfo>) -> Vec<&'static PassInfo> {
    for info in [&place_devices::INFO, &split_devices::INFO] {
        if passes.iter().any(|p| p.name == info.name) {
            continue;
        }
        let at = passes.iter().position(|p| p.name == memory::INFO.name).unwrap_or(passes.len());
        passes.insert(at, info);
    }
    passes
}

/// `passes` with `place-devices` and then `split-ranks` in it (each unless it is there
/// already), before `plan-memory`: what `compile --ranks N` runs (docs/mpi.md).
pub fn with_split_ranks(mut passes: Vec<&'static PassInfo>) -> Vec<&'static PassInfo> {
    passes.retain(|p| p.name != split_devices::INFO.name);
    for info in [&place_devices::INFO, &split_ranks::INFO] {
        if passes.iter().any(|p| p.name == info.name) {
            continue;
        }
        let at = passes.iter().position(|p| p.name == memory::INFO.name).unwrap_or(passes.len());
        passes.insert(at, info);
    }
    passes
}

/// Looks a pass up by name.
pub fn lookup(name: &str) -> Option<&'static PassInfo> {
    REGISTRY.iter().find(|p| p.name == name)
}

/// Where a node of the optimized module came from: (graph name, node name) pairs of the
/// module the pipeline started from.
pub type Origin = Vec<(String, String)>;

/// State shared by the passes of one pipeline run.
#[derive(Clone, Debug, Default)]
pub struct PassContext {
    /// Statistics of the pass now running, reset by the runner before each pass.
    pub stats: BTreeMap<&'static str, u64>,
    /// For nodes that did not exist under their name in the input module (keyed by graph
    /// name and node name): the input nodes they stand for.
    pub origins: BTreeMap<(String, String), Origin>,
    /// `plan-memory`'s result: the memory plan of every graph with allocations, by graph name.
    pub memory_plans: BTreeMap<String, memory::MemoryPlan>,
    /// Pool offset alignment for `plan-memory` in bytes; `None`: [`memory::DEFAULT_ALIGNMENT`].
    pub memory_alignment: Option<u64>,
    /// Options of individual passes (set by `cmdgraph opt` flags).
    pub options: PassOptions,
    /// Human-readable remarks passes leave for `--explain` (one entry per line group),
    /// accumulated over the run.
    pub remarks: Vec<String>,
}

/// Options that change what a pass does (all off or at their documented default by default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PassOptions {
    /// `fuse-kernels`: allow floating-point reassociation and contraction rules, which may
    /// change results in the last bits (`--fuse-fp-reassoc`).
    pub fuse_fp_reassoc: bool,
    /// `inline-subgraphs`: the most nodes one graph may have after inlining; `None`:
    /// [`inline_subgraphs::DEFAULT_MAX_INLINED_NODES`]. Checked before anything is copied,
    /// so sub-graphs nested by doubling fail at once instead of never finishing.
    pub max_inlined_nodes: Option<u64>,
    /// `place-devices`: the devices to place nodes on (`--devices N`); `None` or 1: the pass
    /// changes nothing.
    pub devices: Option<u32>,
    /// `split-ranks`: the ranks to split multi-device graphs into (`--ranks N`); `None`: as
    /// many as [`PassOptions::devices`], else 1.
    pub ranks: Option<u32>,
    /// `place-devices`: the host-staged bandwidth between devices in bytes per microsecond
    /// (`--transfer-bandwidth`, in GB/s on the command line); `None`:
    /// [`place_devices::cost::DEFAULT_TRANSFER_BYTES_PER_US`].
    pub transfer_bytes_per_us: Option<u64>,
}

impl PassContext {
    /// Adds `amount` to statistic `name` of the pass now running.
    pub fn bump(&mut self, name: &'static str, amount: u64) {
        *self.stats.entry(name).or_insert(0) += amount;
    }
}

/// Why a pass or the pipeline failed.
#[derive(Clone, Debug, PartialEq)]
pub enum PassError {
    /// `--passes` named no registered pass.
    UnknownPass {
        /// The name given.
        name: String,
        /// The closest registered name, if any is close.
        suggestion: Option<&'static str>,
    },
    /// A pass could not transform a graph; the module is left as it was before that pass.
    Failed {
        /// The pass.
        pass: &'static str,
        /// The graph (without `@`).
        graph: String,
        /// The node involved (without `%`), if one is.
        node: Option<String>,
        /// What went wrong.
        message: String,
    },
    /// The verifier rejected the output of a pass (a bug in that pass), rendered.
    VerifyFailed {
        /// The pass.
        pass: &'static str,
        /// The rendered diagnostics on the printed module.
        diagnostics: String,
    },
}

impl fmt::Display for PassError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PassError::UnknownPass { name, suggestion: Some(s) } => {
                write!(f, "unknown pass `{name}`; did you mean `{s}`? (`cmdgraph opt --list-passes` lists them)")
            }
            PassError::UnknownPass { name, suggestion: None } => {
                write!(f, "unknown pass `{name}` (`cmdgraph opt --list-passes` lists them)")
            }
            PassError::Failed { pass, graph, node: Some(node), message } => {
                write!(f, "pass `{pass}` failed on @{graph}, node %{node}: {message}")
            }
            PassError::Failed { pass, graph, node: None, message } => {
                write!(f, "pass `{pass}` failed on @{graph}: {message}")
            }
            PassError::VerifyFailed { pass, diagnostics } => {
                write!(f, "the verifier rejected the output of pass `{pass}` (a bug in the pass):\n{diagnostics}")
            }
        }
    }
}

impl std::error::Error for PassError {}
