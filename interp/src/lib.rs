//! `cmdgraph-interp`, the reference interpreter: the semantic oracle for passes, codegen and
//! the executor. It is a crate of its own (as Cranelift keeps its interpreter apart from
//! codegen): `cmdgraph-ir` is the data model and nothing in it runs a graph.
//!
//! It runs a [`Module`]'s graphs on the CPU with the semantics of docs/ir.md and the spec
//! checklist, and is written for clarity and checkability first: every memory access is
//! bounds- and lifetime-checked, every fault names its node (and kernel op, span and
//! work-item), and the race detector reports every pair of unordered nodes that touched the
//! same bytes. docs/interpreter.md is the user guide and states every semantic choice.
//!
//! ```
//! # use cmdgraph_interp::{Interpreter, RunOptions};
//! # fn demo(module: &cmdgraph_ir::Module) -> Result<(), cmdgraph_interp::InterpError> {
//! let mut interp = Interpreter::new(module)?;
//! interp.bind_as::<f32>("x", &[1.0, 2.0, 3.0])?;
//! let exec = interp.finalize("main")?;
//! let stats = interp.run_with(exec, &RunOptions { check_races: true, ..RunOptions::default() })?;
//! assert!(stats.races.is_empty());
//! let y: Vec<f32> = interp.read_as("y")?;
//! # let _ = y; Ok(()) }
//! ```
//!
//! Files: [`error`] (the error type), `value` and `scalar` (bits and op semantics),
//! `memory` (storage and checks), `access` and `race` (the race detector), `flat` and
//! `schedule` (expanded graph and node order), `command` (one node), `kernel` (launches),
//! `host` (callbacks).

mod access;
mod command;
mod conditional;
pub mod error;
mod flat;
mod host;
pub mod kernel;
mod memory;
mod race;
pub mod ranks;
mod runtime;
mod scalar;
mod schedule;
mod value;

pub use access::AccessKind;
pub use cmdgraph_ir::data::{from_bytes, half, to_bytes, Element};
pub use cmdgraph_ir::host::{HostError, HostFn, HostMemory};
pub use cmdgraph_ir::pool::PoolLayout;
pub use error::{Fault, FaultKind, InterpError, KernelSite};
pub use host::{HostCallbacks, HostContext};
pub use memory::AllocLayout;
pub use race::Race;
pub use schedule::Order;
pub use value::POISON;

use access::NodeLog;
use cmdgraph_ir::arena::Handle;
use cmdgraph_ir::graph::{ArgValue, Graph, NodeKind};
use cmdgraph_ir::module::{MemoryKind, Module, UsmKind};
use command::{GraphState, NodeCtx};
use flat::{Flat, Role};
use memory::{AllocInfo, Allocs, DeviceGlobals, Loc, MemCtx};
use std::collections::BTreeMap;
use value::{alloc_bytes, literal_bits, write_elem};

/// An executable graph made by [`Interpreter::finalize`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExecId(u32);

/// How to run an executable graph.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunOptions {
    /// Which ready node runs next.
    pub order: Order,
    /// Record every byte each node touches and report races ([`RunStats::races`]).
    pub check_races: bool,
    /// Most kernel op executions the run may perform, counted per work-item (an op run for a
    /// group of 256 work-items costs 256); past it the run fails with
    /// [`FaultKind::OutOfFuel`]. `None`: no limit. Guards against runaway loops.
    pub fuel: Option<u64>,
    /// How `fma` rounds. The kernel language's `fma` rounds once; a conforming Vulkan device
    /// may round the product first (docs/ir.md, "Float precision"), and running with
    /// [`FmaRounding::Twice`] gives what such a device computes.
    pub fma: FmaRounding,
    /// What float arithmetic does with `f32` subnormals. The kernel language keeps them; a
    /// Vulkan device may flush them to zero when the module declares no `DenormPreserve`
    /// (docs/ir.md, "Float precision"), and running with [`Denormals::Flush`] gives what a
    /// device that always flushes (an NVIDIA H200) computes.
    pub denormals: Denormals,
    /// Lanes per subgroup, which devices differ in (llvmpipe 8, NVIDIA 32): subgroup ops
    /// compute what a device of this subgroup size does (docs/ir.md, "Subgroups").
    pub subgroup_size: SubgroupSize,
    /// Most rounds one execution of a `while` node may run before the run fails with
    /// [`FaultKind::LoopNeverEnds`]; `None`: [`DEFAULT_LOOP_ROUNDS`]. The loop's fuel: a
    /// condition no body clears is an error, never a hang (docs/conditional.md).
    pub loop_rounds: Option<u64>,
}

