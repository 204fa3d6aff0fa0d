//! The differences of one pair of graphs: header, queues, dynamic objects, nodes, edges.

use super::attrs::{self, Attr};
use super::fused::Fusions;
use super::{compare_attrs, Entry, GraphDiff, Subject};
use crate::arena::Handle;
use crate::dot::label;
use crate::graph::{Edge, Graph, NodeKind, Queue};
use crate::module::Module;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Compares graph `ga` of `a` with graph `gb` of `b`; a missing side makes every entity of
/// the other an addition or a removal.
pub(super) fn diff_graph(a: &Module, ga: Option<Handle<Graph>>, b: &Module, gb: Option<Handle<Graph>>) -> GraphDiff {
    let empty = Graph::default();
    let graph_a = ga.and_then(|h| a.graphs.try_get(h));
    let graph_b = gb.and_then(|h| b.graphs.try_get(h));
    let mut out = Vec::new();
    let (x, y) = (graph_a.unwrap_or(&empty), graph_b.unwrap_or(&empty));
    if let (Some(x), Some(y)) = (graph_a, graph_b) {
        compare_attrs(&Subject::Graph(y.name.clone()), &header(x), &header(y), &mut out);
    }
    let side = Sides { a, b, x, y };
    side.named(
        &mut out,
        &x.queues,
        &y.queues,
        |q| &q.name,
        |_, q| queue_attrs(q),
        |_, q| queue_text(q),
        Subject::Queue,
    );
    side.named(
        &mut out,
        &x.dyn_params,
        &y.dyn_params,
        |p| &p.name,
        |(m, g), p| vec![("value".to_string(), label::arg_value(m, g, &p.value))],
        |(m, g), p| format!("dyn %{} = {}", p.name, label::arg_value(m, g, &p.value)),
        Subject::DynParam,
    );
    side.named(
        &mut out,
        &x.dcgs,
        &y.dcgs,
        |d| &d.name,
        |(m, g), d| attrs::dcg_attrs(m, g, d),
        |(m, g), d| attrs::dcg_text(m, g, d),
        Subject::Dcg,
    );
    let fusions = super::fused::find(a, x, b, y);
    side.nodes(&mut out, &fusions);
    side.edges(&mut out, &fusions);
    GraphDiff { a: graph_a.map(|g| g.name.clone()), b: graph_b.map(|g| g.name.clone()), entries: out }
}

/// The two graphs and the modules their references resolve in.
struct Sides<'m> {
    a: &'m Module,
    b: &'m Module,
    x: &'m Graph,
    y: &'m Graph,
}

fn header(g: &Graph) -> Vec<Attr> {
    vec![
        ("properties".to_string(), format!("({})", g.properties.keywords().join(", "))),
        ("device".to_string(), g.device.to_string()),
        ("context".to_string(), g.context.to_string()),
    ]
}

fn queue_attrs(q: &Queue) -> Vec<Attr> {
    vec![("in_order".to_string(), q.in_order.to_string()), ("discard_events".to_string(), q.discard_events.to_string())]
}

fn queue_text(q: &Queue) -> String {
    let mut s = format!("queue @{}", q.name);
    if q.in_order {
        s.push_str(" in_order");
    }
    if q.discard_events {
        s.push_str(" discard_events");
    }
    s
}

/// First position of each name (a verified graph has each name once; an unverified one
/// pairs its first occurrences).
fn index_by_name<'g, T>(items: impl Iterator<Item = &'g T>, name: impl Fn(&T) -> &str) -> BTreeMap<String, usize>
where
    T: 'g,
{
    let mut map = BTreeMap::new();
    for (i, item) in items.enumerate() {
        map.entry(name(item).to_string()).or_insert(i);
    }
    map
}

type Ctx<'m> = (&'m Module, &'m Graph);

