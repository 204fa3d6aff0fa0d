//! The [`Executor`]: a loaded bundle on one device, its user memory, device globals,
//! pipelines, callbacks and executables (docs/executor.md).
#![allow(unsafe_code)]

use crate::args::{element_bytes, Place as ArgPlace, Target};
use crate::error::{ExecError, Result};
use crate::executable::Executable;
use crate::load::Loaded;
use crate::vk::{BufRef, Buffer, Context, ContextOptions, KernelPipeline, Place, Transfers};
use crate::worker::{Callbacks, Worker};
use ash::vk;
use cmdgraph_ir::data::{from_bytes, to_bytes, Element};
use cmdgraph_ir::host::{HostError, HostFn, HostMemory};
use cmdgraph_ir::types::Access;
use cmdgraph_ir::{MemAccess, MemRef, MemoryKind, Module, UsmKind};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// User memory of at most this many bytes is made in device-local memory the host maps
/// where the device has it ([`Place::Mapped`]): a `read` or `bind` of it when nothing is
/// pending touches the mapping instead of waiting for a transfer on the queue (on the H200
/// a 4-byte read took about 19 µs that way). Larger memory stays unmapped: the heap the
/// host can map may be as small as 256 MiB.
pub const MAPPED_USER_MAX: u64 = 64 << 10;

/// A registered host-task callback (`cmdgraph_ir::host::HostFn`, the one callback type of
/// every runtime).
pub(crate) type BoxedHostFn = Box<HostFn>;

/// A native-command callback, called when the graph is recorded with the command buffer
/// the node's commands go into (enqueue_native_command's graph rule).
pub type NativeFn = Box<dyn FnMut(&NativeContext<'_>) + Send>;

/// What a native-command callback gets.
pub struct NativeContext<'a> {
    /// The logical device.
    pub device: &'a ash::Device,
    /// The command buffer being recorded (compute and transfer commands only).
    pub command_buffer: vk::CommandBuffer,
    /// The node's name.
    pub node: &'a str,
}

/// Identifies an executable graph of an [`Executor`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExecId(pub(crate) usize);

/// Where an executable's command buffers get pipeline barriers (docs/executor.md, "Barriers").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BarrierPolicy {
    /// Only where a command touches memory an earlier command since the last barrier wrote,
    /// or writes memory one read (kernel footprints, copy and fill ranges), with stage and
    /// access masks from the commands on both sides.
    #[default]
    Conflicts,
    /// At every stage boundary of the schedule, with masks from the commands on both sides.
    Stages,
    /// At every stage boundary, `ALL_COMMANDS` with every memory access: how the executor
    /// recorded before footprints, kept as a baseline for benchmarks.
    Full,
}

/// How finalize records an executable ([`Executor::set_record_options`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecordOptions {
    /// Where barriers go.
    pub barriers: BarrierPolicy,
    /// Record one `SIMULTANEOUS_USE` command buffer per segment instead of two ordinary
    /// copies used in turn (the driver may patch simultaneous-use buffers at every submit).
    pub simultaneous_use: bool,
    /// Timestamps around every node of graphs with `enable_profiling` (they serialise the
    /// commands of a stage); without it only each segment's start and end are stamped.
    pub node_profiling: bool,
    /// How `memcpy` nodes and fills with a pattern `vkCmdFillBuffer` cannot repeat are
    /// recorded (docs/executor.md, "Copies").
    pub copies: CopyPolicy,
    /// The most work-groups one copy-kernel dispatch uses (0: 65 535). Fewer make each
    /// invocation loop over more elements.
    pub copy_groups: u32,
}

/// How copies are recorded ([`RecordOptions::copies`]; `CMDGRAPH_COPIES=auto|shader|transfer`
/// sets the default of new executors).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CopyPolicy {
    /// The copy kernel on GPUs (NVIDIA's `vkCmdCopyBuffer` moves a fifth of its bytes per
    /// second), `vkCmdCopyBuffer` on CPU devices (llvmpipe's copy command is a `memcpy`).
    #[default]
    Auto,
    /// Always `vkCmdCopyBuffer`.
    Transfer,
    /// The copy kernel wherever offsets and size allow (multiples of 4 bytes, windows within
    /// `maxStorageBufferRange`), `vkCmdCopyBuffer` elsewhere.
    Shader,
}

