//! `command_graph<graph_state::modifiable>`: construction through the explicit API and
//! queue recording, written straight into the IR data model.
//!
//! The IR graph keeps nodes and edges in creation order with edge provenance; inline
//! edges are created together with their destination node, `make_edge` edges are
//! `Stmt::MakeEdge` statements. The builder keeps two side tables the IR does not need:
//! the accessor requirements of each node (for later accessor edges) and, per recording
//! queue, its last node and last barrier.

mod add;
mod checks;
mod convert;
mod edges;
pub(crate) mod module;
mod recording;

pub(crate) use checks::check_banned;
pub(crate) use convert::Converted;
pub(crate) use edges::Adjacency;

use crate::error::{ensure, Result, SyclError};
use crate::exec::{ExecShared, ExecutableGraph};
use crate::node::Node;
use crate::platform::{Context, Device, GraphSupport};
use crate::props::{FinalizeProps, GraphProps, NodeProps};
use crate::queue::{Queue, QueueInner, StateInner};
use cmdgraph_ir::{Edge, EdgeKind, Graph, GraphProperties, Handle, Module, NodeKind, Span, Stmt};
use module::Child;
use std::cell::RefCell;
use std::rc::{Rc, Weak};

/// What the builder remembers about a queue that recorded into the graph.
pub(crate) struct QueueRec {
    pub(crate) queue: Weak<QueueInner>,
    pub(crate) ir: Handle<cmdgraph_ir::Queue>,
    pub(crate) last: Option<Handle<cmdgraph_ir::Node>>,
    /// The last barrier recorded from an out-of-order queue, which every later submission
    /// of that queue depends on; always `None` for an in-order queue, whose chain orders
    /// the submissions after a barrier (decision A4).
    pub(crate) barrier: Option<Handle<cmdgraph_ir::Node>>,
}

/// The state of a modifiable graph, shared by its copies, nodes, events and dynamic
/// objects.
pub(crate) struct GraphInner {
    pub(crate) ctx: Context,
    pub(crate) device: Device,
    pub(crate) props: GraphProps,
    pub(crate) ir: Graph,
    /// Accessor requirements of each node, by node index.
    pub(crate) reqs: Vec<Vec<cmdgraph_ir::Accessor>>,
    /// The value of each dynamic parameter as the API holds it, by parameter index.
    pub(crate) dyn_values: Vec<crate::KArg>,
    /// The argument slots each dynamic parameter was registered with, by parameter index,
    /// in registration order; `update` re-points them all to the parameter (A6).
    pub(crate) dyn_slots: Vec<Vec<crate::dynamic::DynSlot>>,
    /// What each dynamic command group's alternatives depend on, by group index.
    pub(crate) dcg_deps: Vec<crate::dynamic::DcgDeps>,
    pub(crate) queues: Vec<QueueRec>,
    /// Queues recording into the graph now.
    pub(crate) recording: Vec<Queue>,
    /// Executable graphs used as sub-graphs, by slot.
    pub(crate) children: Vec<Child>,
    /// The executable graph finalized last (one live instance with allocations, row 22).
    pub(crate) live_exec: Weak<ExecShared>,
    /// Successor lists and queue leaves, caught up with `ir` before each use.
    pub(crate) index: edges::Index,
}

impl GraphInner {
    /// Whether some queue is recording into the graph.
    pub(crate) fn is_recording(&self) -> bool {
        !self.recording.is_empty()
    }

    /// Invalid with `row` while recording (the explicit API may not change the graph).
    pub(crate) fn check_not_recording(&self, row: u32, what: &str) -> Result<()> {
        if let Some(q) = self.recording.first() {
            return Err(SyclError::invalid(
                row,
                format!(
                    "{what}: queue `@{}` is recording into graph `@{}`; the explicit API cannot change a graph while it records; call end_recording first",
                    q.name(),
                    self.ir.name
                ),
            ));
        }
        Ok(())
    }

    /// The recording record of `queue`, created (with its `queue` statement) on first use.
    pub(crate) fn queue_rec(&mut self, queue: &Queue) -> usize {
        let weak = Rc::downgrade(&queue.0);
        if let Some(i) = self.queues.iter().position(|r| Weak::ptr_eq(&r.queue, &weak)) {
            return i;
        }
        let ir_queue = cmdgraph_ir::Queue {
            name: queue.name().to_string(),
            in_order: queue.props().in_order,
            discard_events: queue.props().discard_events,
            comments: Default::default(),
        };
        let ir = self.ir.queues.append(ir_queue, Span::UNDEFINED);
        self.ir.body.push(Stmt::Queue(ir));
        self.queues.push(QueueRec { queue: weak, ir, last: None, barrier: None });
        self.queues.len() - 1
    }

