//! Printing graphs: header, statements, commands, arguments.

use super::{name_in, Printer, INVALID};
use crate::arena::Handle;
use crate::graph::{
    Accessor, Alternative, Arg, ArgValue, CondKind, Edge, EdgeKind, Graph, HostTaskCommand, KernelCommand, Launch,
    MemRef, Node, NodeKind, Pointer, Stmt,
};
use crate::module::{Comments, UsmKind};

/// Each node's inline (non-`make_edge`) edges, in creation order, built in one pass over
/// the edges (a counting sort by destination) so printing stays linear in graph size.
struct InlineEdges<'g> {
    /// `start[n]..start[n + 1]` indexes `edges` for node `n`.
    start: Vec<usize>,
    edges: Vec<&'g Edge>,
}

impl<'g> InlineEdges<'g> {
    fn new(graph: &'g Graph) -> InlineEdges<'g> {
        let n = graph.nodes.len();
        let inline =
            || graph.edges.iter().map(|(_, e)| e).filter(move |e| e.kind != EdgeKind::MakeEdge && e.to.index() < n);
        let mut start = vec![0usize; n + 1];
        for e in inline() {
            start[e.to.index() + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut edges = Vec::new();
        if let Some(first) = inline().next() {
            edges = vec![first; start[n]];
            for e in inline() {
                let slot = &mut fill[e.to.index()];
                edges[*slot] = e;
                *slot += 1;
            }
        }
        InlineEdges { start, edges }
    }

    fn of(&self, node: Handle<Node>) -> &[&'g Edge] {
        let i = node.index();
        match (self.start.get(i), self.start.get(i + 1)) {
            (Some(&a), Some(&b)) => self.edges.get(a..b).unwrap_or(&[]),
            _ => &[],
        }
    }
}

impl Printer<'_> {
    pub(super) fn graph(&mut self, g: &Graph) {
        self.item_comment_lines(&g.comments);
        self.out.push_str("graph ");
        self.global(&g.name);
        if g.device != 0 {
            self.out.push_str(" device(");
            self.u64(u64::from(g.device));
            self.out.push(')');
        }
        if g.context != 0 {
            self.out.push_str(" context(");
            self.u64(u64::from(g.context));
            self.out.push(')');
        }
        let props = g.properties.keywords();
        if !props.is_empty() {
            self.out.push_str(" properties(");
            self.out.push_str(&props.join(", "));
            self.out.push(')');
        }
        self.out.push_str(" {\n");
        let inline = InlineEdges::new(g);
        for stmt in &g.body {
            self.stmt(g, &inline, *stmt);
        }
        self.comment_lines(1, &g.closing_comments);
        self.out.push('}');
        self.end_line(&g.comments);
    }

    fn stmt(&mut self, g: &Graph, inline: &InlineEdges<'_>, stmt: Stmt) {
        match stmt {
            Stmt::Queue(h) => {
                let Some(q) = g.queues.try_get(h) else { return };
                self.blank_line(&q.comments);
                self.comment_lines(1, &q.comments.leading);
                self.out.push_str("  queue ");
                self.global(&q.name);
                if q.in_order {
                    self.out.push_str(" in_order");
                }
                if q.discard_events {
                    self.out.push_str(" discard_events");
                }
                self.end_line(&q.comments);
            }
            Stmt::DynParam(h) => {
                let Some(p) = g.dyn_params.try_get(h) else { return };
                self.blank_line(&p.comments);
                self.comment_lines(1, &p.comments.leading);
                self.out.push_str("  dyn ");
                self.local(&p.name);
                self.out.push_str(" = ");
                self.arg_value(g, &p.value);
                self.end_line(&p.comments);
            }
            Stmt::Dcg(h) => {
                let Some(d) = g.dcgs.try_get(h) else { return };
                self.blank_line(&d.comments);
                self.comment_lines(1, &d.comments.leading);
                self.out.push_str("  dcg ");
                self.local(&d.name);
                self.out.push_str(" active(");
                self.u64(u64::from(d.active));
                self.out.push_str(") {\n");
                for alt in &d.alternatives {
                    self.out.push_str("    ");
                    match alt {
                        Alternative::Kernel(cmd) => self.kernel_command(g, cmd),
                        Alternative::HostTask(task) => self.task("host_task", g, task),
                        Alternative::Other(kind) => self.command(g, kind),
                    }
                    self.out.push('\n');
                }
                self.out.push_str("  }");
                self.end_line(&d.comments);
            }
            Stmt::Node(h) => {
                let Some(n) = g.nodes.try_get(h) else { return };
                self.blank_line(&n.comments);
                self.comment_lines(1, &n.comments.leading);
                self.out.push_str("  ");
                self.local(&n.name);
                self.out.push_str(" = ");
                self.command(g, &n.kind);
                if let Some(q) = n.queue {
                    self.out.push_str(" on ");
                    self.global(name_in(&g.queues, q, |q| &q.name));
                }
                if let Some(d) = n.device {
                    self.out.push_str(" device(");
                    self.u64(u64::from(d));
                    self.out.push(')');
                }
                let edges = inline.of(h);
                if !edges.is_empty() {
                    self.out.push_str(" after(");
                    for (i, e) in edges.iter().enumerate() {
                        if i > 0 {
                            self.out.push_str(", ");
                        }
                        self.node_name(g, e.from);
                        if e.kind != EdgeKind::DependsOn {
                            self.out.push_str(" via ");
                            self.out.push_str(e.kind.keyword());
                        }
                    }
                    self.out.push(')');
                }
                self.end_line(&n.comments);
            }
            Stmt::MakeEdge(h) => {
                let Some(e) = g.edges.try_get(h) else { return };
                let comments = g.edge_comments.get(&h);
                if let Some(c) = comments {
                    self.blank_line(c);
                    self.comment_lines(1, &c.leading);
                }
                self.out.push_str("  edge ");
                self.node_name(g, e.from);
                self.out.push_str(" -> ");
                self.node_name(g, e.to);
                match comments {
                    Some(c) => self.end_line(c),
                    None => self.out.push('\n'),
                }
            }
        }
    }

    /// The blank line the user wrote before a statement (`Comments::blank_before`).
    fn blank_line(&mut self, comments: &Comments) {
        if comments.blank_before {
            self.out.push('\n');
        }
    }

    fn node_name(&mut self, g: &Graph, n: Handle<Node>) {
        self.local(name_in(&g.nodes, n, |n| &n.name));
    }

    fn command(&mut self, g: &Graph, kind: &NodeKind) {
        match kind {
            NodeKind::Empty => self.out.push_str("empty"),
            NodeKind::Kernel(cmd) => self.kernel_command(g, cmd),
            NodeKind::Memcpy { dst, src, bytes } => {
                self.out.push_str("memcpy ");
                self.pointer(g, dst);
                self.out.push_str(", ");
                self.pointer(g, src);
                self.out.push_str(", ");
                self.u64(*bytes);
            }
            NodeKind::Memset { dst, value, bytes } => {
                self.out.push_str("memset ");
                self.pointer(g, dst);
                self.out.push_str(", ");
                self.u64(u64::from(*value));
                self.out.push_str(", ");
                self.u64(*bytes);
            }
            NodeKind::Memfill { dst, pattern, count } => {
                self.out.push_str("memfill ");
                self.pointer(g, dst);
                self.out.push_str(", ");
                self.literal(pattern);
                self.out.push_str(", ");
                self.u64(*count);
            }
            NodeKind::Comm(c) => {
                let mut ptr = String::new();
                std::mem::swap(&mut ptr, &mut self.out);
                self.pointer(g, &c.ptr);
                std::mem::swap(&mut ptr, &mut self.out);
                self.out.push_str(&c.text(&ptr));
            }
            NodeKind::Prefetch { ptr, bytes } => {
                self.out.push_str("prefetch ");
                self.pointer(g, ptr);
                self.out.push_str(", ");
                self.u64(*bytes);
            }
            NodeKind::Memadvise { ptr, bytes, advice } => {
                self.out.push_str("memadvise ");
                self.pointer(g, ptr);
                self.out.push_str(", ");
                self.u64(*bytes);
                self.out.push_str(", ");
                self.i128(i128::from(*advice));
            }
            NodeKind::Barrier { wait } => {
                self.out.push_str("barrier");
                if !wait.is_empty() {
                    self.out.push_str(" wait(");
                    for (i, n) in wait.iter().enumerate() {
                        if i > 0 {
                            self.out.push_str(", ");
                        }
                        self.node_name(g, *n);
                    }
                    self.out.push(')');
                }
            }
            NodeKind::HostTask(task) => self.task("host_task", g, task),
            NodeKind::Native(task) => self.task("native", g, task),
            NodeKind::Subgraph { graph } => {
                self.out.push_str("subgraph ");
                self.global(name_in(&self.module.graphs, *graph, |g| &g.name));
            }
            NodeKind::Conditional { kind, cond, bodies } => {
                self.out.push_str(kind.keyword());
                self.out.push(' ');
                self.pointer(g, cond);
                let body = |p: &mut Self, i: usize| {
                    if let Some(b) = bodies.get(i) {
                        p.global(name_in(&p.module.graphs, *b, |g| &g.name));
                    }
                };
                match kind {
                    CondKind::If => {
                        self.out.push_str(" then ");
                        body(self, 0);
                        if bodies.len() > 1 {
                            self.out.push_str(" else ");
                            body(self, 1);
                        }
                    }
                    CondKind::While => {
                        self.out.push_str(" do ");
                        body(self, 0);
                    }
                    CondKind::Switch => {
                        self.out.push_str(" cases(");
                        for i in 0..bodies.len() {
                            if i > 0 {
                                self.out.push_str(", ");
                            }
                            body(self, i);
                        }
                        self.out.push(')');
                    }
                }
            }
            NodeKind::AsyncMalloc { elem, count, kind, zero_init } => {
                self.out.push_str("async_malloc ");
                self.array(*elem, *count);
                if *kind != UsmKind::Device {
                    self.out.push(' ');
                    self.out.push_str(kind.keyword());
                }
                if *zero_init {
                    self.out.push_str(" zero_init");
                }
            }
            NodeKind::AsyncFree { alloc } => {
                self.out.push_str("async_free ");
                self.node_name(g, *alloc);
            }
            NodeKind::Dynamic { dcg } => {
                self.out.push_str("dynamic ");
                self.local(name_in(&g.dcgs, *dcg, |d| &d.name));
            }
        }
    }

    fn task(&mut self, keyword: &str, g: &Graph, task: &HostTaskCommand) {
        self.out.push_str(keyword);
        self.out.push(' ');
        self.string(&task.callback);
        if !task.access.is_empty() {
            self.out.push_str(" access(");
            for (i, a) in task.access.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.mem_ref(g, a.mem);
                self.out.push(' ');
                self.out.push_str(a.mode.keyword());
            }
            self.out.push(')');
        }
    }

    fn kernel_command(&mut self, g: &Graph, cmd: &KernelCommand) {
        self.out.push_str("kernel ");
        self.global(name_in(&self.module.kernels, cmd.kernel, |k| &k.name));
        self.out.push(' ');
        match &cmd.launch {
            Launch::SingleTask => self.out.push_str("single_task"),
            Launch::Range(r) => {
                self.out.push_str("range(");
                self.u64_list(r);
                self.out.push(')');
            }
            Launch::NdRange { global, local, offset } => {
                self.out.push_str("nd_range(global(");
                self.u64_list(global);
                self.out.push_str("), local(");
                self.u64_list(local);
                self.out.push(')');
                if !offset.is_empty() {
                    self.out.push_str(", offset(");
                    self.u64_list(offset);
                    self.out.push(')');
                }
                self.out.push(')');
            }
        }
        self.out.push_str(" args(");
        for (i, arg) in cmd.args.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            match arg {
                Arg::Dyn(p) => self.local(name_in(&g.dyn_params, *p, |p| &p.name)),
                Arg::Value(v) => self.arg_value(g, v),
            }
        }
        self.out.push(')');
    }