impl CopyPolicy {
    /// The policy `CMDGRAPH_COPIES` names, if it names one.
    pub fn from_env() -> Option<CopyPolicy> {
        match std::env::var("CMDGRAPH_COPIES").ok()?.as_str() {
            "auto" => Some(CopyPolicy::Auto),
            "shader" => Some(CopyPolicy::Shader),
            "transfer" => Some(CopyPolicy::Transfer),
            _ => None,
        }
    }
}

/// The Vulkan objects of one executable ([`Executor::vulkan_objects`]; pipelines are the
/// executor's, shared by every executable).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VulkanObjects {
    /// Command buffers recorded (per device segment, one or two copies).
    pub command_buffers: usize,
    /// Buffers (argument blocks, indirect commands, pool, fill patterns, memmove scratch).
    pub buffers: usize,
    /// Device memory allocations (one per buffer).
    pub memory_allocations: usize,
    /// Descriptor pools.
    pub descriptor_pools: usize,
    /// Descriptor sets (one per prepared kernel launch, one per pair of windows copy-kernel
    /// copies bind).
    pub descriptor_sets: usize,
    /// Pipelines of the executor (one per compiled kernel variant, two for the copy kernels
    /// once made).
    pub pipelines: usize,
}

/// A bundle loaded on a Vulkan device.
///
/// `Send`: an executor may move to another thread (the C API's handles are used from any
/// thread, one at a time); it is not `Sync`, since its calls submit to one queue.
pub struct Executor {
    pub(crate) loaded: Loaded,
    /// User memory by memory handle index (`None` for device globals).
    pub(crate) memories: Vec<Option<Buffer>>,
    /// Device globals per (device, name), created from the initialiser on first use.
    pub(crate) globals: BTreeMap<(u32, String), Buffer>,
    pub(crate) pipelines: Vec<KernelPipeline>,
    pub(crate) cache: vk::PipelineCache,
    pub(crate) transfers: Transfers,
    /// The copy kernels, made by the first finalize that records a copy with them.
    pub(crate) copy_kernels: Option<crate::vk::copy::CopyKernels>,
    /// The predicate kernel of conditional nodes, made by the first finalize that has one.
    pub(crate) predicate_kernel: Option<crate::vk::predicate::PredicateKernel>,
    /// While recording a conditional body: the predicate words in force, innermost last, as
    /// (buffer, word index, whether the body runs under conditional rendering on it)
    /// (executable/conditional.rs).
    pub(crate) pred_stack: std::cell::RefCell<Vec<(vk::Buffer, u32, bool)>>,
    /// Rounds after which a `while` node that still runs fails its run
    /// ([`set_loop_round_limit`](Self::set_loop_round_limit)).
    pub(crate) loop_round_limit: u64,
    /// Whether a host task waits only for the device work it needs (docs/executor.md,
    /// "Host tasks and overlap"); off in a multi-device executor's devices, whose stage
    /// graphs wait on each other's semaphores: there the validation layer's semaphore
    /// tracking stalled for 10 s when a held host task ran beside them.
    pub(crate) overlap_host_tasks: bool,
    pub(crate) host: Callbacks,
    /// Runs with host tasks (docs/executor.md, "Running").
    pub(crate) worker: Worker,
    pub(crate) native: BTreeMap<String, NativeFn>,
    pub(crate) execs: Vec<Option<Executable>>,
    /// The host clock's origin for profiles.
    pub(crate) epoch: std::time::Instant,
    /// How later finalizes record command buffers (barriers, copies, per-node timestamps).
    pub(crate) recording: RecordOptions,
    /// What the user should know about running this bundle on this device ([`Executor::warnings`]).
    pub(crate) warnings: Vec<String>,
    // Declared last: dropped after everything above has been destroyed by `Drop`.
    pub(crate) ctx: Arc<Context>,
}