impl<'m> Sides<'m> {
    /// Entities paired by name: removed and changed in A's order, then B's additions.
    #[allow(clippy::too_many_arguments)]
    fn named<T>(
        &self,
        out: &mut Vec<Entry>,
        xs: &crate::arena::Arena<T>,
        ys: &crate::arena::Arena<T>,
        name: impl Fn(&T) -> &str,
        attrs_of: impl Fn(Ctx<'m>, &T) -> Vec<Attr>,
        text_of: impl Fn(Ctx<'m>, &T) -> String,
        subject: impl Fn(String) -> Subject,
    ) {
        let in_b = index_by_name(ys.iter().map(|(_, t)| t), &name);
        let in_a = index_by_name(xs.iter().map(|(_, t)| t), &name);
        let (ca, cb) = ((self.a, self.x), (self.b, self.y));
        for (_, t) in xs.iter() {
            let s = subject(name(t).to_string());
            match in_b.get(name(t)).and_then(|i| Handle::from_usize(*i)).and_then(|h| ys.try_get(h)) {
                Some(u) => compare_attrs(&s, &attrs_of(ca, t), &attrs_of(cb, u), out),
                None => out.push(Entry::Removed { subject: s, text: text_of(ca, t), note: None }),
            }
        }
        for (_, u) in ys.iter() {
            if !in_a.contains_key(name(u)) {
                out.push(Entry::Added { subject: subject(name(u).to_string()), text: text_of(cb, u), note: None });
            }
        }
    }

    fn nodes(&self, out: &mut Vec<Entry>, fusions: &Fusions) {
        let (x, y) = (self.x, self.y);
        let in_b = index_by_name(y.nodes.iter().map(|(_, n)| n), |n| &n.name);
        let in_a = index_by_name(x.nodes.iter().map(|(_, n)| n), |n| &n.name);
        // B's additions that an inlined sub-graph explains, by the A node they came from.
        let mut origins: Vec<Option<String>> = Vec::with_capacity(y.nodes.len());
        let mut inlined: BTreeMap<String, usize> = BTreeMap::new();
        for (_, n) in y.nodes.iter() {
            let origin = if in_a.contains_key(&n.name) { None } else { inlined_origin(self.a, x, &n.name, &in_b) };
            if let Some((parent, _)) = &origin {
                *inlined.entry(parent.clone()).or_insert(0) += 1;
            }
            origins.push(origin.map(|(parent, from)| format!("inlined from %{parent}: {from}")));
        }
        for (_, na) in x.nodes.iter() {
            let subject = Subject::Node(na.name.clone());
            // A member of a fusion is shown once, in its fused node's entry.
            if fusions.absorbed.contains_key(&na.name) {
                continue;
            }
            let Some(nb) = in_b.get(&na.name).and_then(|i| Handle::from_usize(*i)).and_then(|h| y.nodes.try_get(h))
            else {
                let note = inlined.get(&na.name).map(|k| format!("inlined as {k} node(s)")).or_else(|| {
                    fusions.temporaries.get(&na.name).map(|f| format!("temporary of the nodes fused into %{f}"))
                });
                let text = attrs::node_text(self.a, x, na);
                out.push(Entry::Removed { subject, text, note });
                continue;
            };
            if let Some(from) = fusions.members.get(&na.name) {
                let text = attrs::command_text(self.b, y, &nb.kind);
                out.push(Entry::Fused { subject: subject.clone(), from: from.clone(), text });
                continue;
            }
            if attrs::command_keyword(&na.kind) != attrs::command_keyword(&nb.kind) {
                // A different command: one line with both statements says more than a list
                // of attributes that only one side has.
                let old = attrs::command_text(self.a, x, &na.kind);
                let new = attrs::command_text(self.b, y, &nb.kind);
                out.push(Entry::Changed { subject: subject.clone(), attr: "command".into(), old, new });
                let queue = |m, g, n| attrs::node_attrs(m, g, n).pop().into_iter().collect::<Vec<_>>();
                compare_attrs(&subject, &queue(self.a, x, na), &queue(self.b, y, nb), out);
            } else {
                compare_attrs(&subject, &attrs::node_attrs(self.a, x, na), &attrs::node_attrs(self.b, y, nb), out);
            }
        }
        for ((_, nb), note) in y.nodes.iter().zip(origins) {
            if !in_a.contains_key(&nb.name) {
                let text = attrs::node_text(self.b, y, nb);
                out.push(Entry::Added { subject: Subject::Node(nb.name.clone()), text, note });
            }
        }
    }

    fn edges(&self, out: &mut Vec<Entry>, fusions: &Fusions) {
        let name = |g: &Graph, e: &Edge| {
            let n = |h| g.nodes.try_get(h).map_or("?".to_string(), |n| n.name.clone());
            (n(e.from), n(e.to))
        };
        // A's edges name a fusion's members by the fused node: an edge into %k0 that now
        // goes into %k2 is the same dependency, not a removal and an addition.
        let as_fused = |(from, to): (String, String)| {
            let map = |n: String| fusions.absorbed.get(&n).cloned().unwrap_or(n);
            (map(from), map(to))
        };
        let mut seen_a: BTreeSet<(String, String)> = BTreeSet::new();
        if !fusions.absorbed.is_empty() {
            seen_a.extend(self.x.edges.iter().map(|(_, e)| name(self.x, e)).filter(|e| as_fused(e.clone()) == *e));
        }
        // B's edges by ends, in creation order; duplicates pair up in order.
        let mut by_ends: BTreeMap<(String, String), VecDeque<usize>> = BTreeMap::new();
        let ys: Vec<&Edge> = self.y.edges.iter().map(|(_, e)| e).collect();
        for (i, e) in ys.iter().enumerate() {
            by_ends.entry(name(self.y, e)).or_default().push_back(i);
        }
        let mut matched = vec![false; ys.len()];
        let text = |from: &str, to: &str, e: &Edge| format!("edge %{from} -> %{to} (via {})", e.kind.keyword());
        // Dependencies of a fused node (as seen from it) that B does not have.
        let mut gone: BTreeSet<(String, String)> = BTreeSet::new();
        // An edge of A that B lacks is listed as A had it: the fused node's name in its place
        // would list an edge that never existed (`%t -> %k2` for A's `%t -> %k0`).
        let removed = |original: &(String, String), ea: &Edge| {
            let (from, to) = original.clone();
            let members: Vec<String> = [&from, &to]
                .into_iter()
                .filter_map(|n| fusions.absorbed.get(n).map(|f| format!("%{n} was fused into %{f}")))
                .collect();
            let note = (!members.is_empty()).then(|| members.join(", "));
            Entry::Removed { text: text(&from, &to, ea), subject: Subject::Edge { from, to }, note }
        };
        for (_, ea) in self.x.edges.iter() {
            let original = name(self.x, ea);
            let (from, to) = as_fused(original.clone());
            // Edges inside a fusion disappear with it; edges that now coincide (%k0 and
            // %k1 both after %a) are one dependency of the fused node: matched once, and if
            // B lacks it, each is listed as removed.
            if (&from, &to) != (&original.0, &original.1) && (from == to || !seen_a.insert((from.clone(), to.clone())))
            {
                if from != to && gone.contains(&(from.clone(), to.clone())) {
                    out.push(removed(&original, ea));
                }
                continue;
            }
            let subject = Subject::Edge { from: from.clone(), to: to.clone() };
            let partner = by_ends.get_mut(&(from.clone(), to.clone())).and_then(VecDeque::pop_front);
            match partner.and_then(|i| Some((i, *ys.get(i)?))) {
                Some((i, eb)) => {
                    if let Some(m) = matched.get_mut(i) {
                        *m = true;
                    }
                    if ea.kind != eb.kind {
                        let (old, new) = (format!("via {}", ea.kind.keyword()), format!("via {}", eb.kind.keyword()));
                        out.push(Entry::Changed { subject, attr: "provenance".into(), old, new });
                    }
                }
                None => {
                    gone.insert((from, to));
                    out.push(removed(&original, ea));
                }
            }
        }
        for (eb, done) in ys.iter().zip(matched) {
            if !done {
                let (from, to) = name(self.y, eb);
                let t = text(&from, &to, eb);
                out.push(Entry::Added { subject: Subject::Edge { from, to }, text: t, note: None });
            }
        }
    }
}

/// Where a node of B named `<parent>.<rest>` came from when `%parent` is a `subgraph` node
/// of graph A that B no longer has and `rest` names a node of the child graph (itself
/// possibly `<subgraph node>.<node>` of a grandchild): `(parent, "@child %rest")`.
fn inlined_origin(
    module: &Module,
    graph: &Graph,
    name: &str,
    in_b: &BTreeMap<String, usize>,
) -> Option<(String, String)> {
    // Names may contain dots themselves: try every split, shortest parent first.
    for (i, _) in name.match_indices('.') {
        let (parent, rest) = (&name[..i], &name[i + 1..]);
        if in_b.contains_key(parent) {
            continue;
        }
        let Some(NodeKind::Subgraph { graph: child }) =
            graph.node_by_name(parent).and_then(|h| graph.nodes.try_get(h)).map(|n| &n.kind)
        else {
            continue;
        };
        let Some(child) = module.graphs.try_get(*child) else { continue };
        if child.node_by_name(rest).is_some() || nested(module, child, rest, 0) {
            return Some((parent.to_string(), format!("@{} %{rest}", child.name)));
        }
    }
    None
}

/// Whether `name` is `<subgraph node>.<node>` of `graph`, at any depth (bounded, so that a
/// sub-graph cycle in an unverified module cannot recurse without end).
fn nested(module: &Module, graph: &Graph, name: &str, depth: usize) -> bool {
    if depth > 64 {
        return false;
    }
    name.match_indices('.').any(|(i, _)| {
        let (parent, rest) = (&name[..i], &name[i + 1..]);
        match graph.node_by_name(parent).and_then(|h| graph.nodes.try_get(h)).map(|n| &n.kind) {
            Some(NodeKind::Subgraph { graph: child }) => module
                .graphs
                .try_get(*child)
                .is_some_and(|c| c.node_by_name(rest).is_some() || nested(module, c, rest, depth + 1)),
            _ => false,
        }
    })
}
