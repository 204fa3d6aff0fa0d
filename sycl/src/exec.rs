//! `command_graph<graph_state::executable>`: an independent snapshot of a modifiable
//! graph taken at `finalize`, and executable graph update (000 §8.4.2, §8.4.6).
//!
//! The snapshot is a whole IR module whose last graph is the executable graph; it always
//! describes exactly what each node runs now. Individual update copies the current
//! command of the given nodes (with the current values of their dynamic parameters and
//! dynamic command groups) from the modifiable graph. Where a dynamic parameter or group
//! is shared with a node that is *not* being updated and its value changes, that node is
//! first "materialized": its arguments are written as the values it had, so it keeps
//! running with them until it is updated itself (decision recorded in docs/semantics.md).

use crate::error::{ensure, Result, SyclError};
use crate::graph::{Adjacency, GraphInner, ModifiableGraph};
use crate::kernel::{uses_f16, uses_f64};
use crate::node::Node;
use crate::platform::{Context, Device, GraphSupport};
use crate::props::FinalizeProps;
use cmdgraph_ir::identity::topologically_identical;
use cmdgraph_ir::{Alternative, Arg, DynCommandGroup, DynParam, Graph, Handle, Module, NodeKind, NodeType};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::{Rc, Weak};

pub(crate) struct ExecState {
    pub(crate) module: Module,
    pub(crate) graph: Handle<Graph>,
    /// Nodes of the modifiable graph at finalize (later ones are not part of this graph).
    pub(crate) node_count: usize,
    /// Bumped by every update; a sub-graph use captures one version.
    pub(crate) version: u64,
}

/// The environment variable naming a directory where every `finalize` exports its
/// module ([`ExecutableGraph::export_module`]).
pub const EXPORT_DIR_VAR: &str = "CMDGRAPH_EXPORT_DIR";
/// The state of an executable graph, shared by its copies.
pub(crate) struct ExecShared {
    pub(crate) ctx: Context,
    pub(crate) device: Device,
    pub(crate) source: Rc<RefCell<GraphInner>>,
    pub(crate) props: FinalizeProps,
    pub(crate) state: RefCell<ExecState>,
    /// The interpreter state runs use (built on first run).
    pub(crate) runner: RefCell<Option<crate::runner::Runner>>,
}

impl Drop for ExecShared {
    fn drop(&mut self) {
        crate::runner::release(self);
    }
}

/// An executable command graph. Copies share one executable graph.
#[derive(Clone)]
pub struct ExecutableGraph(pub(crate) Rc<ExecShared>);

