//! `fuse-kernels`: kernel fusion by equality saturation with egg.
//!
//! For each graph: find the candidate kernel nodes and group them ([`legality`]); translate
//! each group into one e-graph term ([`lang`]); saturate it with the rule table ([`rules`])
//! under runner limits; extract the cheapest term under bytes moved ([`cost`]); emit it as a
//! new kernel `@fused.<first>.<last>`; replace the group by one node ([`build`]). The
//! fused node keeps the name of the member created last; [`PassContext::origins`] records
//! every member. `docs/fusion.md` describes the language, the rules and the legality rules.

pub mod build;
pub mod cost;
pub mod explain;
pub mod lang;
pub mod legality;
pub mod rules;

use crate::{PassContext, PassError, PassInfo};
use cmdgraph_ir::graph::{KernelCommand, Launch, MemRef, NodeKind};
use cmdgraph_ir::module::Item;
use cmdgraph_ir::{Graph, Handle, Module, Node, Span};
use egg::{Extractor, Runner, StopReason};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// Most e-nodes one group's e-graph may grow to.
pub const NODE_LIMIT: usize = 20_000;
/// Most rule iterations per group.
pub const ITER_LIMIT: usize = 64;
/// Most time one group's saturation may take.
pub const TIME_LIMIT: Duration = Duration::from_millis(200);

/// Registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "fuse-kernels",
    summary: "fuse element-wise kernel chains and siblings over one range into one kernel (egg)",
    statistics: &[
        ("fusions", "groups replaced by one kernel node"),
        ("kernels-fused", "kernel nodes that became part of a fused node"),
        ("launches-saved", "kernel launches removed"),
        ("bytes-saved", "modelled bytes moved per execution removed"),
        ("temporaries-removed", "graph-owned allocations that disappeared with their async_malloc/async_free"),
        ("egraph-nodes", "e-nodes over all groups' e-graphs after saturation"),
        ("kernels-shared", "fusions that reuse an identical fused kernel instead of adding one"),
        ("refused", "fusions refused by a legality rule (see --explain)"),
    ],
    preserves: "every dynamic-parameter registration (the fused node's slot is `Arg::Dyn` of the same \
                parameter); the name of the member created last, with origins for all members; \
                updatable/enable_profiling need nothing more (see docs/fusion.md)",
    run,
};

/// What one planned group became before the graph is rewritten.
struct Planned {
    kernel: cmdgraph_ir::kernel::Kernel,
    replacement: build::Replacement,
    fusion: explain::Fusion,
    members: Vec<String>,
}

fn run(module: &mut Module, ctx: &mut PassContext) -> Result<(), PassError> {
    let rules = rules::rules(ctx.options.fuse_fp_reassoc);
    let graphs: Vec<_> = module.graphs.handles().collect();
    let mut reserved: BTreeSet<String> = module.kernels.iter().map(|(_, k)| k.name.clone()).collect();
    // Fused kernels by shape: identical groups (the same chain over other memory, as a
    // model's repeated blocks give) share one kernel, so codegen compiles it once.
    let mut by_shape: BTreeMap<String, Handle<cmdgraph_ir::kernel::Kernel>> = BTreeMap::new();
    for gh in graphs {
        let Some(graph) = module.graphs.try_get(gh) else { continue };
        let (planned, refusals) = plan_graph(module, graph, &rules, &mut reserved)?;
        ctx.bump("refused", refusals.len() as u64);
        ctx.remarks.extend(refusals.iter().map(|r| format!("fuse-kernels: @{}: {r}\n", graph.name)));
        if planned.is_empty() {
            continue;
        }
        let graph_name = graph.name.clone();
        let mut replacements = Vec::new();
        for p in planned {
            let (mut replacement, mut fusion, members) = (p.replacement, p.fusion, p.members);
            let shape = shape_key(&p.kernel);
            let kh = match by_shape.get(&shape) {
                Some(&kh) => {
                    fusion.kernel = module.kernels.try_get(kh).map(|k| k.name.clone()).unwrap_or_default();
                    ctx.bump("kernels-shared", 1);
                    kh
                }
                None => {
                    let kh = module.kernels.append(p.kernel, Span::UNDEFINED);
                    let at =
                        module.items.iter().rposition(|i| matches!(i, Item::Kernel(_))).map(|i| i + 1).unwrap_or(0);
                    module.items.insert(at, Item::Kernel(kh));
                    by_shape.insert(shape, kh);
                    kh
                }
            };
            replacement.command.kernel = kh;
            ctx.bump("fusions", 1);
            ctx.bump("kernels-fused", members.len() as u64);
            ctx.bump("launches-saved", members.len().saturating_sub(1) as u64);
            ctx.bump("bytes-saved", fusion.bytes.0.saturating_sub(fusion.bytes.1));
            ctx.bump("temporaries-removed", fusion.temporaries.len() as u64);
            ctx.bump("egraph-nodes", fusion.egraph.0 as u64);
            let key = (graph_name.clone(), fusion.node.clone());
            let mut origin = Vec::new();
            for m in &members {
                match ctx.origins.get(&(graph_name.clone(), m.clone())) {
                    Some(o) => origin.extend(o.iter().cloned()),
                    None => origin.push((graph_name.clone(), m.clone())),
                }
            }
            ctx.origins.insert(key, origin);
            ctx.remarks.push(fusion.render());
            replacements.push(replacement);
        }
        let Some(graph) = module.graphs.try_get_mut(gh) else { continue };
        build::apply(graph, replacements).map_err(|e| PassError::Failed {
            pass: INFO.name,
            graph: graph_name.clone(),
            node: None,
            message: e.to_string(),
        })?;
    }
    Ok(())
}

