//! Command graphs: nodes, edges with provenance, dynamic parameters, dynamic command groups.
//!
//! Creation order is data. `Graph::nodes` is in the order nodes were added (what
//! `get_nodes()` returns and what whole-graph update pairs by); `Graph::edges` is in the
//! order edges were created. Every edge whose [`EdgeKind`] is not [`EdgeKind::MakeEdge`]
//! is created together with its destination node (by `add`, a recorded submission, an
//! accessor, an in-order queue, a barrier or transitive recording) and is printed inline on
//! that node; `make_edge` edges are statements of their own. `Graph::body` keeps the
//! statement order the printer follows.

use crate::arena::{Arena, Handle};
use crate::kernel::Kernel;
use crate::module::{Comments, MemoryObject, UsmKind};
use crate::span::SpanTable;
use crate::types::{Access, Literal, Type};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A modifiable command graph (`command_graph<graph_state::modifiable>`) together with the
/// finalize properties it is meant to be compiled with.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Graph {
    /// Name without the `@`.
    pub name: String,
    /// Constructor and finalize properties.
    pub properties: GraphProperties,
    /// The device the graph targets (`device(N)`; 0 when not written).
    pub device: u32,
    /// The context the graph belongs to (`context(N)`; 0 when not written).
    pub context: u32,
    /// Queues that recorded into this graph.
    pub queues: Arena<Queue>,
    /// Dynamic parameters.
    pub dyn_params: Arena<DynParam>,
    /// Dynamic command groups.
    pub dcgs: Arena<DynCommandGroup>,
    /// Nodes in creation order.
    pub nodes: Arena<Node>,
    /// Edges in creation order.
    pub edges: Arena<Edge>,
    /// Statements in source order.
    pub body: Vec<Stmt>,
    /// Comments before the closing brace.
    pub closing_comments: Vec<String>,
    /// Comments attached to the `graph` line.
    pub comments: Comments,
    /// Comments attached to `edge %a -> %b` statements (an [`Edge`] is `Copy` and carries
    /// none itself); only `make_edge` edges have statements of their own.
    #[serde(default)]
    pub edge_comments: BTreeMap<Handle<Edge>, Comments>,
    /// Spans of kernel arguments and other sub-parts (for diagnostics).
    #[serde(skip)]
    pub spans: SpanTable<Site>,
}

/// A part of a graph statement that diagnostics point at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Site {
    /// Argument `index` of a kernel node.
    NodeArg(Handle<Node>, u32),
    /// Argument `index` of alternative `alt` of a dynamic command group.
    AltArg(Handle<DynCommandGroup>, u32, u32),
    /// Alternative `alt` of a dynamic command group.
    Alt(Handle<DynCommandGroup>, u32),
    /// The launch (range / nd_range) of a kernel node.
    NodeLaunch(Handle<Node>),
    /// Entry `index` of a node's `access(...)` list or barrier `wait(...)` list.
    NodeListItem(Handle<Node>, u32),
}

/// Graph properties (`property::graph::*`). `no_cycle_check` and
/// `assume_buffer_outlives_graph` are constructor properties; `updatable` and
/// `enable_profiling` are finalize properties that `compile` uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphProperties {
    /// `no_cycle_check`
    pub no_cycle_check: bool,
    /// `assume_buffer_outlives_graph`
    pub assume_buffer_outlives_graph: bool,
    /// `updatable`
    pub updatable: bool,
    /// `enable_profiling`
    pub enable_profiling: bool,
}

impl GraphProperties {
    /// Property keywords in canonical order.
    pub const KEYWORDS: [&'static str; 4] =
        ["no_cycle_check", "assume_buffer_outlives_graph", "updatable", "enable_profiling"];

    /// Sets the property named `word`; returns false for an unknown word.
    pub fn set(&mut self, word: &str) -> bool {
        let slot = match word {
            "no_cycle_check" => &mut self.no_cycle_check,
            "assume_buffer_outlives_graph" => &mut self.assume_buffer_outlives_graph,
            "updatable" => &mut self.updatable,
            "enable_profiling" => &mut self.enable_profiling,
            _ => return false,
        };
        *slot = true;
        true
    }

    /// The keywords of the properties that are set, in canonical order.
    pub fn keywords(&self) -> Vec<&'static str> {
        let flags = [self.no_cycle_check, self.assume_buffer_outlives_graph, self.updatable, self.enable_profiling];
        Self::KEYWORDS.iter().zip(flags).filter(|(_, on)| *on).map(|(k, _)| *k).collect()
    }
}

