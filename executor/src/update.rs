//! Whole-graph update and individual-node update of an executable (docs/semantics.md,
//! "Individual update" and "Whole-graph update"; docs/executor.md, "Updates").
//!
//! The application describes the new state with the module its modifiable graph now is
//! (`cmdgraph_sycl`'s `to_module`, or IR text). Nodes pair with the bundle's `source` graph
//! by creation order; the executable runs the *optimized* graph, whose nodes keep their
//! source names unless a pass merged them. A node the optimizer left as it was takes the new
//! command; a node it transformed (fused, rewritten) cannot change, and an update that
//! would change it is an error naming it. Every check is made before anything changes.
#![allow(unsafe_code)]

use crate::error::{ExecError, Result};
use crate::exec::{ExecId, Executor};
use crate::executable::{Executable, KKey};
use cmdgraph_ir::graph::NodeType;
use cmdgraph_ir::kernel::ParamType;
use cmdgraph_ir::{
    Accessor, Alternative, Arg, ArgValue, DynParam, Graph, Handle, HostTaskCommand, KernelCommand, Launch, MemAccess,
    MemRef, Module, NodeKind, Pointer, MAX_LAUNCH_WORK_ITEMS,
};
use std::collections::{BTreeMap, BTreeSet};

/// A module and one of its graphs.
struct Side<'m> {
    module: &'m Module,
    graph: &'m Graph,
}

/// What one node becomes.
enum Change {
    /// A kernel node (or dynamic node with a kernel alternative): its new command and the
    /// compiled variant that runs it.
    Kernel { node: usize, cmd: KernelCommand, variant: usize },
    /// A host task's new command (same access list, another callback).
    Host { node: usize, cmd: HostTaskCommand },
}

fn refuse(what: &str, node: &str, why: impl std::fmt::Display) -> ExecError {
    ExecError::Invalid(format!("{what}: node %{node}: {why}"))
}

/// Memory `m` of `from` as the same-named memory of `to`.
fn memref(from: &Side, to: &Side, m: MemRef, node: &str, what: &str) -> Result<MemRef> {
    match m {
        MemRef::Memory(h) => {
            let name = &from.module.memories.try_get(h).ok_or_else(|| ExecError::Ir("bad memory handle".into()))?.name;
            to.module
                .memory_by_name(name)
                .map(MemRef::Memory)
                .ok_or_else(|| refuse(what, node, format!("@{name} is not memory of the bundle")))
        }
        MemRef::Alloc(_) => Err(refuse(what, node, "graph-owned allocations cannot be updated")),
    }
}

fn value(from: &Side, to: &Side, v: &ArgValue, node: &str, what: &str) -> Result<ArgValue> {
    Ok(match v {
        ArgValue::Pointer(p) => ArgValue::Pointer(Pointer { base: memref(from, to, p.base, node, what)?, ..*p }),
        ArgValue::Accessor(a) => ArgValue::Accessor(Accessor { buffer: memref(from, to, a.buffer, node, what)?, ..*a }),
        other => other.clone(),
    })
}

/// `args` of `from` in `to`'s handles. Dynamic parameters become the same-named parameter
/// of `to` when `keep_dyn` (individual update keeps registrations) and `to` has one;
/// otherwise their value in `values` (indexed by `from`'s parameters) is written out.
fn translate_args(
    from: &Side,
    to: &Side,
    args: &[Arg],
    values: &dyn Fn(Handle<DynParam>) -> Option<ArgValue>,
    keep_dyn: bool,
    node: &str,
    what: &str,
) -> Result<Vec<Arg>> {
    let mut out = Vec::with_capacity(args.len());
    for a in args {
        out.push(match a {
            Arg::Value(v) => Arg::Value(value(from, to, v, node, what)?),
            Arg::Dyn(p) => {
                let param = from.graph.dyn_params.try_get(*p).ok_or_else(|| ExecError::Ir("bad parameter".into()))?;
                let target = to.graph.dyn_params.iter().find(|(_, q)| q.name == param.name).map(|(h, _)| h);
                match target {
                    Some(t) if keep_dyn => Arg::Dyn(t),
                    _ => {
                        let v = values(*p).ok_or_else(|| ExecError::Ir("bad parameter".into()))?;
                        Arg::Value(value(from, to, &v, node, what)?)
                    }
                }
            }
        });
    }
    Ok(out)
}