impl Executor {
    /// Creates the device and uploads nothing yet: user memory starts zeroed, pipelines are
    /// created through the pipeline cache.
    pub fn new(loaded: Loaded, opts: &ContextOptions) -> Result<Executor> {
        Executor::on_context(loaded, Context::new(opts)?)
    }

    /// An executor on a context made by [`Executor::new`] or [`Executor::with_vulkan`].
    pub(crate) fn on_context(loaded: Loaded, ctx: Context) -> Result<Executor> {
        let ctx = Arc::new(ctx);
        let transfers = Transfers::new(&ctx)?;
        let cache = crate::vk::pipeline::create_cache(&ctx)?;
        let mut ex = Executor {
            loaded,
            memories: Vec::new(),
            globals: BTreeMap::new(),
            pipelines: Vec::new(),
            cache,
            transfers,
            copy_kernels: None,
            predicate_kernel: None,
            pred_stack: Default::default(),
            loop_round_limit: crate::executable::conditional::ROUND_LIMIT,
            overlap_host_tasks: true,
            host: Arc::new(std::sync::Mutex::new(BTreeMap::new())),
            worker: Worker::new(),
            native: BTreeMap::new(),
            execs: Vec::new(),
            epoch: std::time::Instant::now(),
            recording: RecordOptions { copies: CopyPolicy::from_env().unwrap_or_default(), ..Default::default() },
            warnings: Vec::new(),
            ctx,
        };
        if ex.ctx.is_llvmpipe() {
            ex.warnings = llvmpipe_loop_warnings(&ex.loaded.bundle.kernels);
        }
        // The loader checked the portable limits; this device's own come first here, since a
        // pipeline beyond them is undefined behaviour in the driver (issue 18).
        let limits = &ex.ctx.props.limits;
        for (i, k) in ex.loaded.bundle.kernels.iter().enumerate() {
            let wg = k.workgroup_size;
            let total = wg.iter().map(|&d| u64::from(d)).product::<u64>();
            if wg.iter().zip(limits.max_compute_work_group_size).any(|(&d, m)| d > m)
                || total > u64::from(limits.max_compute_work_group_invocations)
            {
                return Err(ExecError::Bundle(format!(
                    "kernel @{}: workgroup_size {wg:?} exceeds the device's maxComputeWorkGroupSize {:?} or \
                     maxComputeWorkGroupInvocations {} (variant {i})",
                    k.kernel, limits.max_compute_work_group_size, limits.max_compute_work_group_invocations
                )));
            }
            // Work-group memory past the device's limit is invalid usage at pipeline creation.
            let shared = crate::load::workgroup_bytes(&k.spirv)
                .map_err(|m| ExecError::Bundle(format!("kernel @{}: SPIR-V: {m} (variant {i})", k.kernel)))?;
            if shared > u64::from(limits.max_compute_shared_memory_size) {
                return Err(ExecError::Bundle(format!(
                    "kernel @{}: {shared} bytes of work-group memory exceed the device's maxComputeSharedMemorySize {} \
                     (variant {i})",
                    k.kernel, limits.max_compute_shared_memory_size
                )));
            }
        }
        for k in &ex.loaded.bundle.kernels {
            let p = KernelPipeline::new(&ex.ctx, ex.cache, k)?;
            ex.pipelines.push(p);
        }
        let mems: Vec<(u64, bool, Place)> = ex
            .loaded
            .module
            .memories
            .iter()
            .map(|(_, m)| {
                let place = match m.kind {
                    MemoryKind::Usm(UsmKind::Host) => Place::HostCached,
                    _ if m.size_bytes() <= MAPPED_USER_MAX => Place::Mapped,
                    _ => Place::Device,
                };
                (m.size_bytes(), matches!(m.kind, MemoryKind::DeviceGlobal(_)), place)
            })
            .collect();
        for (size, global, place) in mems {
            if global {
                ex.memories.push(None);
                continue;
            }
            // `host` USM in host-cached memory the host maps: host tasks read and write it
            // without a transfer.
            let buf = Buffer::new(&ex.ctx, size, place)?;
            let zero = |d: &ash::Device, cb: vk::CommandBuffer| {
                // SAFETY: `buf` is live; the whole buffer is filled.
                unsafe { d.cmd_fill_buffer(cb, buf.buffer, 0, vk::WHOLE_SIZE, 0) }
            };
            let r = ex.transfers.run(&ex.ctx, zero);
            ex.memories.push(Some(buf));
            r?;
        }
        Ok(ex)
    }

