//! The bytes of a module's variables, by storage class, read from the words: what the
//! driver allocates for them (work-group memory per work-group, `Function` and `Private`
//! memory per invocation). The SPIR-V, not the argument layout, is counted: a hostile
//! bundle's layout may say anything.
//!
//! Sizes are std430-like: scalars their width, bools 4 bytes, 3-vectors aligned as
//! 4-vectors, arrays of arrays and structs recursively, explicit `Offset`/`ArrayStride`
//! decorations taken where they make a type larger; an array's length is its constant's
//! value (a specialization constant's default, as the executor specializes nothing).

use std::collections::HashMap;

/// Word-level opcodes and operands this walk reads (SPIR-V 1.6, section 3).
const OP_NAME: u32 = 5;
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
const OP_FUNCTION: u32 = 54;
const OP_VARIABLE: u32 = 59;
const OP_DECORATE: u32 = 71;
const OP_MEMBER_DECORATE: u32 = 72;
const OP_UNTYPED_VARIABLE_KHR: u32 = 4418;
const DECORATION_ARRAY_STRIDE: u32 = 6;
const DECORATION_OFFSET: u32 = 35;

/// `Private` storage class: one copy per invocation, module scope.
pub const STORAGE_PRIVATE: u32 = 6;
/// `Function` storage class: one copy per invocation of the function.
pub const STORAGE_FUNCTION: u32 = 7;
/// `Workgroup` storage class: one copy per work-group.
pub const STORAGE_WORKGROUP: u32 = 4;

/// Size and alignment in bytes of a type.
#[derive(Clone, Copy)]
struct Layout {
    size: u64,
    align: u64,
}

fn round_up(x: u64, align: u64) -> Option<u64> {
    x.checked_next_multiple_of(align.max(1))
}

/// One sized variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variable {
    /// Its result id.
    pub id: u32,
    /// Its `OpName`, if the module gives one.
    pub name: Option<String>,
    /// Its storage class.
    pub storage: u32,
    /// The function declaring it (`Function` variables), with that function's `OpName`.
    pub function: Option<(u32, Option<String>)>,
    /// Its size in bytes.
    pub bytes: u64,
    /// Its alignment in bytes.
    pub align: u64,
}

impl Variable {
    /// `%name (id N)`, or `%N` for an unnamed variable.
    pub fn describe(&self) -> String {
        describe(self.id, self.name.as_deref())
    }
}

/// `%name (id N)`, or `%N` without a name.
pub fn describe(id: u32, name: Option<&str>) -> String {
    match name {
        Some(n) if !n.is_empty() => format!("%{n} (id {id})"),
        _ => format!("%{id}"),
    }
}

/// The readable name of storage class `storage`.
pub fn storage_name(storage: u32) -> &'static str {
    match storage {
        STORAGE_WORKGROUP => "Workgroup",
        STORAGE_PRIVATE => "Private",
        STORAGE_FUNCTION => "Function",
        _ => "other",
    }
}

/// Every variable of `words` whose storage class is one of `storages`, in module order, with
/// its size. An error names a variable whose type cannot be sized (a runtime array, a length
/// that is not a constant, a type the walk does not know) or a size past 64 bits; the words
/// are assumed structurally checked (`spirv::check_variant`), but a malformed module gives
/// an error, never a panic.
pub fn variables(words: &[u32], storages: &[u32]) -> Result<Vec<Variable>, String> {
    let mut types: HashMap<u32, Layout> = HashMap::new();
    let mut constants: HashMap<u32, u64> = HashMap::new();
    let mut pointee: HashMap<u32, u32> = HashMap::new();
    let mut strides: HashMap<u32, u64> = HashMap::new();
    let mut offsets: HashMap<(u32, u32), u64> = HashMap::new();
    let mut names: HashMap<u32, String> = HashMap::new();
    let mut function: Option<u32> = None;
    let mut out = Vec::new();
    let overflow = || "a type's size passes 2^64 bytes".to_string();
    let mut at = 5;
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        let opcode = words[at] & 0xffff;
        let end = at.checked_add(count).filter(|&e| count > 0 && e <= words.len());
        let Some(end) = end else { return Err(format!("instruction at word {at} has a bad length")) };
        let ops = &words[at + 1..end];
        let scalar = |bits: u32| Layout { size: u64::from(bits / 8).max(1), align: u64::from(bits / 8).max(1) };
        // The variable of this instruction, if any: (id, storage, pointee type).
        let mut variable = None;
        match (opcode, ops) {
            (OP_NAME, [id, name @ ..]) => {
                if let Some(n) = super::literal_string(name) {
                    names.insert(*id, n);
                }
            }
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
            (OP_TYPE_POINTER, [id, _storage, to]) => {
                pointee.insert(*id, *to);
                types.insert(*id, Layout { size: 8, align: 8 });
            }
            (OP_CONSTANT | OP_SPEC_CONSTANT, [_, id, lo, rest @ ..]) => {
                let hi = rest.first().copied().unwrap_or(0);
                constants.insert(*id, u64::from(*lo) | (u64::from(hi) << 32));
            }
            (OP_FUNCTION, [_, id, ..]) => function = Some(*id),
            (OP_VARIABLE, [ty, id, storage, ..]) => {
                variable = Some((*id, *storage, pointee.get(ty).copied()));
            }
            (OP_UNTYPED_VARIABLE_KHR, [_, id, storage, rest @ ..]) => {
                variable = Some((*id, *storage, rest.first().copied()));
            }
            _ => {}
        }
        if let Some((id, storage, to)) = variable.filter(|v| storages.contains(&v.1)) {
            let Some(l) = to.and_then(|t| types.get(&t)).copied() else {
                return Err(format!(
                    "cannot size the {} variable {}",
                    storage_name(storage),
                    describe(id, names.get(&id).map(String::as_str))
                ));
            };
            let function = (storage == STORAGE_FUNCTION).then_some(function).flatten();
            out.push(Variable {
                id,
                name: None,
                storage,
                function: function.map(|f| (f, None)),
                bytes: l.size,
                align: l.align,
            });
        }
        at = end;
    }
    // Names come before the variables they name (the debug section), but fill them here so
    // that a name anywhere is used.
    for v in &mut out {
        v.name = names.get(&v.id).cloned();
        if let Some((f, name)) = &mut v.function {
            *name = names.get(f).cloned();
        }
    }
    Ok(out)
}
