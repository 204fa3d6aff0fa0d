//! `sycl::handler`: what a command-group function (CGF) describes.
//!
//! A CGF runs once, when it is added or submitted (000 §8.8). The handler only collects
//! what the CGF asks for: one command, event dependencies, accessor requirements and
//! argument registrations. Checks that depend on where the command group goes (explicit
//! `add`, a recording queue, a dynamic command group, an executing queue) run when the
//! graph or queue turns the collected description into a node or a run. The first error
//! a handler method meets is kept and returned by the `add`/`submit` that ran the CGF.

use crate::args::{nd_range_launch, range_launch, KArg, NdRange, Range};
use crate::buffer::{Accessor, Buffer};
use crate::dynamic::DynamicParameter;
use crate::error::{Errc, SyclError};
use crate::exec::ExecutableGraph;
use crate::global::DeviceGlobal;
use crate::graph::GraphInner;
use crate::kernel::KernelRef;
use crate::memory::{from_bytes, to_bytes, Element, Ptr, PtrBase};
use crate::props::MemoryPool;
use crate::queue::{Event, Queue};
use cmdgraph_ir::{Access, Handle, Launch, Literal, Node, Type, UsmKind};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::{Rc, Weak};

/// Where the command group goes; decides which checks apply.
#[derive(Clone)]
pub(crate) enum Mode {
    /// `command_graph::add(cgf)`.
    Explicit,
    /// A submission to a queue recording into the graph; `transitive` when this very
    /// submission switched the queue to recording (000 §8.5.2).
    Recording { queue: Queue, transitive: bool },
    /// One CGF of a `dynamic_command_group`.
    Dcg,
    /// A submission to an executing queue: it runs now.
    Eager { queue: Queue },
    /// An executing-queue submission turned into a one-node graph to run it.
    Internal,
}

/// A command that the graph extension bans or does not implement, kept so that the
/// add/submit reports it with its §22 row.
#[derive(Clone, Debug)]
pub(crate) struct Banned {
    pub(crate) row: u32,
    pub(crate) code: Errc,
    pub(crate) what: &'static str,
}

/// One end of a device copy: a buffer accessor (its element range) or a device pointer
/// (a USM allocation or a graph-owned allocation).
#[derive(Clone)]
pub(crate) enum CopyEnd {
    Acc(Accessor),
    Ptr(Ptr),
}

/// Where a copy to host memory puts the bytes it read: the host destination of
/// [`Handler::copy_to_host`], decoded into the caller's vector.
pub(crate) type HostSink = Rc<dyn Fn(&[u8])>;

/// The one command of a command group. `Copy` is a `copy` with a buffer accessor at one
/// end or both (an IR `memcpy` whose buffer operands are the accessors' element ranges);
/// `HostToAcc` writes host elements of `elem` into an accessor's range, `AccToHost`
/// decodes a range as `elem` into `sink` (both only on an executing queue).
#[derive(Clone)]
pub(crate) enum Command {
    Kernel { kernel: KernelRef, launch: Launch, args: Vec<KArg> },
    Memcpy { dst: Ptr, src: Ptr, bytes: u64 },
    Copy { dst: CopyEnd, src: CopyEnd },
    HostToAcc { dst: Accessor, elem: Type, count: u64, data: Vec<u8> },
    AccToHost { src: Accessor, elem: Type, sink: HostSink },
    Memset { dst: Ptr, value: u8, bytes: u64 },
    Fill { dst: Ptr, pattern: Literal, elem: Type, count: u64 },
    Prefetch { ptr: Ptr, bytes: u64 },
    Advise { ptr: Ptr, bytes: u64, advice: i32 },
    HostTask { callback: String, usm: Vec<(Ptr, Access)> },
    Native { callback: String, usm: Vec<(Ptr, Access)> },
    Barrier { wait: Vec<Event> },
    AsyncMalloc { elem: Type, count: u64, pool: MemoryPool },
    AsyncFree { ptr: Ptr },
    Subgraph { exec: ExecutableGraph, shortcut: bool },
    Conditional { kind: cmdgraph_ir::CondKind, cond: Ptr, bodies: Vec<ExecutableGraph> },
    Comm { op: cmdgraph_ir::comm::CommOp, ptr: Ptr, bytes: u64 },
    DeviceGlobalCopy { global: DeviceGlobal, offset: u64, data: Vec<u8> },
    Banned(Banned),
}

