//! `iterate-in-kernel`: a `while` node whose body is one kernel on one work-group runs up to
//! [`ITERATIONS_PER_LAUNCH`] of its iterations in each launch of that kernel.
//!
//! Each round of a `while` loop on Vulkan is a dispatch and a pipeline barrier
//! (docs/conditional.md); for a small body those, not the work, are the time: on the H200
//! about 5 µs a round, where the same kernel chained inside one dispatch behind work-group
//! barriers takes about 3.5 (docs/performance.md, `cond`). Inside one work-group a
//! `group_barrier` orders everything a next iteration reads, so the body's kernel can loop
//! itself: the pass gives the node a copy of its body graph, `@<body>.rounds`, whose kernel
//! node runs `cmdgraph_ir::inline::rounds_kernel` of the body's kernel: per turn it reads the
//! condition word, zeroes the body's `local` arrays again (a launch starts with them zero),
//! and runs the body when the word is non-zero, between two barriers. The `while` node then
//! runs that body while the word is non-zero, as before: the same iterations in the same
//! order, so every result is bit for bit the loop's; only the node's round count
//! (`Executor::loop_rounds`) counts launches of up to 16 iterations.
//!
//! A node is rewritten when:
//!
//! - it is a `while` node in a graph that is not `updatable`;
//! - its body graph holds exactly one node, a kernel node with an IR body, no dynamic
//!   parameter and no work-group memory parameter (`merge-branches`' rule);
//! - it launches one work-group: `single_task`, an `nd_range` whose local size is its
//!   global size (offsets zero), or a `range` of at most `fuse_stages::MAX_ONE_GROUP`
//!   work-items, which becomes that `nd_range`; with `local` arrays, of one dimension,
//!   each of a scalar type (every work-item zeroes its share of them each turn).
//!
//! In the default pipeline after `fuse-stages`, which makes such bodies of small kernels.
//! It multiplies the kernel's loop back-edges by 16 (llvmpipe ends an invocation's loops
//! past 65535 back-edges; codegen unrolls to stay within it where it can tell, and the
//! executor warns where it cannot, docs/codegen.md) and makes a loop's round count
//! (`Executor::loop_rounds`, the round limit) count launches; the body graph stays in the
//! module for other users.

use crate::fuse::build::{new_kernel_name, place_kernels};
use crate::fuse_stages::{bind_commands, MAX_ONE_GROUP};
use crate::merge_branches::only_kernel;
use crate::{PassContext, PassError, PassInfo};
use cmdgraph_ir::graph::{Arg, ArgValue, CondKind, Graph, KernelCommand, Launch, NodeKind};
use cmdgraph_ir::inline::{rounds_kernel, Stage};
use cmdgraph_ir::kernel::{Kernel, KernelBody, OpKind, Param, ParamType};
use cmdgraph_ir::module::Item;
use cmdgraph_ir::types::{Access, Type};
use cmdgraph_ir::{Handle, Module, Span};
use std::collections::BTreeSet;

/// Iterations of the loop one launch of the rewritten body runs at most. More make a
/// launch longer after the loop ends (each further turn reads the word and meets two
/// barriers) and multiply the kernel's loop back-edges; fewer pay more dispatches.
pub const ITERATIONS_PER_LAUNCH: u64 = 16;

/// Registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "iterate-in-kernel",
    summary: "run up to 16 iterations of a `while` whose body is one kernel on one work-group inside each launch of it",
    statistics: &[
        ("loops-rewritten", "`while` nodes whose body now iterates inside its kernel"),
        ("refused", "`while` nodes a rule kept (see --explain)"),
    ],
    preserves: "node names and edges; every result bit for bit; body graphs (the node gets a copy); updatable \
                graphs are left alone",
    run,
};

/// The launch the rewritten body runs with and its work-items (`None`: a `single_task`), or
/// why the body cannot iterate in one work-group.
fn one_group(launch: &Launch, kernel: &Kernel) -> Result<(Launch, Option<u64>), String> {
    let (dims, launch) = match launch {
        Launch::SingleTask => return Ok((Launch::SingleTask, None)),
        Launch::NdRange { global, local, offset } if global == local && offset.iter().all(|&o| o == 0) => {
            (global.clone(), launch.clone())
        }
        Launch::Range(r) if r.iter().product::<u64>() <= MAX_ONE_GROUP => {
            (r.clone(), Launch::NdRange { global: r.clone(), local: r.clone(), offset: Vec::new() })
        }
        _ => return Err("it launches more than one work-group".into()),
    };
    let KernelBody::Ir(body) = &kernel.body else { return Err("no IR body".into()) };
    let arrays: Vec<Type> = body
        .ops
        .iter()
        .filter_map(|(_, op)| match &op.kind {
            OpKind::LocalAlloc { elem, .. } => Some(*elem),
            _ => None,
        })
        .collect();
    if !arrays.is_empty() && dims.iter().skip(1).any(|&d| d != 1) {
        return Err("it has `local` arrays and a work-group of more than one dimension".into());
    }
    if arrays.iter().any(|t| t.lanes != 1) {
        return Err("it has a `local` array of vectors".into());
    }
    Ok((launch, Some(dims.first().copied().unwrap_or(1))))
}

