//! Profiling of executables whose graph has `enable_profiling` (docs/executor.md,
//! "Profiling"): timestamp queries around every recorded node and around every device
//! segment, read back by [`Executor::profile`].
#![allow(unsafe_code)]

use crate::error::{ExecError, Result};
use crate::exec::{ExecId, Executor};
use crate::schedule::{self, Seg};
use crate::vk::Context;
use ash::vk;
use cmdgraph_ir::Graph;
use std::collections::BTreeMap;

/// Timings of one node of the last run, in device nanoseconds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeProfile {
    /// The optimized graph's node name (without `%`).
    pub node: String,
    /// Device time just before the node's commands start.
    pub start_ns: u64,
    /// Device time after its commands (and the earlier commands of its stage) completed.
    pub end_ns: u64,
}

impl NodeProfile {
    /// `end_ns - start_ns`.
    pub fn duration_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

/// The profile of an executable's last run (SYCL's `command_submit`, `command_start`,
/// `command_end` of the graph's submission event, and per-node times).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    /// Host time of the submission, in nanoseconds since the executor was created (the
    /// host's clock: not comparable with the device times below).
    pub submit_host_ns: u64,
    /// Device time before the first command of the run.
    pub start_ns: u64,
    /// Device time after the last command of the run.
    pub end_ns: u64,
    /// Nodes that record commands, in schedule order.
    pub nodes: Vec<NodeProfile>,
}

/// The timestamp queries of one executable: per device segment `[start, end, node 0 start,
/// node 0 end, ...]`, contiguous so one reset covers a segment.
pub(crate) struct Queries {
    pub(crate) pool: vk::QueryPool,
    /// Per segment: (first query, query count); `None` for host segments.
    seg: Vec<Option<(u32, u32)>>,
    /// Node index → its start query (the end is the next one).
    nodes: BTreeMap<usize, u32>,
    /// Nodes in schedule order (node index, name).
    order: Vec<(usize, String)>,
    total: u32,
}

impl Queries {
    /// Query slots for a graph with `enable_profiling` on a device with timestamps; `None`
    /// otherwise (then [`Executor::profile`] says why).
    /// Nodes get their own timestamps only with `per_node` (`RecordOptions::node_profiling`):
    /// a timestamp after a node waits for every earlier command, so it serialises a stage.
    pub(crate) fn new(ctx: &Context, graph: &Graph, sched: &[Seg], per_node: bool) -> Result<Option<Queries>> {
        if !graph.properties.enable_profiling || ctx.timestamp_bits == 0 {
            return Ok(None);
        }
        let (mut seg, mut nodes, mut order, mut next) = (Vec::new(), BTreeMap::new(), Vec::new(), 0u32);
        for s in sched {
            let Seg::Device(stages) = s else {
                seg.push(None);
                continue;
            };
            let first = next;
            next += 2;
            for &h in stages.iter().flatten() {
                let Some(n) = graph.nodes.try_get(h) else { continue };
                if per_node && !schedule::is_noop(&n.kind) {
                    nodes.insert(h.index(), next);
                    order.push((h.index(), n.name.clone()));
                    next += 2;
                }
            }
            seg.push(Some((first, next - first)));
        }
        let info = vk::QueryPoolCreateInfo::default().query_type(vk::QueryType::TIMESTAMP).query_count(next.max(1));
        // SAFETY: a valid create info on a live device.
        let pool = unsafe { ctx.device.create_query_pool(&info, None) }?;
        Ok(Some(Queries { pool, seg, nodes, order, total: next }))
    }

    pub(crate) fn destroy(&self, ctx: &Context) {
        // SAFETY: the executable is idle when it is destroyed.
        unsafe { ctx.device.destroy_query_pool(self.pool, None) };
    }

    /// Resets segment `si`'s queries and writes its start timestamp.
    ///
    /// # Safety
    /// `cb` is recording.
    pub(crate) unsafe fn begin_segment(&self, d: &ash::Device, cb: vk::CommandBuffer, si: usize) {
        if let Some(Some((first, count))) = self.seg.get(si) {
            // SAFETY: the caller's contract; the range is inside the pool.
            unsafe {
                d.cmd_reset_query_pool(cb, self.pool, *first, *count);
                d.cmd_write_timestamp2(cb, vk::PipelineStageFlags2::NONE, self.pool, *first);
            }
        }
    }