/// One statement of a graph body, in source order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Stmt {
    /// `queue @q ...`
    Queue(Handle<Queue>),
    /// `dyn %p = ...`
    DynParam(Handle<DynParam>),
    /// `dcg %d ... { ... }`
    Dcg(Handle<DynCommandGroup>),
    /// `%n = <command> ...` (with its inline edges)
    Node(Handle<Node>),
    /// `edge %a -> %b` (a `make_edge` call)
    MakeEdge(Handle<Edge>),
}

/// A queue that recorded into the graph: `queue @q0 [in_order]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Queue {
    /// Name without the `@`.
    pub name: String,
    /// `in_order` queue (consecutive submissions form a chain).
    pub in_order: bool,
    /// `discard_events`: its events cannot form edges.
    pub discard_events: bool,
    /// Attached comments.
    pub comments: Comments,
}

/// A happens-before edge `from -> to` (`to` depends on `from`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Edge {
    /// The node that must complete first.
    pub from: Handle<Node>,
    /// The dependent node.
    pub to: Handle<Node>,
    /// Which API call created the edge.
    pub kind: EdgeKind,
}

/// Edge provenance: the API call that created an edge. Whole-graph update requires each
/// node's edges to have been made in the same order by the same call (000 §8.4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum EdgeKind {
    /// `command_graph::make_edge` (a statement `edge %a -> %b`).
    MakeEdge,
    /// `property::node::depends_on` (inline, the default: printed without a tag).
    DependsOn,
    /// `property::node::depends_on_all_leaves` (`via all_leaves`).
    AllLeaves,
    /// A buffer accessor data dependency (`via accessor`).
    Accessor,
    /// `handler::depends_on(event)` or a shortcut's event list (`via event`).
    Event,
    /// Consecutive submissions to an in-order queue (`via in_order`).
    InOrder,
    /// A barrier: into the barrier from its wait list or the queue's leaves, or out of
    /// it to later submissions on the same queue (`via barrier`).
    Barrier,
    /// The first submission of a transitively recording queue (`via transitive`).
    Transitive,
}

impl EdgeKind {
    /// Every provenance, in keyword order.
    pub const ALL: [EdgeKind; 8] = [
        EdgeKind::MakeEdge,
        EdgeKind::DependsOn,
        EdgeKind::AllLeaves,
        EdgeKind::Accessor,
        EdgeKind::Event,
        EdgeKind::InOrder,
        EdgeKind::Barrier,
        EdgeKind::Transitive,
    ];

    /// The keyword spelling this provenance (after `via`).
    pub fn keyword(self) -> &'static str {
        match self {
            EdgeKind::MakeEdge => "make_edge",
            EdgeKind::DependsOn => "depends_on",
            EdgeKind::AllLeaves => "all_leaves",
            EdgeKind::Accessor => "accessor",
            EdgeKind::Event => "event",
            EdgeKind::InOrder => "in_order",
            EdgeKind::Barrier => "barrier",
            EdgeKind::Transitive => "transitive",
        }
    }

    /// Parses a keyword.
    pub fn from_keyword(word: &str) -> Option<EdgeKind> {
        EdgeKind::ALL.into_iter().find(|k| k.keyword() == word)
    }
}

/// A graph node: one command (or a sub-graph, or nothing).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Node {
    /// Name without the `%`; the stable identity used by DOT, diff and update.
    pub name: String,
    /// The command.
    pub kind: NodeKind,
    /// The queue the node was recorded from (`on @q`), `None` for the explicit API.
    pub queue: Option<Handle<Queue>>,
    /// The device the node runs on (`device(N)`; `None`: the graph's device). A graph whose
    /// nodes run on several devices is a multi-device graph (docs/multi-device.md).
    #[serde(default)]
    pub device: Option<u32>,
    /// Attached comments.
    pub comments: Comments,
}