/// `finalize(props)` of the modifiable graph `rc`.
pub(crate) fn finalize(rc: &Rc<RefCell<GraphInner>>, props: FinalizeProps) -> Result<ExecutableGraph> {
    let inner = rc.borrow();
    ensure(!Adjacency::new(&inner.ir).has_cycle(), 20, || {
        format!("finalize: graph `@{}` has a cycle (made under no_cycle_check); a graph must be acyclic", inner.ir.name)
    })?;
    check_device_support(&inner, props)?;
    let has_allocs = inner.ir.nodes.iter().any(|(_, n)| matches!(n.kind, NodeKind::AsyncMalloc { .. }));
    if has_allocs && inner.live_exec.upgrade().is_some() {
        return Err(SyclError::invalid(
            22,
            format!("finalize: graph `@{}` has graph-owned allocations and an executable graph made from it is still alive; drop it first", inner.ir.name),
        ));
    }
    let (mut module, graph) = inner.module();
    // SYCL does not forbid racy graphs (unordered commands touching the same memory are the
    // application's business, as on a queue), so races (E0280) are not finalize errors here:
    // SYCL semantics win over the IR's stricter default.
    let options = cmdgraph_ir::verify::VerifyOptions { allow_races: true };
    let errors = cmdgraph_ir::verify::check_with(&module, &options);
    if !errors.is_empty() {
        let diags: Vec<_> = errors.iter().map(cmdgraph_ir::verify::VerifyError::to_diagnostic).collect();
        let ub = diags.iter().any(|d| d.code.starts_with("E024"));
        let list: Vec<String> = diags.iter().map(|d| format!("{}: {}", d.code, d.message)).collect();
        return Err(SyclError::invalid(
            if ub { 73 } else { 0 },
            format!("finalize: graph `@{}` does not verify:\n{}", inner.ir.name, list.join("\n")),
        ));
    }
    let g = &mut module.graphs[graph];
    g.properties.updatable = props.updatable;
    g.properties.enable_profiling = props.enable_profiling;
    let natives: Vec<String> = g
        .nodes
        .iter()
        .filter_map(|(_, n)| match &n.kind {
            NodeKind::Native(cmd) => Some(cmd.callback.clone()),
            _ => None,
        })
        .collect();
    let exec = ExecutableGraph(Rc::new(ExecShared {
        ctx: inner.ctx.clone(),
        device: inner.device.clone(),
        source: rc.clone(),
        props,
        state: RefCell::new(ExecState { module, graph, node_count: inner.ir.nodes.len(), version: 0 }),
        runner: RefCell::new(None),
    }));
    let ctx = inner.ctx.clone();
    drop(inner);
    // Native commands add their work to the backend graph at every finalize (004, A8).
    for name in natives {
        crate::run::call_native(&ctx, &name, true)?;
    }
    rc.borrow_mut().live_exec = Rc::downgrade(&exec.0);
    // `CMDGRAPH_EXPORT_DIR`: every finalized graph's module goes there for `cmdgraph compile
    // --bundle-dir` (docs/bundle.md, "Keys"). Asked for explicitly, so a failure is an error.
    if let Some(dir) = std::env::var_os(EXPORT_DIR_VAR) {
        exec.export_module(std::path::Path::new(&dir))?;
    }
    // Running from bundles: the bundle must be there now, not at the first submission.
    if let Some((source, _)) = crate::bundles::placement(&exec)? {
        crate::bundles::bundle_path(&exec, &source)?;
    }
    Ok(exec)
}

/// Row 21: every command must be one the device supports.
fn check_device_support(inner: &GraphInner, props: FinalizeProps) -> Result<()> {
    let info = inner.device.info();
    if props.updatable && info.graph_support == GraphSupport::Limited {
        return Err(SyclError::unsupported(
            0,
            format!(
                "finalize(updatable): device {} only reports aspect::ext_oneapi_limited_graph, which excludes update",
                inner.device.id()
            ),
        ));
    }
    let ctx = inner.ctx.0.borrow();
    // The aspect a kernel needs that the device lacks, if any.
    let missing = |k: Handle<cmdgraph_ir::Kernel>| {
        let kernel = ctx.kernels.try_get(k)?;
        if !info.fp16 && uses_f16(kernel) {
            Some(("f16", "fp16"))
        } else if !info.fp64 && uses_f64(kernel) {
            Some(("f64", "fp64"))
        } else {
            None
        }
    };
    for (_, n) in inner.ir.nodes.iter() {
        let (bad, what) = match &n.kind {
            NodeKind::Kernel(cmd) => match missing(cmd.kernel) {
                Some((ty, aspect)) => (true, format!("uses {ty} but the device lacks aspect::{aspect}")),
                None => (false, String::new()),
            },
            NodeKind::Dynamic { dcg } => {
                let alts = inner.ir.dcgs.try_get(*dcg).map(|d| d.alternatives.as_slice()).unwrap_or(&[]);
                let first = alts.iter().find_map(|a| match a {
                    Alternative::Kernel(cmd) => missing(cmd.kernel),
                    _ => None,
                });
                match first {
                    Some((ty, aspect)) => {
                        (true, format!("has a kernel alternative that uses {ty} but the device lacks aspect::{aspect}"))
                    }
                    None => (false, String::new()),
                }
            }
            NodeKind::Native(_) => {
                (!info.native_graph, "is a native command but the device cannot add native work to a graph".to_string())
            }
            _ => (false, String::new()),
        };
        if bad {
            return Err(SyclError::unsupported(21, format!("finalize: node `%{}` {what}", n.name)));
        }
    }
    Ok(())
}

/// Replaces every dynamic-parameter argument with the parameter's value in `params`.
fn resolve(args: &mut [Arg], params: &cmdgraph_ir::Arena<DynParam>) {
    for a in args {
        if let Arg::Dyn(p) = a {
            if let Some(param) = params.try_get(*p) {
                *a = Arg::Value(param.value.clone());
            }
        }
    }
}

