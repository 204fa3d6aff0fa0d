//! Can a modifiable graph whole-graph-update an executable graph? (000 §8.4.2)
//!
//! [`check_update`] applies the rules `cmdgraph_sycl`'s `update_graph` applies, in the same
//! order, and names the first one broken the way CUDA's `cudaGraphExecUpdateResultInfo`
//! does: a result code, the node in each graph, and what to do. The rules:
//!
//! 1. The source holds only empty, barrier, kernel and host-task nodes (A1 in
//!    docs/semantics.md) — else `ErrorNotSupported`.
//! 2. Both graphs have the same device and context — else `ErrorNotSupported`.
//! 3. The executable graph was finalized `updatable` — else `ErrorNotSupported`.
//! 4. The executable graph has no graph-owned allocations — else `ErrorNotSupported`.
//! 5. The graphs are topologically identical ([`crate::identity`]): counts, edges from
//!    corresponding nodes in the same order by the same API call — else
//!    `ErrorTopologyChanged`; node types — else `ErrorNodeTypeChanged`; kernel identity —
//!    else `ErrorFunctionChanged`.
//! 6. Paired kernel nodes pass each argument as the same kind of value (a USM pointer, an
//!    accessor, work-group memory, raw bytes, a scalar of one type) — else
//!    `ErrorParametersChanged`. In SYCL one kernel has captures of fixed types, so no
//!    update can turn an accessor into a pointer; the IR could say it, so it is checked.
//!
//! 7. A paired kernel node (not a dynamic one) keeps its launch kind and dimensions, and a
//!    host task its access list — else `ErrorParametersChanged`; a dynamic node's active
//!    alternative does not switch between a kernel and a host task — else
//!    `ErrorNodeTypeChanged`. These are the executor's (`update_graph`) node rules.
//!
//! Rules 1, 4, 5, 6 and 7 are also applied to every node pair ([`UpdateCheck::nodes`]), so
//! that the report says for each node whether and how it can be updated, as CUDA's
//! per-node result codes do; rule 7 refuses the update when rules 1–6 pass.
//!
//! When the update is possible, [`UpdateCheck::changes`] lists what it would change: every
//! parameter (launch, argument, host-task callback) that differs on paired nodes, with the
//! values of dynamic parameters written out, as the update copies them.

use super::attrs::{self, DynArgs};
use crate::arena::Handle;
use crate::graph::{Alternative, Arg, ArgValue, Edge, Graph, KernelCommand, Node, NodeKind, NodeType};
use crate::identity::{topologically_identical, Mismatch};
use crate::module::Module;
use std::fmt;

/// The result codes of `cudaGraphExecUpdateResult` that a whole-graph update can give.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateResult {
    /// Node or edge counts differ, or an edge joins non-corresponding nodes or was made by
    /// another API call.
    ErrorTopologyChanged,
    /// Paired nodes have different node types.
    ErrorNodeTypeChanged,
    /// Paired kernel nodes launch different kernels.
    ErrorFunctionChanged,
    /// Paired nodes differ in a parameter no update can change.
    ErrorParametersChanged,
    /// Something whole-graph update does not do at all (node type in the source, device or
    /// context, a graph that is not updatable or owns allocations).
    ErrorNotSupported,
}

impl UpdateResult {
    /// The code's name, as CUDA spells it without the `cudaGraphExecUpdate` prefix.
    pub fn name(self) -> &'static str {
        match self {
            UpdateResult::ErrorTopologyChanged => "ErrorTopologyChanged",
            UpdateResult::ErrorNodeTypeChanged => "ErrorNodeTypeChanged",
            UpdateResult::ErrorFunctionChanged => "ErrorFunctionChanged",
            UpdateResult::ErrorParametersChanged => "ErrorParametersChanged",
            UpdateResult::ErrorNotSupported => "ErrorNotSupported",
        }
    }
}

impl fmt::Display for UpdateResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why an update is refused: the result code, where, why and what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpdateFailure {
    /// The result code.
    pub result: UpdateResult,
    /// The node (creation index) in the executable graph, when one is to blame.
    pub exec_node: Option<Handle<Node>>,
    /// The node (creation index) in the source graph, when one is to blame.
    pub source_node: Option<Handle<Node>>,
    /// The edge of each graph, when an edge is to blame.
    pub edges: Option<(Handle<Edge>, Handle<Edge>)>,
    /// What differs, in words.
    pub why: String,
    /// What to do about it.
    pub help: String,
}