    /// Warnings found at [`Executor::new`], one line each (no `warning:` prefix), in the
    /// bundle's kernel order: on llvmpipe, each kernel whose loops may take more than its
    /// budget of 65535 iterations per work-item, all loops together (the module's
    /// [`crate::spirv::LOOP_BACK_EDGES_MARKER`]), since llvmpipe then stops them silently
    /// and the results may be wrong (docs/executor.md). Empty on other devices.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The module the bundle runs (its optimized IR).
    pub fn module(&self) -> &Module {
        &self.loaded.module
    }

    /// Sets how executables finalized from now on record their command buffers; the
    /// defaults are what an application wants, the others exist to measure against.
    pub fn set_record_options(&mut self, options: RecordOptions) {
        self.recording = options;
    }

    /// Rounds after which a `while` node of an executable finalized from now on fails its run
    /// when it still runs (default 2^20, the interpreter's `RunOptions::fuel`): a loop whose
    /// condition never becomes 0 is an error naming the node, never a hang.
    pub fn set_loop_round_limit(&mut self, rounds: u64) {
        self.loop_round_limit = rounds.max(1);
    }

    /// How executables finalized from now on are recorded.
    pub fn record_options(&self) -> RecordOptions {
        self.recording
    }

    /// The Vulkan context (device name, validation messages).
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// Registers the callback of `host_task "name"` nodes: the same callback type the
    /// reference interpreter takes (`cmdgraph_ir::host`), so one closure serves both.
    pub fn register_callback<F>(&mut self, name: &str, f: F)
    where
        F: FnMut(&mut dyn HostMemory) -> std::result::Result<(), HostError> + Send + 'static,
    {
        if let Ok(mut m) = self.host.lock() {
            m.insert(name.to_string(), Arc::new(Mutex::new(Box::new(f))));
        }
    }

    /// Runs the module's communication nodes (`send`, `recv`, `allreduce`) through `comm`,
    /// this process's rank: MPI (`cmdgraph-mpi`), or one rank of
    /// `cmdgraph_ir::comm::local::ranks` in tests. They run on the host-task thread, which
    /// is the MPI proxy thread of docs/mpi.md: it waits on the timeline for the node's
    /// inputs, and the device runs on around it.
    pub fn set_communicator(&mut self, comm: &cmdgraph_ir::comm::SharedCommunicator) {
        if let Ok(mut m) = self.host.lock() {
            let comm = cmdgraph_ir::comm::callbacks(&self.loaded.module, comm);
            m.extend(comm.into_iter().map(|(name, f)| (name, Arc::new(Mutex::new(f)))));
        }
    }