    /// Appends a node with its inline edges (in order) and its statement.
    pub(crate) fn push_node(
        &mut self,
        kind: NodeKind,
        queue: Option<Handle<cmdgraph_ir::Queue>>,
        deps: &[(Handle<cmdgraph_ir::Node>, EdgeKind)],
        reqs: Vec<cmdgraph_ir::Accessor>,
    ) -> Handle<cmdgraph_ir::Node> {
        let name = format!("{}{}", node_prefix(&kind), self.ir.nodes.len());
        let node = cmdgraph_ir::Node { device: None, name, kind, queue, comments: Default::default() };
        let handle = self.ir.nodes.append(node, Span::UNDEFINED);
        for (from, kind) in deps {
            self.ir.edges.append(Edge { from: *from, to: handle, kind: *kind }, Span::UNDEFINED);
        }
        self.ir.body.push(Stmt::Node(handle));
        self.reqs.push(reqs);
        handle
    }

    /// Module of this graph as it is now.
    pub(crate) fn module(&self) -> (Module, Handle<Graph>) {
        module::assemble(&self.ctx.0.borrow(), &self.children, &self.ir)
    }

    /// Ends recording on every queue recording into this graph.
    fn end_all(&mut self) {
        for q in self.recording.drain(..) {
            *q.0.state.borrow_mut() = StateInner::Executing;
        }
    }
}

/// A pointer argument of a dynamic parameter, checked to belong to this graph.
pub(crate) fn pointer_of(
    rc: &Rc<RefCell<GraphInner>>,
    inner: &GraphInner,
    p: &crate::Ptr,
) -> Result<cmdgraph_ir::Pointer> {
    convert::pointer(rc, inner, p, 0, "dynamic_parameter")
}

/// Converts one command-group function of a dynamic command group.
pub(crate) fn convert_dcg(
    rc: &Rc<RefCell<GraphInner>>,
    inner: &mut GraphInner,
    h: &mut crate::Handler,
) -> Result<Converted> {
    convert::convert(rc, inner, h, convert::Via::Dcg)
}

/// Buffer rules for a dynamic command group's functions (row 12).
pub(crate) fn check_buffers_dcg(inner: &GraphInner, reqs: &[crate::Accessor]) -> Result<()> {
    checks::check_buffers(inner, reqs, convert::Via::Dcg)
}

/// The prefix of a node's generated name (the node's index follows).
fn node_prefix(kind: &NodeKind) -> &'static str {
    match kind {
        NodeKind::Empty => "empty",
        NodeKind::Kernel(_) => "kernel",
        NodeKind::Memcpy { .. } => "memcpy",
        NodeKind::Memset { .. } => "memset",
        NodeKind::Memfill { .. } => "fill",
        NodeKind::Prefetch { .. } => "prefetch",
        NodeKind::Memadvise { .. } => "advise",
        NodeKind::Barrier { .. } => "barrier",
        NodeKind::HostTask(_) => "host",
        NodeKind::Subgraph { .. } => "sub",
        NodeKind::AsyncMalloc { .. } => "alloc",
        NodeKind::AsyncFree { .. } => "free",
        NodeKind::Native(_) => "native",
        NodeKind::Dynamic { .. } => "dyn",
        NodeKind::Conditional { .. } => "cond",
        NodeKind::Comm(c) => c.op.keyword(),
    }
}

/// One copy of a modifiable graph. When the last copy goes, recording ends on every
/// queue recording into it (000 §8.7); nodes, events and dynamic objects keep the state
/// alive but not the copies.
pub(crate) struct GraphShared {
    pub(crate) inner: Rc<RefCell<GraphInner>>,
}

/// `command_graph<graph_state::modifiable>`. Copies share one graph.
#[derive(Clone)]
pub struct ModifiableGraph(pub(crate) Rc<GraphShared>);

impl ModifiableGraph {
    /// `command_graph(context, device, props)`, named `gN` (rows 1, 2).
    pub fn new(ctx: &Context, device: &Device, props: GraphProps) -> Result<ModifiableGraph> {
        ModifiableGraph::create(ctx, device, None, props, 2)
    }

