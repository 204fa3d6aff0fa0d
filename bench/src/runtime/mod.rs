//! Runtime suites (issue 9): bundles run on a Vulkan device through `cmdgraph_executor`,
//! prepared here (`--prepare DIR`, needs LLVM) and run anywhere (`--from DIR`).

pub mod fusion_run;
pub mod mlp;
