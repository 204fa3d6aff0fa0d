//! Argument blocks and dispatch sizes (docs/abi.md, "The argument block", "Dispatch").

use crate::error::{ExecError, Result};
use cmdgraph_ir::bundle::{ArgFieldKind, CompiledKernel, MemorySlot};
use cmdgraph_ir::kernel::{Kernel, ParamType};
use cmdgraph_ir::types::{LitValue, Literal, ScalarType, Type};
use cmdgraph_ir::{ArgValue, Launch, MemRef};

/// The memory a slot is bound to: which Vulkan buffer backs it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Target {
    /// A user memory object (`usm`/`buffer`), by memory handle index.
    User(usize),
    /// The executable's graph-owned pool.
    Pool,
    /// A device global (the executable's device), by name.
    Global(String),
    /// The predicate words of a predicated kernel variant (`MemorySlot::Predicate`): the
    /// executable's predicate binding (executable/conditional.rs).
    Predicate,
}

/// Where a pointer points: the backing buffer, the byte offset in it and the bytes from there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    /// The backing buffer.
    pub target: Target,
    /// Byte offset inside it.
    pub offset: u64,
    /// Bytes available from `offset`.
    pub avail: u64,
    /// Element size of the memory object (accessor ranges count its elements).
    pub elem: u64,
    /// Size of the whole backing buffer (at least `offset + avail`).
    pub buffer_size: u64,
}

/// An encoded launch of one kernel node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Encoded {
    /// The argument block.
    pub block: Vec<u8>,
    /// What each memory slot (binding 1 + i) is bound to.
    pub slots: Vec<Target>,
    /// The descriptor window of each slot: byte offset in the buffer and range
    /// (`vk::WHOLE_SIZE` as `u64::MAX`, only for device globals, whose buffer is theirs).
    /// A buffer argument's window covers its memory only, never a neighbour's (docs/abi.md,
    /// "Bounds"; [`Limits::window`]); the element offset in the block counts from its start.
    pub windows: Vec<(u64, u64)>,
    /// Work-group counts for `VkDispatchIndirectCommand`.
    pub groups: [u32; 3],
}

/// Global size, global offset and (for `nd_range`) local size, each padded to 3 dimensions.
pub type Geometry = ([u32; 3], [u32; 3], Option<[u32; 3]>);

/// The geometry of a launch.
pub fn geometry(launch: &Launch) -> Result<Geometry> {
    let pad = |v: &[u64]| -> Result<[u32; 3]> {
        let mut out = [1u32; 3];
        if v.len() > 3 {
            return Err(ExecError::Invalid(format!("a {}-dimensional range", v.len())));
        }
        for (o, &x) in out.iter_mut().zip(v) {
            *o = u32::try_from(x).map_err(|_| ExecError::Invalid(format!("range {x} does not fit 32 bits")))?;
        }
        Ok(out)
    };
    Ok(match launch {
        Launch::SingleTask => ([1; 3], [0; 3], None),
        Launch::Range(r) => (pad(r)?, [0; 3], None),
        Launch::NdRange { global, local, offset } => {
            let mut off = pad(offset)?;
            for (o, i) in off.iter_mut().zip(0..3) {
                if i >= offset.len() {
                    *o = 0;
                }
            }
            (pad(global)?, off, Some(pad(local)?))
        }
    })
}

/// The work-groups a launch of global `size` runs as `variant`, per dimension.
pub(crate) fn group_counts(size: [u32; 3], variant: &CompiledKernel) -> [u32; 3] {
    let wg = variant.workgroup_size;
    let per = [wg[0].saturating_mul(variant.items_per_invocation), wg[1], wg[2]];
    let mut groups = [0u32; 3];
    for d in 0..3 {
        groups[d] = size[d].div_ceil(per[d].max(1));
    }
    groups
}

