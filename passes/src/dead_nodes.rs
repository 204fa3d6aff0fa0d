//! `dead-node-elimination`: remove commands whose effects nobody can observe.
//!
//! A command is dead when everything it writes is graph-owned memory (an `async_malloc`
//! allocation) that no remaining command reads: kernels (what they write is found in the
//! body: `store` and `atomic` through a buffer parameter, not the parameter's declared
//! mode; a kernel that stores nothing is dead too), `memcpy`, `memset` and `memfill`. Then
//! an allocation that no remaining command names loses its `async_malloc` and `async_free`
//! nodes. Both steps repeat until nothing changes (removing a reader can make its writers
//! dead). Removal goes through [`crate::bypass::remove_and_bypass`], so the happens-before
//! relation among the remaining nodes is kept.
//!
//! Never removed: host tasks and native commands (their callbacks are opaque; their access
//! lists count as reads), `dynamic` nodes and nodes with an argument registered with a
//! dynamic parameter (the application may update them to anything; a dynamic parameter
//! naming an allocation counts as a read of it), `prefetch` and `memadvise` (hints the user
//! asked for; they keep their allocation alive), `subgraph` nodes, kernels with an external
//! SPIR-V body (unknown effects), and any command writing user memory (`usm`, `buffer`) or a
//! `device_global`. `empty` and `barrier` nodes are left to their own passes.

use crate::bypass::remove_and_bypass;
use crate::{PassContext, PassError, PassInfo};
use cmdgraph_ir::graph::{Alternative, Arg, ArgValue, KernelCommand, MemRef, NodeKind};
use cmdgraph_ir::kernel::{KernelBody, MemBase, OpKind, ValueDef};
use cmdgraph_ir::{Graph, Module, Node};

/// Registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "dead-node-elimination",
    summary: "remove commands that only write graph-owned memory nobody reads, then unused allocations",
    statistics: &[
        ("commands-removed", "kernels, copies, memsets and fills removed"),
        ("allocations-removed", "async_malloc nodes removed (with their async_free nodes)"),
        ("rounds", "fixed-point rounds run, the last finding nothing"),
    ],
    preserves: "names, order and edges among the nodes it keeps; never removes host tasks, native commands, \
                dynamic nodes, nodes with dynamic parameters, hints, sub-graphs, or writers of user memory",
    run,
};

fn run(module: &mut Module, ctx: &mut PassContext) -> Result<(), PassError> {
    let kernels = KernelEffects::of(module);
    for g in module.graphs.handles().collect::<Vec<_>>() {
        let graph = &mut module.graphs[g];
        loop {
            ctx.bump("rounds", 1);
            let (remove, commands, allocs) = dead_nodes(graph, &kernels);
            if commands + allocs == 0 {
                break;
            }
            remove_and_bypass(graph, &remove).map_err(|e| PassError::Failed {
                pass: INFO.name,
                graph: graph.name.clone(),
                node: None,
                message: e.to_string(),
            })?;
            ctx.bump("commands-removed", commands);
            ctx.bump("allocations-removed", allocs);
        }
    }
    Ok(())
}

/// What each kernel of the module does to its buffer parameters, from its body.
struct KernelEffects {
    /// Per kernel: per parameter, (read, written). `None`: unknown (SPIR-V) or the body
    /// writes memory no parameter names (a `device_global`), i.e. never removable.
    params: Vec<Option<Vec<(bool, bool)>>>,
}

impl KernelEffects {
    fn of(module: &Module) -> KernelEffects {
        let params = module
            .kernels
            .iter()
            .map(|(_, k)| {
                let KernelBody::Ir(body) = &k.body else { return None };
                let mut rw = vec![(false, false); k.params.len()];
                let param = |base: &MemBase| -> Result<Option<usize>, ()> {
                    match base {
                        MemBase::Global(_) => Err(()),
                        MemBase::Value(v) => match body.values.try_get(*v).map(|v| v.def) {
                            Some(ValueDef::Param(i)) => Ok(Some(i as usize)),
                            // Work-group memory (a `local` op): invisible after the kernel.
                            Some(_) => Ok(None),
                            None => Err(()),
                        },
                    }
                };
                for (_, op) in body.ops.iter() {
                    let (mem, read, write) = match &op.kind {
                        OpKind::Load { mem, .. } => (mem, true, false),
                        OpKind::Store { mem, .. } => (mem, false, true),
                        OpKind::Atomic { mem, .. } => (mem, true, true),
                        _ => continue,
                    };
                    match param(mem) {
                        Ok(Some(i)) => {
                            if let Some(slot) = rw.get_mut(i) {
                                slot.0 |= read;
                                slot.1 |= write;
                            }
                        }
                        Ok(None) => {}
                        // Loads of a device_global are harmless; writes are observable.
                        Err(()) if !write => {}
                        Err(()) => return None,
                    }
                }
                Some(rw)
            })
            .collect();
        KernelEffects { params }
    }
}