/// A kernel's identity up to its name and its parameters' names (fused kernels name their
/// parameters after the memory they were built from).
fn shape_key(k: &cmdgraph_ir::kernel::Kernel) -> String {
    let mut k = k.clone();
    k.name.clear();
    for (i, p) in k.params.iter_mut().enumerate() {
        p.name = format!("p{i}");
    }
    if let cmdgraph_ir::kernel::KernelBody::Ir(body) = &mut k.body {
        for (_, v) in body.values.iter_mut() {
            if let cmdgraph_ir::kernel::ValueDef::Param(i) = v.def {
                v.name = format!("p{i}");
            }
        }
    }
    format!("{k:?}")
}

fn fail(graph: &Graph, message: impl Into<String>) -> PassError {
    PassError::Failed { pass: INFO.name, graph: graph.name.clone(), node: None, message: message.into() }
}

/// Plans every fusion of one graph and adds the fused kernels to the module.
fn plan_graph(
    module: &Module,
    graph: &Graph,
    rules: &[rules::Rule],
    reserved: &mut BTreeSet<String>,
) -> Result<(Vec<Planned>, Vec<String>), PassError> {
    let cands: Vec<_> = graph.nodes.handles().map(|h| legality::candidate(module, graph, h)).collect();
    if cands.iter().flatten().count() < 2 {
        return Ok((Vec::new(), Vec::new()));
    }
    let temps = legality::temps(graph, &cands);
    let planner = legality::Planner::new(graph, &cands, &temps).ok_or_else(|| fail(graph, "the graph has a cycle"))?;
    let (groups, mut refusals) = planner.plan();
    for (h, n) in graph.nodes.iter() {
        if matches!(n.kind, NodeKind::Dynamic { .. }) {
            refusals.push(format!("not fused: %{}: a node of a dynamic command group is never fused", n.name));
        }
        let _ = h;
    }
    let mut planned = Vec::new();
    for group in groups {
        match fuse_group(module, graph, &cands, &group, rules, reserved) {
            Ok(p) => planned.push(p),
            Err(why) => {
                let names: Vec<String> = group.members.iter().map(|&m| format!("%{}", node_name(graph, m))).collect();
                refusals.push(format!("not fused: {}: {why}", names.join(", ")));
            }
        }
    }
    Ok((planned, refusals))
}

fn node_name(graph: &Graph, v: u32) -> String {
    legality::node(v).and_then(|h| graph.nodes.try_get(h)).map(|n| n.name.clone()).unwrap_or_default()
}

fn mem_name(module: &Module, graph: &Graph, m: MemRef) -> String {
    match m {
        MemRef::Memory(h) => module.memories.try_get(h).map(|m| m.name.clone()).unwrap_or_default(),
        MemRef::Alloc(h) => graph.nodes.try_get(h).map(|n| n.name.clone()).unwrap_or_default(),
    }
}