/// A parameter whole-graph update would change on a pair of nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamChange {
    /// The node (creation index, the same in both graphs).
    pub node: Handle<Node>,
    /// The parameter (`launch`, `arg 2`, `callback`, ...).
    pub attr: String,
    /// The executable graph's value, as IR text.
    pub old: String,
    /// The source's value, as IR text.
    pub new: String,
}

/// The answer of [`check_update`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpdateCheck {
    /// `Ok` when the source can update the executable graph.
    pub verdict: Result<(), UpdateFailure>,
    /// What the update would change (empty when it is refused).
    pub changes: Vec<ParamChange>,
    /// One verdict per node pair, by creation index, whatever the overall verdict.
    pub nodes: Vec<NodeVerdict>,
}

/// What whole-graph update would do with one pair of nodes (paired by creation index), in
/// the manner of CUDA's per-node `cudaGraphExecUpdateResult`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeVerdict {
    /// The creation index.
    pub index: usize,
    /// The node's name in the executable graph (`None`: only the source has the index).
    pub exec_name: Option<String>,
    /// The node's name in the source (`None`: only the executable graph has the index).
    pub source_name: Option<String>,
    /// The node type (`memcpy`; `memcpy -> kernel` when it changed).
    pub node_type: String,
    /// `None` (CUDA's `Success`) when the update can take this node.
    pub result: Option<UpdateResult>,
    /// `ok`, `parameters changed (updatable): ...`, `topology changed: ...`, `not
    /// supported: ...`.
    pub text: String,
    /// What to do, for a node the update cannot take.
    pub help: &'static str,
}

const HELP_TYPE: &str = "whole-graph update takes sources of empty, barrier, kernel and host_task nodes only (000 §8.4.6, A1); update such a graph with a new finalize";
const HELP_ALLOC: &str =
    "a graph with async_malloc/async_free cannot be whole-graph updated (000 §8.4.3); finalize again instead";
const HELP_TOPOLOGY: &str = "the graphs must have the same nodes in the same creation order, each node's edges made in the same order by the same API call (000 §8.4.2)";
const HELP_NODE_TYPE: &str =
    "nodes are paired by creation order; add the nodes in the same order with the same command types";
const HELP_FUNCTION: &str = "whole-graph update changes kernel parameters and ranges, never the kernel; use a dynamic command group to switch kernels";
const HELP_ARG_KIND: &str = "an update changes argument values, not their kind; pass the same kind of value (or use another kernel and finalize again)";
const HELP_LAUNCH: &str =
    "an update changes a launch's sizes, not its kind (range, nd_range) or dimensions; finalize again";
const HELP_ACCESS: &str = "an update changes a host task's callback, not the memory it declares; finalize again";

/// Checks whether graph `source_graph` of `source` can whole-graph-update the executable
/// graph built from graph `exec_graph` of `exec`.
pub fn check_update(
    exec: &Module,
    exec_graph: Handle<Graph>,
    source: &Module,
    source_graph: Handle<Graph>,
) -> UpdateCheck {
    let mut verdict = refusal(exec, exec_graph, source, source_graph);
    let nodes = match (exec.graphs.try_get(exec_graph), source.graphs.try_get(source_graph)) {
        (Some(e), Some(s)) => node_verdicts(exec, e, source, s),
        _ => Vec::new(),
    };
    // The graph-wide rules pass, but a node the executor refuses (a launch of another kind,
    // a host task's access list) refuses the whole update: the first such node is to blame.
    if verdict.is_ok() {
        if let Some((v, result)) = nodes.iter().find_map(|v| Some((v, v.result?))) {
            let h = Handle::from_usize(v.index);
            let why = v.text.split_once(": ").map_or(v.text.clone(), |(_, why)| why.to_string());
            verdict = Err(fail(result, h, why, v.help));
        }
    }
    let changes = match (&verdict, exec.graphs.try_get(exec_graph), source.graphs.try_get(source_graph)) {
        (Ok(()), Some(e), Some(s)) => changes(exec, e, source, s),
        _ => Vec::new(),
    };
    UpdateCheck { verdict, changes, nodes }
}

