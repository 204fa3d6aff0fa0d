//! cmdgraph-executor: runs a compiled bundle (docs/abi.md) on Vulkan 1.3, without LLVM.
//!
//! An application loads a bundle ([`load::load_bytes`]), creates an [`Executor`] on a device,
//! binds its memory by name, finalizes a graph into an executable, runs it, updates it and
//! runs it again (docs/executor.md). Every malformed input is an [`ExecError`].

pub mod error;
pub mod features;
pub mod load;
pub mod spirv;
pub mod spirv_val;
pub mod vk;

pub use error::{ExecError, NotLive, Result};
pub mod args;
mod barriers;
mod eager;
pub mod exec;
mod executable;
pub mod interop;
pub mod multi;
pub mod peer;
pub mod profile;
mod runtime;
pub mod schedule;
mod update;
mod worker;

/// The `ash` the executor's Vulkan types come from (`vk::Buffer`, `vk::Semaphore`, ...), so
/// an application passes its handles with the same definitions.
pub use ash;
pub use cmdgraph_ir::host::{HostError, HostFn, HostMemory};
pub use exec::{
    BarrierPolicy, CopyPolicy, ExecId, Executor, HostContext, NativeContext, RecordOptions, VulkanObjects,
    MAPPED_USER_MAX,
};
pub use executable::conditional::LADDER as LOOP_LADDER;
pub use executable::copies::CopyPath;
pub use executable::plan::HostTaskWait;
pub use interop::{RunSync, SemaphoreValue};
pub use load::{load_bytes, Loaded};
pub use multi::{MultiExecId, MultiExecutor, StageProfile};
pub use profile::{NodeProfile, Profile};
pub use vk::{
    vulkan_devices, ContextOptions, DeviceChoice, DeviceDescription, DeviceKind, ExternalVulkan, DEFAULT_TIMEOUT,
};
