//! Several ranks in one process: the communicator the interpreter's multi-rank simulation
//! (the oracle of issue 35) and the executor's tests run on.
//!
//! Matching is MPI's: a receive takes the oldest message from its peer with its tag. An
//! all-reduce combines the ranks' contributions in rank order. Unlike MPI, the simulation
//! sees every rank, so it reports at once what MPI could only time out on: every rank
//! waiting with none able to go on, a receive from a rank that has ended, all-reduces that
//! disagree.

use super::{combine, CommError, Communicator, ReduceOp};
use crate::types::ScalarType;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// `size` communicators, rank 0 first, whose waits end after `timeout`.
pub fn ranks(size: u32, timeout: Duration) -> Vec<LocalCommunicator> {
    let hub = Arc::new(Hub {
        state: Mutex::new(State {
            queues: BTreeMap::new(),
            waits: vec![None; size as usize],
            gone: vec![false; size as usize],
            rounds: Vec::new(),
            next_round: vec![0; size as usize],
        }),
        changed: Condvar::new(),
        size,
    });
    (0..size).map(|rank| LocalCommunicator { rank, hub: Arc::clone(&hub), timeout }).collect()
}

/// Runs `f` for every rank of [`ranks`]`(size, timeout)` on a thread of its own, with the
/// rank and its communicator, and ends each rank when its `f` returns (so that what the others
/// still wait on from it fails at once); each rank's result, rank 0 first (`Err` where `f`
/// panicked).
pub fn run<T: Send>(
    size: u32,
    timeout: Duration,
    f: impl Fn(u32, super::SharedCommunicator) -> T + Sync,
) -> Vec<std::thread::Result<T>> {
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = ranks(size, timeout)
            .into_iter()
            .map(|c| {
                s.spawn(move || {
                    let rank = c.rank;
                    let c = Arc::new(Mutex::new(c));
                    let out = f(rank, Arc::clone(&c) as super::SharedCommunicator);
                    if let Ok(c) = c.lock() {
                        c.end();
                    }
                    out
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join()).collect()
    })
}

/// One rank's end of [`ranks`]. Dropping it ends the rank: its peers' waits on it fail.
pub struct LocalCommunicator {
    rank: u32,
    hub: Arc<Hub>,
    timeout: Duration,
}

struct Hub {
    state: Mutex<State>,
    changed: Condvar,
    size: u32,
}

/// A message in flight: the sending node and the bytes.
struct Message {
    node: String,
    bytes: Vec<u8>,
}

/// What a rank waits for.
#[derive(Clone, Copy, Debug)]
enum Wait {
    Recv { from: u32, tag: u32 },
    Reduce { round: usize },
}

/// One all-reduce, across the ranks.
#[derive(Default)]
struct Round {
    /// Each rank's node, operation, type and bytes, as they arrive.
    parts: BTreeMap<u32, (String, ReduceOp, ScalarType, Vec<u8>)>,
    /// The combined bytes (or why they could not be), once every rank has contributed.
    result: Option<Result<Vec<u8>, CommError>>,
    /// How many ranks have taken the result (it is dropped when all have).
    taken: u32,
}

struct State {
    /// Messages by (source, destination, tag), oldest first.
    queues: BTreeMap<(u32, u32, u32), VecDeque<Message>>,
    /// What each rank waits for, with the waiting node.
    waits: Vec<Option<(Wait, String)>>,
    gone: Vec<bool>,
    rounds: Vec<Round>,
    /// Each rank's next all-reduce.
    next_round: Vec<usize>,
}

impl State {
    /// Whether `rank`'s wait can end now (with data, or with an error).
    fn ready(&self, rank: u32, wait: Wait) -> bool {
        match wait {
            Wait::Recv { from, tag } => {
                self.queues.get(&(from, rank, tag)).is_some_and(|q| !q.is_empty()) || self.gone[from as usize]
            }
            Wait::Reduce { round } => {
                let r = &self.rounds[round];
                r.result.is_some()
                    || self.gone.iter().enumerate().any(|(i, g)| *g && !r.parts.contains_key(&(i as u32)))
            }
        }
    }

    /// Every live rank waits and none can go on: what each waits for.
    fn deadlock(&self) -> Option<String> {
        let mut what = Vec::new();
        for (rank, gone) in self.gone.iter().enumerate() {
            if *gone {
                continue;
            }
            let (wait, node) = self.waits[rank].as_ref()?;
            if self.ready(rank as u32, *wait) {
                return None;
            }
            what.push(match wait {
                Wait::Recv { from, tag } => format!("rank {rank} at %{node} receives from rank {from} with tag {tag}"),
                Wait::Reduce { .. } => format!("rank {rank} at %{node} waits in an all-reduce"),
            });
        }
        Some(what.join("; "))
    }

    /// Messages queued for `rank` from `from`, by tag (for a diagnostic).
    fn pending_tags(&self, from: u32, rank: u32) -> Vec<u32> {
        self.queues
            .iter()
            .filter(|((s, d, _), q)| *s == from && *d == rank && !q.is_empty())
            .map(|(k, _)| k.2)
            .collect()
    }
}

impl LocalCommunicator {
    fn lock(&self) -> Result<MutexGuard<'_, State>, CommError> {
        self.hub.state.lock().map_err(|_| CommError::Transport("a rank panicked".to_string()))
    }

    fn check_peer(&self, peer: u32) -> Result<(), CommError> {
        super::check_peer(peer, self.rank, self.hub.size)
    }

    /// Waits until `wait` is ready, a deadlock, or the deadline.
    fn wait<'a>(
        &'a self,
        mut state: MutexGuard<'a, State>,
        wait: Wait,
        node: &str,
        describe: impl Fn(&State) -> String,
    ) -> Result<MutexGuard<'a, State>, CommError> {
        let deadline = Instant::now() + self.timeout;
        state.waits[self.rank as usize] = Some((wait, node.to_string()));
        loop {
            if state.ready(self.rank, wait) {
                state.waits[self.rank as usize] = None;
                return Ok(state);
            }
            if let Some(detail) = state.deadlock() {
                state.waits[self.rank as usize] = None;
                return Err(CommError::Deadlock { detail: format!("{detail}{}", describe(&state)) });
            }
            let now = Instant::now();
            if now >= deadline {
                state.waits[self.rank as usize] = None;
                return Err(CommError::Timeout {
                    waiting_for: format!("%{node}{}", describe(&state)),
                    millis: self.timeout.as_millis(),
                });
            }
            state = match self.hub.changed.wait_timeout(state, deadline - now) {
                Ok((s, _)) => s,
                Err(_) => return Err(CommError::Transport("a rank panicked".to_string())),
            };
        }
    }
}