/// Incoming edges of each node, in edge creation order.
fn incoming(g: &Graph) -> Vec<Vec<Edge>> {
    let mut out = vec![Vec::new(); g.nodes.len()];
    for (_, e) in g.edges.iter() {
        if let Some(list) = out.get_mut(e.to.index()) {
            list.push(*e);
        }
    }
    out
}

/// Attribute changes between two commands, as `attr old -> new` joined by `, `.
fn attr_changes(exec: &Module, e: &Graph, ke: &NodeKind, source: &Module, s: &Graph, ks: &NodeKind) -> Vec<String> {
    let old = attrs::command_attrs(exec, e, &effective(e, ke), DynArgs::ByValue);
    let new = attrs::command_attrs(source, s, &effective(s, ks), DynArgs::ByValue);
    let mut out = Vec::new();
    for (name, o) in &old {
        let n = new.iter().find(|(k, _)| k == name).map_or("(none)", |(_, v)| v.as_str());
        if o != n {
            out.push(super::change_text(name, o, n));
        }
    }
    out
}

/// The verdict of every node pair: the node-level rules of [`refusal`] and of the
/// executor's `update_graph` (launch shape, host-task access), applied to each pair rather
/// than stopping at the first.
fn node_verdicts(exec: &Module, e: &Graph, source: &Module, s: &Graph) -> Vec<NodeVerdict> {
    use UpdateResult::*;
    let (ie, is) = (incoming(e), incoming(s));
    let count = e.nodes.len().max(s.nodes.len());
    let mut out = Vec::with_capacity(count);
    for index in 0..count {
        let Some(h) = Handle::<Node>::from_usize(index) else { break };
        let (ne, ns) = (e.nodes.try_get(h), s.nodes.try_get(h));
        let verdict = |node_type: String, result: Option<UpdateResult>, text: String, help: &'static str| NodeVerdict {
            index,
            exec_name: ne.map(|n| n.name.clone()),
            source_name: ns.map(|n| n.name.clone()),
            node_type,
            result,
            text,
            help,
        };
        let (ne, ns) = match (ne, ns) {
            (Some(ne), Some(ns)) => (ne, ns),
            (Some(_), None) => {
                let ty = e.node_type(h).name().to_string();
                out.push(verdict(
                    ty,
                    Some(ErrorTopologyChanged),
                    "topology changed: only in the executable graph".into(),
                    HELP_TOPOLOGY,
                ));
                continue;
            }
            (None, Some(_)) => {
                let ty = s.node_type(h).name().to_string();
                out.push(verdict(
                    ty,
                    Some(ErrorTopologyChanged),
                    "topology changed: only in the source".into(),
                    HELP_TOPOLOGY,
                ));
                continue;
            }
            (None, None) => continue,
        };
        let (te, ts) = (e.node_type(h), s.node_type(h));
        if te != ts {
            let ty = format!("{} -> {}", te.name(), ts.name());
            out.push(verdict(ty, Some(ErrorNodeTypeChanged), "node type changed".into(), HELP_NODE_TYPE));
            continue;
        }
        let ty = te.name().to_string();
        // Incoming edges: the same number, from the same creation indices, by the same call.
        let edge_text = |g: &Graph, list: &[Edge]| -> String {
            let names: Vec<String> = list
                .iter()
                .map(|x| {
                    let from = g.nodes.try_get(x.from).map_or("?", |n| n.name.as_str());
                    format!("#{} %{from} (via {})", x.from.index(), x.kind.keyword())
                })
                .collect();
            if names.is_empty() {
                "none".into()
            } else {
                names.join(", ")
            }
        };
        let (ee, es) = (&ie[index], &is[index]);
        let same_edges = ee.len() == es.len() && ee.iter().zip(es).all(|(a, b)| a.from == b.from && a.kind == b.kind);
        if !same_edges {
            let text = format!("topology changed: incoming edges {} -> {}", edge_text(e, ee), edge_text(s, es));
            out.push(verdict(ty, Some(ErrorTopologyChanged), text, HELP_TOPOLOGY));
            continue;
        }
        let changed = attr_changes(exec, e, &ne.kind, source, s, &ns.kind);
        let changed_text =
            if changed.is_empty() { "its parameters are unchanged".to_string() } else { changed.join(", ") };
        match te {
            NodeType::AsyncMalloc | NodeType::AsyncFree => {
                let text = format!("not supported: a graph-owned allocation ({changed_text})");
                out.push(verdict(ty, Some(ErrorNotSupported), text, HELP_ALLOC));
                continue;
            }
            NodeType::Empty | NodeType::Barrier | NodeType::Kernel | NodeType::HostTask => {}
            other => {
                let text = format!(
                    "not supported: whole-graph update takes no {} node, although CUDA updates one ({changed_text})",
                    other.name()
                );
                out.push(verdict(ty, Some(ErrorNotSupported), text, HELP_TYPE));
                continue;
            }
        }
        let (ke, ks) = (effective(e, &ne.kind), effective(s, &ns.kind));
        let refused = match (&ke, &ks) {
            (NodeKind::Kernel(ce), NodeKind::Kernel(cs)) => {
                let name =
                    |m: &Module, c: &KernelCommand| m.kernels.try_get(c.kernel).map_or("?".into(), |k| k.name.clone());
                let (ka, kb) = (name(exec, ce), name(source, cs));
                let kinds = ce.args.iter().zip(&cs.args).enumerate().find_map(|(i, (ae, as_))| {
                    let (x, y) = (arg_kind(e, ae), arg_kind(s, as_));
                    let arg = super::attrs::arg_name(exec, ce.kernel, i);
                    (x != y).then(|| format!("{arg} is {x} in the executable graph and {y} in the source"))
                });
                // A dynamic node's alternatives may launch differently; a kernel node's may not.
                let plain = matches!((&ne.kind, &ns.kind), (NodeKind::Kernel(_), NodeKind::Kernel(_)));
                if ka != kb {
                    Some((ErrorFunctionChanged, format!("function changed: @{ka} -> @{kb}"), HELP_FUNCTION))
                } else if let Some(why) = kinds {
                    Some((ErrorParametersChanged, format!("parameters changed (not updatable): {why}"), HELP_ARG_KIND))
                } else if plain
                    && !(std::mem::discriminant(&ce.launch) == std::mem::discriminant(&cs.launch)
                        && ce.launch.dims() == cs.launch.dims())
                {
                    let why = "the launch changes kind or dimensions; only its sizes are updatable";
                    Some((ErrorParametersChanged, format!("parameters changed (not updatable): {why}"), HELP_LAUNCH))
                } else {
                    None
                }
            }
            (NodeKind::HostTask(te), NodeKind::HostTask(ts)) if te.access != ts.access => {
                let why = "the access list changes; only a host task's callback is updatable";
                Some((ErrorParametersChanged, format!("parameters changed (not updatable): {why}"), HELP_ACCESS))
            }
            (NodeKind::Kernel(_), NodeKind::HostTask(_)) | (NodeKind::HostTask(_), NodeKind::Kernel(_)) => Some((
                ErrorNodeTypeChanged,
                "node type changed: the active alternative switches between a kernel and a host task".into(),
                "use set_active on the executable graph to switch a dynamic command group's alternative",
            )),
            _ => None,
        };
        match refused {
            Some((result, text, help)) => out.push(verdict(ty, Some(result), text, help)),
            None if changed.is_empty() => out.push(verdict(ty, None, "ok".into(), "")),
            None => out.push(verdict(ty, None, format!("parameters changed (updatable): {changed_text}"), "")),
        }
    }
    out
}

