//! Property lists, as plain Rust values.
//!
//! Constructor properties ([`GraphProps`]) and finalize properties ([`FinalizeProps`]) are
//! distinct types, so a property cannot be passed where the spec does not define it
//! (decision A10 in `docs/semantics.md`).

use crate::node::Node;
use cmdgraph_ir::UsmKind;

/// `command_graph` constructor properties (`property::graph::*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GraphProps {
    /// `no_cycle_check`: `make_edge` does not look for cycles.
    pub no_cycle_check: bool,
    /// `assume_buffer_outlives_graph`: buffers may be used in the graph.
    pub assume_buffer_outlives_graph: bool,
}

impl GraphProps {
    /// No property.
    pub fn none() -> GraphProps {
        GraphProps::default()
    }

    /// Only `assume_buffer_outlives_graph`.
    pub fn buffers() -> GraphProps {
        GraphProps { assume_buffer_outlives_graph: true, ..GraphProps::default() }
    }
}

/// `finalize` properties.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FinalizeProps {
    /// `updatable`: the executable graph may be updated.
    pub updatable: bool,
    /// `enable_profiling`: events of its submissions can be profiled.
    pub enable_profiling: bool,
}

impl FinalizeProps {
    /// No property.
    pub fn none() -> FinalizeProps {
        FinalizeProps::default()
    }

    /// Only `updatable`.
    pub fn updatable() -> FinalizeProps {
        FinalizeProps { updatable: true, enable_profiling: false }
    }
}

/// Properties of `begin_recording`, inherited by queues that start recording
/// transitively (000 §8.5.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecordingProps {
    /// `graph::assume_data_outlives_buffer` (000 §10.1.1): no internal copy of host data.
    /// Buffer contents live in the context here, so it changes nothing but is kept and
    /// inherited as the spec says.
    pub assume_data_outlives_buffer: bool,
}

/// Node properties of `add` (`property::node::*`).
#[derive(Clone, Debug, Default)]
pub struct NodeProps {
    pub(crate) depends_on: Vec<Node>,
    pub(crate) all_leaves: bool,
    /// Extension (docs/multi-device.md, "The SYCL-like API"): the device the node runs on.
    pub(crate) device: Option<crate::Device>,
}

impl NodeProps {
    /// No property.
    pub fn none() -> NodeProps {
        NodeProps::default()
    }

    /// `property::node::depends_on(nodes...)`: an edge from each node, in order.
    pub fn depends_on(nodes: &[&Node]) -> NodeProps {
        NodeProps { depends_on: nodes.iter().map(|n| (*n).clone()).collect(), ..NodeProps::default() }
    }

    /// `property::node::depends_on_all_leaves()`.
    pub fn all_leaves() -> NodeProps {
        NodeProps { all_leaves: true, ..NodeProps::default() }
    }

    /// Adds `depends_on_all_leaves` to this list.
    pub fn and_all_leaves(mut self) -> NodeProps {
        self.all_leaves = true;
        self
    }

    /// `property::node::device(dev)`, this crate's multi-device extension: the node runs on
    /// `dev`, a device of the graph's context, instead of the graph's device. A graph with
    /// such nodes is a multi-device graph (`device(N)` in the IR, N the device's id); data
    /// moves between devices only through copies between memory of each
    /// ([`Usm::device_on`](crate::Usm::device_on)), as CUDA's peer copies.
    pub fn on_device(dev: &crate::Device) -> NodeProps {
        NodeProps { device: Some(dev.clone()), ..NodeProps::default() }
    }

    /// Adds [`on_device`](Self::on_device) to this list.
    pub fn and_on_device(mut self, dev: &crate::Device) -> NodeProps {
        self.device = Some(dev.clone());
        self
    }
}

/// Queue properties.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueProps {
    /// `property::queue::in_order`.
    pub in_order: bool,
    /// `ext::oneapi::property::queue::discard_events`.
    pub discard_events: bool,
    /// `property::queue::enable_profiling`.
    pub enable_profiling: bool,
}

impl QueueProps {
    /// An out-of-order queue.
    pub fn none() -> QueueProps {
        QueueProps::default()
    }

    /// An in-order queue.
    pub fn in_order() -> QueueProps {
        QueueProps { in_order: true, ..QueueProps::default() }
    }
}

/// A memory pool's properties, as far as graph allocations honour them (000 §8.4.3):
/// the allocation kind and `memory_pool::zero_init`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryPool {
    /// The pool's `usm::alloc` kind (only `device` is legal in graphs).
    pub kind: UsmKind,
    /// `property::memory_pool::zero_init`.
    pub zero_init: bool,
}

impl Default for MemoryPool {
    fn default() -> Self {
        MemoryPool { kind: UsmKind::Device, zero_init: false }
    }
}