impl Command {
    /// The spec's name of the command, for messages.
    pub(crate) fn what(&self) -> &'static str {
        match self {
            Command::Kernel { .. } => "a kernel",
            Command::Memcpy { .. } => "a memcpy",
            Command::Copy { .. } => "a buffer copy",
            Command::HostToAcc { .. } => "a copy from host memory",
            Command::AccToHost { .. } => "a copy to host memory",
            Command::Memset { .. } => "a memset",
            Command::Fill { .. } => "a fill",
            Command::Prefetch { .. } => "a prefetch",
            Command::Advise { .. } => "a mem_advise",
            Command::Comm { .. } => "a communication command",
            Command::HostTask { .. } => "a host_task",
            Command::Native { .. } => "a native command",
            Command::Barrier { .. } => "a barrier",
            Command::AsyncMalloc { .. } => "an async_malloc",
            Command::AsyncFree { .. } => "an async_free",
            Command::Subgraph { .. } => "a sub-graph (ext_oneapi_graph)",
            Command::Conditional { .. } => "a conditional node (ext_cmdgraph_if/while/switch)",
            Command::DeviceGlobalCopy { .. } => "a device_global copy",
            Command::Banned(b) => b.what,
        }
    }
}

/// A command-group handler. CGFs receive `&mut Handler`.
pub struct Handler {
    pub(crate) mode: Mode,
    pub(crate) graph: Option<Rc<RefCell<GraphInner>>>,
    pub(crate) command: Option<Command>,
    pub(crate) deps: Vec<Event>,
    pub(crate) reqs: Vec<Accessor>,
    pub(crate) set_args: BTreeMap<u32, KArg>,
    /// Every `set_arg` with a dynamic parameter, in call order, including those a later
    /// `set_arg` for the same index overrode in `set_args`: each is a registration that
    /// the parameter's `update` must reach (decision A6).
    pub(crate) dyn_set_args: Vec<(u32, DynamicParameter)>,
    pub(crate) dyn_requires: Vec<DynamicParameter>,
    pub(crate) scratch: bool,
    pub(crate) error: Option<SyclError>,
}

impl Handler {
    pub(crate) fn new(mode: Mode, graph: Option<Rc<RefCell<GraphInner>>>) -> Handler {
        Handler {
            mode,
            graph,
            command: None,
            deps: Vec::new(),
            reqs: Vec::new(),
            set_args: BTreeMap::new(),
            dyn_set_args: Vec::new(),
            dyn_requires: Vec::new(),
            scratch: false,
            error: None,
        }
    }

    fn fail(&mut self, error: SyclError) {
        if self.error.is_none() {
            self.error = Some(error);
        }
    }

    fn set_command(&mut self, command: Command) {
        if let Some(old) = &self.command {
            let msg = format!(
                "a command group holds one command, but this one asks for {} after {}; submit them as two command groups",
                command.what(),
                old.what()
            );
            self.fail(SyclError::invalid(0, msg));
            return;
        }
        self.command = Some(command);
    }

    /// `handler::depends_on(event)`. On an executing queue, an event of a queue that is
    /// recording switches this submission's queue to recording (000 §8.5.2).
    pub fn depends_on(&mut self, event: &Event) {
        if let Mode::Eager { queue } = &self.mode {
            if let Some(shared) = event.recording_graph() {
                let queue = queue.clone();
                match queue.begin_transitive(&shared, event) {
                    Ok(()) => {
                        self.graph = Some(shared.inner.clone());
                        self.mode = Mode::Recording { queue, transitive: true };
                    }
                    Err(e) => self.fail(e),
                }
            }
        }
        self.deps.push(event.clone());
    }

    /// `handler::depends_on(events)`.
    pub fn depends_on_all(&mut self, events: &[&Event]) {
        for e in events {
            self.depends_on(e);
        }
    }

    /// `accessor{buf, cgh, mode}`: requires the whole buffer with `mode`.
    pub fn access(&mut self, buffer: &Buffer, mode: Access) -> Accessor {
        let acc = buffer.placeholder(mode);
        self.reqs.push(acc.clone());
        acc
    }

