//! What a host task waits for before it runs (docs/executor.md, "Host tasks and overlap"):
//! the device segments submitted before it that hold one of its ancestors, or that touch
//! memory it declares in a way that conflicts (it writes what they read or write, or reads
//! what they write). Later segments submitted before it (codegen puts device work that does
//! not lead to a group's host tasks in a segment of its own ahead of them) keep running
//! while it does: a communication node sends a boundary while the interior is computed.
//!
//! Memory is compared by backing buffer, not by bytes: a staged host read or write is a
//! transfer, and the validation layer compares a transfer with a dispatch over the
//! dispatch's whole descriptor range (docs/executor.md, "Barriers").

use super::Executable;
use crate::args::Target;
use crate::barriers::Work;
use crate::exec::Executor;
use crate::schedule::{self, Seg};
use cmdgraph_ir::types::Access;
use cmdgraph_ir::{Graph, MemAccess, MemRef};
use std::collections::BTreeSet;

/// The memory one device or loop segment touches.
#[derive(Default)]
struct SegmentMemory {
    reads: BTreeSet<Target>,
    writes: BTreeSet<Target>,
    /// A native command or a `while` node: ordered against everything.
    everything: bool,
}

/// The waits of an executable's host tasks, computed once per build of its run plan.
pub(crate) struct HostWaits {
    /// Per node, the latest device or loop segment (index in the schedule) among its
    /// ancestors.
    latest: Vec<Option<usize>>,
    /// Per schedule index, the device and loop segments up to and including it: the
    /// timeline steps a run has taken once that segment is done.
    ordinal: Vec<u64>,
    /// Per schedule index, what a device or loop segment touches (empty for host ones).
    memory: Vec<SegmentMemory>,
}

impl Executor {
    /// The host waits of `exe` (its schedule, its nodes' current memory effects). A node
    /// whose effect cannot be computed counts as touching everything.
    pub(crate) fn host_waits(&self, exe: &Executable, graph: &Graph) -> HostWaits {
        let n = graph.nodes.len();
        let mut segment_of: Vec<Option<usize>> = vec![None; n];
        let mut ordinal = Vec::with_capacity(exe.sched.len());
        let mut memory = Vec::with_capacity(exe.sched.len());
        let mut steps = 0u64;
        for (si, seg) in exe.sched.iter().enumerate() {
            let mut mem = SegmentMemory::default();
            match seg {
                Seg::Device(stages) => {
                    steps += 1;
                    for &h in stages.iter().flatten() {
                        segment_of[h.index()] = Some(si);
                        match self.node_effect(exe, graph, h) {
                            Ok(None) => {}
                            Ok(Some(e)) => {
                                mem.everything |= e.work == Work::Native;
                                mem.reads.extend(e.reads.iter().map(|s| s.target.clone()));
                                mem.writes.extend(e.writes.iter().map(|s| s.target.clone()));
                            }
                            Err(_) => mem.everything = true,
                        }
                    }
                }
                Seg::Loop(h) => {
                    steps += 1;
                    segment_of[h.index()] = Some(si);
                    mem.everything = true;
                }
                Seg::Host(_) => {}
            }
            ordinal.push(steps);
            memory.push(mem);
        }
        let preds = schedule::predecessors(graph);
        let mut latest: Vec<Option<usize>> = vec![None; n];
        // A cycle was refused when the schedule was made; then nothing is known, and every
        // host task waits for everything before it.
        if let Ok(order) = schedule::topological(&preds) {
            for v in order {
                latest[v] =
                    preds.next(v).iter().map(|&p| p as usize).map(|p| latest[p].max(segment_of[p])).max().flatten();
            }
        } else {
            latest.iter_mut().for_each(|l| *l = Some(usize::MAX));
        }
        HostWaits { latest, ordinal, memory }
    }
}

impl HostWaits {
    /// The timeline steps (from the run's start) the host task `node` at schedule index `at`
    /// waits for, given the memory it declares.
    pub(crate) fn steps_before(&self, node: usize, at: usize, access: &[MemAccess]) -> u64 {
        let from = self.latest.get(node).copied().flatten();
        if from.is_some_and(|s| s >= at) {
            return self.ordinal.get(at).copied().unwrap_or(0);
        }
        let lo = from.map_or(0, |s| s + 1);
        let conflict = (lo..at).rev().find(|&si| self.memory.get(si).is_some_and(|m| m.conflicts(access)));
        match conflict.or(from) {
            Some(si) => self.ordinal.get(si).copied().unwrap_or(0),
            None => 0,
        }
    }
}

impl SegmentMemory {
    /// Whether a host task declaring `access` conflicts with this segment.
    fn conflicts(&self, access: &[MemAccess]) -> bool {
        if self.everything {
            return true;
        }
        access.iter().any(|a| {
            let target = match a.mem {
                MemRef::Memory(h) => Target::User(h.index()),
                MemRef::Alloc(_) => Target::Pool,
            };
            let writes = a.mode != Access::Read;
            let reads = matches!(a.mode, Access::Read | Access::ReadWrite);
            (writes && (self.reads.contains(&target) || self.writes.contains(&target)))
                || (reads && self.writes.contains(&target))
        })
    }
}
