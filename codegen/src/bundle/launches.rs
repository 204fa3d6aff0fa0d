//! Which kernel variants a module needs and which launch runs which: every kernel node and
//! every kernel alternative of every `dynamic` node, in module order.

use super::{CompileError, KernelCompiler};
use crate::{CodegenError, CompiledKernel, Handle, Kernel, Module, Variant};
use cmdgraph_ir::bundle::LaunchVariant;
use cmdgraph_ir::{Alternative, Arg, Graph, KernelCommand, NodeKind, Span};
use std::collections::{BTreeMap, HashMap};

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

/// Chooses the variant of every launch in `module`.
pub fn collect(module: &Module, compiler: &dyn KernelCompiler) -> Result<Launches, CompileError> {
    type Key = (String, [u32; 3], Variant);
    let mut keys: BTreeMap<Key, (Handle<Kernel>, String, Span)> = BTreeMap::new();
    let mut uses: Vec<(String, String, Option<u32>, Key)> = Vec::new();
    for (_, graph) in module.graphs.iter() {
        for (node_handle, node) in graph.nodes.iter() {
            let commands: Vec<(Option<u32>, &KernelCommand)> = match &node.kind {
                NodeKind::Kernel(cmd) => vec![(None, cmd)],
                NodeKind::Dynamic { dcg } => graph
                    .dcgs
                    .try_get(*dcg)
                    .map(|d| {
                        d.alternatives
                            .iter()
                            .enumerate()
                            .filter_map(|(i, a)| match a {
                                Alternative::Kernel(cmd) => Some((Some(i as u32), cmd)),
                                _ => None,
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
                _ => continue,
            };
            for (alternative, cmd) in commands {
                let at = format!("@{} %{}", graph.name, node.name);
                let at_span = graph.nodes.span(node_handle);
                let name = module.kernels.try_get(cmd.kernel).map(|k| k.name.clone()).unwrap_or_default();
                let args = resolve(graph, &cmd.args);
                let variant = compiler
                    .choose_variant(module, cmd.kernel, &cmd.launch, &args)
                    .map_err(|error| CompileError::Codegen { at: at.clone(), at_span, error })?;
                let key = (name, variant.workgroup_size, variant);
                keys.entry(key.clone()).or_insert((cmd.kernel, at, at_span));
                uses.push((graph.name.clone(), node.name.clone(), alternative, key));
            }
        }
    }
    let index: BTreeMap<&Key, u32> = keys.keys().enumerate().map(|(i, k)| (k, i as u32)).collect();
    let mut tables: HashMap<String, Vec<LaunchVariant>> = HashMap::new();
    super::count_work(uses.len());
    for (g, node, alternative, key) in uses {
        let kernel = index.get(&key).copied().unwrap_or(0);
        tables.entry(g).or_default().push(LaunchVariant { node, alternative, kernel });
    }
    let variants = keys
        .into_iter()
        .map(|((name, _, variant), (kernel, first_use, first_use_span))| Needed {
            name,
            kernel,
            variant,
            first_use,
            first_use_span,
        })
        .collect();
    Ok(Launches { variants, tables })
}

/// Arguments with dynamic parameters replaced by their current values.
fn resolve(graph: &Graph, args: &[Arg]) -> Vec<Arg> {
    args.iter()
        .map(|a| match a {
            Arg::Dyn(p) => graph.dyn_params.try_get(*p).map(|p| Arg::Value(p.value.clone())).unwrap_or(a.clone()),
            Arg::Value(_) => a.clone(),
        })
        .collect()
}

/// A compiled kernel must be the one asked for: the executor finds variants by these fields.
/// Anything else is a bug in the kernel compiler (an internal error at the kernel, `span`).
pub fn check(k: CompiledKernel, name: &str, variant: &Variant, span: Span) -> Result<CompiledKernel, CodegenError> {
    let internal =
        |what: String| CodegenError::Internal { kernel: name.to_string(), span, what, message: String::new() };
    if k.kernel != name || k.workgroup_size != variant.workgroup_size {
        return Err(internal(format!(
            "the code generator returned @{} at {:?} for @{name} at {:?}",
            k.kernel, k.workgroup_size, variant.workgroup_size
        )));
    }
    if k.spirv.is_empty() {
        return Err(internal("the code generator returned no SPIR-V".to_string()));
    }
    Ok(k)
}
