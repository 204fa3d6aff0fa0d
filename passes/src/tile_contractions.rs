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

pub mod epilogue;
pub mod recognise;
pub mod tiled;
pub mod vec4;

use crate::{PassContext, PassError, PassInfo};
use cmdgraph_ir::graph::{KernelCommand, Launch, NodeKind};
use cmdgraph_ir::kernel::ParamType;
use cmdgraph_ir::module::Item;
use cmdgraph_ir::{Handle, Kernel, Module, Span};
use std::collections::{BTreeMap, BTreeSet};

/// Registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "tile-contractions",
    summary:
        "replace one-work-item-per-output contraction kernels (a naive matmul) by tiled kernels with the same results",
    statistics: &[
        ("contractions-tiled", "kernel nodes replaced by a tiled kernel"),
        ("kernels-added", "tiled kernels added (identical ones are shared)"),
        ("epilogue-kernels", "element-wise kernel nodes that now run on each output of a tiled kernel"),
    ],
    preserves: "node names, edges, creation order and arguments; every result bit for bit, for any buffers \
                bound to the arguments (an update may rebind them; launch and scalars stay); profiling sees the same nodes",
    run,
};

/// What the pass does to one contraction node.
struct Plan {
    node: Handle<cmdgraph_ir::Node>,
    name: String,
    text: String,
    launch: Launch,
    args: Vec<cmdgraph_ir::graph::Arg>,
    remark: String,
    /// With an epilogue: the chain's nodes and dying allocations (indices), and its node
    /// names (the contraction's first).
    chain: Option<(Vec<u32>, Vec<u32>, Vec<String>)>,
}

fn run(module: &mut Module, ctx: &mut PassContext) -> Result<(), PassError> {
    let mut added: BTreeMap<String, Handle<Kernel>> = BTreeMap::new();
    let graphs: Vec<_> = module.graphs.handles().collect();
    for gh in graphs {
        let Some(graph) = module.graphs.try_get(gh) else { continue };
        let plans = plan_graph(module, graph);
        let graph_name = graph.name.clone();
        let mut replacements = Vec::new();
        for plan in plans {
            let kh = match added.get(&plan.text) {
                Some(&kh) => kh,
                None => {
                    let kernel = parse_kernel(&plan.text).map_err(|message| PassError::Failed {
                        pass: INFO.name,
                        graph: graph_name.clone(),
                        node: None,
                        message: format!(
                            "the tiled kernel @{} does not parse (a bug in the pass): {message}",
                            plan.name
                        ),
                    })?;
                    let kh = module.kernels.append(kernel, Span::UNDEFINED);
                    let at =
                        module.items.iter().rposition(|i| matches!(i, Item::Kernel(_))).map(|i| i + 1).unwrap_or(0);
                    module.items.insert(at, Item::Kernel(kh));
                    added.insert(plan.text, kh);
                    ctx.bump("kernels-added", 1);
                    kh
                }
            };
            let command = KernelCommand { kernel: kh, launch: plan.launch, args: plan.args };
            ctx.bump("contractions-tiled", 1);
            ctx.remarks.push(plan.remark);
            match plan.chain {
                None => {
                    let Some(node) = module.graphs.try_get_mut(gh).and_then(|g| g.nodes.try_get_mut(plan.node)) else {
                        continue;
                    };
                    node.kind = NodeKind::Kernel(command);
                }
                Some((nodes, bypass, names)) => {
                    ctx.bump("epilogue-kernels", nodes.len() as u64 - 1);
                    // The kept node stands for every member (and what they stood for).
                    let mut origin = Vec::with_capacity(names.len());
                    for m in &names {
                        let key = (graph_name.clone(), m.clone());
                        match ctx.origins.remove(&key) {
                            Some(o) => origin.extend(o),
                            None => origin.push(key),
                        }
                    }
                    let last = names.last().cloned().unwrap_or_default();
                    ctx.origins.insert((graph_name.clone(), last), origin);
                    let keep = *nodes.last().expect("a chain has members");
                    replacements.push(crate::fuse::build::Replacement { nodes, bypass, keep, command });
                }
            }
        }
        if !replacements.is_empty() {
            let graph = module.graphs.try_get_mut(gh).expect("the graph planned");
            crate::fuse::build::apply(graph, replacements).map_err(|e| PassError::Failed {
                pass: INFO.name,
                graph: graph_name.clone(),
                node: None,
                message: format!("could not contract an epilogue chain (a bug in the pass): {e}"),
            })?;
        }
    }
    Ok(())
}