    /// `command_graph(context, device, props)` with the name the IR shows.
    pub fn new_named(ctx: &Context, device: &Device, name: &str, props: GraphProps) -> Result<ModifiableGraph> {
        ModifiableGraph::create(ctx, device, Some(name), props, 2)
    }

    /// `command_graph(queue, props)`: the queue's device and context (row 3).
    pub fn from_queue(queue: &Queue, props: GraphProps) -> Result<ModifiableGraph> {
        ModifiableGraph::create(&queue.context(), &queue.device(), None, props, 3)
    }

    /// A graph that runs one executing-queue submission; its name is not claimed.
    pub(crate) fn eager(queue: &Queue) -> Result<ModifiableGraph> {
        let props = GraphProps { no_cycle_check: false, assume_buffer_outlives_graph: true };
        ModifiableGraph::build(&queue.context(), &queue.device(), "__eager".to_string(), props)
    }

    fn create(
        ctx: &Context,
        device: &Device,
        name: Option<&str>,
        props: GraphProps,
        row: u32,
    ) -> Result<ModifiableGraph> {
        ensure(ctx.contains(device), 1, || {
            format!(
                "command_graph: device {} is not in context {}; pick one of the context's devices",
                device.id(),
                ctx.id()
            )
        })?;
        ensure(device.info().graph_support != GraphSupport::None, row, || {
            format!(
                "command_graph: device {} reports neither aspect::ext_oneapi_graph nor ext_oneapi_limited_graph",
                device.id()
            )
        })?;
        let name = ctx.0.borrow_mut().claim_name(name, "g")?;
        ModifiableGraph::build(ctx, device, name, props)
    }

    fn build(ctx: &Context, device: &Device, name: String, props: GraphProps) -> Result<ModifiableGraph> {
        let ir = Graph {
            name,
            properties: GraphProperties {
                no_cycle_check: props.no_cycle_check,
                assume_buffer_outlives_graph: props.assume_buffer_outlives_graph,
                updatable: false,
                enable_profiling: false,
            },
            device: device.id(),
            context: ctx.id(),
            ..Graph::default()
        };
        let inner = GraphInner {
            ctx: ctx.clone(),
            device: device.clone(),
            props,
            ir,
            reqs: Vec::new(),
            dyn_values: Vec::new(),
            dyn_slots: Vec::new(),
            dcg_deps: Vec::new(),
            queues: Vec::new(),
            recording: Vec::new(),
            children: Vec::new(),
            live_exec: Weak::new(),
            index: edges::Index::default(),
        };
        Ok(ModifiableGraph(Rc::new(GraphShared { inner: Rc::new(RefCell::new(inner)) })))
    }

    pub(crate) fn inner(&self) -> &Rc<RefCell<GraphInner>> {
        &self.0.inner
    }

    /// The graph's IR name (without `@`).
    pub fn name(&self) -> String {
        self.0.inner.borrow().ir.name.clone()
    }

    /// The graph's context.
    pub fn context(&self) -> Context {
        self.0.inner.borrow().ctx.clone()
    }

    /// The graph's device.
    pub fn device(&self) -> Device {
        self.0.inner.borrow().device.clone()
    }

    /// Whether two handles name the same graph.
    pub fn same(&self, other: &ModifiableGraph) -> bool {
        Rc::ptr_eq(&self.0.inner, &other.0.inner)
    }

    fn node(&self, handle: Handle<cmdgraph_ir::Node>) -> Node {
        Node { graph: self.0.inner.clone(), handle }
    }

    /// `add(props)`: an empty node (row 4).
    pub fn add_empty(&self, props: NodeProps) -> Result<Node> {
        let handle = add::add_empty(&self.0.inner, &props)?;
        Ok(self.node(handle))
    }

    /// `add(cgf, props)`: a node for the command group `cgf` (rows 5-8, 53, 54, 57-59).
    pub fn add(&self, cgf: impl FnOnce(&mut crate::Handler), props: NodeProps) -> Result<Node> {
        let mut h = crate::Handler::new(crate::handler::Mode::Explicit, Some(self.0.inner.clone()));
        cgf(&mut h);
        let handle = GraphInner::add_command_group(&self.0.inner, h, &props)?;
        Ok(self.node(handle))
    }

