//! A rank given as C functions, one copy for both C libraries: `libcmdgraph` (capi/, which
//! runs communication nodes of bundles) and `libcmdgraph_build` (capi-build/, whose SYCL
//! layer builds and runs them). Each library keeps its own `#[repr(C)]` communicator struct
//! and function typedefs (their names are its header's); both hand the functions to
//! [`CCommunicator`], which is cmdgraph's [`Communicator`] over them (docs/mpi.md).
//!
//! This crate exports no C symbols. It calls the application's functions, so, as the C
//! libraries themselves, it allows `unsafe`.
#![allow(unsafe_code)]

use cmdgraph_ir::comm::{check_peer, reduce_in_rank_order, CommError, Communicator, ReduceOp};
use cmdgraph_ir::types::ScalarType;
use std::ffi::{c_int, c_void};

/// `send(user, to, tag, bytes, len)`: buffered, must not wait for the peer's receive.
pub type SendFn = unsafe extern "C" fn(user: *mut c_void, to: u32, tag: u32, bytes: *const c_void, len: u64) -> c_int;
/// `recv(user, from, tag, out, len)`: exactly `len` bytes.
pub type RecvFn = unsafe extern "C" fn(user: *mut c_void, from: u32, tag: u32, out: *mut c_void, len: u64) -> c_int;
/// `allgather(user, mine, len, all)`: every rank's `len` bytes into `all`, rank 0 first.
pub type AllgatherFn =
    unsafe extern "C" fn(user: *mut c_void, mine: *const c_void, len: u64, all: *mut c_void) -> c_int;

/// The application's rank: its number, how many there are, its functions and their `user`.
pub struct CCommunicator {
    rank: u32,
    size: u32,
    send: SendFn,
    recv: RecvFn,
    allgather: AllgatherFn,
    user: *mut c_void,
}

// SAFETY: the libraries' registration contracts: the functions and `user` may be used from
// the runtime's host-task thread while the executor or context lives; this crate never
// dereferences `user`.
unsafe impl Send for CCommunicator {}

impl CCommunicator {
    /// The rank, or why it is not one: a missing function, or `rank` not below `size`.
    ///
    /// # Safety
    /// The functions follow the contracts of [`SendFn`], [`RecvFn`] and [`AllgatherFn`] and,
    /// with `user`, may be called from another thread for as long as the result is used.
    pub unsafe fn new(
        rank: u32,
        size: u32,
        send: Option<SendFn>,
        recv: Option<RecvFn>,
        allgather: Option<AllgatherFn>,
        user: *mut c_void,
    ) -> Result<CCommunicator, String> {
        if rank >= size {
            return Err(format!("the communicator's rank {rank} is not below its size {size}"));
        }
        match (send, recv, allgather) {
            (Some(send), Some(recv), Some(allgather)) => Ok(CCommunicator { rank, size, send, recv, allgather, user }),
            _ => Err("the communicator needs its send, recv and allgather functions".into()),
        }
    }

    fn check(what: &str, code: c_int) -> Result<(), CommError> {
        match code {
            0 => Ok(()),
            c => Err(CommError::Transport(format!("the application's {what} function returned {c}"))),
        }
    }
}

impl Communicator for CCommunicator {
    fn rank(&self) -> u32 {
        self.rank
    }

    fn size(&self) -> u32 {
        self.size
    }

    fn send(&mut self, _node: &str, to: u32, tag: u32, bytes: &[u8]) -> Result<(), CommError> {
        check_peer(to, self.rank, self.size)?;
        // SAFETY: `new`'s contract; `bytes` is valid for `len` bytes during the call.
        let code = unsafe { (self.send)(self.user, to, tag, bytes.as_ptr().cast(), bytes.len() as u64) };
        Self::check("send", code)
    }

    fn recv(&mut self, _node: &str, from: u32, tag: u32, out: &mut [u8]) -> Result<(), CommError> {
        check_peer(from, self.rank, self.size)?;
        // SAFETY: as above; `out` is writable for `len` bytes during the call.
        let code = unsafe { (self.recv)(self.user, from, tag, out.as_mut_ptr().cast(), out.len() as u64) };
        Self::check("recv", code)
    }

    fn allreduce(&mut self, _node: &str, op: ReduceOp, ty: ScalarType, data: &mut [u8]) -> Result<(), CommError> {
        let n = data.len();
        let mut all = vec![0u8; n * self.size as usize];
        // SAFETY: as above; `all` is writable for `size * len` bytes during the call.
        let code = unsafe { (self.allgather)(self.user, data.as_ptr().cast(), n as u64, all.as_mut_ptr().cast()) };
        Self::check("allgather", code)?;
        if n > 0 {
            reduce_in_rank_order(op, ty, all.chunks_exact(n), data);
        }
        Ok(())
    }
}