/// `cmd` of `from` in `to`'s handles ([`translate_args`] for its arguments).
fn translate(
    from: &Side,
    to: &Side,
    cmd: &KernelCommand,
    values: &dyn Fn(Handle<DynParam>) -> Option<ArgValue>,
    keep_dyn: bool,
    node: &str,
    what: &str,
) -> Result<KernelCommand> {
    let kname = &from.module.kernels.try_get(cmd.kernel).ok_or_else(|| ExecError::Ir("bad kernel handle".into()))?.name;
    let kernel =
        to.module.kernel_by_name(kname).ok_or_else(|| refuse(what, node, format!("@{kname} is not in the bundle")))?;
    let args = translate_args(from, to, &cmd.args, values, keep_dyn, node, what)?;
    Ok(KernelCommand { kernel, launch: cmd.launch.clone(), args })
}

fn host(from: &Side, to: &Side, cmd: &HostTaskCommand, node: &str, what: &str) -> Result<HostTaskCommand> {
    let mut access = Vec::with_capacity(cmd.access.len());
    for a in &cmd.access {
        access.push(MemAccess { mem: memref(from, to, a.mem, node, what)?, mode: a.mode });
    }
    Ok(HostTaskCommand { callback: cmd.callback.clone(), access })
}

/// The optimized kernel node `name` and its command, when the optimizer re-implemented it
/// with the source node's arguments: another kernel than the source command `source` names,
/// the same argument list (`was_args`, the source's in the optimized graph's handles).
fn reimplemented<'a>(
    old: &Side,
    opt: &Side<'a>,
    name: &str,
    source: &KernelCommand,
    was_args: &[Arg],
) -> Option<(Handle<cmdgraph_ir::Node>, &'a KernelCommand)> {
    let h = opt.graph.node_by_name(name)?;
    let NodeKind::Kernel(oc) = &opt.graph.nodes[h].kind else { return None };
    let source_kernel = old.module.kernels.try_get(source.kernel).map(|k| k.name.as_str());
    if source_kernel == opt.module.kernels.try_get(oc.kernel).map(|k| k.name.as_str()) {
        return None;
    }
    let vals = |p: Handle<DynParam>| opt.graph.dyn_params.try_get(p).map(|q| q.value.clone());
    let args = translate_args(opt, opt, &oc.args, &vals, false, name, "update").ok()?;
    (args == was_args).then_some((h, oc))
}

/// A source kernel node as the update sees it, for [`Executor::respecialised`].
struct Respecialised<'a> {
    name: &'a str,
    /// Its command in the bundle's source graph.
    source: &'a KernelCommand,
    /// Its arguments in the optimized graph's handles, parameter values written out.
    was_args: &'a [Arg],
}

/// The command a node runs with its group's active alternative.
enum Cmd<'g> {
    Kernel(&'g KernelCommand),
    Host(&'g HostTaskCommand),
    Other,
}

fn command<'g>(g: &'g Graph, kind: &'g NodeKind, active: Option<u32>) -> Cmd<'g> {
    match kind {
        NodeKind::Kernel(c) => Cmd::Kernel(c),
        NodeKind::HostTask(c) => Cmd::Host(c),
        NodeKind::Dynamic { dcg } => {
            let alt = g.dcgs.try_get(*dcg).and_then(|d| d.alternatives.get(active.unwrap_or(d.active) as usize));
            match alt {
                Some(Alternative::Kernel(c)) => Cmd::Kernel(c),
                Some(Alternative::HostTask(c)) => Cmd::Host(c),
                _ => Cmd::Other,
            }
        }
        _ => Cmd::Other,
    }
}

fn same_launch_shape(a: &Launch, b: &Launch) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b) && a.dims() == b.dims()
}