/// Encodes the argument block of `kernel` compiled as `variant` for `launch` and `args`
/// (dynamic parameters already replaced by their values). `resolve` places a memory reference
/// plus byte offset; `limits` are the device's.
pub fn encode(
    kernel: &Kernel,
    variant: &CompiledKernel,
    launch: &Launch,
    args: &[ArgValue],
    resolve: &dyn Fn(MemRef, u64) -> Result<Place>,
    limits: &Limits,
) -> Result<Encoded> {
    let max_groups = limits.max_groups;
    let name = &kernel.name;
    let (size, offset, _) = geometry(launch)?;
    let layout = &variant.layout;
    let mut block = vec![0u8; layout.block_size as usize];
    for (i, w) in size.iter().chain(&offset).enumerate() {
        put(&mut block, 4 * i as u32, &w.to_le_bytes())?;
    }
    let mut slots: Vec<Option<Target>> = vec![None; layout.slots.len()];
    let mut windows: Vec<(u64, u64)> = vec![(0, u64::MAX); layout.slots.len()];
    for (i, slot) in layout.slots.iter().enumerate() {
        match slot {
            MemorySlot::DeviceGlobal { name, .. } => slots[i] = Some(Target::Global(name.clone())),
            MemorySlot::Predicate | MemorySlot::LoopPredicate { .. } => slots[i] = Some(Target::Predicate),
            MemorySlot::Param { .. } => {}
        }
    }
    if args.len() != kernel.params.len() {
        return Err(ExecError::Invalid(format!(
            "@{name}: {} arguments for {} parameters",
            args.len(),
            kernel.params.len()
        )));
    }
    for ((field, param), arg) in layout.fields.iter().zip(&kernel.params).zip(args) {
        let bad = |what: &str| ExecError::Invalid(format!("@{name} parameter %{}: {what}", param.name));
        match (&field.kind, &param.ty, arg) {
            (ArgFieldKind::Value { bytes }, ParamType::Value(ty), value) => {
                let raw = match value {
                    ArgValue::Scalar(lit) => value_bytes(lit, *ty).ok_or_else(|| bad("value does not fit its type"))?,
                    ArgValue::Bytes(b) => b.clone(),
                    _ => return Err(bad("expected a value")),
                };
                // A 3-vector's raw bytes hold four lanes (the IR's rule, E0218); its field is
                // three lanes long (std430: a scalar may follow in the fourth lane's place), so
                // the padding lane is not written.
                let raw = match raw.len() as u64 == ty.size() && raw.len() as u32 > *bytes {
                    true => &raw[..*bytes as usize],
                    false => &raw[..],
                };
                if raw.len() as u32 > *bytes {
                    return Err(bad("value larger than its field"));
                }
                put(&mut block, field.offset, raw)?;
            }
            (ArgFieldKind::Buffer { slot, elem_bytes }, ParamType::Buffer { .. }, value) => {
                // `mem_start`: where the memory the pointer is in starts (the allocation or
                // object; an accessor's range), so that the window covers only it.
                let (place, mem_start) = match value {
                    ArgValue::Pointer(p) => (resolve(p.base, p.offset)?, resolve(p.base, 0)?.offset),
                    ArgValue::Accessor(a) => {
                        let p = resolve(a.buffer, 0)?;
                        let (lo, hi) = a.range.unwrap_or((0, p.avail / p.elem.max(1)));
                        let start = lo.checked_mul(p.elem).filter(|&s| s <= p.avail);
                        let end = hi.checked_mul(p.elem).filter(|&e| e <= p.avail);
                        let (Some(start), Some(end)) = (start, end) else {
                            return Err(bad("accessor range outside its buffer"));
                        };
                        let place = Place {
                            target: p.target,
                            offset: p.offset + start,
                            avail: end.saturating_sub(start),
                            elem: p.elem,
                            buffer_size: p.buffer_size,
                        };
                        let at = place.offset;
                        (place, at)
                    }
                    _ => return Err(bad("expected memory")),
                };
                let eb = u64::from((*elem_bytes).max(1));
                if place.offset % eb != 0 {
                    return Err(bad(&format!(
                        "byte offset {} is not a multiple of the element size {eb}",
                        place.offset
                    )));
                }
                let window = limits.window(mem_start, &place, eb).map_err(|m| bad(&m))?;
                let elem_off =
                    u32::try_from((place.offset - window.0) / eb).map_err(|_| bad("element offset past 2^32"))?;
                let count = u32::try_from(place.avail / eb).unwrap_or(u32::MAX);
                put(&mut block, field.offset, &elem_off.to_le_bytes())?;
                put(&mut block, field.offset + 4, &count.to_le_bytes())?;
                if let Some(s) = slots.get_mut(*slot as usize) {
                    *s = Some(place.target);
                }
                if let Some(w) = windows.get_mut(*slot as usize) {
                    *w = window;
                }
            }
            (ArgFieldKind::Local { capacity, .. }, ParamType::Local { .. }, ArgValue::Local { count, .. }) => {
                if count > capacity {
                    return Err(bad(&format!(
                        "{count} work-group elements, the compiled kernel has room for {capacity}"
                    )));
                }
                put(&mut block, field.offset, &(*count as u32).to_le_bytes())?;
            }
            _ => return Err(bad("argument kind does not match the parameter")),
        }
    }
    let slots = slots
        .into_iter()
        .enumerate()
        .map(|(i, s)| s.ok_or_else(|| ExecError::Bundle(format!("@{name}: memory slot {i} has no argument"))))
        .collect::<Result<Vec<_>>>()?;
    let groups = group_counts(size, variant);
    for d in 0..3 {
        if groups[d] > max_groups[d] {
            return Err(ExecError::Invalid(format!(
                "@{name}: {} work-groups in dimension {d}, the device allows {}",
                groups[d], max_groups[d]
            )));
        }
    }
    Ok(Encoded { block, slots, windows, groups })
}

