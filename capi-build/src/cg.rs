//! `cmdgraph_sycl_cg`: a command group, what a SYCL command-group function describes (one
//! command, its event dependencies), built by calls instead of a lambda and then added to a
//! graph, submitted to a queue or made an alternative of a dynamic command group. Pointers
//! and kernels are resolved when the command is set, so errors come from the call that
//! caused them.

use crate::context::{cmdgraph_sycl_context, Shared};
use crate::dynamic::cmdgraph_sycl_dynparam;
use crate::error::{cmdgraph_sycl_status, Error, LastError, Result};
use crate::exec::cmdgraph_sycl_exec;
use crate::host::{cmdgraph_sycl_access, cmdgraph_sycl_host_fn};
use crate::queue::cmdgraph_sycl_event;
use crate::usm::{device_ptr, scalar_type, usm_kind, Target};
use crate::{arg, clear_out, destroy, handles, last_error_of, name, put, put_handle, slice, with, Handle};
use cmdgraph_sycl::{
    f16, Access, Event, ExecutableGraph, Handler, KArg, KernelRef, NdRange, Ptr, Range, ScalarType, Type, UsmKind,
};
use std::cell::RefCell;
use std::ffi::{c_char, c_void};
use std::rc::Rc;

/// Kinds of kernel arguments.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum cmdgraph_sycl_arg_kind {
    /// A scalar by value: `type_` and `bits`.
    CMDGRAPH_SYCL_ARG_SCALAR = 0,
    /// A USM address of the context (or a graph allocation's): `pointer`.
    CMDGRAPH_SYCL_ARG_POINTER = 1,
    /// A dynamic parameter of the graph the command group goes to: `param`.
    CMDGRAPH_SYCL_ARG_DYNAMIC = 2,
    /// Work-group memory (a local accessor) of `bits` elements of `type_`.
    CMDGRAPH_SYCL_ARG_LOCAL = 3,
}

/// One kernel argument (or a fill pattern, or a dynamic parameter's value). Make it with
/// `cmdgraph_sycl_arg_f32(2.0f)`, `cmdgraph_sycl_arg_pointer(x)` and friends.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cmdgraph_sycl_arg {
    /// A `cmdgraph_sycl_arg_kind`.
    pub kind: i32,
    /// SCALAR and LOCAL: a `cmdgraph_sycl_type`.
    pub type_: i32,
    /// SCALAR: the value's bits in the low bits of the type's width (an `f32` as its IEEE
    /// bits, a signed integer in two's complement, `f16` as binary16); LOCAL: the count.
    pub bits: u64,
    /// POINTER: the address.
    pub pointer: *const c_void,
    /// DYNAMIC: the parameter.
    pub param: *const cmdgraph_sycl_dynparam,
}

fn scalar(type_: i32, bits: u64) -> cmdgraph_sycl_arg {
    cmdgraph_sycl_arg { kind: 0, type_, bits, pointer: std::ptr::null(), param: std::ptr::null() }
}

/// A scalar argument of `type_` (a `cmdgraph_sycl_type`) with the value's `bits`.
#[no_mangle]
pub extern "C" fn cmdgraph_sycl_arg_scalar(type_: i32, bits: u64) -> cmdgraph_sycl_arg {
    scalar(type_, bits)
}
/// An `f32` argument.
#[no_mangle]
pub extern "C" fn cmdgraph_sycl_arg_f32(value: f32) -> cmdgraph_sycl_arg {
    scalar(10, value.to_bits() as u64)
}
/// An `f64` argument.
#[no_mangle]
pub extern "C" fn cmdgraph_sycl_arg_f64(value: f64) -> cmdgraph_sycl_arg {
    scalar(11, value.to_bits())
}
/// An `i32` argument.
#[no_mangle]
pub extern "C" fn cmdgraph_sycl_arg_i32(value: i32) -> cmdgraph_sycl_arg {
    scalar(5, value as u32 as u64)
}
/// A `u32` argument.
#[no_mangle]
pub extern "C" fn cmdgraph_sycl_arg_u32(value: u32) -> cmdgraph_sycl_arg {
    scalar(6, value as u64)
}
/// An `i64` argument.
#[no_mangle]
pub extern "C" fn cmdgraph_sycl_arg_i64(value: i64) -> cmdgraph_sycl_arg {
    scalar(7, value as u64)
}
/// A `u64` argument.
#[no_mangle]
pub extern "C" fn cmdgraph_sycl_arg_u64(value: u64) -> cmdgraph_sycl_arg {
    scalar(8, value)
}
/// A pointer argument: an address of the context's USM (or graph allocation), at any
/// offset into it.
#[no_mangle]
pub extern "C" fn cmdgraph_sycl_arg_pointer(pointer: *const c_void) -> cmdgraph_sycl_arg {
    cmdgraph_sycl_arg { kind: 1, type_: 0, bits: 0, pointer, param: std::ptr::null() }
}
/// A dynamic-parameter argument.
#[no_mangle]
pub extern "C" fn cmdgraph_sycl_arg_dynamic(param: *const cmdgraph_sycl_dynparam) -> cmdgraph_sycl_arg {
    cmdgraph_sycl_arg { kind: 2, type_: 0, bits: 0, pointer: std::ptr::null(), param }
}
/// Work-group memory of `count` elements of `type_` (a `cmdgraph_sycl_type`).
#[no_mangle]
pub extern "C" fn cmdgraph_sycl_arg_local(type_: i32, count: u64) -> cmdgraph_sycl_arg {
    cmdgraph_sycl_arg { kind: 3, type_, bits: count, pointer: std::ptr::null(), param: std::ptr::null() }
}

