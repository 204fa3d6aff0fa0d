//! The C functions called from Rust through the rlib (one test binary, since each links
//! LLVM): every node kind (`node_kinds`), every error class (`errors`), the offline paths
//! (`offline`), communication nodes on two ranks (`comm`).
#![allow(unsafe_code)]
// `c!` (support/mod.rs) wraps each C call in one unsafe block with its SAFETY comment.
#![allow(clippy::macro_metavars_in_unsafe)]

#[macro_use]
#[path = "../support/mod.rs"]
mod support;

mod comm;
mod errors;
mod node_kinds;
mod offline;
