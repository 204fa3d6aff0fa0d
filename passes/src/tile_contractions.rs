//! `tile-contractions`: a kernel node that is a contraction (`c[i, j] = Σ_t a[i, t]·b[t, j]`,
//! one work-item per output, as a naive matmul is written) is replaced by a tiled kernel of
//! the same results: work-group memory slices, a register block of outputs per work-item,
//! specialised to the node's constant sizes.
//!
//! [`recognise`] decides exactly (symbolic evaluation, not a heuristic) whether a node is a
//! contraction; [`tiled`] writes the replacement in the kernel language. Each output sees the
//! same steps in the same order with the same rounding, so the results are bit-identical
//! (docs/passes.md). The tiled kernel takes the original kernel's parameters, so the node
//! keeps its arguments: in an `updatable` graph an update may rebind its buffers, while its
//! launch and scalar arguments, to which the tiled kernel is specialised, stay as they are
//! (the executor refuses to change them, naming the node).

pub mod recognise;
pub mod tiled;
pub mod vec4;

use crate::{PassContext, PassError, PassInfo};
use cmdgraph_ir::graph::{KernelCommand, Launch, NodeKind};
use cmdgraph_ir::kernel::ParamType;
use cmdgraph_ir::module::Item;
use cmdgraph_ir::{Handle, Kernel, Module, Span};
use std::collections::BTreeMap;

/// Registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "tile-contractions",
    summary:
        "replace one-work-item-per-output contraction kernels (a naive matmul) by tiled kernels with the same results",
    statistics: &[
        ("contractions-tiled", "kernel nodes replaced by a tiled kernel"),
        ("kernels-added", "tiled kernels added (identical ones are shared)"),
    ],
    preserves: "node names, edges, creation order and arguments; every result bit for bit, for any buffers \
                bound to the arguments (an update may rebind them; launch and scalars stay); profiling sees the same nodes",
    run,
};

fn run(module: &mut Module, ctx: &mut PassContext) -> Result<(), PassError> {
    let mut added: BTreeMap<String, Handle<Kernel>> = BTreeMap::new();
    let graphs: Vec<_> = module.graphs.handles().collect();
    for gh in graphs {
        let Some(graph) = module.graphs.try_get(gh) else { continue };
        let mut plans = Vec::new();
        for (nh, node) in graph.nodes.iter() {
            let NodeKind::Kernel(cmd) = &node.kind else { continue };
            let Some(kernel) = module.kernels.try_get(cmd.kernel) else { continue };
            let Some(c) = recognise::recognise(kernel, cmd) else { continue };
            let Some(t) = tiled::Tiling::choose(&c) else { continue };
            // The tiled kernel declares its own work-group memory and takes the original's
            // parameters, so the node keeps its arguments (an update may rebind buffers).
            let params: Vec<ParamType> = kernel.params.iter().map(|p| p.ty).collect();
            if params.iter().any(|p| matches!(p, ParamType::Local { .. })) {
                continue;
            }
            let name = format!("{}.tiled.{}x{}x{}", kernel.name, c.n0, c.n1, c.trips);
            let text = tiled::kernel_text(&name, &c, &t, &params);
            let args = cmd.args.clone();
            let (g0, g1) = t.groups(&c);
            let launch =
                Launch::NdRange { global: vec![g0 * t.lx, g1 * t.ly], local: vec![t.lx, t.ly], offset: vec![] };
            let remark = format!(
                "tile-contractions: @{} %{}: @{} ({}×{} outputs, {} steps) → @{name}: {}×{} outputs per work-group of {}×{}, \
                 {}×{} per work-item, {} steps per stage\n",
                graph.name,
                node.name,
                kernel.name,
                c.n0,
                c.n1,
                c.trips,
                t.bn(),
                t.bm(),
                t.lx,
                t.ly,
                t.rn,
                t.rm,
                t.tk
            );
            plans.push((nh, name, text, launch, args, remark));
        }
        let graph_name = graph.name.clone();
        for (nh, name, text, launch, args, remark) in plans {
            let kh = match added.get(&text) {
                Some(&kh) => kh,
                None => {
                    let kernel = parse_kernel(&text).map_err(|message| PassError::Failed {
                        pass: INFO.name,
                        graph: graph_name.clone(),
                        node: None,
                        message: format!("the tiled kernel @{name} does not parse (a bug in the pass): {message}"),
                    })?;
                    let kh = module.kernels.append(kernel, Span::UNDEFINED);
                    let at =
                        module.items.iter().rposition(|i| matches!(i, Item::Kernel(_))).map(|i| i + 1).unwrap_or(0);
                    module.items.insert(at, Item::Kernel(kh));
                    added.insert(text, kh);
                    ctx.bump("kernels-added", 1);
                    kh
                }
            };
            let Some(node) = module.graphs.try_get_mut(gh).and_then(|g| g.nodes.try_get_mut(nh)) else { continue };
            node.kind = NodeKind::Kernel(KernelCommand { kernel: kh, launch, args });
            ctx.bump("contractions-tiled", 1);
            ctx.remarks.push(remark);
        }
    }
    Ok(())
}

/// The one kernel of a module text.
fn parse_kernel(text: &str) -> Result<Kernel, String> {
    let parsed =
        cmdgraph_ir::text::parse(text).map_err(|d| format!("{} diagnostics, first: {:?}", d.len(), d.first()))?;
    let kernel = parsed.kernels.iter().next().map(|(_, k)| k.clone());
    kernel.ok_or_else(|| "no kernel".to_string())
}
