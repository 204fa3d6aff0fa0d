//! Structural difference of two modules, for people: what a pass or an edit changed.
//!
//! [`diff_modules`] pairs kernels, memory objects and graphs by name (two modules with one
//! graph each are paired even when the names differ), nodes by name within a graph, and
//! edges by their `(from, to)` names. A node that only B has and whose name is
//! `<subgraph node>.<child node>` of a `subgraph` node A had is reported as inlined from it
//! (the names `inline-subgraphs` gives), not as an unrelated addition; a kernel node that
//! `fuse-kernels` made of several of A's is one entry, "fused from %k0, %k1, %k2", instead of
//! the members' removals and the kept node's new kernel and arguments. Each changed attribute
//! is named with its old and new value as IR text, so the report reads like the IR.
//!
//! Order is deterministic: module entities first, then graphs in A's order followed by the
//! graphs only B has; within a graph, its header, queues, dynamic parameters, dynamic
//! command groups, nodes and edges, each in A's creation order followed by B's additions in
//! B's creation order. [`ModuleDiff`]'s `Display` is the text `cmdgraph diff` prints;
//! [`to_dot`] draws the union of both modules coloured by change; [`update`] answers whether
//! one graph can whole-graph-update an executable graph built from another.

mod attrs;
mod dot;
mod fused;
mod graph;
mod lines;
pub mod update;

pub use dot::to_dot;

use crate::arena::Handle;
use crate::graph::Graph;
use crate::module::Module;
use attrs::Attr;
use std::fmt;

/// What an [`Entry`] is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Subject {
    /// A kernel definition (`@name`).
    Kernel(String),
    /// A function definition (`@name`).
    Function(String),
    /// A memory object (`@name`).
    Memory(String),
    /// A graph's own attributes (properties, device, context).
    Graph(String),
    /// A queue of the graph (`@name`).
    Queue(String),
    /// A dynamic parameter (`%name`).
    DynParam(String),
    /// A dynamic command group (`%name`).
    Dcg(String),
    /// A node (`%name`).
    Node(String),
    /// An edge, by the names of its ends.
    Edge {
        /// The node that completes first.
        from: String,
        /// The dependent node.
        to: String,
    },
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Subject::Kernel(n) => write!(f, "kernel @{n}"),
            Subject::Function(n) => write!(f, "func @{n}"),
            Subject::Memory(n) => write!(f, "@{n}"),
            Subject::Graph(n) => write!(f, "graph @{n}"),
            Subject::Queue(n) => write!(f, "queue @{n}"),
            Subject::DynParam(n) => write!(f, "dyn %{n}"),
            Subject::Dcg(n) => write!(f, "dcg %{n}"),
            Subject::Node(n) => write!(f, "%{n}"),
            Subject::Edge { from, to } => write!(f, "edge %{from} -> %{to}"),
        }
    }
}

/// One line of a diff.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// Only B has it. `text` is its IR statement on one line.
    Added {
        /// What was added.
        subject: Subject,
        /// Its statement.
        text: String,
        /// Where it came from, when known (`inlined from %s: @child %x`).
        note: Option<String>,
    },
    /// Only A has it.
    Removed {
        /// What was removed.
        subject: Subject,
        /// Its statement.
        text: String,
        /// What became of it, when known (`inlined as 3 node(s)`).
        note: Option<String>,
    },
    /// Node `node` of B is a kernel fusion of the nodes `from` of A (`fuse-kernels`): it
    /// stands for their removals (all but `node` itself) and its own changes.
    Fused {
        /// The fused node, a [`Subject::Node`] (both have a node of this name: the member
        /// created last).
        subject: Subject,
        /// The members, A's names in A's creation order (`node` among them).
        from: Vec<String>,
        /// The fused node's command in B, as IR text.
        text: String,
    },
    /// Both have the kernel and its body differs: a unified diff of the two bodies as
    /// printed (every hunk, with 3 lines of context; line 1 is the signature line).
    Body {
        /// The kernel, a [`Subject::Kernel`].
        subject: Subject,
        /// Lines only A has.
        removed: usize,
        /// Lines only B has.
        added: usize,
        /// `@@ -a,n +b,m @@` headers, each followed by its lines marked ` `, `-` or `+`.
        hunks: Vec<String>,
    },
    /// Both have it and attribute `attr` differs.
    Changed {
        /// What changed.
        subject: Subject,
        /// The attribute (`launch`, `arg 2`, `via`, `body line 3`, ...).
        attr: String,
        /// Its value in A, as IR text.
        old: String,
        /// Its value in B, as IR text.
        new: String,
    },
}

