//! What `--explain` prints for each fusion.

use super::rules::theme_of;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::rc::Rc;

/// What saturation did for one term: the same for every group of that term (see
/// [`super::lang::Signature`]), so its lines are rendered once and shared.
#[derive(Clone, Debug, Default)]
pub struct Saturation {
    /// Rule applications by rule name.
    pub rules: BTreeMap<String, usize>,
    /// E-graph nodes and classes, iterations, and why the runner stopped.
    pub egraph: (usize, usize, usize, String),
    /// The remark's rule lines.
    rules_text: String,
    /// The remark's e-graph line.
    egraph_text: String,
}

impl Saturation {
    /// The record, with its remark lines rendered.
    pub fn new(rules: BTreeMap<String, usize>, egraph: (usize, usize, usize, String)) -> Saturation {
        let mut by_theme: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for (rule, count) in &rules {
            let theme = theme_of(rule).map(|t| t.name()).unwrap_or("other");
            by_theme.entry(theme).or_default().push(format!("{rule} x{count}"));
        }
        let mut rules_text = String::new();
        for (theme, rules) in by_theme {
            let _ = writeln!(rules_text, "fuse-kernels:   rules {theme}: {}", rules.join(", "));
        }
        let (nodes, classes, iterations, stop) = &egraph;
        let egraph_text = format!(
            "fuse-kernels:   e-graph {nodes} nodes, {classes} classes, {iterations} iterations, stop: {stop}\n"
        );
        Saturation { rules, egraph, rules_text, egraph_text }
    }
}

/// Everything `--explain` says about one fusion.
#[derive(Clone, Debug, Default)]
pub struct Fusion {
    /// The graph (without `@`).
    pub graph: String,
    /// Member node names in the order they ran.
    pub members: Vec<String>,
    /// The fused node's name.
    pub node: String,
    /// The fused kernel's name.
    pub kernel: String,
    /// Fusion kinds (`vertical`, `horizontal`).
    pub kinds: Vec<&'static str>,
    /// Names of the temporaries that disappeared.
    pub temporaries: Vec<String>,
    /// Modelled bytes moved before and after.
    pub bytes: (u64, u64),
    /// Rules applied and the e-graph's size (shared by the groups of one term).
    pub saturation: Rc<Saturation>,
}

impl Fusion {
    /// The remark, several lines, each starting with `fuse-kernels:`.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(256);
        let _ = write!(out, "fuse-kernels: @{}: fused ", self.graph);
        for (i, m) in self.members.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push('%');
            out.push_str(m);
        }
        let _ = writeln!(out, " into %{} (kernel @{})", self.node, self.kernel);
        out.push_str("fuse-kernels:   kinds: ");
        out.push_str(&self.kinds.join(", "));
        if !self.temporaries.is_empty() {
            let temps: Vec<String> = self.temporaries.iter().map(|t| format!("%{t}")).collect();
            let _ = write!(out, "; through temporaries {} (allocations removed)", temps.join(", "));
        }
        out.push('\n');
        out.push_str(&self.saturation.rules_text);
        let n = self.members.len() as u64;
        let (before, after) = self.bytes;
        let _ = writeln!(
            out,
            "fuse-kernels:   launches {n} -> 1 (saved {}); modelled bytes {before} -> {after} (saved {})",
            n.saturating_sub(1),
            before.saturating_sub(after)
        );
        out.push_str(&self.saturation.egraph_text);
        out
    }
}
