//! Communication between ranks (issue 35): the `send`, `recv` and `allreduce` commands, the
//! [`Communicator`] every runtime calls them through, and how a runtime runs them as host
//! tasks.
//!
//! A communication node is a host task whose callback the runtime supplies: it declares the
//! one memory range it names (`send` reads it, `recv` writes it, `allreduce` does both), and
//! its callback hands those bytes to a [`Communicator`]. The interpreter and the Vulkan
//! executor therefore run it where they run host tasks (on the executor, its host-task
//! thread: the MPI proxy thread of docs/mpi.md), with the same ordering, the same declared
//! memory and the same deadlines. [`local`] simulates several ranks in one process (the
//! oracle); MPI is the `cmdgraph-mpi` crate.

pub mod local;

use crate::graph::{Graph, HostTaskCommand, MemAccess, MemRef, NodeKind, Pointer};
use crate::host::{HostError, HostFn, HostMemory};
use crate::module::Module;
use crate::types::{Access, ScalarType};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::{Arc, Mutex};

/// A communication command: `send @x, N to(R) tag(T)`, `recv @x, N from(R) tag(T)` or
/// `allreduce sum @x, N`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommCommand {
    /// What it does.
    pub op: CommOp,
    /// Start of the bytes sent, received into, or reduced in place.
    pub ptr: Pointer,
    /// Byte count.
    pub bytes: u64,
}

/// The operation of a [`CommCommand`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CommOp {
    /// Sends the bytes to rank `peer` with `tag`.
    Send {
        /// The receiving rank.
        peer: u32,
        /// The message tag.
        tag: u32,
    },
    /// Receives the bytes from rank `peer` with `tag`.
    Recv {
        /// The sending rank.
        peer: u32,
        /// The message tag.
        tag: u32,
    },
    /// Combines every rank's bytes element-wise, in rank order, into every rank's bytes.
    AllReduce(ReduceOp),
}

/// How an all-reduce combines elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ReduceOp {
    /// `sum`
    Sum,
    /// `min`
    Min,
    /// `max`
    Max,
}

impl ReduceOp {
    /// Every operation, in keyword order.
    pub const ALL: [ReduceOp; 3] = [ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max];

    /// The text keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Min => "min",
            ReduceOp::Max => "max",
        }
    }

    /// The operation spelled `word`.
    pub fn from_keyword(word: &str) -> Option<ReduceOp> {
        ReduceOp::ALL.into_iter().find(|op| op.keyword() == word)
    }
}

impl CommOp {
    /// The command keyword: `send`, `recv` or `allreduce`.
    pub fn keyword(self) -> &'static str {
        match self {
            CommOp::Send { .. } => "send",
            CommOp::Recv { .. } => "recv",
            CommOp::AllReduce(_) => "allreduce",
        }
    }

    /// How the command touches its memory.
    pub fn access(self) -> Access {
        match self {
            CommOp::Send { .. } => Access::Read,
            CommOp::Recv { .. } => Access::Write,
            CommOp::AllReduce(_) => Access::ReadWrite,
        }
    }

    /// The peer rank of a send or receive.
    pub fn peer(self) -> Option<u32> {
        match self {
            CommOp::Send { peer, .. } | CommOp::Recv { peer, .. } => Some(peer),
            CommOp::AllReduce(_) => None,
        }
    }
}

impl CommCommand {
    /// The command as the text writes it, from its pointer's text.
    pub fn text(&self, ptr: &str) -> String {
        let bytes = self.bytes;
        match self.op {
            CommOp::Send { peer, tag } => format!("send {ptr}, {bytes} to({peer}) tag({tag})"),
            CommOp::Recv { peer, tag } => format!("recv {ptr}, {bytes} from({peer}) tag({tag})"),
            CommOp::AllReduce(op) => format!("allreduce {} {ptr}, {bytes}", op.keyword()),
        }
    }
}

/// The base name and rank of a rank graph: `step.r1` is rank 1 of `step`.
pub fn rank_of(graph: &str) -> Option<(&str, u32)> {
    let (base, rank) = graph.rsplit_once(".r")?;
    let valid = !base.is_empty() && !rank.is_empty() && rank.bytes().all(|b| b.is_ascii_digit());
    let canonical = rank == "0" || !rank.starts_with('0');
    (valid && canonical).then(|| rank.parse().ok().map(|r| (base, r))).flatten()
}

/// The name of rank `rank`'s graph of `base`: `step.r1`.
pub fn rank_graph(base: &str, rank: u32) -> String {
    format!("{base}.r{rank}")
}

