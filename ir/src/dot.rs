//! Graphviz DOT output for command graphs, modelled on DPC++ `command_graph::print_graph`.
//!
//! Every graph of a module becomes a `subgraph "cluster_<name>"`. A node is labelled with
//! its stable IR name (`%k0`), its spec node type (`kernel`, `ext_oneapi_barrier`, ...) and,
//! for kernels, the kernel name; [`DotOptions::verbose`] adds what the IR statement says
//! (arguments, copy and fill operands, allocation size, host-task callback and accesses,
//! barrier wait list, queue, dynamic-parameter registrations, dynamic command group
//! alternatives with the active one marked) and labels each edge with its provenance.
//!
//! Output is a pure function of the module: DOT IDs are built from IR names (never from
//! addresses or handles), nodes and edges come in creation order, so the same module always
//! gives the same bytes and two dumps of related modules diff cleanly. Every string is
//! quoted and escaped, so any name the API accepts yields DOT that `dot -Tsvg` accepts.

pub(crate) mod label;
mod legend;
#[cfg(test)]
mod tests;

use crate::comm::CommOp;
use crate::graph::{Alternative, CondKind, EdgeKind, Graph, KernelCommand, Node, NodeKind, NodeType};
use crate::module::{Module, UsmKind};
use crate::Handle;
use std::collections::{BTreeMap, BTreeSet};

/// What [`to_dot`] draws.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DotOptions {
    /// Label nodes with every operand of their command and edges with their provenance.
    pub verbose: bool,
    /// Draw only the graph of this name (with or without the `@`); `None` draws them all.
    pub graph: Option<String>,
    /// Add a legend: what each node shape and edge style used in the picture means.
    pub legend: bool,
    /// Problems to show on nodes, by (graph name, node name): such a node is drawn red
    /// with each problem as a line of its label (`cmdgraph dot --no-verify`).
    pub marks: BTreeMap<(String, String), Vec<String>>,
    /// Problems at no node, shown in a red note at the top.
    pub notes: Vec<String>,
}

/// Renders `module` as a DOT `digraph`.
///
/// When [`DotOptions::graph`] names no graph of the module the result is an empty digraph
/// (still valid DOT); callers that want an error check [`Module::graph_by_name`] first.
pub fn to_dot(module: &Module, opts: &DotOptions) -> String {
    let mut writer = Writer::new(module, opts);
    writer.module(opts);
    writer.out
}

/// Output under construction plus the DOT IDs assigned to every graph and node.
struct Writer<'m> {
    module: &'m Module,
    verbose: bool,
    /// The graphs drawn, by arena index.
    selected: Vec<bool>,
    /// The escaped, unique name of each graph that starts its IDs, by arena index; the
    /// cluster is `cluster_<prefix>` and its nodes `<prefix>/%<node>`.
    prefixes: Vec<String>,
    /// Node IDs of each graph, by graph and node index.
    node_ids: Vec<Vec<String>>,
    /// Node styles and edge provenances drawn, for the legend.
    used: legend::Used,
    out: String,
}

