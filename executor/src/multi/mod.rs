//! One graph on several devices (docs/multi-device.md, "Running on several devices"): one
//! [`Executor`] per device, each with its own Vulkan device and memory, loading the same
//! bundle. `split-devices` gave each multi-device graph `@g` its stage graphs `@g.sS.dD`:
//! what device D runs in stage S, transfers made device copies through `home(host)` memory.
//!
//! That memory is one host allocation imported into every device
//! (`VK_EXT_external_memory_host`, vk/host_bridge.rs), so the devices move the data
//! themselves. A run then submits every stage graph at once, each waiting for the stage
//! graphs before it on every device through timeline semaphores ([`relay`]), and returns;
//! [`wait`](MultiExecutor::wait) waits for all. Where a device lacks the extension (or
//! [`set_imported_transfers`](MultiExecutor::set_imported_transfers) turned it off), each
//! device has its own copy of the `home(host)` memory and a run goes stage by stage: the host
//! copies what a stage wrote there to the other devices before the next stage starts.
//!
//! Memory lives where its `home(N)` says (without one: device 0, the device multi-device
//! graphs must target); `replicated` memory is bound on every device and read from device 0.
#![allow(unsafe_code)]

use crate::error::{ExecError, Result};
use crate::exec::{ExecId, Executor};
use crate::load::load_bytes;
use crate::vk::ContextOptions;
use cmdgraph_ir::graph::{Graph, MemRef, NodeKind};
use cmdgraph_ir::module::Home;
use cmdgraph_ir::placement::{parse_stage_graph_name, stages, transfer};
use cmdgraph_ir::{Handle, Module};

mod profile;
mod relay;
mod run;
mod runtime;
mod update;

pub use profile::StageProfile;

/// Several devices, one executor each.
pub struct MultiExecutor {
    devices: Vec<Executor>,
    /// By [`MultiExecId`]; `None` once dropped.
    execs: Vec<Option<MultiExec>>,
    /// The host time the last run spent copying between devices, and the bytes the
    /// devices exchanged.
    last_transfers: (std::time::Duration, u64),
    /// The host buffer host copies pass through, kept between runs (a fresh one per copy
    /// costs its page faults: 40 ms for 64 MiB on the H200's host).
    staging: Vec<u8>,
    /// The `home(host)` memory imported into every device, once a graph is finalized with
    /// imported transfers.
    bridge: Option<crate::vk::host_bridge::HostBridge>,
    /// Whether transfers may use imported host memory ([`set_imported_transfers`](Self::set_imported_transfers)).
    use_bridge: bool,
    /// Set by the first finalize: whether `home(host)` memory is the imported bridge.
    imported: Option<bool>,
    /// The semaphores across devices, made by the first finalize with imported transfers.
    relay: Option<relay::Relay>,
}

impl Drop for MultiExecutor {
    fn drop(&mut self) {
        // Nothing may be pending on the semaphores and the bridge when they go. A device
        // still busy past its deadline keeps them: they are leaked (as `Executor` leaks its
        // device objects then), never destroyed under running work.
        let busy = self.devices.iter().map(|d| d.wait_idle().is_err()).fold(false, |a, b| a | b);
        if busy {
            // The relay thread must not signal a device that its executor destroys next.
            if let Some(r) = self.relay.as_mut() {
                r.stop();
            }
            std::mem::forget(self.bridge.take());
            return;
        }
        let ctxs: Vec<&crate::vk::Context> = self.devices.iter().map(|e| e.context()).collect();
        if let Some(mut r) = self.relay.take() {
            r.destroy(&ctxs);
        }
        if let Some(b) = self.bridge.take() {
            b.destroy(&ctxs);
        }
    }
}

/// A multi-device executable graph of a [`MultiExecutor`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MultiExecId(usize);

