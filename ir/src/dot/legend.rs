//! The legend of a DOT picture (what each node shape and edge style means, for the ones
//! the picture uses) and the marks of a module drawn despite verifier errors.

use super::{edge_style, label_text, node_style};
use crate::graph::{EdgeKind, NodeKind, NodeType};
use std::collections::BTreeSet;

/// What the drawn graphs used, in a fixed order (so the legend is deterministic).
#[derive(Default)]
pub(super) struct Used {
    /// Node types, with dynamic command-group nodes apart (they are drawn differently).
    pub nodes: BTreeSet<(bool, NodeType)>,
    pub edges: BTreeSet<u8>,
}

impl Used {
    pub(super) fn node(&mut self, ty: NodeType, kind: &NodeKind) {
        self.nodes.insert((matches!(kind, NodeKind::Dynamic { .. }), ty));
    }

    pub(super) fn edge(&mut self, kind: EdgeKind) {
        if let Some(i) = EdgeKind::ALL.iter().position(|k| *k == kind) {
            self.edges.insert(i as u8);
        }
    }
}

/// A cluster "legend" with one sample node per node style used and one sample edge per
/// edge provenance used. Its IDs start with a space, which no IR name has, so they never
/// meet a graph's.
pub(super) fn write(out: &mut String, used: &Used) {
    if used.nodes.is_empty() && used.edges.is_empty() {
        return;
    }
    out.push_str("\n  subgraph \"cluster_ legend\" {\n    label=\"legend\";\n    style=dashed;\n");
    for (dynamic, ty) in &used.nodes {
        // The style depends on the node type and on whether the node is dynamic only.
        let (name, sample) = match crate::Handle::from_usize(0) {
            Some(dcg) if *dynamic => ("dynamic command group", NodeKind::Dynamic { dcg }),
            _ => (ty.name(), NodeKind::Empty),
        };
        let id = format!(" legend/{}{name}", if *dynamic { "dcg/" } else { "" });
        let mut attrs = vec![format!("label=\"{}\"", label_text(name))];
        attrs.extend(node_style(*ty, &sample).iter().map(|s| s.to_string()));
        out.push_str(&format!("    \"{id}\" [{}];\n", attrs.join(", ")));
    }
    for &i in &used.edges {
        let kind = EdgeKind::ALL[i as usize];
        let (from, to) =
            (format!(" legend/edge/{}/from", kind.keyword()), format!(" legend/edge/{}/to", kind.keyword()));
        out.push_str(&format!("    \"{from}\" [shape=point, label=\"\"];\n    \"{to}\" [shape=point, label=\"\"];\n"));
        let mut attrs: Vec<String> = edge_style(kind).iter().map(|s| s.to_string()).collect();
        attrs.push(format!("label=\"via {}\"", kind.keyword()));
        out.push_str(&format!("    \"{from}\" -> \"{to}\" [{}];\n", attrs.join(", ")));
    }
    out.push_str("  }\n");
}

/// A node with problems: red, with each problem as a label line.
pub(super) fn mark(lines: &mut Vec<String>, attrs: &mut Vec<String>, problems: &[String]) {
    lines.extend(problems.iter().map(|p| format!("! {p}")));
    attrs.extend(["color=red", "fontcolor=red", "penwidth=2"].iter().map(|s| s.to_string()));
}

/// Problems at no node: a red note at the top of the picture.
pub(super) fn notes(out: &mut String, notes: &[String]) {
    if notes.is_empty() {
        return;
    }
    let lines: Vec<String> = notes.iter().map(|n| label_text(&format!("! {n}"))).collect();
    out.push_str(&format!(
        "  \" problems\" [shape=note, color=red, fontcolor=red, label=\"{}\\l\"];\n",
        lines.join("\\l")
    ));
}
