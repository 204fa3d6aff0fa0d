//! C and C++ programs built against the headers and the cdylib, run on Vulkan with
//! validation and compared with Rust and the interpreter (one test binary): the examples
//! (`examples`) and the tour of the C++ header (`cpp_api`).
#![allow(unsafe_code)]
// `c!` (support/mod.rs) wraps each C call in one unsafe block with its SAFETY comment.
#![allow(clippy::macro_metavars_in_unsafe)]

#[macro_use]
#[path = "../support/mod.rs"]
mod support;

mod cpp_api;
mod examples;
