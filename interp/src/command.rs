//! Executing one node: memory commands, allocation lifetimes, host callbacks, kernels and
//! dynamic command groups.
//!
//! Memory commands check the lifetime and bounds of every byte range they name and record
//! what they read and wrote. `memcpy` has `memmove` semantics when source and destination
//! overlap (SYCL leaves overlap undefined; copying as if through a temporary is one of the
//! allowed outcomes). `prefetch` and `memadvise` touch no data but still check that their
//! range is live and in bounds. `empty` and `barrier` do nothing (their ordering is in the
//! edges). A `native` command runs its callback when the node executes, standing for the
//! native work it enqueues, which the runtime orders by the node's edges (004).

use super::access::{AccessKind, NodeLog};
use super::error::{FaultKind, InterpError};
use super::host::{Declared, HostCallbacks, HostContext};
use super::kernel;
use super::memory::{Life, MemCtx, Space};
use super::value::{literal_bits, write_elem};
use cmdgraph_ir::arena::Handle;
use cmdgraph_ir::graph::{
    Alternative, Arg, ArgValue, Graph, HostTaskCommand, KernelCommand, MemRef, Node, NodeKind, Pointer,
};
use cmdgraph_ir::module::Module;
use cmdgraph_ir::types::Type;

/// The values dynamic parameters and dynamic command groups hold in one executable graph.
#[derive(Clone, Debug)]
pub(crate) struct GraphState {
    /// Current value of each dynamic parameter, by handle index.
    pub params: Vec<ArgValue>,
    /// Active alternative of each dynamic command group, by handle index.
    pub active: Vec<u32>,
}

impl GraphState {
    /// The values as of now in the modifiable graph (what `finalize` captures).
    pub fn capture(graph: &Graph) -> GraphState {
        GraphState {
            params: graph.dyn_params.iter().map(|(_, p)| p.value.clone()).collect(),
            active: graph.dcgs.iter().map(|(_, d)| d.active).collect(),
        }
    }
}

/// Everything one node's execution needs.
pub(crate) struct NodeCtx<'r, 'a> {
    pub module: &'a Module,
    pub graph: &'a Graph,
    /// Whether `graph` is the executable graph's root (only it may own allocations).
    pub root: bool,
    pub state: &'r GraphState,
    /// The node's path name.
    pub name: &'r str,
    pub mem: &'r mut MemCtx<'a>,
    pub log: Option<&'r mut NodeLog>,
    pub callbacks: &'r mut HostCallbacks,
    /// Kernel op executions left (see `RunOptions::fuel`).
    pub fuel: &'r mut u64,
    /// How `fma` rounds (`RunOptions::fma`).
    pub fma: super::FmaRounding,
    /// What float ops do with `f32` subnormals (`RunOptions::denormals`).
    pub denormals: super::Denormals,
    /// Lanes per subgroup (`RunOptions::subgroup_size`).
    pub subgroup_size: super::SubgroupSize,
    /// Rounds a `while` node may run (`RunOptions::loop_rounds`).
    pub loop_rounds: u64,
    /// Conditional bodies this node runs inside (0 at the top; bounded like sub-graph
    /// nesting, so a module that contains itself through bodies fails, never overflows).
    pub depth: u32,
}

impl NodeCtx<'_, '_> {
    pub(crate) fn invalid(&self, message: impl Into<String>) -> InterpError {
        InterpError::invalid(&self.graph.name, Some(self.name), message)
    }

    pub(crate) fn fault(&self, kind: FaultKind) -> InterpError {
        InterpError::fault(self.name, kind)
    }

    pub(crate) fn record(&mut self, space: Space, kind: AccessKind, start: u64, len: u64) {
        let (loc, base) = self.mem.loc(space);
        if let Some(log) = self.log.as_deref_mut() {
            log.add(loc, kind, base + start, len);
        }
    }

    /// The bytes of `space`.
    pub(crate) fn bytes(&mut self, space: Space) -> Result<&mut [u8], InterpError> {
        let name = self.name;
        self.mem.bytes_mut(space).map_err(|k| InterpError::fault(name, k))
    }