/// How one node touches graph-owned allocations.
#[derive(Default)]
struct Effects {
    /// Never removable.
    pinned: bool,
    /// Allocations (`async_malloc` node indices) it may read.
    reads: Vec<usize>,
    /// Allocations it writes.
    writes: Vec<usize>,
    /// Allocations it names in any way (reads, writes, hints, frees).
    names: Vec<usize>,
}

fn alloc_of(graph: &Graph, m: &MemRef) -> Option<usize> {
    match m {
        MemRef::Alloc(n) if matches!(graph.nodes.try_get(*n).map(|n| &n.kind), Some(NodeKind::AsyncMalloc { .. })) => {
            Some(n.index())
        }
        _ => None,
    }
}

fn value_mem(v: &ArgValue) -> Option<MemRef> {
    match v {
        ArgValue::Pointer(p) => Some(p.base),
        ArgValue::Accessor(a) => Some(a.buffer),
        _ => None,
    }
}

/// A write: to an allocation it is recorded, to anything else it pins the node.
fn write(graph: &Graph, e: &mut Effects, m: &MemRef) {
    match alloc_of(graph, m) {
        Some(a) => e.writes.push(a),
        None => e.pinned = true,
    }
}

fn read(graph: &Graph, e: &mut Effects, m: &MemRef) {
    if let Some(a) = alloc_of(graph, m) {
        e.reads.push(a);
    }
}

fn kernel_effects(graph: &Graph, cmd: &KernelCommand, kernels: &KernelEffects, e: &mut Effects) {
    let params = kernels.params.get(cmd.kernel.index()).cloned().flatten();
    if params.is_none() {
        e.pinned = true;
    }
    for (i, arg) in cmd.args.iter().enumerate() {
        let mem = match arg {
            Arg::Value(v) => value_mem(v),
            Arg::Dyn(p) => {
                e.pinned = true;
                graph.dyn_params.try_get(*p).and_then(|p| value_mem(&p.value))
            }
        };
        let Some(mem) = mem else { continue };
        // Unknown effects: every memory argument is read and written.
        let (r, w) = params.as_ref().and_then(|p| p.get(i).copied()).unwrap_or((true, true));
        if r {
            read(graph, e, &mem);
        }
        if w {
            write(graph, e, &mem);
        }
    }
}

fn effects(graph: &Graph, node: &Node, kernels: &KernelEffects) -> Effects {
    let mut e = Effects::default();
    match &node.kind {
        NodeKind::Kernel(cmd) => kernel_effects(graph, cmd, kernels, &mut e),
        NodeKind::Memcpy { dst, src, .. } => {
            write(graph, &mut e, &dst.base);
            read(graph, &mut e, &src.base);
        }
        NodeKind::Memset { dst, .. } | NodeKind::Memfill { dst, .. } => write(graph, &mut e, &dst.base),
        NodeKind::Prefetch { ptr, .. } | NodeKind::Memadvise { ptr, .. } => {
            e.pinned = true;
            e.names.extend(alloc_of(graph, &ptr.base));
        }
        NodeKind::HostTask(t) | NodeKind::Native(t) => {
            e.pinned = true;
            for a in &t.access {
                read(graph, &mut e, &a.mem);
            }
        }
        // Other ranks wait for it: never removed, whatever its memory is used for after.
        NodeKind::Comm(c) => {
            e.pinned = true;
            read(graph, &mut e, &c.ptr.base);
        }
        // Its bodies' effects are their graphs' (module memory only): kept, as a host task is.
        NodeKind::Conditional { cond, .. } => {
            e.pinned = true;
            read(graph, &mut e, &cond.base);
        }
        NodeKind::Dynamic { dcg } => {
            e.pinned = true;
            for alt in graph.dcgs.try_get(*dcg).map(|d| d.alternatives.as_slice()).unwrap_or_default() {
                match alt {
                    Alternative::Kernel(cmd) => {
                        let mut inner = Effects::default();
                        kernel_effects(graph, cmd, kernels, &mut inner);
                        e.reads.extend(inner.reads.iter().chain(&inner.writes));
                    }
                    Alternative::HostTask(t) => t.access.iter().for_each(|a| read(graph, &mut e, &a.mem)),
                    Alternative::Other(_) => {}
                }
            }
        }
        // Ordering-only nodes and allocations are handled elsewhere; sub-graphs are opaque.
        NodeKind::Empty | NodeKind::Barrier { .. } | NodeKind::Subgraph { .. } => e.pinned = true,
        NodeKind::AsyncMalloc { .. } | NodeKind::AsyncFree { .. } => e.pinned = true,
    }
    let (reads, writes) = (e.reads.clone(), e.writes.clone());
    e.names.extend(reads);
    e.names.extend(writes);
    e
}