/// The graph rank `rank` runs for `base`: `@base.rR` when the module has it, else `@base`
/// itself (a graph every rank runs alike, such as one of all-reduces only).
pub fn graph_for_rank(module: &Module, base: &str, rank: u32) -> String {
    let base = base.trim_start_matches('@');
    let named = rank_graph(base, rank);
    if module.graphs.iter().any(|(_, g)| g.name == named) {
        named
    } else {
        base.to_string()
    }
}

/// Whether an all-reduce can combine elements of `ty`: integers, `f32` and `f64`.
pub fn reducible(ty: ScalarType) -> bool {
    ty.is_integer() || matches!(ty, ScalarType::F32 | ScalarType::F64)
}

/// The name a runtime registers communication node `%node` of graph `@graph`'s callback
/// under. It cannot be a host task's callback name: those are written as strings in the
/// text, and no string the parser accepts starts with a NUL.
pub fn callback_name(graph: &str, node: &str) -> String {
    format!("\0comm @{graph} %{node}")
}

/// The host task a runtime runs communication node `%node` of `@graph` as: its callback
/// ([`callback_name`]) and the one memory it declares.
pub fn host_task(graph: &str, node: &str, cmd: &CommCommand) -> HostTaskCommand {
    HostTaskCommand {
        callback: callback_name(graph, node),
        access: vec![MemAccess { mem: cmd.ptr.base, mode: cmd.op.access() }],
    }
}

/// The scalar type of `mem` in `graph` of `module` (an all-reduce combines these).
pub fn element_type(module: &Module, graph: &Graph, mem: MemRef) -> Option<ScalarType> {
    match mem {
        MemRef::Memory(m) => module.memories.try_get(m).map(|m| m.elem.scalar),
        MemRef::Alloc(n) => match graph.nodes.try_get(n).map(|n| &n.kind) {
            Some(NodeKind::AsyncMalloc { elem, .. }) => Some(elem.scalar),
            _ => None,
        },
    }
}

/// Every communication node of every graph of `module`: its graph, its name and its host
/// callback, which runs the command through `comm`. A runtime registers these before it
/// runs a graph with communication nodes.
pub fn callbacks(module: &Module, comm: &SharedCommunicator) -> Vec<(String, Box<HostFn>)> {
    let mut out = Vec::new();
    for (_, graph) in module.graphs.iter() {
        for (_, node) in graph.nodes.iter() {
            let NodeKind::Comm(cmd) = &node.kind else { continue };
            let name = callback_name(&graph.name, &node.name);
            let elem = element_type(module, graph, cmd.ptr.base);
            let (cmd, comm) = (cmd.clone(), Arc::clone(comm));
            let f = move |mem: &mut dyn HostMemory| run(&cmd, elem, mem, &comm);
            out.push((name, Box::new(f) as Box<HostFn>));
        }
    }
    out
}

/// Runs `cmd` (whose memory holds `elem`s) on the memory a host callback sees.
pub fn run(
    cmd: &CommCommand,
    elem: Option<ScalarType>,
    mem: &mut dyn HostMemory,
    comm: &SharedCommunicator,
) -> Result<(), HostError> {
    let name = mem.declared().into_iter().next().ok_or_else(|| HostError::failed("no memory declared"))?;
    let node = mem.node().to_string();
    let mut comm = comm.lock().map_err(|_| HostError::failed("the communicator was poisoned by a panic"))?;
    let failed = |e: CommError| HostError::Failed(format!("{}: {e}", cmd.op.keyword()));
    match cmd.op {
        CommOp::Send { peer, tag } => {
            let bytes = mem.read_bytes(&name, cmd.ptr.offset, cmd.bytes)?;
            comm.send(&node, peer, tag, &bytes).map_err(failed)
        }
        CommOp::Recv { peer, tag } => {
            let mut bytes = vec![0; cmd.bytes as usize];
            comm.recv(&node, peer, tag, &mut bytes).map_err(failed)?;
            mem.write(&name, cmd.ptr.offset, &bytes)
        }
        CommOp::AllReduce(op) => {
            let ty = elem
                .filter(|t| reducible(*t))
                .ok_or_else(|| HostError::failed(format!("{name} holds no integer, f32 or f64 elements to reduce")))?;
            let mut bytes = mem.read_bytes(&name, cmd.ptr.offset, cmd.bytes)?;
            comm.allreduce(&node, op, ty, &mut bytes).map_err(failed)?;
            mem.write(&name, cmd.ptr.offset, &bytes)
        }
    }
}