/// One `while` node to rewrite: the body graph it gets.
struct Rewrite {
    node: Handle<cmdgraph_ir::Node>,
    body: Handle<Graph>,
    kernel: Kernel,
    cmd: (Launch, Vec<Arg>),
}

fn plan(module: &Module, graph: &Graph, taken: &mut BTreeSet<String>, ctx: &mut PassContext) -> Vec<Rewrite> {
    let mut out = Vec::new();
    for (h, node) in graph.nodes.iter() {
        let NodeKind::Conditional { kind: CondKind::While, cond, bodies } = &node.kind else { continue };
        let Some(&body) = bodies.first() else { continue };
        let made = only_kernel(module, body).and_then(|(kernel, cmd)| {
            let (launch, group) = one_group(&cmd.launch, kernel)?;
            let cond_param =
                Param { name: "cond".into(), ty: ParamType::Buffer { elem: Type::U32, access: Access::Read } };
            let cond_arg = Arg::Value(ArgValue::Pointer(*cond));
            let (params, bindings, args) = bind_commands(vec![cond_param], vec![cond_arg], [(kernel, cmd)].into_iter());
            let name = new_kernel_name(taken, format!("{}.rounds", kernel.name));
            let params_of_body = bindings.into_iter().next().unwrap_or_default();
            let stage = Stage { kernel, params: params_of_body, prefix: "body".into(), coarse: None };
            let rounds = (ITERATIONS_PER_LAUNCH, group);
            let k =
                rounds_kernel(&module.functions, name.clone(), params, 0, &stage, rounds).map_err(|e| e.to_string())?;
            taken.insert(name);
            Ok((k, launch, args))
        });
        match made {
            Ok((kernel, launch, args)) => {
                ctx.remarks.push(format!(
                    "iterate-in-kernel: @{}: %{} runs up to {ITERATIONS_PER_LAUNCH} iterations a launch of @{}\n",
                    graph.name, node.name, kernel.name
                ));
                out.push(Rewrite { node: h, body, kernel, cmd: (launch, args) });
            }
            Err(why) => {
                ctx.remarks.push(format!("iterate-in-kernel: @{}: %{} not rewritten: {why}\n", graph.name, node.name));
                ctx.bump("refused", 1);
            }
        }
    }
    out
}

fn run(module: &mut Module, ctx: &mut PassContext) -> Result<(), PassError> {
    let mut taken: BTreeSet<String> = module.kernels.iter().map(|(_, k)| k.name.clone()).collect();
    let mut added = Vec::new();
    let graphs: Vec<_> = module.graphs.handles().collect();
    for gh in graphs {
        let Some(graph) = module.graphs.try_get(gh) else { continue };
        if graph.properties.updatable {
            continue;
        }
        for r in plan(module, graph, &mut taken, ctx) {
            let kernel = module.kernels.append(r.kernel, Span::UNDEFINED);
            added.push(Item::Kernel(kernel));
            let copy = body_copy(module, r.body, KernelCommand { kernel, launch: r.cmd.0, args: r.cmd.1 }, ctx);
            let node = module.graphs.try_get_mut(gh).and_then(|g| g.nodes.try_get_mut(r.node));
            if let Some(NodeKind::Conditional { bodies, .. }) = node.map(|n| &mut n.kind) {
                bodies[0] = copy;
                ctx.bump("loops-rewritten", 1);
            }
        }
    }
    place_kernels(module, added);
    Ok(())
}

/// `@<body>.rounds`: a copy of body graph `body` (after it in the module) whose one node
/// runs `cmd`; its node's origin is the body's node.
fn body_copy(module: &mut Module, body: Handle<Graph>, cmd: KernelCommand, ctx: &mut PassContext) -> Handle<Graph> {
    let mut g = module.graphs[body].clone();
    let source = g.name.clone();
    g.name = crate::split_devices::unused_name(module, &format!("{source}.rounds"));
    let nodes: Vec<_> = g.nodes.handles().collect();
    for n in nodes {
        let node = &mut g.nodes[n];
        node.kind = NodeKind::Kernel(cmd.clone());
        ctx.origins.insert((g.name.clone(), node.name.clone()), vec![(source.clone(), node.name.clone())]);
    }
    let span = module.graphs.span(body);
    let h = module.graphs.append(g, span);
    let at = module.items.iter().position(|i| *i == Item::Graph(body)).map_or(module.items.len(), |i| i + 1);
    module.items.insert(at, Item::Graph(h));
    h
}