/// The plans for every contraction node of `graph`.
fn plan_graph(module: &Module, graph: &cmdgraph_ir::Graph) -> Vec<Plan> {
    let users = epilogue::Users::of(graph);
    let mut claimed = BTreeSet::new();
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
        let base = format!("{}.tiled.{}x{}x{}", kernel.name, c.n0, c.n1, c.trips);
        // Updatable graphs keep the node's arguments, so no epilogue (it adds the members').
        let chain = match graph.properties.updatable {
            true => Err("the graph is updatable".to_string()),
            false => epilogue::find(module, graph, &users, nh, &cmd.args, &c),
        };
        let chain = chain.and_then(|ch| match ch.members.iter().any(|m| claimed.contains(&m.node)) {
            true => Err("a member is another contraction's".to_string()),
            false => Ok(ch),
        });
        // One dispatch runs on one device (docs/multi-device.md).
        let chain =
            chain.and_then(|ch| match ch.members.iter().find(|m| graph.node_device(m.node) != graph.node_device(nh)) {
                Some(m) => Err(format!("%{} runs on another device", graph.nodes[m.node].name)),
                None => Ok(ch),
            });
        let (g0, g1) = t.groups(&c);
        let launch = Launch::NdRange { global: vec![g0 * t.lx, g1 * t.ly], local: vec![t.lx, t.ly], offset: vec![] };
        let (name, text, args, note, chain) = match chain {
            Err(why) => {
                let text = tiled::kernel_text(&base, &c, &t, &params);
                (base, text, cmd.args.clone(), format!("no epilogue: {why}"), None)
            }
            Ok(ch) => {
                let kernels: Vec<&str> = ch.members.iter().map(|m| module.kernels[m.kernel].name.as_str()).collect();
                let name = format!("{base}.then.{}", kernels.join(".then."));
                let (header, args) = epilogue::params_and_args(module, graph, kernel, &cmd.args, &c, &ch);
                let emit = |o: &mut String, n: &mut tiled::Names, at: &str, v: &str| epilogue::emit(o, n, &ch, at, v);
                let mut text = epilogue::functions_text(module, &ch);
                text.push_str(&tiled::kernel_text_with(&name, &c, &t, &tiled::Ending { header, emit: &emit }));
                let members: Vec<String> =
                    ch.members.iter().map(|m| format!("%{}", graph.nodes[m.node].name)).collect();
                let last = members.last().cloned().unwrap_or_default();
                let note = format!("epilogue {} run on each output; the node is now {last}", members.join(", "));
                claimed.extend(ch.members.iter().map(|m| m.node));
                let nodes = std::iter::once(nh).chain(ch.members.iter().map(|m| m.node)).map(|h| h.index() as u32);
                let names = std::iter::once(&node.name)
                    .chain(ch.members.iter().map(|m| &graph.nodes[m.node].name))
                    .cloned()
                    .collect();
                let chain = (nodes.collect(), ch.bypass.iter().map(|h| h.index() as u32).collect(), names);
                (name, text, args, note, Some(chain))
            }
        };
        let remark = format!(
            "tile-contractions: @{} %{}: @{} ({}×{} outputs, {} steps) → @{name}: {}×{} outputs per work-group of {}×{}, \
             {}×{} per work-item, {} steps per stage\ntile-contractions:   {note}\n",
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
        plans.push(Plan { node: nh, name, text, launch, args, remark, chain });
    }
    plans
}

/// The one kernel of a module text, its calls (of the epilogue's functions) inlined.
fn parse_kernel(text: &str) -> Result<Kernel, String> {
    let parsed =
        cmdgraph_ir::text::parse(text).map_err(|d| format!("{} diagnostics, first: {:?}", d.len(), d.first()))?;
    let kernel = parsed.kernels.iter().next().map(|(_, k)| k.clone()).ok_or_else(|| "no kernel".to_string())?;
    match cmdgraph_ir::inline::inlined_kernel(&parsed.functions, &kernel).map_err(|e| e.to_string())? {
        Some(inlined) => Ok(inlined),
        None => Ok(kernel),
    }
}
