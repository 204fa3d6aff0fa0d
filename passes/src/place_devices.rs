//! `place-devices`: chooses a device for every node of a graph that does not name one, when
//! the pipeline is given a device count (`--devices N`), and makes the graph run there: each
//! node touches only memory of its device, and data crosses devices through explicit
//! transfers (`memcpy` nodes between two devices) that the IR, DOT and diff show
//! (docs/multi-device.md, "The place-devices pass").
//!
//! [`heft`] places the nodes by list scheduling over the estimated costs of [`cost`];
//! [`transfers`] inserts the transfers and mirrors. Memory no node of the module writes and
//! that nodes read on another device than its home becomes `replicated` instead. The result
//! is the same computation: every memory object ends with the same bytes, which the tests
//! check on the interpreter.
//!
//! A host task or native command runs on the host beside the device its memory lives on
//! (`placement::run_device`); a dynamic command group's alternatives and a conditional
//! node's bodies name memory the pass does not rewrite. So these are pinned beside their
//! memory (a conditional node on the graph's device only), their memory stays home (never
//! a mirror), and transfers bring its contents home before them.
//!
//! Left as they are (with a remark): graphs with sub-graph nodes, pinned nodes touching
//! memory of two devices or a graph allocation, conditional nodes touching memory of
//! another device, accessors, and dynamic parameters that hold memory (an update could move
//! it to another device than the transfers were planned for).

pub mod cost;
pub mod heft;
pub mod transfers;

use crate::{PassContext, PassError, PassInfo};
use cmdgraph_ir::graph::{Arg, ArgValue, Graph, MemRef, NodeKind};
use cmdgraph_ir::kernel::ParamType;
use cmdgraph_ir::module::{Home, MemoryKind};
use cmdgraph_ir::types::Access;
use cmdgraph_ir::{Handle, Module};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// Registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "place-devices",
    summary: "place unplaced nodes on N devices (HEFT over estimated costs) and insert the transfers between them",
    statistics: &[
        ("graphs-placed", "graphs whose nodes the pass placed"),
        ("nodes-elsewhere", "nodes placed on another device than their graph's"),
        ("transfers", "transfer nodes inserted"),
        ("transfer-bytes", "bytes the inserted transfers move per run"),
        ("mirrors", "memory objects added as a copy of memory on another device"),
        ("replicated", "memory objects made replicated (read on several devices, written by no node)"),
    ],
    preserves: "every memory object's bytes after a run (transfers move what nodes on other devices read and write); \
                node names, and the devices already written",
    run,
};

