//! `fuse-kernels`: kernel fusion by equality saturation with egg.
//!
//! For each graph: find the candidate kernel nodes and group them ([`legality`]); translate
//! each group into one e-graph term ([`lang`]); saturate it with the rule table ([`rules`])
//! under runner limits; extract the cheapest term under bytes moved ([`cost`]); emit it as a
//! new kernel `@fused.<member>.<member>...` ([`fused_name`]); replace the group by one node ([`build`]). The
//! fused node keeps the name of the member created last; [`PassContext::origins`] records
//! every member. `docs/fusion.md` describes the language, the rules and the legality rules.

pub mod build;
pub mod cost;
pub mod explain;
pub mod lang;
pub mod legality;
pub mod rules;

use crate::{PassContext, PassError, PassInfo};
use cmdgraph_ir::graph::{Arg, ArgValue, KernelCommand, Launch, MemRef, NodeKind, Pointer};
use cmdgraph_ir::module::Item;
use cmdgraph_ir::{Graph, Handle, Module, Node, Span};
use egg::{Extractor, Runner, StopReason};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;
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
        ("egraph-runs", "saturations run: groups whose term an earlier group already had reuse its result"),
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
    /// The fused kernel; `None` when an earlier group of the same term already made it.
    kernel: Option<cmdgraph_ir::kernel::Kernel>,
    /// Index of the kernel's shape in [`Memo::shapes`].
    shape: usize,
    replacement: build::Replacement,
    fusion: explain::Fusion,
    members: Vec<String>,
}

/// What saturating, extracting and emitting one group's term gave: the same for every
/// group with the same [`lang::Signature`].
#[derive(Clone)]
struct Fused {
    /// Memory leaves the fused kernel takes as buffer parameters, in order.
    mems: Vec<usize>,
    /// Index of the emitted kernel's shape in [`Memo::shapes`].
    shape: usize,
    /// Bytes one work-item of the extracted term moves.
    after: u64,
    saturation: Rc<explain::Saturation>,
}

/// Work shared over the pass's groups (all graphs of the module).
#[derive(Default)]
struct Memo {
    /// Outcome by term signature.
    by_signature: HashMap<Vec<u64>, Result<Rc<Fused>, String>>,
    /// Fused kernel shapes (see [`shape_key`]), numbered.
    shapes: HashMap<String, usize>,
    /// The kernel added for each shape.
    kernels: HashMap<usize, Handle<cmdgraph_ir::kernel::Kernel>>,
}

