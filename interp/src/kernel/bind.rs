//! Binding a launch's arguments to the kernel's parameters.
//!
//! Scalars become per-work-item constants; pointers and accessors become [`GlobalView`]s
//! (a byte window of one memory with an element type and an access mode); `local T[N]`
//! arguments and `local` ops become per-group [`LocalMem`]. Accessor ranges index relative
//! to their start (SYCL 2020 ranged accessors): element `i` of `acc(@b[lo..hi])` is element
//! `lo + i` of `@b`, and only `[lo, hi)` is reachable.

use super::super::memory::{Loc, MemCtx, Space};
use super::super::value::{literal_bits, read_elem, POISON};
use super::launch::Geometry;
use cmdgraph_ir::arena::{Arena, Handle};
use cmdgraph_ir::graph::{ArgValue, MemRef};
use cmdgraph_ir::kernel::{Body, Builtin, Function, Kernel, MemBase, Op, OpKind, ParamType, ValueDef, V};
use cmdgraph_ir::module::{MemoryKind, MemoryObject};
use cmdgraph_ir::types::{Access, Type};
use std::collections::BTreeMap;

/// Most work-group memory one group may use.
const MAX_LOCAL_BYTES: u64 = 64 << 20;

/// A window of global memory as one kernel argument sees it.
#[derive(Clone, Debug)]
pub(crate) struct GlobalView {
    /// The memory.
    pub space: Space,
    /// Its display name.
    pub name: String,
    /// First byte of the window.
    pub start: u64,
    /// One past the last byte of the window.
    pub end: u64,
    /// Element type (from the kernel parameter).
    pub elem: Type,
    /// What the kernel may do.
    pub access: Access,
    /// Where the race detector files accesses, and the offset to add.
    pub loc: (Loc, u64),
}

/// Work-group memory of one group.
#[derive(Clone, Debug)]
pub(crate) struct LocalMem {
    /// Display name (the parameter or `local` op result).
    pub name: String,
    /// Element type.
    pub elem: Type,
    /// Contents for the current group.
    pub bytes: Vec<u8>,
    /// What each group starts with: `local` ops are value-initialised (0), `local<T>`
    /// parameters (like `work_group_memory`) are not, so they start poisoned.
    pub fill: u8,
}

/// Memory a value refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MemSlot {
    /// `views[i]`.
    Global(usize),
    /// `locals[i]`.
    Local(usize),
}

/// What a parameter value holds.
#[derive(Clone, Debug)]
pub(crate) enum ParamBind {
    /// A value: one entry per vector lane, the same for every work-item.
    Data(Type, Vec<u64>),
    /// Memory.
    Mem(MemSlot),
}

/// A launch ready to run.
#[derive(Clone, Debug)]
pub(crate) struct Prepared {
    /// Geometry.
    pub geo: Geometry,
    /// Parameter values.
    pub params: Vec<(V, ParamBind)>,
    /// Global memory windows.
    pub views: Vec<GlobalView>,
    /// Work-group memory.
    pub locals: Vec<LocalMem>,
    /// Views of device globals named in the body.
    pub dg_views: BTreeMap<Handle<MemoryObject>, usize>,
    /// The local memory each `local` op creates.
    pub op_locals: BTreeMap<Handle<Op>, usize>,
}

