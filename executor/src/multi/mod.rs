//! One graph on several devices (docs/multi-device.md, "Running on several devices"): one
//! [`Executor`] per device, each with its own Vulkan device and memory, loading the same
//! bundle. A multi-device graph runs in stages (`cmdgraph_ir::placement::stages`): in each,
//! every device runs its stage graph (made by the `split-devices` pass) and all run at once;
//! between stages the host makes the transfers, reading the source device's memory and
//! writing the destination's.
//!
//! A stage's graphs are submitted together and waited for together. A transfer goes through
//! host memory imported into every device (`VK_EXT_external_memory_host`, vk/host_bridge.rs)
//! where all have it: the source device copies into it, the destination copies out, no CPU
//! copy; otherwise through a host buffer the CPU copies into and out of. Timeline semaphores
//! across devices are not built yet.
//!
//! Memory lives where its `home(N)` says (without one: device 0, the device multi-device
//! graphs must target); `replicated` memory is bound on every device and read from device 0.

use crate::error::{ExecError, Result};
use crate::exec::{ExecId, Executor};
use crate::load::load_bytes;
use crate::vk::ContextOptions;
use cmdgraph_ir::graph::{Graph, MemRef, NodeKind};
use cmdgraph_ir::module::Home;
use cmdgraph_ir::placement::{stage_graph_name, stages};
use cmdgraph_ir::{Handle, Module};

mod update;

/// Several devices, one executor each.
pub struct MultiExecutor {
    devices: Vec<Executor>,
    execs: Vec<MultiExec>,
    /// The host time the last run spent in transfers, and the bytes they moved.
    last_transfers: (std::time::Duration, u64),
    /// The host buffer transfers pass through, kept between runs (a fresh one per transfer
    /// costs its page faults: 40 ms for 64 MiB on the H200's host).
    staging: Vec<u8>,
    /// Host memory imported into every device, grown to the largest transfer; `None` until a
    /// transfer needs it, or where a device lacks the extension.
    bridge: Option<crate::vk::host_bridge::HostBridge>,
    /// Whether transfers may use the bridge (`set_imported_transfers`).
    use_bridge: bool,
}

impl Drop for MultiExecutor {
    fn drop(&mut self) {
        if let Some(b) = self.bridge.take() {
            let ctxs: Vec<&crate::vk::Context> = self.devices.iter().map(|e| e.context()).collect();
            // Every copy through it was waited for.
            b.destroy(&ctxs);
        }
    }
}

/// A multi-device executable graph of a [`MultiExecutor`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MultiExecId(usize);

struct MultiExec {
    /// Stages in order: the transfers made before the stage, then (device, executable) run.
    stages: Vec<Stage>,
    /// Every stage graph: its device, executable and name (updates find nodes and
    /// parameters by it).
    parts: Vec<Part>,
    /// The values of the dynamic parameters and the active alternatives of the dynamic
    /// command groups, by name, as the stage graphs hold them now (an update that fails on
    /// one device puts the others back to these).
    params: std::collections::BTreeMap<String, cmdgraph_ir::graph::ArgValue>,
    active: std::collections::BTreeMap<String, u32>,
}

/// One stage graph of a multi-device executable.
struct Part {
    device: usize,
    exec: ExecId,
    graph: Handle<Graph>,
}

#[derive(Default)]
struct Stage {
    transfers: Vec<Transfer>,
    runs: Vec<(usize, ExecId)>,
}

/// One transfer between stages: `bytes` from `src` on device `from` to `dst` on `to`.
struct Transfer {
    from: usize,
    src: (String, u64),
    to: usize,
    dst: (String, u64),
    bytes: u64,
}

impl MultiExecutor {
    /// One executor per entry of `devices`, each loading `bundle` (checked by each loader).
    pub fn new(bundle: &[u8], devices: &[ContextOptions]) -> Result<MultiExecutor> {
        let mut out = Vec::with_capacity(devices.len());
        for opts in devices {
            out.push(Executor::new(load_bytes(bundle)?, opts)?);
        }
        if out.is_empty() {
            return Err(ExecError::Invalid("a multi-device executor needs at least one device".into()));
        }
        Ok(MultiExecutor {
            devices: out,
            execs: Vec::new(),
            last_transfers: (std::time::Duration::ZERO, 0),
            staging: Vec::new(),
            bridge: None,
            use_bridge: true,
        })
    }