impl Communicator for LocalCommunicator {
    fn rank(&self) -> u32 {
        self.rank
    }

    fn size(&self) -> u32 {
        self.hub.size
    }

    fn send(&mut self, node: &str, to: u32, tag: u32, bytes: &[u8]) -> Result<(), CommError> {
        self.check_peer(to)?;
        let mut state = self.lock()?;
        let message = Message { node: node.to_string(), bytes: bytes.to_vec() };
        state.queues.entry((self.rank, to, tag)).or_default().push_back(message);
        drop(state);
        self.hub.changed.notify_all();
        Ok(())
    }

    fn recv(&mut self, node: &str, from: u32, tag: u32, out: &mut [u8]) -> Result<(), CommError> {
        self.check_peer(from)?;
        let rank = self.rank;
        let describe = move |s: &State| {
            let tags = s.pending_tags(from, rank);
            if tags.is_empty() {
                format!(" (a message from rank {from} with tag {tag})")
            } else {
                format!(" (a message from rank {from} with tag {tag}; rank {from} sent this rank tags {tags:?})")
            }
        };
        let state = self.lock()?;
        let mut state = self.wait(state, Wait::Recv { from, tag }, node, describe)?;
        let Some(message) = state.queues.get_mut(&(from, rank, tag)).and_then(VecDeque::pop_front) else {
            let waiting_for = format!("sending the message %{node} receives with tag {tag}{}", describe(&state));
            return Err(CommError::PeerGone { peer: from, waiting_for });
        };
        if message.bytes.len() != out.len() {
            return Err(CommError::SizeMismatch {
                peer: from,
                tag,
                sender: Some(message.node),
                sent: message.bytes.len() as u64,
                expected: out.len() as u64,
            });
        }
        out.copy_from_slice(&message.bytes);
        Ok(())
    }

    fn allreduce(&mut self, node: &str, op: ReduceOp, ty: ScalarType, data: &mut [u8]) -> Result<(), CommError> {
        let (rank, size) = (self.rank, self.hub.size);
        let mut state = self.lock()?;
        let round = state.next_round[rank as usize];
        state.next_round[rank as usize] += 1;
        if state.rounds.len() <= round {
            state.rounds.resize_with(round + 1, Round::default);
        }
        state.rounds[round].parts.insert(rank, (node.to_string(), op, ty, data.to_vec()));
        if state.rounds[round].parts.len() == size as usize {
            let result = reduce(&state.rounds[round].parts);
            let r = &mut state.rounds[round];
            r.parts.clear();
            r.result = Some(result);
            self.hub.changed.notify_all();
        }
        let describe = |_: &State| String::new();
        let mut state = self.wait(state, Wait::Reduce { round }, node, describe)?;
        let r = &mut state.rounds[round];
        let Some(result) = r.result.clone() else {
            let missing = (0..size).find(|p| !r.parts.contains_key(p)).unwrap_or(0);
            let waiting_for = format!("joining the all-reduce %{node} runs (all-reduce number {round})");
            return Err(CommError::PeerGone { peer: missing, waiting_for });
        };
        r.taken += 1;
        if r.taken == size {
            r.result = Some(Ok(Vec::new()));
        }
        data.copy_from_slice(&result?);
        Ok(())
    }
}