/// Rounds a `while` node may run by default ([`RunOptions::loop_rounds`]).
pub const DEFAULT_LOOP_ROUNDS: u64 = 1 << 20;

/// Lanes per subgroup ([`RunOptions::subgroup_size`]): a power of two from 1 to 128, as
/// Vulkan's `subgroupSize` is. The default, 8, is llvmpipe's, which the tests run against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SubgroupSize(pub u32);

impl Default for SubgroupSize {
    fn default() -> SubgroupSize {
        SubgroupSize(SubgroupSize::LLVMPIPE)
    }
}

impl SubgroupSize {
    /// llvmpipe's subgroup size (its `VkPhysicalDeviceSubgroupProperties::subgroupSize`).
    pub const LLVMPIPE: u32 = 8;

    /// The size as a lane count, or why it is not one.
    pub fn checked(self) -> Result<usize, String> {
        if self.0.is_power_of_two() && self.0 <= 128 {
            Ok(self.0 as usize)
        } else {
            Err(format!("subgroup size {} is not a power of two from 1 to 128", self.0))
        }
    }
}

/// How the interpreter rounds `fma %a, %b, %c` ([`RunOptions::fma`]), per lane, in the
/// element type (`f32` or `f16`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FmaRounding {
    /// `a·b + c` rounded once (IEEE 754 fusedMultiplyAdd): the kernel language's meaning.
    #[default]
    Once,
    /// `round(round(a·b) + c)`: the product rounded to the element type, then the sum, as
    /// `mul` then `add` compute (llvmpipe's `fma`).
    Twice,
}

impl FmaRounding {
    /// Both rules, `Once` first.
    pub const ALL: [FmaRounding; 2] = [FmaRounding::Once, FmaRounding::Twice];

    /// `once` or `twice` (the CLI's `--fma` values).
    pub fn name(self) -> &'static str {
        match self {
            FmaRounding::Once => "once",
            FmaRounding::Twice => "twice",
        }
    }
}

/// What the interpreter's float ops do with `f32` subnormals ([`RunOptions::denormals`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Denormals {
    /// Subnormals are ordinary values (IEEE 754): the kernel language's meaning.
    #[default]
    Preserve,
    /// Every subnormal `f32` operand and result of a float op (arithmetic including `neg`
    /// and `abs`, `fma`, math functions, comparisons, `min`/`max`, casts from or to `f32`)
    /// is replaced by a zero of the same sign, as the Vulkan specification lets a device do
    /// without `DenormPreserve` ("Any denormalized value ... may be flushed to 0"), and as
    /// the NVIDIA H200 does for every one of these ops. Loads, stores, `select` and vector
    /// moves keep the bits, and `f16` subnormals are kept (the H200 keeps them).
    Flush,
}

impl Denormals {
    /// Both rules, `Preserve` first.
    pub const ALL: [Denormals; 2] = [Denormals::Preserve, Denormals::Flush];

    /// `preserve` or `flush` (the CLI's `--denormals` values).
    pub fn name(self) -> &'static str {
        match self {
            Denormals::Preserve => "preserve",
            Denormals::Flush => "flush",
        }
    }
}

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunStats {
    /// Path names of the nodes that executed a command, in execution order (sub-graph
    /// nodes appear through their children: `sg/k0`).
    pub order: Vec<String>,
    /// Kernel work-items executed.
    pub work_items: u64,
    /// Races found (only with [`RunOptions::check_races`]), ordered by the flat creation
    /// order of their nodes.
    pub races: Vec<Race>,
}

/// One executable graph.
#[derive(Debug)]
struct Executable {
    root: Handle<Graph>,
    flat: Flat,
    states: BTreeMap<Handle<Graph>, GraphState>,
    allocs: Allocs,
}

/// The reference interpreter: a module, its memory, registered callbacks and executable
/// graphs.
pub struct Interpreter {
    module: Module,
    user: Vec<Vec<u8>>,
    dg: DeviceGlobals,
    callbacks: HostCallbacks,
    execs: BTreeMap<ExecId, Executable>,
    next_exec: u32,
    /// A run's failure kept for [`cmdgraph_ir::runtime::Runtime::wait`] (`submit` runs at
    /// once and reports at `wait`, like a device).
    failed: BTreeMap<ExecId, InterpError>,
    /// Runs submitted per executable (each is complete when `submit` returns).
    runs: BTreeMap<ExecId, u64>,
}

