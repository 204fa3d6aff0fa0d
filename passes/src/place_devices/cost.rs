//! The cost model `place-devices` schedules with (docs/multi-device.md, "The place-devices
//! pass"): estimated microseconds per node and per transfer. Only the ratios between them
//! decide a placement, so the constants are nominal: a device is taken to run `OPS_PER_US`
//! kernel operations and move `DEVICE_BYTES_PER_US` bytes per microsecond, plus
//! `LAUNCH_US` per command; a transfer between devices moves the option's host-staged
//! bandwidth (`PassOptions::transfer_bytes_per_us`) after `TRANSFER_LATENCY_US`.

use cmdgraph_ir::graph::{Arg, ArgValue, Graph, MemRef, Node, NodeKind};
use cmdgraph_ir::kernel::{KernelBody, ParamType};
use cmdgraph_ir::types::Access;
use cmdgraph_ir::{Handle, Module};

/// Kernel operations a device runs per microsecond (nominal: 10^12 per second).
pub const OPS_PER_US: f64 = 1.0e6;
/// Bytes a device copies or fills per microsecond (nominal: 1 TB/s).
pub const DEVICE_BYTES_PER_US: f64 = 1.0e6;
/// What one command costs on top of its work.
pub const LAUNCH_US: f64 = 2.0;
/// Bytes a host task is taken to read and write per microsecond (nominal: 10 GB/s), plus
/// `LAUNCH_US` for the device to wait for it.
pub const HOST_BYTES_PER_US: f64 = 1.0e4;
/// What one transfer costs on top of its bytes.
pub const TRANSFER_LATENCY_US: f64 = 10.0;
/// The host-staged bandwidth assumed when the option does not give one: 10 GB/s.
pub const DEFAULT_TRANSFER_BYTES_PER_US: u64 = 10_000;

/// One memory reference of a node: what it names and whether it reads and writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Touch {
    /// The memory.
    pub mem: MemRef,
    /// The node reads it.
    pub reads: bool,
    /// The node writes it (some of it, perhaps).
    pub writes: bool,
    /// The node writes every byte of it for certain (`footprint::surely_written` for a
    /// kernel; a copy or fill from its start over its size): with `reads` false, its
    /// earlier contents are not needed where the node runs.
    pub covers: bool,
}

/// The memory node `h` of `graph` reads and writes, in argument order (`None`: the node
/// names memory in a way the pass does not rewrite, such as an accessor). A dynamic
/// parameter is a scalar here: the pass places no graph with a pointer parameter. A dynamic
/// command group touches what all its kernel alternatives touch; a conditional node its
/// condition and the module memory its bodies touch (their own allocations stay inside).
pub fn touches(module: &Module, graph: &Graph, h: Handle<Node>) -> Option<Vec<Touch>> {
    touches_within(module, graph, h, 0)
}

/// Conditional bodies nest; the verifier bounds the depth, and so does this.
const MAX_BODY_DEPTH: u32 = 64;

fn touches_within(module: &Module, graph: &Graph, h: Handle<Node>, depth: u32) -> Option<Vec<Touch>> {
    let t = |mem: MemRef, reads: bool, writes: bool| Touch { mem, reads, writes, covers: false };
    // A copy or fill from the start of `dst` over at least its size.
    let whole = |dst: &cmdgraph_ir::graph::Pointer, bytes: u64| {
        let covers = dst.offset == 0 && bytes >= size_of(module, graph, dst.base);
        Touch { mem: dst.base, reads: false, writes: true, covers }
    };
    let node = graph.nodes.try_get(h)?;
    Some(match &node.kind {
        NodeKind::Kernel(_) => kernel_touches(module, graph, h)?,
        NodeKind::Dynamic { dcg } => {
            let group = graph.dcgs.try_get(*dcg)?;
            if !group.alternatives.iter().all(|a| matches!(a, cmdgraph_ir::graph::Alternative::Kernel(_))) {
                return None;
            }
            kernel_touches(module, graph, h)?
        }
        NodeKind::Conditional { cond, bodies, .. } => {
            if depth >= MAX_BODY_DEPTH {
                return None;
            }
            let mut out = vec![t(cond.base, true, false)];
            for &b in bodies {
                let body = module.graphs.try_get(b)?;
                for bh in body.nodes.handles() {
                    let inner = touches_within(module, body, bh, depth + 1)?;
                    out.extend(inner.into_iter().filter(|x| matches!(x.mem, MemRef::Memory(_))));
                }
            }
            out
        }
        NodeKind::Memcpy { dst, src, bytes } => vec![t(src.base, true, false), whole(dst, *bytes)],
        NodeKind::Memset { dst, bytes, .. } => vec![whole(dst, *bytes)],
        NodeKind::Memfill { dst, pattern, count } => {
            vec![whole(dst, pattern.ty.map_or(0, |ty| ty.size()).saturating_mul(*count))]
        }
        // The host touches what the node declares, beside the device that memory lives on.
        NodeKind::HostTask(task) | NodeKind::Native(task) => {
            task.access.iter().map(|a| t(a.mem, a.mode != Access::Write, a.mode != Access::Read)).collect()
        }
        NodeKind::Empty | NodeKind::Barrier { .. } => Vec::new(),
        NodeKind::Prefetch { .. } | NodeKind::Memadvise { .. } => Vec::new(),
        NodeKind::AsyncMalloc { .. } | NodeKind::AsyncFree { .. } => Vec::new(),
        _ => return None,
    })
}