/// The command `kind` runs with the values of `g`'s parameters and groups written out.
fn materialized(g: &Graph, kind: &NodeKind) -> NodeKind {
    match kind {
        NodeKind::Kernel(cmd) => {
            let mut cmd = cmd.clone();
            resolve(&mut cmd.args, &g.dyn_params);
            NodeKind::Kernel(cmd)
        }
        NodeKind::Dynamic { dcg } => match g.dcgs.try_get(*dcg).and_then(|d| d.alternatives.get(d.active as usize)) {
            Some(Alternative::Kernel(cmd)) => {
                let mut cmd = cmd.clone();
                resolve(&mut cmd.args, &g.dyn_params);
                NodeKind::Kernel(cmd)
            }
            Some(Alternative::HostTask(cmd)) => NodeKind::HostTask(cmd.clone()),
            _ => kind.clone(),
        },
        other => other.clone(),
    }
}

/// Parameters a command names (all alternatives of a group included).
fn params_of(g: &Graph, kind: &NodeKind, out: &mut BTreeSet<Handle<DynParam>>) {
    let mut scan = |args: &[Arg]| {
        out.extend(args.iter().filter_map(|a| match a {
            Arg::Dyn(p) => Some(*p),
            Arg::Value(_) => None,
        }))
    };
    match kind {
        NodeKind::Kernel(cmd) => scan(&cmd.args),
        NodeKind::Dynamic { dcg } => {
            for alt in g.dcgs.try_get(*dcg).map(|d| d.alternatives.as_slice()).unwrap_or(&[]) {
                if let Alternative::Kernel(cmd) = alt {
                    scan(&cmd.args);
                }
            }
        }
        _ => {}
    }
}

/// Whether a node's command is one update copies (decision A2: kernels and host tasks,
/// dynamic ones included).
fn updatable_kind(kind: &NodeKind) -> bool {
    matches!(kind, NodeKind::Kernel(_) | NodeKind::Dynamic { .. } | NodeKind::HostTask(_))
}

impl ExecutableGraph {
    pub(crate) fn downgrade(&self) -> Weak<ExecShared> {
        Rc::downgrade(&self.0)
    }

    /// The snapshot as a sub-graph use needs it: module, graph, version, device, context,
    /// and whether it has graph-owned allocations.
    pub(crate) fn snapshot_for_subgraph(&self) -> (Module, Handle<Graph>, u64, Device, Context, bool) {
        let st = self.0.state.borrow();
        let allocs =
            st.module.graphs[st.graph].nodes.iter().any(|(_, n)| matches!(n.kind, NodeKind::AsyncMalloc { .. }));
        (st.module.clone(), st.graph, st.version, self.0.device.clone(), self.0.ctx.clone(), allocs)
    }

    /// The snapshot module (its executable graph is the last graph).
    pub fn module(&self) -> Module {
        self.0.state.borrow().module.clone()
    }

    /// The structural key of this executable graph (`cmdgraph_ir::bundle::key`, docs/
    /// bundle.md "Keys"): the name under which `cmdgraph compile --bundle-dir DIR` stores
    /// the bundle made from [`ExecutableGraph::export_module`]'s file.
    pub fn bundle_key(&self) -> String {
        cmdgraph_ir::bundle::key::graph_key(&self.0.state.borrow().module)
    }