fn run(module: &mut Module, ctx: &mut PassContext) -> Result<(), PassError> {
    let Some(devices) = ctx.options.devices.filter(|&d| d >= 2) else { return Ok(()) };
    let bandwidth = ctx.options.transfer_bytes_per_us.unwrap_or(cost::DEFAULT_TRANSFER_BYTES_PER_US);
    let written = written_anywhere(module);
    let used_by = used_by_graphs(module);
    let graphs: Vec<Handle<Graph>> = module.graphs.handles().collect();
    for gh in graphs {
        let graph = &module.graphs[gh];
        let name = graph.name.clone();
        if let Err(why) = eligible(graph) {
            ctx.remarks.push(format!("place-devices @{name}: not placed: {why}\n"));
            continue;
        }
        if let Some((_, n)) = graph.nodes.iter().find(|(_, n)| n.device.is_some_and(|d| d >= devices)) {
            return Err(PassError::Failed {
                pass: INFO.name,
                graph: name,
                node: Some(n.name.clone()),
                message: format!(
                    "the node names device {}, but the pipeline places on {devices} devices (--devices)",
                    n.device.unwrap_or(0)
                ),
            });
        }
        let touches: Option<Vec<_>> = graph.nodes.handles().map(|h| cost::touches(module, graph, h)).collect();
        let Some(touches) = touches else {
            ctx.remarks.push(format!("place-devices @{name}: not placed: a node names memory through an accessor\n"));
            continue;
        };
        let graph_device = graph.device;
        // Memory no node writes and several devices read: replicated rather than mirrored.
        let replicable = |r: MemRef| match r {
            MemRef::Memory(h) => {
                !written.contains(&h.index())
                    && module
                        .memories
                        .try_get(h)
                        .is_some_and(|m| m.home == Home::Graph && !matches!(m.kind, MemoryKind::DeviceGlobal(_)))
            }
            MemRef::Alloc(_) => false,
        };
        // Memory with no home written that only this graph uses goes where it is used first:
        // it costs no transfer to start with.
        // ... unless a host task touches it: the host task stays beside its home.
        let on_host: BTreeSet<MemRef> = graph
            .nodes
            .iter()
            .filter(|(_, n)| pinned_kind(&n.kind))
            .flat_map(|(h, _)| touches[h.index()].iter().map(|t| t.mem))
            .collect();
        let floating: BTreeSet<usize> = module
            .memories
            .iter()
            .filter(|(h, m)| {
                m.home == Home::Graph
                    && matches!(m.kind, MemoryKind::Usm(_) | MemoryKind::Buffer)
                    && !replicable(MemRef::Memory(*h))
                    && !on_host.contains(&MemRef::Memory(*h))
                    && used_by.get(&h.index()).is_some_and(|g| g.len() == 1 && g.contains(&gh.index()))
            })
            .map(|(h, _)| h.index())
            .collect();
        let home = |r: MemRef| -> Option<u32> {
            if replicable(r) {
                return None;
            }
            if let MemRef::Memory(h) = r {
                if floating.contains(&h.index()) {
                    return None;
                }
            }
            cmdgraph_ir::placement::memory_device(module, graph, r).or(Some(graph_device))
        };
        let pinned = match pin_nodes(graph, &touches, &home) {
            Ok(p) => p,
            Err(why) => {
                ctx.remarks.push(format!("place-devices @{name}: not placed: {why}\n"));
                continue;
            }
        };
        let Some(schedule) = heft::schedule(module, graph, devices, bandwidth, &touches, &home, &pinned) else {
            ctx.remarks.push(format!("place-devices @{name}: not placed: the graph has a cycle\n"));
            continue;
        };
        // Spreading must pay by the model: without nodes placed already, a schedule no
        // shorter than one device's keeps everything on the graph's device.
        let schedule = match graph.nodes.iter().any(|(_, n)| n.device.is_some()) {
            true => schedule,
            false => match heft::schedule(module, graph, 1, bandwidth, &touches, &home, &on_one(&pinned)) {
                Some(one) if one.makespan <= schedule.makespan => {
                    ctx.remarks.push(format!(
                        "place-devices @{name}: kept on device {graph_device}: the estimate on {devices} devices ({:.1} µs) is no shorter than on one ({:.1} µs)\n",
                        schedule.makespan, one.makespan
                    ));
                    continue;
                }
                _ => schedule,
            },
        };
        // Replicate what is read on a device other than the graph's.
        let mut replicate = BTreeSet::new();
        for (i, list) in touches.iter().enumerate() {
            if schedule.device[i].is_some_and(|d| d != graph_device) {
                for t in list {
                    if let MemRef::Memory(h) = t.mem {
                        if replicable(t.mem) {
                            replicate.insert(h);
                        }
                    }
                }
            }
        }
        let mut remark = String::new();
        let _ = writeln!(remark, "place-devices @{name}: {devices} devices, estimated {:.1} µs", schedule.makespan);
        for (h, n) in graph.nodes.iter() {
            let (Some(d), Some(times)) = (schedule.device[h.index()], schedule.finish.get(h.index())) else { continue };
            let others: Vec<String> = times
                .iter()
                .enumerate()
                .filter(|&(e, t)| e as u32 != d && t.is_finite())
                .map(|(e, t)| format!("device {e}: {t:.1} µs"))
                .collect();
            let why = match n.device {
                Some(_) => "as written".to_string(),
                None if others.is_empty() => "the only choice".to_string(),
                None => format!("finishes first there ({:.1} µs; {})", times[d as usize], others.join(", ")),
            };
            let _ = writeln!(remark, "  %{} -> device {d}: {why}", n.name);
        }
        let elsewhere = schedule.device.iter().filter(|d| d.is_some_and(|d| d != graph_device)).count();
        for &h in &replicate {
            if let Some(m) = module.memories.try_get_mut(h) {
                m.home = Home::Replicated;
            }
        }
        let added = transfers::rewrite(module, gh, schedule.device, &touches, &schedule.order, &floating);
        for (node, mem, from, to, bytes) in &added.transfers {
            let _ = writeln!(remark, "  transfer %{node}: {mem}, device {from} -> {to}, {bytes} bytes");
        }
        for h in &replicate {
            let _ = writeln!(
                remark,
                "  @{} replicated: read on several devices, written by no node",
                module.memories[*h].name
            );
        }
        ctx.remarks.push(remark);
        ctx.bump("graphs-placed", 1);
        ctx.bump("nodes-elsewhere", elsewhere as u64);
        ctx.bump("transfers", added.transfers.len() as u64);
        ctx.bump("transfer-bytes", added.transfers.iter().map(|t| t.4).sum());
        ctx.bump("mirrors", added.mirrors.len() as u64);
        ctx.bump("replicated", replicate.len() as u64);
    }
    Ok(())
}