/// The scalar `KArg` of `bits` as `ty` (the low bits of its width).
pub(crate) fn scalar_karg(ty: ScalarType, bits: u64) -> KArg {
    match ty {
        ScalarType::Bool => KArg::from(bits & 1 != 0),
        ScalarType::I8 => KArg::from(bits as u8 as i8),
        ScalarType::U8 => KArg::from(bits as u8),
        ScalarType::I16 => KArg::from(bits as u16 as i16),
        ScalarType::U16 => KArg::from(bits as u16),
        ScalarType::I32 => KArg::from(bits as u32 as i32),
        ScalarType::U32 => KArg::from(bits as u32),
        ScalarType::I64 => KArg::from(bits as i64),
        ScalarType::U64 => KArg::from(bits),
        ScalarType::F16 => KArg::from(f16::from_bits(bits as u16)),
        ScalarType::F32 => KArg::from(f32::from_bits(bits as u32)),
        ScalarType::F64 => KArg::from(f64::from_bits(bits)),
    }
}

/// The `KArg` of a C argument; `what` names it in messages.
pub(crate) fn karg(shared: &Shared, a: &cmdgraph_sycl_arg, what: &str) -> Result<KArg> {
    Ok(match a.kind {
        0 => scalar_karg(scalar_type(a.type_)?, a.bits),
        1 => KArg::Ptr(device_ptr(shared, a.pointer, what)?),
        // SAFETY: the header's contract: `param` is NULL or a live dynamic parameter.
        2 => KArg::Dyn(unsafe { arg(a.param, "dynamic parameter") }?.param.clone()),
        3 => KArg::local(Type::scalar(scalar_type(a.type_)?), a.bits),
        k => return Err(Error::invalid(format!("{what}: {k} is not a cmdgraph_sycl_arg_kind (0 to 3)"))),
    })
}

/// The one command of a command group.
#[derive(Clone)]
pub(crate) enum Command {
    Kernel {
        kernel: KernelRef,
        nd: Option<NdRange>,
        range: Range,
        args: Vec<KArg>,
    },
    Memcpy {
        dst: Ptr,
        src: Ptr,
        bytes: u64,
    },
    Memset {
        dst: Ptr,
        value: u8,
        bytes: u64,
    },
    Fill {
        dst: Ptr,
        pattern: KArg,
        count: u64,
    },
    HostTask {
        callback: String,
        usm: Vec<(Ptr, Access)>,
    },
    Barrier {
        wait: Vec<Event>,
    },
    Subgraph(ExecutableGraph),
    Conditional {
        kind: cmdgraph_ir::CondKind,
        cond: Ptr,
        bodies: Vec<ExecutableGraph>,
    },
    AsyncMalloc {
        kind: UsmKind,
        elem: Type,
        count: u64,
        slot: Rc<RefCell<Option<Ptr>>>,
    },
    AsyncFree(Ptr),
    /// `ext_send` / `ext_recv` / `ext_allreduce` (comm.rs).
    Comm {
        op: cmdgraph_ir::comm::CommOp,
        ptr: Ptr,
        bytes: u64,
    },
}