struct MultiExec {
    /// Every stage graph, in stage order.
    parts: Vec<Part>,
    /// By stage: the host copies after it, where `home(host)` memory is not imported: the
    /// memory, the device that wrote it, and its bytes.
    host_copies: Vec<Vec<(String, usize, u64)>>,
    /// Bytes the devices exchange per run (the transfers of the graph).
    transfer_bytes: u64,
    /// The values of the dynamic parameters and the active alternatives of the dynamic
    /// command groups, by name, as the stage graphs hold them now (an update that fails on
    /// one device puts the others back to these).
    params: std::collections::BTreeMap<String, cmdgraph_ir::graph::ArgValue>,
    active: std::collections::BTreeMap<String, u32>,
    /// Runs submitted.
    runs: u64,
}

/// One stage graph of a multi-device executable.
struct Part {
    stage: u32,
    device: usize,
    exec: ExecId,
    graph: Handle<Graph>,
}

impl MultiExecutor {
    /// One executor per entry of `devices`, each loading `bundle` (checked by each loader).
    pub fn new(bundle: &[u8], devices: &[ContextOptions]) -> Result<MultiExecutor> {
        MultiExecutor::from_loaded(load_bytes(bundle)?, devices)
    }

    /// [`new`](Self::new) for a bundle already checked by the loader.
    pub fn from_loaded(loaded: crate::Loaded, devices: &[ContextOptions]) -> Result<MultiExecutor> {
        let mut out = Vec::with_capacity(devices.len());
        for opts in devices {
            let mut ex = Executor::new(loaded.clone(), opts)?;
            ex.overlap_host_tasks = false;
            out.push(ex);
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
            imported: None,
            relay: None,
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

    /// The module every device loaded.
    pub fn module(&self) -> &Module {
        self.devices[0].module()
    }

    fn exec(&self, id: MultiExecId) -> Result<&MultiExec> {
        self.execs
            .get(id.0)
            .and_then(Option::as_ref)
            .ok_or_else(|| ExecError::Unknown(format!("multi-device executable {}", id.0)))
    }

    fn exec_mut(&mut self, id: MultiExecId) -> Result<&mut MultiExec> {
        self.execs
            .get_mut(id.0)
            .and_then(Option::as_mut)
            .ok_or_else(|| ExecError::Unknown(format!("multi-device executable {}", id.0)))
    }

    /// The devices memory `name` lives on: its home, or all for replicated memory and for
    /// `home(host)` memory each device holds a copy of.
    fn homes(&self, name: &str) -> Result<Vec<usize>> {
        let name = name.strip_prefix('@').unwrap_or(name);
        let m = self.module();
        let h = m.memory_by_name(name).ok_or_else(|| ExecError::Unknown(format!("memory @{name}")))?;
        let out: Vec<usize> = match m.memories[h].home {
            Home::Graph => vec![0],
            Home::Device(d) => vec![d as usize],
            Home::Host if self.imported == Some(true) => vec![0],
            Home::Replicated | Home::Host => (0..self.devices.len()).collect(),
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
    /// Waits for runs in flight.
    pub fn bind(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        self.wait_all()?;
        for d in self.homes(name)? {
            self.devices[d].bind(name, bytes)?;
        }
        Ok(())
    }

    /// Memory `name` as the device it lives on holds it (device 0 for replicated memory).
    /// Waits for runs in flight.
    pub fn read(&self, name: &str) -> Result<Vec<u8>> {
        for d in &self.devices {
            d.wait_idle()?;
        }
        let d = self.homes(name)?.first().copied().unwrap_or(0);
        self.devices[d].read(name)
    }

    /// Makes graph `name` (compiled with `split-devices`) runnable: each of its stage graphs
    /// finalized on its device. A node on a device this executor does not have, a transfer
    /// reaching one, and a node kind the stages do not take are errors naming the node,
    /// before anything is made. The first finalize also fixes how transfers go
    /// ([`transfer_path`](Self::transfer_path)).
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
        let n = self.devices.len();
        let order = crate::schedule::topological(&crate::schedule::predecessors(graph))?;
        let st = stages(m, graph, &order)
            .map_err(|(h, why)| ExecError::Invalid(format!("@{name} %{}: {why}", graph.nodes[h].name)))?;
        // A host task runs beside the device of its memory (placement::run_device).
        let missing = graph.nodes.iter().find(|(h, node)| {
            !matches!(node.kind, NodeKind::Empty | NodeKind::Barrier { .. }) && st.device[h.index()] as usize >= n
        });
        if let Some((h, node)) = missing {
            return Err(ExecError::Invalid(format!(
                "@{name} %{}: the node runs on device {}, and this executor has {n} device(s)",
                node.name,
                st.device[h.index()]
            )));
        }
        let mut transfer_bytes = 0;
        for &t in &st.transfers {
            let Some((from, to)) = transfer(m, graph, t) else { continue };
            // A transfer's other end may live on a device the node does not run on.
            if let Some(d) = [from, to].into_iter().find(|&d| d as usize >= n) {
                return Err(ExecError::Invalid(format!(
                    "@{name} %{}: the transfer reaches memory on device {d}, and this executor has {n} device(s)",
                    graph.nodes[t].name
                )));
            }
            if let NodeKind::Memcpy { bytes, .. } = graph.nodes[t].kind {
                transfer_bytes += bytes;
            }
        }
        // A graph that does not span devices runs whole on device 0.
        let mut parts: Vec<(u32, u32, Handle<Graph>)> = match cmdgraph_ir::placement::spans_devices(m, graph) {
            true => m
                .graphs
                .iter()
                .filter_map(|(h, g)| parse_stage_graph_name(name, &g.name).map(|(s, d)| (s, d, h)))
                .collect(),
            false => vec![(0, 0, gh)],
        };
        parts.sort_unstable_by_key(|&(s, d, _)| (s, d));
        if parts.is_empty() && !graph.nodes.is_empty() {
            return Err(ExecError::Bundle(format!(
                "@{name}: the bundle has no stage graphs @{name}.sS.dD; compile the module with the `split-devices` pass (docs/multi-device.md)"
            )));
        }
        if let Some(&(_, d, h)) = parts.iter().find(|p| p.1 as usize >= n) {
            return Err(ExecError::Invalid(format!(
                "@{}: a stage graph of device {d}, and this executor has {n} device(s)",
                m.graphs[h].name
            )));
        }
        let stage_count = parts.last().map_or(0, |p| p.0 as usize + 1);
        let mut host_copies: Vec<Vec<(String, usize, u64)>> = vec![Vec::new(); stage_count];
        let (mut params, mut active) = (std::collections::BTreeMap::new(), std::collections::BTreeMap::new());
        for &(s, d, h) in &parts {
            let g = &m.graphs[h];
            for (_, p) in g.dyn_params.iter() {
                params.insert(p.name.clone(), p.value.clone());
            }
            for (_, x) in g.dcgs.iter() {
                active.insert(x.name.clone(), x.active);
            }
            for (_, node) in g.nodes.iter() {
                if let NodeKind::Memcpy { dst, .. } = &node.kind {
                    if let MemRef::Memory(mh) = dst.base {
                        let mem = &m.memories[mh];
                        if mem.home == Home::Host {
                            host_copies[s as usize].push((mem.name.clone(), d as usize, mem.size_bytes()));
                        }
                    }
                }
            }
        }
        self.fix_transfer_path()?;
        let mut made: Vec<Part> = Vec::new();
        for (stage, d, graph) in parts {
            let part_name = self.module().graphs[graph].name.clone();
            match self.devices[d as usize].finalize(&part_name) {
                Ok(exec) => made.push(Part { stage, device: d as usize, exec, graph }),
                Err(e) => {
                    for p in made {
                        let _ = self.devices[p.device].drop_exec(p.exec);
                    }
                    return Err(e);
                }
            }
        }
        self.execs.push(Some(MultiExec { parts: made, host_copies, transfer_bytes, params, active, runs: 0 }));
        Ok(MultiExecId(self.execs.len() - 1))
    }

    /// Fixes, once, how `home(host)` memory is held: one host allocation imported into every
    /// device with the semaphores across them, or a copy per device.
    fn fix_transfer_path(&mut self) -> Result<()> {
        if self.imported.is_some() {
            return Ok(());
        }
        let imports = self.use_bridge && self.devices.iter().all(|e| e.context().external_memory_host.is_some());
        if !imports {
            self.imported = Some(false);
            return Ok(());
        }
        let m = self.module();
        let align = self
            .devices
            .iter()
            .map(|e| e.context().props.limits.min_storage_buffer_offset_alignment)
            .fold(256u64, u64::max);
        let mut ranges = Vec::new();
        let mut total = 0u64;
        for (_, mem) in m.memories.iter().filter(|(_, x)| x.home == Home::Host) {
            let size = mem.size_bytes().max(4).next_multiple_of(4);
            ranges.push((mem.name.clone(), total, size));
            total = (total + size).next_multiple_of(align);
        }
        let ctxs: Vec<&crate::vk::Context> = self.devices.iter().map(|e| e.context()).collect();
        let relay = relay::Relay::new(&ctxs)?;
        let bridge = match crate::vk::host_bridge::HostBridge::new(&ctxs, total.max(4)) {
            Ok(b) => b,
            Err(_) => {
                // A device that cannot import it: a copy per device.
                let mut relay = relay;
                relay.destroy(&ctxs);
                self.imported = Some(false);
                return Ok(());
            }
        };
        drop(ctxs);
        for (d, dev) in self.devices.iter_mut().enumerate() {
            let Some(buffer) = bridge.buffer(d) else { continue };
            for (name, offset, size) in &ranges {
                // SAFETY: `buffer` is the bridge's live buffer on this device, bound to the
                // imported memory and created with storage and transfer usage; `offset +
                // size` lies inside it; it outlives the executor's use of it (the bridge is
                // destroyed in Drop after every device is idle).
                unsafe { dev.import_buffer(name, buffer, *offset, *size) }?;
            }
        }
        self.bridge = Some(bridge);
        self.relay = Some(relay);
        self.imported = Some(true);
        Ok(())
    }
}

impl MultiExecutor {
    /// The host time the last [`run`](Self::run) spent copying between devices (zero with
    /// imported host memory: the devices copy), and the bytes its transfers moved.
    pub fn last_transfers(&self) -> (std::time::Duration, u64) {
        self.last_transfers
    }

    /// How a device waits for another's stage graphs: `"shared semaphores (OPAQUE_FD)"`
    /// (progress semaphores imported into the other devices), `"host relay"` (a host thread
    /// mirrors them), or `"host, stage by stage"` without imported memory (and before the
    /// first finalize).
    pub fn semaphore_path(&self) -> &'static str {
        self.relay.as_ref().map_or("host, stage by stage", |r| r.path())
    }

    /// Whether transfers may go through host memory imported into the devices (on by
    /// default where every device has `VK_EXT_external_memory_host`); off, each device holds
    /// its own copy of the `home(host)` memory and the host copies between them after each
    /// stage (benchmarks compare the two). Fixed by the first [`finalize`](Self::finalize):
    /// a change after it is an error.
    pub fn set_imported_transfers(&mut self, on: bool) -> Result<()> {
        match self.imported {
            Some(_) if on != self.use_bridge => Err(ExecError::Invalid(
                "the transfer path is fixed by the first finalize: choose it before, or make another executor".into(),
            )),
            _ => {
                self.use_bridge = on;
                Ok(())
            }
        }
    }

    /// How transfers go: `"imported host memory"` or `"host buffer (CPU copies)"` (what the
    /// first finalize fixes, or would).
    pub fn transfer_path(&self) -> &'static str {
        let imports = self.imported.unwrap_or_else(|| {
            self.use_bridge && self.devices.iter().all(|e| e.context().external_memory_host.is_some())
        });
        match imports {
            true => "imported host memory",
            false => "host buffer (CPU copies)",
        }
    }
}