/// Why the pass leaves `graph` as it is, if it does.
fn eligible(graph: &Graph) -> Result<(), String> {
    // Scalars may change after placement; a pointer could move a node's memory to another
    // device than the transfers were planned for.
    if let Some((_, p)) = graph.dyn_params.iter().find(|(_, p)| !matches!(p.value, ArgValue::Scalar(_))) {
        return Err(format!(
            "dynamic parameter %{} holds memory (an update could move it to another device than the transfers were planned for; place the graph by hand)",
            p.name
        ));
    }
    for (_, n) in graph.nodes.iter() {
        let what = match n.kind {
            NodeKind::Subgraph { .. } => "a sub-graph node (run inline-subgraphs first)",
            NodeKind::Comm(_) => "a communication node (a rank runs on one device: give each rank its own graph)",
            _ => continue,
        };
        return Err(format!("%{} is {what}", n.name));
    }
    Ok(())
}

/// Nodes pinned beside the memory they touch rather than placed freely: host tasks and
/// native commands (the application's callback names memory as it knows it), dynamic
/// command groups (their alternatives' arguments are not rewritten to mirrors) and
/// conditional nodes (their bodies are graphs of the graph's device).
fn pinned_kind(kind: &NodeKind) -> bool {
    matches!(
        kind,
        NodeKind::HostTask(_) | NodeKind::Native(_) | NodeKind::Dynamic { .. } | NodeKind::Conditional { .. }
    )
}

/// By node index: the device each pinned node ([`pinned_kind`]) runs on, the one its memory
/// lives on (the graph's when all it touches is replicated); a conditional node only on the
/// graph's device. Memory of two devices, a graph allocation (it lives where its first user
/// runs, which the schedule chooses), or a conditional node's memory on another device is an
/// error saying why the graph is left.
fn pin_nodes(
    graph: &Graph,
    touches: &[Vec<cost::Touch>],
    home: &dyn Fn(MemRef) -> Option<u32>,
) -> Result<Vec<Option<u32>>, String> {
    let mut pinned = vec![None; graph.nodes.len()];
    for (h, n) in graph.nodes.iter() {
        if !pinned_kind(&n.kind) {
            continue;
        }
        let mut devices = BTreeSet::new();
        for t in &touches[h.index()] {
            if let MemRef::Alloc(a) = t.mem {
                let alloc = graph.nodes.try_get(a).map_or("?", |x| x.name.as_str());
                return Err(format!("%{} touches graph allocation %{alloc}", n.name));
            }
            devices.extend(home(t.mem));
        }
        let list: Vec<String> = devices.iter().map(u32::to_string).collect();
        let d = match list.len() {
            0 => graph.device,
            1 => devices.first().copied().unwrap_or(graph.device),
            _ => return Err(format!("%{} touches memory of devices {}", n.name, list.join(" and "))),
        };
        if matches!(n.kind, NodeKind::Conditional { .. }) && d != graph.device {
            return Err(format!(
                "conditional node %{} touches memory of device {d}, and its bodies run on the graph's device {}",
                n.name, graph.device
            ));
        }
        pinned[h.index()] = Some(d);
    }
    Ok(pinned)
}