/// The ranks' contributions combined in rank order, or why they disagree.
fn reduce(parts: &BTreeMap<u32, (String, ReduceOp, ScalarType, Vec<u8>)>) -> Result<Vec<u8>, CommError> {
    let mut it = parts.iter();
    let Some((_, (node0, op0, ty0, first))) = it.next() else { return Ok(Vec::new()) };
    let mut acc = first.clone();
    for (rank, (node, op, ty, bytes)) in it {
        if (op, ty, bytes.len()) != (op0, ty0, acc.len()) {
            return Err(CommError::ReduceMismatch {
                detail: format!(
                    "rank 0 runs %{node0} ({} over {} bytes of {}), rank {rank} runs %{node} ({} over {} bytes of {})",
                    op0.keyword(),
                    acc.len(),
                    ty0.keyword(),
                    op.keyword(),
                    bytes.len(),
                    ty.keyword()
                ),
            });
        }
        combine(*op, *ty, &mut acc, bytes);
    }
    Ok(acc)
}

impl LocalCommunicator {
    /// Ends this rank: what its peers wait on from it fails from now on. Dropping the
    /// communicator ends it too; a runtime that keeps it (in its callbacks) ends it here.
    pub fn end(&self) {
        if let Ok(mut state) = self.hub.state.lock() {
            state.gone[self.rank as usize] = true;
        }
        self.hub.changed.notify_all();
    }
}

impl Drop for LocalCommunicator {
    fn drop(&mut self) {
        self.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;

    const T: Duration = Duration::from_secs(10);

    #[test]
    fn messages_match_by_peer_and_tag_in_order_sent() {
        let mut c = ranks(2, T);
        let mut r1 = c.pop().unwrap();
        let mut r0 = c.pop().unwrap();
        r0.send("a", 1, 5, &[1]).unwrap();
        r0.send("b", 1, 6, &[2]).unwrap();
        r0.send("c", 1, 5, &[3]).unwrap();
        let mut out = [0u8];
        r1.recv("x", 0, 6, &mut out).unwrap();
        assert_eq!(out, [2]);
        r1.recv("x", 0, 5, &mut out).unwrap();
        assert_eq!(out, [1]);
        r1.recv("x", 0, 5, &mut out).unwrap();
        assert_eq!(out, [3]);
    }

    #[test]
    fn a_receive_nobody_sends_is_a_deadlock_naming_both_ranks() {
        let mut c = ranks(2, T);
        let mut r1 = c.pop().unwrap();
        let mut r0 = c.pop().unwrap();
        r0.send("s", 1, 8, &[0; 4]).unwrap();
        let h = thread::spawn(move || {
            let mut out = [0u8; 4];
            r0.recv("r0", 1, 1, &mut out)
        });
        let mut out = [0u8; 4];
        let e = r1.recv("r1", 0, 7, &mut out).unwrap_err();
        let e0 = h.join().unwrap();
        // Whichever rank waits second sees the deadlock; the other sees rank 1 end.
        let text = format!("{e} | {e0:?}");
        assert!(text.contains("tag 7") && text.contains("tags [8]"), "{text}");
    }

    #[test]
    fn all_reduce_combines_in_rank_order_and_reports_disagreement() {
        let vals = [1.0e8f32, -1.0e8, 0.123_456_79];
        let hs: Vec<_> = ranks(3, T)
            .into_iter()
            .enumerate()
            .map(|(i, mut c)| {
                thread::spawn(move || {
                    let mut d = vals[i].to_le_bytes().to_vec();
                    c.allreduce("a", ReduceOp::Sum, ScalarType::F32, &mut d).unwrap();
                    let mut bad = vec![0u8; if i == 2 { 8 } else { 4 }];
                    let e = c.allreduce("b", ReduceOp::Sum, ScalarType::F32, &mut bad).unwrap_err();
                    (f32::from_le_bytes(d[..].try_into().unwrap()), e)
                })
            })
            .collect();
        for h in hs {
            let (v, e) = h.join().unwrap();
            assert_eq!(v, (vals[0] + vals[1]) + vals[2]);
            assert!(matches!(e, CommError::ReduceMismatch { .. }), "{e}");
        }
    }

    #[test]
    fn a_size_mismatch_names_the_sender_and_a_bad_peer_is_refused() {
        let mut c = ranks(2, T);
        let mut r1 = c.pop().unwrap();
        let mut r0 = c.pop().unwrap();
        r0.send("s", 1, 0, &[0; 8]).unwrap();
        let mut out = [0u8; 4];
        let e = r1.recv("r", 0, 0, &mut out).unwrap_err();
        assert!(e.to_string().contains("sent 8 bytes with tag 0 by %s"), "{e}");
        assert!(matches!(r0.send("s", 0, 0, &[]), Err(CommError::BadPeer { .. })));
        assert!(matches!(r0.send("s", 2, 0, &[]), Err(CommError::BadPeer { .. })));
    }
}