/// The spec's `node_type`, plus `native_command` (decision A3 in docs/semantics.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum NodeType {
    /// `node_type::empty`
    Empty,
    /// `node_type::subgraph`
    Subgraph,
    /// `node_type::kernel`
    Kernel,
    /// `node_type::memcpy`
    Memcpy,
    /// `node_type::memset`
    Memset,
    /// `node_type::memfill`
    Memfill,
    /// `node_type::prefetch`
    Prefetch,
    /// `node_type::memadvise`
    Memadvise,
    /// `node_type::ext_oneapi_barrier`
    Barrier,
    /// `node_type::host_task`
    HostTask,
    /// `node_type::async_malloc`
    AsyncMalloc,
    /// `node_type::async_free`
    AsyncFree,
    /// An `enqueue_native_command` node (no `node_type` in the spec).
    NativeCommand,
    /// `if`, `while` or `switch` over body graphs (CUDA's conditional node; no `node_type`
    /// in the spec; docs/conditional.md).
    Conditional,
    /// `send`, `recv` or `allreduce` between ranks (no `node_type` in the spec; docs/mpi.md).
    Communication,
}

impl NodeType {
    /// A short lowercase name (`kernel`, `memcpy`, `ext_oneapi_barrier`, ...).
    pub fn name(self) -> &'static str {
        match self {
            NodeType::Empty => "empty",
            NodeType::Subgraph => "subgraph",
            NodeType::Kernel => "kernel",
            NodeType::Memcpy => "memcpy",
            NodeType::Memset => "memset",
            NodeType::Memfill => "memfill",
            NodeType::Prefetch => "prefetch",
            NodeType::Memadvise => "memadvise",
            NodeType::Barrier => "ext_oneapi_barrier",
            NodeType::HostTask => "host_task",
            NodeType::AsyncMalloc => "async_malloc",
            NodeType::AsyncFree => "async_free",
            NodeType::NativeCommand => "native_command",
            NodeType::Conditional => "conditional",
            NodeType::Communication => "communication",
        }
    }
}

/// What a node does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum NodeKind {
    /// `empty`
    Empty,
    /// `kernel @k <launch> args(...)`
    Kernel(KernelCommand),
    /// `memcpy <dst>, <src>, <bytes>` (SYCL argument order).
    Memcpy {
        /// Destination.
        dst: Pointer,
        /// Source.
        src: Pointer,
        /// Byte count.
        bytes: u64,
    },
    /// `memset <dst>, <byte value>, <bytes>`
    Memset {
        /// Destination.
        dst: Pointer,
        /// The byte written.
        value: u8,
        /// Byte count.
        bytes: u64,
    },
    /// `memfill <dst>, <pattern : type>, <count>` (SYCL `fill`).
    Memfill {
        /// Destination.
        dst: Pointer,
        /// The pattern, with its type written.
        pattern: Literal,
        /// Number of pattern elements written.
        count: u64,
    },
    /// `prefetch <ptr>, <bytes>`
    Prefetch {
        /// Start of the range.
        ptr: Pointer,
        /// Byte count.
        bytes: u64,
    },
    /// `memadvise <ptr>, <bytes>, <advice>`
    Memadvise {
        /// Start of the range.
        ptr: Pointer,
        /// Byte count.
        bytes: u64,
        /// Backend advice value.
        advice: i32,
    },
    /// `barrier [wait(%a, %b)]` (recorded only; `on @q` names its queue).
    Barrier {
        /// The events waited on, as the nodes that produced them; empty means "the leaves
        /// recorded from the same queue".
        wait: Vec<Handle<Node>>,
    },
    /// `host_task "callback" [access(...)]`
    HostTask(HostTaskCommand),
    /// `subgraph @g`: the executable form of another graph of the module.
    Subgraph {
        /// The child graph.
        graph: Handle<crate::graph::Graph>,
    },
    /// `async_malloc T[N] [device|shared|host] [zero_init]`; the node's name is also the
    /// pointer to the allocation.
    AsyncMalloc {
        /// Element type.
        elem: Type,
        /// Element count.
        count: u64,
        /// The pool's `usm::alloc` kind (only `device` is legal).
        kind: UsmKind,
        /// `memory_pool::zero_init`: zeroed at each finalize.
        zero_init: bool,
    },
    /// `async_free %alloc`
    AsyncFree {
        /// The `async_malloc` node whose memory is freed.
        alloc: Handle<Node>,
    },
    /// `native "callback" [access(...)]` (`enqueue_native_command`).
    Native(HostTaskCommand),
    /// `dynamic %dcg`: a node whose command is the active alternative of a dynamic
    /// command group.
    Dynamic {
        /// The dynamic command group.
        dcg: Handle<DynCommandGroup>,
    },
    /// `if <cond> then @a [else @b]`, `while <cond> do @body`, `switch <cond> cases(@b0, ...)`:
    /// runs body graphs as the `u32` at `cond` decides (docs/conditional.md).
    Conditional {
        /// Which construct.
        kind: CondKind,
        /// The condition word: a `u32` of module memory.
        cond: Pointer,
        /// The bodies: `if` then (and else), `while` the body, `switch` the cases in order.
        bodies: Vec<Handle<crate::graph::Graph>>,
    },
    /// `send @x, N to(R) tag(T)`, `recv @x, N from(R) tag(T)`, `allreduce sum @x, N`:
    /// communication between ranks (docs/mpi.md).
    Comm(crate::comm::CommCommand),
}