/// `pinned` for the one-device estimate: every pinned node on device 0.
fn on_one(pinned: &[Option<u32>]) -> Vec<Option<u32>> {
    pinned.iter().map(|p| p.map(|_| 0)).collect()
}

/// Memory objects some node of some graph writes (or might: dynamic parameters, host tasks).
fn written_anywhere(module: &Module) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    let mut mark = |r: MemRef| {
        if let MemRef::Memory(h) = r {
            out.insert(h.index());
        }
    };
    for (_, graph) in module.graphs.iter() {
        for (h, n) in graph.nodes.iter() {
            match &n.kind {
                NodeKind::Memcpy { dst, .. } | NodeKind::Memset { dst, .. } | NodeKind::Memfill { dst, .. } => {
                    mark(dst.base)
                }
                NodeKind::HostTask(t) | NodeKind::Native(t) => {
                    for a in t.access.iter().filter(|a| a.mode != Access::Read) {
                        mark(a.mem);
                    }
                }
                _ => {}
            }
            for (_, cmd) in graph.kernel_commands(h) {
                let params = module.kernels.try_get(cmd.kernel).map(|k| k.params.as_slice()).unwrap_or(&[]);
                for (i, a) in cmd.args.iter().enumerate() {
                    let value = match a {
                        Arg::Value(v) => v.clone(),
                        Arg::Dyn(p) => match graph.dyn_params.try_get(*p) {
                            Some(p) => p.value.clone(),
                            None => continue,
                        },
                    };
                    match value {
                        ArgValue::Pointer(p) => {
                            let read_only = matches!(
                                params.get(i).map(|p| p.ty),
                                Some(ParamType::Buffer { access: Access::Read, .. })
                            );
                            if !read_only || matches!(a, Arg::Dyn(_)) {
                                mark(p.base);
                            }
                        }
                        ArgValue::Accessor(acc) if acc.mode != Access::Read => mark(acc.buffer),
                        _ => {}
                    }
                }
            }
        }
    }
    out
}

/// For each memory object (by index), the graphs (by index) whose nodes name it.
fn used_by_graphs(module: &Module) -> std::collections::BTreeMap<usize, BTreeSet<usize>> {
    let mut out: std::collections::BTreeMap<usize, BTreeSet<usize>> = Default::default();
    for (gh, graph) in module.graphs.iter() {
        let mut mark = |r: &MemRef| {
            if let MemRef::Memory(h) = r {
                out.entry(h.index()).or_default().insert(gh.index());
            }
        };
        for (nh, n) in graph.nodes.iter() {
            cmdgraph_ir::edit::memrefs(&n.kind, &mut mark);
            // Dynamic command groups' alternatives.
            if matches!(n.kind, NodeKind::Dynamic { .. }) {
                for (_, cmd) in graph.kernel_commands(nh) {
                    cmdgraph_ir::edit::kernel_memrefs(cmd, &mut mark);
                }
            }
        }
        // Dynamic parameters name memory too.
        for (_, p) in graph.dyn_params.iter() {
            if let ArgValue::Pointer(ptr) = &p.value {
                mark(&ptr.base);
            }
        }
    }
    out
}