impl Entry {
    /// What the entry is about.
    pub fn subject(&self) -> &Subject {
        match self {
            Entry::Added { subject, .. }
            | Entry::Removed { subject, .. }
            | Entry::Changed { subject, .. }
            | Entry::Body { subject, .. }
            | Entry::Fused { subject, .. } => subject,
        }
    }
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let note = |f: &mut fmt::Formatter<'_>, note: &Option<String>| match note {
            Some(n) => write!(f, "  // {n}"),
            None => Ok(()),
        };
        match self {
            Entry::Added { text, note: n, .. } => {
                write!(f, "+ {text}")?;
                note(f, n)
            }
            Entry::Removed { text, note: n, .. } => {
                write!(f, "- {text}")?;
                note(f, n)
            }
            Entry::Changed { subject, attr, old, new } => write!(f, "~ {subject}: {}", change_text(attr, old, new)),
            Entry::Fused { subject, from, text } => write!(f, "~ {subject}: {}: {text}", fused_from(from)),
            Entry::Body { subject, removed, added, hunks } => {
                write!(f, "~ {subject}: body: -{removed} +{added} line(s)")?;
                // Indented, so that a hunk's `-`/`+` lines are not read as removed or added
                // entities.
                hunks.iter().try_for_each(|h| write!(f, "\n    {h}"))
            }
        }
    }
}

/// `fused from %k0, %k1, %k2`.
pub(crate) fn fused_from(members: &[String]) -> String {
    let names: Vec<String> = members.iter().map(|m| format!("%{m}")).collect();
    format!("fused from {}", names.join(", "))
}

/// `launch range(8) -> range(16)`; an attribute of several words gets a colon
/// (`arg 1: 2.0 -> 3.0`) so that it does not run into the value.
pub(crate) fn change_text(attr: &str, old: &str, new: &str) -> String {
    if attr.contains(' ') {
        format!("{attr}: {old} -> {new}")
    } else {
        format!("{attr} {old} -> {new}")
    }
}

/// The differences of one pair of graphs (or of a graph only one module has).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphDiff {
    /// The graph's name in A (`None`: only B has it).
    pub a: Option<String>,
    /// The graph's name in B (`None`: only A has it).
    pub b: Option<String>,
    /// Differences in report order.
    pub entries: Vec<Entry>,
}

impl GraphDiff {
    /// Whether the two graphs are the same (same name, nothing differs).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.a.is_some() && self.a == self.b
    }
}

/// The differences of two modules.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModuleDiff {
    /// Kernels and memory objects.
    pub module: Vec<Entry>,
    /// Graphs: A's order, then those only B has.
    pub graphs: Vec<GraphDiff>,
}

/// Added, removed and changed counts of one kind of entity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Only in B.
    pub added: usize,
    /// Only in A.
    pub removed: usize,
    /// In both, different (each entity counted once however many attributes differ).
    pub changed: usize,
}

impl Counts {
    fn total(&self) -> usize {
        self.added + self.removed + self.changed
    }

    fn add(&mut self, entries: &[&Entry]) {
        let mut last_changed: Option<&Subject> = None;
        for e in entries {
            match e {
                Entry::Added { .. } => self.added += 1,
                Entry::Removed { .. } => self.removed += 1,
                // The fused node changed; its other members are gone.
                Entry::Fused { from, .. } => {
                    self.changed += 1;
                    self.removed += from.len().saturating_sub(1);
                }
                // Changes of one entity are consecutive in a diff.
                Entry::Changed { subject, .. } | Entry::Body { subject, .. } => {
                    if last_changed != Some(subject) {
                        self.changed += 1;
                    }
                    last_changed = Some(subject);
                    continue;
                }
            }
            last_changed = None;
        }
    }
}

/// Counts for the summary line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Graphs only in B / only in A / paired with differences (or renamed).
    pub graphs: Counts,
    /// Nodes.
    pub nodes: Counts,
    /// Edges (`changed`: provenance).
    pub edges: Counts,
    /// Everything else: kernels, memory objects, graph attributes, queues, dynamic
    /// parameters and dynamic command groups.
    pub other: Counts,
}

/// The entries of `entries` whose subject `pick` accepts.
fn of(entries: &[Entry], pick: fn(&Subject) -> bool) -> Vec<&Entry> {
    entries.iter().filter(|e| pick(e.subject())).collect()
}

impl ModuleDiff {
    /// Whether the modules are the same as far as the diff looks.
    pub fn is_empty(&self) -> bool {
        self.module.is_empty() && self.graphs.iter().all(GraphDiff::is_empty)
    }

