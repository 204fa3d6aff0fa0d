//! HEFT list scheduling (Topcuoglu, Hariri and Wu, 2002) over the cost model of `cost.rs`:
//! each node's upward rank is its cost plus the most expensive path to an exit (edges
//! carrying data counted at their average transfer cost); nodes are taken ready-first by
//! rank and each goes to the device where it would finish first, counting the transfers
//! its inputs would need there. Nodes already placed keep their device.
//!
//! Deterministic: ranks and finish times are computed in one order, and ties go to the node
//! with the lower index and to the lower device.

use super::cost::{self, Touch};
use crate::analysis::{topological_order, Csr};
use cmdgraph_ir::graph::{Graph, MemRef, NodeKind};
use cmdgraph_ir::{Handle, Module};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// What the scheduler decided for one graph.
pub struct Schedule {
    /// By node index: the device it runs on (`None`: it runs on none, e.g. an empty node).
    pub device: Vec<Option<u32>>,
    /// By node index: estimated finish time on its device, and on each device (µs).
    pub finish: Vec<Vec<f64>>,
    /// Estimated length of the whole schedule (µs).
    pub makespan: f64,
    /// The topological order of node indices the schedule was computed in.
    pub order: Vec<u32>,
}

/// Whether node kind `k` runs on a device and is placed by the scheduler.
fn scheduled(k: &NodeKind) -> bool {
    matches!(k, NodeKind::Kernel(_) | NodeKind::Memcpy { .. } | NodeKind::Memset { .. } | NodeKind::Memfill { .. })
}

#[derive(PartialEq)]
struct Ready(f64, u32);
impl Eq for Ready {}
impl PartialOrd for Ready {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ready {
    /// Highest rank first, then the lowest index.
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0).then_with(|| other.1.cmp(&self.1))
    }
}

/// Schedules `graph` on `devices` devices; `touches` by node index (`cost::touches`),
/// `home(r)` the device memory `r` starts on (`None`: everywhere), `pinned` by node index
/// the device of a host task or native command (beside the memory it touches) or of a node
/// that names one.
pub fn schedule(
    module: &Module,
    graph: &Graph,
    devices: u32,
    bytes_per_us: u64,
    touches: &[Vec<Touch>],
    home: &dyn Fn(MemRef) -> Option<u32>,
    pinned: &[Option<u32>],
) -> Option<Schedule> {
    let n = graph.nodes.len();
    let succ = Csr::successors(graph);
    let pred = Csr::predecessors(graph);
    let order = topological_order(&succ)?;
    let kinds: Vec<&NodeKind> = graph.nodes.iter().map(|(_, x)| &x.kind).collect();
    let runs: Vec<bool> =
        kinds.iter().enumerate().map(|(i, k)| scheduled(k) || pinned.get(i).is_some_and(|p| p.is_some())).collect();
    let costs: Vec<f64> = graph.nodes.handles().map(|h| cost::node_us(module, graph, h)).collect();
    let share = f64::from(devices.saturating_sub(1)) / f64::from(devices.max(1));
    // Data moves from the last node that wrote a memory to the next that touches it (the
    // verifier's race rule orders them), whether or not an edge joins them directly.
    let mut producers: Vec<Vec<(u32, u64)>> = vec![Vec::new(); n];
    let mut consumers: Vec<Vec<(u32, u64)>> = vec![Vec::new(); n];
    let mut last: std::collections::BTreeMap<MemRef, u32> = std::collections::BTreeMap::new();
    for &v in &order {
        // A node that overwrites all of a memory without reading it needs none of its data.
        for t in touches[v as usize].iter().filter(|t| t.reads || !t.covers) {
            if let Some(&w) = last.get(&t.mem) {
                let bytes = cost::size_of(module, graph, t.mem);
                producers[v as usize].push((w, bytes));
                consumers[w as usize].push((v, bytes));
            }
        }
        for t in touches[v as usize].iter().filter(|t| t.writes) {
            last.insert(t.mem, v);
        }
    }
    // Upward ranks, exits first.
    let mut rank = vec![0.0f64; n];
    for &v in order.iter().rev() {
        let edges = succ.neighbours(v).iter().map(|&s| rank[s as usize]);
        let data = consumers[v as usize]
            .iter()
            .map(|&(c, bytes)| cost::transfer_us(bytes, bytes_per_us) * share + rank[c as usize]);
        rank[v as usize] = costs[v as usize] + edges.chain(data).fold(0.0f64, f64::max);
    }
    let mut indegree: Vec<usize> = (0..n as u32).map(|v| pred.neighbours(v).len()).collect();
    let mut heap: BinaryHeap<Ready> =
        (0..n as u32).filter(|&v| indegree[v as usize] == 0).map(|v| Ready(rank[v as usize], v)).collect();
    let mut device: Vec<Option<u32>> = vec![None; n];
    let mut finish = vec![0.0f64; n];
    let mut per_device: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut avail = vec![0.0f64; devices as usize];
    while let Some(Ready(_, v)) = heap.pop() {
        let vi = v as usize;
        let node = graph.nodes.try_get(Handle::from_usize(vi)?)?;
        let ready_on = |d: u32| -> f64 {
            let mut ready = 0.0f64;
            for &p in pred.neighbours(v) {
                ready = ready.max(finish[p as usize]);
            }
            // What another device wrote comes over a transfer.
            for &(w, bytes) in &producers[vi] {
                if device[w as usize].is_some_and(|e| e != d) {
                    ready = ready.max(finish[w as usize] + cost::transfer_us(bytes, bytes_per_us));
                }
            }
            // Memory no node wrote before starts on its home.
            for t in touches[vi].iter().filter(|t| t.reads || !t.covers) {
                let written_before =
                    producers[vi].iter().any(|&(w, _)| touches[w as usize].iter().any(|q| q.writes && q.mem == t.mem));
                if let (false, Some(h)) = (written_before, home(t.mem)) {
                    if h != d && matches!(t.mem, MemRef::Memory(_)) {
                        ready = ready.max(cost::transfer_us(cost::size_of(module, graph, t.mem), bytes_per_us));
                    }
                }
            }
            ready
        };
        if runs[vi] {
            let candidates: Vec<u32> = match pinned.get(vi).copied().flatten().or(node.device) {
                Some(d) => vec![d],
                None => (0..devices).collect(),
            };
            let mut best: Option<(f64, u32)> = None;
            let mut times = vec![f64::INFINITY; devices as usize];
            for d in candidates {
                let start = avail.get(d as usize).copied().unwrap_or(0.0).max(ready_on(d));
                let eft = start + costs[vi];
                if let Some(t) = times.get_mut(d as usize) {
                    *t = eft;
                }
                if best.is_none_or(|(b, _)| eft < b) {
                    best = Some((eft, d));
                }
            }
            let (eft, d) = best?;
            if let Some(a) = avail.get_mut(d as usize) {
                *a = eft;
            }
            device[vi] = Some(d);
            finish[vi] = eft;
            per_device[vi] = times;
        } else {
            finish[vi] = pred.neighbours(v).iter().map(|&p| finish[p as usize]).fold(0.0, f64::max);
        }
        for &s in succ.neighbours(v) {
            let k = &mut indegree[s as usize];
            *k -= 1;
            if *k == 0 {
                heap.push(Ready(rank[s as usize], s));
            }
        }
    }
    let makespan = finish.iter().copied().fold(0.0, f64::max);
    Some(Schedule { device, finish: per_device, makespan, order })
}