    /// Writes segment `si`'s end timestamp (after all its commands).
    ///
    /// # Safety
    /// `cb` is recording.
    pub(crate) unsafe fn end_segment(&self, d: &ash::Device, cb: vk::CommandBuffer, si: usize) {
        if let Some(Some((first, _))) = self.seg.get(si) {
            // SAFETY: the caller's contract.
            unsafe { d.cmd_write_timestamp2(cb, vk::PipelineStageFlags2::ALL_COMMANDS, self.pool, first + 1) };
        }
    }

    /// Writes node `node`'s start (`end == false`) or end timestamp.
    ///
    /// # Safety
    /// `cb` is recording.
    pub(crate) unsafe fn node(&self, d: &ash::Device, cb: vk::CommandBuffer, node: usize, end: bool) {
        if let Some(&q) = self.nodes.get(&node) {
            let stage = if end { vk::PipelineStageFlags2::ALL_COMMANDS } else { vk::PipelineStageFlags2::NONE };
            // SAFETY: the caller's contract.
            unsafe { d.cmd_write_timestamp2(cb, stage, self.pool, q + u32::from(end)) };
        }
    }
}

impl Executor {
    /// Whether [`Executor::profile`] has something to report for `id`: its graph has
    /// `enable_profiling`, the device has timestamp queries and it has run.
    pub fn profiled(&self, id: ExecId) -> Result<bool> {
        let exe = self.exec_ref(id)?;
        let graph = self.loaded.module.graphs.try_get(exe.graph).ok_or_else(|| ExecError::Ir("bad graph".into()))?;
        Ok(graph.properties.enable_profiling && exe.queries.is_some() && exe.submit_ns.is_some())
    }

    /// The profile of executable `id`'s last run (waits for it). An executable whose graph
    /// lacks `enable_profiling` is an error (spec §22 row 61), as is a device without
    /// timestamp queries or an executable that has not run.
    pub fn profile(&self, id: ExecId) -> Result<Profile> {
        let exe = self.exec_ref(id)?;
        let graph = self.loaded.module.graphs.try_get(exe.graph).ok_or_else(|| ExecError::Ir("bad graph".into()))?;
        if !graph.properties.enable_profiling {
            return Err(ExecError::Invalid(format!(
                "profiling information of @{}: the graph was not created with property::graph::enable_profiling (row 61)",
                graph.name
            )));
        }
        let q = exe.queries.as_ref().ok_or_else(|| {
            ExecError::Invalid(format!(
                "device {} has no timestamp queries (timestampValidBits = 0)",
                self.ctx.device_name()
            ))
        })?;
        let submit_host_ns = exe.submit_ns.ok_or_else(|| ExecError::Invalid(format!("@{} has not run", graph.name)))?;
        self.wait_value(exe, exe.submitted)?;
        let mut data = vec![[0u64; 2]; q.total as usize];
        if q.total > 0 {
            // SAFETY: the pool has `total` queries; the runs that wrote them are complete.
            unsafe {
                self.ctx.device.get_query_pool_results(
                    q.pool,
                    0,
                    &mut data,
                    vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WITH_AVAILABILITY,
                )
            }?;
        }
        let mask = if self.ctx.timestamp_bits >= 64 { u64::MAX } else { (1u64 << self.ctx.timestamp_bits) - 1 };
        let period = f64::from(self.ctx.props.limits.timestamp_period);
        let at = |i: u32| -> Result<u64> {
            match data.get(i as usize) {
                Some([v, avail]) if *avail != 0 => Ok(((v & mask) as f64 * period) as u64),
                _ => Err(ExecError::Invalid(format!("@{}: the last run did not complete", graph.name))),
            }
        };
        let segs: Vec<(u32, u32)> = q.seg.iter().flatten().copied().collect();
        let (start_ns, end_ns) = match (segs.first(), segs.last()) {
            (Some(f), Some(l)) => (at(f.0)?, at(l.0 + 1)?),
            _ => (0, 0),
        };
        let mut nodes = Vec::with_capacity(q.order.len());
        for (idx, name) in &q.order {
            let s = q.nodes.get(idx).copied().ok_or_else(|| ExecError::Ir("profile slot".into()))?;
            nodes.push(NodeProfile { node: name.clone(), start_ns: at(s)?, end_ns: at(s + 1)? });
        }
        Ok(Profile { submit_host_ns, start_ns, end_ns, nodes })
    }
}