impl<'m> Writer<'m> {
    fn new(module: &'m Module, opts: &DotOptions) -> Writer<'m> {
        let wanted = opts.graph.as_deref().map(|g| g.strip_prefix('@').unwrap_or(g));
        let mut selected: Vec<bool> = module.graphs.iter().map(|(_, g)| wanted.is_none_or(|w| g.name == w)).collect();
        // A drawn graph brings the bodies of its conditional nodes, transitively: they are
        // its clusters' contents (docs/conditional.md).
        let mut stack: Vec<usize> = (0..selected.len()).filter(|&i| selected[i]).collect();
        while let Some(g) = stack.pop() {
            let Some(graph) = module.graphs.iter().nth(g).map(|(_, x)| x) else { continue };
            for (_, n) in graph.nodes.iter() {
                if let NodeKind::Conditional { bodies, .. } = &n.kind {
                    for b in bodies {
                        if let Some(slot) = selected.get_mut(b.index()).filter(|s| !**s) {
                            *slot = true;
                            stack.push(b.index());
                        }
                    }
                }
            }
        }
        // Names are unique in a verified module; uniquifying anyway keeps a drawing of an
        // unverified one from merging two nodes into one.
        let mut used = BTreeSet::new();
        let mut prefixes = Vec::with_capacity(module.graphs.len());
        let mut node_ids = Vec::with_capacity(module.graphs.len());
        for (_, graph) in module.graphs.iter() {
            let prefix = unique(&mut used, id_text(&graph.name));
            let mut taken = BTreeSet::new();
            let ids = graph.nodes.iter().map(|(_, n)| unique(&mut taken, format!("{prefix}/%{}", id_text(&n.name))));
            node_ids.push(ids.collect());
            prefixes.push(prefix);
        }
        Writer {
            module,
            verbose: opts.verbose,
            selected,
            prefixes,
            node_ids,
            used: Default::default(),
            out: String::new(),
        }
    }

    fn module(&mut self, opts: &DotOptions) {
        let drawn = self.selected.iter().filter(|s| **s).count();
        self.out.push_str(&format!("// cmdgraph dot: {drawn} graph(s)\n"));
        self.out.push_str("digraph \"cmdgraph\" {\n");
        self.out.push_str("  compound=true;\n  fontname=\"monospace\";\n");
        self.out.push_str("  node [fontname=\"monospace\", shape=box];\n  edge [fontname=\"monospace\"];\n");
        legend::notes(&mut self.out, &opts.notes);
        let module = self.module;
        for (h, graph) in module.graphs.iter() {
            if self.selected.get(h.index()).copied().unwrap_or(false) {
                self.cluster(h.index(), graph, &opts.marks);
            }
        }
        for (h, graph) in module.graphs.iter() {
            if self.selected.get(h.index()).copied().unwrap_or(false) {
                self.subgraph_links(h.index(), graph);
            }
        }
        if opts.legend {
            legend::write(&mut self.out, &self.used);
        }
        self.out.push_str("}\n");
    }

    /// The node of graph `g` that edges into its cluster point at: its first node, or the
    /// placeholder drawn for an empty graph.
    fn anchor(&self, g: usize) -> Option<String> {
        let first = self.node_ids.get(g)?.first().cloned();
        Some(first.unwrap_or_else(|| format!("{}/", self.prefixes[g])))
    }

    fn node_id(&self, g: usize, node: Handle<Node>) -> Option<&str> {
        self.node_ids.get(g)?.get(node.index()).map(String::as_str)
    }

    fn cluster(&mut self, g: usize, graph: &Graph, marks: &BTreeMap<(String, String), Vec<String>>) {
        self.out.push_str(&format!("\n  subgraph \"cluster_{}\" {{\n", self.prefixes[g]));
        let label = label_attr(&self.cluster_lines(graph), self.verbose);
        self.out.push_str(&format!("    label={label};\n"));
        if graph.nodes.is_empty() {
            let anchor = self.anchor(g).unwrap_or_default();
            self.out.push_str(&format!("    \"{anchor}\" [label=\"(empty graph)\", shape=plaintext];\n"));
        }
        for (h, node) in graph.nodes.iter() {
            if self.node_id(g, h).is_none() {
                continue;
            }
            self.used.node(graph.node_type(h), &node.kind);
            let Some(id) = self.node_id(g, h) else { continue };
            let mut lines = self.node_lines(graph, h, node);
            let mut attrs: Vec<String> =
                node_style(graph.node_type(h), &node.kind).iter().map(|s| s.to_string()).collect();
            // Transfers between devices stand out: blue and thick.
            if crate::placement::transfer(self.module, graph, h).is_some() {
                attrs.extend(["color=blue".to_string(), "penwidth=2".to_string()]);
            }
            if let Some(problems) = marks.get(&(graph.name.clone(), node.name.clone())) {
                legend::mark(&mut lines, &mut attrs, problems);
            }
            attrs.insert(0, format!("label={}", label_attr(&lines, self.verbose)));
            let line = format!("    \"{id}\" [{}];\n", attrs.join(", "));
            self.out.push_str(&line);
        }
        for (_, edge) in graph.edges.iter() {
            if self.node_id(g, edge.from).is_none() || self.node_id(g, edge.to).is_none() {
                continue;
            }
            self.used.edge(edge.kind);
            let (Some(from), Some(to)) = (self.node_id(g, edge.from), self.node_id(g, edge.to)) else { continue };
            let mut attrs: Vec<String> = edge_style(edge.kind).iter().map(|s| s.to_string()).collect();
            if self.verbose {
                attrs.push(format!("label=\"{}\"", edge.kind.keyword()));
            }
            let line = if attrs.is_empty() {
                format!("    \"{from}\" -> \"{to}\";\n")
            } else {
                format!("    \"{from}\" -> \"{to}\" [{}];\n", attrs.join(", "))
            };
            self.out.push_str(&line);
        }
        self.out.push_str("  }\n");
    }

    /// Dashed edges from each `subgraph` node to its child graph's cluster (`lhead`), and
    /// from each conditional node to its bodies' clusters (labelled `then`, `else`, `do`,
    /// `case k`), when the child is drawn too.
    fn subgraph_links(&mut self, g: usize, graph: &Graph) {
        for (h, node) in graph.nodes.iter() {
            let children: Vec<(usize, String)> = match &node.kind {
                NodeKind::Subgraph { graph: child } => vec![(child.index(), String::new())],
                NodeKind::Conditional { kind, bodies, .. } => bodies
                    .iter()
                    .enumerate()
                    .map(|(i, b)| {
                        let label = match (kind, i) {
                            (CondKind::If, 0) => "then".to_string(),
                            (CondKind::If, _) => "else".to_string(),
                            (CondKind::While, _) => "do".to_string(),
                            (CondKind::Switch, k) => format!("case {k}"),
                        };
                        (b.index(), format!(", label=\"{label}\""))
                    })
                    .collect(),
                _ => continue,
            };
            for (c, label) in children {
                if !self.selected.get(c).copied().unwrap_or(false) {
                    continue;
                }
                let (Some(from), Some(to)) = (self.node_id(g, h), self.anchor(c)) else { continue };
                // A graph that contains itself is rejected by the verifier; without `lhead`
                // graphviz still draws it (an lhead around the tail is an error there).
                let lhead = if c == g { String::new() } else { format!(", lhead=\"cluster_{}\"", self.prefixes[c]) };
                let line =
                    format!("  \"{from}\" -> \"{to}\" [style=dashed, arrowhead=empty, color=gray40{lhead}{label}];\n");
                self.out.push_str(&line);
            }
        }
    }

    fn cluster_lines(&self, graph: &Graph) -> Vec<String> {
        let mut lines = vec![label::global(Some(&graph.name))];
        if !self.verbose {
            return lines;
        }
        if graph.device != 0 || graph.context != 0 {
            lines.push(format!("device({}) context({})", graph.device, graph.context));
        }
        let props = graph.properties.keywords();
        if !props.is_empty() {
            lines.push(format!("properties({})", props.join(", ")));
        }
        for (_, q) in graph.queues.iter() {
            lines.push(format!("queue {}{}", label::global(Some(&q.name)), queue_flags(q.in_order, q.discard_events)));
        }
        for (_, p) in graph.dyn_params.iter() {
            let value = label::arg_value(self.module, graph, &p.value);
            lines.push(format!("dyn {} = {value}", label::local(Some(&p.name))));
        }
        lines
    }

    /// Name, node type and kernel (or child graph) name; in verbose mode the operands too.
    fn node_lines(&self, graph: &Graph, h: Handle<Node>, node: &Node) -> Vec<String> {
        let module = self.module;
        let mut lines = vec![label::local(Some(&node.name)), graph.node_type(h).name().to_string()];
        match &node.kind {
            NodeKind::Kernel(cmd) => lines.push(label::kernel_name(module, cmd)),
            NodeKind::Subgraph { graph: child } => {
                lines.push(label::global(module.graphs.try_get(*child).map(|c| c.name.as_str())))
            }
            NodeKind::Conditional { kind, cond, .. } => {
                lines.push(format!("{} {}", kind.keyword(), label::pointer(module, graph, cond)))
            }
            // The operation and its peer: a picture of rank graphs shows who talks to whom.
            NodeKind::Comm(c) => lines.push(match c.op {
                CommOp::Send { peer, tag } => format!("send to rank {peer}, tag {tag}"),
                CommOp::Recv { peer, tag } => format!("recv from rank {peer}, tag {tag}"),
                CommOp::AllReduce(op) => format!("allreduce {}", op.keyword()),
            }),
            NodeKind::Dynamic { dcg } => {
                let active = graph.dcgs.try_get(*dcg).and_then(|d| d.alternatives.get(d.active as usize));
                if let Some(Alternative::Kernel(cmd)) = active {
                    lines.push(label::kernel_name(module, cmd));
                }
            }
            _ => {}
        }
        // In a multi-device graph every node that runs on a device says which; a transfer
        // says between which (docs/multi-device.md).
        if graph.is_multi_device() {
            match crate::placement::transfer(module, graph, h) {
                Some((from, to)) => lines.push(format!("transfer: device {from} -> {to}")),
                None if !matches!(
                    node.kind,
                    NodeKind::Empty
                        | NodeKind::Barrier { .. }
                        | NodeKind::Subgraph { .. }
                        | NodeKind::HostTask(_)
                        | NodeKind::Native(_)
                        | NodeKind::Comm(_)
                ) =>
                {
                    lines.push(format!("device {}", graph.node_device(h)))
                }
                None => {}
            }
        }
        if self.verbose {
            self.details(graph, node, &mut lines);
        }
        lines
    }

    fn details(&self, graph: &Graph, node: &Node, lines: &mut Vec<String>) {
        let m = self.module;
        let ptr = |p| label::pointer(m, graph, p);
        match &node.kind {
            NodeKind::Empty | NodeKind::Subgraph { .. } | NodeKind::Conditional { .. } => {}
            NodeKind::Kernel(cmd) => self.kernel_details(graph, cmd, None, lines),
            NodeKind::Memcpy { dst, src, bytes } => {
                lines.push(format!("dst: {}", ptr(dst)));
                lines.push(format!("src: {}", ptr(src)));
                lines.push(format!("size: {bytes} bytes"));
            }
            NodeKind::Memset { dst, value, bytes } => {
                lines.push(format!("dst: {}", ptr(dst)));
                lines.push(format!("value: {value}"));
                lines.push(format!("size: {bytes} bytes"));
            }
            NodeKind::Memfill { dst, pattern, count } => {
                lines.push(format!("dst: {}", ptr(dst)));
                lines.push(format!("pattern: {}", label::literal(pattern)));
                lines.push(format!("count: {count}"));
            }
            NodeKind::Comm(c) => {
                lines.push(format!("ptr: {}", ptr(&c.ptr)));
                lines.push(format!("size: {} bytes", c.bytes));
                match c.op {
                    CommOp::Send { peer, tag } => lines.push(format!("to rank {peer}, tag {tag}")),
                    CommOp::Recv { peer, tag } => lines.push(format!("from rank {peer}, tag {tag}")),
                    CommOp::AllReduce(op) => lines.push(format!("op: {}", op.keyword())),
                }
            }
            NodeKind::Prefetch { ptr: p, bytes } => {
                lines.push(format!("ptr: {}", ptr(p)));
                lines.push(format!("size: {bytes} bytes"));
            }
            NodeKind::Memadvise { ptr: p, bytes, advice } => {
                lines.push(format!("ptr: {}", ptr(p)));
                lines.push(format!("size: {bytes} bytes"));
                lines.push(format!("advice: {advice}"));
            }
            NodeKind::Barrier { wait } if wait.is_empty() => lines.push("wait: leaves of its queue".to_string()),
            NodeKind::Barrier { wait } => {
                let names: Vec<String> = wait.iter().map(|w| label::node_ref(graph, *w)).collect();
                lines.push(format!("wait({})", names.join(", ")));
            }
            NodeKind::HostTask(task) | NodeKind::Native(task) => {
                lines.push(format!("callback: {}", label::string(&task.callback)));
                lines.extend(label::access_list(m, graph, task));
            }
            NodeKind::AsyncMalloc { elem, count, kind, zero_init } => {
                let bytes = elem.size().saturating_mul(*count);
                lines.push(format!("alloc: {elem}[{count}] ({bytes} bytes)"));
                if *kind != UsmKind::Device {
                    lines.push(format!("kind: {}", kind.keyword()));
                }
                lines.push(format!("zero_init: {zero_init}"));
            }
            NodeKind::AsyncFree { alloc } => lines.push(format!("frees: {}", label::node_ref(graph, *alloc))),
            NodeKind::Dynamic { dcg } => self.dcg_details(graph, *dcg, lines),
        }
        if let Some(q) = node.queue.and_then(|q| graph.queues.try_get(q)) {
            lines.push(format!("on {}{}", label::global(Some(&q.name)), queue_flags(q.in_order, q.discard_events)));
        }
    }

    /// Launch, arguments and the dynamic parameters registered with argument slots.
    fn kernel_details(&self, graph: &Graph, cmd: &KernelCommand, alt: Option<usize>, lines: &mut Vec<String>) {
        let m = self.module;
        if alt.is_none() {
            lines.push(label::launch(&cmd.launch));
            lines.push(label::args(m, graph, cmd));
        }
        for (i, arg) in cmd.args.iter().enumerate() {
            let crate::graph::Arg::Dyn(p) = arg else { continue };
            let Some(param) = graph.dyn_params.try_get(*p) else { continue };
            let value = label::arg_value(m, graph, &param.value);
            let slot = match alt {
                Some(a) => format!("alt {a}, arg {i}"),
                None => format!("arg {i}"),
            };
            lines.push(format!("dyn {} = {value} -> {slot}", label::local(Some(&param.name))));
        }
    }

    /// The group's alternatives, the active one marked with `*`.
    fn dcg_details(&self, graph: &Graph, dcg: Handle<crate::graph::DynCommandGroup>, lines: &mut Vec<String>) {
        let Some(group) = graph.dcgs.try_get(dcg) else {
            lines.push("dcg %?".to_string());
            return;
        };
        lines.push(format!("dcg {} active({})", label::local(Some(&group.name)), group.active));
        let m = self.module;
        for (i, alt) in group.alternatives.iter().enumerate() {
            let mark = if i == group.active as usize { "*" } else { " " };
            let text = match alt {
                Alternative::Kernel(cmd) => label::kernel_command(m, graph, cmd),
                Alternative::HostTask(task) => {
                    let access = label::access_list(m, graph, task).map(|a| format!(" {a}")).unwrap_or_default();
                    format!("host_task {}{access}", label::string(&task.callback))
                }
                Alternative::Other(kind) => format!("{} (not allowed here)", kind.node_type().name()),
            };
            lines.push(format!("{mark} [{i}] {text}"));
        }
        for (i, alt) in group.alternatives.iter().enumerate() {
            if let Alternative::Kernel(cmd) = alt {
                self.kernel_details(graph, cmd, Some(i), lines);
            }
        }
    }
}

fn queue_flags(in_order: bool, discard_events: bool) -> String {
    let mut s = String::new();
    if in_order {
        s.push_str(" in_order");
    }
    if discard_events {
        s.push_str(" discard_events");
    }
    s
}

/// Shape and style by node type, the same in both modes so pictures stay comparable.
fn node_style(ty: NodeType, kind: &NodeKind) -> &'static [&'static str] {
    if matches!(kind, NodeKind::Dynamic { .. }) {
        return &["style=bold", "peripheries=2"];
    }
    match ty {
        NodeType::Kernel => &["style=bold"],
        NodeType::Memcpy | NodeType::Memset | NodeType::Memfill | NodeType::Prefetch | NodeType::Memadvise => {
            &["style=rounded"]
        }
        NodeType::Barrier => &["shape=octagon"],
        NodeType::HostTask => &["shape=hexagon"],
        NodeType::NativeCommand => &["shape=hexagon", "style=dashed"],
        NodeType::Empty => &["shape=ellipse", "style=dashed"],
        NodeType::Subgraph => &["shape=box3d"],
        NodeType::Conditional => &["shape=diamond"],
        NodeType::Communication => &["shape=parallelogram", "color=darkorange"],
        NodeType::AsyncMalloc => &["shape=cylinder"],
        NodeType::AsyncFree => &["shape=cylinder", "style=dashed"],
    }
}