    /// The space a command's memory reference names.
    fn space(&self, base: MemRef) -> Result<Space, InterpError> {
        match base {
            MemRef::Memory(h) => self.mem.user_space(h).map_err(|k| self.fault(k)),
            MemRef::Alloc(h) if self.root && self.mem.allocs.info.contains_key(&h) => Ok(Space::Alloc(h)),
            MemRef::Alloc(_) => Err(self.invalid("names a node that is not an async_malloc of this graph")),
        }
    }

    /// Resolves `ptr` and checks that `[ptr, ptr + len)` is live and in bounds.
    pub(crate) fn range(&self, ptr: Pointer, len: u64) -> Result<Space, InterpError> {
        let space = self.space(ptr.base)?;
        self.mem.check_live(space).map_err(|k| self.fault(k))?;
        self.mem.check_range(space, ptr.offset, len).map_err(|k| self.fault(k))?;
        Ok(space)
    }

    /// Executes the node; returns the number of kernel work-items it ran.
    pub fn execute(&mut self, handle: Handle<Node>, node: &Node) -> Result<u64, InterpError> {
        match &node.kind {
            NodeKind::Empty | NodeKind::Barrier { .. } | NodeKind::Subgraph { .. } => Ok(0),
            NodeKind::Conditional { kind, cond, bodies } => self.conditional(*kind, *cond, bodies),
            NodeKind::Kernel(cmd) => self.kernel(cmd),
            NodeKind::Memcpy { dst, src, bytes } => {
                let s = self.range(*src, *bytes)?;
                let d = self.range(*dst, *bytes)?;
                let n = *bytes as usize;
                let (so, dof) = (src.offset as usize, dst.offset as usize);
                if s == d {
                    let buf = self.bytes(s)?;
                    buf.copy_within(so..so + n, dof);
                } else {
                    let tmp = self.bytes(s)?[so..so + n].to_vec();
                    self.bytes(d)?[dof..dof + n].copy_from_slice(&tmp);
                }
                self.record(s, AccessKind::Read, src.offset, *bytes);
                self.record(d, AccessKind::Write, dst.offset, *bytes);
                Ok(0)
            }
            NodeKind::Memset { dst, value, bytes } => {
                let d = self.range(*dst, *bytes)?;
                let o = dst.offset as usize;
                self.bytes(d)?[o..o + *bytes as usize].fill(*value);
                self.record(d, AccessKind::Write, dst.offset, *bytes);
                Ok(0)
            }
            NodeKind::Memfill { dst, pattern, count } => {
                let Some(ty) = pattern.ty else {
                    return Err(self.invalid("the memfill pattern has no type"));
                };
                let bits = literal_bits(pattern.value, ty)
                    .ok_or_else(|| self.invalid(format!("the pattern does not fit {ty}")))?;
                let size = ty.size();
                let mut elem = vec![0u8; size as usize];
                write_elem(&mut elem, Type::scalar(ty), &[bits]);
                let bytes = count.checked_mul(size).ok_or_else(|| self.invalid("memfill size overflows"))?;
                let d = self.range(*dst, bytes)?;
                let o = dst.offset as usize;
                let buf = self.bytes(d)?;
                for chunk in buf[o..o + bytes as usize].chunks_exact_mut(size as usize) {
                    chunk.copy_from_slice(&elem);
                }
                self.record(d, AccessKind::Write, dst.offset, bytes);
                Ok(0)
            }
            NodeKind::Prefetch { ptr, bytes } | NodeKind::Memadvise { ptr, bytes, .. } => {
                self.range(*ptr, *bytes)?;
                Ok(0)
            }
            NodeKind::HostTask(cmd) | NodeKind::Native(cmd) => {
                self.host(cmd)?;
                Ok(0)
            }
            // A host task whose callback the communicator supplies (cmdgraph_ir::comm).
            NodeKind::Comm(c) => {
                self.range(c.ptr, c.bytes)?;
                let task = cmdgraph_ir::comm::host_task(&self.graph.name, &node.name, c);
                if !self.callbacks.contains(&task.callback) {
                    let what = format!(
                        "`{}` needs a communicator: run the module's rank graphs with `cmdgraph interp --ranks N`, \
                         or each rank under mpiexec",
                        c.op.keyword()
                    );
                    return Err(self.fault(FaultKind::Other(what)));
                }
                self.host(&task)?;
                Ok(0)
            }
            NodeKind::AsyncMalloc { .. } => {
                let space = self.space(MemRef::Alloc(handle))?;
                self.mem.allocs.life.insert(handle, Life::Live);
                let size = self.mem.size(space);
                self.record(space, AccessKind::Alloc, 0, size);
                Ok(0)
            }
            NodeKind::AsyncFree { alloc } => {
                let space = self.space(MemRef::Alloc(*alloc))?;
                match self.mem.allocs.life.get(alloc) {
                    Some(Life::Live) => {}
                    Some(Life::Freed(by)) => {
                        let memory = self.mem.name(space);
                        let kind = FaultKind::Other(format!("double free: {memory} was already freed by %{by}"));
                        return Err(self.fault(kind));
                    }
                    _ => return Err(self.fault(FaultKind::Lifetime { memory: self.mem.name(space), freed_by: None })),
                }
                self.mem.allocs.life.insert(*alloc, Life::Freed(self.name.to_string()));
                let size = self.mem.size(space);
                self.record(space, AccessKind::Free, 0, size);
                Ok(0)
            }
            NodeKind::Dynamic { dcg } => {
                let group =
                    self.graph.dcgs.try_get(*dcg).ok_or_else(|| self.invalid("dynamic command group out of range"))?;
                let active = self.state.active.get(dcg.index()).copied().unwrap_or(group.active);
                match group.alternatives.get(active as usize) {
                    Some(Alternative::Kernel(cmd)) => self.kernel(cmd),
                    Some(Alternative::HostTask(cmd)) => {
                        self.host(cmd)?;
                        Ok(0)
                    }
                    Some(Alternative::Other(_)) => Err(self.invalid(format!(
                        "alternative {active} of %{} is neither a kernel nor a host task",
                        group.name
                    ))),
                    None => Err(self.invalid(format!("%{} has no alternative {active}", group.name))),
                }
            }
        }
    }

