//! The Vulkan layer: context, buffers, pipelines. All `unsafe` of the crate lives here.

pub mod buffer;
pub mod builtin;
pub mod context;
mod cooperative;
pub mod copy;
pub mod external;
pub mod host_bridge;
pub mod pipeline;
pub mod predicate;
pub mod semaphore_probe;
pub mod subgroup;
pub mod transfers;

pub use buffer::{BufRef, Buffer, Place};
pub use context::{
    vulkan_devices, Context, ContextOptions, DeviceChoice, DeviceDescription, DeviceKind, DEFAULT_TIMEOUT,
};
pub use external::ExternalVulkan;
pub use pipeline::KernelPipeline;
pub use transfers::Transfers;