    /// Counts of what differs.
    pub fn summary(&self) -> Summary {
        let mut s = Summary::default();
        s.other.add(&of(&self.module, |_| true));
        for g in &self.graphs {
            match (&g.a, &g.b) {
                (None, _) => s.graphs.added += 1,
                (_, None) => s.graphs.removed += 1,
                _ if !g.is_empty() => s.graphs.changed += 1,
                _ => {}
            }
            s.nodes.add(&of(&g.entries, |x| matches!(x, Subject::Node(_))));
            s.edges.add(&of(&g.entries, |x| matches!(x, Subject::Edge { .. })));
            s.other.add(&of(&g.entries, |x| !matches!(x, Subject::Node(_) | Subject::Edge { .. })));
        }
        s
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.graphs.total() + self.nodes.total() + self.edges.total() + self.other.total() == 0 {
            return write!(f, "summary: no differences");
        }
        let part = |what: &str, c: &Counts| format!("{what} +{} -{} ~{}", c.added, c.removed, c.changed);
        write!(
            f,
            "summary: {}, {}, {}, {} (+ added, - removed, ~ changed)",
            part("graphs", &self.graphs),
            part("nodes", &self.nodes),
            part("edges", &self.edges),
            part("other", &self.other)
        )
    }
}

impl fmt::Display for ModuleDiff {
    /// The report: a section per part that differs, one line per entry, then the summary.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.module.is_empty() {
            writeln!(f, "@@ module @@")?;
            for e in &self.module {
                writeln!(f, "{e}")?;
            }
        }
        for g in &self.graphs {
            if g.is_empty() {
                continue;
            }
            match (&g.a, &g.b) {
                (Some(a), Some(b)) if a == b => writeln!(f, "@@ graph @{a} @@")?,
                (Some(a), Some(b)) => writeln!(f, "@@ graph @{a} -> @{b} (renamed) @@")?,
                (None, Some(b)) => writeln!(f, "@@ graph @{b} (added) @@")?,
                (Some(a), None) => writeln!(f, "@@ graph @{a} (removed) @@")?,
                (None, None) => {}
            }
            for e in &g.entries {
                writeln!(f, "{e}")?;
            }
        }
        writeln!(f, "{}", self.summary())
    }
}

/// What [`diff_modules`] compares.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiffOptions {
    /// Compare only the graph of this name (with or without the `@`); `None` compares all.
    pub graph: Option<String>,
}

/// Compares module `a` (before) with module `b` (after).
pub fn diff_modules(a: &Module, b: &Module, opts: &DiffOptions) -> ModuleDiff {
    let mut diff = ModuleDiff { module: module_entries(a, b), graphs: Vec::new() };
    let wanted = opts.graph.as_deref().map(|g| g.strip_prefix('@').unwrap_or(g));
    for (ga, gb) in pair_graphs(a, b) {
        let name = ga.and_then(|h| a.graphs.try_get(h)).or_else(|| gb.and_then(|h| b.graphs.try_get(h)));
        let name_b = gb.and_then(|h| b.graphs.try_get(h)).map(|g| g.name.as_str());
        if let Some(w) = wanted {
            if name.map(|g| g.name.as_str()) != Some(w) && name_b != Some(w) {
                continue;
            }
        }
        diff.graphs.push(graph::diff_graph(a, ga, b, gb));
    }
    diff
}

/// Compares graph `ga` of `a` with graph `gb` of `b`, whatever their names.
pub fn diff_graphs(a: &Module, ga: Handle<Graph>, b: &Module, gb: Handle<Graph>) -> GraphDiff {
    graph::diff_graph(a, Some(ga), b, Some(gb))
}

/// A graph of A and its partner in B; either may be missing.
type GraphPair = (Option<Handle<Graph>>, Option<Handle<Graph>>);

/// Graph pairs in report order: by name in A's order, then B's unpaired graphs; when
/// exactly one graph of each side is left unpaired they are paired as a rename.
fn pair_graphs(a: &Module, b: &Module) -> Vec<GraphPair> {
    let mut pairs: Vec<_> = a.graphs.iter().map(|(h, g)| (Some(h), b.graph_by_name(&g.name))).collect();
    let mut used: Vec<bool> = vec![false; b.graphs.len()];
    for (_, hb) in &pairs {
        if let Some(slot) = hb.and_then(|h| used.get_mut(h.index())) {
            *slot = true;
        }
    }
    let b_left: Vec<Handle<Graph>> =
        b.graphs.handles().filter(|h| !used.get(h.index()).copied().unwrap_or(true)).collect();
    let a_left: Vec<usize> = pairs.iter().enumerate().filter(|(_, (_, hb))| hb.is_none()).map(|(i, _)| i).collect();
    if let ([i], [hb]) = (a_left.as_slice(), b_left.as_slice()) {
        if let Some(pair) = pairs.get_mut(*i) {
            pair.1 = Some(*hb);
        }
        return pairs;
    }
    pairs.extend(b_left.into_iter().map(|h| (None, Some(h))));
    pairs
}

