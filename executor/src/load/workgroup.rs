//! How much work-group memory a SPIR-V module declares: the bytes of its `Workgroup`
//! variables, which a pipeline must keep within the device's `maxComputeSharedMemorySize`
//! (Vulkan's "Workgroup" storage limit; beyond it pipeline creation is undefined
//! behaviour). The SPIR-V, not the argument layout, is counted: it is what the driver
//! allocates, and a hostile bundle's layout may say anything.

/// Word-level opcodes and operands this walk reads (SPIR-V 1.6, section 3).
const OP_TYPE_BOOL: u32 = 20;
const OP_TYPE_INT: u32 = 21;
const OP_TYPE_FLOAT: u32 = 22;
const OP_TYPE_VECTOR: u32 = 23;
const OP_TYPE_MATRIX: u32 = 24;
const OP_TYPE_ARRAY: u32 = 28;
const OP_TYPE_STRUCT: u32 = 30;
const OP_TYPE_POINTER: u32 = 32;
const OP_CONSTANT: u32 = 43;
const OP_SPEC_CONSTANT: u32 = 50;
const OP_VARIABLE: u32 = 59;
const OP_DECORATE: u32 = 71;
const OP_MEMBER_DECORATE: u32 = 72;
const OP_UNTYPED_VARIABLE_KHR: u32 = 4418;
const DECORATION_ARRAY_STRIDE: u32 = 6;
const DECORATION_OFFSET: u32 = 35;
const STORAGE_WORKGROUP: u32 = 4;

/// Size and alignment in bytes of a type.
#[derive(Clone, Copy)]
struct Layout {
    size: u64,
    align: u64,
}

fn round_up(x: u64, align: u64) -> Option<u64> {
    x.checked_next_multiple_of(align.max(1))
}

/// The bytes of every `Workgroup` variable of `words`, each rounded up to its alignment, as
/// std430 would lay them out (scalars their width, bools 4 bytes, 3-vectors aligned as
/// 4-vectors, explicit `Offset`/`ArrayStride` decorations taken where they make a type
/// larger). Variables the entry point never uses count too, and aliased blocks
/// (`WorkgroupMemoryExplicitLayoutKHR`) once each, so a driver that packs them allocates
/// no more than this, give or take the padding between variables.
/// An error names a variable whose type cannot be sized (a runtime array, a length that is
/// not a constant) or a total past 64 bits; the words are assumed structurally checked
/// (`spirv::check_variant`), but a malformed module gives an error, never a panic.
pub fn workgroup_bytes(words: &[u32]) -> Result<u64, String> {
    use std::collections::HashMap;
    let mut types: HashMap<u32, Layout> = HashMap::new();
    let mut constants: HashMap<u32, u64> = HashMap::new();
    let mut pointee: HashMap<u32, (u32, u32)> = HashMap::new();
    let mut strides: HashMap<u32, u64> = HashMap::new();
    let mut offsets: HashMap<(u32, u32), u64> = HashMap::new();
    let mut total = 0u64;
    let overflow = || "its work-group memory passes 2^64 bytes".to_string();
    let mut at = 5;
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        let opcode = words[at] & 0xffff;
        let end = at.checked_add(count).filter(|&e| count > 0 && e <= words.len());
        let Some(end) = end else { return Err(format!("instruction at word {at} has a bad length")) };
        let ops = &words[at + 1..end];
        let scalar = |bits: u32| Layout { size: u64::from(bits / 8).max(1), align: u64::from(bits / 8).max(1) };
        match (opcode, ops) {
            (OP_DECORATE, [id, DECORATION_ARRAY_STRIDE, stride, ..]) => {
                strides.insert(*id, u64::from(*stride));
            }
            (OP_MEMBER_DECORATE, [id, member, DECORATION_OFFSET, offset, ..]) => {
                offsets.insert((*id, *member), u64::from(*offset));
            }
            (OP_TYPE_BOOL, [id]) => {
                types.insert(*id, Layout { size: 4, align: 4 });
            }
            (OP_TYPE_INT | OP_TYPE_FLOAT, [id, bits, ..]) => {
                types.insert(*id, scalar(*bits));
            }
            (OP_TYPE_VECTOR, [id, comp, n]) => {
                if let Some(c) = types.get(comp).copied() {
                    let lanes = u64::from(*n);
                    let align = c.align.checked_mul(if lanes == 3 { 4 } else { lanes }).ok_or_else(overflow)?;
                    let size = c.size.checked_mul(lanes).ok_or_else(overflow)?;
                    types.insert(*id, Layout { size, align });
                }
            }
            (OP_TYPE_MATRIX | OP_TYPE_ARRAY, [id, elem, n]) => {
                // A matrix is an array of its columns; an array's length is a constant id.
                let len = if opcode == OP_TYPE_MATRIX { Some(u64::from(*n)) } else { constants.get(n).copied() };
                if let (Some(e), Some(len)) = (types.get(elem).copied(), len) {
                    let natural = round_up(e.size, e.align).ok_or_else(overflow)?;
                    let stride = natural.max(strides.get(id).copied().unwrap_or(0));
                    let size = stride.checked_mul(len).ok_or_else(overflow)?;
                    types.insert(*id, Layout { size, align: e.align });
                }
            }
            (OP_TYPE_STRUCT, [id, members @ ..]) => {
                let mut size = 0u64;
                let mut align = 1u64;
                let mut known = true;
                for (i, m) in members.iter().enumerate() {
                    let Some(l) = types.get(m).copied() else {
                        known = false;
                        break;
                    };
                    let natural = round_up(size, l.align).ok_or_else(overflow)?;
                    let offset = natural.max(offsets.get(&(*id, i as u32)).copied().unwrap_or(0));
                    size = offset.checked_add(l.size).ok_or_else(overflow)?;
                    align = align.max(l.align);
                }
                if known {
                    types.insert(*id, Layout { size: round_up(size, align).ok_or_else(overflow)?, align });
                }
            }
            (OP_TYPE_POINTER, [id, storage, to]) => {
                pointee.insert(*id, (*storage, *to));
                types.insert(*id, Layout { size: 8, align: 8 });
            }
            (OP_CONSTANT | OP_SPEC_CONSTANT, [_, id, lo, rest @ ..]) => {
                let hi = rest.first().copied().unwrap_or(0);
                constants.insert(*id, u64::from(*lo) | (u64::from(hi) << 32));
            }
            (OP_VARIABLE, [ty, id, STORAGE_WORKGROUP, ..]) => {
                let l = pointee.get(ty).and_then(|(_, to)| types.get(to)).copied();
                let l = l.ok_or_else(|| format!("cannot size the Workgroup variable %{id}"))?;
                total = round_up(total, l.align).and_then(|t| t.checked_add(l.size)).ok_or_else(overflow)?;
            }
            (OP_UNTYPED_VARIABLE_KHR, [_, id, STORAGE_WORKGROUP, rest @ ..]) => {
                let l = rest.first().and_then(|t| types.get(t)).copied();
                let l = l.ok_or_else(|| format!("cannot size the Workgroup variable %{id}"))?;
                total = round_up(total, l.align).and_then(|t| t.checked_add(l.size)).ok_or_else(overflow)?;
            }
            _ => {}
        }
        at = end;
    }
    Ok(total)
}