/// The construct of a conditional node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CondKind {
    /// `if`: the first body when the word is non-zero, else the second (if any).
    If,
    /// `while`: the body again and again while the word is non-zero, read before each round.
    While,
    /// `switch`: the body whose index is the word; none past the last.
    Switch,
}

impl CondKind {
    /// The command as the text writes it: `if C then @a else @b`, `while C do @a`,
    /// `switch C cases(@a, @b)`, from the condition's and the bodies' text.
    pub fn command_text(self, cond: &str, bodies: &[String]) -> String {
        match self {
            CondKind::If => {
                let mut s = format!("if {cond} then {}", bodies.first().map_or("", |b| b.as_str()));
                if let Some(e) = bodies.get(1) {
                    s.push_str(" else ");
                    s.push_str(e);
                }
                s
            }
            CondKind::While => format!("while {cond} do {}", bodies.first().map_or("", |b| b.as_str())),
            CondKind::Switch => format!("switch {cond} cases({})", bodies.join(", ")),
        }
    }

    /// How many bodies the construct takes, at least and at most: `if` 1 or 2, `while` 1,
    /// `switch` 1 or more.
    pub fn body_counts(self) -> (usize, usize) {
        match self {
            CondKind::If => (1, 2),
            CondKind::While => (1, 1),
            CondKind::Switch => (1, usize::MAX),
        }
    }

    /// The text keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            CondKind::If => "if",
            CondKind::While => "while",
            CondKind::Switch => "switch",
        }
    }
}

impl NodeKind {
    /// The spec's node type. A `dynamic` node reports [`NodeType::Kernel`]; use
    /// [`Graph::node_type`] to see host-task alternatives.
    pub fn node_type(&self) -> NodeType {
        match self {
            NodeKind::Empty => NodeType::Empty,
            NodeKind::Kernel(_) | NodeKind::Dynamic { .. } => NodeType::Kernel,
            NodeKind::Memcpy { .. } => NodeType::Memcpy,
            NodeKind::Memset { .. } => NodeType::Memset,
            NodeKind::Memfill { .. } => NodeType::Memfill,
            NodeKind::Prefetch { .. } => NodeType::Prefetch,
            NodeKind::Memadvise { .. } => NodeType::Memadvise,
            NodeKind::Barrier { .. } => NodeType::Barrier,
            NodeKind::HostTask(_) => NodeType::HostTask,
            NodeKind::Subgraph { .. } => NodeType::Subgraph,
            NodeKind::AsyncMalloc { .. } => NodeType::AsyncMalloc,
            NodeKind::AsyncFree { .. } => NodeType::AsyncFree,
            NodeKind::Native(_) => NodeType::NativeCommand,
            NodeKind::Conditional { .. } => NodeType::Conditional,
            NodeKind::Comm(_) => NodeType::Communication,
        }
    }
}

/// A kernel launch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelCommand {
    /// The kernel (its identity for whole-graph update).
    pub kernel: Handle<Kernel>,
    /// The execution space.
    pub launch: Launch,
    /// Arguments by position, matching the kernel's parameters.
    pub args: Vec<Arg>,
}

/// A kernel's execution space. Dimensions are 1 to 3.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Launch {
    /// `single_task`
    SingleTask,
    /// `range(X[, Y[, Z]])`
    Range(Vec<u64>),
    /// `nd_range(global(X, ...), local(X, ...)[, offset(X, ...)])`
    NdRange {
        /// Global size per dimension.
        global: Vec<u64>,
        /// Work-group size per dimension.
        local: Vec<u64>,
        /// Global offset per dimension (empty when not written).
        offset: Vec<u64>,
    },
}