/// The device limits encoding depends on.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// `maxComputeWorkGroupCount`.
    pub max_groups: [u32; 3],
    /// `maxStorageBufferRange`: the most bytes one storage-buffer descriptor reaches.
    pub max_range: u64,
    /// `minStorageBufferOffsetAlignment`.
    pub min_align: u64,
}

impl Limits {
    /// The descriptor window for a pointer at `place` (elements of `eb` bytes) into memory
    /// that starts at byte `mem_start` of the buffer and ends at `place.offset + place.avail`:
    /// from `mem_start` rounded down to a multiple of both `minStorageBufferOffsetAlignment`
    /// and the element size, to the memory's end. So a kernel's descriptor reaches its own
    /// allocation or object and at most the few bytes the alignment adds before it, never
    /// the memory after it (docs/abi.md, "Bounds"), and a pointer moved within its memory
    /// keeps its descriptor (one word of the block changes). Memory that spans more than one
    /// descriptor reaches (`maxStorageBufferRange`) gets a window from the pointer, rounded
    /// down the same way, instead; more than that from the pointer is refused.
    pub fn window(&self, mem_start: u64, place: &Place, eb: u64) -> std::result::Result<(u64, u64), String> {
        let end = place.offset.saturating_add(place.avail);
        let align = lcm(self.min_align.max(1), eb.max(1));
        let mut start = mem_start.min(place.offset) / align * align;
        if end - start > self.max_range {
            start = place.offset / align * align;
        }
        let range = end - start;
        if range > self.max_range {
            return Err(format!(
                "the memory from byte {} spans {range} bytes, more than one descriptor reaches on this device (maxStorageBufferRange {})",
                place.offset, self.max_range
            ));
        }
        if range == 0 {
            // Empty memory: a descriptor must reach at least one byte. The kernel's count is
            // 0, so compiled code touches none of it; end on the buffer's last byte when the
            // memory sits at the buffer's very end.
            if end < place.buffer_size {
                return Ok((start, 1));
            }
            let start = place.buffer_size.saturating_sub(1) / align * align;
            return Ok((start, place.buffer_size - start));
        }
        Ok((start, range))
    }
}

fn lcm(a: u64, b: u64) -> u64 {
    let (mut x, mut y) = (a, b);
    while y != 0 {
        (x, y) = (y, x % y);
    }
    a / x.max(1) * b
}

fn put(block: &mut [u8], offset: u32, bytes: &[u8]) -> Result<()> {
    let start = offset as usize;
    match block.get_mut(start..start + bytes.len()) {
        Some(dst) => {
            dst.copy_from_slice(bytes);
            Ok(())
        }
        None => Err(ExecError::Bundle(format!("argument field at {offset} past the block"))),
    }
}

/// A literal as the argument block holds it: `bool` widened to a `u32`.
fn value_bytes(lit: &Literal, ty: Type) -> Option<Vec<u8>> {
    if ty.lanes != 1 {
        return None;
    }
    let mut b = scalar_bytes(lit.value, ty.scalar)?;
    if ty.scalar == ScalarType::Bool {
        b.resize(4, 0);
    }
    Some(b)
}

