//! The interpreter's error type: every failure names where it happened.
//!
//! A run-time fault carries the (path) name of the node that was executing, and for faults
//! inside a kernel the [`KernelSite`]: kernel, op, op span and the work-item. Nothing in the
//! interpreter panics on bad input; everything surfaces here.

use cmdgraph_ir::host::HostError;
use cmdgraph_ir::span::Span;
use cmdgraph_ir::types::Access;
use std::fmt;

/// An error from the reference interpreter.
#[derive(Clone, Debug, PartialEq)]
pub enum InterpError {
    /// Misuse of the interpreter API: an unknown name, a wrong byte count, a stale
    /// executable id, a value of the wrong kind.
    Api {
        /// What is wrong.
        message: String,
    },
    /// The module or graph cannot be executed as written (found at `new`, `finalize` or when
    /// a command is prepared): a bad handle, a cycle, an allocation in a sub-graph, a SPIR-V
    /// kernel, a launch that does not divide, ...
    Invalid {
        /// The graph (or `""` for module-level problems).
        graph: String,
        /// The node, when one is at fault.
        node: Option<String>,
        /// What is wrong.
        message: String,
    },
    /// `finalize` of a graph with graph-owned allocations while an executable graph made
    /// from it is still alive (000 §8.4.3, error table row 22).
    LiveExecutable {
        /// The graph.
        graph: String,
    },
    /// A fault while a node executed.
    Fault(Box<Fault>),
}

/// A fault while executing one node.
#[derive(Clone, Debug, PartialEq)]
pub struct Fault {
    /// The node's path name: `k0`, or `sg/k0` for node `k0` of the graph run by subgraph
    /// node `sg`.
    pub node: String,
    /// Where in a kernel, for faults inside kernel bodies.
    pub site: Option<KernelSite>,
    /// What went wrong.
    pub kind: FaultKind,
}

/// A location inside a kernel execution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelSite {
    /// The kernel's name.
    pub kernel: String,
    /// The op's keyword (`load`, `store`, `atomic`, `group_barrier`, ...).
    pub op: String,
    /// The op's index in the kernel body's op arena.
    pub op_index: usize,
    /// The op's span in the source (`Span::UNDEFINED` for modules built through the API).
    pub span: Span,
    /// The global id of the work-item, one entry per launch dimension (offset included).
    pub work_item: Vec<u64>,
}

/// What went wrong in a [`Fault`].
#[derive(Clone, Debug, PartialEq)]
pub enum FaultKind {
    /// A kernel element access outside the memory it addresses.
    IndexOutOfBounds {
        /// The memory (`@x`, `%t`, `%tile`, ...).
        memory: String,
        /// The element index the work-item used.
        index: i128,
        /// How many elements the memory holds (as seen through the argument).
        len: u64,
    },
    /// A command's (or host callback's) byte range outside the memory it names.
    BytesOutOfBounds {
        /// The memory.
        memory: String,
        /// First byte.
        start: u64,
        /// Byte count.
        len: u64,
        /// Size of the memory in bytes.
        size: u64,
    },
    /// Use of a graph-owned allocation before its `async_malloc` node ran or after its
    /// `async_free` node ran.
    Lifetime {
        /// The allocation (`%t`).
        memory: String,
        /// `None`: not yet allocated; `Some(free)`: freed by that node.
        freed_by: Option<String>,
    },
    /// An access the argument's or parameter's access mode does not allow.
    AccessMode {
        /// The memory.
        memory: String,
        /// What was attempted: `read`, `write` or `atomic`.
        attempted: &'static str,
        /// The mode that was declared.
        allowed: Access,
    },
    /// A host task or native command named a callback nobody registered.
    UnregisteredCallback {
        /// The callback's name.
        callback: String,
    },
    /// A host callback failed or broke its declared access list.
    Host {
        /// The callback's name.
        callback: String,
        /// The callback's error.
        error: HostError,
    },
    /// The run used up its `RunOptions::fuel`.
    OutOfFuel,
    /// A `while` node ran `RunOptions::loop_rounds` rounds and its condition was still set.
    LoopNeverEnds {
        /// The rounds run.
        rounds: u64,
    },
    /// Anything else (divergent barrier, ill-typed operands, bad launch, double free, ...).
    Other(String),
}

impl InterpError {
    /// An API misuse error.
    pub(crate) fn api(message: impl Into<String>) -> InterpError {
        InterpError::Api { message: message.into() }
    }

    /// An invalid-graph error.
    pub(crate) fn invalid(graph: &str, node: Option<&str>, message: impl Into<String>) -> InterpError {
        InterpError::Invalid { graph: graph.to_string(), node: node.map(str::to_string), message: message.into() }
    }

    /// A fault at a node, outside any kernel.
    pub(crate) fn fault(node: &str, kind: FaultKind) -> InterpError {
        InterpError::Fault(Box::new(Fault { node: node.to_string(), site: None, kind }))
    }

    /// The fault, if this is one.
    pub fn as_fault(&self) -> Option<&Fault> {
        match self {
            InterpError::Fault(f) => Some(f),
            _ => None,
        }
    }
}

impl fmt::Display for InterpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InterpError::Api { message } => write!(f, "interpreter API: {message}"),
            InterpError::Invalid { graph, node, message } => {
                if !graph.is_empty() {
                    write!(f, "graph @{graph}: ")?;
                }
                if let Some(node) = node {
                    write!(f, "node %{node}: ")?;
                }
                f.write_str(message)
            }
            InterpError::LiveExecutable { graph } => write!(
                f,
                "graph @{graph} has graph-owned allocations and an executable graph made from it is still \
                 alive; drop it before finalizing again"
            ),
            InterpError::Fault(fault) => fault.fmt(f),
        }
    }
}

impl std::error::Error for InterpError {}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node %{}", self.node)?;
        if let Some(site) = &self.site {
            write!(f, ", kernel @{}, `{}` (op {}", site.kernel, site.op, site.op_index)?;
            if site.span.is_defined() {
                write!(f, ", bytes {}..{}", site.span.start, site.span.end)?;
            }
            let ids: Vec<String> = site.work_item.iter().map(u64::to_string).collect();
            write!(f, "), work-item ({})", ids.join(", "))?;
        }
        write!(f, ": {}", self.kind)
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultKind::IndexOutOfBounds { memory, index, len } => {
                write!(f, "index {index} out of bounds of {memory} ({len} elements)")
            }
            FaultKind::BytesOutOfBounds { memory, start, len, size } => {
                write!(f, "bytes {start}..{} out of bounds of {memory} ({size} bytes)", *start as u128 + *len as u128)
            }
            FaultKind::Lifetime { memory, freed_by: None } => {
                write!(f, "use of {memory} before its async_malloc node ran")
            }
            FaultKind::Lifetime { memory, freed_by: Some(free) } => {
                write!(f, "use of {memory} after it was freed by %{free}")
            }
            FaultKind::AccessMode { memory, attempted, allowed } => {
                write!(f, "{attempted} of {memory}, which is declared `{allowed}`")
            }
            FaultKind::UnregisteredCallback { callback } => {
                write!(f, "no callback registered under the name \"{callback}\"")
            }
            FaultKind::Host { callback, error } => write!(f, "callback \"{callback}\": {error}"),
            FaultKind::OutOfFuel => f.write_str("out of fuel: the run executed more kernel ops than allowed"),
            FaultKind::LoopNeverEnds { rounds } => write!(
                f,
                "the `while` ran {rounds} rounds and its condition is still set (RunOptions::loop_rounds): \
                 does its body ever clear it?"
            ),
            FaultKind::Other(message) => f.write_str(message),
        }
    }
}