impl std::fmt::Debug for Interpreter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interpreter").field("callbacks", &self.callbacks).field("execs", &self.execs.len()).finish()
    }
}

impl Interpreter {
    /// An interpreter for `module` (copied). User memory starts zeroed; device globals are
    /// created from their initialisers on first use per device.
    pub fn new(module: &Module) -> Result<Interpreter, InterpError> {
        let mut user = Vec::with_capacity(module.memories.len());
        let mut dg = DeviceGlobals::default();
        for (h, m) in module.memories.iter() {
            let size = m.elem.size().checked_mul(m.count);
            let bad = |msg: String| InterpError::invalid("", None, format!("@{}: {msg}", m.name));
            let size = size.ok_or_else(|| bad("size overflows".to_string()))?;
            let bytes = alloc_bytes(size, 0).map_err(bad)?;
            match &m.kind {
                MemoryKind::Usm(_) | MemoryKind::Buffer => user.push(bytes),
                MemoryKind::DeviceGlobal(d) => {
                    let mut image = bytes;
                    if d.init.len() as u64 > m.count {
                        return Err(bad(format!("{} initial values for {} elements", d.init.len(), m.count)));
                    }
                    let stride = m.elem.size() as usize;
                    for (i, lit) in d.init.iter().enumerate() {
                        let bits = literal_bits(lit.value, m.elem.scalar)
                            .ok_or_else(|| bad(format!("initial value {i} does not fit {}", m.elem)))?;
                        let lanes = vec![bits; m.elem.lanes as usize];
                        if let Some(slot) = image.get_mut(i * stride..(i + 1) * stride) {
                            write_elem(slot, m.elem, &lanes);
                        }
                    }
                    dg.init.insert(h, image);
                    user.push(Vec::new());
                }
            }
        }
        Ok(Interpreter {
            module: module.clone(),
            user,
            dg,
            callbacks: HostCallbacks::new(),
            execs: BTreeMap::new(),
            next_exec: 0,
            failed: BTreeMap::new(),
            runs: BTreeMap::new(),
        })
    }

    /// The module being interpreted.
    pub fn module(&self) -> &Module {
        &self.module
    }

    /// The host callback registry.
    pub fn callbacks_mut(&mut self) -> &mut HostCallbacks {
        &mut self.callbacks
    }

    /// Runs the module's communication nodes through `comm`, this interpreter's rank (see
    /// [`ranks::simulate`], which gives every rank of a module its interpreter).
    pub fn set_communicator(&mut self, comm: &cmdgraph_ir::comm::SharedCommunicator) {
        for (name, f) in cmdgraph_ir::comm::callbacks(&self.module, comm) {
            self.callbacks.register_boxed(&name, f);
        }
    }

    /// Registers the callback for `host_task "name"` / `native "name"` nodes.
    pub fn register_callback<F>(&mut self, name: &str, callback: F)
    where
        F: FnMut(&mut dyn HostMemory) -> Result<(), HostError> + Send + 'static,
    {
        self.callbacks.register(name, callback);
    }

    fn user_index(&self, name: &str) -> Result<usize, InterpError> {
        let bare = name.trim_start_matches('@');
        let h =
            self.module.memory_by_name(bare).ok_or_else(|| InterpError::api(format!("no memory object @{bare}")))?;
        match self.module.memories[h].kind {
            MemoryKind::DeviceGlobal(_) => {
                Err(InterpError::api(format!("@{bare} is a device_global; use read_device_global")))
            }
            _ => Ok(h.index()),
        }
    }

    /// Sets the contents of `usm`/`buffer` memory `name` (exactly its size in bytes).
    pub fn bind(&mut self, name: &str, bytes: &[u8]) -> Result<(), InterpError> {
        let i = self.user_index(name)?;
        let slot = &mut self.user[i];
        if slot.len() != bytes.len() {
            return Err(InterpError::api(format!("@{name} holds {} bytes, {} were given", slot.len(), bytes.len())));
        }
        slot.copy_from_slice(bytes);
        Ok(())
    }

