//! The variant a launch needs: work-group size, dimensions and local capacities.

use crate::error::CodegenError;
use crate::Variant;
use cmdgraph_ir::{Arg, ArgValue, Graph, Handle, Kernel, Launch, Module, ParamType};

/// Most work-items in a work-group (Vulkan's guaranteed `maxComputeWorkGroupInvocations`
/// is 128, every current desktop and datacenter GPU and llvmpipe allow 1024).
pub const MAX_WORKGROUP_INVOCATIONS: u64 = 1024;

/// codegen's work-group size for a `range` launch of `dims` dimensions: 256 work-items,
/// as 256, 16x16 or 8x8x4.
pub fn choose_workgroup_size(dims: usize) -> [u32; 3] {
    match dims {
        0 => [1, 1, 1],
        1 => [256, 1, 1],
        2 => [16, 16, 1],
        _ => [8, 8, 4],
    }
}

/// `args` with every dynamic parameter replaced by its current value in `graph`, which is
/// what [`choose_variant`] needs to size work-group memory.
pub fn resolve_args(graph: &Graph, args: &[Arg]) -> Vec<Arg> {
    args.iter()
        .map(|a| match a {
            Arg::Dyn(d) => match graph.dyn_params.try_get(*d) {
                Some(p) => Arg::Value(p.value.clone()),
                None => a.clone(),
            },
            Arg::Value(_) => a.clone(),
        })
        .collect()
}

/// The variant that runs `kernel` with `launch` and `args` (dynamic parameters resolved,
/// see [`resolve_args`]).
pub fn choose_variant(
    module: &Module,
    kernel: Handle<Kernel>,
    launch: &Launch,
    args: &[Arg],
) -> Result<Variant, CodegenError> {
    let k = module.kernels.try_get(kernel).ok_or_else(|| CodegenError::launch("?", "kernel handle out of range"))?;
    let dims = launch.dims();
    let workgroup_size = match launch {
        Launch::SingleTask => [1, 1, 1],
        Launch::Range(r) => {
            if r.is_empty() || r.len() > 3 {
                return Err(CodegenError::launch(&k.name, format!("range of {} dimensions", r.len())));
            }
            choose_workgroup_size(dims)
        }
        Launch::NdRange { global, local, .. } => {
            if global.is_empty() || global.len() > 3 || local.len() != global.len() {
                return Err(CodegenError::launch(&k.name, "nd_range needs 1 to 3 dimensions and a local size each"));
            }
            let mut wg = [1u32; 3];
            for (slot, &l) in wg.iter_mut().zip(local) {
                *slot = u32::try_from(l).ok().filter(|&x| x > 0).ok_or_else(|| {
                    CodegenError::launch(&k.name, format!("local size {l} is not a positive 32-bit size"))
                })?;
            }
            let total: u64 = wg.iter().map(|&x| x as u64).product();
            if total > MAX_WORKGROUP_INVOCATIONS {
                return Err(CodegenError::launch(
                    &k.name,
                    format!("work-group of {total} work-items exceeds {MAX_WORKGROUP_INVOCATIONS}"),
                ));
            }
            wg
        }
    };
    let mut local_capacity = Vec::new();
    for (i, p) in k.params.iter().enumerate() {
        if let ParamType::Local { .. } = p.ty {
            match args.get(i) {
                Some(Arg::Value(ArgValue::Local { count, .. })) => local_capacity.push(*count),
                Some(Arg::Dyn(_)) => {
                    return Err(CodegenError::launch(
                        &k.name,
                        format!("argument {i} is a dynamic parameter: resolve it first (resolve_args)"),
                    ))
                }
                _ => return Err(CodegenError::launch(&k.name, format!("argument {i} is not work-group memory"))),
            }
        }
    }
    Ok(Variant { workgroup_size, dims: dims as u8, local_capacity, predicated: false, loop_tail: None })
}

/// Every distinct (kernel, variant) the module's graphs launch (kernel nodes and every
/// kernel alternative of dynamic command groups), sorted by kernel name then variant.
/// Kernels with external SPIR-V bodies are left out.
pub fn module_variants(module: &Module) -> Result<Vec<(Handle<Kernel>, Variant)>, CodegenError> {
    let mut out: Vec<(String, Handle<Kernel>, Variant)> = Vec::new();
    for (_, graph) in module.graphs.iter() {
        let mut commands = Vec::new();
        for (_, node) in graph.nodes.iter() {
            if let cmdgraph_ir::NodeKind::Kernel(cmd) = &node.kind {
                commands.push(cmd);
            }
        }
        for (_, dcg) in graph.dcgs.iter() {
            for alt in &dcg.alternatives {
                if let cmdgraph_ir::Alternative::Kernel(cmd) = alt {
                    commands.push(cmd);
                }
            }
        }
        for cmd in commands {
            let Some(k) = module.kernels.try_get(cmd.kernel) else { continue };
            if !matches!(k.body, cmdgraph_ir::KernelBody::Ir(_)) {
                continue;
            }
            let v = choose_variant(module, cmd.kernel, &cmd.launch, &resolve_args(graph, &cmd.args))?;
            if !out.iter().any(|(_, h, x)| *h == cmd.kernel && *x == v) {
                out.push((k.name.clone(), cmd.kernel, v));
            }
        }
    }
    out.sort_by(|a, b| (&a.0, &a.2).cmp(&(&b.0, &b.2)));
    Ok(out.into_iter().map(|(_, h, v)| (h, v)).collect())
}