/// The most work-items one launch may have: 2^32.
///
/// Every id and size builtin is a `u32` (docs/ir.md, "Execution semantics"), so a kernel
/// can tell at most 2^32 work-items apart by a linear id computed from them, and the
/// argument block gives each buffer argument a `u32` element count (docs/abi.md), so no
/// buffer has an element per work-item of a larger launch. Past this bound a launch is
/// work no kernel can index — `range(16776960, 65535)` is 1.1e12 work-items, hours on any
/// device. The verifier refuses such a launch (E0209), and so do the bundle loader (it
/// verifies the bundle's IR), the interpreter and the executor's range updates; this is
/// the one place the bound is defined.
pub const MAX_LAUNCH_WORK_ITEMS: u64 = 1 << 32;

impl Launch {
    /// Number of dimensions (0 for `single_task`).
    pub fn dims(&self) -> usize {
        match self {
            Launch::SingleTask => 0,
            Launch::Range(r) => r.len(),
            Launch::NdRange { global, .. } => global.len(),
        }
    }

    /// Its work-items: the product of the (global) sizes, 1 for `single_task`; `None` when
    /// the product does not fit 64 bits.
    pub fn work_items(&self) -> Option<u64> {
        let sizes: &[u64] = match self {
            Launch::SingleTask => &[],
            Launch::Range(r) => r,
            Launch::NdRange { global, .. } => global,
        };
        sizes.iter().try_fold(1u64, |n, &s| n.checked_mul(s))
    }

    /// Whether the launch stays within [`MAX_LAUNCH_WORK_ITEMS`] (a product past 64 bits
    /// does not).
    pub fn within_work_bound(&self) -> bool {
        self.work_items().is_some_and(|n| n <= MAX_LAUNCH_WORK_ITEMS)
    }
}

/// One kernel argument.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Arg {
    /// A value written in place.
    Value(ArgValue),
    /// A dynamic parameter (`%p`): this slot is registered with it.
    Dyn(Handle<DynParam>),
}

/// The value of an argument or of a dynamic parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ArgValue {
    /// A scalar: `3.0`, `7 : u32`.
    Scalar(Literal),
    /// A USM or graph-owned pointer: `@x`, `@x + 64`, `%tmp`.
    Pointer(Pointer),
    /// A buffer accessor: `acc(@b, read)`, `acc(@b[16..32], write)`.
    Accessor(Accessor),
    /// Raw bytes (`sycl_ext_oneapi_raw_kernel_arg`): `x"0000803f"`.
    Bytes(Vec<u8>),
    /// Work-group memory: `local f32[256]`.
    Local {
        /// Element type.
        elem: Type,
        /// Element count per work-group.
        count: u64,
    },
}

/// Memory a pointer or accessor refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum MemRef {
    /// A module-level `usm`, `buffer` or `device_global` (`@x`).
    Memory(Handle<MemoryObject>),
    /// A graph-owned allocation: the `async_malloc` node (`%t`).
    Alloc(Handle<Node>),
}

/// A pointer: memory plus a byte offset (`@x + 64`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Pointer {
    /// The memory.
    pub base: MemRef,
    /// Byte offset from its start.
    pub offset: u64,
}

/// A buffer accessor: `acc(@b[lo..hi], mode)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Accessor {
    /// The buffer (verifier: must be a `buffer`).
    pub buffer: MemRef,
    /// Access mode; decides accessor edges.
    pub mode: Access,
    /// Element sub-range `[lo, hi)`; `None` for the whole buffer.
    pub range: Option<(u64, u64)>,
}

/// A host task or native command: a callback registered with the runtime by name, and the
/// memory it touches (for edges, race detection and scheduling).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostTaskCommand {
    /// The registered callback's name.
    pub callback: String,
    /// Memory the callback reads or writes: `access(@x read, acc(@b, write))`.
    pub access: Vec<MemAccess>,
}

/// Memory a host task or native command touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemAccess {
    /// The memory.
    pub mem: MemRef,
    /// How it is touched.
    pub mode: Access,
}

/// `dyn %p = <value>`: a `dynamic_parameter`. Its registrations are the kernel argument
/// slots that name it (see [`Graph::registrations`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DynParam {
    /// Name without the `%`.
    pub name: String,
    /// Current value (scalars carry their type).
    pub value: ArgValue,
    /// Attached comments.
    pub comments: Comments,
}

/// `dcg %d active(i) { <alternatives> }`: a `dynamic_command_group`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DynCommandGroup {
    /// Name without the `%`.
    pub name: String,
    /// Index of the active alternative.
    pub active: u32,
    /// The command-group functions, in list order.
    pub alternatives: Vec<Alternative>,
    /// Attached comments.
    pub comments: Comments,
}

