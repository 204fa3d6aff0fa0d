//! Which kernel variants a module needs and which launch runs which: every kernel node and
//! every kernel alternative of every `dynamic` node, in module order.

use super::{CompileError, KernelCompiler};
use crate::{CodegenError, CompiledKernel, Handle, Kernel, Module, Variant};
use cmdgraph_ir::bundle::LaunchVariant;
use cmdgraph_ir::graph::{ArgValue, CondKind, KernelCommand, NodeKind};
use cmdgraph_ir::{Arg, Graph, ParamType, Pointer, ScalarType, Span};
use std::borrow::Cow;
use std::collections::hash_map::Entry;
use std::collections::HashMap;

/// One distinct variant to compile.
pub struct Needed {
    /// The kernel's name (the first key, so variants come out sorted by name).
    pub name: String,
    /// The kernel.
    pub kernel: Handle<Kernel>,
    /// The variant.
    pub variant: Variant,
    /// `@graph %node` of the first launch needing it, for error messages.
    pub first_use: String,
    /// That launch's statement in the source ([`Span::UNDEFINED`] when unknown).
    pub first_use_span: Span,
}

/// The variants and the launch tables.
pub struct Launches {
    /// Distinct variants sorted by (kernel name, work-group size, variant): bundle order.
    pub variants: Vec<Needed>,
    /// Per graph name, its launch table in module order.
    tables: HashMap<String, Vec<LaunchVariant>>,
}

impl Launches {
    /// The launch table of graph `name`, taken out (each graph's is asked for once).
    pub fn take_table(&mut self, name: &str) -> Vec<LaunchVariant> {
        self.tables.remove(name).unwrap_or_default()
    }
}

/// One launch: node, alternative, provisional variant number.
type Use<'a> = (&'a str, Option<u32>, u32);

/// Chooses the variant of every launch in `module`.
///
/// Linear in the launches: each launch's variant is looked up in a hash map keyed by
/// (kernel, variant), giving the variant a provisional number in first-use order; the
/// distinct variants are sorted once at the end into bundle order and the launch tables
/// renumbered. `@graph %node` is formatted only for a variant's first use (or an error).
pub fn collect(module: &Module, compiler: &dyn KernelCompiler) -> Result<Launches, CompileError> {
    // Provisional number of each distinct (kernel, variant), in first-use order.
    let mut ids: HashMap<(Handle<Kernel>, Variant), u32> = HashMap::new();
    let mut first: Vec<Needed> = Vec::new();
    // Per graph: its name and (node, alternative, provisional number) per launch.
    let mut uses: Vec<(&str, Vec<Use>)> = Vec::new();
    let mut total = 0usize;
    // Launches in conditional bodies get predicated variants (docs/abi.md, "Predicated
    // variants"); a compiler that cannot make one (external SPIR-V) leaves the predicate
    // out, and the executor predicates such a body with conditional rendering instead.
    let bodies = cmdgraph_ir::conditional::body_graphs(module);
    let loops = loop_bodies(module);
    for (graph_handle, graph) in module.graphs.iter() {
        let in_body = bodies.contains(&graph_handle);
        let condition = loops.get(&graph_handle).copied().flatten().filter(|_| sole_kernel(graph));
        let mut table = Vec::new();
        for (node_handle, node) in graph.nodes.iter() {
            for (alternative, cmd) in graph.kernel_commands(node_handle) {
                let at = || format!("@{} %{}", graph.name, node.name);
                let at_span = graph.nodes.span(node_handle);
                let args = resolve(graph, &cmd.args);
                let mut variant = compiler
                    .choose_variant(module, cmd.kernel, &cmd.launch, &args)
                    .map_err(|error| CompileError::Codegen { at: at(), at_span, error })?;
                variant.predicated = in_body;
                variant.loop_tail = condition.and_then(|c| condition_param(module, cmd, &args, c));
                let next = first.len() as u32;
                let id = match ids.entry((cmd.kernel, variant)) {
                    Entry::Occupied(e) => *e.get(),
                    Entry::Vacant(e) => {
                        let name = module.kernels.try_get(cmd.kernel).map(|k| k.name.clone()).unwrap_or_default();
                        first.push(Needed {
                            name,
                            kernel: cmd.kernel,
                            variant: e.key().1.clone(),
                            first_use: at(),
                            first_use_span: at_span,
                        });
                        *e.insert(next)
                    }
                };
                table.push((node.name.as_str(), alternative, id));
            }
        }
        total += table.len();
        uses.push((graph.name.as_str(), table));
    }
    // Bundle order: by (kernel name, work-group size, variant).
    let mut order: Vec<u32> = (0..first.len() as u32).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&first[a as usize], &first[b as usize]);
        (&x.name, x.variant.workgroup_size, &x.variant).cmp(&(&y.name, y.variant.workgroup_size, &y.variant))
    });
    let mut rank = vec![0u32; first.len()];
    for (r, &id) in order.iter().enumerate() {
        rank[id as usize] = r as u32;
    }
    super::count_work(total);
    let mut tables: HashMap<String, Vec<LaunchVariant>> = HashMap::with_capacity(uses.len());
    for (g, table) in uses {
        let table = table.into_iter().map(|(node, alternative, id)| LaunchVariant {
            node: node.to_string(),
            alternative,
            kernel: rank.get(id as usize).copied().unwrap_or(0),
        });
        tables.entry(g.to_string()).or_default().extend(table);
    }
    let mut slots: Vec<Option<Needed>> = first.into_iter().map(Some).collect();
    let variants = order.iter().filter_map(|&id| slots.get_mut(id as usize).and_then(Option::take)).collect();
    Ok(Launches { variants, tables })
}

