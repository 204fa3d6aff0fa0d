//! Runtime suites (issue 9): bundles compiled by `cmdgraph_codegen` and run by
//! `cmdgraph_executor` on a Vulkan device, each peer timed in the same process. Every suite
//! can compile into a directory (`--prepare DIR`, where LLVM is) and run from it
//! (`--from DIR`, on the GPU machine), or do both at once.

pub mod api_latency;
pub mod barrier_run;
pub mod cond;
pub mod copy;
pub mod fusion_run;
pub mod harness;
pub mod iree;
pub mod latency;
pub mod load;
pub mod mlp;
pub mod mlp_f16;
pub mod mpi;
pub mod multi_device;
pub mod replay;
pub mod shader_run;
pub mod stages;
pub mod update;
