//! `merge-branches`: an `if C then @a [else @b]` or `switch C cases(@a, @b, ...)` node whose
//! bodies are one kernel node each, launched alike, becomes one kernel node that reads the
//! condition word and runs the body the word picks (`cmdgraph_ir::inline::branch_kernel`; a
//! `switch` word past the last case runs none, as the node does).
//!
//! The executor runs such a node as its bodies' predicated kernels, each testing the word
//! at entry, with a barrier between the bodies when they touch the same memory: a dispatch
//! per body and the barriers between them for one kernel's work (docs/conditional.md). One
//! kernel that branches on the word is one dispatch. A node merges when:
//!
//! - it is an `if` or a `switch` in a graph that is not `updatable`;
//! - each body graph holds exactly one node, a kernel node with an IR body whose argument
//!   count matches its parameters, with no dynamic parameter, and both launch alike;
//! - no body kernel takes a work-group memory parameter, and when several bodies allocate
//!   work-group memory (`local`), together they stay within `fuse_stages::MAX_LOCAL_BYTES`
//!   (every arm's allocations are declared in the one kernel); barriers and subgroup
//!   operations are fine under the branch, which is uniform;
//! - no body may write the condition's memory (the word is read once, before either body,
//!   and every work-item must see the same one).
//!
//! The merged kernel runs exactly the chosen body's operations, so results are bit for bit
//! those of the `if` node. Body graphs stay in the module (other nodes may use them).
//! Opt-in: not in the default pipeline, whose `if` and `switch` nodes the executor's
//! conditional path runs (and reports). `while` nodes are left alone.

use crate::fuse::build::{new_kernel_name, place_kernels};
use crate::fuse_stages::{bind_commands, local_alloc_bytes, MAX_LOCAL_BYTES};
use crate::{PassContext, PassError, PassInfo};
use cmdgraph_ir::graph::{Arg, ArgValue, CondKind, Graph, KernelCommand, Launch, NodeKind, Pointer};
use cmdgraph_ir::inline::{branch_kernel, Branching, Stage};
use cmdgraph_ir::kernel::{Kernel, KernelBody, Param, ParamType};
use cmdgraph_ir::module::Item;
use cmdgraph_ir::types::{Access, Type};
use cmdgraph_ir::{Handle, Module, Span};
use std::collections::BTreeSet;

/// Registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "merge-branches",
    summary:
        "turn an `if` or `switch` whose bodies are one kernel each into one kernel that branches on the condition word",
    statistics: &[
        ("branches-merged", "`if` and `switch` nodes replaced by one kernel node"),
        ("refused", "`if` and `switch` nodes a rule kept (see --explain)"),
    ],
    preserves: "node names and edges; every result bit for bit; body graphs; updatable graphs are left alone",
    run,
};

/// The body graph's one kernel node, or why it cannot merge (also `iterate-in-kernel`'s rule).
pub(crate) fn only_kernel(module: &Module, body: Handle<Graph>) -> Result<(&Kernel, &KernelCommand), String> {
    let graph = module.graphs.try_get(body).ok_or("a missing body graph")?;
    let mut nodes = graph.nodes.iter();
    let (Some((_, node)), None) = (nodes.next(), nodes.next()) else {
        return Err(format!("@{} does not hold exactly one node", graph.name));
    };
    let NodeKind::Kernel(cmd) = &node.kind else {
        return Err(format!("@{}'s node is not a kernel node", graph.name));
    };
    let kernel = module.kernels.try_get(cmd.kernel).ok_or("a missing kernel")?;
    if !matches!(kernel.body, KernelBody::Ir(_)) {
        return Err(format!("@{} has no IR body", kernel.name));
    }
    if kernel.params.len() != cmd.args.len() {
        return Err(format!(
            "%{} passes {} arguments to @{}'s {} parameters",
            node.name,
            cmd.args.len(),
            kernel.name,
            kernel.params.len()
        ));
    }
    if cmd.args.iter().any(|a| matches!(a, Arg::Dyn(_))) {
        return Err(format!("%{} has a dynamic parameter", node.name));
    }
    if kernel.params.iter().any(|p| matches!(p.ty, ParamType::Local { .. })) {
        return Err(format!("@{} takes a work-group memory parameter", kernel.name));
    }
    Ok((kernel, cmd))
}

/// Bytes of work-group memory the `local` ops of `kernel` allocate.
fn local_bytes(kernel: &Kernel) -> u64 {
    match &kernel.body {
        KernelBody::Ir(ir) => local_alloc_bytes(ir),
        _ => 0,
    }
}

