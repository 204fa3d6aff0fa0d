//! `cmdgraph-sycl`: a Rust builder API mirroring SYCL's `sycl_ext_oneapi_graph`, with
//! SYCL's construction semantics, that writes the cmdgraph IR.
//!
//! | SYCL | here |
//! |---|---|
//! | `context`, `device`, `queue`, `event` | [`Context`], [`Device`], [`Queue`], [`Event`] |
//! | `command_graph<modifiable>` / `<executable>` | [`ModifiableGraph`] / [`ExecutableGraph`] |
//! | `node`, `node_type` | [`Node`], [`NodeType`] |
//! | `handler` and a command-group function | [`Handler`], `FnOnce(&mut Handler)`, [`CommandGroup`] |
//! | `dynamic_parameter`, `dynamic_command_group` | [`DynamicParameter`], [`DynamicCommandGroup`] |
//! | USM allocation, `buffer`, `accessor`, `device_global` | [`Usm`], [`Buffer`], [`Accessor`], [`DeviceGlobal`] |
//! | property lists | [`GraphProps`], [`FinalizeProps`], [`NodeProps`], [`QueueProps`], [`RecordingProps`], [`MemoryPool`] |
//! | synchronous exceptions | [`SyclError`] with its [`Errc`] and §22 row |
//! | multi-device graphs (extension) | [`NodeProps::on_device`], [`Usm::device_on`] (docs/multi-device.md) |
//!
//! Handles have SYCL's common reference semantics: copies share one object. Every graph
//! writes an IR [`cmdgraph_ir::Graph`] as it is built: nodes and edges in creation order,
//! each edge with the API call that made it. `docs/semantics.md` states the construction
//! rules, the decisions on the spec's ambiguities and where each error row is tested.

mod args;
mod buffer;
mod bundles;
mod dynamic;
mod error;
mod exec;
mod global;
mod graph;
mod handler;
mod kernel;
mod memory;
mod node;
mod platform;
mod props;
mod queue;
mod run;
mod runner;
mod trace;

pub use args::{KArg, NdRange, Range};
pub use buffer::{Accessor, Buffer};
pub use cmdgraph_executor::DeviceKind;
pub use cmdgraph_interp::{HostError, HostMemory};
pub use cmdgraph_ir::comm::{ReduceOp, SharedCommunicator};
pub use cmdgraph_ir::data::half::{self, f16};
pub use cmdgraph_ir::{Access, NodeType, Type, UsmKind};
/// The argument values the runtimes take (`Runtime::update_param`, the interpreter's and
/// the executor's `update_param`), so an application need not depend on `cmdgraph-ir`.
/// The IR's accessor value is `ArgAccessor` here (the API's [`Accessor`] is the handle).
pub use cmdgraph_ir::{Accessor as ArgAccessor, ArgValue, LitValue, Literal, MemRef, Pointer, ScalarType};
pub use dynamic::{DynamicCommandGroup, DynamicParameter};
pub use error::{Errc, Result, SyclError};
pub use exec::{ExecutableGraph, EXPORT_DIR_VAR};
pub use global::DeviceGlobal;
pub use graph::ModifiableGraph;
pub use handler::{CommandGroup, Handler};
pub use kernel::{KValue, KernelBuilder, KernelRef};
pub use memory::{Element, Ptr, Usm};
pub use node::Node;
pub use platform::{
    Backend, BundleCompiler, BundleSource, Context, Device, DeviceInfo, GraphSupport, BUNDLE_DIR_VAR,
    BUNDLE_VALIDATION_VAR,
};
pub use props::{FinalizeProps, GraphProps, MemoryPool, NodeProps, QueueProps, RecordingProps};
pub use queue::{Event, EventStatus, ProfilingInfo, Queue, QueueState};
pub use run::{HostTaskFn, InteropHandle, NativeFn, NativeGraph};
pub use trace::MEMORY_TRACE_VAR;