/// A command group: at most one command and any number of event dependencies. It may be
/// added or submitted any number of times; each time is one command group function call.
/// Opaque.
#[allow(non_camel_case_types)]
pub struct cmdgraph_sycl_cg {
    pub(crate) shared: Rc<Shared>,
    deps: Vec<Event>,
    command: Option<Command>,
    error: LastError,
}

impl Handle for cmdgraph_sycl_cg {
    const WHAT: &'static str = "command group";
    fn last_error(&mut self) -> &mut LastError {
        &mut self.error
    }
}

impl cmdgraph_sycl_cg {
    pub(crate) fn set(&mut self, command: Command) -> Result<()> {
        if self.command.is_some() {
            return Err(Error::new(
                cmdgraph_sycl_status::CMDGRAPH_SYCL_ERROR_INVALID,
                "invalid: a command group holds one command; make another command group for the next one",
            ));
        }
        self.command = Some(command);
        Ok(())
    }

    /// The command group function: what the handler is told.
    pub(crate) fn function(&self) -> impl FnOnce(&mut Handler) + 'static {
        let deps = self.deps.clone();
        let command = self.command_function();
        move |h: &mut Handler| {
            for e in &deps {
                h.depends_on(e);
            }
            command(h)
        }
    }

    /// The event dependencies.
    pub(crate) fn deps(&self) -> &[Event] {
        &self.deps
    }

    /// Whether the command runs on a device when submitted to an executing queue (a kernel,
    /// copy, memset, fill or host task), so that it needs a bundle on the Vulkan backend.
    pub(crate) fn runs_on_device(&self) -> bool {
        matches!(
            self.command,
            Some(
                Command::Kernel { .. }
                    | Command::Memcpy { .. }
                    | Command::Memset { .. }
                    | Command::Fill { .. }
                    | Command::HostTask { .. }
                    | Command::Comm { .. }
            )
        )
    }

    /// The command alone, without the dependencies.
    pub(crate) fn command_function(&self) -> impl FnOnce(&mut Handler) + 'static {
        let command = self.command.clone();
        move |h: &mut Handler| match command {
            None => {}
            Some(Command::Kernel { kernel, nd: Some(nd), args, .. }) => h.parallel_for_nd(&kernel, nd, args),
            Some(Command::Kernel { kernel, nd: None, range, args }) => h.parallel_for(&kernel, range, args),
            Some(Command::Memcpy { dst, src, bytes }) => h.memcpy(dst, src, bytes),
            Some(Command::Memset { dst, value, bytes }) => h.memset(dst, value, bytes),
            Some(Command::Fill { dst, pattern, count }) => fill(h, dst, pattern, count),
            Some(Command::HostTask { callback, usm }) => h.host_task_with_access(&callback, &usm),
            Some(Command::Barrier { wait }) => h.ext_oneapi_barrier_with(&wait.iter().collect::<Vec<_>>()),
            Some(Command::Subgraph(exec)) => h.ext_oneapi_graph(&exec),
            Some(Command::Conditional { kind, cond, bodies }) => match kind {
                cmdgraph_ir::CondKind::If => h.ext_cmdgraph_if(&cond, &bodies[0], bodies.get(1)),
                cmdgraph_ir::CondKind::While => h.ext_cmdgraph_while(&cond, &bodies[0]),
                cmdgraph_ir::CondKind::Switch => h.ext_cmdgraph_switch(&cond, &bodies.iter().collect::<Vec<_>>()),
            },
            Some(Command::AsyncMalloc { kind, elem, count, slot }) => {
                let p = h.async_malloc(kind, elem, count);
                *slot.borrow_mut() = Some(p);
            }
            Some(Command::AsyncFree(p)) => h.async_free(&p),
            Some(Command::Comm { op, ptr, bytes }) => match op {
                cmdgraph_ir::comm::CommOp::Send { peer, tag } => h.ext_send(ptr, bytes, peer, tag),
                cmdgraph_ir::comm::CommOp::Recv { peer, tag } => h.ext_recv(ptr, bytes, peer, tag),
                cmdgraph_ir::comm::CommOp::AllReduce(r) => h.ext_allreduce(r, ptr, bytes),
            },
        }
    }
}

