//! The executor's error type: every failure is a value naming what failed, never a panic.

use std::fmt;
use std::time::Duration;

/// Why loading, finalizing, running or updating failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExecError {
    /// The bundle is not well-formed RON of the bundle type, or is truncated.
    Malformed(String),
    /// The bundle was written for another format version.
    Version {
        /// The version in the bundle.
        found: u32,
        /// [`cmdgraph_ir::bundle::FORMAT_VERSION`].
        expected: u32,
    },
    /// The bundle's content hash does not match its contents.
    Hash(String),
    /// The optimized IR in the bundle does not parse or verify.
    Ir(String),
    /// A kernel's SPIR-V is malformed (rejected before it reaches the driver).
    Spirv {
        /// Kernel name.
        kernel: String,
        /// What is wrong.
        reason: String,
    },
    /// The bundle is inconsistent with its IR (schedule, layouts, plans).
    Bundle(String),
    /// No Vulkan loader, no suitable device, or a Vulkan call failed.
    Vulkan(String),
    /// A name (memory, graph, node, parameter, callback) is unknown.
    Unknown(String),
    /// The bundle's signature does not verify, or trusted keys are required
    /// ([`crate::load::LoadOptions::trusted_keys`]) and it is unsigned or signed by another key.
    Untrusted(String),
    /// A request the executor cannot carry out (bad size, bad value, unsupported feature).
    Invalid(String),
    /// A host-task callback failed.
    Host {
        /// The host-task node.
        node: String,
        /// What the callback reported.
        reason: String,
    },
    /// An update would make a node use a graph allocation where it is not live: before its
    /// `async_malloc` or after its `async_free`, on some order of the graph (the verifier's
    /// rule, E0244–E0246, which the interpreter enforces when the node runs). The pool bytes
    /// of a freed allocation belong to another one by then (`plan-memory`).
    AllocNotLive {
        /// The dynamic parameter being set (without `%`).
        param: String,
        /// The allocation: its `async_malloc` node (without `%`).
        alloc: String,
        /// The node that uses the parameter (without `%`).
        node: String,
        /// Where that node runs against the allocation's lifetime.
        when: NotLive,
    },
    /// A wait for the device passed [`crate::ContextOptions::timeout`]. The work goes on:
    /// waiting again (`wait`, `wait_idle`) returns once it is done, and the executor stays
    /// usable; dropped before that, it leaks its device objects instead of blocking.
    Timeout {
        /// What was being waited for.
        what: String,
        /// The deadline that passed.
        after: Duration,
    },
}

/// Why a graph allocation is not live at a node ([`ExecError::AllocNotLive`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotLive {
    /// The node runs before the `async_malloc` (it is ordered before it): not yet allocated.
    BeforeMalloc,
    /// The node is not ordered after the `async_malloc`: it may run before the allocation.
    NotAfterMalloc,
    /// The node runs after `async_free` node `free` (without `%`): freed.
    AfterFree {
        /// The `async_free` node.
        free: String,
    },
    /// The node is not ordered before `async_free` node `free`: it may run after the free.
    NotBeforeFree {
        /// The `async_free` node.
        free: String,
    },
}

impl fmt::Display for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExecError::Malformed(m) => write!(f, "malformed bundle: {m}"),
            ExecError::Version { found, expected } => {
                write!(
                    f,
                    "bundle format version {found}, this executor reads version {expected}: recompile the module \
                     with this build's `cmdgraph compile`"
                )
            }
            ExecError::Hash(m) => write!(f, "bundle content hash mismatch: {m}"),
            ExecError::Ir(m) => write!(f, "bundle IR is invalid: {m}"),
            ExecError::Spirv { kernel, reason } => write!(f, "kernel @{kernel}: invalid SPIR-V: {reason}"),
            ExecError::Bundle(m) => write!(f, "inconsistent bundle: {m}"),
            ExecError::Vulkan(m) => write!(f, "vulkan: {m}"),
            ExecError::Unknown(m) => write!(f, "unknown {m}"),
            ExecError::Untrusted(m) => write!(f, "{m}"),
            ExecError::Invalid(m) => write!(f, "{m}"),
            ExecError::Host { node, reason } => write!(f, "host task %{node} failed: {reason}"),
            ExecError::AllocNotLive { param, alloc, node, when } => {
                let why = match when {
                    NotLive::BeforeMalloc => format!("runs before %{alloc} is allocated (it is not yet allocated)"),
                    NotLive::NotAfterMalloc => {
                        format!("is not ordered after %{alloc}'s async_malloc (it may not be allocated yet)")
                    }
                    NotLive::AfterFree { free } => format!("runs after %{alloc} is freed by %{free}"),
                    NotLive::NotBeforeFree { free } => {
                        format!("is not ordered before %{free}, which frees %{alloc} (it may be freed)")
                    }
                };
                write!(
                    f,
                    "%{param} cannot point at graph allocation %{alloc}: node %{node} uses %{param} and {why}; \
                     point it at memory live at every node that uses it (an allocation made before and freed \
                     after each of them)"
                )
            }
            ExecError::Timeout { what, after } => write!(
                f,
                "timed out after {after:?} waiting for {what}; the work is still running on the device (a \
                 launch too large or a kernel that does not end?): wait again, or raise the deadline \
                 (`ContextOptions::timeout`, `cmdgraph run --timeout SECONDS`)"
            ),
        }
    }
}

impl std::error::Error for ExecError {}

impl From<ash::vk::Result> for ExecError {
    fn from(r: ash::vk::Result) -> ExecError {
        ExecError::Vulkan(format!("{r:?}"))
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = ExecError> = std::result::Result<T, E>;