impl Executor {
    /// Whole-graph update (`exec.update(graph)`, rows 27–31): `graph` of `source` must be
    /// topologically identical to the bundle's source graph of this executable; its kernel
    /// nodes' arguments and launches and its host tasks' callbacks replace the executable's
    /// (dynamic parameters written out, as the SYCL runtime does). Anything else that
    /// differs is an error naming the node, and a refused update changes nothing.
    pub fn update_graph(&mut self, id: ExecId, source: &Module, graph: &str) -> Result<()> {
        const WHAT: &str = "whole-graph update";
        let graph = graph.trim_start_matches('@');
        let changes = {
            let exe = self.exec_ref(id)?;
            let (old, opt) = self.sides(exe, WHAT)?;
            let gh = source.graph_by_name(graph).ok_or_else(|| ExecError::Unknown(format!("graph @{graph}")))?;
            let new = Side { module: source, graph: &source.graphs[gh] };
            for (h, n) in new.graph.nodes.iter() {
                let ty = new.graph.node_type(h);
                if !matches!(ty, NodeType::Empty | NodeType::Barrier | NodeType::Kernel | NodeType::HostTask) {
                    return Err(refuse(
                        WHAT,
                        &n.name,
                        format!(
                            "a {} node; whole-graph update takes empty, barrier, kernel and host_task nodes (row 27)",
                            ty.name()
                        ),
                    ));
                }
            }
            if !opt.graph.properties.updatable {
                return Err(ExecError::Invalid(format!(
                    "{WHAT}: @{} was not finalized with property::graph::updatable (row 29)",
                    opt.graph.name
                )));
            }
            if new.graph.device != old.graph.device || new.graph.context != old.graph.context {
                return Err(ExecError::Invalid(format!(
                    "{WHAT}: the source graph's device or context differs (row 28)"
                )));
            }
            for side in [&old, &opt] {
                if let Some((_, n)) = side
                    .graph
                    .nodes
                    .iter()
                    .find(|(_, n)| matches!(n.kind, NodeKind::AsyncMalloc { .. } | NodeKind::AsyncFree { .. }))
                {
                    return Err(refuse(WHAT, &n.name, "the executable graph has graph-owned allocations (row 30)"));
                }
            }
            let old_h =
                old.module.graph_by_name(&old.graph.name).ok_or_else(|| ExecError::Bundle("no source graph".into()))?;
            cmdgraph_ir::identity::topologically_identical(old.module, old_h, source, gh).map_err(|m| {
                ExecError::Invalid(format!("{WHAT}: the source is not topologically identical (row 31): {m}"))
            })?;
            let mut changes = Vec::new();
            for ((_, on), (_, nn)) in old.graph.nodes.iter().zip(new.graph.nodes.iter()) {
                let old_vals = |p: Handle<DynParam>| old.graph.dyn_params.try_get(p).map(|q| q.value.clone());
                let new_vals = |p: Handle<DynParam>| new.graph.dyn_params.try_get(p).map(|q| q.value.clone());
                let change = match (command(old.graph, &on.kind, None), command(new.graph, &nn.kind, None)) {
                    (Cmd::Kernel(oc), Cmd::Kernel(nc)) => {
                        let was_args = translate_args(&old, &opt, &oc.args, &old_vals, false, &on.name, WHAT)?;
                        let args = translate_args(&new, &opt, &nc.args, &new_vals, false, &on.name, WHAT)?;
                        let respecialised = Respecialised { name: &on.name, source: oc, was_args: &was_args };
                        match self.respecialised(&old, &opt, &respecialised, nc, &args, WHAT)? {
                            Some(change) => Some(change),
                            None => {
                                let was = translate(&old, &opt, oc, &old_vals, false, &on.name, WHAT)?;
                                let cmd = translate(&new, &opt, nc, &new_vals, false, &on.name, WHAT)?;
                                self.kernel_change(exe, &opt, &on.name, &was, cmd, WHAT)?
                            }
                        }
                    }
                    (Cmd::Host(oc), Cmd::Host(nc)) => {
                        let was = host(&old, &opt, oc, &on.name, WHAT)?;
                        let cmd = host(&new, &opt, nc, &on.name, WHAT)?;
                        self.host_change(&opt, &on.name, &was, cmd, WHAT)?
                    }
                    (Cmd::Other, Cmd::Other) => None,
                    _ => {
                        return Err(refuse(
                            WHAT,
                            &on.name,
                            "switches between a kernel and a host task; use set_active for a dynamic command group",
                        ))
                    }
                };
                changes.extend(change);
            }
            changes
        };
        self.apply(id, changes, BTreeMap::new(), &BTreeSet::new())
    }