/// Edge style by provenance: `make_edge` is a plain solid edge, every other kind has its
/// own style and colour in both modes.
fn edge_style(kind: EdgeKind) -> &'static [&'static str] {
    match kind {
        EdgeKind::MakeEdge => &[],
        EdgeKind::DependsOn => &["style=dashed"],
        EdgeKind::AllLeaves => &["style=dashed", "color=blue"],
        EdgeKind::Accessor => &["style=dotted", "color=darkgreen"],
        EdgeKind::Event => &["style=dashed", "color=purple"],
        EdgeKind::InOrder => &["style=bold", "color=gray50"],
        EdgeKind::Barrier => &["style=bold", "color=red"],
        EdgeKind::Transitive => &["style=dotted", "color=orange"],
    }
}

/// Returns `id`, or `id#2`, `id#3`, ... when it is taken, and records it.
fn unique(used: &mut BTreeSet<String>, id: String) -> String {
    let mut candidate = id.clone();
    let mut n = 2u64;
    while used.contains(&candidate) {
        candidate = format!("{id}#{n}");
        n = n.saturating_add(1);
    }
    used.insert(candidate.clone());
    candidate
}

/// A name as it appears inside a quoted DOT ID. `/` is escaped because it separates the
/// graph from the node; the mapping is injective, so distinct names get distinct IDs.
fn id_text(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '/' => out.push_str("\\/"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:04x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// One label line as DOT text: graphviz reads `\x` escapes and `&name;` entities in labels,
/// so backslashes and `&` are escaped to show the name as written; control characters
/// become visible `\u{XXXX}`.
fn label_text(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '&' => out.push_str("&amp;"),
            c if c.is_control() => out.push_str(&format!("\\\\u{{{:04x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// The quoted `label` value: lines centred (`\n`) or, in verbose mode, left-aligned (`\l`).
fn label_attr(lines: &[String], verbose: bool) -> String {
    let escaped: Vec<String> = lines.iter().map(|l| label_text(l)).collect();
    if verbose {
        format!("\"{}\\l\"", escaped.join("\\l"))
    } else {
        format!("\"{}\"", escaped.join("\\n"))
    }
}