    /// `accessor{buf, cgh, range, offset, mode}`: requires elements `[lo, hi)`.
    pub fn access_range(&mut self, buffer: &Buffer, mode: Access, lo: u64, hi: u64) -> Accessor {
        if lo >= hi || hi > buffer.count() {
            let msg = format!(
                "accessor range {lo}..{hi} is outside buffer `@{}` of {} elements",
                buffer.name(),
                buffer.count()
            );
            self.fail(SyclError::invalid(0, msg));
        }
        let acc = buffer.placeholder_range(mode, lo, hi);
        self.reqs.push(acc.clone());
        acc
    }

    /// `handler::require(accessor)`: binds a placeholder accessor.
    pub fn require(&mut self, acc: &Accessor) {
        self.reqs.push(acc.clone());
    }

    /// `handler::require(dynamic_parameter<accessor>)`: requires the memory of the
    /// parameter's current accessor and registers the parameter (rows 40-43).
    pub fn require_dyn(&mut self, param: &DynamicParameter) {
        self.dyn_requires.push(param.clone());
    }

    /// `handler::set_arg(index, value)`; a [`KArg::Dyn`] registers the slot with the
    /// dynamic parameter. The slot shows the value given last, but a parameter stays
    /// registered with it when a later `set_arg` overrides it, as in DPC++: its `update`
    /// takes the slot back (decision A6).
    pub fn set_arg(&mut self, index: u32, arg: impl Into<KArg>) {
        let arg = arg.into();
        if let KArg::Dyn(p) = &arg {
            self.dyn_set_args.push((index, p.clone()));
        }
        self.set_args.insert(index, arg);
    }

    /// `handler::set_args(values...)`: arguments from index 0.
    pub fn set_args(&mut self, args: Vec<KArg>) {
        for (i, a) in args.into_iter().enumerate() {
            self.set_arg(i as u32, a);
        }
    }

    /// Whether the command group registers a dynamic parameter with a kernel argument
    /// (through `set_arg` or the launch's argument list).
    pub(crate) fn registers_dyn_arg(&self) -> bool {
        let in_launch = match &self.command {
            Some(Command::Kernel { args, .. }) => args.iter().any(|a| matches!(a, KArg::Dyn(_))),
            _ => false,
        };
        in_launch || !self.dyn_set_args.is_empty()
    }

    fn kernel(&mut self, kernel: &KernelRef, launch: crate::error::Result<Launch>, args: Vec<KArg>) {
        match launch {
            Ok(launch) => self.set_command(Command::Kernel { kernel: kernel.clone(), launch, args }),
            Err(e) => self.fail(e),
        }
    }

    /// `single_task(kernel)` with `args` (an empty list takes the `set_arg` values).
    pub fn single_task(&mut self, kernel: &KernelRef, args: Vec<KArg>) {
        self.kernel(kernel, Ok(Launch::SingleTask), args);
    }

    /// `parallel_for(range, kernel)` with `args` (an empty list takes the `set_arg` values).
    pub fn parallel_for(&mut self, kernel: &KernelRef, range: impl Into<Range>, args: Vec<KArg>) {
        let launch = range_launch(&range.into());
        self.kernel(kernel, launch, args);
    }

    /// `parallel_for(nd_range, kernel)` with `args`.
    pub fn parallel_for_nd(&mut self, kernel: &KernelRef, range: NdRange, args: Vec<KArg>) {
        let launch = nd_range_launch(&range);
        self.kernel(kernel, launch, args);
    }

    /// `memcpy(dst, src, bytes)`.
    pub fn memcpy(&mut self, dst: impl Into<Ptr>, src: impl Into<Ptr>, bytes: u64) {
        self.set_command(Command::Memcpy { dst: dst.into(), src: src.into(), bytes });
    }

    /// `handler::copy(accessor src, accessor dest)`: copies the elements of `src`'s range
    /// to the start of `dst`'s range. Both buffers must have one element type, `src` a
    /// mode that reads, `dst` one that writes, and `dst`'s range at least as many
    /// elements; the accessors need not be bound with [`Handler::access`] first (the copy
    /// requires them). In a graph, an IR `memcpy` whose operands are the buffers at the
    /// ranges' byte offsets, with accessor edges as for a kernel taking the accessors.
    pub fn copy(&mut self, src: &Accessor, dst: &Accessor) {
        self.set_command(Command::Copy { dst: CopyEnd::Acc(dst.clone()), src: CopyEnd::Acc(src.clone()) });
    }

