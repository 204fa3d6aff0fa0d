//! The argument block and memory slots of a kernel (docs/abi.md).

use crate::error::CodegenError;
use cmdgraph_ir::bundle::{ArgField, ArgFieldKind, ArgLayout, MemorySlot};
use cmdgraph_ir::kernel::{Body, MemBase, OpKind};
use cmdgraph_ir::{Handle, Kernel, MemoryObject, Module, ParamType, ScalarType, Type};

/// Bytes of the argument block header (global size, global offset, reserved).
pub(crate) const HEADER_BYTES: u32 = 32;

/// What a memory slot holds, for the lowering.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SlotInfo {
    /// Element type.
    pub elem: Type,
    /// Byte offset of its element-offset word in the argument block (`None` for device
    /// globals, which start at element 0).
    pub offset_field: Option<u32>,
    /// Whether the kernel writes it.
    pub writes: bool,
    /// Its element count when compile time knows it (device globals, bound whole); `None`
    /// for buffer parameters, whose count is the word after the element offset.
    pub count: Option<u64>,
}

/// The layout plus what the lowering needs to find each slot.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    /// The ABI layout.
    pub abi: ArgLayout,
    /// Per slot, in slot order.
    pub slots: Vec<SlotInfo>,
    /// Slot of each buffer parameter (by parameter index).
    pub param_slot: Vec<Option<u32>>,
    /// Device globals the body uses, in module order, with their slots.
    pub globals: Vec<(Handle<MemoryObject>, u32)>,
}

/// Size and alignment in the argument block of a by-value parameter of type `t`.
pub(crate) fn value_size_align(t: Type) -> (u32, u32) {
    let s = if t.scalar == ScalarType::Bool { 4 } else { t.scalar.size() as u32 };
    let size = s * t.lanes as u32;
    let align = if t.lanes == 3 { 4 * s } else { size };
    (size, align)
}

fn align_to(x: u32, a: u32) -> u32 {
    x.div_ceil(a.max(1)) * a.max(1)
}

/// Device globals `body` touches, in module order, and whether each is written.
fn used_globals(module: &Module, body: &Body) -> Vec<(Handle<MemoryObject>, bool)> {
    let mut used: Vec<(Handle<MemoryObject>, bool)> = Vec::new();
    for (_, op) in body.ops.iter() {
        let (g, writes) = match &op.kind {
            OpKind::Load { mem: MemBase::Global(g), .. } | OpKind::Len(MemBase::Global(g)) => (*g, false),
            OpKind::Store { mem: MemBase::Global(g), .. } | OpKind::Atomic { mem: MemBase::Global(g), .. } => {
                (*g, true)
            }
            _ => continue,
        };
        match used.iter_mut().find(|(h, _)| *h == g) {
            Some(entry) => entry.1 |= writes,
            None => used.push((g, writes)),
        }
    }
    used.sort_by_key(|(h, _)| h.index());
    used.retain(|(h, _)| module.memories.try_get(*h).is_some());
    used
}

/// Whether the body writes buffer parameter `param`.
fn param_written(body: &Body, param: Handle<cmdgraph_ir::Value>) -> bool {
    body.ops.iter().any(|(_, op)| match &op.kind {
        OpKind::Store { mem: MemBase::Value(v), .. } | OpKind::Atomic { mem: MemBase::Value(v), .. } => *v == param,
        _ => false,
    })
}

/// Lays out `kernel`'s arguments; `local_capacity` has one entry per `local<T>` parameter.
pub(crate) fn layout(
    module: &Module,
    kernel: &Kernel,
    body: &Body,
    local_capacity: &[u64],
    (predicated, loop_tail): (bool, Option<u32>),
) -> Result<Layout, CodegenError> {
    let mut offset = HEADER_BYTES;
    let mut fields = Vec::with_capacity(kernel.params.len());
    let mut slots = Vec::new();
    let mut abi_slots = Vec::new();
    let mut param_slot = Vec::with_capacity(kernel.params.len());
    let mut locals = local_capacity.iter();
    let param_values: Vec<_> = body.values.iter().map(|(h, _)| h).take(kernel.params.len()).collect();
    for (i, p) in kernel.params.iter().enumerate() {
        let (size, align, kind, slot) = match p.ty {
            ParamType::Value(t) => {
                let (size, align) = value_size_align(t);
                (size, align, ArgFieldKind::Value { bytes: size }, None)
            }
            ParamType::Buffer { elem, access } => {
                let written = param_values.get(i).is_some_and(|&v| param_written(body, v)) || access.writes();
                let slot = slots.len() as u32;
                slots.push(SlotInfo { elem, offset_field: None, writes: written, count: None });
                abi_slots.push(MemorySlot::Param { param: i as u32, writes: written });
                (8, 4, ArgFieldKind::Buffer { slot, elem_bytes: elem.size() as u32 }, Some(slot))
            }
            ParamType::Local { elem } => {
                let capacity = *locals.next().ok_or_else(|| {
                    CodegenError::launch(&kernel.name, "the variant has fewer local capacities than local parameters")
                })?;
                (4, 4, ArgFieldKind::Local { capacity, elem_bytes: elem.size() as u32 }, None)
            }
        };
        offset = align_to(offset, align);
        if let Some(s) = slot.and_then(|s| slots.get_mut(s as usize)) {
            s.offset_field = Some(offset);
        }
        fields.push(ArgField { offset, kind });
        param_slot.push(slot);
        offset = offset
            .checked_add(size)
            .ok_or_else(|| CodegenError::launch(&kernel.name, "argument block exceeds 4 GiB"))?;
    }
    if locals.next().is_some() {
        return Err(CodegenError::launch(&kernel.name, "the variant has more local capacities than local parameters"));
    }
    let mut globals = Vec::new();
    for (g, writes) in used_globals(module, body) {
        let Some(mem) = module.memories.try_get(g) else { continue };
        let slot = slots.len() as u32;
        slots.push(SlotInfo { elem: mem.elem, offset_field: None, writes, count: Some(mem.count) });
        abi_slots.push(MemorySlot::DeviceGlobal { name: mem.name.clone(), writes });
        globals.push((g, slot));
    }
    if predicated {
        // The last binding; the lowering reads it (lower/mod.rs, `and_predicate`) and, in a
        // loop's variant, writes the next round's word (`loop_tail`).
        abi_slots.push(match loop_tail {
            Some(condition_param) => MemorySlot::LoopPredicate { condition_param },
            None => MemorySlot::Predicate,
        });
    }
    let abi = ArgLayout { block_size: align_to(offset, 16), fields, slots: abi_slots };
    Ok(Layout { abi, slots, param_slot, globals })
}