/// One round: the dead commands, then the allocations no remaining node names. Returns the
/// removal mask and the number of commands and allocations in it.
fn dead_nodes(graph: &Graph, kernels: &KernelEffects) -> (Vec<bool>, u64, u64) {
    let n = graph.nodes.len();
    crate::work::count(n);
    let effects: Vec<Effects> = graph.nodes.iter().map(|(_, node)| effects(graph, node, kernels)).collect();
    // Allocations that escape the graph's view: named by a dynamic parameter.
    let mut escaped = vec![false; n];
    for (_, p) in graph.dyn_params.iter() {
        if let Some(a) = value_mem(&p.value).and_then(|m| alloc_of(graph, &m)) {
            escaped[a] = true;
        }
    }
    let mut remove = vec![false; n];
    // Readers of each allocation among the nodes still kept; a node's own reads do not keep
    // it alive (`t[i] += 1` on a dead temporary is dead). A worklist: `reads[a]` counts the
    // read entries of kept nodes, and when a removal drops it to what a writer reads itself,
    // that writer is looked at again. The removed set is the least fixed point of "every
    // allocation it writes is unread by the others", whatever the order: linear in the
    // effects, where rounds of full scans were quadratic on a chain of dead writers.
    let mut reads = vec![0u32; n];
    let mut writers: Vec<Vec<u32>> = vec![Vec::new(); n];
    // Per allocation, the most read entries of it one of its writers holds: only when
    // `reads` is down to that can a writer become unobserved.
    let mut own = vec![0u32; n];
    let self_reads = |e: &Effects, a: usize| e.reads.iter().filter(|&&r| r == a).count() as u32;
    for (i, e) in effects.iter().enumerate() {
        for &a in &e.reads {
            reads[a] += 1;
        }
        if !e.pinned {
            for &a in &e.writes {
                writers[a].push(i as u32);
                own[a] = own[a].max(self_reads(e, a));
            }
        }
    }
    let observed = |i: usize, reads: &[u32]| {
        let e = &effects[i];
        e.writes.iter().any(|&a| escaped[a] || reads[a] > self_reads(e, a))
    };
    let mut work: Vec<u32> = (0..n as u32).rev().collect();
    while let Some(i) = work.pop() {
        crate::work::count(1);
        let i = i as usize;
        if remove[i] || effects[i].pinned || observed(i, &reads) {
            continue;
        }
        remove[i] = true;
        for &a in &effects[i].reads {
            reads[a] -= 1;
            if reads[a] <= own[a] {
                work.extend(writers[a].iter().copied().filter(|&w| !remove[w as usize]));
            }
        }
    }
    let commands = remove.iter().filter(|r| **r).count() as u64;
    // Allocations no kept node names any more (frees aside), with their frees.
    let mut named = escaped;
    for (i, e) in effects.iter().enumerate() {
        if !remove[i] {
            for &a in &e.names {
                named[a] = true;
            }
        }
    }
    let mut allocs = 0;
    for (h, node) in graph.nodes.iter() {
        if matches!(node.kind, NodeKind::AsyncMalloc { .. }) && !named[h.index()] {
            remove[h.index()] = true;
            allocs += 1;
        }
    }
    for (h, node) in graph.nodes.iter() {
        if let NodeKind::AsyncFree { alloc } = node.kind {
            if remove.get(alloc.index()).copied().unwrap_or(false) {
                remove[h.index()] = true;
            }
        }
    }
    (remove, commands, allocs)
}
