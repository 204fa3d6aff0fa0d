//! Hand-recorded peers: the same device work the executor records, written directly against
//! ash the way a careful Vulkan programmer would, so benchmarks can report the executor
//! against the hardware's floor in the same process (docs/performance.md).
//!
//! Nothing here is used by the executor itself.

pub mod dispatch;
pub mod stamps;
pub mod transfer;