    /// The pointer `target + offset` for [`update_param`](Self::update_param) on executable
    /// `id`, from names a caller without the module's handles holds (the C API): `@x` or `x`
    /// is a module-level memory object, `%t` a graph allocation (`async_malloc` node) of the
    /// executable's graph as it was optimized.
    pub fn pointer_to(&self, id: ExecId, target: &str, offset: u64) -> Result<Pointer> {
        let module = &self.loaded.module;
        let base = match target.strip_prefix('%') {
            Some(node) => {
                let graph = &module.graphs[self.exec_ref(id)?.graph];
                let h = graph
                    .node_by_name(node)
                    .filter(|&h| matches!(graph.nodes[h].kind, NodeKind::AsyncMalloc { .. }))
                    .ok_or_else(|| ExecError::Unknown(format!("graph allocation %{node} in @{}", graph.name)))?;
                MemRef::Alloc(h)
            }
            None => {
                let bare = target.strip_prefix('@').unwrap_or(target);
                let h = module.memory_by_name(bare).ok_or_else(|| ExecError::Unknown(format!("memory @{bare}")))?;
                MemRef::Memory(h)
            }
        };
        Ok(Pointer { base, offset })
    }

    /// Individual update (`exec.update(nodes)`, rows 24–26): each named node of `graph` in
    /// `source` (the modifiable graph as it is now) gives the executable its current command,
    /// keeping its dynamic-parameter registrations; the parameters' values in `source`
    /// become the executable's. A node outside `nodes` that shares a parameter whose value
    /// changes keeps what it ran (its value is written out). All nodes are checked first.
    pub fn update_nodes(&mut self, id: ExecId, source: &Module, graph: &str, nodes: &[&str]) -> Result<()> {
        const WHAT: &str = "update";
        let graph = graph.trim_start_matches('@');
        let (changes, params, set) = {
            let exe = self.exec_ref(id)?;
            let (old, opt) = self.sides(exe, WHAT)?;
            if !opt.graph.properties.updatable {
                return Err(ExecError::Invalid(format!(
                    "{WHAT}: @{} was not finalized with property::graph::updatable (row 24)",
                    opt.graph.name
                )));
            }
            let gh = source.graph_by_name(graph).ok_or_else(|| ExecError::Unknown(format!("graph @{graph}")))?;
            let new = Side { module: source, graph: &source.graphs[gh] };
            let mut changes = Vec::new();
            let mut params: BTreeMap<usize, ArgValue> = BTreeMap::new();
            let mut set = BTreeSet::new();
            for &name in nodes {
                let name = name.trim_start_matches('%');
                let h = new.graph.node_by_name(name).ok_or_else(|| ExecError::Unknown(format!("node %{name}")))?;
                let on = old.graph.nodes.try_get(h).ok_or_else(|| {
                    refuse(WHAT, name, "not part of this executable graph (added after finalize) (row 25)")
                })?;
                let nn = &new.graph.nodes[h];
                let (ot, nt) = (old.graph.node_type(h), new.graph.node_type(h));
                if matches!(nt, NodeType::AsyncMalloc | NodeType::AsyncFree) {
                    return Err(refuse(WHAT, name, "graph allocation nodes cannot be updated (row 26)"));
                }
                if ot != nt {
                    return Err(refuse(WHAT, name, format!("was a {} node, is a {} node", ot.name(), nt.name())));
                }
                let old_vals = |p: Handle<DynParam>| old.graph.dyn_params.try_get(p).map(|q| q.value.clone());
                let new_vals = |p: Handle<DynParam>| new.graph.dyn_params.try_get(p).map(|q| q.value.clone());
                let change = match (command(old.graph, &on.kind, None), command(new.graph, &nn.kind, None)) {
                    (Cmd::Kernel(oc), Cmd::Kernel(nc)) => {
                        let args = translate_args(&new, &opt, &nc.args, &new_vals, true, &on.name, WHAT)?;
                        // The parameters it names take their values from `source`.
                        for (a, na) in args.iter().zip(&nc.args) {
                            if let (Arg::Dyn(t), Arg::Dyn(p)) = (a, na) {
                                let v = new_vals(*p).ok_or_else(|| ExecError::Ir("bad parameter".into()))?;
                                params.insert(t.index(), value(&new, &opt, &v, &on.name, WHAT)?);
                            }
                        }
                        let was_args = translate_args(&old, &opt, &oc.args, &old_vals, false, &on.name, WHAT)?;
                        let respecialised = Respecialised { name: &on.name, source: oc, was_args: &was_args };
                        match self.respecialised(&old, &opt, &respecialised, nc, &args, WHAT)? {
                            Some(change) => Some(change),
                            None => {
                                let was = translate(&old, &opt, oc, &old_vals, false, &on.name, WHAT)?;
                                let cmd = KernelCommand {
                                    args,
                                    ..translate(&new, &opt, nc, &new_vals, true, &on.name, WHAT)?
                                };
                                self.kernel_change(exe, &opt, &on.name, &was, cmd, WHAT)?
                            }
                        }
                    }
                    (Cmd::Host(oc), Cmd::Host(nc)) => {
                        let was = host(&old, &opt, oc, &on.name, WHAT)?;
                        let cmd = host(&new, &opt, nc, &on.name, WHAT)?;
                        self.host_change(&opt, &on.name, &was, cmd, WHAT)?
                    }
                    // Other node types have nothing to update (decision A2).
                    (Cmd::Other, Cmd::Other) => None,
                    _ => {
                        return Err(refuse(
                            WHAT,
                            &on.name,
                            "switches between a kernel and a host task; use set_active for a dynamic command group",
                        ))
                    }
                };
                if let Some(n) = opt.graph.node_by_name(&on.name) {
                    set.insert(n.index());
                }
                changes.extend(change);
            }
            for (p, v) in &params {
                let old = exe.dyn_values.get(*p).ok_or_else(|| ExecError::Ir("bad parameter".into()))?;
                if std::mem::discriminant(old) != std::mem::discriminant(v) {
                    let name = opt.graph.dyn_params.iter().nth(*p).map(|(_, q)| q.name.clone()).unwrap_or_default();
                    return Err(ExecError::Invalid(format!("{WHAT}: %{name}: the new value is of another kind")));
                }
            }
            (changes, params, set)
        };
        self.apply(id, changes, params, &set)
    }