fn fail(result: UpdateResult, node: Option<Handle<Node>>, why: String, help: &str) -> UpdateFailure {
    UpdateFailure { result, exec_node: node, source_node: node, edges: None, why, help: help.to_string() }
}

fn refusal(exec: &Module, eg: Handle<Graph>, source: &Module, sg: Handle<Graph>) -> Result<(), UpdateFailure> {
    use UpdateResult::*;
    let (Some(e), Some(s)) = (exec.graphs.try_get(eg), source.graphs.try_get(sg)) else {
        return Err(fail(
            ErrorNotSupported,
            None,
            "a graph handle names no graph".into(),
            "name a graph of each module",
        ));
    };
    for (h, n) in s.nodes.iter() {
        let ty = s.node_type(h);
        if !matches!(ty, NodeType::Empty | NodeType::Barrier | NodeType::Kernel | NodeType::HostTask) {
            let mut f = fail(
                ErrorNotSupported,
                None,
                format!("the source's node %{} has type {}", n.name, ty.name()),
                "whole-graph update takes sources of empty, barrier, kernel and host_task nodes only (000 §8.4.6, A1); update such a graph with a new finalize",
            );
            f.source_node = Some(h);
            f.exec_node = e.nodes.try_get(h).map(|_| h);
            return Err(f);
        }
    }
    if (e.device, e.context) != (s.device, s.context) {
        let why = format!(
            "the executable graph has device({}) context({}) and the source device({}) context({})",
            e.device, e.context, s.device, s.context
        );
        return Err(fail(
            ErrorNotSupported,
            None,
            why,
            "build the source for the executable graph's device and context",
        ));
    }
    if !e.properties.updatable {
        let why = "the executable graph was not finalized with property `updatable`".to_string();
        return Err(fail(ErrorNotSupported, None, why, "add `updatable` to the graph's properties(...)"));
    }
    let alloc =
        e.nodes.iter().find(|(_, n)| matches!(n.kind, NodeKind::AsyncMalloc { .. } | NodeKind::AsyncFree { .. }));
    if let Some((h, n)) = alloc {
        let why = format!("the executable graph owns allocations (%{} has type {})", n.name, e.node_type(h).name());
        let mut f = fail(
            ErrorNotSupported,
            None,
            why,
            "a graph with async_malloc/async_free cannot be whole-graph updated (000 §8.4.3); finalize again instead",
        );
        f.exec_node = Some(h);
        return Err(f);
    }
    if let Err(m) = topologically_identical(exec, eg, source, sg) {
        let (result, help) = match m.mismatch {
            Mismatch::NodeType { .. } => (
                ErrorNodeTypeChanged,
                "nodes are paired by creation order; add the nodes in the same order with the same command types",
            ),
            Mismatch::Kernel { .. } => (
                ErrorFunctionChanged,
                "whole-graph update changes kernel parameters and ranges, never the kernel; use a dynamic command group to switch kernels",
            ),
            _ => (
                ErrorTopologyChanged,
                "the graphs must have the same nodes in the same creation order, each node's edges made in the same order by the same API call (000 §8.4.2)",
            ),
        };
        let node = m.node.filter(|h| e.nodes.try_get(*h).is_some() || s.nodes.try_get(*h).is_some());
        let mut f = fail(result, None, mismatch_words(&m.mismatch, e, s), help);
        f.exec_node = node.filter(|h| e.nodes.try_get(*h).is_some());
        f.source_node = node.filter(|h| s.nodes.try_get(*h).is_some());
        f.edges = m.edges;
        return Err(f);
    }
    for ((h, ne), (_, ns)) in e.nodes.iter().zip(s.nodes.iter()) {
        let (Some(ce), Some(cs)) = (kernel_command(e, &ne.kind), kernel_command(s, &ns.kind)) else { continue };
        for (i, (ae, as_)) in ce.args.iter().zip(&cs.args).enumerate() {
            let (ke, ks) = (arg_kind(e, ae), arg_kind(s, as_));
            if ke != ks {
                let arg = super::attrs::arg_name(exec, ce.kernel, i);
                let why = format!("{arg} is {ke} in the executable graph and {ks} in the source");
                return Err(fail(
                    ErrorParametersChanged,
                    Some(h),
                    why,
                    "an update changes argument values, not their kind; pass the same kind of value (or use another kernel and finalize again)",
                ));
            }
        }
    }
    Ok(())
}