/// `handler::fill` with the pattern's own type.
fn fill(h: &mut Handler, dst: Ptr, pattern: KArg, count: u64) {
    use cmdgraph_sycl::LitValue;
    let KArg::Scalar(lit) = pattern else { return };
    let (Some(ty), value) = (lit.ty, lit.value) else { return };
    match (ty, value) {
        (ScalarType::Bool, LitValue::Bool(v)) => h.fill(dst, v, count),
        (ScalarType::F16, LitValue::Float(v)) => h.fill(dst, f16::from_f64(v), count),
        (ScalarType::F32, LitValue::Float(v)) => h.fill(dst, v as f32, count),
        (ScalarType::F64, LitValue::Float(v)) => h.fill(dst, v, count),
        (ScalarType::I8, LitValue::Int(v)) => h.fill(dst, v as i8, count),
        (ScalarType::U8, LitValue::Int(v)) => h.fill(dst, v as u8, count),
        (ScalarType::I16, LitValue::Int(v)) => h.fill(dst, v as i16, count),
        (ScalarType::U16, LitValue::Int(v)) => h.fill(dst, v as u16, count),
        (ScalarType::I32, LitValue::Int(v)) => h.fill(dst, v as i32, count),
        (ScalarType::U32, LitValue::Int(v)) => h.fill(dst, v as u32, count),
        (ScalarType::I64, LitValue::Int(v)) => h.fill(dst, v as i64, count),
        (ScalarType::U64, LitValue::Int(v)) => h.fill(dst, v as u64, count),
        _ => {}
    }
}

/// Creates an empty command group of context `ctx` in `*out` (NULL on error).
///
/// # Safety
/// `ctx` is NULL or a live context; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_cg_create(
    ctx: *mut cmdgraph_sycl_context,
    out: *mut *mut cmdgraph_sycl_cg,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(ctx, |c| {
            clear_out(out, "command group")?;
            let cg = cmdgraph_sycl_cg {
                shared: c.shared.clone(),
                deps: Vec::new(),
                command: None,
                error: LastError::default(),
            };
            put_handle(out, cg, "command group")
        })
    }
}

/// `handler::depends_on(event)`: the command waits for `event` (an event of a recording
/// queue makes an edge in its graph).
///
/// # Safety
/// `cg` is NULL or a live command group; `event` NULL or a live event.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_cg_depends_on(
    cg: *mut cmdgraph_sycl_cg,
    event: *const cmdgraph_sycl_event,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(cg, |cg| {
            if let Some(e) = &arg(event, "event")?.event {
                cg.deps.push(e.clone());
            }
            Ok(())
        })
    }
}

/// The kernel launch of `parallel_for` and friends.
///
/// # Safety
/// The pointers follow `cmdgraph_sycl_cg_parallel_for`'s contract.
unsafe fn kernel_command(
    cg: &mut cmdgraph_sycl_cg,
    kernel: *const c_char,
    dims: usize,
    global: *const u64,
    local: Option<*const u64>,
    args: *const cmdgraph_sycl_arg,
    nargs: usize,
) -> Result<()> {
    // SAFETY: the caller's contract.
    let kname = unsafe { name(kernel, "kernel name") }?;
    let kname = kname.strip_prefix('@').unwrap_or(kname);
    let kernel = cg.shared.ctx.kernel(kname).ok_or_else(|| {
        Error::new(
            cmdgraph_sycl_status::CMDGRAPH_SYCL_ERROR_NOT_FOUND,
            format!("no kernel `@{kname}` is registered with the context"),
        )
    })?;
    // SAFETY: the caller's contract.
    let global = unsafe { slice(global, dims, "global range") }?.to_vec();
    // SAFETY: the caller's contract.
    let local = local.map(|l| unsafe { slice(l, dims, "local range") }.map(<[u64]>::to_vec)).transpose()?;
    // SAFETY: the caller's contract.
    let args = unsafe { slice(args, nargs, "argument") }?;
    let args = args
        .iter()
        .enumerate()
        .map(|(i, a)| karg(&cg.shared, a, &format!("argument {i} of `@{kname}`")))
        .collect::<Result<Vec<_>>>()?;
    let nd = local.map(|l| NdRange::new(Range(global.clone()), Range(l)));
    cg.set(Command::Kernel { kernel, nd, range: Range(global), args })
}

