//! `dead-kernel-elimination`: drop the kernel definitions no command launches.
//!
//! After `fuse-kernels` the kernels it fused are usually launched by nobody, and a module
//! written for several graphs may define kernels none of them uses. A kernel is live when a
//! `kernel` node or any alternative of a dynamic command group (active or not: an update may
//! switch to it) of any graph launches it. The others are removed and the remaining kernels
//! keep their order; every kernel handle in the module is renumbered. Memory objects and
//! graphs are untouched.

use crate::{PassContext, PassError, PassInfo};
use cmdgraph_ir::graph::{Alternative, NodeKind};
use cmdgraph_ir::module::Item;
use cmdgraph_ir::{Arena, Handle, Kernel, Module};

/// Registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "dead-kernel-elimination",
    summary: "remove kernel definitions that no kernel node or dynamic command-group alternative launches",
    statistics: &[("kernels-removed", "kernel definitions removed")],
    preserves: "every graph as it is; only kernel definitions nobody launches go",
    run,
};

fn run(module: &mut Module, ctx: &mut PassContext) -> Result<(), PassError> {
    let mut live = vec![false; module.kernels.len()];
    let mut mark = |k: Handle<Kernel>| {
        if let Some(slot) = live.get_mut(k.index()) {
            *slot = true;
        }
    };
    for (_, graph) in module.graphs.iter() {
        for (_, node) in graph.nodes.iter() {
            if let NodeKind::Kernel(cmd) = &node.kind {
                mark(cmd.kernel);
            }
        }
        for (_, dcg) in graph.dcgs.iter() {
            for alt in &dcg.alternatives {
                if let Alternative::Kernel(cmd) = alt {
                    mark(cmd.kernel);
                }
            }
        }
    }
    let dead = live.iter().filter(|l| !**l).count();
    if dead == 0 {
        return Ok(());
    }
    let mut kept = Arena::new();
    let mut renumber: Vec<Option<Handle<Kernel>>> = vec![None; live.len()];
    for (h, kernel, span) in std::mem::take(&mut module.kernels).into_entries() {
        if live[h.index()] {
            renumber[h.index()] = Some(kept.append(kernel, span));
        }
    }
    module.kernels = kept;
    let new = |k: Handle<Kernel>| renumber.get(k.index()).copied().flatten().unwrap_or(k);
    module.items.retain_mut(|item| match item {
        Item::Kernel(k) => match renumber.get(k.index()).copied().flatten() {
            Some(n) => {
                *k = n;
                true
            }
            None => false,
        },
        _ => true,
    });
    for (_, graph) in module.graphs.iter_mut() {
        for (_, node) in graph.nodes.iter_mut() {
            if let NodeKind::Kernel(cmd) = &mut node.kind {
                cmd.kernel = new(cmd.kernel);
            }
        }
        for (_, dcg) in graph.dcgs.iter_mut() {
            for alt in &mut dcg.alternatives {
                if let Alternative::Kernel(cmd) = alt {
                    cmd.kernel = new(cmd.kernel);
                }
            }
        }
    }
    ctx.bump("kernels-removed", dead as u64);
    Ok(())
}
