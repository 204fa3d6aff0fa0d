//! Communication nodes from C (docs/mpi.md, docs/capi.md "Ranks"): the application supplies
//! its rank's communicator as three functions over its own MPI (or any transport), and the
//! executor's host-task thread calls them for `send`, `recv` and `allreduce` nodes. The
//! library links no MPI, so an application keeps the MPI it has (MPICH, Open MPI, a
//! vendor's), initialized as it likes.

use crate::error::{cmdgraph_status, Error};
use crate::executor::{borrow, cmdgraph_executor};
use crate::with;
use cmdgraph_capi_comm::CCommunicator;
use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex};

/// Sends `len` bytes at `bytes` to rank `to` with `tag`. The bytes are valid during the
/// call only. It must not wait for the peer's receive (copy the bytes and send them
/// buffered, as `MPI_Bsend` or an `MPI_Isend` of a copy completed later does): ranks that
/// send before they receive would otherwise wait on each other. Returns 0, or non-zero for a
/// failure (which fails the run, naming the node and the value).
#[allow(non_camel_case_types)]
pub type cmdgraph_send_fn =
    Option<unsafe extern "C" fn(user: *mut c_void, to: u32, tag: u32, bytes: *const c_void, len: u64) -> c_int>;

/// Receives exactly `len` bytes from rank `from` with `tag` into `out` (messages between two
/// ranks with one tag in the order sent, as MPI matches them). Returns 0, or non-zero (also
/// for a message of another size).
#[allow(non_camel_case_types)]
pub type cmdgraph_recv_fn =
    Option<unsafe extern "C" fn(user: *mut c_void, from: u32, tag: u32, out: *mut c_void, len: u64) -> c_int>;

/// Gathers every rank's `len` bytes at `mine` into `all` (`size * len` bytes, rank 0 first),
/// as `MPI_Allgather` does; every rank calls it for the same all-reduce. The library combines
/// them in rank order. Returns 0, or non-zero.
#[allow(non_camel_case_types)]
pub type cmdgraph_allgather_fn =
    Option<unsafe extern "C" fn(user: *mut c_void, mine: *const c_void, len: u64, all: *mut c_void) -> c_int>;

/// This process's rank: its number, how many there are, and the functions that move bytes.
/// The functions are called on the executor's host-task thread, one at a time, with `user`.
#[repr(C)]
#[derive(Clone, Copy)]
#[allow(non_camel_case_types)]
pub struct cmdgraph_communicator {
    /// This rank, below `size`.
    pub rank: u32,
    /// How many ranks.
    pub size: u32,
    /// Sends (buffered).
    pub send: cmdgraph_send_fn,
    /// Receives.
    pub recv: cmdgraph_recv_fn,
    /// Gathers for all-reduces.
    pub allgather: cmdgraph_allgather_fn,
    /// Passed to every function.
    pub user: *mut c_void,
}

/// Runs the bundle's communication nodes (`send`, `recv`, `allreduce`) through `comm`, this
/// process's rank (copied; docs/mpi.md). Call it before running a graph with such nodes;
/// each process runs the graph of its rank (`@g.r0`, `@g.r1`, ...).
///
/// # Safety
/// `ex` is NULL or a live executor; `comm` NULL or readable, its functions following the
/// contracts of `cmdgraph_send_fn`, `cmdgraph_recv_fn` and `cmdgraph_allgather_fn`, callable
/// with `user` from the executor's host-task thread until `ex` is destroyed.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_executor_set_communicator(
    ex: *mut cmdgraph_executor,
    comm: *const cmdgraph_communicator,
) -> cmdgraph_status {
    // SAFETY: the caller's contract for `comm`.
    let c = unsafe { comm.as_ref() }.copied();
    let body = |e: &mut cmdgraph_executor| {
        let c = c.ok_or_else(|| Error::invalid("the communicator is NULL"))?;
        // SAFETY: the caller's contract: the functions follow their typedefs' contracts and
        // may be called with `user` from the host-task thread until `ex` is destroyed.
        let rank = unsafe { CCommunicator::new(c.rank, c.size, c.send, c.recv, c.allgather, c.user) }
            .map_err(Error::invalid)?;
        let shared: cmdgraph_ir::comm::SharedCommunicator = Arc::new(Mutex::new(rank));
        borrow(&e.inner)?.set_communicator(&shared);
        Ok(())
    };
    // SAFETY: the caller's contract for `ex`.
    unsafe { with(ex, body) }
}