/// A communicator shared by the callbacks of one rank's communication nodes.
pub type SharedCommunicator = Arc<Mutex<dyn Communicator>>;

/// What communication nodes run on: one rank's end of a group of ranks.
///
/// Sends are buffered: `send` returns once the bytes are copied out, whether or not the
/// peer has received them, so two ranks that each send before they receive never wait on
/// each other. Messages between two ranks with one tag arrive in the order sent. Every
/// blocking call ends at the communicator's deadline with [`CommError::Timeout`].
pub trait Communicator: Send {
    /// This rank.
    fn rank(&self) -> u32;
    /// How many ranks there are.
    fn size(&self) -> u32;
    /// Sends `bytes` to rank `to` with `tag`, for node `%node`.
    fn send(&mut self, node: &str, to: u32, tag: u32, bytes: &[u8]) -> Result<(), CommError>;
    /// Receives exactly `out.len()` bytes from rank `from` with `tag`, for node `%node`.
    fn recv(&mut self, node: &str, from: u32, tag: u32, out: &mut [u8]) -> Result<(), CommError>;
    /// Replaces `data` (elements of `ty`) with the element-wise `op` of every rank's `data`,
    /// combined in rank order: `((r0 op r1) op r2) ...`.
    fn allreduce(&mut self, node: &str, op: ReduceOp, ty: ScalarType, data: &mut [u8]) -> Result<(), CommError>;
}

/// Why a communication failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommError {
    /// A peer rank that does not exist, or this rank itself.
    BadPeer {
        /// The rank named.
        peer: u32,
        /// How many ranks there are.
        size: u32,
    },
    /// A message arrived with another size than the receive expects.
    SizeMismatch {
        /// The sending rank.
        peer: u32,
        /// The tag.
        tag: u32,
        /// The sending node, where known.
        sender: Option<String>,
        /// Bytes sent.
        sent: u64,
        /// Bytes expected.
        expected: u64,
    },
    /// The ranks' all-reduces do not agree (operation, type or size).
    ReduceMismatch {
        /// What differs, naming the ranks and nodes.
        detail: String,
    },
    /// A rank waited on that ended (or died) without doing what was waited for.
    PeerGone {
        /// The rank.
        peer: u32,
        /// What was waited for.
        waiting_for: String,
    },
    /// Every rank is waiting and none can go on.
    Deadlock {
        /// What each rank waits for.
        detail: String,
    },
    /// The deadline passed.
    Timeout {
        /// What was waited for, naming the peer.
        waiting_for: String,
        /// The deadline, in milliseconds.
        millis: u128,
    },
    /// The transport (MPI) reported an error.
    Transport(String),
}

impl std::error::Error for CommError {}

impl fmt::Display for CommError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommError::BadPeer { peer, size } => {
                write!(f, "rank {peer} is not a peer of this rank (ranks 0..{size}, other than itself)")
            }
            CommError::SizeMismatch { peer, tag, sender, sent, expected } => {
                let by = sender.as_ref().map(|s| format!(" by %{s}")).unwrap_or_default();
                write!(
                    f,
                    "rank {peer} sent {sent} bytes with tag {tag}{by}, but this receive expects {expected}: \
                     make the byte counts of the send and the receive equal"
                )
            }
            CommError::ReduceMismatch { detail } => {
                write!(f, "the ranks' all-reduces do not agree: {detail}; every rank must run the same all-reduces in the same order")
            }
            CommError::PeerGone { peer, waiting_for } => {
                write!(f, "rank {peer} ended without {waiting_for}")
            }
            CommError::Deadlock { detail } => write!(f, "every rank is waiting and none can go on: {detail}"),
            CommError::Timeout { waiting_for, millis } => {
                write!(f, "timed out after {millis} ms waiting for {waiting_for}")
            }
            CommError::Transport(message) => write!(f, "MPI: {message}"),
        }
    }
}

/// Whether rank `rank` of `size` may talk to `peer`: another rank that exists.
pub fn check_peer(peer: u32, rank: u32, size: u32) -> Result<(), CommError> {
    if peer >= size || peer == rank {
        return Err(CommError::BadPeer { peer, size });
    }
    Ok(())
}