    /// [`Interpreter::bind`] from elements.
    pub fn bind_as<T: Element>(&mut self, name: &str, values: &[T]) -> Result<(), InterpError> {
        self.bind(name, &to_bytes(values))
    }

    /// The contents of `usm`/`buffer` memory `name`.
    pub fn read(&self, name: &str) -> Result<&[u8], InterpError> {
        let i = self.user_index(name)?;
        Ok(&self.user[i])
    }

    /// [`Interpreter::read`] as elements.
    pub fn read_as<T: Element>(&self, name: &str) -> Result<Vec<T>, InterpError> {
        Ok(from_bytes(self.read(name)?))
    }

    /// The contents of device_global `name` on `device` (its initial image if nothing on
    /// that device has touched it yet).
    pub fn read_device_global(&self, name: &str, device: u32) -> Result<Vec<u8>, InterpError> {
        let bare = name.trim_start_matches('@');
        let h =
            self.module.memory_by_name(bare).ok_or_else(|| InterpError::api(format!("no memory object @{bare}")))?;
        if let Some(live) = self.dg.live.get(&(device, h)) {
            return Ok(live.clone());
        }
        self.dg.init.get(&h).cloned().ok_or_else(|| InterpError::api(format!("@{bare} is not a device_global")))
    }

    /// Sets the instance of device global `name` on `device` to `bytes` (its whole size).
    pub fn write_device_global(&mut self, name: &str, device: u32, bytes: &[u8]) -> Result<(), InterpError> {
        let bare = name.trim_start_matches('@');
        let h =
            self.module.memory_by_name(bare).ok_or_else(|| InterpError::api(format!("no memory object @{bare}")))?;
        let size = self
            .dg
            .init
            .get(&h)
            .map(Vec::len)
            .ok_or_else(|| InterpError::api(format!("@{bare} is not a device_global")))?;
        if bytes.len() != size {
            return Err(InterpError::api(format!("@{bare} is {size} bytes, not {}", bytes.len())));
        }
        self.dg.live.insert((device, h), bytes.to_vec());
        Ok(())
    }

    /// Finalizes graph `name` with each allocation in storage of its own.
    pub fn finalize(&mut self, name: &str) -> Result<ExecId, InterpError> {
        self.finalize_with(name, AllocLayout::Separate)
    }

    /// Finalizes graph `name`: expands sub-graphs, checks acyclicity, captures dynamic
    /// parameter values and active alternatives, and creates the allocations (zeroing the
    /// `zero_init` ones, poisoning the rest with [`POISON`]). Fails while another executable
    /// graph of a graph with allocations is alive (000 §8.4.3).
    pub fn finalize_with(&mut self, name: &str, layout: AllocLayout) -> Result<ExecId, InterpError> {
        let bare = name.trim_start_matches('@');
        let root = self.module.graph_by_name(bare).ok_or_else(|| InterpError::api(format!("no graph @{bare}")))?;
        let graph = &self.module.graphs[root];
        let has_allocs = graph.nodes.iter().any(|(_, n)| matches!(n.kind, NodeKind::AsyncMalloc { .. }));
        if has_allocs && self.execs.values().any(|e| e.root == root) {
            return Err(InterpError::LiveExecutable { graph: graph.name.clone() });
        }
        let flat = Flat::build(&self.module, root)?;
        let mut states = BTreeMap::new();
        for f in &flat.nodes {
            if let Some(g) = self.module.graphs.try_get(f.graph) {
                states.entry(f.graph).or_insert_with(|| GraphState::capture(g));
            }
        }
        states.entry(root).or_insert_with(|| GraphState::capture(graph));
        let allocs = Self::allocations(graph, &layout)?;
        let id = ExecId(self.next_exec);
        self.next_exec = self.next_exec.checked_add(1).ok_or_else(|| InterpError::api("too many executable graphs"))?;
        self.execs.insert(id, Executable { root, flat, states, allocs });
        Ok(id)
    }