    fn kernel(&mut self, cmd: &KernelCommand) -> Result<u64, InterpError> {
        let kernel =
            self.module.kernels.try_get(cmd.kernel).ok_or_else(|| self.invalid("kernel handle out of range"))?;
        let mut args = Vec::with_capacity(cmd.args.len());
        for arg in &cmd.args {
            args.push(match arg {
                Arg::Value(v) => v.clone(),
                Arg::Dyn(p) => self
                    .state
                    .params
                    .get(p.index())
                    .cloned()
                    .ok_or_else(|| self.invalid("dynamic parameter out of range"))?,
            });
        }
        kernel::run(
            &self.graph.name,
            self.name,
            kernel,
            &self.module.functions,
            &cmd.launch,
            &args,
            self.mem,
            self.log.as_deref_mut(),
            self.root,
            self.fuel,
            self.fma,
            self.denormals,
            self.subgroup_size,
        )
    }

    fn host(&mut self, cmd: &HostTaskCommand) -> Result<(), InterpError> {
        let mut declared = Vec::with_capacity(cmd.access.len());
        for a in &cmd.access {
            let space = self.space(a.mem)?;
            declared.push(Declared { name: self.mem.name(space), space, mode: a.mode });
        }
        let Some(callback) = self.callbacks.get_mut(&cmd.callback) else {
            return Err(self.fault(FaultKind::UnregisteredCallback { callback: cmd.callback.clone() }));
        };
        let mut ctx = HostContext::new(self.name, declared, self.mem.reborrow(), self.log.as_deref_mut());
        let result = callback(&mut ctx);
        let violation = ctx.violation();
        let error = match (result, violation) {
            (Err(e), _) | (Ok(()), Some(e)) => e,
            (Ok(()), None) => return Ok(()),
        };
        Err(self.fault(FaultKind::Host { callback: cmd.callback.clone(), error }))
    }
}