/// Changed attributes of one entity: A's attributes in order, then those only B has;
/// an attribute one side lacks shows as `(none)`.
fn compare_attrs(subject: &Subject, a: &[Attr], b: &[Attr], out: &mut Vec<Entry>) {
    const NONE: &str = "(none)";
    let find = |list: &[Attr], name: &str| list.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    for (name, old) in a {
        let new = find(b, name).unwrap_or_else(|| NONE.to_string());
        if *old != new {
            out.push(Entry::Changed { subject: subject.clone(), attr: name.clone(), old: old.clone(), new });
        }
    }
    for (name, new) in b {
        if find(a, name).is_none() {
            let entry =
                Entry::Changed { subject: subject.clone(), attr: name.clone(), old: NONE.into(), new: new.clone() };
            out.push(entry);
        }
    }
}

/// Kernels, functions and memory objects: A's order, then B's additions.
fn module_entries(a: &Module, b: &Module) -> Vec<Entry> {
    let mut out = Vec::new();
    let kernels = |m: &Module| -> Vec<(String, String)> {
        m.kernels.iter().map(|(_, k)| (k.name.clone(), attrs::kernel_text(m, k))).collect()
    };
    let functions = |m: &Module| -> Vec<(String, String)> {
        m.functions.iter().map(|(h, f)| (f.def.name.clone(), attrs::function_text(m, h))).collect()
    };
    definitions(&kernels(a), &kernels(b), Subject::Kernel, &mut out);
    definitions(&functions(a), &functions(b), Subject::Function, &mut out);
    for (_, ma) in a.memories.iter() {
        let subject = Subject::Memory(ma.name.clone());
        match b.memory_by_name(&ma.name).and_then(|h| b.memories.try_get(h)) {
            None => out.push(Entry::Removed { subject, text: attrs::memory_text(ma), note: None }),
            Some(mb) => compare_attrs(&subject, &attrs::memory_attrs(ma), &attrs::memory_attrs(mb), &mut out),
        }
    }
    for (_, mb) in b.memories.iter() {
        if a.memory_by_name(&mb.name).is_none() {
            let subject = Subject::Memory(mb.name.clone());
            out.push(Entry::Added { subject, text: attrs::memory_text(mb), note: None });
        }
    }
    out
}

/// Definitions (kernels or functions) as (name, text), paired by name: A's order, then B's
/// additions; a changed first line is a signature change, other lines a body hunk.
fn definitions(a: &[(String, String)], b: &[(String, String)], subject: fn(String) -> Subject, out: &mut Vec<Entry>) {
    let find = |list: &'_ [(String, String)], name: &str| list.iter().find(|(n, _)| n == name).map(|(_, t)| t.clone());
    for (name, text_a) in a {
        let subject = subject(name.clone());
        match find(b, name) {
            None => out.push(Entry::Removed { subject, text: first_line(text_a), note: None }),
            Some(text_b) => {
                let (la, lb): (Vec<&str>, Vec<&str>) = (text_a.lines().collect(), text_b.lines().collect());
                let (sig_a, sig_b) = (la.first().copied().unwrap_or(""), lb.first().copied().unwrap_or(""));
                if sig_a != sig_b {
                    let (old, new) = (first_line(sig_a), first_line(sig_b));
                    out.push(Entry::Changed { subject: subject.clone(), attr: "signature".into(), old, new });
                }
                let (hunks, removed, added) = lines::unified(la.get(1..).unwrap_or(&[]), lb.get(1..).unwrap_or(&[]), 2);
                if !hunks.is_empty() {
                    out.push(Entry::Body { subject, removed, added, hunks });
                }
            }
        }
    }
    for (name, text_b) in b {
        if find(a, name).is_none() {
            out.push(Entry::Added { subject: subject(name.clone()), text: first_line(text_b), note: None });
        }
    }
}

/// The first line of a printed kernel, without its opening brace: `kernel @k(%x: f32)`.
fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    line.strip_suffix(" {").unwrap_or(line).to_string()
}