fn run(module: &mut Module, ctx: &mut PassContext) -> Result<(), PassError> {
    let rules = rules::rules(ctx.options.fuse_fp_reassoc);
    let graphs: Vec<_> = module.graphs.handles().collect();
    let mut reserved: BTreeSet<String> = module.kernels.iter().map(|(_, k)| k.name.clone()).collect();
    // Fused kernels by shape: identical groups (the same chain over other memory, as a
    // model's repeated blocks give) share one kernel, so codegen compiles it once; groups
    // with the same term share one saturation.
    let mut memo = Memo::default();
    // New kernels go after the last kernel item, in the order they were made (spliced in
    // once at the end).
    let mut added = Vec::new();
    // Provenance of the fused nodes, merged into `ctx.origins` once at the end (one sorted
    // merge instead of a tree insertion per group). Keys name their graph, and each graph
    // looks up only its own members, so deferring changes nothing.
    let mut origins = Vec::new();
    for gh in graphs {
        let Some(graph) = module.graphs.try_get(gh) else { continue };
        let Plan { planned, refusals, notes } = plan_graph(module, graph, &rules, &mut reserved, &mut memo, ctx)?;
        ctx.bump("refused", refusals.len() as u64);
        ctx.remarks.reserve(notes.len() + refusals.len() + planned.len());
        ctx.remarks.extend(notes);
        ctx.remarks.extend(refusals);
        if planned.is_empty() {
            continue;
        }
        let graph_name = graph.name.clone();
        // Members need a lookup only when an earlier pass left origins in this graph.
        let probe = (graph_name.clone(), String::new());
        let earlier = ctx.origins.range(&probe..).next().is_some_and(|((g, _), _)| *g == graph_name);
        let mut replacements = Vec::with_capacity(planned.len());
        origins.reserve(planned.len());
        let mut stats = [0u64; 7];
        for p in planned {
            let (mut replacement, mut fusion, members) = (p.replacement, p.fusion, p.members);
            let kh = match (memo.kernels.get(&p.shape), p.kernel) {
                (Some(&kh), _) => {
                    fusion.kernel = module.kernels.try_get(kh).map(|k| k.name.clone()).unwrap_or_default();
                    stats[6] += 1;
                    kh
                }
                (None, Some(kernel)) => {
                    let kh = module.kernels.append(kernel, Span::UNDEFINED);
                    added.push(Item::Kernel(kh));
                    memo.kernels.insert(p.shape, kh);
                    kh
                }
                (None, None) => {
                    return Err(PassError::Failed {
                        pass: INFO.name,
                        graph: graph_name,
                        node: None,
                        message: "a shared fused kernel was never added".into(),
                    })
                }
            };
            replacement.command.kernel = kh;
            stats[0] += 1;
            stats[1] += members.len() as u64;
            stats[2] += members.len().saturating_sub(1) as u64;
            stats[3] += fusion.bytes.0.saturating_sub(fusion.bytes.1);
            stats[4] += fusion.temporaries.len() as u64;
            stats[5] += fusion.saturation.egraph.0 as u64;
            let mut origin = Vec::with_capacity(members.len());
            for m in &members {
                let key = (graph_name.clone(), m.clone());
                match ctx.origins.get(&key).filter(|_| earlier) {
                    Some(o) => origin.extend(o.iter().cloned()),
                    None => origin.push(key),
                }
            }
            ctx.remarks.push(fusion.render());
            origins.push(((graph_name.clone(), fusion.node), origin));
            replacements.push(replacement);
        }
        let names =
            ["fusions", "kernels-fused", "launches-saved", "bytes-saved", "temporaries-removed", "egraph-nodes"];
        for (name, value) in names.into_iter().zip(stats) {
            ctx.bump(name, value);
        }
        if stats[6] > 0 {
            ctx.bump("kernels-shared", stats[6]);
        }
        let Some(graph) = module.graphs.try_get_mut(gh) else { continue };
        build::apply(graph, replacements).map_err(|e| PassError::Failed {
            pass: INFO.name,
            graph: graph_name.clone(),
            node: None,
            message: e.to_string(),
        })?;
    }
    let mut origins: BTreeMap<_, _> = origins.into_iter().collect();
    ctx.origins.append(&mut origins);
    build::place_kernels(module, added);
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

/// Plans every fusion of one graph (the fused kernels are added to the module afterwards);
/// the refusals and the kernel nodes that are no candidates come as remarks.
fn plan_graph(
    module: &Module,
    graph: &Graph,
    rules: &[rules::Rule],
    reserved: &mut BTreeSet<String>,
    memo: &mut Memo,
    ctx: &mut PassContext,
) -> Result<Plan, PassError> {
    let prefix = format!("fuse-kernels: @{}: ", graph.name);
    // Kernel nodes that cannot fuse at all say why first: without them a graph where nothing
    // fuses (a softmax whose kernels read a row's elements) would explain nothing.
    let mut not_candidates = Vec::new();
    let mut kernels = 0usize;
    let cands: Vec<_> = graph
        .nodes
        .handles()
        .map(|h| match legality::candidate_or_why(module, graph, h) {
            Ok(c) => {
                kernels += 1;
                Some(c)
            }
            Err(legality::NotCandidate::NotKernel) => None,
            Err(legality::NotCandidate::Kernel(why)) => {
                kernels += 1;
                let name = graph.nodes.try_get(h).map_or("?", |n| n.name.as_str());
                not_candidates.push(format!("{prefix}not a candidate: %{name}: {why}\n"));
                None
            }
        })
        .collect();
    let count = cands.iter().flatten().count();
    if count < 2 {
        if kernels > 0 {
            let why = match count {
                0 => "no kernel node is a candidate".to_string(),
                _ => {
                    let one = cands.iter().position(Option::is_some).map(|i| node_name(graph, i as u32));
                    format!("%{} is the only candidate kernel node", one.unwrap_or_default())
                }
            };
            not_candidates.push(format!("{prefix}no candidate pairs: {why}\n"));
        }
        return Ok(Plan { notes: not_candidates, ..Plan::default() });
    }
    let temps = legality::temps(graph, &cands);
    let planner = legality::Planner::new(graph, &cands, &temps).ok_or_else(|| fail(graph, "the graph has a cycle"))?;
    let (groups, mut refusals, _) = planner.plan_remarks(&prefix, "\n");
    for (_, n) in graph.nodes.iter() {
        if matches!(n.kind, NodeKind::Dynamic { .. }) {
            refusals
                .push(format!("{prefix}not fused: %{}: a node of a dynamic command group is never fused\n", n.name));
        }
    }
    let mut planned = Vec::new();
    for group in groups {
        match fuse_group(module, graph, &cands, &group, rules, reserved, memo, ctx) {
            Ok(p) => planned.push(p),
            Err(why) => {
                let names: Vec<String> = group.members.iter().map(|&m| format!("%{}", node_name(graph, m))).collect();
                refusals.push(format!("{prefix}not fused: {}: {why}\n", names.join(", ")));
            }
        }
    }
    Ok(Plan { planned, refusals, notes: not_candidates })
}

/// What [`plan_graph`] found in one graph.
#[derive(Default)]
struct Plan {
    /// The groups that fuse.
    planned: Vec<Planned>,
    /// Remarks of links and groups a legality rule refused (the `refused` statistic).
    refusals: Vec<String>,
    /// Remarks of kernel nodes that are no candidate, and of a graph with fewer than two.
    notes: Vec<String>,
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

/// Saturates, extracts and emits one group's term: the part of fusing a group that depends
/// only on its [`lang::Signature`]. Returns the kernel it emitted (named `name`) with it.
fn saturate(
    module: &Module,
    graph: &Graph,
    members: &[Handle<Node>],
    dead: &[MemRef],
    rules: &[rules::Rule],
    name: &str,
    memo: &mut Memo,
) -> Result<(Fused, cmdgraph_ir::kernel::Kernel), String> {
    let mut term = lang::build(module, graph, members, dead)?;
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
    let mut rules: BTreeMap<String, usize> = BTreeMap::new();
    for it in &runner.iterations {
        for (name, count) in &it.applied {
            *rules.entry(name.to_string()).or_insert(0) += count;
        }
    }
    let mem_names: Vec<String> = term.mems.iter().map(|m| mem_name(module, graph, m.mem)).collect();
    let mem_names = dedupe(mem_names);
    let (kernel, _) = lang::emit(&term, &expr, name.to_string(), &mem_names)?;
    let next = memo.shapes.len();
    let shape = *memo.shapes.entry(shape_key(&kernel)).or_insert(next);
    let fused = Fused {
        mems: lang::accessed(&expr)?.into_keys().collect(),
        shape,
        after: cost::dag_bytes(&expr, &term),
        saturation: Rc::new(explain::Saturation::new(
            rules,
            (runner.egraph.total_size(), runner.egraph.number_of_classes(), runner.iterations.len(), stop),
        )),
    };
    Ok((fused, kernel))
}

/// Fuses one group: saturates its term unless a group with the same signature already did.
#[allow(clippy::too_many_arguments)]
fn fuse_group(
    module: &Module,
    graph: &Graph,
    cands: &[Option<legality::Candidate>],
    group: &legality::Group,
    rules: &[rules::Rule],
    reserved: &mut BTreeSet<String>,
    memo: &mut Memo,
    ctx: &mut PassContext,
) -> Result<Planned, String> {
    let members: Vec<Handle<Node>> = group.members.iter().filter_map(|&m| legality::node(m)).collect();
    let dead: Vec<MemRef> = group.dead.iter().filter_map(|&a| legality::node(a)).map(MemRef::Alloc).collect();
    let keep = *group.members.iter().max().ok_or("empty group")?;
    let member_names: Vec<String> = group.members.iter().map(|&m| node_name(graph, m)).collect();
    let name = unique_kernel_name(reserved, &fused_name(&member_names));
    let signature = lang::signature(graph, module, &members, &dead);
    let known = signature.as_ref().and_then(|s| memo.by_signature.get(&s.key)).cloned();
    let (fused, kernel) = match known {
        Some(outcome) => (outcome?, None),
        None => {
            ctx.bump("egraph-runs", 1);
            let outcome = saturate(module, graph, &members, &dead, rules, &name, memo);
            if let Some(s) = &signature {
                let shared = outcome.as_ref().map(|(f, _)| Rc::new(f.clone())).map_err(String::clone);
                memo.by_signature.insert(s.key.clone(), shared);
            }
            let (fused, kernel) = outcome?;
            (Rc::new(fused), Some(kernel))
        }
    };
    // The node's arguments: the buffers the fused kernel keeps, then every dynamic scalar.
    let args = match &signature {
        Some(s) => {
            let mut args = Vec::new();
            for &k in &fused.mems {
                let m = s.mems.get(k).ok_or("bad memory leaf")?;
                args.push(Arg::Value(ArgValue::Pointer(Pointer { base: m.mem, offset: 0 })));
            }
            args.extend(s.scalars.iter().map(|s| s.arg.clone()));
            args
        }
        None => return Err("an argument is not a plain pointer or scalar".into()),
    };
    let n = cands.get(keep as usize).and_then(|c| c.as_ref()).map(|c| c.n).ok_or("not a candidate")?;
    let before: u64 = group.members.iter().filter_map(|&m| cands.get(m as usize)?.as_ref()).map(|c| c.bytes).sum();
    let mut kinds = Vec::new();
    if group.vertical {
        kinds.push("vertical");
    }
    if group.horizontal {
        kinds.push("horizontal");
    }
    let fusion = explain::Fusion {
        graph: graph.name.clone(),
        members: member_names.clone(),
        node: node_name(graph, keep),
        kernel: name.clone(),
        kinds,
        temporaries: group.dead.iter().map(|&a| node_name(graph, a)).collect(),
        bytes: (before.saturating_mul(n), fused.after.saturating_mul(n)),
        saturation: Rc::clone(&fused.saturation),
    };
    let mut nodes = group.members.clone();
    nodes.sort_unstable();
    let bypass = group.removed.clone();
    let kernel_placeholder = cmd_kernel(graph, keep).ok_or("not a kernel node")?;
    let command = KernelCommand { kernel: kernel_placeholder, launch: Launch::Range(vec![n]), args };
    reserved.insert(name);
    Ok(Planned {
        kernel,
        shape: fused.shape,
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

/// Most bytes of a fused kernel's name before members are left out of it.
pub const MAX_FUSED_NAME: usize = 200;

/// The fused kernel's name: `fused.` and every member's name in the order they ran,
/// separated by `.` (`fused.k0.k1.k2`), so that the kernel (and `cmdgraph diff`, which reads
/// it) names all the nodes it absorbed. Past [`MAX_FUSED_NAME`] bytes the remaining members
/// are counted instead, `fused.k0.k1.$62more`: `$` is a name character no pass gives a node,
/// and a group may have 64 members of names up to 1024 bytes, more than a name may hold.
/// Deterministic: the names and their order only.
pub fn fused_name(members: &[String]) -> String {
    let mut name = String::from("fused");
    for (i, m) in members.iter().enumerate() {
        let left = members.len() - i - 1;
        // Room for this member and, when members follow, for the count that may replace them.
        let reserve = if left > 0 { 8 } else { 0 };
        if name.len() + 1 + m.len() + reserve > MAX_FUSED_NAME {
            name.push_str(&format!(".${}more", members.len() - i));
            return name;
        }
        name.push('.');
        name.push_str(m);
    }
    name
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

#[cfg(test)]
mod tests {
    use super::{fused_name, MAX_FUSED_NAME};

    #[test]
    fn fused_names_list_every_member_until_the_cap_then_count_the_rest() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(fused_name(&names(&["k0", "k1", "k2"])), "fused.k0.k1.k2");
        assert_eq!(fused_name(&names(&["s.a", "b"])), "fused.s.a.b");
        let long: Vec<String> = (0..64).map(|i| format!("node_with_a_long_name_{i:02}")).collect();
        let name = fused_name(&long);
        assert!(name.len() <= MAX_FUSED_NAME, "{name}");
        assert!(name.starts_with("fused.node_with_a_long_name_00.node_with_a_long_name_01."), "{name}");
        let listed = name.matches("node_with_a_long_name_").count();
        assert!(name.ends_with(&format!(".${}more", 64 - listed)), "{name}");
        // A first member longer than the cap leaves only the count.
        assert_eq!(fused_name(&names(&[&"x".repeat(1024), "b"])), "fused.$2more");
    }
}