    fn allocations(graph: &Graph, layout: &AllocLayout) -> Result<Allocs, InterpError> {
        let mut info = BTreeMap::new();
        let mut zeroed = Vec::new();
        for (h, n) in graph.nodes.iter() {
            let NodeKind::AsyncMalloc { elem, count, kind, zero_init } = &n.kind else {
                continue;
            };
            let bad = |msg: &str| InterpError::invalid(&graph.name, Some(&n.name), msg);
            if *kind != UsmKind::Device {
                return Err(bad("graph allocations must be `device` USM (000 §8.4.3)"));
            }
            let size = elem.size().checked_mul(*count).ok_or_else(|| bad("allocation size overflows"))?;
            let pool_offset = match layout {
                AllocLayout::Separate => 0,
                AllocLayout::Pool(pool) => {
                    let off = *pool
                        .offsets
                        .get(&h)
                        .ok_or_else(|| bad("the pool layout has no offset for this allocation"))?;
                    if off.checked_add(size).is_none_or(|end| end > pool.size) {
                        return Err(bad(&format!(
                            "bytes {off}..{} lie outside the {}-byte pool",
                            off as u128 + size as u128,
                            pool.size
                        )));
                    }
                    off
                }
            };
            info.insert(h, AllocInfo { name: n.name.clone(), size, pool_offset });
            if *zero_init {
                zeroed.push(h);
            }
        }
        let pool_size = match layout {
            AllocLayout::Separate => None,
            AllocLayout::Pool(pool) => {
                let mut keys: Vec<_> = pool.offsets.keys().copied().collect();
                keys.sort();
                if let Some(stray) = keys.into_iter().find(|k| !info.contains_key(k)) {
                    return Err(InterpError::invalid(
                        &graph.name,
                        None,
                        format!("the pool layout names node [{}], which is not an async_malloc", stray.index()),
                    ));
                }
                Some(pool.size)
            }
        };
        Allocs::new(info, &zeroed, pool_size).map_err(|m| InterpError::invalid(&graph.name, None, m))
    }

    /// Destroys an executable graph (its allocations go with it).
    pub fn drop_exec(&mut self, exec: ExecId) -> Result<(), InterpError> {
        self.execs.remove(&exec).map(|_| ()).ok_or_else(|| InterpError::api(format!("no executable graph {}", exec.0)))
    }

    /// A copy of the bytes of graph allocation `node` of an executable graph.
    pub fn read_alloc(&mut self, exec: ExecId, node: &str) -> Result<Vec<u8>, InterpError> {
        let e = self.execs.get_mut(&exec).ok_or_else(|| InterpError::api(format!("no executable graph {}", exec.0)))?;
        let bare = node.trim_start_matches('%');
        let h = e.allocs.info.iter().find(|(_, a)| a.name == bare).map(|(h, _)| *h);
        h.and_then(|h| e.allocs.read(h)).ok_or_else(|| InterpError::api(format!("no allocation %{bare}")))
    }

    fn state_mut(&mut self, exec: ExecId, graph: Option<&str>) -> Result<(&Graph, &mut GraphState), InterpError> {
        let e = self.execs.get_mut(&exec).ok_or_else(|| InterpError::api(format!("no executable graph {}", exec.0)))?;
        let g = match graph {
            None => e.root,
            Some(name) => {
                let bare = name.trim_start_matches('@');
                self.module.graph_by_name(bare).ok_or_else(|| InterpError::api(format!("no graph @{bare}")))?
            }
        };
        let state =
            e.states.get_mut(&g).ok_or_else(|| InterpError::api("the graph is not part of this executable graph"))?;
        Ok((&self.module.graphs[g], state))
    }

    /// Sets dynamic parameter `param` of the executable's root graph (what
    /// `dynamic_parameter::update` followed by `exec.update(nodes)` does). The new value
    /// must be of the same kind (and scalar type, element type) as the old one.
    pub fn update_param(&mut self, exec: ExecId, param: &str, value: ArgValue) -> Result<(), InterpError> {
        self.update_param_in(exec, None, param, value)
    }