/// The pointer arguments of the kernel commands of node `h` (its alternatives, for a dynamic
/// command group), with the access each kernel parameter declares; a kernel node's
/// write-only argument it surely writes whole covers its memory.
fn kernel_touches(module: &Module, graph: &Graph, h: Handle<Node>) -> Option<Vec<Touch>> {
    let single = matches!(graph.nodes.try_get(h).map(|n| &n.kind), Some(NodeKind::Kernel(_)));
    let mut out: Vec<Touch> = Vec::new();
    for (_, cmd) in graph.kernel_commands(h) {
        let kernel = module.kernels.try_get(cmd.kernel)?;
        let written = match single {
            true => cmdgraph_ir::footprint::surely_written(kernel, &cmd.launch),
            false => Default::default(),
        };
        for (i, a) in cmd.args.iter().enumerate() {
            match a {
                Arg::Value(ArgValue::Pointer(p)) => {
                    let (access, elem) = match kernel.params.get(i).map(|p| p.ty) {
                        Some(ParamType::Buffer { access, elem }) => (access, elem.size()),
                        _ => (Access::ReadWrite, 0),
                    };
                    let surely = written.get(&(i as u32)).map_or(0, |n| n.saturating_mul(elem));
                    let covers = access == Access::Write && p.offset == 0 && surely >= size_of(module, graph, p.base);
                    let touch =
                        Touch { mem: p.base, reads: access != Access::Write, writes: access != Access::Read, covers };
                    if !out.contains(&touch) {
                        out.push(touch);
                    }
                }
                Arg::Value(ArgValue::Accessor(_)) => return None,
                Arg::Value(_) | Arg::Dyn(_) => {}
            }
        }
    }
    Some(out)
}

/// Bytes of memory `r`.
pub fn size_of(module: &Module, graph: &Graph, r: MemRef) -> u64 {
    match r {
        MemRef::Memory(h) => module.memories.try_get(h).map_or(0, |m| m.size_bytes()),
        MemRef::Alloc(n) => match graph.nodes.try_get(n).map(|n| &n.kind) {
            Some(NodeKind::AsyncMalloc { elem, count, .. }) => elem.size().saturating_mul(*count),
            _ => 0,
        },
    }
}

/// Estimated microseconds node `h` runs on a device (0 for ordering-only nodes).
pub fn node_us(module: &Module, graph: &Graph, h: Handle<Node>) -> f64 {
    let Some(node) = graph.nodes.try_get(h) else { return 0.0 };
    let kernel_us = |cmd: &cmdgraph_ir::graph::KernelCommand| {
        let ops = match module.kernels.try_get(cmd.kernel).map(|k| &k.body) {
            Some(KernelBody::Ir(body)) => body.ops.len().max(1) as f64,
            _ => 16.0,
        };
        let items = cmd.launch.work_items().unwrap_or(u64::MAX) as f64;
        LAUNCH_US + items * ops / OPS_PER_US
    };
    match &node.kind {
        NodeKind::Kernel(cmd) => kernel_us(cmd),
        // The costliest alternative: any may be active.
        NodeKind::Dynamic { .. } => graph.kernel_commands(h).map(|(_, cmd)| kernel_us(cmd)).fold(0.0, f64::max),
        NodeKind::Memcpy { bytes, .. } | NodeKind::Memset { bytes, .. } => {
            LAUNCH_US + *bytes as f64 / DEVICE_BYTES_PER_US
        }
        NodeKind::Memfill { pattern, count, .. } => {
            let elem = pattern.ty.map_or(4, |t| t.size());
            LAUNCH_US + elem.saturating_mul(*count) as f64 / DEVICE_BYTES_PER_US
        }
        NodeKind::HostTask(task) | NodeKind::Native(task) => {
            let bytes: u64 = task.access.iter().map(|a| size_of(module, graph, a.mem)).sum();
            LAUNCH_US + bytes as f64 / HOST_BYTES_PER_US
        }
        _ => 0.0,
    }
}

/// Estimated microseconds a transfer of `bytes` between two devices takes.
pub fn transfer_us(bytes: u64, bytes_per_us: u64) -> f64 {
    TRANSFER_LATENCY_US + bytes as f64 / bytes_per_us.max(1) as f64
}