/// `data` replaced by `parts` (every rank's bytes, rank 0 first, each `data.len()` long)
/// combined in rank order with `op`: how every communicator that gathers finishes an
/// all-reduce, so that all of them give the simulation's bits.
pub fn reduce_in_rank_order<'a>(
    op: ReduceOp,
    ty: ScalarType,
    parts: impl IntoIterator<Item = &'a [u8]>,
    data: &mut [u8],
) {
    let mut parts = parts.into_iter();
    let Some(first) = parts.next() else { return };
    let mut acc = first.to_vec();
    for p in parts {
        combine(op, ty, &mut acc, p);
    }
    if acc.len() == data.len() {
        data.copy_from_slice(&acc);
    }
}

/// `acc = acc op next`, element-wise over `ty`. `f32`/`f64` `min`/`max` follow IEEE
/// `minNum`/`maxNum` as Rust's `f32::min` does (a NaN loses to a number).
pub fn combine(op: ReduceOp, ty: ScalarType, acc: &mut [u8], next: &[u8]) {
    macro_rules! fold {
        ($t:ty, $sum:expr) => {{
            const N: usize = std::mem::size_of::<$t>();
            for (a, b) in acc.chunks_exact_mut(N).zip(next.chunks_exact(N)) {
                let (x, y) = (
                    <$t>::from_le_bytes(a.try_into().unwrap_or([0; N])),
                    <$t>::from_le_bytes(b.try_into().unwrap_or([0; N])),
                );
                let r: $t = match op {
                    ReduceOp::Sum => $sum(x, y),
                    ReduceOp::Min => {
                        if y < x {
                            y
                        } else {
                            x
                        }
                    }
                    ReduceOp::Max => {
                        if y > x {
                            y
                        } else {
                            x
                        }
                    }
                };
                a.copy_from_slice(&r.to_le_bytes());
            }
        }};
    }
    macro_rules! fold_float {
        ($t:ty) => {{
            const N: usize = std::mem::size_of::<$t>();
            for (a, b) in acc.chunks_exact_mut(N).zip(next.chunks_exact(N)) {
                let (x, y) = (
                    <$t>::from_le_bytes(a.try_into().unwrap_or([0; N])),
                    <$t>::from_le_bytes(b.try_into().unwrap_or([0; N])),
                );
                let r = match op {
                    ReduceOp::Sum => x + y,
                    ReduceOp::Min => x.min(y),
                    ReduceOp::Max => x.max(y),
                };
                a.copy_from_slice(&r.to_le_bytes());
            }
        }};
    }
    match ty {
        ScalarType::I8 => fold!(i8, i8::wrapping_add),
        ScalarType::U8 => fold!(u8, u8::wrapping_add),
        ScalarType::I16 => fold!(i16, i16::wrapping_add),
        ScalarType::U16 => fold!(u16, u16::wrapping_add),
        ScalarType::I32 => fold!(i32, i32::wrapping_add),
        ScalarType::U32 => fold!(u32, u32::wrapping_add),
        ScalarType::I64 => fold!(i64, i64::wrapping_add),
        ScalarType::U64 => fold!(u64, u64::wrapping_add),
        ScalarType::F32 => fold_float!(f32),
        ScalarType::F64 => fold_float!(f64),
        ScalarType::Bool | ScalarType::F16 => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_combine_left_to_right_in_rank_order() {
        let (a, b, c) = (1.0e8f32, -1.0e8f32, 0.123_456_79f32);
        let mut acc = a.to_le_bytes().to_vec();
        combine(ReduceOp::Sum, ScalarType::F32, &mut acc, &b.to_le_bytes());
        combine(ReduceOp::Sum, ScalarType::F32, &mut acc, &c.to_le_bytes());
        assert_eq!(f32::from_le_bytes(acc[..4].try_into().unwrap()), (a + b) + c);
        assert_ne!((a + b) + c, a + (b + c), "the test values must expose the order");
    }

    #[test]
    fn integers_wrap_and_min_max_pick() {
        let mut acc = i32::MAX.to_le_bytes().to_vec();
        combine(ReduceOp::Sum, ScalarType::I32, &mut acc, &1i32.to_le_bytes());
        assert_eq!(i32::from_le_bytes(acc[..4].try_into().unwrap()), i32::MIN);
        let mut acc = [3u16.to_le_bytes(), 9u16.to_le_bytes()].concat();
        combine(ReduceOp::Max, ScalarType::U16, &mut acc, &[7u16.to_le_bytes(), 2u16.to_le_bytes()].concat());
        assert_eq!(acc, [7u16.to_le_bytes(), 9u16.to_le_bytes()].concat());
    }
}