/// The condition of each graph that is the body of a `while` node (`None` when it is the
/// body of two loops with different conditions).
fn loop_bodies(module: &Module) -> HashMap<Handle<Graph>, Option<Pointer>> {
    let mut out: HashMap<Handle<Graph>, Option<Pointer>> = HashMap::new();
    for (_, graph) in module.graphs.iter() {
        for (_, node) in graph.nodes.iter() {
            if let NodeKind::Conditional { kind: CondKind::While, cond, bodies } = &node.kind {
                for &b in bodies {
                    let entry = out.entry(b).or_insert(Some(*cond));
                    if *entry != Some(*cond) {
                        *entry = None;
                    }
                }
            }
        }
    }
    out
}

/// Whether `graph` runs one kernel and nothing else but ordering nodes: a loop body whose
/// kernel can compute the next round's predicate itself (docs/abi.md, "Loop predicates").
fn sole_kernel(graph: &Graph) -> bool {
    let mut kernels = 0;
    for (_, node) in graph.nodes.iter() {
        match &node.kind {
            NodeKind::Kernel(_) => kernels += 1,
            NodeKind::Empty | NodeKind::Barrier { .. } => {}
            _ => return false,
        }
    }
    kernels == 1
}

/// The first buffer parameter of `u32` or `i32` elements whose argument points into the
/// memory of `condition`: where a loop's kernel reads the condition at its end.
fn condition_param(module: &Module, cmd: &KernelCommand, args: &[Arg], condition: Pointer) -> Option<u32> {
    let kernel = module.kernels.try_get(cmd.kernel)?;
    (kernel.params.iter().zip(args).enumerate())
        .find(|(_, (p, a))| {
            let word = matches!(p.ty, ParamType::Buffer { elem, .. } if elem.lanes == 1
                && matches!(elem.scalar, ScalarType::U32 | ScalarType::I32));
            let base = match a {
                Arg::Value(ArgValue::Pointer(p)) => Some(p.base),
                Arg::Value(ArgValue::Accessor(a)) => Some(a.buffer),
                _ => None,
            };
            word && base == Some(condition.base)
        })
        .map(|(i, _)| i as u32)
}

/// Arguments with dynamic parameters replaced by their current values (borrowed as they
/// are when there is none, the usual case).
fn resolve<'a>(graph: &Graph, args: &'a [Arg]) -> Cow<'a, [Arg]> {
    if !args.iter().any(|a| matches!(a, Arg::Dyn(_))) {
        return Cow::Borrowed(args);
    }
    Cow::Owned(
        args.iter()
            .map(|a| match a {
                Arg::Dyn(p) => graph.dyn_params.try_get(*p).map(|p| Arg::Value(p.value.clone())).unwrap_or(a.clone()),
                Arg::Value(_) => a.clone(),
            })
            .collect(),
    )
}

/// A compiled kernel must be the one asked for: the executor finds variants by these fields.
/// Anything else is a bug in the kernel compiler (an internal error at the kernel, `span`).
pub fn check(k: CompiledKernel, name: &str, variant: &Variant, span: Span) -> Result<CompiledKernel, CodegenError> {
    let internal =
        |what: String| CodegenError::Internal { kernel: name.to_string(), span, what, message: String::new() };
    if k.kernel != name || k.workgroup_size != variant.workgroup_size {
        return Err(internal(format!(
            "the code generator returned @{} at work-group size {} for @{name} at {}",
            k.kernel,
            crate::external::dims(&k.workgroup_size),
            crate::external::dims(&variant.workgroup_size)
        )));
    }
    if k.spirv.is_empty() {
        return Err(internal("the code generator returned no SPIR-V".to_string()));
    }
    Ok(k)
}