/// A literal as memory holds it (little-endian; `bool` one byte).
pub fn scalar_bytes(v: LitValue, t: ScalarType) -> Option<Vec<u8>> {
    if !Literal::fits(v, t) {
        return None;
    }
    let f = match v {
        LitValue::Float(f) => f,
        LitValue::Int(i) => i as f64,
        LitValue::Bool(b) => f64::from(u8::from(b)),
    };
    let i = match v {
        LitValue::Int(i) => i,
        _ => 0,
    };
    Some(match t {
        ScalarType::Bool => vec![u8::from(matches!(v, LitValue::Bool(true)))],
        ScalarType::I8 => (i as i8).to_le_bytes().to_vec(),
        ScalarType::U8 => (i as u8).to_le_bytes().to_vec(),
        ScalarType::I16 => (i as i16).to_le_bytes().to_vec(),
        ScalarType::U16 => (i as u16).to_le_bytes().to_vec(),
        ScalarType::I32 => (i as i32).to_le_bytes().to_vec(),
        ScalarType::U32 => (i as u32).to_le_bytes().to_vec(),
        ScalarType::I64 => (i as i64).to_le_bytes().to_vec(),
        ScalarType::U64 => (i as u64).to_le_bytes().to_vec(),
        ScalarType::F16 => cmdgraph_ir::data::f16_from_f64(f).to_bits().to_le_bytes().to_vec(),
        ScalarType::F32 => (f as f32).to_le_bytes().to_vec(),
        ScalarType::F64 => f.to_le_bytes().to_vec(),
    })
}

/// One element of type `ty` from a literal, splatted over its lanes (3-vectors padded).
pub fn element_bytes(v: LitValue, ty: Type) -> Option<Vec<u8>> {
    let one = scalar_bytes(v, ty.scalar)?;
    let mut out = Vec::with_capacity(ty.size() as usize);
    for _ in 0..ty.lanes {
        out.extend_from_slice(&one);
    }
    out.resize(ty.size() as usize, 0);
    Some(out)
}

#[cfg(test)]
mod window_tests {
    use super::*;

    fn place(offset: u64, avail: u64, buffer_size: u64) -> Place {
        Place { target: Target::Pool, offset, avail, elem: 4, buffer_size }
    }

    const LIMITS: Limits = Limits { max_groups: [65535; 3], max_range: 1 << 27, min_align: 16 };

    #[test]
    fn a_pointer_is_bound_from_its_memory_to_the_memory_end() {
        // An allocation at 4096 of 1024 bytes in a larger pool, the pointer 256 bytes in: the
        // window is the allocation, not the pool.
        assert_eq!(LIMITS.window(4096, &place(4096 + 256, 768, 1 << 27), 4), Ok((4096, 1024)));
        // An allocation at an unaligned offset: the window starts at the aligned offset below.
        assert_eq!(LIMITS.window(4100, &place(4108, 92, 1 << 20), 4), Ok((4096, 104)));
        // Empty memory still gets a one-byte descriptor, inside the buffer.
        assert_eq!(LIMITS.window(64, &place(64, 0, 1 << 20), 4), Ok((64, 1)));
        assert_eq!(LIMITS.window(256, &place(256, 0, 256), 4), Ok((240, 16)));
    }

    #[test]
    fn memory_past_the_range_gets_an_aligned_window_ending_with_it() {
        let at = (1 << 27) + 100;
        let (start, range) = LIMITS.window(at, &place(at, 4000, 1 << 28), 4).unwrap();
        assert_eq!(start, (1 << 27) + 96, "aligned to 16 at or before the pointer");
        assert_eq!(range, 4004);
        assert_eq!(LIMITS.window(0, &place(0, 1024, 1 << 28), 4), Ok((0, 1024)));
        // 12-byte elements: the window start is a multiple of lcm(16, 12) = 48.
        let at = 12 * 11_184_815; // past 2^27, a multiple of the element size
        let (start, _) = LIMITS.window(at, &place(at, 120, 1 << 28), 12).unwrap();
        assert_eq!(start % 48, 0);
        assert_eq!((at - start) % 12, 0);
        assert!(start <= at && at - start < 48);
        // Memory larger than the range, the pointer near its end: a window from the pointer.
        let (start, range) = LIMITS.window(0, &place((1 << 27) + 64, 4096, 1 << 28), 4).unwrap();
        assert_eq!((start, range), ((1 << 27) + 64, 4096));
    }

    #[test]
    fn memory_larger_than_the_range_is_refused() {
        let e = LIMITS.window(16, &place(16, (1 << 27) + 64, 1 << 28), 4).unwrap_err();
        assert!(e.contains("maxStorageBufferRange"), "{e}");
    }
}
