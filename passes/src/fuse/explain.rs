//! What `--explain` prints for each fusion.

use super::rules::theme_of;
use std::collections::BTreeMap;
use std::fmt::Write;

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
    /// Rule applications by rule name.
    pub rules: BTreeMap<String, usize>,
    /// Modelled bytes moved before and after.
    pub bytes: (u64, u64),
    /// E-graph nodes and classes, iterations, and why the runner stopped.
    pub egraph: (usize, usize, usize, String),
}

impl Fusion {
    /// The remark, several lines, each starting with `fuse-kernels:`.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let members: Vec<String> = self.members.iter().map(|m| format!("%{m}")).collect();
        let _ = writeln!(
            out,
            "fuse-kernels: @{}: fused {} into %{} (kernel @{})",
            self.graph,
            members.join(", "),
            self.node,
            self.kernel
        );
        let mut kinds = self.kinds.join(", ");
        if !self.temporaries.is_empty() {
            let temps: Vec<String> = self.temporaries.iter().map(|t| format!("%{t}")).collect();
            kinds.push_str(&format!("; through temporaries {} (allocations removed)", temps.join(", ")));
        }
        let _ = writeln!(out, "fuse-kernels:   kinds: {kinds}");
        let mut by_theme: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for (rule, count) in &self.rules {
            let theme = theme_of(rule).map(|t| t.name()).unwrap_or("other");
            by_theme.entry(theme).or_default().push(format!("{rule} x{count}"));
        }
        for (theme, rules) in by_theme {
            let _ = writeln!(out, "fuse-kernels:   rules {theme}: {}", rules.join(", "));
        }
        let n = self.members.len() as u64;
        let (before, after) = self.bytes;
        let _ = writeln!(
            out,
            "fuse-kernels:   launches {n} -> 1 (saved {}); modelled bytes {before} -> {after} (saved {})",
            n.saturating_sub(1),
            before.saturating_sub(after)
        );
        let (nodes, classes, iterations, stop) = &self.egraph;
        let _ = writeln!(
            out,
            "fuse-kernels:   e-graph {nodes} nodes, {classes} classes, {iterations} iterations, stop: {stop}"
        );
        out
    }
}