    /// Registers the callback of `native "name"` nodes (called at record time).
    pub fn register_native<F>(&mut self, name: &str, f: F)
    where
        F: FnMut(&NativeContext<'_>) + Send + 'static,
    {
        self.native.insert(name.to_string(), Box::new(f));
    }

    /// A user memory object: (handle index, buffer, size in bytes); the object starts at
    /// the buffer's `base`.
    pub(crate) fn user(&self, name: &str) -> Result<(usize, &Buffer, u64)> {
        let name = name.strip_prefix('@').unwrap_or(name);
        let h = self.loaded.module.memory_by_name(name).ok_or_else(|| ExecError::Unknown(format!("memory @{name}")))?;
        let size = self.loaded.module.memories[h].size_bytes();
        match self.memories.get(h.index()) {
            Some(Some(b)) => Ok((h.index(), b, size)),
            _ => Err(ExecError::Invalid(format!("@{name} is a device_global, not user memory"))),
        }
    }

    /// Sets a user memory object; the length must be its exact size. Waits for earlier work.
    pub fn bind(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        self.worker.drain(self.ctx.timeout())?;
        let (index, buf, size) = self.user(name)?;
        if bytes.len() as u64 != size {
            return Err(ExecError::Invalid(format!("{name} has {size} bytes, {} given", bytes.len())));
        }
        let base = buf.base;
        self.upload(index, base, bytes)
    }

    /// Writes `bytes` at byte `at` of user memory `index`'s buffer (in range: the caller
    /// checked), after the work submitted before: through the mapping when nothing is
    /// pending (host writes before a submission are visible to it), else by a transfer
    /// ordered after that work on the queue.
    fn upload(&mut self, index: usize, at: u64, bytes: &[u8]) -> Result<()> {
        let mapped = matches!(self.memories.get(index), Some(Some(b)) if b.is_mapped());
        let quiet = mapped && self.quiescent()?;
        match self.memories.get_mut(index) {
            Some(Some(buf)) if quiet => {
                buf.write(at, bytes)?;
                self.ctx.mapped_accesses.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Ok(())
            }
            Some(Some(buf)) => self.transfers.upload(&self.ctx, &*buf, at, bytes),
            _ => Err(ExecError::Invalid(format!("memory {index} is not user memory"))),
        }
    }

    /// Reads `out.len()` bytes at byte `at` of `buf`, a user memory object's buffer (in
    /// range: the caller checked), after everything submitted: through the mapping when
    /// nothing is pending and the mapping reads fast ([`Buffer::reads_mapped`]), else by a
    /// transfer ordered after that work on the queue.
    fn download(&self, buf: &Buffer, at: u64, out: &mut [u8]) -> Result<()> {
        if buf.reads_mapped(out.len() as u64) && self.quiescent()? {
            buf.read_into(at, out)?;
            self.ctx.mapped_accesses.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return Ok(());
        }
        self.transfers.download_into(&self.ctx, buf, at, out)
    }

    /// [`bind`](Self::bind) from typed elements.
    pub fn bind_as<T: Element>(&mut self, name: &str, values: &[T]) -> Result<()> {
        self.bind(name, &to_bytes(values))
    }

    /// A user memory object's contents, after everything submitted so far.
    pub fn read(&self, name: &str) -> Result<Vec<u8>> {
        self.worker.drain(self.ctx.timeout())?;
        let (_, buf, size) = self.user(name)?;
        let mut out = vec![0u8; usize::try_from(size).map_err(|_| ExecError::Invalid(format!("{name} is too large")))?];
        self.download(buf, buf.base, &mut out)?;
        Ok(out)
    }

    /// `out.len()` bytes of a user memory object from byte `offset` into `out`, after
    /// everything submitted so far (a transfer between devices reads its source this way,
    /// into a buffer it keeps).
    pub fn read_range_into(&self, name: &str, offset: u64, out: &mut [u8]) -> Result<()> {
        self.worker.drain(self.ctx.timeout())?;
        let (_, buf, size) = self.user(name)?;
        let len = out.len() as u64;
        if offset.checked_add(len).is_none_or(|end| end > size) {
            return Err(ExecError::Invalid(format!("{name} has {size} bytes; {len} from byte {offset} asked for")));
        }
        self.download(buf, buf.base + offset, out)
    }

    /// Writes `bytes` into a user memory object from byte `offset`. Waits for earlier work.
    pub fn write_range(&mut self, name: &str, offset: u64, bytes: &[u8]) -> Result<()> {
        self.worker.drain(self.ctx.timeout())?;
        let (index, buf, size) = self.user(name)?;
        if offset.checked_add(bytes.len() as u64).is_none_or(|end| end > size) {
            return Err(ExecError::Invalid(format!(
                "{name} has {size} bytes; {} from byte {offset} given",
                bytes.len()
            )));
        }
        let at = buf.base + offset;
        self.upload(index, at, bytes)
    }

    /// [`read`](Self::read) into `out`, which must be exactly the object's size: the
    /// staging buffer's bytes are copied straight into it (language bindings read into
    /// arrays they own this way, without a second copy).
    pub fn read_into(&self, name: &str, out: &mut [u8]) -> Result<()> {
        self.worker.drain(self.ctx.timeout())?;
        let (_, buf, size) = self.user(name)?;
        if out.len() as u64 != size {
            return Err(ExecError::Invalid(format!("{name} has {size} bytes, {} asked for", out.len())));
        }
        self.download(buf, buf.base, out)
    }

    /// [`read`](Self::read) as typed elements.
    pub fn read_as<T: Element>(&self, name: &str) -> Result<Vec<T>> {
        Ok(from_bytes(&self.read(name)?))
    }

    /// A device global's instance on `device` (its initial image if nothing touched it).
    pub fn read_device_global(&mut self, name: &str, device: u32) -> Result<Vec<u8>> {
        let (buf, size) = self.global(device, name)?;
        let _ = buf;
        let b = &self.globals[&(device, name.trim_start_matches('@').to_string())];
        self.transfers.download(&self.ctx, b, 0, size)
    }

    /// Sets device global `name`'s instance on `device` to `bytes` (its whole size), after
    /// the runs submitted before (the transfer goes to the same queue).
    pub fn write_device_global(&mut self, name: &str, device: u32, bytes: &[u8]) -> Result<()> {
        let (_, size) = self.global(device, name)?;
        if bytes.len() as u64 != size {
            return Err(ExecError::Invalid(format!(
                "@{} is {size} bytes, not {}",
                name.trim_start_matches('@'),
                bytes.len()
            )));
        }
        let b = &self.globals[&(device, name.trim_start_matches('@').to_string())];
        self.transfers.upload(&self.ctx, b, 0, bytes)
    }

    /// The device global `name` on `device`, created from its initialiser on first use.
    pub(crate) fn global(&mut self, device: u32, name: &str) -> Result<(vk::Buffer, u64)> {
        self.worker.drain(self.ctx.timeout())?;
        let name = name.strip_prefix('@').unwrap_or(name);
        let h = self
            .loaded
            .module
            .memory_by_name(name)
            .ok_or_else(|| ExecError::Unknown(format!("device_global @{name}")))?;
        let obj = &self.loaded.module.memories[h];
        let MemoryKind::DeviceGlobal(dg) = &obj.kind else {
            return Err(ExecError::Invalid(format!("@{name} is not a device_global")));
        };
        let size = obj.size_bytes();
        let key = (device, name.to_string());
        if let Some(b) = self.globals.get(&key) {
            return Ok((b.buffer, size));
        }
        let mut image = Vec::with_capacity(size as usize);
        for lit in &dg.init {
            let e = element_bytes(lit.value, obj.elem)
                .ok_or_else(|| ExecError::Ir(format!("@{name}: initialiser does not fit {}", obj.elem)))?;
            image.extend_from_slice(&e);
        }
        image.resize(size as usize, 0);
        let buf = Buffer::new(&self.ctx, size, Place::Device)?;
        let r = self.transfers.upload(&self.ctx, &buf, 0, &image);
        let handle = buf.buffer;
        self.globals.insert(key, buf);
        r.map(|()| (handle, size))
    }

    /// Places a memory reference for an executable (pool allocations need the executable).
    pub(crate) fn place_user(&self, mem: MemRef, offset: u64) -> Result<ArgPlace> {
        match mem {
            MemRef::Memory(h) => {
                let obj =
                    self.loaded.module.memories.try_get(h).ok_or_else(|| ExecError::Ir("bad memory handle".into()))?;
                let size = obj.size_bytes();
                if offset > size {
                    return Err(ExecError::Invalid(format!("offset {offset} past @{} ({size} bytes)", obj.name)));
                }
                // User memory has a buffer of its own, of the object's size (rounded up to 4),
                // or is a range of an application's buffer from its `base`.
                let base = self.memories.get(h.index()).and_then(|b| b.as_ref()).map_or(0, |b| b.base);
                let buffer_size = base + size.max(4).next_multiple_of(4);
                Ok(ArgPlace {
                    target: Target::User(h.index()),
                    offset: base + offset,
                    avail: size - offset,
                    elem: obj.elem.size(),
                    buffer_size,
                })
            }
            MemRef::Alloc(_) => Err(ExecError::Invalid("a graph allocation outside its executable".into())),
        }
    }

    /// Waits until every submitted run has finished.
    pub fn wait_idle(&self) -> Result<()> {
        self.worker.drain(self.ctx.timeout())?;
        self.ctx.wait_idle()
    }
}

/// Compile-time check that an executor can move between threads.
const _: fn() = || {
    fn is_send<T: Send>() {}
    is_send::<Executor>();
};

impl Drop for Executor {
    fn drop(&mut self) {
        if !self.worker.stop(self.ctx.timeout()) {
            // A host task still running past the deadline may touch this executor's memory.
            return;
        }
        if self.ctx.wait_idle().is_err() {
            // Runs still going past the deadline (ContextOptions::timeout): destroying what
            // they use would be undefined and waiting longer is what the deadline forbids, so
            // the device objects are leaked (the context leaks its device too).
            return;
        }
        for e in self.execs.iter_mut().flatten() {
            e.destroy(&self.ctx);
        }
        for b in self.memories.iter_mut().flatten() {
            b.destroy(&self.ctx);
        }
        for b in self.globals.values_mut() {
            b.destroy(&self.ctx);
        }
        for p in &mut self.pipelines {
            p.destroy(&self.ctx);
        }
        if let Some(k) = self.copy_kernels.as_mut() {
            k.destroy(&self.ctx);
        }
        if let Some(k) = self.predicate_kernel.as_mut() {
            k.destroy(&self.ctx);
        }
        self.transfers.destroy(&self.ctx);
        // SAFETY: no pipeline creation is in progress and the device is idle.
        unsafe { self.ctx.device.destroy_pipeline_cache(self.cache, None) };
    }
}

/// The memory a host-task callback may touch: exactly its node's `access(...)` list. The
/// callback sees it as a `&mut dyn HostMemory`; the first access violation is kept so that
/// the run fails even when the callback ignores the error (as on the interpreter).
pub struct HostContext<'a> {
    pub(crate) ctx: &'a Context,
    pub(crate) transfers: &'a Transfers,
    pub(crate) node: &'a str,
    /// (name, mode, buffer, byte offset, size) per declared access.
    pub(crate) access: Vec<Declared>,
    /// The first access violation.
    pub(crate) violation: Option<HostError>,
}