    /// [`Interpreter::update_param`] for the graph named `graph` inside the executable
    /// (a sub-graph), or the root when `None`.
    pub fn update_param_in(
        &mut self,
        exec: ExecId,
        graph: Option<&str>,
        param: &str,
        value: ArgValue,
    ) -> Result<(), InterpError> {
        let (g, state) = self.state_mut(exec, graph)?;
        let bare = param.trim_start_matches('%');
        let (h, _) = g
            .dyn_params
            .iter()
            .find(|(_, p)| p.name == bare)
            .ok_or_else(|| InterpError::api(format!("graph @{} has no dynamic parameter %{bare}", g.name)))?;
        let slot = state.params.get_mut(h.index()).ok_or_else(|| InterpError::api("parameter out of range"))?;
        let same_kind = match (&*slot, &value) {
            (ArgValue::Scalar(a), ArgValue::Scalar(b)) => match (a.ty, b.ty) {
                (Some(t), Some(u)) => t == u,
                (Some(t), None) => literal_bits(b.value, t).is_some(),
                _ => true,
            },
            (ArgValue::Pointer(_), ArgValue::Pointer(_)) | (ArgValue::Accessor(_), ArgValue::Accessor(_)) => true,
            (ArgValue::Bytes(a), ArgValue::Bytes(b)) => a.len() == b.len(),
            (ArgValue::Local { elem: a, .. }, ArgValue::Local { elem: b, .. }) => a == b,
            _ => false,
        };
        if !same_kind {
            return Err(InterpError::api(format!(
                "%{bare} holds {}; {} is not a value of that kind",
                value_kind(slot),
                value_kind(&value)
            )));
        }
        *slot = match (&*slot, value) {
            (ArgValue::Scalar(a), ArgValue::Scalar(mut b)) => {
                b.ty = b.ty.or(a.ty);
                ArgValue::Scalar(b)
            }
            (_, v) => v,
        };
        Ok(())
    }

    /// Makes alternative `index` of dynamic command group `dcg` active in the executable's
    /// root graph (`set_active_index` followed by `exec.update(node)`).
    pub fn set_active(&mut self, exec: ExecId, dcg: &str, index: u32) -> Result<(), InterpError> {
        self.set_active_in(exec, None, dcg, index)
    }

    /// [`Interpreter::set_active`] for a graph inside the executable.
    pub fn set_active_in(
        &mut self,
        exec: ExecId,
        graph: Option<&str>,
        dcg: &str,
        index: u32,
    ) -> Result<(), InterpError> {
        let (g, state) = self.state_mut(exec, graph)?;
        let bare = dcg.trim_start_matches('%');
        let (h, d) = g
            .dcgs
            .iter()
            .find(|(_, d)| d.name == bare)
            .ok_or_else(|| InterpError::api(format!("graph @{} has no dynamic command group %{bare}", g.name)))?;
        if index as usize >= d.alternatives.len() {
            return Err(InterpError::api(format!(
                "%{bare} has {} alternatives; {index} is out of range",
                d.alternatives.len()
            )));
        }
        let slot = state.active.get_mut(h.index()).ok_or_else(|| InterpError::api("group out of range"))?;
        *slot = index;
        Ok(())
    }

    /// Runs an executable graph in creation order without race checking.
    pub fn run(&mut self, exec: ExecId) -> Result<RunStats, InterpError> {
        self.run_with(exec, &RunOptions::default())
    }

    /// Runs an executable graph once. `zero_init` allocations keep their contents from the
    /// previous run (they are zeroed only at finalize); the others are poisoned at the start
    /// of every run (decision A9). On error the run stops at the
    /// failing node; memory holds what the nodes before it wrote.
    pub fn run_with(&mut self, exec: ExecId, opts: &RunOptions) -> Result<RunStats, InterpError> {
        let Interpreter { module, user, dg, callbacks, execs, .. } = self;
        let e = execs.get_mut(&exec).ok_or_else(|| InterpError::api(format!("no executable graph {}", exec.0)))?;
        let Executable { root, flat, states, allocs } = e;
        allocs.start_run();
        let order = schedule::schedule(flat, opts.order);
        let mut logs: Vec<NodeLog> =
            if opts.check_races { vec![NodeLog::default(); flat.nodes.len()] } else { Vec::new() };
        let module: &Module = module;
        let device = module.graphs.try_get(*root).map_or(0, |g| g.device);
        let mut stats = RunStats::default();
        let mut fuel = opts.fuel.unwrap_or(u64::MAX);
        let mut mem = MemCtx { module, user, dg, allocs, device };
        for &i in &order {
            let f = &flat.nodes[i as usize];
            if f.role != Role::Command {
                continue;
            }
            let (Some(graph), Some(state)) = (module.graphs.try_get(f.graph), states.get(&f.graph)) else {
                return Err(InterpError::api("executable graph refers to a missing graph"));
            };
            let node = graph.nodes.try_get(f.node).ok_or_else(|| InterpError::api("node handle out of range"))?;
            let mut ctx = NodeCtx {
                module,
                graph,
                root: f.graph == *root,
                state,
                name: &f.name,
                mem: &mut mem,
                log: logs.get_mut(i as usize),
                callbacks,
                fuel: &mut fuel,
                fma: opts.fma,
                denormals: opts.denormals,
                subgroup_size: opts.subgroup_size,
                loop_rounds: opts.loop_rounds.unwrap_or(DEFAULT_LOOP_ROUNDS),
                depth: 0,
            };
            stats.work_items += ctx.execute(f.node, node)?;
            stats.order.push(f.name.clone());
        }
        if opts.check_races {
            let allocs = &e.allocs;
            let pool = Self::pool_lifetimes(&e.flat, e.root, allocs, module);
            stats.races = race::detect(&e.flat, &order, logs, &pool, |loc, range| match loc {
                Loc::User(h) | Loc::DeviceGlobal(h) => {
                    module.memories.try_get(h).map_or("@?".to_string(), |m| format!("@{}", m.name))
                }
                Loc::Alloc(h) => allocs.info.get(&h).map_or("%?".to_string(), |a| format!("%{}", a.name)),
                Loc::Pool => {
                    let names: Vec<String> = allocs
                        .info
                        .values()
                        .filter(|a| a.pool_offset < range.end && range.start < a.pool_offset + a.size)
                        .map(|a| format!("%{}", a.name))
                        .collect();
                    format!("pool ({})", names.join(", "))
                }
            })?;
        }
        Ok(stats)
    }