/// Binds `args` to `kernel`'s parameters for a launch of `geo`. Errors are messages about
/// the node.
pub(crate) fn prepare(
    kernel: &Kernel,
    body: &Body,
    functions: &Arena<Function>,
    geo: Geometry,
    args: &[ArgValue],
    mem: &MemCtx<'_>,
    root: bool,
) -> Result<Prepared, String> {
    if !geo.nd {
        check_range_kernel(kernel, body)?;
    }
    if args.len() != kernel.params.len() {
        return Err(format!(
            "kernel @{} takes {} arguments, the node passes {}",
            kernel.name,
            kernel.params.len(),
            args.len()
        ));
    }
    let mut param_values = vec![None; kernel.params.len()];
    for (v, value) in body.values.iter() {
        if let ValueDef::Param(i) = value.def {
            if let Some(slot) = param_values.get_mut(i as usize) {
                *slot = Some(v);
            }
        }
    }
    let mut prep = Prepared {
        geo,
        params: Vec::new(),
        views: Vec::new(),
        locals: Vec::new(),
        dg_views: BTreeMap::new(),
        op_locals: BTreeMap::new(),
    };
    let mut local_bytes = 0u64;
    for (i, (param, arg)) in kernel.params.iter().zip(args).enumerate() {
        let Some(v) = param_values[i] else {
            return Err(format!("parameter %{} has no value in the kernel body", param.name));
        };
        let what = |detail: &str| format!("argument {i} (parameter %{}): {detail}", param.name);
        let bind = match (param.ty, arg) {
            (ParamType::Value(ty), ArgValue::Scalar(lit)) => {
                if lit.ty.is_some_and(|t| t != ty.scalar) {
                    return Err(what(&format!(
                        "a literal typed {} for a {ty} parameter",
                        lit.ty.map_or("?", |t| t.keyword())
                    )));
                }
                let bits = literal_bits(lit.value, ty.scalar)
                    .ok_or_else(|| what(&format!("the literal does not fit {ty}")))?;
                ParamBind::Data(ty, vec![bits; ty.lanes as usize])
            }
            (ParamType::Value(ty), ArgValue::Bytes(raw)) => {
                let data = super::super::value::elem_data_bytes(ty);
                if raw.len() as u64 != ty.size() && raw.len() as u64 != data {
                    return Err(what(&format!("{} raw bytes for a {ty} parameter of {} bytes", raw.len(), ty.size())));
                }
                let mut lanes = vec![0; ty.lanes as usize];
                read_elem(raw, ty, &mut lanes);
                ParamBind::Data(ty, lanes)
            }
            (ParamType::Buffer { elem, access }, ArgValue::Pointer(p)) => {
                let space = space_of(p.base, mem, root).map_err(|e| what(&e))?;
                let size = mem.size(space);
                let view = GlobalView {
                    space,
                    name: mem.name(space),
                    start: p.offset.min(size),
                    end: size,
                    elem,
                    access,
                    loc: mem.loc(space),
                };
                prep.views.push(view);
                ParamBind::Mem(MemSlot::Global(prep.views.len() - 1))
            }
            (ParamType::Buffer { elem, access }, ArgValue::Accessor(acc)) => {
                let MemRef::Memory(h) = acc.buffer else {
                    return Err(what("an accessor must name a module buffer, not a graph allocation"));
                };
                let space = mem.user_space(h).map_err(|e| what(&e.to_string()))?;
                if !acc.mode.satisfies(access) {
                    return Err(what(&format!("a `{}` accessor for a `{access}` parameter", acc.mode)));
                }
                let obj = &mem.module.memories[h];
                let (lo, hi) = acc.range.unwrap_or((0, obj.count));
                if lo > hi || hi > obj.count {
                    return Err(what(&format!(
                        "accessor range {lo}..{hi} is outside @{} ({} elements)",
                        obj.name, obj.count
                    )));
                }
                let es = obj.elem.size();
                let view = GlobalView {
                    space,
                    name: mem.name(space),
                    start: lo * es,
                    end: hi * es,
                    elem,
                    access,
                    loc: mem.loc(space),
                };
                prep.views.push(view);
                ParamBind::Mem(MemSlot::Global(prep.views.len() - 1))
            }
            (ParamType::Local { elem }, ArgValue::Local { elem: arg_elem, count }) => {
                let bytes = arg_elem.size().checked_mul(*count).ok_or_else(|| what("local memory size overflows"))?;
                let i = add_local(&mut prep, &mut local_bytes, format!("%{}", param.name), elem, bytes, POISON)?;
                ParamBind::Mem(MemSlot::Local(i))
            }
            (ty, arg) => return Err(what(&format!("{} argument for a {} parameter", arg_kind(arg), param_kind(ty)))),
        };
        prep.params.push((v, bind));
    }
    // The functions' bodies too: a function may name a device global its callers do not.
    let called = functions.iter().filter_map(|(_, f)| f.body()).flat_map(|b| b.ops.iter());
    for (h, op) in body.ops.iter().map(|(h, op)| (Some(h), op)).chain(called.map(|(_, op)| (None, op))) {
        match &op.kind {
            OpKind::LocalAlloc { elem, count } => {
                // Only kernels allocate work-group memory (E0343).
                let Some(h) = h else { continue };
                let bytes = elem.size().checked_mul(*count).ok_or("local memory size overflows")?;
                let name = op
                    .results
                    .first()
                    .and_then(|r| body.values.try_get(*r))
                    .map_or("local".to_string(), |v| format!("%{}", v.name));
                let i = add_local(&mut prep, &mut local_bytes, name, *elem, bytes, 0)?;
                prep.op_locals.insert(h, i);
            }
            OpKind::Load { mem: MemBase::Global(g), .. }
            | OpKind::Store { mem: MemBase::Global(g), .. }
            | OpKind::Atomic { mem: MemBase::Global(g), .. }
            | OpKind::Len(MemBase::Global(g)) => {
                if prep.dg_views.contains_key(g) {
                    continue;
                }
                let obj = mem.module.memories.try_get(*g).ok_or("memory handle out of range")?;
                if !matches!(obj.kind, MemoryKind::DeviceGlobal(_)) {
                    return Err(format!("the body names @{}, which is not a device_global", obj.name));
                }
                let space = Space::DeviceGlobal(*g);
                let view = GlobalView {
                    space,
                    name: format!("@{}", obj.name),
                    start: 0,
                    end: mem.size(space),
                    elem: obj.elem,
                    access: Access::ReadWrite,
                    loc: mem.loc(space),
                };
                prep.views.push(view);
                prep.dg_views.insert(*g, prep.views.len() - 1);
            }
            _ => {}
        }
    }
    Ok(prep)
}