    /// `handler::copy(accessor src, T* dest)` with a device pointer `dst` (USM or
    /// graph-owned): copies every element of `src`'s range to `dst`, which must point
    /// into memory of the buffer's element type with room for them.
    pub fn copy_to_ptr(&mut self, src: &Accessor, dst: impl Into<Ptr>) {
        self.set_command(Command::Copy { dst: CopyEnd::Ptr(dst.into()), src: CopyEnd::Acc(src.clone()) });
    }

    /// `handler::copy(const T* src, accessor dest)` with a device pointer `src` (USM or
    /// graph-owned): fills `dst`'s range with as many elements read from `src`.
    pub fn copy_from_ptr(&mut self, src: impl Into<Ptr>, dst: &Accessor) {
        self.set_command(Command::Copy { dst: CopyEnd::Acc(dst.clone()), src: CopyEnd::Ptr(src.into()) });
    }

    /// `handler::copy(const T* hostSrc, accessor dest)`: writes `src` (exactly as many
    /// elements as `dst`'s range, of the buffer's element type) into `dst`'s range. The
    /// data is taken when the command group runs. Only on an executing queue: the IR's
    /// `memcpy` has no host-memory operand, so a graph (explicit or recorded) refuses it
    /// with `feature_not_supported`; write the buffer before running the graph, or copy
    /// from a USM allocation with [`Handler::copy_from_ptr`].
    pub fn copy_from_host<T: Element>(&mut self, src: &[T], dst: &Accessor) {
        self.set_command(Command::HostToAcc {
            dst: dst.clone(),
            elem: T::TYPE,
            count: src.len() as u64,
            data: to_bytes(src),
        });
    }