    fn arg_value(&mut self, g: &Graph, value: &ArgValue) {
        match value {
            ArgValue::Scalar(lit) => self.literal(lit),
            ArgValue::Pointer(p) => self.pointer(g, p),
            ArgValue::Accessor(Accessor { buffer, mode, range }) => {
                self.out.push_str("acc(");
                self.mem_ref(g, *buffer);
                if let Some((lo, hi)) = range {
                    self.out.push('[');
                    self.u64(*lo);
                    self.out.push_str("..");
                    self.u64(*hi);
                    self.out.push(']');
                }
                self.out.push_str(", ");
                self.out.push_str(mode.keyword());
                self.out.push(')');
            }
            ArgValue::Bytes(b) => self.bytes(b),
            ArgValue::Local { elem, count } => {
                self.out.push_str("local ");
                self.array(*elem, *count);
            }
        }
    }

    fn pointer(&mut self, g: &Graph, p: &Pointer) {
        self.mem_ref(g, p.base);
        if p.offset != 0 {
            self.out.push_str(" + ");
            self.u64(p.offset);
        }
    }

    fn mem_ref(&mut self, g: &Graph, m: MemRef) {
        match m {
            MemRef::Memory(h) => self.global(name_in(&self.module.memories, h, |m| &m.name)),
            MemRef::Alloc(n) => match g.nodes.try_get(n) {
                Some(node) => self.local(&node.name),
                None => self.local(INVALID),
            },
        }
    }
}
