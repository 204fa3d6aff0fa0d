//! Communication nodes from C and C++ (docs/mpi.md, docs/capi.md "Ranks"): command groups
//! that send, receive and all-reduce USM memory, and the context's rank given as three
//! functions over the application's own MPI (or any transport). The library links no MPI.

use crate::cg::{cmdgraph_sycl_cg, Command};
use crate::context::cmdgraph_sycl_context;
use crate::error::{cmdgraph_sycl_status, Error};
use crate::usm::device_ptr;
use crate::with;
use cmdgraph_capi_comm::CCommunicator;
use cmdgraph_ir::comm::{CommOp, ReduceOp};
use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex};

/// Sends `len` bytes at `bytes` to rank `to` with `tag`; the bytes are valid during the call
/// only. It must not wait for the peer's receive (send a copy, buffered). Returns 0, or
/// non-zero for a failure (which fails the run, naming the node).
#[allow(non_camel_case_types)]
pub type cmdgraph_sycl_send_fn =
    Option<unsafe extern "C" fn(user: *mut c_void, to: u32, tag: u32, bytes: *const c_void, len: u64) -> c_int>;

/// Receives exactly `len` bytes from rank `from` with `tag` into `out` (messages between two
/// ranks with one tag in the order sent). Returns 0, or non-zero.
#[allow(non_camel_case_types)]
pub type cmdgraph_sycl_recv_fn =
    Option<unsafe extern "C" fn(user: *mut c_void, from: u32, tag: u32, out: *mut c_void, len: u64) -> c_int>;

/// Gathers every rank's `len` bytes at `mine` into `all` (`size * len` bytes, rank 0 first),
/// as `MPI_Allgather`; the library combines them in rank order. Returns 0, or non-zero.
#[allow(non_camel_case_types)]
pub type cmdgraph_sycl_allgather_fn =
    Option<unsafe extern "C" fn(user: *mut c_void, mine: *const c_void, len: u64, all: *mut c_void) -> c_int>;

/// This process's rank: its number, how many there are, and the functions that move bytes,
/// called one at a time with `user` (on the host-task thread of a Vulkan context).
#[repr(C)]
#[derive(Clone, Copy)]
#[allow(non_camel_case_types)]
pub struct cmdgraph_sycl_communicator {
    /// This rank, below `size`.
    pub rank: u32,
    /// How many ranks.
    pub size: u32,
    /// Sends (buffered).
    pub send: cmdgraph_sycl_send_fn,
    /// Receives.
    pub recv: cmdgraph_sycl_recv_fn,
    /// Gathers for all-reduces.
    pub allgather: cmdgraph_sycl_allgather_fn,
    /// Passed to every function.
    pub user: *mut c_void,
}

/// The reductions of `cmdgraph_sycl_cg_allreduce`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum cmdgraph_sycl_reduce_op {
    /// Element-wise sum.
    CMDGRAPH_SYCL_REDUCE_SUM = 0,
    /// Element-wise minimum.
    CMDGRAPH_SYCL_REDUCE_MIN = 1,
    /// Element-wise maximum.
    CMDGRAPH_SYCL_REDUCE_MAX = 2,
}

/// Gives the context's graphs this process's rank (`comm` is copied): their communication
/// nodes call its functions. Set it before a graph with such nodes runs; each process then
/// runs the graph of its rank.
///
/// # Safety
/// `ctx` is NULL or a live context; `comm` NULL or readable, its functions following the
/// contracts of their typedefs and callable with `user` from another thread while the
/// context lives.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_context_set_communicator(
    ctx: *mut cmdgraph_sycl_context,
    comm: *const cmdgraph_sycl_communicator,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract for `comm`.
    let c = unsafe { comm.as_ref() }.copied();
    let body = |ctx: &mut cmdgraph_sycl_context| {
        let c = c.ok_or_else(|| Error::invalid("the communicator is NULL"))?;
        // SAFETY: the caller's contract for the functions and `user`.
        let rank = unsafe { CCommunicator::new(c.rank, c.size, c.send, c.recv, c.allgather, c.user) }
            .map_err(Error::invalid)?;
        ctx.shared.ctx.set_communicator(Arc::new(Mutex::new(rank)));
        Ok(())
    };
    // SAFETY: the caller's contract for `ctx`.
    unsafe { with(ctx, body) }
}

/// Sets `cg`'s command to `op` over `bytes` bytes of the USM at `ptr`.
///
/// # Safety
/// `cg` is NULL or a live command group.
unsafe fn comm(cg: *mut cmdgraph_sycl_cg, op: CommOp, ptr: *mut c_void, bytes: u64) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(cg, |cg| {
            let ptr = device_ptr(&cg.shared, ptr, "communication memory")?;
            cg.set(Command::Comm { op, ptr, bytes })
        })
    }
}

/// cmdgraph's `ext_send(ptr, bytes, to, tag)`: sends `bytes` bytes of the USM at `ptr` to
/// rank `to` with `tag` through the context's communicator (docs/mpi.md).
///
/// # Safety
/// `cg` is NULL or a live command group.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_cg_send(
    cg: *mut cmdgraph_sycl_cg,
    ptr: *mut c_void,
    bytes: u64,
    to: u32,
    tag: u32,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe { comm(cg, CommOp::Send { peer: to, tag }, ptr, bytes) }
}

/// cmdgraph's `ext_recv(ptr, bytes, from, tag)`: receives `bytes` bytes into the USM at
/// `ptr` from rank `from` with `tag`.
///
/// # Safety
/// `cg` is NULL or a live command group.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_cg_recv(
    cg: *mut cmdgraph_sycl_cg,
    ptr: *mut c_void,
    bytes: u64,
    from: u32,
    tag: u32,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe { comm(cg, CommOp::Recv { peer: from, tag }, ptr, bytes) }
}

/// cmdgraph's `ext_allreduce(op, ptr, bytes)`: replaces `bytes` bytes of the USM at `ptr`
/// with `op` (a `cmdgraph_sycl_reduce_op`) over every rank's, element-wise over the memory's
/// element type, combined in rank order.
///
/// # Safety
/// `cg` is NULL or a live command group.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_cg_allreduce(
    cg: *mut cmdgraph_sycl_cg,
    op: i32,
    ptr: *mut c_void,
    bytes: u64,
) -> cmdgraph_sycl_status {
    let op = match op {
        x if x == cmdgraph_sycl_reduce_op::CMDGRAPH_SYCL_REDUCE_SUM as i32 => ReduceOp::Sum,
        x if x == cmdgraph_sycl_reduce_op::CMDGRAPH_SYCL_REDUCE_MIN as i32 => ReduceOp::Min,
        x if x == cmdgraph_sycl_reduce_op::CMDGRAPH_SYCL_REDUCE_MAX as i32 => ReduceOp::Max,
        // SAFETY: the caller's contract.
        v => {
            return unsafe {
                with(cg, |_| Err(Error::invalid(format!("{v} is not a cmdgraph_sycl_reduce_op (0, 1 or 2)"))))
            }
        }
    };
    // SAFETY: the caller's contract.
    unsafe { comm(cg, CommOp::AllReduce(op), ptr, bytes) }
}
