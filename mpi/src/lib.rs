//! `cmdgraph-mpi`: runs cmdgraph's communication nodes (`send`, `recv`, `allreduce`,
//! docs/mpi.md) over MPI, through rsmpi on the machine's MPICH.
//!
//! [`MpiCommunicator`] is a [`Communicator`]: a runtime calls it from the thread that runs
//! its host tasks (the executor's host-task thread is the proxy thread of docs/mpi.md: it
//! waits on the graph's timeline for a node's inputs, calls MPI on host memory, and lets the
//! device go on). MPI runs with `MPI_THREAD_MULTIPLE` and two threads of its own:
//!
//! - Sends are buffered: `send` copies the bytes to the send thread and returns. That thread
//!   sends in order (MPI keeps messages between two ranks with one tag in order), so a rank
//!   that sends before it receives never waits on its peer doing the same.
//! - A receive polls a matched probe (`MPI_Improbe`) until the message is there, so it can
//!   stop at the deadline and can see the message's size before taking it: a size mismatch
//!   is an error naming both sides, never MPI's fatal truncation.
//! - An all-reduce gathers every rank's bytes (`MPI_Allgather`) on the collective thread and
//!   combines them here in rank order, `((r0 op r1) op r2) ...`, the order the interpreter's
//!   simulation uses, so results match it bit for bit whatever MPI's own reduction order.
//!   The ranks first gather each other's operation, type and size, so ranks that disagree
//!   all fail with the same error rather than corrupt memory.
//!
//! Every wait ends at the communicator's deadline with an error naming what it waited for.
//! After one has, the communicator is broken (a thread of it may still be inside MPI): later
//! calls fail at once, and dropping it does not finalize MPI, which would wait on that call.

use cmdgraph_ir::comm::{reduce_in_rank_order, CommError, Communicator, ReduceOp};
use cmdgraph_ir::types::ScalarType;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
// `Communicator` names cmdgraph's trait here; MPI's is in scope for its methods only.
use mpi::topology::Communicator as _;
use mpi::Threading;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One process's rank in `MPI_COMM_WORLD`, as a [`Communicator`].
pub struct MpiCommunicator {
    rank: u32,
    size: u32,
    timeout: Duration,
    world: SimpleCommunicator,
    sends: Option<Sender<Outgoing>>,
    sent: Arc<SendState>,
    gathers: Option<Sender<Gather>>,
    threads: Vec<JoinHandle<()>>,
    /// Why the communicator no longer works (a wait that timed out).
    broken: Option<String>,
    /// Finalizes MPI when dropped, which happens only when nothing is left inside MPI.
    universe: Option<Universe>,
}

/// A send for the send thread.
struct Outgoing {
    to: i32,
    tag: i32,
    bytes: Vec<u8>,
}

/// Sends queued and done, for the flush at the end.
#[derive(Default)]
struct SendState {
    counts: Mutex<(u64, u64)>,
    changed: Condvar,
}

/// An all-gather for the collective thread: the bytes of this rank, and where every
/// rank's bytes go.
struct Gather {
    bytes: Vec<u8>,
    reply: Sender<Vec<u8>>,
}

impl MpiCommunicator {
    /// Initializes MPI with `MPI_THREAD_MULTIPLE` and returns this process's rank, whose
    /// waits end after `timeout`. Fails when MPI is already initialized or cannot give
    /// that threading level.
    pub fn init(timeout: Duration) -> Result<MpiCommunicator, CommError> {
        let (universe, level) = mpi::initialize_with_threading(Threading::Multiple)
            .ok_or_else(|| CommError::Transport("MPI is already initialized in this process".into()))?;
        if level != Threading::Multiple {
            return Err(CommError::Transport(format!(
                "this MPI gives threading level {level:?}, and cmdgraph needs MPI_THREAD_MULTIPLE (MPICH has it)"
            )));
        }
        let world = universe.world();
        let (rank, size) = (world.rank() as u32, world.size() as u32);
        let sent = Arc::new(SendState::default());
        let (send_tx, send_rx) = channel::<Outgoing>();
        let (gather_tx, gather_rx) = channel::<Gather>();
        let state = Arc::clone(&sent);
        let sender = std::thread::Builder::new()
            .name("cmdgraph-mpi-send".into())
            .spawn(move || send_loop(send_rx, &state))
            .map_err(|e| CommError::Transport(format!("cannot start the send thread: {e}")))?;
        let gatherer = std::thread::Builder::new()
            .name("cmdgraph-mpi-collective".into())
            .spawn(move || gather_loop(gather_rx, size))
            .map_err(|e| CommError::Transport(format!("cannot start the collective thread: {e}")))?;
        Ok(MpiCommunicator {
            rank,
            size,
            timeout,
            world,
            sends: Some(send_tx),
            sent,
            gathers: Some(gather_tx),
            threads: vec![sender, gatherer],
            broken: None,
            universe: Some(universe),
        })
    }