/// One alternative of a dynamic command group: a kernel or a host task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Alternative {
    /// `kernel @k <launch> args(...)`
    Kernel(KernelCommand),
    /// `host_task "callback" [access(...)]`
    HostTask(HostTaskCommand),
    /// Any other command, kept so the verifier can reject it with a location.
    Other(Box<NodeKind>),
}

/// A registration of a dynamic parameter with a kernel argument slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Registration {
    /// The node whose argument is registered.
    pub node: Handle<Node>,
    /// For a `dynamic` node, the alternative index; `None` for a plain kernel node.
    pub alternative: Option<u32>,
    /// The argument position.
    pub arg: u32,
}

impl Graph {
    /// Finds a node by name (without the `%`).
    pub fn node_by_name(&self, name: &str) -> Option<Handle<Node>> {
        self.nodes.iter().find(|(_, n)| n.name == name).map(|(h, _)| h)
    }

    /// The device node `node` runs on: its `device(N)`, else the graph's.
    pub fn node_device(&self, node: Handle<Node>) -> u32 {
        self.nodes.try_get(node).and_then(|n| n.device).unwrap_or(self.device)
    }

    /// Whether any node names a device other than the graph's (a multi-device graph).
    pub fn is_multi_device(&self) -> bool {
        self.nodes.iter().any(|(_, n)| n.device.is_some_and(|d| d != self.device))
    }

    /// The spec `node_type` of a node, looking through dynamic command groups.
    pub fn node_type(&self, node: Handle<Node>) -> NodeType {
        match &self.nodes[node].kind {
            NodeKind::Dynamic { dcg } => match self.dcgs.try_get(*dcg).and_then(|d| d.alternatives.first()) {
                Some(Alternative::HostTask(_)) => NodeType::HostTask,
                _ => NodeType::Kernel,
            },
            kind => kind.node_type(),
        }
    }

    /// Direct predecessors of `node`, in edge creation order (duplicates kept).
    pub fn predecessors(&self, node: Handle<Node>) -> Vec<Handle<Node>> {
        self.edges.iter().filter(|(_, e)| e.to == node).map(|(_, e)| e.from).collect()
    }

    /// Direct successors of `node`, in edge creation order (duplicates kept).
    pub fn successors(&self, node: Handle<Node>) -> Vec<Handle<Node>> {
        self.edges.iter().filter(|(_, e)| e.from == node).map(|(_, e)| e.to).collect()
    }

    /// Edges created together with `node` (every non-`make_edge` edge into it), in order.
    pub fn inline_edges(&self, node: Handle<Node>) -> impl Iterator<Item = (Handle<Edge>, &Edge)> {
        self.edges.iter().filter(move |(_, e)| e.to == node && e.kind != EdgeKind::MakeEdge)
    }

    /// Every (node, alternative, argument) slot registered with `param`.
    pub fn registrations(&self, param: Handle<DynParam>) -> Vec<Registration> {
        let mut out = Vec::new();
        for (node, _) in self.nodes.iter() {
            for (alternative, cmd) in self.kernel_commands(node) {
                for (i, arg) in cmd.args.iter().enumerate() {
                    if *arg == Arg::Dyn(param) {
                        out.push(Registration { node, alternative, arg: i as u32 });
                    }
                }
            }
        }
        out
    }

    /// The kernel commands node `node` may launch: its command (alternative `None`), or each
    /// kernel alternative of its dynamic command group (`Some(index)`); none for other nodes.
    pub fn kernel_commands(&self, node: Handle<Node>) -> impl Iterator<Item = (Option<u32>, &KernelCommand)> {
        let (single, alternatives) = match self.nodes.try_get(node).map(|n| &n.kind) {
            Some(NodeKind::Kernel(cmd)) => (Some(cmd), &[][..]),
            Some(NodeKind::Dynamic { dcg }) => {
                (None, self.dcgs.try_get(*dcg).map(|d| d.alternatives.as_slice()).unwrap_or_default())
            }
            _ => (None, &[][..]),
        };
        let alternatives = alternatives.iter().enumerate().filter_map(|(i, a)| match a {
            Alternative::Kernel(cmd) => Some((Some(i as u32), cmd)),
            _ => None,
        });
        single.map(|cmd| (None, cmd)).into_iter().chain(alternatives)
    }
}