    /// Writes the snapshot module as IR text to `DIR/KEY.cgir` (KEY = [`Self::bundle_key`])
    /// and returns the path: the input of `cmdgraph compile --bundle-dir`, which writes
    /// `KEY.cgb` for the application to load. Replaced atomically (a temporary file renamed
    /// over it), so a reader never sees half a module.
    pub fn export_module(&self, dir: &std::path::Path) -> Result<std::path::PathBuf> {
        let text = cmdgraph_ir::text::print(&self.0.state.borrow().module);
        let key = self.bundle_key();
        let path = dir.join(format!("{key}.cgir"));
        let tmp = dir.join(format!(".{key}.cgir.tmp{}", std::process::id()));
        let io =
            |e: std::io::Error| SyclError::invalid(0, format!("export_module: cannot write `{}`: {e}", path.display()));
        std::fs::create_dir_all(dir).map_err(io)?;
        std::fs::write(&tmp, text).map_err(io)?;
        std::fs::rename(&tmp, &path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io(e)
        })?;
        Ok(path)
    }

    /// Which runtime ran this graph (`reference interpreter`, or the Vulkan device), once it
    /// has run.
    pub fn runtime(&self) -> Option<String> {
        self.0.runner.try_borrow().ok()?.as_ref().map(crate::runner::Runner::describe)
    }

    /// The handle of the executable graph in [`ExecutableGraph::module`].
    pub fn graph_handle(&self) -> Handle<Graph> {
        self.0.state.borrow().graph
    }

    /// The finalize properties.
    pub fn props(&self) -> FinalizeProps {
        self.0.props
    }

    /// `get_required_mem_size()`: bytes the graph-owned allocations need after reuse: the
    /// pool size of the `plan-memory` plan (docs/memory.md; offsets aligned to 256 bytes).
    /// Should planning fail (it cannot on a graph that finalized), the plain sum.
    pub fn get_required_mem_size(&self) -> u64 {
        let st = self.0.state.borrow();
        let graph = &st.module.graphs[st.graph];
        match cmdgraph_passes::memory::plan_graph(graph, cmdgraph_passes::memory::DEFAULT_ALIGNMENT) {
            Ok(plan) => plan.pool_size,
            Err(_) => graph
                .nodes
                .iter()
                .map(|(_, n)| match n.kind {
                    NodeKind::AsyncMalloc { elem, count, .. } => elem.size().saturating_mul(count),
                    _ => 0,
                })
                .fold(0u64, u64::saturating_add),
        }
    }

    fn check_updatable(&self) -> Result<()> {
        ensure(self.0.props.updatable, 24, || {
            "update: the executable graph was not finalized with property::graph::updatable".to_string()
        })?;
        if self.0.device.info().graph_support != GraphSupport::Full {
            return Err(SyclError::unsupported(0, "update: the device lacks aspect::ext_oneapi_graph"));
        }
        Ok(())
    }

    /// `update(node)` (rows 24-26).
    pub fn update_node(&self, node: &Node) -> Result<()> {
        self.update_nodes(&[node])
    }

    /// `update(nodes)` (rows 24-26): all nodes are checked before any changes.
    pub fn update_nodes(&self, nodes: &[&Node]) -> Result<()> {
        self.check_updatable()?;
        let source = self.0.source.borrow();
        let mut st = self.0.state.borrow_mut();
        let mut set = BTreeSet::new();
        for n in nodes {
            let part = Rc::ptr_eq(&n.graph, &self.0.source) && n.handle.index() < st.node_count;
            ensure(part, 25, || {
                "update: the node is not part of this executable graph (another graph, or added after finalize)"
                    .to_string()
            })?;
            let ty = source.ir.node_type(n.handle);
            ensure(!matches!(ty, NodeType::AsyncMalloc | NodeType::AsyncFree), 26, || {
                format!(
                    "update: node `%{}` is an {} node; graph allocation nodes cannot be updated",
                    n.ir_name_in(&source),
                    ty.name()
                )
            })?;
            set.insert(n.handle);
        }
        let graph = st.graph;
        copy_nodes(&source.ir, &mut st.module.graphs[graph], &set);
        st.version += 1;
        Ok(())
    }

    /// `update(source)`: whole-graph update (rows 27-31). The spec makes a source that is
    /// not topologically identical undefined behaviour; this runtime checks identity and
    /// refuses, naming the first difference.
    pub fn update_graph(&self, source: &ModifiableGraph) -> Result<()> {
        let (target_module, target_graph) = {
            let st = self.0.state.borrow();
            (st.module.clone(), st.graph)
        };
        let has_alloc = |g: &Graph| {
            g.nodes.iter().any(|(_, n)| matches!(n.kind, NodeKind::AsyncMalloc { .. } | NodeKind::AsyncFree { .. }))
        };
        let (src_module, src_graph) = source.to_module();
        let src = &src_module.graphs[src_graph];
        for (h, _) in src.nodes.iter() {
            let ty = src.node_type(h);
            let allowed = matches!(ty, NodeType::Empty | NodeType::Barrier | NodeType::Kernel | NodeType::HostTask);
            ensure(allowed, 27, || {
                format!("update(graph): source node `%{}` is a {} node; whole-graph update takes empty, barrier, kernel and host_task nodes", src.nodes[h].name, ty.name())
            })?;
        }
        ensure(source.device() == self.0.device && source.context() == self.0.ctx, 28, || {
            "update(graph): the source graph's device or context differs from the executable graph's".to_string()
        })?;
        self.check_updatable().map_err(|e| SyclError { row: if e.row == 24 { 29 } else { e.row }, ..e })?;
        ensure(!has_alloc(&target_module.graphs[target_graph]), 30, || {
            "update(graph): the executable graph has graph-owned allocations and cannot be whole-graph updated"
                .to_string()
        })?;
        topologically_identical(&target_module, target_graph, &src_module, src_graph).map_err(|m| {
            SyclError::invalid(31, format!("update(graph): the source is not topologically identical: {m}"))
        })?;

        if Rc::ptr_eq(source.inner(), &self.0.source) {
            let nodes = source.get_nodes();
            return self.update_nodes(&nodes.iter().collect::<Vec<_>>());
        }
        let mut st = self.0.state.borrow_mut();
        let graph = st.graph;
        let target = &mut st.module.graphs[graph];
        for (h, n) in src.nodes.iter() {
            if updatable_kind(&n.kind) {
                target.nodes[h].kind = materialized(src, &n.kind);
            }
        }
        st.version += 1;
        Ok(())
    }
}

