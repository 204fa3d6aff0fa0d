//! A picture of a diff: one DOT graph holding the union of both modules, coloured by change.
//!
//! Every graph pair is a cluster. A's nodes and edges are drawn (removed ones red and
//! dashed, changed ones orange with the changed attributes in the label, the rest grey),
//! then B's additions in green; an added edge between nodes both modules have joins the
//! nodes drawn from A. Changes that are no node or edge (graph properties, dynamic
//! parameters, kernels, memory) are listed in the cluster's label or a note. A legend
//! explains the colours. IDs are built from positions, never from names, so any name
//! gives valid DOT.

use super::attrs;
use super::{Entry, GraphDiff, ModuleDiff, Subject};
use crate::graph::{Edge, Graph, Node};
use crate::module::Module;
use std::collections::{BTreeMap, BTreeSet};

/// How an element changed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Status {
    Added,
    Removed,
    Changed,
    Same,
}

impl Status {
    /// DOT attributes: colour, style and pen width.
    fn style(self) -> &'static str {
        match self {
            Status::Added => "color=\"#2e7d32\", fontcolor=\"#1b5e20\", penwidth=2",
            Status::Removed => "color=\"#c62828\", fontcolor=\"#b71c1c\", style=dashed, penwidth=2",
            Status::Changed => "color=\"#ef6c00\", fontcolor=\"#e65100\", penwidth=2",
            Status::Same => "color=\"#9e9e9e\", fontcolor=\"#000000\"",
        }
    }

    fn sign(self) -> &'static str {
        match self {
            Status::Added => "+ ",
            Status::Removed => "- ",
            Status::Changed => "~ ",
            Status::Same => "",
        }
    }
}