    /// `add(dynamicCG, props)`: a node running the group's active alternative (rows 9-11).
    pub fn add_dynamic(&self, dcg: &crate::DynamicCommandGroup, props: NodeProps) -> Result<Node> {
        let handle = add::add_dynamic(&self.0.inner, dcg, &props)?;
        Ok(self.node(handle))
    }

    /// `make_edge(src, dest)`: `dest` depends on `src` (rows 17-20). An edge that already
    /// exists is not made twice (decision A5).
    pub fn make_edge(&self, src: &Node, dest: &Node) -> Result<()> {
        let mut inner = self.0.inner.borrow_mut();
        inner.check_not_recording(17, "make_edge")?;
        for (which, n) in [("src", src), ("dest", dest)] {
            ensure(Rc::ptr_eq(&n.graph, &self.0.inner), 18, || {
                format!(
                    "make_edge: {which} is a node of another graph; connect nodes of graph `@{}` only",
                    inner.ir.name
                )
            })?;
        }
        ensure(src.handle != dest.handle, 19, || {
            format!(
                "make_edge: src and dest are the same node `%{}`; a node cannot depend on itself",
                src.ir_name_in(&inner)
            )
        })?;
        if inner.ir.edges.iter().any(|(_, e)| e.from == src.handle && e.to == dest.handle) {
            return Ok(());
        }
        if !inner.props.no_cycle_check {
            let inner = &mut *inner;
            inner.index.update(&inner.ir);
            ensure(!inner.index.adjacency().reaches(dest.handle, src.handle), 20, || {
                format!(
                    "make_edge: `%{}` already depends on `%{}`, so this edge would make a cycle",
                    src.ir_name_in(inner),
                    dest.ir_name_in(inner)
                )
            })?;
        }
        let edge = inner
            .ir
            .edges
            .append(Edge { from: src.handle, to: dest.handle, kind: EdgeKind::MakeEdge }, Span::UNDEFINED);
        inner.ir.body.push(Stmt::MakeEdge(edge));
        Ok(())
    }

    /// `get_nodes()`: every node in creation order.
    pub fn get_nodes(&self) -> Vec<Node> {
        let handles: Vec<_> = self.0.inner.borrow().ir.nodes.handles().collect();
        handles.into_iter().map(|h| self.node(h)).collect()
    }

    /// `get_root_nodes()`: nodes without predecessors, in creation order.
    pub fn get_root_nodes(&self) -> Vec<Node> {
        let roots: Vec<_> = {
            let inner = self.0.inner.borrow();
            let mut has_pred = vec![false; inner.ir.nodes.len()];
            inner.ir.edges.iter().for_each(|(_, e)| {
                if let Some(f) = has_pred.get_mut(e.to.index()) {
                    *f = true;
                }
            });
            inner.ir.nodes.handles().filter(|h| !has_pred[h.index()]).collect()
        };
        roots.into_iter().map(|h| self.node(h)).collect()
    }

    /// `print_graph(path, verbose)`: writes the graph (and its sub-graphs) as DOT to
    /// `path`, which must end in `.dot` (row 23).
    pub fn print_graph(&self, path: &str, verbose: bool) -> Result<()> {
        let p = std::path::Path::new(path);
        let stem_ok = p.file_stem().is_some_and(|s| !s.is_empty());
        ensure(stem_ok && p.extension().is_some_and(|e| e == "dot"), 23, || {
            format!("print_graph: `{path}` is not a `<filename>.dot` path; only DOT output is supported")
        })?;
        let (module, _) = self.to_module();
        let dot = cmdgraph_ir::dot::to_dot(
            &module,
            &cmdgraph_ir::dot::DotOptions { verbose, graph: None, ..Default::default() },
        );
        std::fs::write(p, dot).map_err(|e| SyclError::invalid(23, format!("print_graph: writing `{path}` failed: {e}")))
    }

    /// The IR module of this graph as it is now (its graph is the module's last).
    pub fn to_module(&self) -> (Module, Handle<Graph>) {
        self.0.inner.borrow().module()
    }

    /// `finalize(props)`: a new executable graph holding a snapshot of this graph
    /// (rows 20, 21, 22).
    pub fn finalize(&self, props: FinalizeProps) -> Result<ExecutableGraph> {
        crate::exec::finalize(&self.0.inner, props)
    }
}

impl std::fmt::Debug for ModifiableGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ModifiableGraph(@{})", self.name())
    }
}
