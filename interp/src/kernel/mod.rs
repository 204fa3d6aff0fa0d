//! Kernel launches: geometry ([`launch`]), argument binding (`bind`), SIMT execution of
//! the body (`simt`) and its memory ops (`memop`).

pub mod launch;

mod bind;
mod general_loop;
mod memop;
mod simt;
mod subgroup;

use super::access::NodeLog;
use super::error::InterpError;
use super::memory::MemCtx;
use cmdgraph_ir::arena::Arena;
use cmdgraph_ir::graph::{ArgValue, Launch};
use cmdgraph_ir::kernel::{Function, Kernel, KernelBody};
use launch::{Geometry, GroupIds};

/// Runs `kernel` over `launch` with resolved `args`; returns the number of work-items.
///
/// `root` says whether the node belongs to the executable graph's root graph (only there
/// may pointers name graph allocations).
#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    graph: &str,
    node: &str,
    kernel: &Kernel,
    functions: &Arena<Function>,
    launch: &Launch,
    args: &[ArgValue],
    mem: &mut MemCtx<'_>,
    log: Option<&mut NodeLog>,
    root: bool,
    fuel: &mut u64,
    fma: super::FmaRounding,
    denormals: super::Denormals,
    subgroup_size: super::SubgroupSize,
) -> Result<u64, InterpError> {
    let invalid = |message: String| InterpError::invalid(graph, Some(node), message);
    let body = match &kernel.body {
        KernelBody::Ir(body) => body,
        KernelBody::Spirv { path, .. } => {
            return Err(invalid(format!(
                "kernel @{} is external SPIR-V (\"{path}\"); the interpreter runs only kernel-language bodies",
                kernel.name
            )))
        }
        KernelBody::Shader { lang, .. } => {
            return Err(invalid(format!(
                "kernel @{} is {} source that was not translated (cmdgraph_shader::resolve translates it)",
                kernel.name,
                lang.keyword()
            )))
        }
    };
    let geo = Geometry::new(launch).map_err(invalid)?;
    let subgroup_size = subgroup_size.checked().map_err(invalid)?;
    let total = geo.total().unwrap_or(0);
    let prep = bind::prepare(kernel, body, functions, geo, args, mem, root).map_err(invalid)?;
    let mut exec = simt::Exec {
        kernel,
        body,
        functions,
        launched: &kernel.name,
        node,
        prep,
        ids: GroupIds::default(),
        slots: vec![simt::Slot::Empty; body.values.len()],
        mem,
        log,
        fuel,
        fma,
        flush: denormals == super::Denormals::Flush,
        subgroup_size,
        subgroups: Vec::new(),
    };
    exec.run()?;
    Ok(total)
}