/// Saturates, extracts and emits one group; adds the kernel to the module.
fn fuse_group(
    module: &Module,
    graph: &Graph,
    cands: &[Option<legality::Candidate>],
    group: &legality::Group,
    rules: &[rules::Rule],
    reserved: &mut BTreeSet<String>,
) -> Result<Planned, String> {
    let members: Vec<Handle<Node>> = group.members.iter().filter_map(|&m| legality::node(m)).collect();
    let dead: Vec<MemRef> = group.dead.iter().filter_map(|&a| legality::node(a)).map(MemRef::Alloc).collect();
    let mut term = lang::build(module, graph, &members, &dead)?;
    let runner = Runner::default()
        .with_egraph(std::mem::take(&mut term.egraph))
        .with_node_limit(NODE_LIMIT)
        .with_iter_limit(ITER_LIMIT)
        .with_time_limit(TIME_LIMIT)
        .run(rules.iter().map(|r| &r.rewrite));
    let stop = match &runner.stop_reason {
        Some(StopReason::Saturated) => "saturated".to_string(),
        Some(StopReason::IterationLimit(n)) => format!("iteration limit ({n})"),
        Some(StopReason::NodeLimit(n)) => format!("node limit ({n})"),
        Some(StopReason::TimeLimit(t)) => format!("time limit ({t:.3}s)"),
        Some(StopReason::Other(s)) => s.clone(),
        None => "not run".to_string(),
    };
    let root = runner.egraph.find(term.root);
    let (best, expr) = Extractor::new(&runner.egraph, cost::BytesCost::new(&runner.egraph, &term)).find_best(root);
    if best >= cost::UNFORWARDED {
        return Err(format!("the rules could not forward every load (runner stopped: {stop})"));
    }
    let mut rule_counts: BTreeMap<String, usize> = BTreeMap::new();
    for it in &runner.iterations {
        for (name, count) in &it.applied {
            *rule_counts.entry(name.to_string()).or_insert(0) += count;
        }
    }
    let first = node_name(graph, *group.members.first().ok_or("empty group")?);
    let keep = *group.members.iter().max().ok_or("empty group")?;
    let last = node_name(graph, *group.members.last().ok_or("empty group")?);
    let name = unique_kernel_name(reserved, &format!("fused.{first}.{last}"));
    let mem_names: Vec<String> = term.mems.iter().map(|m| mem_name(module, graph, m.mem)).collect();
    let mem_names = dedupe(mem_names);
    let (kernel, args) = lang::emit(&term, &expr, name.clone(), &mem_names)?;
    let n = cands.get(keep as usize).and_then(|c| c.as_ref()).map(|c| c.n).ok_or("not a candidate")?;
    let before: u64 = group.members.iter().filter_map(|&m| cands.get(m as usize)?.as_ref()).map(|c| c.bytes).sum();
    let after = cost::dag_bytes(&expr, &term);
    let mut kinds = Vec::new();
    if group.vertical {
        kinds.push("vertical");
    }
    if group.horizontal {
        kinds.push("horizontal");
    }
    let member_names: Vec<String> = group.members.iter().map(|&m| node_name(graph, m)).collect();
    let fusion = explain::Fusion {
        graph: graph.name.clone(),
        members: member_names.clone(),
        node: node_name(graph, keep),
        kernel: name,
        kinds,
        temporaries: group.dead.iter().map(|&a| node_name(graph, a)).collect(),
        rules: rule_counts,
        bytes: (before.saturating_mul(n), after.saturating_mul(n)),
        egraph: (runner.egraph.total_size(), runner.egraph.number_of_classes(), runner.iterations.len(), stop),
    };
    let mut nodes = group.members.clone();
    nodes.sort_unstable();
    let bypass = group.removed.clone();
    let kernel_placeholder = cmd_kernel(graph, keep).ok_or("not a kernel node")?;
    let command = KernelCommand { kernel: kernel_placeholder, launch: Launch::Range(vec![n]), args };
    reserved.insert(kernel.name.clone());
    Ok(Planned {
        kernel,
        replacement: build::Replacement { nodes, bypass, keep, command },
        fusion,
        members: member_names,
    })
}

/// The kernel handle of a kernel node (replaced once the fused kernel is in the module).
fn cmd_kernel(graph: &Graph, v: u32) -> Option<Handle<cmdgraph_ir::kernel::Kernel>> {
    match &graph.nodes.try_get(legality::node(v)?)?.kind {
        NodeKind::Kernel(cmd) => Some(cmd.kernel),
        _ => None,
    }
}

fn unique_kernel_name(taken: &BTreeSet<String>, base: &str) -> String {
    if !taken.contains(base) {
        return base.to_string();
    }
    (1..).map(|i| format!("{base}.{i}")).find(|n| !taken.contains(n)).unwrap_or_default()
}

fn dedupe(names: Vec<String>) -> Vec<String> {
    let mut seen = BTreeSet::new();
    names.into_iter().enumerate().map(|(k, n)| if seen.insert(n.clone()) { n } else { format!("{n}_{k}") }).collect()
}