/// Whether `cmd` may write the memory `cond` points into.
fn writes_condition(kernel: &Kernel, cmd: &KernelCommand, cond: &Pointer) -> bool {
    kernel.params.iter().zip(&cmd.args).any(|(p, a)| {
        let writable = matches!(p.ty, ParamType::Buffer { access, .. } if access != Access::Read);
        let same = match a {
            Arg::Value(ArgValue::Pointer(q)) => q.base == cond.base,
            Arg::Value(ArgValue::Accessor(_)) => true,
            _ => false,
        };
        writable && same
    })
}

/// One `if` or `switch` node to replace: the merged kernel and how the new kernel node
/// launches it.
struct Merge {
    node: Handle<cmdgraph_ir::Node>,
    kernel: Kernel,
    launch: Launch,
    args: Vec<Arg>,
}

/// What [`plan`] found in one graph.
#[derive(Default)]
struct Planned {
    merges: Vec<Merge>,
    remarks: Vec<String>,
    refused: u64,
}

fn plan(module: &Module, graph: &Graph, taken: &mut BTreeSet<String>) -> Planned {
    let mut out = Planned::default();
    let refuse = |out: &mut Planned, node: &str, why: String| {
        out.remarks.push(format!("merge-branches: @{}: %{node} not merged: {why}\n", graph.name));
        out.refused += 1;
    };
    for (h, node) in graph.nodes.iter() {
        let NodeKind::Conditional { kind, cond, bodies } = &node.kind else { continue };
        let how = match kind {
            CondKind::If => Branching::If,
            CondKind::Switch => Branching::Switch,
            CondKind::While => continue,
        };
        let arms: Result<Vec<_>, String> = bodies.iter().map(|&b| only_kernel(module, b)).collect();
        let arms = arms.and_then(|arms| {
            if arms.windows(2).any(|w| w[0].1.launch != w[1].1.launch) {
                return Err("the bodies launch differently".into());
            }
            if let Some((k, _)) = arms.iter().find(|(k, c)| writes_condition(k, c, cond)) {
                return Err(format!("@{} may write the condition's memory", k.name));
            }
            // Every arm's `local` ops are declared in the one kernel, chosen or not.
            let each: Vec<u64> = arms.iter().map(|(k, _)| local_bytes(k)).collect();
            let local = each.iter().copied().fold(0, u64::saturating_add);
            if local > MAX_LOCAL_BYTES && each.iter().filter(|&&b| b > 0).count() > 1 {
                return Err(format!("together the bodies would use {local} bytes of work-group memory"));
            }
            Ok(arms)
        });
        let arms = match arms {
            Ok(arms) => arms,
            Err(why) => {
                refuse(&mut out, &node.name, why);
                continue;
            }
        };
        let Some(&(_, first)) = arms.first() else { continue };
        let cond_param = Param { name: "cond".into(), ty: ParamType::Buffer { elem: Type::U32, access: Access::Read } };
        let cond_arg = Arg::Value(ArgValue::Pointer(*cond));
        let (params, bindings, args) = bind_commands(vec![cond_param], vec![cond_arg], arms.iter().copied());
        let names: Vec<&str> = arms.iter().map(|(k, _)| k.name.as_str()).collect();
        let name = new_kernel_name(taken, format!("branch.{}", names.join(".")));
        let prefix = |i: usize| match how {
            Branching::If => ["then", "else"].get(i).map_or_else(|| format!("arm{i}"), |p| p.to_string()),
            Branching::Switch => format!("case{i}"),
        };
        let stages: Vec<Stage<'_>> = arms
            .iter()
            .zip(bindings)
            .enumerate()
            .map(|(i, ((k, _), params))| Stage { kernel: k, params, prefix: prefix(i), coarse: None })
            .collect();
        match branch_kernel(&module.functions, name.clone(), params, 0, &stages, how) {
            Ok(kernel) => {
                taken.insert(name.clone());
                out.remarks.push(format!("merge-branches: @{}: %{} is one kernel @{name}\n", graph.name, node.name));
                out.merges.push(Merge { node: h, kernel, launch: first.launch.clone(), args });
            }
            Err(e) => refuse(&mut out, &node.name, e.to_string()),
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
        let planned = plan(module, graph, &mut taken);
        ctx.bump("refused", planned.refused);
        ctx.remarks.extend(planned.remarks);
        for m in planned.merges {
            let kernel = module.kernels.append(m.kernel, Span::UNDEFINED);
            added.push(Item::Kernel(kernel));
            let node = module.graphs.try_get_mut(gh).and_then(|g| g.nodes.try_get_mut(m.node));
            if let Some(node) = node {
                node.kind = NodeKind::Kernel(KernelCommand { kernel, launch: m.launch, args: m.args });
                ctx.bump("branches-merged", 1);
            }
        }
    }
    place_kernels(module, added);
    Ok(())
}
