//! A memory plan in the form the passes produce and the interpreter runs: graph-owned
//! allocations at byte offsets of one pool.

use crate::arena::Handle;
use crate::graph::Node;

/// A memory plan: the pool size and each allocation's offset in it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PoolLayout {
    /// Pool size in bytes.
    pub size: u64,
    /// Byte offset of every `async_malloc` node of the graph.
    pub offsets: std::collections::HashMap<Handle<Node>, u64>,
}
