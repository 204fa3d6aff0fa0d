//! Interpreter errors as located diagnostics: a fault inside a kernel points at the kernel
//! op, any other fault (and a graph that cannot run) at the node's statement; a node run
//! through sub-graph nodes also points at each of those.
//!
//! Codes `E04xx` are the interpreter's run-time errors (docs/cli.md): one per
//! [`FaultKind`], and `E0409` for a graph the interpreter cannot run.

use crate::io::Input;
use cmdgraph_interp::{Fault, FaultKind, InterpError};
use cmdgraph_ir::diag::Diagnostic;
use cmdgraph_ir::graph::NodeKind;
use cmdgraph_ir::{Module, Span};

/// Renders an interpreter error from running graph `root` of `module`, parsed from `input`.
pub fn render(err: &InterpError, module: &Module, root: &str, input: &Input) -> String {
    match err {
        InterpError::Fault(fault) => fault_diagnostic(fault, module, root).render(&input.name, &input.text),
        InterpError::Invalid { graph, node, message } => {
            let graph = if graph.is_empty() { root } else { graph };
            let mut d = Diagnostic::error("E0409", format!("the graph cannot be run: {message}"), Span::UNDEFINED)
                .with_help("the verifier accepted this module, but the interpreter cannot execute it as written");
            if let Some(node) = node {
                let (span, enclosing) = locate(module, graph, node);
                d.span = span;
                d.label = format!("node %{node}");
                d.secondary = enclosing;
            }
            if d.span.is_defined() {
                d.render(&input.name, &input.text)
            } else {
                format!("error[E0409]: {err}\n")
            }
        }
        other => format!("error: {}: {other}\n", input.name),
    }
}

fn fault_diagnostic(fault: &Fault, module: &Module, root: &str) -> Diagnostic {
    let (node_span, mut secondary) = locate(module, root, &fault.node);
    let message = fault.kind.to_string();
    let mut d = Diagnostic::error(code(&fault.kind), message, node_span).with_help(help(&fault.kind));
    match &fault.site {
        Some(site) if site.span.is_defined() => {
            let ids: Vec<String> = site.work_item.iter().map(u64::to_string).collect();
            d.span = site.span;
            d.label = format!("`{}` in kernel @{}, work-item ({})", site.op, site.kernel, ids.join(", "));
            secondary.insert(0, (node_span, format!("launched by node %{}", fault.node)));
        }
        Some(site) => {
            let ids: Vec<String> = site.work_item.iter().map(u64::to_string).collect();
            d.label = format!(
                "`{}` (op {}) of kernel @{}, work-item ({})",
                site.op,
                site.op_index,
                site.kernel,
                ids.join(", ")
            );
        }
        None => d.label = format!("while running node %{}", fault.node),
    }
    d.secondary = secondary;
    d
}

/// The span of node `path` (`k`, `sg/k`, ...) of graph `root`, and the sub-graph nodes it
/// was reached through. Unknown names give an undefined span (rendered without a caret).
fn locate(module: &Module, root: &str, path: &str) -> (Span, Vec<(Span, String)>) {
    let mut graph = module.graph_by_name(root.trim_start_matches('@'));
    let mut enclosing = Vec::new();
    let mut parts = path.split('/').peekable();
    while let Some(part) = parts.next() {
        let Some(g) = graph.and_then(|h| module.graphs.try_get(h)) else { break };
        let Some(n) = g.node_by_name(part) else { break };
        let span = g.nodes.span(n);
        if parts.peek().is_none() {
            return (span, enclosing);
        }
        graph = match g.nodes.try_get(n).map(|node| &node.kind) {
            Some(NodeKind::Subgraph { graph }) => {
                enclosing.push((span, format!("run through sub-graph node %{part} of @{}", g.name)));
                Some(*graph)
            }
            // A body run is `node/body:round/...` (interp/src/conditional.rs).
            Some(NodeKind::Conditional { kind, .. }) => {
                let Some(run) = parts.next() else { break };
                let (body, round) = run.rsplit_once(':').unwrap_or((run, "0"));
                enclosing.push((
                    span,
                    format!("in round {round} of `{}` node %{part} of @{}, body @{body}", kind.keyword(), g.name),
                ));
                module.graph_by_name(body)
            }
            _ => None,
        };
    }
    (Span::UNDEFINED, Vec::new())
}

fn code(kind: &FaultKind) -> &'static str {
    match kind {
        FaultKind::IndexOutOfBounds { .. } => "E0401",
        FaultKind::BytesOutOfBounds { .. } => "E0402",
        FaultKind::Lifetime { .. } => "E0403",
        FaultKind::AccessMode { .. } => "E0404",
        FaultKind::UnregisteredCallback { .. } => "E0405",
        FaultKind::Host { .. } => "E0406",
        FaultKind::OutOfFuel => "E0407",
        FaultKind::LoopNeverEnds { .. } => "E0410",
        FaultKind::Other(_) => "E0408",
    }
}

fn help(kind: &FaultKind) -> &'static str {
    match kind {
        FaultKind::IndexOutOfBounds { .. } => {
            "an index computed at run time left the memory; guard the access with `if` or shrink the launch"
        }
        FaultKind::BytesOutOfBounds { .. } => "the command's offset plus byte count must stay inside the memory",
        FaultKind::Lifetime { .. } => {
            "order every use of a graph allocation after its async_malloc and before its async_free"
        }
        FaultKind::AccessMode { .. } => "declare the access mode the kernel or host task actually needs",
        FaultKind::UnregisteredCallback { .. } => {
            "cmdgraph interp cannot run host code; without --strict-host host tasks and native commands run as no-ops"
        }
        FaultKind::Host { .. } => "a host callback must touch only the memory in its access list, as declared",
        FaultKind::OutOfFuel => "raise --fuel, or look for a loop that runs far longer than intended",
        FaultKind::LoopNeverEnds { .. } => {
            "a node of the body must clear the condition word; raise --loop-rounds if the loop is only long"
        }
        FaultKind::Other(_) => "see docs/interpreter.md for the execution rule this breaks",
    }
}