    /// `handler::copy(accessor src, std::shared_ptr<T> hostDest)`: replaces the contents
    /// of `dst` with the elements of `src`'s range (of the buffer's element type `T`)
    /// when the command runs. Only on an executing queue, for the reason given at
    /// [`Handler::copy_from_host`]; in a graph, read the buffer after the run
    /// ([`Buffer::host_access`], [`Buffer::read_bytes`]) or copy to a USM allocation with
    /// [`Handler::copy_to_ptr`].
    pub fn copy_to_host<T: Element + 'static>(&mut self, src: &Accessor, dst: &Rc<RefCell<Vec<T>>>) {
        let dst = dst.clone();
        let sink: HostSink = Rc::new(move |bytes: &[u8]| *dst.borrow_mut() = from_bytes(bytes));
        self.set_command(Command::AccToHost { src: src.clone(), elem: T::TYPE, sink });
    }

    /// `memset(dst, value, bytes)`.
    pub fn memset(&mut self, dst: impl Into<Ptr>, value: u8, bytes: u64) {
        self.set_command(Command::Memset { dst: dst.into(), value, bytes });
    }

    /// `fill(dst, pattern, count)`: `count` copies of `pattern`.
    pub fn fill<T: Element + Into<KArg>>(&mut self, dst: impl Into<Ptr>, pattern: T, count: u64) {
        match pattern.into() {
            KArg::Scalar(lit) => {
                self.set_command(Command::Fill { dst: dst.into(), pattern: lit, elem: T::TYPE, count })
            }
            _ => self.fail(SyclError::invalid(0, "fill needs a scalar pattern")),
        }
    }

    /// `prefetch(ptr, bytes)`.
    pub fn prefetch(&mut self, ptr: impl Into<Ptr>, bytes: u64) {
        self.set_command(Command::Prefetch { ptr: ptr.into(), bytes });
    }

    /// `mem_advise(ptr, bytes, advice)`.
    pub fn mem_advise(&mut self, ptr: impl Into<Ptr>, bytes: u64, advice: i32) {
        self.set_command(Command::Advise { ptr: ptr.into(), bytes, advice });
    }

    /// `ext_send(ptr, bytes, to, tag)` (communication between ranks, docs/mpi.md): sends
    /// `bytes` bytes from `ptr` to rank `to` with `tag`, through the context's communicator
    /// ([`crate::Context::set_communicator`]). Buffered: it completes once the bytes are out.
    pub fn ext_send(&mut self, ptr: impl Into<Ptr>, bytes: u64, to: u32, tag: u32) {
        let op = cmdgraph_ir::comm::CommOp::Send { peer: to, tag };
        self.set_command(Command::Comm { op, ptr: ptr.into(), bytes });
    }

    /// `ext_recv(ptr, bytes, from, tag)`: receives `bytes` bytes into `ptr` from rank `from`
    /// with `tag` (messages between two ranks with one tag arrive in the order sent).
    pub fn ext_recv(&mut self, ptr: impl Into<Ptr>, bytes: u64, from: u32, tag: u32) {
        let op = cmdgraph_ir::comm::CommOp::Recv { peer: from, tag };
        self.set_command(Command::Comm { op, ptr: ptr.into(), bytes });
    }

    /// `ext_allreduce(op, ptr, bytes)`: replaces the bytes at `ptr` with `op` over every
    /// rank's, element-wise over the memory's element type, combined in rank order.
    pub fn ext_allreduce(&mut self, op: cmdgraph_ir::comm::ReduceOp, ptr: impl Into<Ptr>, bytes: u64) {
        let op = cmdgraph_ir::comm::CommOp::AllReduce(op);
        self.set_command(Command::Comm { op, ptr: ptr.into(), bytes });
    }

    /// `host_task(callable)`: the callback registered under `callback` with
    /// [`crate::Context::register_host_task`]. Buffers it touches come from the handler's
    /// accessors.
    pub fn host_task(&mut self, callback: &str) {
        self.set_command(Command::HostTask { callback: callback.to_string(), usm: Vec::new() });
    }

    /// `host_task` that also declares the USM memory it reads or writes (no edges are
    /// inferred from USM; the list informs scheduling and race checks).
    pub fn host_task_with_access(&mut self, callback: &str, usm: &[(Ptr, Access)]) {
        self.set_command(Command::HostTask { callback: callback.to_string(), usm: usm.to_vec() });
    }

    /// `ext_codeplay_enqueue_native_command(callable)` (004): the callback registered with
    /// [`crate::Context::register_native_command`].
    pub fn ext_codeplay_enqueue_native_command(&mut self, callback: &str, usm: &[(Ptr, Access)]) {
        self.set_command(Command::Native { callback: callback.to_string(), usm: usm.to_vec() });
    }

    /// `ext_oneapi_barrier()`: waits for everything submitted earlier to the same queue.
    pub fn ext_oneapi_barrier(&mut self) {
        self.set_command(Command::Barrier { wait: Vec::new() });
    }

    /// `ext_oneapi_barrier(waitList)`.
    pub fn ext_oneapi_barrier_with(&mut self, wait: &[&Event]) {
        self.set_command(Command::Barrier { wait: wait.iter().map(|e| (*e).clone()).collect() });
    }

    /// `async_malloc(cgh, kind, size)` for `count` elements of `elem`: a graph-owned
    /// allocation; the returned pointer is used like any USM pointer inside this graph.
    pub fn async_malloc(&mut self, kind: UsmKind, elem: Type, count: u64) -> Ptr {
        self.async_malloc_from_pool(elem, count, &MemoryPool { kind, zero_init: false })
    }

    /// `async_malloc_from_pool(cgh, size, pool)`: only the pool's kind and `zero_init` count.
    pub fn async_malloc_from_pool(&mut self, elem: Type, count: u64, pool: &MemoryPool) -> Ptr {
        let bytes = elem.size().saturating_mul(count);
        let (graph, index) = match &self.graph {
            Some(g) if !matches!(self.mode, Mode::Eager { .. }) => (Rc::downgrade(g), g.borrow().ir.nodes.len()),
            _ => (Weak::new(), 0),
        };
        self.set_command(Command::AsyncMalloc { elem, count, pool: *pool });
        match Handle::<Node>::from_usize(index) {
            Some(node) => Ptr { base: PtrBase::Alloc { graph, node, bytes }, offset: 0 },
            None => {
                self.fail(SyclError::invalid(0, "the graph has too many nodes for another allocation"));
                Ptr { base: PtrBase::Dangling, offset: 0 }
            }
        }
    }

    /// `async_free(cgh, ptr)`.
    pub fn async_free(&mut self, ptr: &Ptr) {
        self.set_command(Command::AsyncFree { ptr: ptr.clone() });
    }

    /// `ext_oneapi_graph(execGraph)`: runs an executable graph; recorded or added, a
    /// sub-graph node.
    pub fn ext_oneapi_graph(&mut self, exec: &ExecutableGraph) {
        self.set_command(Command::Subgraph { exec: exec.clone(), shortcut: false });
    }

    /// `ext_cmdgraph_if(cond, then, otherwise)` (cmdgraph's extension, docs/conditional.md):
    /// a conditional node that runs executable graph `then` when the `u32` at USM pointer
    /// `cond` is non-zero, else `otherwise` if given. Graphs only.
    pub fn ext_cmdgraph_if(&mut self, cond: &Ptr, then: &ExecutableGraph, otherwise: Option<&ExecutableGraph>) {
        let bodies = std::iter::once(then).chain(otherwise).cloned().collect();
        self.set_command(Command::Conditional { kind: cmdgraph_ir::CondKind::If, cond: cond.clone(), bodies });
    }

    /// `ext_cmdgraph_while(cond, body)`: runs `body` again and again while the `u32` at
    /// `cond` is non-zero, read before each round; a node of `body` must be able to write it.
    pub fn ext_cmdgraph_while(&mut self, cond: &Ptr, body: &ExecutableGraph) {
        let bodies = vec![body.clone()];
        self.set_command(Command::Conditional { kind: cmdgraph_ir::CondKind::While, cond: cond.clone(), bodies });
    }

    /// `ext_cmdgraph_switch(cond, cases)`: runs the case the `u32` at `cond` names, none
    /// past the last.
    pub fn ext_cmdgraph_switch(&mut self, cond: &Ptr, cases: &[&ExecutableGraph]) {
        let bodies = cases.iter().map(|&c| c.clone()).collect();
        self.set_command(Command::Conditional { kind: cmdgraph_ir::CondKind::Switch, cond: cond.clone(), bodies });
    }

    pub(crate) fn ext_oneapi_graph_shortcut(&mut self, exec: &ExecutableGraph) {
        self.set_command(Command::Subgraph { exec: exec.clone(), shortcut: true });
    }

    /// `memcpy(device_global, src, numBytes, offset)` (003): copies host data into a
    /// `device_global`. Not allowed in graphs (row 59).
    pub fn copy_to_device_global<T: Element>(&mut self, global: &DeviceGlobal, data: &[T], start_index: u64) {
        let offset = start_index.saturating_mul(global.elem().size());
        self.set_command(Command::DeviceGlobalCopy { global: global.clone(), offset, data: to_bytes(data) });
    }

    /// `ext_oneapi_memcpy2d(...)` (sycl_ext_oneapi_memcpy2d): not allowed in graphs (row 59)
    /// and not implemented outside them.
    pub fn ext_oneapi_memcpy2d(
        &mut self,
        _dst: &Ptr,
        _dst_pitch: u64,
        _src: &Ptr,
        _src_pitch: u64,
        _width: u64,
        _height: u64,
    ) {
        self.set_command(Command::Banned(Banned { row: 59, code: Errc::Invalid, what: "an ext_oneapi_memcpy2d" }));
    }

    /// `ext_oneapi_copy(image...)` (sycl_ext_oneapi_bindless_images): not allowed in
    /// graphs (row 59) and not implemented outside them.
    pub fn ext_oneapi_copy_image(&mut self) {
        self.set_command(Command::Banned(Banned { row: 59, code: Errc::Invalid, what: "a bindless image copy" }));
    }

    /// The `work_group_scratch_size` kernel property (sycl_ext_oneapi_work_group_scratch_memory):
    /// not allowed in graphs (row 59).
    pub fn set_work_group_scratch_size(&mut self, _bytes: u64) {
        self.scratch = true;
    }

    /// `sycl::reduction` in a kernel: not implemented in graphs (row 60, decision A7).
    pub fn reduction(&mut self) {
        self.set_command(Command::Banned(Banned { row: 60, code: Errc::FeatureNotSupported, what: "a reduction" }));
    }

    /// `sycl::stream` in a kernel: not implemented in graphs (row 60, decision A7).
    pub fn stream(&mut self) {
        self.set_command(Command::Banned(Banned { row: 60, code: Errc::FeatureNotSupported, what: "a sycl::stream" }));
    }
}

/// A command-group function kept as a value: what `dynamic_command_group` takes, and
/// what can be passed around before `add`/`submit`.
pub struct CommandGroup(pub(crate) Box<dyn FnOnce(&mut Handler)>);

impl CommandGroup {
    /// Wraps a CGF.
    pub fn new(f: impl FnOnce(&mut Handler) + 'static) -> CommandGroup {
        CommandGroup(Box::new(f))
    }

    /// Runs the CGF on `h`.
    pub fn apply(self, h: &mut Handler) {
        (self.0)(h)
    }
}