impl HostContext<'_> {
    fn note<T>(&mut self, result: std::result::Result<T, HostError>) -> std::result::Result<T, HostError> {
        if let Err(e) = &result {
            self.violation.get_or_insert_with(|| e.clone());
        }
        result
    }

    /// The declared access named `name` (with or without its sigil).
    fn lookup(&self, name: &str) -> Option<&Declared> {
        let bare = name.trim_start_matches(['@', '%']);
        self.access.iter().find(|a| a.0.get(1..) == Some(bare))
    }

    fn find(&mut self, name: &str, attempted: &'static str) -> std::result::Result<Declared, HostError> {
        let result = match self.lookup(name).cloned() {
            None => Err(HostError::NotDeclared { memory: name.to_string() }),
            Some(a) => match HostError::check_mode(&a.0, attempted, a.1) {
                Some(e) => Err(e),
                None => Ok(a),
            },
        };
        self.note(result)
    }

    fn in_range(&mut self, a: &Declared, offset: u64, len: u64) -> std::result::Result<(), HostError> {
        if offset.checked_add(len).is_none_or(|e| e > a.4) {
            let memory = a.0.clone();
            return self.note(Err(HostError::OutOfBounds { memory, start: offset, len, size: a.4 }));
        }
        Ok(())
    }
}