/// `Mismatch` in words, with node names in place of indices.
fn mismatch_words(m: &Mismatch, e: &Graph, s: &Graph) -> String {
    let name = |g: &Graph, h: Handle<Node>| g.nodes.try_get(h).map_or("?".to_string(), |n| format!("%{}", n.name));
    match m {
        Mismatch::MissingGraph => "a graph handle names no graph".into(),
        Mismatch::NodeCount { a, b } => format!("the executable graph has {a} node(s) and the source {b}"),
        Mismatch::EdgeCount { a, b } => format!("the executable graph has {a} edge(s) and the source {b}"),
        Mismatch::NodeType { a, b } => format!("node types differ ({} vs {})", a.name(), b.name()),
        Mismatch::Kernel { a, b } => format!("kernels differ (@{a} vs @{b})"),
        Mismatch::Device { a, b } => {
            format!("the node runs on device {a} in the executable graph and {b} in the source")
        }
        Mismatch::InDegree { a, b } => {
            format!("the node has {a} incoming edge(s) in the executable graph and {b} in the source")
        }
        Mismatch::EdgeSource { index, a, b } => format!(
            "incoming edge {index} comes from node #{} {} in the executable graph and from node #{} {} in the source",
            a.index(),
            name(e, *a),
            b.index(),
            name(s, *b)
        ),
        Mismatch::EdgeProvenance { index, a, b } => format!(
            "incoming edge {index} was made by `{}` in the executable graph and by `{}` in the source",
            a.keyword(),
            b.keyword()
        ),
    }
}

