//! Warnings: modules the verifier accepts that are very likely not what was meant.
//!
//! [`warnings`] never rejects a module; `cmdgraph verify` and `cmdgraph compile` print what it
//! finds after the verifier's own diagnostics. It is kept out of [`super::verify`] so that
//! library users and tests that want a clean `Ok(())` from a valid module keep getting it.
//!
//! - W0290 an `updatable` graph holds a graph-owned allocation (`async_malloc` or
//!   `async_free`): whole-graph update never accepts such a graph (000 §8.4.2 lists "no
//!   `node_type::async_malloc` or `node_type::async_free` nodes in either graph"; §8.4.3
//!   "Limitations"), so `update(graph)` on it always fails (`ErrorNotSupported` in
//!   `cmdgraph diff --update-check`, `crate::diff::update`'s rule 4). Individual node updates
//!   still work, which is why this is a warning and not an error.

use crate::diag::{Diagnostic, Severity};
use crate::graph::NodeKind;
use crate::module::Module;
use crate::span::Span;

/// The code of [`warnings`]'s only warning so far.
pub const UPDATABLE_WITH_ALLOCATIONS: &str = "W0290";

/// Every warning for `module`, graphs in module order; empty when there is nothing to say.
/// Never panics, whatever the module holds.
pub fn warnings(module: &Module) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (gh, g) in module.graphs.iter() {
        if !g.properties.updatable {
            continue;
        }
        let mut allocs =
            g.nodes.iter().filter(|(_, n)| matches!(n.kind, NodeKind::AsyncMalloc { .. } | NodeKind::AsyncFree { .. }));
        let Some((first, node)) = allocs.next() else { continue };
        let more = allocs.count();
        let ty = g.node_type(first).name();
        let others = match more {
            0 => String::new(),
            1 => " (and 1 more allocation node)".to_string(),
            n => format!(" (and {n} more allocation nodes)"),
        };
        let mut d = Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(
                UPDATABLE_WITH_ALLOCATIONS,
                format!(
                    "graph @{} is `updatable`, but whole-graph update never accepts it: %{} is a graph-owned allocation ({ty}){others}",
                    g.name, node.name
                ),
                g.nodes.span(first),
            )
        }
        .with_label(format!("{ty} makes @{} refuse whole-graph update", g.name))
        .with_help(
            "graphs with async_malloc/async_free nodes cannot be whole-graph updated (000 §8.4.2, §8.4.3), so update(graph) will fail with ErrorNotSupported; individual node updates still work. For whole-graph update, use memory declared outside the graph (`usm @name : T[N]`) instead of async_malloc/async_free; if the graph is never updated, drop `updatable`",
        );
        // The `graph` keyword opens the graph's span: point at it, not at the whole block.
        let graph_span = module.graphs.span(gh);
        if graph_span.is_defined() && graph_span.end >= graph_span.start.saturating_add(5) {
            let keyword = Span::new(graph_span.start as usize, graph_span.start as usize + 5);
            d = d.with_secondary(keyword, format!("@{} is finalized with property `updatable`", g.name));
        }
        out.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(src: &str) -> Module {
        crate::text::parse(src).expect("test module parses")
    }

    const GRAPH: &str = "usm @y : f32[4]\n\ngraph @g PROPS {\n  %t = async_malloc f32[4]\n  %c = memcpy @y, %t, 16 after(%t)\n  %u = async_malloc f32[8]\n  %f = async_free %t after(%c)\n}\n";

    /// One warning per updatable graph with allocations, at the first allocation node,
    /// counting the others; none without `updatable`.
    #[test]
    fn updatable_graph_with_allocations_is_warned_about_once() {
        let src = GRAPH.replace("PROPS", "properties(updatable)");
        let m = parse(&src);
        assert!(crate::verify::verify(&m).is_ok(), "the module is valid; the warning does not reject it");
        let w = warnings(&m);
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(w[0].code, UPDATABLE_WITH_ALLOCATIONS);
        assert_eq!(w[0].severity, Severity::Warning);
        assert!(w[0].message.contains("%t is a graph-owned allocation (async_malloc) (and 2 more"), "{}", w[0].message);
        let at = w[0].span.start as usize;
        assert!(src[at..].starts_with("async_malloc f32[4]") || src[at..].starts_with("%t"), "{}", &src[at..]);
        let (span, _) = &w[0].secondary[0];
        assert_eq!(&src[span.start as usize..span.end as usize], "graph");
        let plain = parse(&GRAPH.replace("PROPS", ""));
        assert!(warnings(&plain).is_empty());
    }

    /// An API-built module (no spans) gets the warning without a secondary location.
    #[test]
    fn module_without_spans_gets_the_warning_without_locations() {
        let mut m = parse(&GRAPH.replace("PROPS", "properties(updatable)"));
        let text = crate::text::print(&m);
        m = crate::text::parse(&text).unwrap();
        let graphs: Vec<_> = m.graphs.handles().collect();
        for h in graphs {
            m.graphs.set_span(h, Span::UNDEFINED);
        }
        let w = warnings(&m);
        assert_eq!(w.len(), 1);
        assert!(w[0].secondary.is_empty());
    }
}