/// `handler::parallel_for(range<dims>{global...}, kernel)`: launches registered kernel
/// `kernel` (`"name"` or `"@name"`) over `dims` (1 to 3) global sizes with `nargs` arguments.
///
/// # Safety
/// `cg` is NULL or a live command group; `kernel` NULL or a string; `global` NULL or `dims`
/// readable sizes; `args` NULL or `nargs` readable arguments.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_cg_parallel_for(
    cg: *mut cmdgraph_sycl_cg,
    kernel: *const c_char,
    dims: usize,
    global: *const u64,
    args: *const cmdgraph_sycl_arg,
    nargs: usize,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe { with(cg, |cg| kernel_command(cg, kernel, dims, global, None, args, nargs)) }
}

/// `handler::parallel_for(nd_range{global, local}, kernel)`: as `cmdgraph_sycl_cg_parallel_for`
/// with work-groups of `local` sizes (each dividing its global size).
///
/// # Safety
/// As `cmdgraph_sycl_cg_parallel_for`; `local` NULL or `dims` readable sizes.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_cg_parallel_for_nd(
    cg: *mut cmdgraph_sycl_cg,
    kernel: *const c_char,
    dims: usize,
    global: *const u64,
    local: *const u64,
    args: *const cmdgraph_sycl_arg,
    nargs: usize,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe { with(cg, |cg| kernel_command(cg, kernel, dims, global, Some(local), args, nargs)) }
}

/// `handler::memcpy(dst, src, bytes)` between two device addresses (USM or graph
/// allocations); host memory is copied with `cmdgraph_sycl_memcpy` / `cmdgraph_sycl_queue_memcpy`.
///
/// # Safety
/// `cg` is NULL or a live command group.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_cg_memcpy(
    cg: *mut cmdgraph_sycl_cg,
    dst: *mut c_void,
    src: *const c_void,
    bytes: u64,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(cg, |cg| {
            let (dst, src) =
                (device_ptr(&cg.shared, dst, "memcpy destination")?, device_ptr(&cg.shared, src, "memcpy source")?);
            cg.set(Command::Memcpy { dst, src, bytes })
        })
    }
}

/// `handler::memset(dst, value, bytes)`.
///
/// # Safety
/// `cg` is NULL or a live command group.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_cg_memset(
    cg: *mut cmdgraph_sycl_cg,
    dst: *mut c_void,
    value: u8,
    bytes: u64,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(cg, |cg| {
            let dst = device_ptr(&cg.shared, dst, "memset destination")?;
            cg.set(Command::Memset { dst, value, bytes })
        })
    }
}

/// `handler::fill(dst, pattern, count)`: `count` elements of the scalar `pattern`.
///
/// # Safety
/// `cg` is NULL or a live command group; `pattern` NULL or readable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_cg_fill(
    cg: *mut cmdgraph_sycl_cg,
    dst: *mut c_void,
    pattern: *const cmdgraph_sycl_arg,
    count: u64,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(cg, |cg| {
            let dst = device_ptr(&cg.shared, dst, "fill destination")?;
            let pattern = pattern.as_ref().ok_or_else(|| Error::invalid("the fill pattern is NULL"))?;
            if pattern.kind != 0 {
                return Err(Error::invalid("fill: the pattern must be a scalar (CMDGRAPH_SYCL_ARG_SCALAR)"));
            }
            let pattern = karg(&cg.shared, pattern, "fill pattern")?;
            cg.set(Command::Fill { dst, pattern, count })
        })
    }
}

/// `handler::host_task(f)`: `f(memory, user)` runs when the node runs, on the runtime's
/// host-task thread, reaching the `count` USM ranges of `access` in their modes.
///
/// # Safety
/// `cg` is NULL or a live command group; `access` NULL or `count` readable entries; `user`
/// is kept and must stay valid, and usable from another thread, while graphs using the
/// command group live.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_cg_host_task(
    cg: *mut cmdgraph_sycl_cg,
    f: cmdgraph_sycl_host_fn,
    user: *mut c_void,
    access: *const cmdgraph_sycl_access,
    count: usize,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(cg, |cg| {
            let f = f.ok_or_else(|| Error::invalid("the host-task function is NULL"))?;
            let access = slice(access, count, "access")?;
            let (callback, usm) = crate::host::register(&cg.shared, f, user, access)?;
            cg.set(Command::HostTask { callback, usm })
        })
    }
}

/// `handler::ext_oneapi_barrier(events)`: waits for the `count` events, or (none) for
/// everything submitted to the queue before.
///
/// # Safety
/// `cg` is NULL or a live command group; `events` NULL or `count` live events.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_cg_barrier(
    cg: *mut cmdgraph_sycl_cg,
    events: *const *const cmdgraph_sycl_event,
    count: usize,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(cg, |cg| {
            let wait = handles(events, count, "event")?.into_iter().filter_map(|e| e.event.clone()).collect();
            cg.set(Command::Barrier { wait })
        })
    }
}