    /// The executor of device `i`.
    pub fn device(&self, i: usize) -> Option<&Executor> {
        self.devices.get(i)
    }

    /// Number of devices.
    pub fn len(&self) -> usize {
        self.devices.len()
    }

    /// Whether there are no devices (never: [`new`](Self::new) refuses that).
    pub fn is_empty(&self) -> bool {
        self.devices.is_empty()
    }

    /// Registers the callback of `host_task "name"` nodes on every device: a host task of
    /// a multi-device graph runs beside the device whose memory it touches
    /// (`cmdgraph_ir::placement::run_device`), and sees that device's memory. One closure
    /// serves all, never two at once.
    pub fn register_callback<F>(&mut self, name: &str, f: F)
    where
        F: FnMut(&mut dyn cmdgraph_ir::host::HostMemory) -> std::result::Result<(), cmdgraph_ir::host::HostError>
            + Send
            + 'static,
    {
        let shared = std::sync::Arc::new(std::sync::Mutex::new(f));
        for d in &mut self.devices {
            let f = std::sync::Arc::clone(&shared);
            d.register_callback(name, move |mem| match f.lock() {
                Ok(mut f) => f(mem),
                Err(_) => {
                    Err(cmdgraph_ir::host::HostError::failed("the host task's callback panicked in an earlier run"))
                }
            });
        }
    }