/// The kernel command a node runs: its own, or its dynamic command group's active one.
fn kernel_command<'g>(g: &'g Graph, kind: &'g NodeKind) -> Option<&'g KernelCommand> {
    match kind {
        NodeKind::Kernel(cmd) => Some(cmd),
        NodeKind::Dynamic { dcg } => {
            match g.dcgs.try_get(*dcg)?.alternatives.get(g.dcgs.try_get(*dcg)?.active as usize)? {
                Alternative::Kernel(cmd) => Some(cmd),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The kind of value an argument passes (a dynamic parameter passes its value's kind).
fn arg_kind(g: &Graph, arg: &Arg) -> String {
    let value = match arg {
        Arg::Value(v) => v,
        Arg::Dyn(p) => match g.dyn_params.try_get(*p) {
            Some(p) => &p.value,
            None => return "an unknown dynamic parameter".into(),
        },
    };
    match value {
        ArgValue::Scalar(lit) => match lit.ty {
            Some(ty) => format!("a {ty} scalar"),
            None => "a scalar".into(),
        },
        ArgValue::Pointer(_) => "a pointer".into(),
        ArgValue::Accessor(_) => "an accessor".into(),
        ArgValue::Bytes(b) => format!("{} raw byte(s)", b.len()),
        ArgValue::Local { elem, .. } => format!("work-group memory of {elem}"),
    }
}

/// The command a node runs once dynamic objects are resolved: a dynamic node's active
/// alternative, as whole-graph update copies it.
fn effective(g: &Graph, kind: &NodeKind) -> NodeKind {
    match kind {
        NodeKind::Dynamic { dcg } => match g.dcgs.try_get(*dcg).and_then(|d| d.alternatives.get(d.active as usize)) {
            Some(Alternative::Kernel(cmd)) => NodeKind::Kernel(cmd.clone()),
            Some(Alternative::HostTask(task)) => NodeKind::HostTask(task.clone()),
            Some(Alternative::Other(k)) => (**k).clone(),
            None => kind.clone(),
        },
        other => other.clone(),
    }
}

/// Parameters that differ on paired kernel and host-task nodes.
fn changes(exec: &Module, e: &Graph, source: &Module, s: &Graph) -> Vec<ParamChange> {
    let mut out = Vec::new();
    for ((h, ne), (_, ns)) in e.nodes.iter().zip(s.nodes.iter()) {
        if !matches!(e.node_type(h), NodeType::Kernel | NodeType::HostTask) {
            continue;
        }
        let old = attrs::command_attrs(exec, e, &effective(e, &ne.kind), DynArgs::ByValue);
        let new = attrs::command_attrs(source, s, &effective(s, &ns.kind), DynArgs::ByValue);
        for (name, o) in &old {
            let n = new.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).unwrap_or_else(|| "(none)".into());
            if *o != n {
                out.push(ParamChange { node: h, attr: name.clone(), old: o.clone(), new: n });
            }
        }
    }
    out
}

/// Where each graph came from, for locations in the report.
pub struct Sources<'a> {
    /// The executable graph's file name and text.
    pub exec: (&'a str, &'a str),
    /// The source graph's file name and text.
    pub source: (&'a str, &'a str),
}

impl UpdateCheck {
    /// The report `cmdgraph diff --update-check` prints: `ok: ...` and a note listing each
    /// parameter the update would change, or `error: ...` with the result code, the node in
    /// each graph (with `file:line:col` when `files` is given), the edges, why and help.
    pub fn render(
        &self,
        exec: (&Module, Handle<Graph>),
        source: (&Module, Handle<Graph>),
        files: Option<&Sources<'_>>,
    ) -> String {
        let (e, s) = (exec.0.graphs.try_get(exec.1), source.0.graphs.try_get(source.1));
        let gname = |g: Option<&Graph>| g.map_or("?".to_string(), |g| format!("@{}", g.name));
        let mut out = String::new();
        let at = |g: Option<&Graph>, h: Handle<Node>, file: Option<(&str, &str)>| -> String {
            let Some(g) = g else { return "?".into() };
            let Some(n) = g.nodes.try_get(h) else { return format!("node #{}", h.index()) };
            let mut t = format!("node #{} %{}", h.index(), n.name);
            if let Some((name, text)) = file {
                let span = g.nodes.span(h);
                if span.is_defined() {
                    let (line, col) = crate::diag::line_col(text, span.start as usize);
                    t.push_str(&format!(" ({name}:{line}:{col})"));
                }
            }
            t
        };
        match &self.verdict {
            Ok(()) => {
                // A possible update is a success: what it would write is information, listed
                // under the note, not warnings (nothing is wrong; the exit code is 0).
                out.push_str(&format!("ok: {} can be updated from {}\n", gname(e), gname(s)));
                let nodes: std::collections::BTreeSet<_> = self.changes.iter().map(|c| c.node).collect();
                let colon = if self.changes.is_empty() { "" } else { ":" };
                out.push_str(&format!(
                    "note: the update would change {} parameter(s) on {} node(s){colon}\n",
                    self.changes.len(),
                    nodes.len()
                ));
                for c in &self.changes {
                    let n = e.and_then(|g| g.nodes.try_get(c.node)).map_or("?".to_string(), |n| n.name.clone());
                    out.push_str(&format!("  %{n}: {}\n", super::change_text(&c.attr, &c.old, &c.new)));
                }
            }
            Err(f) => {
                out.push_str(&format!("error: {} cannot be updated from {}: {}\n", gname(e), gname(s), f.result));
                if let Some(h) = f.exec_node {
                    out.push_str(&format!("  executable graph: {}\n", at(e, h, files.map(|x| x.exec))));
                }
                if let Some(h) = f.source_node {
                    out.push_str(&format!("  source graph:     {}\n", at(s, h, files.map(|x| x.source))));
                }
                if let Some((ea, eb)) = f.edges {
                    let edge = |g: Option<&Graph>, h: Handle<Edge>| {
                        g.and_then(|g| {
                            let x = g.edges.try_get(h)?;
                            let n = |h| g.nodes.try_get(h).map_or("?", |n: &Node| n.name.as_str());
                            Some(format!("%{} -> %{} (via {})", n(x.from), n(x.to), x.kind.keyword()))
                        })
                        .unwrap_or_else(|| "?".into())
                    };
                    out.push_str(&format!("  edges:            {} / {}\n", edge(e, ea), edge(s, eb)));
                }
                out.push_str(&format!("  why: {}\n  help: {}\n", f.why, f.help));
            }
        }
        out.push_str(&self.render_nodes());
        out
    }

    /// The per-node section: one line per creation index with the node type, the verdict
    /// and CUDA's result code, then the counts.
    pub fn render_nodes(&self) -> String {
        let mut out = String::from("per node (paired by creation order):\n");
        let (mut ok, mut updatable, mut refused) = (0, 0, 0);
        for v in &self.nodes {
            let name = match (&v.exec_name, &v.source_name) {
                (Some(a), Some(b)) if a == b => format!("%{a}"),
                (Some(a), Some(b)) => format!("%{a} / %{b}"),
                (Some(a), None) | (None, Some(a)) => format!("%{a}"),
                (None, None) => "?".into(),
            };
            let code = v.result.map_or("Success", UpdateResult::name);
            out.push_str(&format!("  #{} {name} {}: {} [{code}]\n", v.index, v.node_type, v.text));
            match v.result {
                Some(_) => refused += 1,
                None if v.text == "ok" => ok += 1,
                None => updatable += 1,
            }
        }
        out.push_str(&format!(
            "summary: {} node(s): {ok} unchanged, {updatable} updatable with changed parameters, {refused} not updatable; {}\n",
            self.nodes.len(),
            if self.verdict.is_ok() { "the update is possible" } else { "the update is refused" }
        ));
        out
    }
}