/// Escapes one label line: graphviz reads `\x` escapes and `&name;` entities in labels.
fn esc(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '&' => out.push_str("&amp;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A quoted, left-aligned multi-line label.
fn label(lines: &[String]) -> String {
    let escaped: Vec<String> = lines.iter().map(|l| esc(l)).collect();
    format!("\"{}\\l\"", escaped.join("\\l"))
}

/// Labels are kept readable: very long IR lines are cut.
fn cut(text: &str) -> String {
    const MAX: usize = 72;
    if text.chars().count() <= MAX {
        text.to_string()
    } else {
        let head: String = text.chars().take(MAX - 3).collect();
        format!("{head}...")
    }
}

/// Draws `diff` (computed from `a` and `b`) as one DOT digraph.
pub fn to_dot(a: &Module, b: &Module, diff: &ModuleDiff) -> String {
    let mut out = String::new();
    out.push_str("// cmdgraph diff\n");
    out.push_str("digraph \"cmdgraph_diff\" {\n");
    out.push_str("  compound=true;\n  fontname=\"monospace\";\n  rankdir=TB;\n");
    out.push_str("  node [fontname=\"monospace\", shape=box, style=rounded];\n  edge [fontname=\"monospace\"];\n");
    legend(&mut out);
    if !diff.module.is_empty() {
        // A kernel body's hunks would not fit a note: its headline says how much changed.
        let headline = |e: &super::Entry| e.to_string().lines().next().unwrap_or_default().to_string();
        let lines: Vec<String> = diff.module.iter().map(|e| cut(&headline(e))).collect();
        out.push_str(&format!("  \"module\" [shape=note, style=solid, label={}];\n", label(&lines)));
    }
    for (gi, g) in diff.graphs.iter().enumerate() {
        let ga = g.a.as_deref().and_then(|n| a.graph_by_name(n)).and_then(|h| a.graphs.try_get(h));
        let gb = g.b.as_deref().and_then(|n| b.graph_by_name(n)).and_then(|h| b.graphs.try_get(h));
        cluster(&mut out, gi, g, (a, ga), (b, gb));
    }
    out.push_str("}\n");
    out
}

fn legend(out: &mut String) {
    out.push_str(
        "\n  subgraph \"cluster_legend\" {\n    label=\"legend\";\n    style=dashed;\n    color=\"#9e9e9e\";\n",
    );
    let items = [
        (Status::Added, "added"),
        (Status::Removed, "removed"),
        (Status::Changed, "changed"),
        (Status::Same, "unchanged"),
    ];
    for (status, name) in items {
        out.push_str(&format!("    \"legend/{name}\" [label=\"{name}\", {}];\n", status.style()));
    }
    out.push_str(
        "    \"legend/added\" -> \"legend/removed\" -> \"legend/changed\" -> \"legend/unchanged\" [style=invis];\n",
    );
    out.push_str("  }\n");
}

type Side<'m> = (&'m Module, Option<&'m Graph>);

fn cluster(out: &mut String, gi: usize, g: &GraphDiff, (ma, ga): Side<'_>, (mb, gb): Side<'_>) {
    let title = match (&g.a, &g.b) {
        (Some(x), Some(y)) if x == y => format!("@{x}"),
        (Some(x), Some(y)) => format!("@{x} -> @{y} (renamed)"),
        (None, Some(y)) => format!("@{y} (added)"),
        (Some(x), None) => format!("@{x} (removed)"),
        (None, None) => "?".to_string(),
    };
    let mut title_lines = vec![title];
    let is_graph_level = |s: &Subject| !matches!(s, Subject::Node(_) | Subject::Edge { .. });
    title_lines.extend(g.entries.iter().filter(|e| is_graph_level(e.subject())).map(|e| cut(&e.to_string())));
    out.push_str(&format!("\n  subgraph \"cluster_{gi}\" {{\n    label={};\n    labeljust=l;\n", label(&title_lines)));
    let status = |whole: Status| if g.a.is_none() || g.b.is_none() { whole } else { Status::Same };
    out.push_str(&format!("    {};\n", status_of_cluster(g)));

    // Node statuses and changed attributes, by name.
    let mut removed = BTreeSet::new();
    let mut added = BTreeSet::new();
    let mut changed: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut edge_status: BTreeMap<(&str, &str), Status> = BTreeMap::new();
    // Members of fusions -> their fused node.
    let mut absorbed: BTreeMap<&str, &str> = BTreeMap::new();
    for e in &g.entries {
        match e {
            Entry::Removed { subject: Subject::Node(n), .. } => {
                removed.insert(n.as_str());
            }
            Entry::Added { subject: Subject::Node(n), .. } => {
                added.insert(n.as_str());
            }
            Entry::Changed { subject: Subject::Node(n), attr, old, new } => {
                changed.entry(n.as_str()).or_default().push(cut(&format!("~ {}", super::change_text(attr, old, new))));
            }
            // The fused node is drawn once, changed; its members are not drawn apart.
            Entry::Fused { subject: Subject::Node(n), from, .. } => {
                changed.entry(n.as_str()).or_default().push(cut(&format!("~ {}", super::fused_from(from))));
                for m in from.iter().filter(|m| *m != n) {
                    absorbed.insert(m.as_str(), n.as_str());
                }
            }
            Entry::Removed { subject: Subject::Edge { from, to }, .. } => {
                edge_status.insert((from, to), Status::Removed);
            }
            Entry::Added { subject: Subject::Edge { from, to }, .. } => {
                edge_status.insert((from, to), Status::Added);
            }
            Entry::Changed { subject: Subject::Edge { from, to }, .. } => {
                edge_status.insert((from, to), Status::Changed);
            }
            _ => {}
        }
    }

    // A's nodes, then B's additions; `ids` maps a name to its drawn node.
    let mut ids: BTreeMap<String, String> = BTreeMap::new();
    let mut drawn = 0usize;
    let mut node = |out: &mut String, id: String, command: String, n: &Node, st: Status| {
        let mut lines = vec![format!("{}%{}", st.sign(), n.name), cut(&command)];
        if st == Status::Changed {
            lines.extend(changed.get(n.name.as_str()).cloned().unwrap_or_default());
        }
        out.push_str(&format!("    \"{id}\" [label={}, {}];\n", label(&lines), st.style()));
        ids.entry(n.name.clone()).or_insert(id);
        drawn += 1;
    };
    if let Some(x) = ga {
        for (h, n) in x.nodes.iter() {
            if absorbed.contains_key(n.name.as_str()) {
                continue;
            }
            let st = if removed.contains(n.name.as_str()) {
                Status::Removed
            } else if changed.contains_key(n.name.as_str()) {
                Status::Changed
            } else {
                status(Status::Removed)
            };
            // A changed node shows its new command; its label lists what changed.
            let now = match (st, gb) {
                (Status::Changed, Some(y)) => {
                    y.node_by_name(&n.name).and_then(|h| y.nodes.try_get(h)).map(|m| (mb, y, m))
                }
                _ => None,
            };
            let (m, graph, shown) = now.unwrap_or((ma, x, n));
            node(out, format!("{gi}/a{}", h.index()), attrs::command_text(m, graph, &shown.kind), n, st);
        }
    }
    if let Some(y) = gb {
        for (h, n) in y.nodes.iter() {
            if added.contains(n.name.as_str()) || ga.is_none() {
                node(out, format!("{gi}/b{}", h.index()), attrs::command_text(mb, y, &n.kind), n, Status::Added);
            }
        }
    }
    // A member's edges are drawn to and from its fused node.
    for (m, n) in &absorbed {
        if let Some(id) = ids.get(*n).cloned() {
            ids.insert(m.to_string(), id);
        }
    }
    if drawn == 0 {
        out.push_str(&format!("    \"{gi}/empty\" [label=\"(empty graph)\", shape=plaintext];\n"));
    }
    let mut drawn_edges: BTreeSet<(String, String, String)> = BTreeSet::new();
    let mut edge = |out: &mut String, graph: &Graph, e: &Edge, whole: Status, only_added: bool| {
        let name = |h| graph.nodes.try_get(h).map(|n| n.name.as_str());
        let (Some(from), Some(to)) = (name(e.from), name(e.to)) else { return };
        // A removed edge of a member is listed under its own ends.
        let own = edge_status.get(&(from, to)).copied();
        // Seen from the fused node: inside a fusion nothing is drawn, and edges of several
        // members that coincide are drawn once.
        let (from, to) = if only_added {
            (from, to)
        } else {
            (absorbed.get(from).copied().unwrap_or(from), absorbed.get(to).copied().unwrap_or(to))
        };
        if from == to {
            return;
        }
        let st = edge_status.get(&(from, to)).copied().or(own.filter(|_| !only_added)).unwrap_or(whole);
        if only_added && st != Status::Added {
            return;
        }
        let (Some(f), Some(t)) = (ids.get(from), ids.get(to)) else { return };
        let mut label_text = format!("{}{}", st.sign(), e.kind.keyword());
        if st == Status::Changed {
            label_text = g
                .entries
                .iter()
                .find_map(|x| match x {
                    Entry::Changed { subject: Subject::Edge { from: a, to: b }, old, new, .. }
                        if a == from && b == to =>
                    {
                        Some(format!("~ {old} -> {new}"))
                    }
                    _ => None,
                })
                .unwrap_or(label_text);
        }
        if !absorbed.is_empty() && !drawn_edges.insert((f.clone(), t.clone(), label_text.clone())) {
            return;
        }
        out.push_str(&format!("    \"{f}\" -> \"{t}\" [label=\"{}\", {}];\n", esc(&label_text), st.style()));
    };
    if let Some(x) = ga {
        for (_, e) in x.edges.iter() {
            edge(out, x, e, status(Status::Removed), false);
        }
    }
    if let Some(y) = gb {
        for (_, e) in y.edges.iter() {
            let whole = if ga.is_some() { Status::Same } else { Status::Added };
            edge(out, y, e, whole, ga.is_some());
        }
    }
    out.push_str("  }\n");
}

/// The cluster's border: green for an added graph, red dashed for a removed one.
fn status_of_cluster(g: &GraphDiff) -> &'static str {
    match (&g.a, &g.b) {
        (None, _) => "color=\"#2e7d32\"",
        (_, None) => "color=\"#c62828\"; style=dashed",
        _ if g.is_empty() => "color=\"#9e9e9e\"",
        _ => "color=\"#ef6c00\"",
    }
}