    /// Registers the callback of `native "name"` nodes on every device (called when the
    /// stage graph holding the node is recorded, with that device's context).
    pub fn register_native<F>(&mut self, name: &str, f: F)
    where
        F: FnMut(&crate::NativeContext<'_>) + Send + 'static,
    {
        let shared = std::sync::Arc::new(std::sync::Mutex::new(f));
        for d in &mut self.devices {
            let f = std::sync::Arc::clone(&shared);
            d.register_native(name, move |cx| {
                if let Ok(mut f) = f.lock() {
                    f(cx);
                }
            });
        }
    }

    fn module(&self) -> &Module {
        self.devices[0].module()
    }

    /// The devices memory `name` lives on: its home, or all for replicated memory.
    fn homes(&self, name: &str) -> Result<Vec<usize>> {
        let name = name.strip_prefix('@').unwrap_or(name);
        let m = self.module();
        let h = m.memory_by_name(name).ok_or_else(|| ExecError::Unknown(format!("memory @{name}")))?;
        let out: Vec<usize> = match m.memories[h].home {
            Home::Graph => vec![0],
            Home::Device(d) => vec![d as usize],
            Home::Replicated => (0..self.devices.len()).collect(),
        };
        match out.iter().find(|&&d| d >= self.devices.len()) {
            Some(d) => Err(ExecError::Invalid(format!(
                "@{name} lives on device {d}, and this executor has {} device(s)",
                self.devices.len()
            ))),
            None => Ok(out),
        }
    }

    /// Sets memory `name` on the device it lives on (every device for replicated memory).
    pub fn bind(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        for d in self.homes(name)? {
            self.devices[d].bind(name, bytes)?;
        }
        Ok(())
    }

    /// Memory `name` as the device it lives on holds it (device 0 for replicated memory).
    pub fn read(&self, name: &str) -> Result<Vec<u8>> {
        let d = self.homes(name)?.first().copied().unwrap_or(0);
        self.devices[d].read(name)
    }

    /// Makes graph `name` (compiled with `split-devices`) runnable: each device's stage
    /// graphs finalized on its executor, the transfers between stages planned. A node on a
    /// device this executor does not have, and a node kind the stages do not take, are
    /// errors naming the node, before anything is made.
    pub fn finalize(&mut self, name: &str) -> Result<MultiExecId> {
        let name = name.strip_prefix('@').unwrap_or(name);
        let m = self.module();
        let gh = m.graph_by_name(name).ok_or_else(|| ExecError::Unknown(format!("graph @{name}")))?;
        let graph = &m.graphs[gh];
        if graph.device != 0 {
            return Err(ExecError::Invalid(format!(
                "@{name} targets device {}; a multi-device executor runs graphs of device 0 (their nodes may name others)",
                graph.device
            )));
        }
        let order = crate::schedule::topological(&crate::schedule::predecessors(graph))?;
        let st = stages(m, graph, &order)
            .map_err(|(h, why)| ExecError::Invalid(format!("@{name} %{}: {why}", graph.nodes[h].name)))?;
        // A host task runs beside the device of its memory (placement::run_device).
        let missing = graph.nodes.iter().find(|(h, n)| {
            !matches!(n.kind, NodeKind::Empty | NodeKind::Barrier { .. })
                && st.device[h.index()] as usize >= self.devices.len()
        });
        if let Some((h, n)) = missing {
            return Err(ExecError::Invalid(format!(
                "@{name} %{}: the node runs on device {}, and this executor has {} device(s)",
                n.name,
                st.device[h.index()],
                self.devices.len()
            )));
        }
        let mut plan: Vec<Stage> = (0..=st.count).map(|_| Stage::default()).collect();
        for &t in &st.transfers {
            let before = st.stage[t.index()].unwrap_or(0) as usize;
            let transfer = transfer_of(m, graph, t)
                .map_err(|why| ExecError::Invalid(format!("@{name} %{}: {why}", graph.nodes[t].name)))?;
            // A transfer's other end may live on a device the node does not run on.
            if let Some(d) = [transfer.from, transfer.to].into_iter().find(|&d| d >= self.devices.len()) {
                return Err(ExecError::Invalid(format!(
                    "@{name} %{}: the transfer reaches memory on device {d}, and this executor has {} device(s)",
                    graph.nodes[t].name,
                    self.devices.len()
                )));
            }
            plan[before].transfers.push(transfer);
        }
        let parts: Vec<(u32, u32, String)> =
            st.parts.iter().map(|&(s, d)| (s, d, stage_graph_name(name, s, d))).collect();
        for (_, _, part) in &parts {
            if m.graph_by_name(part).is_none() {
                return Err(ExecError::Bundle(format!(
                    "@{name}: the bundle has no stage graph @{part}; compile the module with the `split-devices` pass (docs/multi-device.md)"
                )));
            }
        }
        let (mut params, mut active) = (std::collections::BTreeMap::new(), std::collections::BTreeMap::new());
        let mut handles = Vec::with_capacity(parts.len());
        for (_, _, part) in &parts {
            let graph = m.graph_by_name(part).unwrap_or(gh);
            for (_, p) in m.graphs[graph].dyn_params.iter() {
                params.insert(p.name.clone(), p.value.clone());
            }
            for (_, g) in m.graphs[graph].dcgs.iter() {
                active.insert(g.name.clone(), g.active);
            }
            handles.push(graph);
        }
        let mut made: Vec<Part> = Vec::new();
        for ((s, d, part), graph) in parts.into_iter().zip(handles) {
            match self.devices[d as usize].finalize(&part) {
                Ok(exec) => {
                    made.push(Part { device: d as usize, exec, graph });
                    plan[s as usize].runs.push((d as usize, exec));
                }
                Err(e) => {
                    for p in made {
                        let _ = self.devices[p.device].drop_exec(p.exec);
                    }
                    return Err(e);
                }
            }
        }
        self.execs.push(MultiExec { stages: plan, parts: made, params, active });
        Ok(MultiExecId(self.execs.len() - 1))
    }

    /// Runs graph `id` once and waits for it: stage by stage, each stage's graphs submitted
    /// on every device before any is waited for, the transfers between stages made by the host.
    pub fn run(&mut self, id: MultiExecId) -> Result<()> {
        // Taken out while it runs: the run needs the executor mutably (the bridge grows).
        let execs = std::mem::take(&mut self.execs);
        let r = match execs.get(id.0) {
            Some(exec) => self.run_stages(exec),
            None => Err(ExecError::Unknown(format!("multi-device executable {}", id.0))),
        };
        self.execs = execs;
        r
    }

    fn run_stages(&mut self, exec: &MultiExec) -> Result<()> {
        self.last_transfers = (std::time::Duration::ZERO, 0);
        for stage in &exec.stages {
            let started = std::time::Instant::now();
            for t in &stage.transfers {
                if self.bridge_for(t.bytes) {
                    let bridge = self.bridge.as_ref().ok_or_else(|| ExecError::Invalid("no host bridge".into()))?;
                    let (from, to) = (bridge.buffer(t.from), bridge.buffer(t.to));
                    let (Some(from), Some(to)) = (from, to) else {
                        return Err(ExecError::Invalid("the host bridge lacks a device".into()));
                    };
                    self.devices[t.from].copy_external(&t.src.0, t.src.1, from, 0, t.bytes, true)?;
                    self.devices[t.to].copy_external(&t.dst.0, t.dst.1, to, 0, t.bytes, false)?;
                } else {
                    let len = usize::try_from(t.bytes).map_err(|_| ExecError::Invalid("transfer too large".into()))?;
                    if self.staging.len() < len {
                        self.staging.resize(len, 0);
                    }
                    let bytes = &mut self.staging[..len];
                    self.devices[t.from].read_range_into(&t.src.0, t.src.1, bytes)?;
                    self.devices[t.to].write_range(&t.dst.0, t.dst.1, bytes)?;
                }
                self.last_transfers.1 += t.bytes;
            }
            self.last_transfers.0 += started.elapsed();
            for &(d, e) in &stage.runs {
                self.devices[d].run(e)?;
            }
            for &(d, e) in &stage.runs {
                self.devices[d].wait(e)?;
            }
        }
        Ok(())
    }
}

impl MultiExecutor {
    /// The host time the last [`run`](Self::run) spent in transfers, and the bytes they moved.
    pub fn last_transfers(&self) -> (std::time::Duration, u64) {
        self.last_transfers
    }

