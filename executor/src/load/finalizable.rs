//! What finalize would refuse about a graph without a device, checked at load for every
//! graph of the bundle, so that `cmdgraph run`, `cmdgraph inspect` and every other loader give
//! one answer (issue 28: inspect exited 0 on bundles run refused at finalize). Each check is
//! the function finalize itself calls: [`check_cmd_supported`], [`schedule::from_plan`],
//! [`Loaded::variant_of`], and the pool plan's coverage of every `async_malloc`. What needs
//! the device (its limits, features, pipelines, memory) stays with `Executor::new` and
//! finalize.

use super::Loaded;
use crate::error::{ExecError, Result};
use crate::executable::check_cmd_supported;
use crate::schedule;
use cmdgraph_ir::graph::{Alternative, NodeKind};

/// Checks every graph of `loaded.module` as finalize would before it touches the device.
pub(super) fn check_graphs(loaded: &Loaded) -> Result<()> {
    let module = &loaded.module;
    for (_, graph) in module.graphs.iter() {
        for h in graph.nodes.handles() {
            check_cmd_supported(graph, h)?;
        }
        let plan = loaded.bundle.graphs.iter().find(|p| p.name == graph.name);
        if let Some(p) = plan.filter(|p| !p.segments.is_empty()) {
            schedule::from_plan(graph, &p.segments)?;
        }
        // A pool plan places every allocation (load/plan.rs checked the ones it places).
        if let Some(p) = plan.filter(|p| p.memory.size > 0 || !p.memory.offsets.is_empty()) {
            let placed: rustc_hash::FxHashSet<&str> =
                p.memory.offsets.iter().map(|(n, _)| n.trim_start_matches('%')).collect();
            for (_, n) in graph.nodes.iter() {
                if matches!(n.kind, NodeKind::AsyncMalloc { .. }) && !placed.contains(n.name.as_str()) {
                    return Err(ExecError::Bundle(format!("pool plan misses %{}", n.name)));
                }
            }
        }
        // Every launch finalize records has a variant: kernel nodes and the active kernel
        // alternative of each dynamic node (an inactive one that cannot run is reported when
        // it is switched to, as finalize leaves it out).
        for (_, n) in graph.nodes.iter() {
            let cmd = match &n.kind {
                NodeKind::Kernel(c) => Some((None, c)),
                NodeKind::Dynamic { dcg } => {
                    graph.dcgs.try_get(*dcg).and_then(|d| match d.alternatives.get(d.active as usize) {
                        Some(Alternative::Kernel(c)) => Some((Some(d.active), c)),
                        _ => None,
                    })
                }
                _ => None,
            };
            let Some((alt, cmd)) = cmd else { continue };
            let Some(kernel) = module.kernels.try_get(cmd.kernel) else { continue };
            loaded.variant_of(&graph.name, &n.name, alt, &kernel.name, &cmd.launch)?;
        }
    }
    Ok(())
}