/// `handler::ext_oneapi_graph(exec)`: runs an executable graph (a sub-graph node when added
/// or recorded).
///
/// # Safety
/// `cg` is NULL or a live command group; `exec` NULL or a live executable graph.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_cg_graph(
    cg: *mut cmdgraph_sycl_cg,
    exec: *const cmdgraph_sycl_exec,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(cg, |cg| {
            let exec = arg(exec, "executable graph")?.exec.clone();
            cg.set(Command::Subgraph(exec))
        })
    }
}

/// cmdgraph's conditional-node extension (docs/conditional.md): `kind` 0 `if` (bodies:
/// then, and else when `count` is 2), 1 `while` (one body), 2 `switch` (the cases); `cond`
/// a USM pointer to the `u32` that decides; the bodies executable graphs. Runs on the
/// interpreter runtime; compiling for Vulkan refuses it (E0506) for now.
///
/// # Safety
/// `cg` is NULL or a live command group; `bodies` NULL or `count` live executable graphs.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_cg_conditional(
    cg: *mut cmdgraph_sycl_cg,
    kind: u32,
    cond: *mut c_void,
    bodies: *const *const cmdgraph_sycl_exec,
    count: usize,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(cg, |cg| {
            let kind = match kind {
                0 => cmdgraph_ir::CondKind::If,
                1 => cmdgraph_ir::CondKind::While,
                2 => cmdgraph_ir::CondKind::Switch,
                _ => return Err(Error::invalid(format!("conditional kind {kind}: 0 if, 1 while, 2 switch"))),
            };
            let (lo, hi) = kind.body_counts();
            if count < lo || count > hi {
                return Err(Error::invalid(format!("`{}` takes {lo} to {hi} bodies, not {count}", kind.keyword())));
            }
            let cond = device_ptr(&cg.shared, cond, "condition")?;
            let bodies = handles(bodies, count, "executable graph")?.into_iter().map(|e| e.exec.clone()).collect();
            cg.set(Command::Conditional { kind, cond, bodies })
        })
    }
}

/// `async_malloc(cgh, kind, bytes)` for `count` elements of `type_`: a graph-owned
/// allocation. Its address is stored in `*out` now and usable by later command groups of the
/// same graph once this one has been added (or recorded).
///
/// # Safety
/// `cg` is NULL or a live command group; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_cg_async_malloc(
    cg: *mut cmdgraph_sycl_cg,
    kind: i32,
    type_: i32,
    count: u64,
    out: *mut *mut c_void,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(cg, |cg| {
            clear_out(out, "pointer")?;
            let (kind, elem) = (usm_kind(kind)?, Type::scalar(scalar_type(type_)?));
            let bytes =
                elem.size().checked_mul(count).ok_or_else(|| Error::invalid("the allocation's byte size overflows"))?;
            let slot = Rc::new(RefCell::new(None));
            cg.set(Command::AsyncMalloc { kind, elem, count, slot: slot.clone() })?;
            let ptr = cg.shared.registry.borrow_mut().insert(bytes, Target::Alloc(slot))?;
            put(out, ptr, "pointer")
        })
    }
}

/// `async_free(cgh, ptr)`: frees a graph-owned allocation.
///
/// # Safety
/// `cg` is NULL or a live command group.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_cg_async_free(
    cg: *mut cmdgraph_sycl_cg,
    ptr: *mut c_void,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(cg, |cg| {
            let p = device_ptr(&cg.shared, ptr, "async_free")?;
            cg.set(Command::AsyncFree(p))
        })
    }
}

/// The message of the last call on `cg`; the thread's for NULL.
///
/// # Safety
/// `cg` is NULL or a live command group.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_cg_last_error(cg: *mut cmdgraph_sycl_cg) -> *const c_char {
    // SAFETY: the caller's contract.
    unsafe { last_error_of(cg) }
}

/// Frees a command group; NULL does nothing. Nodes made from it stay.
///
/// # Safety
/// `cg` is NULL or a live command group, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_cg_destroy(cg: *mut cmdgraph_sycl_cg) {
    // SAFETY: the caller's contract.
    unsafe { destroy(cg) }
}