    /// The MPI library's version line (`MPI_Get_library_version`).
    pub fn library_version() -> String {
        mpi::environment::library_version().unwrap_or_else(|_| "unknown MPI".into())
    }

    fn check(&self, peer: Option<u32>) -> Result<(), CommError> {
        if let Some(why) = &self.broken {
            return Err(CommError::Transport(format!(
                "an earlier communication failed ({why}); this rank cannot communicate any more"
            )));
        }
        match peer {
            Some(p) => cmdgraph_ir::comm::check_peer(p, self.rank, self.size),
            None => Ok(()),
        }
    }

    fn tag(tag: u32) -> Result<i32, CommError> {
        i32::try_from(tag).map_err(|_| CommError::Transport(format!("tag {tag} is above what MPI takes (2^31 - 1)")))
    }

    fn fail(&mut self, e: CommError) -> CommError {
        self.broken = Some(e.to_string());
        e
    }

    /// Waits until every queued send is done, at most `limit`: whether they all were.
    fn flush(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        let Ok(mut counts) = self.sent.counts.lock() else { return false };
        while counts.1 < counts.0 {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            counts = match self.sent.changed.wait_timeout(counts, deadline - now) {
                Ok((c, _)) => c,
                Err(_) => return false,
            };
        }
        true
    }
}

fn send_loop(jobs: Receiver<Outgoing>, state: &SendState) {
    let world = SimpleCommunicator::world();
    for job in jobs {
        world.process_at_rank(job.to).send_with_tag(&job.bytes[..], job.tag);
        if let Ok(mut c) = state.counts.lock() {
            c.1 += 1;
        }
        state.changed.notify_all();
    }
}

fn gather_loop(jobs: Receiver<Gather>, size: u32) {
    let world = SimpleCommunicator::world();
    for job in jobs {
        let mut all = vec![0u8; job.bytes.len() * size as usize];
        world.all_gather_into(&job.bytes[..], &mut all[..]);
        let _ = job.reply.send(all);
    }
}

impl Communicator for MpiCommunicator {
    fn rank(&self) -> u32 {
        self.rank
    }

    fn size(&self) -> u32 {
        self.size
    }

    fn send(&mut self, _node: &str, to: u32, tag: u32, bytes: &[u8]) -> Result<(), CommError> {
        self.check(Some(to))?;
        let tag = Self::tag(tag)?;
        if let Ok(mut c) = self.sent.counts.lock() {
            c.0 += 1;
        }
        let job = Outgoing { to: to as i32, tag, bytes: bytes.to_vec() };
        let queued = self.sends.as_ref().is_some_and(|s| s.send(job).is_ok());
        if !queued {
            return Err(self.fail(CommError::Transport("the send thread has stopped".into())));
        }
        Ok(())
    }