/// Adds work-group memory of `bytes` bytes (storage allocated once; contents are reset for
/// every group) and returns its index.
fn add_local(
    prep: &mut Prepared,
    total: &mut u64,
    name: String,
    elem: Type,
    bytes: u64,
    fill: u8,
) -> Result<usize, String> {
    *total = total.saturating_add(bytes);
    if *total > MAX_LOCAL_BYTES {
        return Err(format!("{total} bytes of work-group memory exceed the interpreter's limit of {MAX_LOCAL_BYTES}"));
    }
    prep.locals.push(LocalMem { name, elem, bytes: vec![fill; bytes as usize], fill });
    Ok(prep.locals.len() - 1)
}

/// The space a kernel pointer names.
fn space_of(base: MemRef, mem: &MemCtx<'_>, root: bool) -> Result<Space, String> {
    match base {
        MemRef::Memory(h) => mem.user_space(h).map_err(|e| e.to_string()),
        MemRef::Alloc(h) if root && mem.allocs.info.contains_key(&h) => Ok(Space::Alloc(h)),
        MemRef::Alloc(_) => Err("the pointer names a node that is not an async_malloc of this graph".to_string()),
    }
}

/// Kernels launched with `range` or `single_task` have no observable work-group.
fn check_range_kernel(kernel: &Kernel, body: &Body) -> Result<(), String> {
    if let Some(p) = kernel.params.iter().find(|p| matches!(p.ty, ParamType::Local { .. })) {
        return Err(format!("parameter %{} is work-group memory, which needs an nd_range launch", p.name));
    }
    for (h, op) in body.ops.iter() {
        let what = match &op.kind {
            OpKind::GroupBarrier => "group_barrier",
            OpKind::LocalAlloc { .. } => "local",
            OpKind::Builtin(Builtin::LocalId | Builtin::GroupId | Builtin::LocalRange | Builtin::GroupRange, _) => {
                match &op.kind {
                    OpKind::Builtin(b, _) => b.keyword(),
                    _ => "builtin",
                }
            }
            _ => continue,
        };
        return Err(format!(
            "kernel @{} uses `{what}` (op {}), which needs an nd_range launch",
            kernel.name,
            h.index()
        ));
    }
    Ok(())
}

fn arg_kind(arg: &ArgValue) -> &'static str {
    match arg {
        ArgValue::Scalar(_) => "a scalar",
        ArgValue::Pointer(_) => "a pointer",
        ArgValue::Accessor(_) => "an accessor",
        ArgValue::Bytes(_) => "a raw-bytes",
        ArgValue::Local { .. } => "a work-group memory",
    }
}

fn param_kind(ty: ParamType) -> &'static str {
    match ty {
        ParamType::Value(_) => "value",
        ParamType::Buffer { .. } => "buffer",
        ParamType::Local { .. } => "local",
    }
}
