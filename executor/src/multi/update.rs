//! Updates of a multi-device executable (docs/multi-device.md, "Updates"): `split-devices`
//! carries each dynamic parameter and dynamic command group, under its own name, into every
//! stage graph whose nodes use it, so an update by name goes to each of those stage graphs on
//! its device. A pointer a parameter takes must live where each node using it runs (its
//! device, or replicated memory only read there): the transfers were planned for the memory
//! the graph was compiled with. Everything is checked before anything changes; an update a
//! device still refuses puts the devices it reached back as they were.
//!
//! Individual and whole-graph updates from a modifiable graph (`update_nodes`,
//! `update_graph`) are not offered: they compare the application's graph with the bundle's
//! source node by node, and a stage graph has no source graph of its own.

use super::{MultiExecId, MultiExecutor, Part};
use crate::error::{ExecError, Result};
use cmdgraph_ir::graph::{Arg, ArgValue, Graph, Launch, MemRef};
use cmdgraph_ir::kernel::ParamType;
use cmdgraph_ir::module::Home;
use cmdgraph_ir::types::Access;
use cmdgraph_ir::Module;

impl MultiExecutor {
    /// Sets dynamic parameter `param` of executable `id` on every device whose stage graphs
    /// use it ([`Executor::update_param`](crate::Executor::update_param) on each). A pointer
    /// to memory of another device than a node using it runs on, to replicated memory a node
    /// writes, or to a graph allocation is refused, naming the node; nothing changes then.
    pub fn update_param(&mut self, id: MultiExecId, param: &str, value: ArgValue) -> Result<()> {
        let param = param.trim_start_matches('%').to_string();
        let exec = self.exec(id)?;
        let m = self.module();
        let mut reached = Vec::new();
        for part in &exec.parts {
            let graph = &m.graphs[part.graph];
            let Some(p) = graph.dyn_params.iter().find(|(_, p)| p.name == param).map(|(h, _)| h) else { continue };
            for (node, writes) in param_uses(m, graph, p) {
                self.check_pointer(&value, part.device, writes, &node)?;
            }
            reached.push((part.device, part.exec));
        }
        if reached.is_empty() {
            return Err(ExecError::Unknown(format!("dynamic parameter %{param}")));
        }
        let before = exec.params.get(&param).cloned();
        for (i, &(d, e)) in reached.iter().enumerate() {
            if let Err(err) = self.devices[d].update_param(e, &param, value.clone()) {
                if let Some(old) = &before {
                    for &(d, e) in &reached[..i] {
                        let _ = self.devices[d].update_param(e, &param, old.clone());
                    }
                }
                return Err(err);
            }
        }
        if let Ok(exec) = self.exec_mut(id) {
            exec.params.insert(param, value);
        }
        Ok(())
    }

    /// Changes the launch of kernel node `node` of executable `id`, on the device it runs on
    /// ([`Executor::update_launch`](crate::Executor::update_launch)).
    pub fn update_launch(&mut self, id: MultiExecId, node: &str, launch: Launch) -> Result<()> {
        let node = node.trim_start_matches('%');
        let exec = self.exec(id)?;
        let m = self.module();
        let part = exec
            .parts
            .iter()
            .find(|p| m.graphs[p.graph].node_by_name(node).is_some())
            .map(|p| (p.device, p.exec))
            .ok_or_else(|| ExecError::Unknown(format!("node %{node} (transfers and ordering nodes have no launch)")))?;
        self.devices[part.0].update_launch(part.1, node, launch)
    }

    /// Switches dynamic command group `dcg` of executable `id` to alternative `index` on every
    /// device whose stage graphs hold it ([`Executor::set_active`](crate::Executor::set_active)).
    pub fn set_active(&mut self, id: MultiExecId, dcg: &str, index: u32) -> Result<()> {
        let dcg = dcg.trim_start_matches('%').to_string();
        let exec = self.exec(id)?;
        let m = self.module();
        let reached: Vec<(usize, crate::ExecId)> = exec
            .parts
            .iter()
            .filter(|p| m.graphs[p.graph].dcgs.iter().any(|(_, g)| g.name == dcg))
            .map(|p: &Part| (p.device, p.exec))
            .collect();
        if reached.is_empty() {
            return Err(ExecError::Unknown(format!("dynamic command group %{dcg}")));
        }
        let before = exec.active.get(&dcg).copied();
        for (i, &(d, e)) in reached.iter().enumerate() {
            if let Err(err) = self.devices[d].set_active(e, &dcg, index) {
                if let Some(old) = before {
                    for &(d, e) in &reached[..i] {
                        let _ = self.devices[d].set_active(e, &dcg, old);
                    }
                }
                return Err(err);
            }
        }
        if let Ok(exec) = self.exec_mut(id) {
            exec.active.insert(dcg, index);
        }
        Ok(())
    }

    /// Refuses `value` for a node `node` on `device` that may write through it (`writes`) when
    /// the memory it names does not live there.
    fn check_pointer(&self, value: &ArgValue, device: usize, writes: bool, node: &str) -> Result<()> {
        let base = match value {
            ArgValue::Pointer(p) => p.base,
            ArgValue::Accessor(a) => a.buffer,
            _ => return Ok(()),
        };
        let refuse = |why: String| ExecError::Invalid(format!("update: %{node} runs on device {device}; {why}"));
        let MemRef::Memory(h) = base else {
            return Err(refuse(
                "a dynamic parameter of a multi-device graph names memory objects, not graph allocations".into(),
            ));
        };
        let mem = self.module().memories.try_get(h).ok_or_else(|| ExecError::Invalid("no such memory".into()))?;
        match mem.home {
            Home::Replicated if writes => {
                Err(refuse(format!("it writes through the parameter, and @{} is replicated (read only)", mem.name)))
            }
            Home::Replicated | Home::Host => Ok(()),
            Home::Graph if device == 0 => Ok(()),
            Home::Device(d) if d as usize == device => Ok(()),
            Home::Graph | Home::Device(_) => Err(refuse(format!(
                "@{} lives on device {} (the graph's transfers were planned for the memory it was compiled with)",
                mem.name,
                match mem.home {
                    Home::Device(d) => d,
                    _ => 0,
                }
            ))),
        }
    }
}

/// The nodes of `graph` that use parameter `p` (as kernels or alternatives of a dynamic
/// command group), each with whether it may write through it.
fn param_uses(m: &Module, graph: &Graph, p: cmdgraph_ir::Handle<cmdgraph_ir::graph::DynParam>) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    for (h, n) in graph.nodes.iter() {
        for (_, cmd) in graph.kernel_commands(h) {
            let params = m.kernels.try_get(cmd.kernel).map(|k| k.params.as_slice()).unwrap_or(&[]);
            for (i, a) in cmd.args.iter().enumerate() {
                if *a == Arg::Dyn(p) {
                    let writes = match params.get(i).map(|x| x.ty) {
                        Some(ParamType::Buffer { access, .. }) => access != Access::Read,
                        _ => true,
                    };
                    out.push((n.name.clone(), writes));
                }
            }
        }
    }
    out
}