    fn recv(&mut self, node: &str, from: u32, tag: u32, out: &mut [u8]) -> Result<(), CommError> {
        self.check(Some(from))?;
        let mpi_tag = Self::tag(tag)?;
        let start = Instant::now();
        let process = self.world.process_at_rank(from as i32);
        let (message, status) = loop {
            if let Some(found) = process.immediate_matched_probe_with_tag(mpi_tag) {
                break found;
            }
            let waited = start.elapsed();
            if waited >= self.timeout {
                // What the peer did send, for the error: a tag mismatch shows here.
                let other = process.immediate_probe().map(|s| s.tag());
                let hint = other
                    .map(|t| format!(" (rank {from} sent a message with tag {t}, which no receive took)"))
                    .unwrap_or_default();
                let waiting_for = format!("%{node}'s message from rank {from} with tag {tag}{hint}");
                return Err(self.fail(CommError::Timeout { waiting_for, millis: self.timeout.as_millis() }));
            }
            // Spin for the first millisecond (a halo usually arrives within it), then poll
            // every 50 µs.
            if waited < Duration::from_millis(1) {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(50));
            }
        };
        let sent = status.count(u8::equivalent_datatype()).max(0) as usize;
        if sent != out.len() {
            let mut sink = vec![0u8; sent];
            message.matched_receive_into(&mut sink[..]);
            return Err(CommError::SizeMismatch {
                peer: from,
                tag,
                sender: None,
                sent: sent as u64,
                expected: out.len() as u64,
            });
        }
        message.matched_receive_into(out);
        Ok(())
    }

    fn allreduce(&mut self, node: &str, op: ReduceOp, ty: ScalarType, data: &mut [u8]) -> Result<(), CommError> {
        self.check(None)?;
        let header: Vec<u8> =
            [ReduceOp::ALL.iter().position(|o| *o == op).unwrap_or(0) as u64, ty_code(ty), data.len() as u64]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect();
        let headers = self.gather(node, header)?;
        let mine = &headers[..24];
        if let Some(rank) = (0..self.size as usize).find(|r| &headers[r * 24..r * 24 + 24] != mine) {
            let word = |r: usize, i: usize| {
                u64::from_le_bytes(headers[r * 24 + i * 8..r * 24 + i * 8 + 8].try_into().unwrap_or([0; 8]))
            };
            let show = |r: usize| {
                let op = ReduceOp::ALL.get(word(r, 0) as usize).map_or("?", |o| o.keyword());
                let ty = ScalarType::ALL.get(word(r, 1) as usize).map_or("?", |t| t.keyword());
                format!("rank {r} runs `{op}` over {} bytes of {ty}", word(r, 2))
            };
            let detail = format!("{} (at %{node}), {}", show(self.rank as usize), show(rank));
            return Err(CommError::ReduceMismatch { detail });
        }
        let all = self.gather(node, data.to_vec())?;
        let n = data.len();
        if n > 0 {
            reduce_in_rank_order(op, ty, all.chunks_exact(n), data);
        }
        Ok(())
    }
}

impl MpiCommunicator {
    /// Every rank's `bytes` (all of one size), rank 0 first, gathered on the collective
    /// thread within the deadline.
    fn gather(&mut self, node: &str, bytes: Vec<u8>) -> Result<Vec<u8>, CommError> {
        let (reply, answer) = channel();
        let queued = self.gathers.as_ref().is_some_and(|g| g.send(Gather { bytes, reply }).is_ok());
        if !queued {
            return Err(self.fail(CommError::Transport("the collective thread has stopped".into())));
        }
        match answer.recv_timeout(self.timeout) {
            Ok(all) => Ok(all),
            Err(RecvTimeoutError::Timeout) => {
                let waiting_for = format!("every rank to join the all-reduce %{node}");
                Err(self.fail(CommError::Timeout { waiting_for, millis: self.timeout.as_millis() }))
            }
            Err(RecvTimeoutError::Disconnected) => {
                Err(self.fail(CommError::Transport("the collective thread has stopped".into())))
            }
        }
    }
}

/// A scalar type's index in [`ScalarType::ALL`] (what ranks compare before an all-reduce).
fn ty_code(ty: ScalarType) -> u64 {
    ScalarType::ALL.iter().position(|t| *t == ty).unwrap_or(usize::MAX) as u64
}

impl Drop for MpiCommunicator {
    fn drop(&mut self) {
        // Queued sends are delivered before MPI is finalized: a peer may still receive them.
        let delivered = self.broken.is_none() && self.flush(self.timeout);
        self.sends = None;
        self.gathers = None;
        if delivered {
            for t in self.threads.drain(..) {
                let _ = t.join();
            }
            // MPI_Finalize: every rank reaches it once its work is done.
            self.universe = None;
        } else {
            // A thread may be inside MPI for good (a peer died): finalizing would wait on it.
            // The process ends without MPI_Finalize, and mpiexec reports that.
            std::mem::forget(self.universe.take());
        }
    }
}