impl HostMemory for HostContext<'_> {
    fn node(&self) -> &str {
        self.node
    }

    fn declared(&self) -> Vec<String> {
        self.access.iter().map(|a| a.0.clone()).collect()
    }

    fn mode(&self, name: &str) -> Option<Access> {
        self.lookup(name).map(|a| a.1)
    }

    fn size(&mut self, name: &str) -> std::result::Result<u64, HostError> {
        let size = self.lookup(name).map(|a| a.4);
        let result = size.ok_or_else(|| HostError::NotDeclared { memory: name.to_string() });
        self.note(result)
    }

    fn read_bytes(&mut self, name: &str, offset: u64, len: u64) -> std::result::Result<Vec<u8>, HostError> {
        let a = self.find(name, "read")?;
        self.in_range(&a, offset, len)?;
        let bytes = self
            .transfers
            .download_for_host_task(self.ctx, a.2, a.3 + offset, len)
            .map_err(|e| HostError::Failed(e.to_string()));
        self.note(bytes)
    }

    fn write(&mut self, name: &str, offset: u64, bytes: &[u8]) -> std::result::Result<(), HostError> {
        let a = self.find(name, "write")?;
        self.in_range(&a, offset, bytes.len() as u64)?;
        let done = self
            .transfers
            .upload_for_host_task(self.ctx, a.2, a.3 + offset, bytes)
            .map_err(|e| HostError::Failed(e.to_string()));
        self.note(done)
    }
}

