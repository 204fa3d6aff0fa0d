//! `cmdgraph-ir`: the command-graph IR.
//!
//! The data model ([`module`], [`graph`], [`kernel`], [`types`]) stores every entity in a
//! typed [`arena::Arena`]. Around it: the text format ([`text`]: lexer, parser, printer),
//! the verifier ([`verify`]), the DOT writer ([`dot`]), diffs ([`diff`]), diagnostics
//! ([`diag`]), the bundle format ([`bundle`]) and host data encoding ([`data`]). Nothing
//! here links LLVM, Vulkan or egg, and nothing here runs a graph: the reference interpreter
//! is the `cmdgraph-interp` crate.

pub mod arena;
pub mod bundle;
pub mod comm;
pub mod conditional;
pub mod csr;
pub mod data;
pub mod diag;
pub mod diff;
pub mod dot;
pub mod edit;
pub mod footprint;
pub mod graph;
pub mod host;
pub mod identity;
pub mod inline;
pub mod kernel;
pub mod module;
pub mod placement;
pub mod pool;
pub mod runtime;
pub mod span;
pub mod subgroup;
pub mod suggest;
pub mod text;
pub mod types;
pub mod verify;

pub use arena::{Arena, Handle};
pub use graph::*;
pub use kernel::{
    Body, Kernel, KernelBody, Op, OpKind, Param, ParamType, Region, ShaderLang, ShaderSource, SpirvInterface, Value,
    ValueDef, ValueType,
};
pub use module::*;
pub use span::Span;
pub use types::*;