    /// Whether transfers may go through host memory imported into the devices (on by
    /// default where every device has `VK_EXT_external_memory_host`); off, they go through a
    /// host buffer the CPU copies into and out of (benchmarks compare the two).
    pub fn set_imported_transfers(&mut self, on: bool) {
        self.use_bridge = on;
    }

    /// How transfers go: `"imported host memory"` or `"host buffer (CPU copies)"`.
    pub fn transfer_path(&self) -> &'static str {
        match self.imports() {
            true => "imported host memory",
            false => "host buffer (CPU copies)",
        }
    }

    /// Whether transfers go through host memory imported into every device.
    fn imports(&self) -> bool {
        self.use_bridge && self.devices.iter().all(|e| e.context().external_memory_host.is_some())
    }

    /// Whether a transfer of `bytes` goes through the bridge, which is made or grown now.
    fn bridge_for(&mut self, bytes: u64) -> bool {
        if !self.imports() {
            return false;
        }
        if self.bridge.as_ref().is_some_and(|b| b.size() >= bytes) {
            return true;
        }
        let ctxs: Vec<&crate::vk::Context> = self.devices.iter().map(|e| e.context()).collect();
        if let Some(old) = self.bridge.take() {
            old.destroy(&ctxs);
        }
        match crate::vk::host_bridge::HostBridge::new(&ctxs, bytes) {
            Ok(b) => {
                self.bridge = Some(b);
                true
            }
            // A device that cannot import it: the host buffer path, from now on.
            Err(_) => {
                self.use_bridge = false;
                false
            }
        }
    }
}

/// The transfer node `t` as the host makes it.
fn transfer_of(m: &Module, graph: &Graph, t: Handle<cmdgraph_ir::Node>) -> std::result::Result<Transfer, String> {
    let Some((from, to)) = cmdgraph_ir::placement::transfer(m, graph, t) else {
        return Err("not a transfer".into());
    };
    let NodeKind::Memcpy { dst, src, bytes } = &graph.nodes[t].kind else { return Err("not a copy".into()) };
    let name = |r: MemRef| match r {
        MemRef::Memory(h) => Ok(m.memories[h].name.clone()),
        MemRef::Alloc(_) => {
            Err("a transfer of a graph allocation between devices does not run yet: copy through a memory object"
                .to_string())
        }
    };
    Ok(Transfer {
        from: from as usize,
        src: (name(src.base)?, src.offset),
        to: to as usize,
        dst: (name(dst.base)?, dst.offset),
        bytes: *bytes,
    })
}