/// One declared access: (name with its sigil, `@x` or `%t`; mode, buffer, byte offset, size).
pub(crate) type Declared = (String, Access, BufRef, u64, u64);

/// Places a graph allocation: (name, byte offset in the pool, size).
pub(crate) type AllocPlace<'p> = &'p dyn Fn(MemRef) -> Option<(String, u64, u64)>;

/// Declared accesses resolved to buffers (used by executables to build a [`HostContext`]).
pub(crate) fn declared(
    module: &Module,
    memories: &[Option<Buffer>],
    pool: Option<(&Buffer, AllocPlace<'_>)>,
    access: &[MemAccess],
) -> std::result::Result<Vec<Declared>, String> {
    let mut out = Vec::new();
    for a in access {
        match a.mem {
            MemRef::Memory(h) => {
                let obj = module.memories.try_get(h).ok_or("bad memory handle")?;
                let buf = memories.get(h.index()).and_then(|b| b.as_ref()).ok_or("host access to a device_global")?;
                out.push((format!("@{}", obj.name), a.mode, buf.into(), buf.base, obj.size_bytes()));
            }
            MemRef::Alloc(_) => {
                let (buf, place) = pool.as_ref().ok_or("no pool")?;
                let (name, off, size) = place(a.mem).ok_or("allocation not in the pool plan")?;
                out.push((format!("%{name}"), a.mode, (*buf).into(), off, size));
            }
        }
    }
    Ok(out)
}

/// One warning per kernel (in bundle order; the largest count of its variants) whose modules
/// say they may take more loop back-edges per invocation than llvmpipe runs, or an unknown
/// number; kernels without the marker (external SPIR-V) are not judged.
fn llvmpipe_loop_warnings(kernels: &[cmdgraph_ir::bundle::CompiledKernel]) -> Vec<String> {
    use crate::spirv::{loop_back_edges, LLVMPIPE_LOOP_BUDGET};
    let mut worst: Vec<(&str, Option<u128>)> = Vec::new();
    for k in kernels {
        let Some(n) = loop_back_edges(&k.spirv) else { continue };
        match worst.iter_mut().find(|(name, _)| *name == k.kernel) {
            Some((_, m)) => *m = m.zip(n).map(|(a, b)| a.max(b)),
            None => worst.push((&k.kernel, n)),
        }
    }
    worst
        .into_iter()
        .filter(|&(_, n)| n.is_none_or(|n| n > LLVMPIPE_LOOP_BUDGET))
        .map(|(name, n)| {
            let how = n.map_or_else(|| "an unknown number".to_string(), |n| format!("up to {n} after unrolling"));
            format!(
                "kernel @{name} may take more than 65,535 loop iterations in one work-item ({how}); llvmpipe \
                 stops every loop of a work-item after 65,535 in all, without an error, so its results may be \
                 wrong there; run it on a GPU, or keep loops shorter (docs/executor.md)"
            )
        })
        .collect()
}