    /// The kernel node `node` of executable `exe` runs, and the source node's launch, when
    /// the optimizer re-implemented it with the source node's arguments (see
    /// [`respecialised`](Self::respecialised)): its launch cannot change. `None` for any
    /// other node, or a bundle without its source.
    pub(crate) fn specialised_kernel(&self, exe: &Executable, node: &str) -> Option<(String, Launch)> {
        let (old, opt) = self.sides(exe, "update").ok()?;
        let NodeKind::Kernel(sc) = &old.graph.nodes[old.graph.node_by_name(node)?].kind else { return None };
        let old_vals = |p: Handle<DynParam>| old.graph.dyn_params.try_get(p).map(|q| q.value.clone());
        let was_args = translate_args(&old, &opt, &sc.args, &old_vals, false, node, "update").ok()?;
        let (_, oc) = reimplemented(&old, &opt, node, sc, &was_args)?;
        Some((opt.module.kernels.try_get(oc.kernel)?.name.clone(), sc.launch.clone()))
    }

    /// The bundle's source graph and the optimized graph of an executable.
    fn sides<'a>(&'a self, exe: &Executable, what: &str) -> Result<(Side<'a>, Side<'a>)> {
        let opt = self.loaded.module.graphs.try_get(exe.graph).ok_or_else(|| ExecError::Ir("bad graph".into()))?;
        let source = self.loaded.source()?;
        let old = source
            .graph_by_name(&opt.name)
            .ok_or_else(|| ExecError::Bundle(format!("{what}: the bundle's source has no graph @{}", opt.name)))?;
        Ok((Side { module: source, graph: &source.graphs[old] }, Side { module: &self.loaded.module, graph: opt }))
    }

    /// The change of a kernel node from `was` (the bundle's source command, in optimized
    /// handles) to `cmd`: `None` when the node keeps its command and the optimizer
    /// transformed it.
    fn kernel_change(
        &self,
        exe: &Executable,
        opt: &Side,
        name: &str,
        was: &KernelCommand,
        cmd: KernelCommand,
        what: &str,
    ) -> Result<Option<Change>> {
        // The source module of an update is the application's, not verified: the launch
        // bound of the verifier (E0209) holds here too, before anything changes.
        if !cmd.launch.within_work_bound() {
            let items = cmd.launch.work_items().map_or_else(|| "more than 2^64".to_string(), |n| n.to_string());
            return Err(refuse(
                what,
                name,
                format!(
                    "the launch has {items} work-items, above the bound of {MAX_LAUNCH_WORK_ITEMS} (2^32) per launch"
                ),
            ));
        }
        let target = opt.graph.node_by_name(name).filter(|h| {
            let vals = |p: Handle<DynParam>| opt.graph.dyn_params.try_get(p).map(|q| q.value.clone());
            match command(opt.graph, &opt.graph.nodes[*h].kind, None) {
                Cmd::Kernel(c) => translate(opt, opt, c, &vals, false, name, what).is_ok_and(|c| &c == was),
                _ => false,
            }
        });
        let Some(h) = target.filter(|h| exe.kernels.contains_key(&h.index())) else {
            let vals = |p: Handle<DynParam>| exe.dyn_values.get(p.index()).cloned();
            let same = translate(opt, opt, &cmd, &vals, false, name, what)? == *was;
            return if same { Ok(None) } else { Err(refuse(what, name, self.transformed(opt, name))) };
        };
        // A dynamic node's alternatives may launch differently; a kernel node's may not.
        let plain = matches!(opt.graph.nodes[h].kind, NodeKind::Kernel(_));
        if plain && !same_launch_shape(&was.launch, &cmd.launch) {
            return Err(refuse(what, name, "the launch changes kind or dimensions; only its sizes are updatable"));
        }
        let kname = &self.loaded.module.kernels[cmd.kernel].name;
        let alt = match &opt.graph.nodes[h].kind {
            NodeKind::Dynamic { dcg } => {
                let d = opt.graph.dcgs.try_get(*dcg);
                // The alternative the new command is: found by its kernel.
                d.and_then(|d| {
                    d.alternatives.iter().position(|a| matches!(a, Alternative::Kernel(c) if c.kernel == cmd.kernel))
                })
                .map(|i| i as u32)
            }
            _ => None,
        };
        let variant =
            self.variant_of(&opt.graph.name, name, alt, kname, &cmd.launch).map_err(|e| refuse(what, name, e))?;
        Ok(Some(Change::Kernel { node: h.index(), cmd, variant }))
    }

    /// The change of a node the optimizer re-implemented with the same arguments (a kernel
    /// of its own, specialised to the launch and the scalar arguments, such as
    /// `tile-contractions` writes): its buffers may be rebound; a new launch or scalar is
    /// refused, naming the node. `None` when the node is not such a node.
    fn respecialised(
        &self,
        old: &Side,
        opt: &Side,
        node: &Respecialised,
        new: &KernelCommand,
        args: &[Arg],
        what: &str,
    ) -> Result<Option<Change>> {
        let name = node.name;
        let Some((h, oc)) = reimplemented(old, opt, name, node.source, node.was_args) else { return Ok(None) };
        let kernel = &opt.module.kernels[oc.kernel];
        if new.launch != node.source.launch {
            return Err(refuse(
                what,
                name,
                format!(
                    "the optimizer specialised it to its launch (it runs @{}), so the launch cannot change; only its buffers can be rebound",
                    kernel.name
                ),
            ));
        }
        for (i, (a, was)) in args.iter().zip(node.was_args).enumerate() {
            let buffer = matches!(kernel.params.get(i).map(|p| p.ty), Some(ParamType::Buffer { .. }));
            if !buffer && a != was {
                return Err(refuse(
                    what,
                    name,
                    format!(
                        "argument {i} is a value the optimizer specialised @{} to, so it cannot change; only its buffers can be rebound",
                        kernel.name
                    ),
                ));
            }
        }
        let variant = self
            .variant_of(&opt.graph.name, name, None, &kernel.name, &oc.launch)
            .map_err(|e| refuse(what, name, e))?;
        Ok(Some(Change::Kernel {
            node: h.index(),
            cmd: KernelCommand { kernel: oc.kernel, launch: oc.launch.clone(), args: args.to_vec() },
            variant,
        }))
    }

    fn host_change(
        &self,
        opt: &Side,
        name: &str,
        was: &HostTaskCommand,
        cmd: HostTaskCommand,
        what: &str,
    ) -> Result<Option<Change>> {
        if cmd.access != was.access {
            return Err(refuse(what, name, "the access list changes; only a host task's callback is updatable"));
        }
        let target = opt
            .graph
            .node_by_name(name)
            .filter(|h| matches!(command(opt.graph, &opt.graph.nodes[*h].kind, None), Cmd::Host(c) if c == was));
        match target {
            Some(h) => Ok(Some(Change::Host { node: h.index(), cmd })),
            None if cmd == *was => Ok(None),
            None => Err(refuse(what, name, self.transformed(opt, name))),
        }
    }

    /// Why a source node cannot be updated: the optimizer merged or rewrote it.
    fn transformed(&self, opt: &Side, name: &str) -> String {
        let into = self
            .loaded
            .bundle
            .graphs
            .iter()
            .filter(|p| p.name == opt.graph.name)
            .flat_map(|p| p.origins.iter())
            .find(|o| o.sources.iter().any(|(_, n)| n.trim_start_matches('%') == name))
            .map(|o| format!(" into %{}", o.node.trim_start_matches('%')))
            .unwrap_or_default();
        format!(
            "the optimizer transformed it{into} (pipeline `{}`), so its command cannot change; compile without the pass that merges it to update it",
            self.loaded.bundle.pipeline
        )
    }

    /// Applies checked changes: parameter values (`params`, optimized parameter index →
    /// value), node commands; nodes outside `set` that use a changing parameter keep their
    /// value written out. On a failure everything is put back as it was.
    fn apply(
        &mut self,
        id: ExecId,
        changes: Vec<Change>,
        params: BTreeMap<usize, ArgValue>,
        set: &BTreeSet<usize>,
    ) -> Result<()> {
        self.with_exec_update(id, |ex, exe| {
            ex.wait_value(exe, exe.submitted)?;
            let saved: BTreeMap<usize, (KernelCommand, usize)> =
                exe.kernels.iter().map(|(&n, k)| (n, (k.cmd.clone(), k.variant))).collect();
            let (saved_values, saved_hosts) = (exe.dyn_values.clone(), exe.hosts.clone());
            // Nodes not being updated keep the values they ran with.
            for (&p, v) in &params {
                if exe.dyn_values.get(p) == Some(v) {
                    continue;
                }
                let old = exe.dyn_values.get(p).cloned();
                for (_, k) in exe.kernels.iter_mut().filter(|(n, _)| !set.contains(n)) {
                    for a in &mut k.cmd.args {
                        if let (Arg::Dyn(h), Some(v)) = (&*a, &old) {
                            if h.index() == p {
                                *a = Arg::Value(v.clone());
                            }
                        }
                    }
                }
            }
            let mut changed_params = BTreeSet::new();
            for (p, v) in params {
                if let Some(slot) = exe.dyn_values.get_mut(p) {
                    if *slot != v {
                        changed_params.insert(p);
                    }
                    *slot = v;
                }
            }
            let mut touched = BTreeSet::new();
            let mut hosts_changed = false;
            for c in changes {
                match c {
                    Change::Kernel { node, cmd, variant } => {
                        if let Some(k) = exe.kernels.get_mut(&node) {
                            k.cmd = cmd;
                            k.variant = variant;
                            touched.insert(node);
                        }
                    }
                    Change::Host { node, cmd } => {
                        exe.hosts.insert(node, cmd);
                        hosts_changed = true;
                    }
                }
            }
            // Commands changed: the parameter index follows (O(kernels), as this update).
            exe.reindex();
            // Every kernel reading a changed parameter is re-encoded too, inactive
            // alternatives of `dynamic` nodes included (they dispatch nothing until switched).
            let mut spares = BTreeSet::new();
            for p in &changed_params {
                for &(n, alt) in exe.users.get(*p).into_iter().flatten() {
                    if exe.is_active((n, alt)) {
                        touched.insert(n);
                    } else {
                        spares.insert((n, alt));
                    }
                }
            }
            let r = ex.reprepare(exe, &touched, &saved).and_then(|()| ex.reprepare_spares(exe, &spares));
            if hosts_changed {
                ex.build_steps(exe);
            }
            if r.is_err() {
                for (n, (cmd, variant)) in &saved {
                    if let Some(k) = exe.kernels.get_mut(n) {
                        k.cmd = cmd.clone();
                        k.variant = *variant;
                    }
                }
                exe.dyn_values = saved_values;
                exe.hosts = saved_hosts;
                let before: BTreeMap<usize, (KernelCommand, usize)> = BTreeMap::new();
                let _ = ex.reprepare(exe, &touched, &before);
                let _ = ex.reprepare_spares(exe, &spares);
                exe.reindex();
                if hosts_changed {
                    ex.build_steps(exe);
                }
            }
            r
        })
    }

    /// Re-encodes inactive alternatives `keys` (their group counts stay (0, 0, 0));
    /// re-records a segment only where a descriptor changed without UPDATE_AFTER_BIND.
    fn reprepare_spares(&mut self, exe: &mut Executable, keys: &BTreeSet<KKey>) -> Result<()> {
        let mut stale = BTreeSet::new();
        let mut result = Ok(());
        for &key in keys {
            let segment = exe.knode(key).map(|k| k.segment);
            match self.prepare_key(exe, key, false) {
                Ok(changed) if changed && !self.ctx.update_after_bind => stale.extend(segment),
                Ok(_) => {}
                Err(e) => {
                    if result.is_ok() {
                        result = Err(e);
                    }
                }
            }
        }
        for si in stale {
            let r = self.record(exe, si);
            if result.is_ok() {
                result = r;
            }
        }
        result
    }

    /// Re-encodes `nodes`, with a new descriptor set where the variant differs from
    /// `saved`; re-records each segment whose command buffer no longer matches (a new
    /// pipeline, or a changed descriptor without UPDATE_AFTER_BIND), once.
    fn reprepare(
        &mut self,
        exe: &mut Executable,
        nodes: &BTreeSet<usize>,
        saved: &BTreeMap<usize, (KernelCommand, usize)>,
    ) -> Result<()> {
        let mut stale = BTreeSet::new();
        let mut result = Ok(());
        for &n in nodes {
            let Some(k) = exe.kernels.get(&n) else { continue };
            let new_pipeline = saved.get(&n).is_none_or(|s| s.1 != k.variant);
            let segment = k.segment;
            match self.prepare_node(exe, n, new_pipeline) {
                Ok(changed) => {
                    if new_pipeline || (changed && !self.ctx.update_after_bind) {
                        stale.insert(segment);
                    }
                }
                Err(e) => {
                    // A new set was made or a descriptor changed: re-record it either way.
                    stale.insert(segment);
                    if result.is_ok() {
                        result = Err(e);
                    }
                }
            }
        }
        for si in stale {
            let r = self.record(exe, si);
            if result.is_ok() {
                result = r;
            }
        }
        result
    }
}