/// Individual update: copies the commands of `set` from `source` into `target`,
/// materializing nodes outside `set` that share a changing parameter or group.
fn copy_nodes(source: &Graph, target: &mut Graph, set: &BTreeSet<Handle<cmdgraph_ir::Node>>) {
    let updated: Vec<_> =
        set.iter().copied().filter(|h| source.nodes.try_get(*h).is_some_and(|n| updatable_kind(&n.kind))).collect();
    let mut dcgs: BTreeSet<Handle<DynCommandGroup>> = BTreeSet::new();
    let mut params = BTreeSet::new();
    for h in &updated {
        let kind = &source.nodes[*h].kind;
        if let NodeKind::Dynamic { dcg } = kind {
            dcgs.insert(*dcg);
        }
        params_of(source, kind, &mut params);
    }
    let others: Vec<_> = target.nodes.handles().filter(|h| !set.contains(h)).collect();
    for d in &dcgs {
        if target.dcgs.try_get(*d) != source.dcgs.try_get(*d) {
            for h in &others {
                if target.nodes[*h].kind == (NodeKind::Dynamic { dcg: *d }) {
                    target.nodes[*h].kind = materialized(target, &target.nodes[*h].kind);
                }
            }
        }
    }
    for p in &params {
        let changed =
            target.dyn_params.try_get(*p).map(|x| &x.value) != source.dyn_params.try_get(*p).map(|x| &x.value);
        if changed {
            for h in &others {
                let mut uses = BTreeSet::new();
                params_of(target, &target.nodes[*h].kind, &mut uses);
                if uses.contains(p) {
                    target.nodes[*h].kind = materialized(target, &target.nodes[*h].kind);
                }
            }
        }
    }
    for d in dcgs {
        if let (Some(src), Some(dst)) = (source.dcgs.try_get(d), target.dcgs.try_get(d)) {
            let _ = dst;
            target.dcgs[d].active = src.active;
            target.dcgs[d].alternatives = src.alternatives.clone();
        }
    }
    for p in params {
        if let Some(src) = source.dyn_params.try_get(p) {
            if target.dyn_params.try_get(p).is_some() {
                target.dyn_params[p].value = src.value.clone();
            }
        }
    }
    for h in updated {
        target.nodes[h].kind = source.nodes[h].kind.clone();
    }
}

impl std::fmt::Debug for ExecutableGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.0.state.borrow();
        write!(f, "ExecutableGraph(@{})", st.module.graphs[st.graph].name)
    }
}