    /// In pool mode, each allocation's pool bytes with its malloc and free nodes.
    fn pool_lifetimes(flat: &Flat, root: Handle<Graph>, allocs: &Allocs, module: &Module) -> Vec<race::PoolAlloc> {
        if !allocs.pooled() {
            return Vec::new();
        }
        let mut spans: BTreeMap<Handle<cmdgraph_ir::graph::Node>, race::PoolAlloc> = BTreeMap::new();
        let Some(graph) = module.graphs.try_get(root) else { return Vec::new() };
        for (i, f) in flat.nodes.iter().enumerate() {
            if f.graph != root || f.role != Role::Command {
                continue;
            }
            match graph.nodes.try_get(f.node).map(|n| &n.kind) {
                Some(NodeKind::AsyncMalloc { .. }) => {
                    if let Some(a) = allocs.info.get(&f.node) {
                        let range = a.pool_offset..a.pool_offset + a.size;
                        spans.entry(f.node).or_insert(race::PoolAlloc { range, malloc: i as u32, free: None });
                    }
                }
                Some(NodeKind::AsyncFree { alloc }) => {
                    if let Some(span) = spans.get_mut(alloc) {
                        span.free = Some(i as u32);
                    }
                }
                _ => {}
            }
        }
        spans.into_values().collect()
    }
}

/// What kind of value an argument is, in words for messages (not Rust's debug text).
fn value_kind(v: &ArgValue) -> String {
    match v {
        ArgValue::Scalar(cmdgraph_ir::types::Literal { ty: Some(t), .. }) => format!("a scalar of type {t}"),
        ArgValue::Scalar(_) => "a scalar".to_string(),
        ArgValue::Pointer(_) => "a pointer".to_string(),
        ArgValue::Accessor(_) => "an accessor".to_string(),
        ArgValue::Bytes(b) => format!("{} raw bytes", b.len()),
        ArgValue::Local { elem, count } => format!("work-group memory {elem}[{count}]"),
    }
}

#[cfg(test)]
mod message_tests {
    use super::Interpreter;
    use cmdgraph_ir::graph::{ArgValue, Pointer};
    use cmdgraph_ir::MemRef;

    #[test]
    fn an_update_of_another_kind_names_both_kinds_in_words() {
        let src = "usm @x : f32[4]\ngraph @g {\n  dyn %s = 2.0 : f32\n}\n";
        let module = cmdgraph_ir::text::parse(src).expect("parses");
        let mut interp = Interpreter::new(&module).expect("interpreter");
        let exec = interp.finalize("g").expect("finalize");
        let x = module.memory_by_name("x").expect("@x");
        let pointer = ArgValue::Pointer(Pointer { base: MemRef::Memory(x), offset: 0 });
        let e = interp.update_param(exec, "s", pointer).expect_err("a pointer for a scalar");
        assert!(e.to_string().contains("%s holds a scalar of type f32; a pointer is not a value of that kind"), "{e}");
    }
}
